// Statistics that read a matmul's operands, measured after the step (train/pending_steps.h,
// OperandSampler::request and resolve, StepPipeline::samples_after_step): the path the CUDA
// backend's pipelined steps take, run here on the CPU through a pipeline that copies what the
// statistics ask for as the CUDA pipeline does (gathered by SampledRows' rule, the magnitudes in
// front, at running offsets) and hands it back only when the step is collected, a step late.
// - The what-if statistics, block-scale views and accumulation errors of an MLP (FP8 with its own
//   delayed scales, MXFP4 and NVFP4 layers) and of a CNN (im2col patches, dy's channels) equal
//   those measured in the middle of the step, bit for bit, and the run itself is unchanged.
// - SampledRows' rule, by which the sampler gathers on the CPU and the GPU alike, gives the rows
//   of a linear layer's operands and every value of a convolution's patches (im2col written out).
// - A recorded step's requests stand for its replays through the Trainer: a replayed step reports
//   what its recording measured, and the steps around it their own.
// - PendingSteps: steps come out oldest first; a recorded step's requests stand for its replays;
//   a body issued again starts over; a step with nothing pending is an error that says so.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/sync_step_pipeline.h"
#include "error_of.h"
#include "stripes_dataset.h"
#include "train/pending_steps.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;
using test_support::error_of;

namespace {

// The Trainer's pipeline on the CPU (SyncStepPipeline, results held back a step), reading the
// operands the statistics ask for when they ask and giving them back at collect only.
class CopyingPipeline final : public StepPipeline {
public:
    CopyingPipeline(Backend& backend, const LossScalingSpec& spec) : m_backend(backend), m_inner(backend, spec, 1) {}

    int depth() const override { return m_inner.depth(); }
    int in_flight() const override { return m_inner.in_flight(); }
    void set_loss_scaling(const LossScalingSpec& spec) override { m_inner.set_loss_scaling(spec); }
    void invalidate(const std::string& reason) override { m_inner.invalidate(reason); }
    void restore(const PipelineState& state) override { m_inner.restore(state); }
    bool begin(const StepBegin& b) override {
        m_current.clear();
        return m_inner.begin(b);
    }
    void loss(const Tensor& output, Tensor* grad) override { m_inner.loss(output, grad); }
    std::vector<RoundingStats>* rounding_sink() override { return m_inner.rounding_sink(); }
    void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want) override { m_inner.check(grads, want); }
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) override {
        m_inner.optimizer_step(t, h, report_layer);
    }
    bool end() override {
        m_flight.push_back(std::move(m_current));
        m_current.clear();
        return m_inner.end();
    }
    bool collect(StepResults& out) override {
        if (!m_inner.collect(out)) return false;
        m_collected = std::move(m_flight.front());
        m_flight.pop_front();
        out.samples = m_collected;
        return true;
    }
    std::string describe() const override { return "copying"; }

    bool samples_after_step() const override { return true; }
    std::int64_t sample_rows_later(const Tensor& t, std::int64_t n, const SampledRows& rows) override {
        const float* v = m_backend.host_values(t);
        const auto at = static_cast<std::int64_t>(m_current.size());
        std::uint32_t amax = 0, finite = 0;  // as magnitude bits, the CUDA kernel's way
        for (std::int64_t i = 0; i < n; ++i) {
            const std::uint32_t m = std::bit_cast<std::uint32_t>(v[i]) & 0x7fffffffu;
            amax = std::max(amax, m);
            if (m < 0x7f800000u) finite = std::max(finite, m);
        }
        m_current.push_back(std::bit_cast<float>(amax));
        m_current.push_back(std::bit_cast<float>(finite));
        for (std::int64_t i = 0; i < rows.count; ++i)
            for (std::int64_t q = 0; q < rows.K; ++q) {
                const std::int64_t s = rows.source(i, q);
                m_current.push_back(s < 0 ? 0.0f : v[s]);
            }
        return at;
    }
    std::int64_t fp8_scale_later(const Fp8State& state, Fp8Role role) override {
        const auto at = static_cast<std::int64_t>(m_current.size());
        const Fp8TensorSnapshot s = state.snapshot(role);
        m_current.push_back(s.scale);
        m_current.push_back(s.scale_inv);
        return at;
    }

