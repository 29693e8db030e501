// RunSeries: the chart data of one run. Checks the TensorBoard smoothing against its formula, the
// memory stacking, the overflow/skip markers, the setting-change marker labels and the estimate
// of the remaining time; a transformer's op statistics (declared from its layers, or as they
// come) and a language model's samples from its evaluation events.
#include <QtTest>

#include <cmath>

#include "series/run_series.h"
#include "exact_compare.h"

using namespace mantissa;
using mantissa::ui::MemoryCategory;
using mantissa::ui::RunSeries;

namespace {
StepRecord step(std::int64_t i, double loss, double scale = 1, bool overflow = false) {
    StepRecord s;
    s.step = i;
    s.time_s = 0.01 * static_cast<double>(i + 1);
    s.loss = loss;
    s.loss_scale = scale;
    s.overflow = overflow;
    s.skipped = overflow;
    s.samples_per_s = 1000 + static_cast<double>(i);
    return s;
}
}  // namespace

class TestRunSeries : public QObject {
    Q_OBJECT
private slots:
    void smoothingIsTensorBoardsDebiasedEma_data() {
        QTest::addColumn<double>("weight");
        QTest::newRow("0 (off)") << 0.0;
        QTest::newRow("0.6 (TensorBoard's default)") << 0.6;
        QTest::newRow("0.95") << 0.95;
    }
    void smoothingIsTensorBoardsDebiasedEma() {
        QFETCH(double, weight);
        RunSeries r;
        r.setSmoothingWeight(weight);
        const std::vector<double> losses = {2.0, 1.0, 4.0, NAN, 3.0, 0.5};
        for (std::size_t i = 0; i < losses.size(); ++i) r.addStep(step(static_cast<std::int64_t>(i), losses[i]));
        // Reference: last = last*w + (1-w)*v; smoothed = last / (1 - w^n), non-finite skipped.
        double last = 0;
        int n = 0;
        std::vector<double> expected;
        for (double v : losses) {
            if (!std::isfinite(v)) continue;
            last = last * weight + (1 - weight) * v;
            ++n;
            expected.push_back(last / (1 - std::pow(weight, n)));
        }
        QCOMPARE(r.lossSmoothed().size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i)
            QVERIFY(std::abs(r.lossSmoothed().y(i) - expected[i]) < 1e-6 * std::abs(expected[i]) + 1e-9);
        QCOMPARE(r.lossSmoothed().y(0), 2.0);  // the first point is the first value, not pulled to 0
        QCOMPARE(r.loss().size(), losses.size());
    }

    void changingTheWeightRecomputes() {
        RunSeries r;
        r.setSmoothingWeight(0.9);
        for (int i = 0; i < 50; ++i) r.addStep(step(i, i % 2 ? 1.0 : 3.0));
        const double smoothEnd = r.lossSmoothed().lastY();
        QVERIFY(std::abs(smoothEnd - 2.0) < 0.2);
        const auto revision = r.revision();
        r.setSmoothingWeight(0.0);
        QVERIFY(r.revision() > revision);
        QCOMPARE(r.lossSmoothed().size(), std::size_t{50});
        for (std::size_t i = 0; i < 50; ++i) QCOMPARE(r.lossSmoothed().y(i), r.loss().y(i));
        for (std::size_t i = 0; i < 50; ++i) QCOMPARE(r.throughputSmoothed().y(i), r.throughput().y(i));
    }

    void memoryIsStackedInCategoryOrder() {
        RunSeries r;
        StepRecord s = step(0, 1);
        s.memory.parameters = 100;
        s.memory.master_weights = 200;
        s.memory.gradients = 50;
        s.memory.optimizer_state = 400;
        s.memory.activations = 10;
        s.memory.workspace = 1;
        r.addStep(s);
        QCOMPARE(r.memoryStack(MemoryCategory::parameters).lastY(), 100.0);
        QCOMPARE(r.memoryStack(MemoryCategory::master_weights).lastY(), 300.0);
        QCOMPARE(r.memoryStack(MemoryCategory::gradients).lastY(), 350.0);
        QCOMPARE(r.memoryStack(MemoryCategory::optimizer_state).lastY(), 750.0);
        QCOMPARE(r.memoryStack(MemoryCategory::activations).lastY(), 760.0);
        QCOMPARE(r.memoryStack(MemoryCategory::workspace).lastY(), double(s.memory.total()));
    }

