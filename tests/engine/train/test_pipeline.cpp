// The Trainer's step pipeline: results read steps after they were issued (as a GPU's are) must
// give the same reports, events, loss scales and weights, bit for bit, as results read at once;
// advance/flush hand every report out once and in order; live changes and evaluation wait for an
// empty pipeline. SyncStepPipeline's `lag` stands in for a GPU here.
#include <QtTest>

#include <cstring>

#include "backend/backend.h"
#include "backend/sync_step_pipeline.h"
#include "error.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;

namespace {

struct Scenario {
    Experiment experiment;
    Dataset data;
    std::int64_t inject_at = -1;   // inject inf into fc2's weight gradient before this step
    std::int64_t change_at = -1;   // switch autocast to bf16 and loss scaling to fixed 128 here
};

struct Run {
    std::vector<StepReport> reports;
    std::vector<std::vector<float>> weights;
    float final_scale = 0;
    std::int64_t growth_tracker = 0, optimizer_steps = 0;
};

// Runs the scenario with results held back `lag` steps, applying the live changes the way Session
// does: flush, then change. (void: the QCOMPARE family returns from the function.)
void run(const Scenario& sc, int lag, Run& out) {
    TrainerOptions options;
    options.sync_lag = lag;
    Trainer t(sc.experiment, sc.data, make_backend("cpu"), options);
    auto keep = [&](std::span<const StepReport> reports) {
        out.reports.insert(out.reports.end(), reports.begin(), reports.end());
    };
    while (!t.done()) {
        const std::int64_t next = t.steps_taken();
        if (next == sc.inject_at || next == sc.change_at) {
            keep(t.flush());
            std::vector<Event> events;
            if (next == sc.inject_at) events.push_back(t.inject_non_finite("fc2", INFINITY));
            if (next == sc.change_at) {
                events.push_back(t.set_autocast(Autocast::bf16));
                LossScalingSpec s = t.scaler().spec();
                s.mode = LossScalingMode::fixed;
                s.init_scale = 128;
                events.push_back(t.set_loss_scaling(s));
            }
            for (const Event& e : events) QCOMPARE(e.step, next);
        }
        keep(t.advance());
        if (lag > 0 && t.steps_taken() <= lag) QVERIFY(out.reports.empty());
        QVERIFY(t.in_flight() <= lag);
    }
    keep(t.flush());
    QCOMPARE(t.in_flight(), 0);
    for (int l = 0; l < t.network().layer_count(); ++l) {
        out.weights.push_back(t.network().read(t.network().weight(l)));
        out.weights.push_back(t.network().read(t.network().bias(l)));
    }
    out.final_scale = t.scaler().scale();
    out.growth_tracker = t.scaler().growth_tracker();
    out.optimizer_steps = t.optimizer().steps_taken();
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void compare(const Run& a, const Run& b) {
    QCOMPARE(b.reports.size(), a.reports.size());
    for (std::size_t i = 0; i < a.reports.size(); ++i) {
        const StepReport& x = a.reports[i];
        const StepReport& y = b.reports[i];
        QCOMPARE(y.step.step, static_cast<std::int64_t>(i));  // in order, each once
        QCOMPARE(y.step.step, x.step.step);
        QCOMPARE(y.step.epoch, x.step.epoch);
        QVERIFY2(same_bits(y.step.loss, x.step.loss), qPrintable(QString("loss at step %1").arg(i)));
        QCOMPARE(y.step.loss_scale, x.step.loss_scale);
        QCOMPARE(y.step.overflow, x.step.overflow);
        QCOMPARE(y.step.skipped, x.step.skipped);
        QVERIFY(same_bits(y.step.grad_norm, x.step.grad_norm));
        QCOMPARE(y.step.learning_rate, x.step.learning_rate);
        QCOMPARE(y.samples, x.samples);
        QCOMPARE(y.step.memory.total(), x.step.memory.total());
        QCOMPARE(y.layers.size(), x.layers.size());
        for (std::size_t l = 0; l < x.layers.size(); ++l) {
            const LayerStepRecord& p = x.layers[l];
            const LayerStepRecord& q = y.layers[l];
            QCOMPARE(q.precision, p.precision);
            QVERIFY(same_bits(q.grad_amax, p.grad_amax));
            QVERIFY(same_bits(q.frac_zero, p.frac_zero));
            QVERIFY(same_bits(q.frac_underflow, p.frac_underflow));
            QVERIFY(same_bits(q.frac_nonfinite, p.frac_nonfinite));
            QVERIFY(same_bits(q.frac_lost_updates, p.frac_lost_updates));
            QVERIFY(q.grad_exponents.counts == p.grad_exponents.counts);
        }
        QCOMPARE(y.events.size(), x.events.size());
        for (std::size_t e = 0; e < x.events.size(); ++e) {
            QCOMPARE(y.events[e].kind, x.events[e].kind);
            QCOMPARE(y.events[e].step, x.events[e].step);
            QCOMPARE(y.events[e].message, x.events[e].message);
            QCOMPARE(y.events[e].data_json, x.events[e].data_json);
        }
    }
    QCOMPARE(b.weights.size(), a.weights.size());
    for (std::size_t w = 0; w < a.weights.size(); ++w)
        QVERIFY(std::memcmp(a.weights[w].data(), b.weights[w].data(), a.weights[w].size() * sizeof(float)) == 0);
    QCOMPARE(b.final_scale, a.final_scale);
    QCOMPARE(b.growth_tracker, a.growth_tracker);
    QCOMPARE(b.optimizer_steps, a.optimizer_steps);
}

std::int64_t count_events(const Run& r, EventKind kind) {
    std::int64_t n = 0;
    for (const StepReport& s : r.reports)
        for (const Event& e : s.events) n += e.kind == kind;
    return n;
}

// A SyncStepPipeline behind every call, for test pipelines that change a few of them.
class WrappedSync : public StepPipeline {
public:
    WrappedSync(Backend& b, const LossScalingSpec& spec) : m_inner(b, spec) {}
    int depth() const override { return m_inner.depth(); }
    int in_flight() const override { return m_inner.in_flight(); }
    void set_loss_scaling(const LossScalingSpec& spec) override { m_inner.set_loss_scaling(spec); }
    void invalidate(const std::string& reason) override { m_inner.invalidate(reason); }
    void restore(const PipelineState& state) override { m_inner.restore(state); }
    bool begin(const StepBegin& b) override { return m_inner.begin(b); }
    void loss(const Tensor& output, Tensor* grad) override { m_inner.loss(output, grad); }
    std::vector<RoundingStats>* rounding_sink() override { return m_inner.rounding_sink(); }
    void check(const std::vector<Tensor*>& g, const std::vector<bool>& w) override { m_inner.check(g, w); }
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int l) override {
        m_inner.optimizer_step(t, h, l);
    }
    bool end() override { return m_inner.end(); }
    bool collect(StepResults& out) override { return m_inner.collect(out); }
    std::string describe() const override { return "wrapped"; }

protected:
    SyncStepPipeline m_inner;
};

// A pipeline that "records" the body of one chosen step and fails, as a GPU pipeline's CUDA graph
// capture can: while recording it runs nothing of the body's pipeline calls (as a capture runs
// nothing), then either end() reports the failed instantiation or check() throws as an illegal
// call under capture does. The Trainer must issue the body again and lose nothing.
class FailingRecorder final : public WrappedSync {
public:
    enum class How { at_end, in_body };
    FailingRecorder(Backend& b, const LossScalingSpec& spec, std::int64_t fail_at, How how)
        : WrappedSync(b, spec), m_fail_at(fail_at), m_how(how) {}
    bool begin(const StepBegin& b) override {
        m_recording = b.step == m_fail_at;
        return m_inner.begin(b);
    }
    void loss(const Tensor& output, Tensor* grad) override {
        if (!m_recording) m_inner.loss(output, grad);
    }
    std::vector<RoundingStats>* rounding_sink() override {
        return m_recording ? &m_discarded : m_inner.rounding_sink();
    }
    void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want) override {
        if (m_recording && m_how == How::in_body) throw Error("operation not permitted when stream is capturing");
        if (!m_recording) m_inner.check(grads, want);
    }
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int layer) override {
        if (!m_recording) m_inner.optimizer_step(t, h, layer);
    }
    bool end() override {
        if (m_recording) {  // instantiation failed: nothing ran, issue it again
            m_recording = false;
            ++retries;
            return true;
        }
        return m_inner.end();
    }
    bool body_failed(const std::string& what) override {
        if (!m_recording) return false;
        m_recording = false;
        ++retries;
        reason = what;
        return true;
    }

    int retries = 0;
    std::string reason;