private:
    Backend& m_backend;
    SyncStepPipeline m_inner;
    std::vector<float> m_current, m_collected;
    std::deque<std::vector<float>> m_flight;
};

// As CopyingPipeline, and as a pipeline that records a step and replays it: the step
// `record_at` reports its body recorded, and each step of `replay_at` is "replayed": begin returns
// false, nothing is issued, and it reports what the recorded step reported, its samples included
// (a replayed graph copies out what its recording copied, from the same operands here: the
// weights did not move, as nothing ran).
class ReplayingPipeline final : public StepPipeline {
public:
    ReplayingPipeline(Backend& backend, const LossScalingSpec& spec, std::int64_t record_at,
                      std::vector<std::int64_t> replay_at)
        : m_copying(backend, spec), m_record_at(record_at), m_replay_at(std::move(replay_at)) {}

    int depth() const override { return 2; }
    int in_flight() const override { return static_cast<int>(m_order.size()); }
    void set_loss_scaling(const LossScalingSpec& spec) override { m_copying.set_loss_scaling(spec); }
    void invalidate(const std::string& reason) override { m_copying.invalidate(reason); }
    void restore(const PipelineState& state) override { m_copying.restore(state); }
    bool begin(const StepBegin& b) override {
        m_step = b.step;
        m_replaying = std::find(m_replay_at.begin(), m_replay_at.end(), b.step) != m_replay_at.end();
        return m_replaying ? false : m_copying.begin(b);
    }
    void loss(const Tensor& output, Tensor* grad) override { m_copying.loss(output, grad); }
    std::vector<RoundingStats>* rounding_sink() override { return m_copying.rounding_sink(); }
    void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want) override { m_copying.check(grads, want); }
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) override {
        m_copying.optimizer_step(t, h, report_layer);
    }
    bool end() override {
        m_order.push_back({m_step, m_replaying});
        m_recorded = !m_replaying && m_step == m_record_at;
        return m_replaying ? false : m_copying.end();
    }
    bool collect(StepResults& out) override {
        if (m_order.empty()) return false;
        const auto [step, replayed] = m_order.front();
        m_order.pop_front();
        if (replayed) {
            out = m_kept;
            out.step = step;
            out.replayed = true;
            out.samples = m_kept_samples;
            return true;
        }
        if (!m_copying.collect(out)) return false;
        if (step == m_record_at) {
            m_kept = out;
            m_kept_samples.assign(out.samples.begin(), out.samples.end());
        }
        return true;
    }
    std::string describe() const override { return "replaying"; }
    bool body_recorded() const override { return m_recorded; }
    bool samples_after_step() const override { return true; }
    std::int64_t sample_rows_later(const Tensor& t, std::int64_t n, const SampledRows& rows) override {
        return m_copying.sample_rows_later(t, n, rows);
    }
    std::int64_t fp8_scale_later(const Fp8State& state, Fp8Role role) override {
        return m_copying.fp8_scale_later(state, role);
    }

private:
    CopyingPipeline m_copying;
    std::int64_t m_record_at;
    std::vector<std::int64_t> m_replay_at;
    std::int64_t m_step = 0;
    bool m_replaying = false, m_recorded = false;
    std::deque<std::pair<std::int64_t, bool>> m_order;  // steps in flight, and which are replays
    StepResults m_kept;
    std::vector<float> m_kept_samples;
};

TrainerOptions copying_options() {
    TrainerOptions o;
    o.make_pipeline = [](Backend& b, const LossScalingSpec& spec) -> std::unique_ptr<StepPipeline> {
        return std::make_unique<CopyingPipeline>(b, spec);
    };
    return o;
}

std::vector<StepReport> run(Trainer& t) {
    std::vector<StepReport> out;
    auto keep = [&](std::span<const StepReport> r) { out.insert(out.end(), r.begin(), r.end()); };
    while (!t.done()) keep(t.advance());
    keep(t.flush());
    return out;
}

