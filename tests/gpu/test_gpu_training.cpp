// Whole training runs on the CPU and the CUDA backend through the Trainer, as the application
// runs them: the training semantics must be identical in outcome (docs/cuda.md):
//   - GradScaler's scale sequence (growth and backoff) and the skipped steps, step for step;
//   - a skipped step leaves every weight, bias and optimizer state bit-identical;
//   - without master weights small updates are lost to rounding on both, in like measure, and
//     stochastic or Kahan-compensated updates keep them on both (the same stochastic keys);
//   - the Trainer's pipelined step on the GPU (CudaStepPipeline: scaler and skip on the device,
//     results a step late, CUDA graphs) gives the same bits as the synchronous calls;
//   - the statistics that read a matmul's operands (what-if, block-scale views, accumulation
//     error) are copied out of pipelined and replayed steps and track the CPU's.
// The Trainer pipelines by default, so every test here runs CudaStepPipeline. CPU against GPU,
// the losses agree closely but not bit for bit (matmul accumulation order). Skips with the reason
// when there is no usable GPU.
#include <QtTest>

#include <bit>
#include <cmath>
#include <span>
#include <tuple>
#include <vector>

#include "backend/cuda/cuda_loader.h"
#include "data/dataset.h"
#include "error.h"
#include "gpu_compare.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace mantissa;
using namespace gpu_test;

namespace {

Experiment spirals_experiment() {
    Experiment e;
    e.dataset.kind = "spirals";
    e.dataset.samples = 4096;
    e.dataset.classes = 3;
    e.model.hidden = {64, 32};
    e.train.batch_size = 128;
    e.train.steps = 40;
    e.train.optimizer = OptimizerKind::adamw;
    e.train.lr = 3e-3;
    e.train.eval_every = 0;
    e.train.layer_stats_every = 1;
    e.precision.autocast = Autocast::fp16;
    e.precision.master_weights = true;
    e.precision.loss_scaling.mode = LossScalingMode::dynamic;
    e.precision.loss_scaling.init_scale = 256;
    e.precision.loss_scaling.growth_interval = 6;
    return e;
}

// BF16 weights without FP32 masters, SGD with updates far below a BF16 step: rounding to nearest
// loses nearly all of them (lesson 3's and lesson 11's setting).
Experiment bf16_weights_experiment() {
    Experiment e = spirals_experiment();
    e.precision.master_weights = false;
    e.precision.autocast = Autocast::bf16;
    e.precision.loss_scaling.mode = LossScalingMode::off;
    e.train.optimizer = OptimizerKind::sgd;
    e.train.momentum = 0;
    e.train.lr = 1e-4;
    return e;
}

std::vector<std::vector<std::uint32_t>> snapshot(Trainer& t) {
    std::vector<std::vector<std::uint32_t>> out;
    auto add = [&](const Tensor* tensor) {
        if (!tensor) return;
        std::vector<float> v(static_cast<std::size_t>(tensor->numel()));
        t.backend().download(*tensor, v.data(), tensor->numel());
        std::vector<std::uint32_t> bits(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) bits[i] = std::bit_cast<std::uint32_t>(v[i]);
        out.push_back(std::move(bits));
    };
    Network& n = t.network();
    for (int l = 0; l < n.layer_count(); ++l) {
        add(&n.weight(l));
        add(&n.bias(l));
        for (int p = 0; p < 2; ++p)
            for (int w = 0; w < 2; ++w) add(t.optimizer().state(l, p, w));
    }
    return out;
}

}  // namespace

class TestGpuTraining : public QObject {
    Q_OBJECT
    std::string m_reason;
    bool m_have_gpu = false;

#define REQUIRE_GPU() GPU_TEST_REQUIRE(m_have_gpu, m_reason)

    std::unique_ptr<Trainer> make(const Experiment& e, bool gpu, TrainerOptions options = {}) {
        Dataset data = load_dataset(e.dataset, e.train.seed);
        std::unique_ptr<Backend> b = gpu ? make_cuda_backend(0) : make_backend("cpu");
        return std::make_unique<Trainer>(e, std::move(data), std::move(b), options);
    }

    // Every step of a run, issued ahead (advance) as the application issues them.
    static std::vector<StepReport> run_to_end(Trainer& t) {
        std::vector<StepReport> out;
        auto keep = [&](std::span<const StepReport> r) { out.insert(out.end(), r.begin(), r.end()); };
        while (!t.done()) keep(t.advance());
        keep(t.flush());
        return out;
    }