private:
    std::int64_t m_fail_at;
    How m_how;
    bool m_recording = false;
    std::vector<RoundingStats> m_discarded;
};

// A pipeline that says its steps replay from one step on, and that recording turned off at a
// later one: the Trainer tells the person each once.
class NarratingPipeline final : public WrappedSync {
public:
    using WrappedSync::WrappedSync;
    bool collect(StepResults& out) override {
        if (!m_inner.collect(out)) return false;
        out.replayed = out.step >= 3;
        m_collected = out.step;
        return true;
    }
    std::string recording_off() const override { return m_collected >= 6 ? "a test said so" : std::string(); }

private:
    std::int64_t m_collected = -1;
};

}  // namespace

Q_DECLARE_METATYPE(Scenario)
Q_DECLARE_METATYPE(FailingRecorder::How)

class TestPipeline : public QObject {
    Q_OBJECT
private slots:
    void laggedResultsGiveTheSameRun_data() {
        QTest::addColumn<Scenario>("scenario");
        QTest::addColumn<int>("lag");
        // fp16 with dynamic scaling: growth every 5 steps, an injected overflow (backoff, skip),
        // then live changes of autocast and scaling; AdamW's step count must skip with it.
        Scenario fp16{quick_experiment(30), blobs_set(1000, 3, 5), 7, 18};
        fp16.experiment.precision.autocast = Autocast::fp16;
        fp16.experiment.precision.loss_scaling.mode = LossScalingMode::dynamic;
        fp16.experiment.precision.loss_scaling.growth_interval = 5;
        fp16.experiment.train.optimizer = OptimizerKind::adamw;
        fp16.experiment.train.lr = 1e-3;
        // SGD with momentum (its first step initialises the buffer), a cosine schedule, statistics
        // every third step, a last partial batch (1000 rows, batch 64), master weights off.
        Scenario sgd{quick_experiment(20), blobs_set(1000, 3, 6), 3, -1};
        sgd.experiment.precision.autocast = Autocast::bf16;
        sgd.experiment.precision.master_weights = false;
        sgd.experiment.precision.loss_scaling.mode = LossScalingMode::dynamic;
        sgd.experiment.train.optimizer = OptimizerKind::sgd;
        sgd.experiment.train.momentum = 0.9;
        sgd.experiment.train.lr = 0.05;
        sgd.experiment.train.schedule = LrSchedule::cosine;
        sgd.experiment.train.layer_stats_every = 3;
        sgd.experiment.train.epochs = 2;
        sgd.experiment.train.steps = 0;
        // FP8 layers (amax histories carried between steps) and a regression loss.
        Scenario fp8{quick_experiment(16), regression_set(512, 64, 4, 2, 1.0f, 9), 5, 11};
        for (const char* l : {"fc1", "fc2", "fc3"}) fp8.experiment.precision.layers[l] = LayerPrecision::fp8_e4m3;
        fp8.experiment.precision.autocast = Autocast::bf16;
        fp8.experiment.precision.loss_scaling.mode = LossScalingMode::dynamic;
        for (int lag : {1, 2}) {
            QTest::addRow("fp16-adamw lag %d", lag) << fp16 << lag;
            QTest::addRow("bf16-sgd lag %d", lag) << sgd << lag;
            QTest::addRow("fp8-mse lag %d", lag) << fp8 << lag;
        }
    }
    void laggedResultsGiveTheSameRun() {
        QFETCH(Scenario, scenario);
        QFETCH(int, lag);
        Run direct, lagged;
        run(scenario, 0, direct);
        if (QTest::currentTestFailed()) return;
        // The scenario exercises what it claims to.
        QVERIFY(count_events(direct, EventKind::overflow) >= 1);
        QVERIFY(count_events(direct, EventKind::scale_change) >= 1);
        run(scenario, lag, lagged);
        if (QTest::currentTestFailed()) return;
        compare(direct, lagged);
    }