bool same(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }
bool same(const QuantisationStats& a, const QuantisationStats& b) {
    return same(a.underflow, b.underflow) && same(a.saturation, b.saturation) && same(a.sqnr_db, b.sqnr_db) &&
           a.values == b.values;
}

// Every statistic of every step, bit for bit.
void compare_reports(const std::vector<StepReport>& in_step, const std::vector<StepReport>& after) {
    QCOMPARE(after.size(), in_step.size());
    std::size_t what_if = 0, views = 0, sums = 0;
    for (std::size_t i = 0; i < after.size(); ++i) {
        const StepReport &a = in_step[i], &b = after[i];
        QVERIFY2(same(a.step.loss, b.step.loss), qPrintable(QString("step %1's loss").arg(i)));
        QCOMPARE(b.what_if.size(), a.what_if.size());
        for (std::size_t k = 0; k < a.what_if.size(); ++k) {
            const WhatIfRecord &x = a.what_if[k], &y = b.what_if[k];
            const QString what = QString("step %1, %2 in %3").arg(i).arg(QString::fromStdString(x.name)).arg(QString::fromStdString(std::string(x.format.name())));
            QCOMPARE(y.step, x.step);
            QCOMPARE(y.name, x.name);
            QVERIFY2(y.format == x.format, qPrintable(what));
            QVERIFY2(same(y.input, x.input), qPrintable("x of " + what));
            QVERIFY2(same(y.weight, x.weight), qPrintable("W of " + what));
            QVERIFY2(same(y.grad_output, x.grad_output), qPrintable("dy of " + what));
        }
        QCOMPARE(b.block_scales.size(), a.block_scales.size());
        for (std::size_t k = 0; k < a.block_scales.size(); ++k) {
            const BlockScaleRecord &x = a.block_scales[k], &y = b.block_scales[k];
            QCOMPARE(y.name, x.name);
            QCOMPARE(y.operand, x.operand);
            QCOMPARE(y.format, x.format);
            QCOMPARE(y.own, x.own);
            QCOMPARE(y.rows, x.rows);
            QCOMPARE(y.rows_total, x.rows_total);
            QVERIFY2(y.exponents == x.exponents, qPrintable(QString("step %1, %2's blocks").arg(i).arg(QString::fromStdString(x.name))));
        }
        QCOMPARE(b.ops.size(), a.ops.size());
        for (std::size_t k = 0; k < a.ops.size(); ++k) {
            QCOMPARE(b.ops[k].name, a.ops[k].name);
            QCOMPARE(b.ops[k].stat, a.ops[k].stat);
            QVERIFY2(same(b.ops[k].value, a.ops[k].value), qPrintable(QString::fromStdString(a.ops[k].name + " " + a.ops[k].stat)));
        }
        what_if += a.what_if.size();
        views += a.block_scales.size();
        sums += a.ops.size();
    }
    QVERIFY(what_if > 0 && views > 0 && sums > 0);  // the comparison compared something
}

}  // namespace

class TestStatisticsAfterStep : public QObject {
    Q_OBJECT

private slots:
    void mlpStatisticsAfterTheStepAreThoseInTheStep_data() {
        QTest::addColumn<int>("every");
        QTest::newRow("statistics every step: two steps pending at once") << 1;
        QTest::newRow("statistics every other step") << 2;
    }
    void mlpStatisticsAfterTheStepAreThoseInTheStep() {
        QFETCH(int, every);
        Experiment e = quick_experiment(9, {96, 64});
        e.train.layer_stats_every = every;
        e.precision.autocast = Autocast::bf16;
        e.precision.master_weights = true;
        e.precision.layers["fc1"] = LayerPrecision::mxfp4;
        e.precision.layers["fc2"] = LayerPrecision::fp8_e4m3;  // its own delayed scales in the what-if
        e.precision.layers["fc3"] = LayerPrecision::nvfp4;
        e.train.block_scales.format = BlockFormat::mxfp8_e4m3;  // every layer viewed
        e.train.accumulation_error = true;
        const Dataset data = blobs_set(512, 3, 7);
        Trainer in_step(e, data, make_backend("cpu"));
        Trainer after(e, data, make_backend("cpu"), copying_options());
        compare_reports(run(in_step), run(after));
    }