    // Every step of a run, issued ahead (advance) with an injected overflow and a live change,
    // flushing first as Session does.
    static std::vector<StepReport> run_pipelined(Trainer& t, std::int64_t inject_at, std::int64_t change_at) {
        std::vector<StepReport> out;
        auto keep = [&](std::span<const StepReport> r) { out.insert(out.end(), r.begin(), r.end()); };
        while (!t.done()) {
            const std::int64_t next = t.steps_taken();
            if (next == inject_at || next == change_at) {
                keep(t.flush());
                if (next == inject_at) t.inject_non_finite("fc2", INFINITY);
                if (next == change_at) t.set_layer_precision("fc1", LayerPrecision::bf16);
            }
            keep(t.advance());
        }
        keep(t.flush());
        return out;
    }

private slots:
    void initTestCase() {
        std::string reason;
        auto b = cuda_backend(reason);
        m_have_gpu = b != nullptr;
        m_reason = reason;
        if (!m_have_gpu) QSKIP(qPrintable(gpu_test::suite_skipped(m_reason)));
    }

    void grad_scaler_sequence_and_skips() {
        REQUIRE_GPU();
        const Experiment e = spirals_experiment();
        auto cpu = make(e, false);
        auto gpu = make(e, true);
        int skipped = 0, grown = 0;
        double last_scale = 0;
        for (int step = 0; step < 40; ++step) {
            if (step == 7 || step == 19) {
                cpu->inject_non_finite("fc2", INFINITY);
                gpu->inject_non_finite("fc2", INFINITY);
            }
            const StepReport c = cpu->step();
            const StepReport g = gpu->step();
            QCOMPARE(g.step.loss_scale, c.step.loss_scale);
            QCOMPARE(g.step.overflow, c.step.overflow);
            QCOMPARE(g.step.skipped, c.step.skipped);
            QVERIFY2(std::abs(g.step.loss - c.step.loss) <= 0.05 * std::abs(c.step.loss) + 1e-3,
                     qPrintable(QString("step %1: loss %2 vs %3").arg(step).arg(g.step.loss).arg(c.step.loss)));
            skipped += g.step.skipped;
            if (last_scale && g.step.loss_scale > last_scale) ++grown;
            last_scale = g.step.loss_scale;
        }
        QCOMPARE(skipped, 2);  // exactly the injected steps
        QVERIFY(grown >= 2);   // and the scale grew in between
        QCOMPARE(gpu->scaler().scale(), cpu->scaler().scale());
        QCOMPARE(gpu->scaler().growth_tracker(), cpu->scaler().growth_tracker());
    }