    void overflowAndSkipAreMarkedAtTheirScale() {
        RunSeries r;
        r.addStep(step(0, 1, 65536));
        r.addStep(step(1, INFINITY, 65536, true));
        r.addStep(step(2, 1, 32768));
        QCOMPARE(r.overflows().size(), std::size_t{1});
        QCOMPARE(r.overflows().x(0), 1.0);
        QCOMPARE(r.overflows().y(0), 65536.0);
        QCOMPARE(r.skipped().size(), std::size_t{1});
        QCOMPARE(r.lossScale().atOrBefore(2)->y, 32768.0);
        QCOMPARE(r.overflowCount(), std::int64_t{1});
        QCOMPARE(r.lastStep()->step, std::int64_t{2});
    }

    void layerSamplesFeedUnderflowAndLatest() {
        RunSeries r;
        r.reset({"fc1", "fc2"});
        ui::LayerSample a;
        a.step = 3;
        a.layer = 1;
        a.precision = Format::fp16;
        a.frac_underflow = 0.4;
        a.frac_nonfinite = 0.01;
        r.addLayerSample(a);
        a.layer = 5;  // out of range: ignored
        r.addLayerSample(a);
        QCOMPARE(r.underflow(1).size(), std::size_t{1});
        QCOMPARE(r.underflow(1).y(0), double(0.4f));
        QVERIFY(!r.latestLayers()[0].has_value());
        QCOMPARE(r.latestLayers()[1]->precision, ComputeFormat(Format::fp16));
        QCOMPARE(r.nonFiniteSteps()[1], std::int64_t{1});
    }

    void onlyTestEvaluationsArePlotted() {
        RunSeries r;
        r.addEval({10, "train", 0.3, 0.9});
        r.addEval({10, "test", 0.5, 0.8});
        r.addEval({20, "test", 0.4, NAN});  // regression: no accuracy
        QCOMPARE(r.testLoss().size(), std::size_t{2});
        QCOMPARE(r.testAccuracy().size(), std::size_t{1});
        QCOMPARE(r.testAccuracy().y(0), double(0.8f));
    }

    void settingChangesBecomeLabelledMarkers_data() {
        QTest::addColumn<QString>("data");
        QTest::addColumn<QString>("label");
        QTest::newRow("layer") << R"({"key": "precision.layers.fc1", "old": "auto", "new": "fp16"})" << "fc1=fp16";
        QTest::newRow("autocast") << R"({"key": "precision.autocast", "old": "off", "new": "bf16"})" << "autocast=bf16";
        QTest::newRow("learning rate") << R"({"key": "train.lr", "old": 0.001, "new": 0.01})" << "lr=0.01";
        QTest::newRow("scaling object") << R"({"key": "precision.loss_scaling", "new": {"mode": "off"}})"
                                        << "scaling=off";
        QTest::newRow("scaling mode") << R"({"key": "precision.loss_scaling.mode", "old": "dynamic", "new": "off"})"
                                      << "scaling=off";
        QTest::newRow("scaling parameter") << R"({"key": "precision.loss_scaling.growth_interval", "new": 100})"
                                           << "growth_interval=100";
        QTest::newRow("not json") << "oops" << "the message";
        QTest::newRow("no key") << R"({"x": 1})" << "the message";
    }
    void settingChangesBecomeLabelledMarkers() {
        QFETCH(QString, data);
        QFETCH(QString, label);
        RunSeries r;
        Event e;
        e.step = 42;
        e.kind = EventKind::setting_change;
        e.message = "the message";
        e.data_json = data.toStdString();
        r.addEvent(e);
        Event other = e;
        other.kind = EventKind::overflow;
        r.addEvent(other);
        QCOMPARE(r.events().size(), std::size_t{2});
        QCOMPARE(r.markers().size(), std::size_t{1});
        QCOMPARE(r.markers()[0].step, std::int64_t{42});
        QCOMPARE(QString::fromStdString(r.markers()[0].label), label);
    }

    void remainingTimeFollowsThePace() {
        RunSeries r;
        QVERIFY(!r.remainingSeconds(100).has_value());
        for (int i = 0; i < 10; ++i) r.addStep(step(i, 1));  // 0.01 s per step
        const auto left = r.remainingSeconds(100);
        QVERIFY(left.has_value());
        QVERIFY(std::abs(*left - 0.9) < 1e-9);  // 90 steps left
        QCOMPARE_EXACT(*r.remainingSeconds(5), 0.0);
    }