    void cnnStatisticsAfterTheStepAreThoseInTheStep() {
        // A convolution's x is sampled as the patches under the kernel, its dy as channels.
        Experiment e = quick_experiment(6, {16});
        e.model.kind = "cnn";
        e.model.channels = {4, 8};
        e.train.batch_size = 16;
        e.train.layer_stats_every = 2;
        e.train.what_if.max_elements = 512;
        e.train.block_scales.format = BlockFormat::mxfp4;
        e.train.accumulation_error = true;
        const Dataset data = test_support::stripes(256, 64, 3);
        Trainer in_step(e, data, make_backend("cpu"));
        Trainer after(e, data, make_backend("cpu"), copying_options());
        compare_reports(run(in_step), run(after));
    }

    void replayedStepsMeasureWhatTheirRecordingAsked() {
        // Step 2 is recorded, steps 3 and 5 replay it: each reports the statistics of step 2's
        // operands (the FP8 column aside, whose shadow history moves on at every measure), and
        // the steps issued between and after them their own, in order.
        Experiment e = quick_experiment(7, {96, 64});
        e.precision.autocast = Autocast::bf16;
        e.precision.layers["fc2"] = LayerPrecision::mxfp4;
        e.train.block_scales.format = BlockFormat::mxfp8_e4m3;
        e.train.accumulation_error = true;
        TrainerOptions o;
        o.make_pipeline = [](Backend& b, const LossScalingSpec& spec) -> std::unique_ptr<StepPipeline> {
            return std::make_unique<ReplayingPipeline>(b, spec, 2, std::vector<std::int64_t>{3, 5});
        };
        Trainer t(e, blobs_set(512, 3, 7), make_backend("cpu"), o);
        const std::vector<StepReport> r = run(t);
        QCOMPARE(r.size(), std::size_t{7});
        for (std::size_t i = 0; i < r.size(); ++i) {
            QCOMPARE(r[i].what_if.size(), std::size_t{3 * 6});
            QCOMPARE(r[i].block_scales.size(), std::size_t{3 * 3});
            QCOMPARE(r[i].ops.size(), std::size_t{3 * 2});
            for (const WhatIfRecord& w : r[i].what_if) QCOMPARE(w.step, static_cast<std::int64_t>(i));
        }
        for (std::size_t replay : {std::size_t{3}, std::size_t{5}}) {
            const StepReport &a = r[2], &b = r[replay];
            for (std::size_t k = 0; k < a.what_if.size(); ++k) {
                if (a.what_if[k].format == ComputeFormat(Format::fp8_e4m3)) continue;
                QVERIFY(same(b.what_if[k].input, a.what_if[k].input) && same(b.what_if[k].weight, a.what_if[k].weight) &&
                        same(b.what_if[k].grad_output, a.what_if[k].grad_output));
            }
            for (std::size_t k = 0; k < a.block_scales.size(); ++k)
                QVERIFY(b.block_scales[k].exponents == a.block_scales[k].exponents);
            for (std::size_t k = 0; k < a.ops.size(); ++k) QVERIFY(same(b.ops[k].value, a.ops[k].value));
        }
        // The step issued after a replay measured its own operands (the weights moved at step 2).
        QVERIFY(!same(r[4].what_if[0].weight, r[2].what_if[0].weight) || !same(r[4].what_if[0].input, r[2].what_if[0].input));
    }