    // A checkpoint taken on the GPU between pipelined steps and restored into a new GPU trainer
    // continues bit for bit as the run that never stopped (the same kernels in the same order),
    // with an FP8 layer's scaling state, the device-side loss scaler and AdamW's step count
    // restored (StepPipeline::restore, Fp8State::restore); the same file restores on the CPU.
    void checkpoint_resume_is_bit_identical() {
        REQUIRE_GPU();
        Experiment e = spirals_experiment();
        e.precision.layers["fc2"] = LayerPrecision::fp8_e4m3;
        e.precision.loss_scaling.growth_interval = 5;
        auto whole = make(e, true);
        std::vector<std::uint32_t> expected;
        while (!whole->done())
            for (const StepReport& r : whole->advance()) expected.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        for (const StepReport& r : whole->flush()) expected.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));

        auto first = make(e, true);
        std::vector<std::uint32_t> got;
        while (first->steps_taken() < 17)
            for (const StepReport& r : first->advance()) got.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        for (const StepReport& r : first->flush()) got.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        QTemporaryDir dir;
        const std::string path = dir.filePath("gpu.safetensors").toStdString();
        write_checkpoint(*first, path, "", {});
        const Checkpoint c(path);
        auto second = make(c.info().experiment, true);
        c.restore(*second);
        QCOMPARE(second->scaler().scale(), first->scaler().scale());
        while (!second->done())
            for (const StepReport& r : second->advance()) got.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        for (const StepReport& r : second->flush()) got.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        QCOMPARE(got, expected);
        auto cpu = make(c.info().experiment, false);
        c.restore(*cpu);
        QCOMPARE(cpu->steps_taken(), std::int64_t{17});
        QVERIFY(std::isfinite(cpu->step().step.loss));
    }

    void skipped_step_leaves_state_bit_identical() {
        REQUIRE_GPU();
        for (bool master : {true, false}) {
            Experiment e = spirals_experiment();
            e.precision.master_weights = master;
            e.precision.autocast = Autocast::bf16;
            auto gpu = make(e, true);
            for (int i = 0; i < 3; ++i) gpu->step();
            const auto before = snapshot(*gpu);
            gpu->inject_non_finite("fc1", NAN);
            const StepReport r = gpu->step();
            QVERIFY(r.step.skipped);
            QVERIFY(snapshot(*gpu) == before);
            const StepReport next = gpu->step();
            QVERIFY(!next.step.skipped);
            QVERIFY(snapshot(*gpu) != before);  // and the next step does update
        }
    }

    // The pipelined step (device-side scaler and skip, results read a step late, CUDA graphs)
    // against the synchronous calls on the same GPU: the same kernels, so the same bits.
    void pipeline_matches_the_synchronous_calls_data() {
        QTest::addColumn<int>("stats_every");
        QTest::addColumn<int>("optimizer");
        QTest::newRow("adamw, statistics every step") << 1 << static_cast<int>(OptimizerKind::adamw);
        QTest::newRow("sgd, statistics every 4th step") << 4 << static_cast<int>(OptimizerKind::sgd);
    }
    void pipeline_matches_the_synchronous_calls() {
        REQUIRE_GPU();
        QFETCH(int, stats_every);
        QFETCH(int, optimizer);
        Experiment e = spirals_experiment();
        e.train.steps = 60;
        e.train.layer_stats_every = stats_every;
        e.train.optimizer = static_cast<OptimizerKind>(optimizer);
        e.train.momentum = 0.9;
        e.train.schedule = LrSchedule::cosine;  // a new rate every step: read from the device
        TrainerOptions sync;
        sync.synchronous = true;
        auto direct = make(e, true, sync);
        auto piped = make(e, true);
        const auto a = run_pipelined(*direct, 9, 30);
        const auto b = run_pipelined(*piped, 9, 30);
        QCOMPARE(b.size(), a.size());
        int skipped = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            const QString at = QString("step %1").arg(i);
            QCOMPARE(b[i].step.step, static_cast<std::int64_t>(i));
            QVERIFY2(std::bit_cast<std::uint64_t>(b[i].step.loss) == std::bit_cast<std::uint64_t>(a[i].step.loss),
                     qPrintable(at + QString(": loss %1 vs %2").arg(b[i].step.loss).arg(a[i].step.loss)));
            QCOMPARE(b[i].step.loss_scale, a[i].step.loss_scale);
            QCOMPARE(b[i].step.skipped, a[i].step.skipped);
            QCOMPARE(b[i].step.overflow, a[i].step.overflow);
            QVERIFY2(std::bit_cast<std::uint64_t>(b[i].step.grad_norm) ==
                         std::bit_cast<std::uint64_t>(a[i].step.grad_norm) ||
                         (std::isnan(b[i].step.grad_norm) && std::isnan(a[i].step.grad_norm)),
                     qPrintable(at + ": grad norm"));
            QCOMPARE(b[i].layers.size(), a[i].layers.size());
            for (std::size_t l = 0; l < a[i].layers.size(); ++l) {
                QCOMPARE(b[i].layers[l].frac_zero, a[i].layers[l].frac_zero);
                QCOMPARE(b[i].layers[l].frac_lost_updates, a[i].layers[l].frac_lost_updates);
                QCOMPARE(b[i].layers[l].grad_amax, a[i].layers[l].grad_amax);
                QVERIFY(b[i].layers[l].grad_exponents.counts == a[i].layers[l].grad_exponents.counts);
            }
            // The same overflows and scale changes; the pipelined run also says when its graphs
            // start replaying (a notice).
            auto outcome_events = [](const StepReport& r) {
                std::vector<std::string> out;
                for (const Event& e : r.events)
                    if (e.kind != EventKind::notice) out.push_back(e.message);
                return out;
            };
            QVERIFY2(outcome_events(b[i]) == outcome_events(a[i]), qPrintable(at + ": events"));
            skipped += b[i].step.skipped;
        }
        QCOMPARE(skipped, 1);
        int told = 0;  // the person is told once that the steps replay as a graph
        for (const StepReport& r : b)
            for (const Event& e : r.events) told += e.data_json.find("replaying") != std::string::npos;
        QCOMPARE(told, 1);
        QVERIFY(snapshot(*piped) == snapshot(*direct));
        QCOMPARE(piped->optimizer().steps_taken(), direct->optimizer().steps_taken());
        const std::string how = piped->pipeline_description();
        qInfo("%s", how.c_str());
        QVERIFY2(how.find("CUDA graphs: 0 recorded") == std::string::npos, how.c_str());
        QVERIFY2(how.find(" 0 steps replayed") == std::string::npos, how.c_str());
    }

    // An MLP with its three layers in mxfp4, nvfp4 and mxfp8-e4m3 (BF16 autocast, FP32 masters),
    // gradients rounded stochastically, trained on both backends, the GPU through the pipelined
    // step: the records name the block formats, and the losses stay within a few percent of the
    // CPU's (the accumulation order differs, and a product on a block's rounding boundary can
    // round the other way, so the runs drift apart slowly rather than matching bit for bit).
    void block_scaled_run_tracks_the_cpu() {
        REQUIRE_GPU();
        Experiment e = spirals_experiment();
        e.precision.autocast = Autocast::bf16;
        e.precision.loss_scaling.mode = LossScalingMode::off;
        e.precision.layers["fc1"] = LayerPrecision::mxfp4;
        e.precision.layers["fc2"] = LayerPrecision::nvfp4;
        e.precision.layers["fc3"] = LayerPrecision::mxfp8_e4m3;
        e.precision.rounding.gradients = GradientRounding::stochastic;
        e.train.steps = 20;
        auto cpu = make(e, false);
        auto gpu = make(e, true);
        const std::vector<StepReport> c = run_to_end(*cpu), g = run_to_end(*gpu);
        QCOMPARE(g.size(), c.size());
        QCOMPARE(g[0].layers[0].precision, ComputeFormat(BlockFormat::mxfp4));
        QCOMPARE(g[0].layers[1].precision, ComputeFormat(BlockFormat::nvfp4));
        for (std::size_t i = 0; i < c.size(); ++i) {
            QVERIFY(std::isfinite(g[i].step.loss));
            QVERIFY2(std::abs(g[i].step.loss - c[i].step.loss) <= 0.05 * std::abs(c[i].step.loss),
                     qPrintable(QString("step %1: loss %2 on the GPU, %3 on the CPU")
                                    .arg(i)
                                    .arg(g[i].step.loss)
                                    .arg(c[i].step.loss)));
        }
        QCOMPARE(gpu->backend().stochastic_rounding_position(), cpu->backend().stochastic_rounding_position());
    }

    void operand_statistics_after_the_step_track_the_cpu() {
        REQUIRE_GPU();
        Experiment e = spirals_experiment();
        e.precision.autocast = Autocast::bf16;
        e.precision.loss_scaling.mode = LossScalingMode::off;
        e.precision.layers["fc2"] = LayerPrecision::mxfp4;
        e.train.steps = 40;
        e.train.layer_stats_every = 2;  // statistics graphs recorded, then replayed
        e.train.block_scales.format = BlockFormat::mxfp8_e4m3;
        e.train.accumulation_error = true;
        auto cpu = make(e, false);
        auto gpu = make(e, true);
        const std::vector<StepReport> c = run_to_end(*cpu), g = run_to_end(*gpu);
        QCOMPARE(g.size(), c.size());
        // More steps replayed than the run has plain steps: statistics steps were replayed too.
        const std::string how = gpu->pipeline_description();  // "CUDA graphs: 2 recorded, 31 steps replayed, ..."
        const std::size_t at = how.find(" steps replayed");
        QVERIFY2(at != std::string::npos, how.c_str());
        const std::size_t from = how.rfind(' ', at - 1) + 1;
        QVERIFY2(std::stoll(how.substr(from, at - from)) > e.train.steps / 2, how.c_str());
        for (std::size_t i = 0; i < c.size(); ++i) {
            const QString at = QString("step %1").arg(i);
            QCOMPARE(g[i].what_if.size(), c[i].what_if.size());
            QCOMPARE(g[i].block_scales.size(), c[i].block_scales.size());
            QCOMPARE(g[i].ops.size(), c[i].ops.size());
            QCOMPARE(g[i].what_if.size(), i % 2 == 0 ? std::size_t{3 * 6} : std::size_t{0});
            for (std::size_t k = 0; k < c[i].what_if.size(); ++k) {
                const WhatIfRecord &a = c[i].what_if[k], &b = g[i].what_if[k];
                const QString what = at + ", " + QString::fromStdString(a.name + " in " + std::string(a.format.name()));
                QCOMPARE(b.step, a.step);
                QCOMPARE(b.name, a.name);
                QVERIFY2(b.format == a.format, qPrintable(what));
                // The first step's fc1 reads the same batch and weights on both: the same numbers.
                if (i == 0 && a.name == "fc1") {
                    QVERIFY2(b.input.sqnr_db == a.input.sqnr_db && b.input.underflow == a.input.underflow,
                             qPrintable("x of " + what));
                    QVERIFY2(b.weight.sqnr_db == a.weight.sqnr_db && b.weight.saturation == a.weight.saturation,
                             qPrintable("W of " + what));
                }
                for (const auto& [x, y, operand] : {std::tuple{a.input, b.input, "x"}, std::tuple{a.weight, b.weight, "W"},
                                                    std::tuple{a.grad_output, b.grad_output, "dy"}}) {
                    QCOMPARE(y.values, x.values);
                    QVERIFY2(std::abs(y.underflow - x.underflow) <= 0.02 && std::abs(y.saturation - x.saturation) <= 0.02,
                             qPrintable(QString(operand) + " of " + what));
                    QVERIFY2(!std::isfinite(x.sqnr_db) || std::abs(y.sqnr_db - x.sqnr_db) <= 1.5,
                             qPrintable(QString("%1 of %2: SQNR %3 dB on the GPU, %4 on the CPU")
                                            .arg(operand).arg(what).arg(y.sqnr_db).arg(x.sqnr_db)));
                }
            }
            for (std::size_t k = 0; k < c[i].block_scales.size(); ++k) {
                QCOMPARE(g[i].block_scales[k].name, c[i].block_scales[k].name);
                QCOMPARE(g[i].block_scales[k].operand, c[i].block_scales[k].operand);
                QCOMPARE(g[i].block_scales[k].exponents.size(), c[i].block_scales[k].exponents.size());
            }
            for (std::size_t k = 0; k < c[i].ops.size(); ++k) {
                QCOMPARE(g[i].ops[k].stat, c[i].ops[k].stat);
                QVERIFY2(std::isfinite(g[i].ops[k].value) && g[i].ops[k].value >= 0,
                         qPrintable(at + " " + QString::fromStdString(g[i].ops[k].name + " " + g[i].ops[k].stat)));
            }
        }
        // The first statistics step's fc1 (the last layer viewed: x, W, dy): the same batch and
        // weights, the same block scales.
        const std::size_t n = c[0].block_scales.size();
        QVERIFY(n >= 3 && c[0].block_scales[n - 1].name == "fc1");
        for (std::size_t k = n - 3; k < n - 1; ++k)
            QCOMPARE(g[0].block_scales[k].exponents, c[0].block_scales[k].exponents);
    }

    void lost_updates_without_master_weights() {
        REQUIRE_GPU();
        Experiment e = bf16_weights_experiment();
        auto cpu = make(e, false);
        auto gpu = make(e, true);
        double lost_cpu = 0, lost_gpu = 0;
        for (int step = 0; step < 10; ++step) {
            const StepReport c = cpu->step();
            const StepReport g = gpu->step();
            QCOMPARE(g.layers.size(), c.layers.size());
            for (std::size_t l = 0; l < c.layers.size(); ++l) {
                lost_cpu += c.layers[l].frac_lost_updates;
                lost_gpu += g.layers[l].frac_lost_updates;
            }
        }
        QVERIFY2(lost_cpu > 0.5, qPrintable(QString("CPU lost %1").arg(lost_cpu)));  // the lesson happens
        QVERIFY2(std::abs(lost_gpu - lost_cpu) <= 0.05 * lost_cpu,
                 qPrintable(QString("lost updates: gpu %1, cpu %2").arg(lost_gpu).arg(lost_cpu)));
    }

    // BF16 weights without masters, rounded to nearest, then stochastically from step 10, then
    // Kahan-compensated from step 20 (precision.rounding.weights, switched during the run as lesson
    // 11 does): on the GPU, through the pipelined step and its CUDA graphs, each keeps the updates
    // rounding to nearest loses as on the CPU, and both draw the same stochastic keys.
    void weight_rounding_switched_during_the_run() {
        REQUIRE_GPU();
        Experiment e = bf16_weights_experiment();
        e.train.steps = 36;
        std::vector<double> lost[2], loss[2];
        std::uint64_t position[2] = {0, 0};
        for (bool gpu : {false, true}) {
            auto t = make(e, gpu);
            auto keep = [&](std::span<const StepReport> reports) {
                for (const StepReport& r : reports) {
                    double sum = 0;
                    for (const auto& layer : r.layers) sum += layer.frac_lost_updates;
                    lost[gpu].push_back(sum / static_cast<double>(r.layers.size()));
                    loss[gpu].push_back(r.step.loss);
                }
            };
            while (!t->done()) {
                if (t->steps_taken() == 10 || t->steps_taken() == 20) {
                    keep(t->flush());
                    RoundingSpec r;
                    r.weights = t->steps_taken() == 10 ? WeightRounding::stochastic : WeightRounding::kahan;
                    t->set_rounding(r);
                }
                keep(t->advance());
            }
            keep(t->flush());
            position[gpu] = t->state().stochastic_rounding;
            if (gpu) qInfo("%s", t->pipeline_description().c_str());
        }
        QCOMPARE(lost[1].size(), lost[0].size());
        QCOMPARE(position[1], position[0]);  // one key per narrow parameter per step, steps 10 to 19
        QVERIFY2(position[0] > 0 && position[0] % 10 == 0, qPrintable(QString::number(position[0])));
        for (std::size_t s = 0; s < lost[0].size(); ++s) {
            const QString at = QString("step %1: lost cpu %2 gpu %3, loss cpu %4 gpu %5")
                                   .arg(s).arg(lost[0][s]).arg(lost[1][s]).arg(loss[0][s]).arg(loss[1][s]);
            QVERIFY2(std::abs(lost[1][s] - lost[0][s]) <= 0.05 + 0.05 * lost[0][s], qPrintable(at));
            QVERIFY2(std::abs(loss[1][s] - loss[0][s]) <= 1e-2 * std::abs(loss[0][s]), qPrintable(at));
            if (s < 10) QVERIFY2(lost[0][s] > 0.5, qPrintable(at));    // to nearest: most are lost
            if (s >= 22) QVERIFY2(lost[1][s] < 0.1, qPrintable(at));  // Kahan: the compensation keeps them
        }
    }

    // A run whose BF16 weights and gradients round stochastically, checkpointed and resumed on the
    // GPU, goes on bit for bit as the run that never stopped: the checkpoint keeps the device's key
    // position.
    void resume_with_stochastic_weights_is_bit_identical() {
        REQUIRE_GPU();
        Experiment e = bf16_weights_experiment();
        e.precision.rounding.weights = WeightRounding::stochastic;
        e.precision.rounding.gradients = GradientRounding::stochastic;
        e.train.optimizer = OptimizerKind::adamw;  // updates of about a BF16 step: every key shows
        e.train.lr = 3e-3;
        e.train.steps = 30;
        auto losses = [](std::span<const StepReport> reports, std::vector<std::uint32_t>& out) {
            for (const StepReport& r : reports)
                out.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(r.step.loss)));
        };
        auto whole = make(e, true);
        std::vector<std::uint32_t> expected, got;
        while (!whole->done()) losses(whole->advance(), expected);
        losses(whole->flush(), expected);
        auto first = make(e, true);
        while (first->steps_taken() < 13) losses(first->advance(), got);
        losses(first->flush(), got);
        QVERIFY(first->state().stochastic_rounding > 0);
        QTemporaryDir dir;
        const std::string path = dir.filePath("gpu-sr.safetensors").toStdString();
        write_checkpoint(*first, path, "", {});
        const Checkpoint c(path);
        auto second = make(c.info().experiment, true);
        c.restore(*second);
        QCOMPARE(second->state().stochastic_rounding, first->state().stochastic_rounding);
        while (!second->done()) losses(second->advance(), got);
        losses(second->flush(), got);
        QCOMPARE(got, expected);
    }
};

QTEST_GUILESS_MAIN(TestGpuTraining)
#include "test_gpu_training.moc"