    void advanceReportsLateAndFlushCatchesUp() {
        TrainerOptions options;
        options.sync_lag = 1;
        Trainer t(quick_experiment(3), blobs_set(500, 3, 1), make_backend("cpu"), options);
        QCOMPARE(t.advance().size(), std::size_t{0});  // step 0 in flight
        QCOMPARE(t.in_flight(), 1);
        const auto second = t.advance();
        QCOMPARE(second.size(), std::size_t{1});
        QCOMPARE(second[0].step.step, std::int64_t{0});
        QCOMPARE(t.steps_taken(), std::int64_t{2});
        const auto rest = t.flush();
        QCOMPARE(rest.size(), std::size_t{1});
        QCOMPARE(rest[0].step.step, std::int64_t{1});
        QCOMPARE(t.flush().size(), std::size_t{0});
        QCOMPARE(t.step().step.step, std::int64_t{2});  // step() waits for its own step
        QVERIFY(t.done());
        QVERIFY_THROWS_EXCEPTION(Error, t.advance());
    }

    void liveChangesAndEvaluationWaitForAnEmptyPipeline() {
        TrainerOptions options;
        options.sync_lag = 1;
        Trainer t(quick_experiment(5), blobs_set(500, 3, 1), make_backend("cpu"), options);
        t.advance();
        QVERIFY_THROWS_EXCEPTION(Error, t.set_autocast(Autocast::bf16));
        QVERIFY_THROWS_EXCEPTION(Error, t.set_learning_rate(0.5));
        QVERIFY_THROWS_EXCEPTION(Error, t.inject_non_finite("fc1", INFINITY));
        QVERIFY_THROWS_EXCEPTION(Error, t.evaluate());
        try {
            t.evaluate();
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("flush") != std::string::npos, e.what());
        }
        t.flush();
        const Event e = t.set_autocast(Autocast::bf16);
        QCOMPARE(e.step, std::int64_t{1});
        QVERIFY(std::isfinite(t.evaluate().loss));
        QCOMPARE(t.step().step.step, std::int64_t{1});
    }

    // A recording that fails, at the end or part-way through the body, costs the run nothing: the
    // Trainer issues the body again and the run is the same, bit for bit.
    void failedRecordingIsIssuedAgain_data() {
        QTest::addColumn<FailingRecorder::How>("how");
        QTest::newRow("instantiation fails at end()") << FailingRecorder::How::at_end;
        QTest::newRow("a call fails in the body") << FailingRecorder::How::in_body;
    }
    void failedRecordingIsIssuedAgain() {
        QFETCH(FailingRecorder::How, how);
        Experiment e = quick_experiment(12);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.train.optimizer = OptimizerKind::adamw;
        const Dataset data = blobs_set(1000, 3, 4);
        Trainer plain(e, data, make_backend("cpu"));
        FailingRecorder* recorder = nullptr;
        TrainerOptions options;
        options.make_pipeline = [&](Backend& b, const LossScalingSpec& spec) {
            auto p = std::make_unique<FailingRecorder>(b, spec, 5, how);
            recorder = p.get();
            return p;
        };
        Trainer flaky(e, data, make_backend("cpu"), options);
        QVERIFY(recorder);
        for (int i = 0; i < 12; ++i) {
            const StepReport a = plain.step();
            const StepReport& b = flaky.step();
            QCOMPARE(b.step.step, a.step.step);
            QVERIFY2(same_bits(b.step.loss, a.step.loss), qPrintable(QString("step %1").arg(i)));
            QCOMPARE(b.step.loss_scale, a.step.loss_scale);
            QVERIFY(same_bits(b.step.grad_norm, a.step.grad_norm));
            QCOMPARE(b.layers.size(), a.layers.size());
        }
        QCOMPARE(recorder->retries, 1);
        if (how == FailingRecorder::How::in_body)
            QVERIFY(recorder->reason.find("capturing") != std::string::npos);
        for (int l = 0; l < plain.network().layer_count(); ++l)
            QVERIFY(plain.network().read(plain.network().weight(l)) == flaky.network().read(flaky.network().weight(l)));
        QCOMPARE(flaky.optimizer().steps_taken(), plain.optimizer().steps_taken());
    }

    void replayAndRecordingOffAreToldOnce() {
        TrainerOptions options;
        options.make_pipeline = [](Backend& b, const LossScalingSpec& spec) {
            return std::make_unique<NarratingPipeline>(b, spec);
        };
        Trainer t(quick_experiment(10), blobs_set(500, 3, 1), make_backend("cpu"), options);
        std::vector<Event> notices;
        while (!t.done())
            for (const Event& e : t.step().events)
                if (e.kind == EventKind::notice) notices.push_back(e);
        QCOMPARE(notices.size(), std::size_t{2});
        QCOMPARE(notices[0].step, std::int64_t{3});
        QVERIFY(notices[0].message.find("From step 3") != std::string::npos);
        QVERIFY(notices[0].data_json.find("replaying") != std::string::npos);
        QCOMPARE(notices[1].step, std::int64_t{6});
        QVERIFY(notices[1].message.find("a test said so") != std::string::npos);
    }

    // Each step() returns its own report, whatever the lag.
    void stepIsOneStepAtATime() {
        TrainerOptions options;
        options.sync_lag = 2;
        Trainer t(quick_experiment(4), blobs_set(500, 3, 1), make_backend("cpu"), options);
        for (std::int64_t i = 0; i < 4; ++i) {
            QCOMPARE(t.step().step.step, i);
            QCOMPARE(t.in_flight(), 0);
        }
        QCOMPARE(t.pipeline_description(), std::string("eager"));
    }
};

QTEST_GUILESS_MAIN(TestPipeline)
#include "test_pipeline.moc"