    void sampledRowsFollowTheSampler() {
        // Rows of a (7, 5) tensor, three of them: rows 0, 2 and 4 (i·7/3).
        SampledRows r;
        r.total = 7;
        r.count = 3;
        r.K = 5;
        QCOMPARE(r.row(1), std::int64_t{2});
        QCOMPARE(r.source(2, 3), std::int64_t{4 * 5 + 3});
        QCOMPARE(sample_row_indices(7, 5, 15), (std::vector<std::int64_t>{0, 2, 4}));
        QCOMPARE(sample_row_count(7, 5, 15), std::int64_t{3});
        // A 3x3 kernel, padding 1, stride 2, over 2 channels of 4x4: the patch of output (0, 1)
        // of image 1 starts in the padding above.
        SampledRows p;
        p.kind = SampledRows::Kind::conv_patches;
        p.channels = 2, p.height = 4, p.width = 4, p.kernel = 3, p.stride = 2, p.padding = 1;
        p.out_h = 2, p.out_w = 2;
        p.total = 2 * 4;
        p.count = p.total;
        p.K = 2 * 9;
        QCOMPARE(p.source(5, 0), std::int64_t{-1});              // (c 0, ky 0): row -1
        QCOMPARE(p.source(5, 4), std::int64_t{32 + 0 * 4 + 2});  // (c 0, ky 1, kx 1): (0, 2)
        QCOMPARE(p.source(5, 9 + 8), std::int64_t{32 + 16 + 1 * 4 + 3});  // (c 1, ky 2, kx 2): (1, 3)
        // Every patch value of a strided, padded convolution against im2col written out here.
        for (const auto& [stride, padding] : {std::pair{1, 1}, std::pair{2, 0}, std::pair{2, 2}}) {
            SampledRows q = p;
            q.stride = stride;
            q.padding = padding;
            q.height = 5;
            q.width = 6;
            q.out_h = (q.height + 2 * padding - q.kernel) / stride + 1;
            q.out_w = (q.width + 2 * padding - q.kernel) / stride + 1;
            const std::int64_t positions = q.out_h * q.out_w;
            q.total = 3 * positions;
            q.count = q.total;
            std::int64_t mismatches = 0;
            for (std::int64_t image = 0; image < 3; ++image)
                for (std::int64_t oy = 0; oy < q.out_h; ++oy)
                    for (std::int64_t ox = 0; ox < q.out_w; ++ox)
                        for (std::int64_t ch = 0; ch < q.channels; ++ch)
                            for (std::int64_t ky = 0; ky < q.kernel; ++ky)
                                for (std::int64_t kx = 0; kx < q.kernel; ++kx) {
                                    const std::int64_t iy = oy * stride - padding + ky, ix = ox * stride - padding + kx;
                                    const bool inside = iy >= 0 && iy < q.height && ix >= 0 && ix < q.width;
                                    const std::int64_t want =
                                        inside ? ((image * q.channels + ch) * q.height + iy) * q.width + ix : -1;
                                    const std::int64_t row = image * positions + oy * q.out_w + ox;
                                    mismatches += q.source(row, (ch * q.kernel + ky) * q.kernel + kx) != want;
                                }
            QCOMPARE(mismatches, std::int64_t{0});
        }
        // dy's channel 1 at position 2 of image 1, of a (2, 3 channels · 4 positions) gradient.
        SampledRows c;
        c.kind = SampledRows::Kind::conv_channels;
        c.out_h = 2, c.out_w = 2;
        c.total = 8, c.count = 8, c.K = 3;
        QCOMPARE(c.source(6, 1), std::int64_t{12 + 1 * 4 + 2});
    }

    void pendingStepsComeOutInOrderAndReplay() {
        PendingSteps<int> p;
        p.begin(0);
        p.add(1);
        p.add(2);
        p.keep_recorded();
        p.begin(1);
        p.add(3);
        p.replay(2);
        p.begin(3);  // issued, then issued again after a failed recording
        p.add(4);
        p.begin(3);
        p.add(5);
        QCOMPARE(p.take(0, "test"), (std::vector<int>{1, 2}));
        QCOMPARE(p.take(1, "test"), (std::vector<int>{3}));
        QCOMPARE(p.take(2, "test"), (std::vector<int>{1, 2}));
        QCOMPARE(p.take(3, "test"), (std::vector<int>{5}));
        QCOMPARE(error_of([&] { (void)p.take(4, "test statistics"); }),
                 QString("The test statistics have nothing pending for step 4."));
    }
};

QTEST_GUILESS_MAIN(TestStatisticsAfterStep)
#include "test_statistics_after_step.moc"