    void resetForgetsTheRun() {
        RunSeries r;
        r.addStep(step(0, 1));
        r.reset({"fc1"});
        QCOMPARE(r.stepCount(), std::int64_t{0});
        QVERIFY(r.loss().empty());
        QVERIFY(!r.lastStep().has_value());
        QCOMPARE(r.layerNames().size(), std::size_t{1});
    }

    void opStatsAreDeclaredFromTheLayers() {
        const auto layer = [](std::string name, std::string kind) {
            LayerInfo l;
            l.name = std::move(name);
            l.kind = std::move(kind);
            return l;
        };
        const std::vector<LayerInfo> gpt = {layer("wte", "embedding"),         layer("blocks.0.ln1", "layernorm"),
                                            layer("blocks.0.attn.qkv", "linear"), layer("blocks.0.attn.proj", "linear"),
                                            layer("blocks.0.ln2", "layernorm"),    layer("ln_f", "layernorm"),
                                            layer("head", "linear")};
        const auto stats = ui::opStatsOf(gpt);
        QCOMPARE(stats.size(), std::size_t{4});
        QCOMPARE(stats[0], std::make_pair(std::string("blocks.0.ln1"), std::string("min_variance")));
        QCOMPARE(stats[1], std::make_pair(std::string("blocks.0.attn"), std::string("logit_amax")));
        QCOMPARE(stats[3], std::make_pair(std::string("ln_f"), std::string("min_variance")));
        QVERIFY(ui::opStatsOf({layer("fc1", "linear"), layer("fc2", "linear")}).empty());  // an MLP: none

        RunSeries r;
        r.reset({"wte"});
        r.declareOpStats(stats);
        const std::uint64_t layout = r.opStatLayout();
        QVERIFY(r.hasOpStat("logit_amax"));
        r.addOpSteps({{0, "blocks.0.attn", "logit_amax", 3.0}, {0, "ln_f", "min_variance", 0.5}});
        r.addOpSteps({{10, "blocks.0.attn", "logit_amax", 4.0}});
        QCOMPARE(r.opStatLayout(), layout);  // declared: no new series
        QCOMPARE(r.opStats()[1].values.size(), std::size_t{2});
        QCOMPARE(r.opStats()[1].values.lastY(), 4.0);
        r.addOpSteps({{10, "blocks.9.attn", "logit_amax", 1.0}});  // not declared: a series of its own
        QVERIFY(r.opStatLayout() != layout);
        QCOMPARE(r.opStats().back().name, std::string("blocks.9.attn"));
        r.reset({});
        QVERIFY(r.opStats().empty());
        QVERIFY(!r.textRun());
    }

    void evaluationEventsCarryTheSamples() {
        RunSeries r;
        r.setTextRun(true);
        Event e;
        e.kind = EventKind::evaluation;
        e.step = 100;
        e.data_json = R"({"loss": 2.0, "perplexity": 7.38905609893065, "accuracy": 0.4, "prompt": "Q: why?\n",)"
                      R"( "sample": "A: because.\nQ: ", "temperature": 0.8})";
        r.addEvent(e);
        Event other;
        other.kind = EventKind::notice;
        other.data_json = R"({"sample": "not a sample"})";
        r.addEvent(other);
        QCOMPARE(r.textSamples().size(), std::size_t{1});
        const ui::TextSample& t = r.textSamples().front();
        QCOMPARE(t.step, std::int64_t{100});
        QCOMPARE(t.loss, 2.0);
        QVERIFY(std::abs(t.perplexity - std::exp(2.0)) < 1e-9);
        QCOMPARE(t.prompt, std::string("Q: why?\n"));
        QCOMPARE(t.continuation, std::string("A: because.\nQ: "));
        QCOMPARE(t.temperature, 0.8);
        // A classifier's evaluation event (no sample) is none.
        Event plain;
        plain.kind = EventKind::evaluation;
        plain.data_json = R"({"loss": 0.3})";
        QVERIFY(!ui::textSampleOf(plain));
    }
};

QTEST_APPLESS_MAIN(TestRunSeries)
#include "test_run_series.moc"
