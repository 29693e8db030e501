// The Trainer: bit-for-bit reproducibility, the modelled memory by category, the layer-statistics
// cadence, live setting changes (taking effect at the next step, as events with the experiment
// file's keys), the learning-rate schedule in the records, evaluation, and refusals.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "backend/backend.h"
#include "error.h"
#include "train/trainer.h"
#include "train_support.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::test;
Q_DECLARE_METATYPE(mantissa::Autocast)
Q_DECLARE_METATYPE(mantissa::LayerPrecision)

namespace {

std::vector<double> losses(const Experiment& e, const Dataset& data, int steps) {
    Trainer t(e, data, make_backend("cpu"));
    std::vector<double> out;
    for (int i = 0; i < steps; ++i) out.push_back(t.step().step.loss);
    return out;
}

}  // namespace

class TestTrainer : public QObject {
    Q_OBJECT
private slots:
    void sameSeedSameLossesBitForBit_data() {
        QTest::addColumn<Autocast>("autocast");
        QTest::addColumn<LayerPrecision>("layers");
        QTest::newRow("fp32") << Autocast::off << LayerPrecision::automatic;
        QTest::newRow("fp16") << Autocast::fp16 << LayerPrecision::automatic;
        QTest::newRow("bf16") << Autocast::bf16 << LayerPrecision::automatic;
        QTest::newRow("fp8") << Autocast::bf16 << LayerPrecision::fp8_e4m3;
    }
    void sameSeedSameLossesBitForBit() {
        QFETCH(Autocast, autocast);
        QFETCH(LayerPrecision, layers);
        Experiment e = quick_experiment(40);
        e.precision.autocast = autocast;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        if (layers != LayerPrecision::automatic)
            for (const char* l : {"fc1", "fc2", "fc3"}) e.precision.layers[l] = layers;
        const Dataset data = blobs_set(2000, 3, 11);
        const auto a = losses(e, data, 40), b = losses(e, data, 40);
        QCOMPARE(a.size(), b.size());
        QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
        e.train.seed = 2;  // another seed: another initialisation and order
        const auto c = losses(e, data, 40);
        QVERIFY(std::memcmp(a.data(), c.data(), a.size() * sizeof(double)) != 0);
    }

    // torch.nn.Linear's bound 1/sqrt(fan_in) for weights and biases, reproducible from the seed.
    void initialisationFollowsTorchLinear() {
        Experiment e = quick_experiment(1, {40});
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"));
        Network& net = t.network();
        for (int l = 0; l < net.layer_count(); ++l) {
            const double bound = 1.0 / std::sqrt(static_cast<double>(net.weight(l).cols()));
            for (const Tensor* p : {&net.weight(l), &net.bias(l)}) {
                const auto v = net.read(*p);
                float lo = 1, hi = -1;
                for (float x : v) {
                    QVERIFY(std::abs(x) <= bound);
                    lo = std::min(lo, x);
                    hi = std::max(hi, x);
                }
                if (v.size() >= 40) QVERIFY(hi - lo > bound);  // spread over the interval
            }
        }
    }

    // 2-20-10-3 with AdamW: every byte by category, from the declared formats.
    void memoryIsModelledFromTheFormats() {
        Experiment e = quick_experiment(3, {20, 10});
        e.train.batch_size = 8;
        const Dataset data = blobs_set(100, 3, 1);
        const std::int64_t params = (2 * 20 + 20) + (20 * 10 + 10) + (10 * 3 + 3);
        {
            Trainer t(e, data, make_backend("cpu"));
            const MemoryBreakdown m = t.step().step.memory;
            QVERIFY(m.modelled);
            QCOMPARE(m.parameters, params * 4);
            QCOMPARE(m.master_weights, std::int64_t{0});
            QCOMPARE(m.gradients, params * 4);
            QCOMPARE(m.optimizer_state, params * 8);
            // input 8x2, z and a of fc1/fc2, z of fc3; fp32 input to fp32 layers needs no saved copy
            QCOMPARE(m.activations, std::int64_t{8 * 2 + 2 * 8 * 20 + 2 * 8 * 10 + 8 * 3} * 4);
        }
        e.precision.autocast = Autocast::fp16;
        {
            Trainer t(e, data, make_backend("cpu"));
            const MemoryBreakdown m = t.step().step.memory;
            QCOMPARE(m.parameters, params * 2);      // the fp16 compute copies
            QCOMPARE(m.master_weights, params * 4);  // the FP32 masters
            QCOMPARE(m.gradients, params * 2);
            QCOMPARE(m.optimizer_state, params * 8);
            // fp32 input + its fp16 copy for fc1, then fp16 activations
            QCOMPARE(m.activations, std::int64_t{8 * 2 * 4 + 8 * 2 * 2 + (2 * 8 * 20 + 2 * 8 * 10 + 8 * 3) * 2});
            const Event ev = t.set_master_weights(false);
            Q_UNUSED(ev);
            const MemoryBreakdown off = t.step().step.memory;
            QCOMPARE(off.parameters, params * 2);
            QCOMPARE(off.master_weights, std::int64_t{0});
        }
        // Block-scaled layers quantise their weights on the fly, so they keep no compute copy:
        // with master weights on, the FP32 weights they keep are the masters (as under autocast),
        // and only the biases' bf16 copies are parameters; off, the bf16 weights are.
        e.precision.autocast = Autocast::bf16;
        e.precision.layers = {{"fc1", LayerSetting{LayerPrecision::mxfp4}},
                              {"fc2", LayerSetting{LayerPrecision::nvfp4}},
                              {"fc3", LayerSetting{LayerPrecision::mxfp8_e4m3}}};
        {
            Trainer t(e, data, make_backend("cpu"));
            const std::int64_t biases = 20 + 10 + 3;
            const MemoryBreakdown m = t.step().step.memory;
            QCOMPARE(m.master_weights, params * 4);
            QCOMPARE(m.parameters, biases * 2);
            const Event ev = t.set_master_weights(false);
            Q_UNUSED(ev);
            const MemoryBreakdown off = t.step().step.memory;
            QCOMPARE(off.master_weights, std::int64_t{0});
            QCOMPARE(off.parameters, params * 2);
        }
    }

    void layerStatisticsEveryK() {
        Experiment e = quick_experiment(7);
        e.train.layer_stats_every = 3;
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"));
        for (int i = 0; i < 7; ++i) {
            const StepReport& r = t.step();
            QCOMPARE(r.layers.size(), std::size_t(i % 3 == 0 ? 3 : 0));
            for (const auto& l : r.layers) {
                QCOMPARE(l.step, std::int64_t{i});
                QCOMPARE(l.grad_elements, t.network().grad_weight(l.layer).numel());
                std::uint64_t counted = 0;
                for (auto c : l.grad_exponents.counts) counted += c;
                QCOMPARE(static_cast<double>(counted) / l.grad_elements + l.frac_zero + l.frac_nonfinite, 1.0);
                QVERIFY(l.grad_amax > 0);
            }
        }
    }

    // A live precision change takes effect at the next step and becomes a setting_change event
    // with the experiment file's dotted key.
    void livePrecisionChange() {
        Experiment e = quick_experiment(10);
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"));
        t.step();
        const Event ev = t.set_layer_precision("fc2", LayerPrecision::bf16);
        QCOMPARE(ev.kind, EventKind::setting_change);
        QCOMPARE(ev.step, std::int64_t{1});
        const auto j = nlohmann::json::parse(ev.data_json);
        QCOMPARE(QString::fromStdString(j["key"]), QString("precision.layers.fc2"));
        QCOMPARE(QString::fromStdString(j["old"]), QString("auto"));
        QCOMPARE(QString::fromStdString(j["new"]), QString("bf16"));
        const StepReport& r = t.step();
        QCOMPARE(r.layers[0].precision, ComputeFormat(Format::fp32));
        QCOMPARE(r.layers[1].precision, ComputeFormat(Format::bf16));
        QCOMPARE(t.network().grad_weight(1).format(), Format::bf16);
        QCOMPARE(t.settings().precision.layers.at("fc2"), LayerPrecision::bf16);

        const Event ac = t.set_autocast(Autocast::fp16);
        QCOMPARE(QString::fromStdString(nlohmann::json::parse(ac.data_json)["key"]), QString("precision.autocast"));
        const StepReport& r2 = t.step();
        QCOMPARE(r2.layers[0].precision, ComputeFormat(Format::fp16));  // auto follows autocast
        QCOMPARE(r2.layers[1].precision, ComputeFormat(Format::bf16));  // the explicit setting wins

        QVERIFY_THROWS_EXCEPTION(Error, t.set_layer_precision("fc7", LayerPrecision::fp16));
        QVERIFY_THROWS_EXCEPTION(Error, t.set_learning_rate(-1));
    }

    void learningRateAndSchedule() {
        Experiment e = quick_experiment(20);
        e.train.schedule = LrSchedule::cosine;
        e.train.warmup_steps = 4;
        e.train.lr = 0.01;
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"));
        std::vector<double> lr;
        for (int i = 0; i < 6; ++i) lr.push_back(t.step().step.learning_rate);
        QCOMPARE_EXACT(lr[0], 0.0);
        QCOMPARE(lr[2], 0.005);
        QCOMPARE(lr[4], 0.01);
        QVERIFY(lr[5] < 0.01);
        const Event ev = t.set_learning_rate(0.02);
        const auto j = nlohmann::json::parse(ev.data_json);
        QCOMPARE(QString::fromStdString(j["key"]), QString("train.lr"));
        QCOMPARE(j["old"].get<double>(), 0.01);
        QCOMPARE(j["new"].get<double>(), 0.02);
        const double next = t.step().step.learning_rate;
        QVERIFY(std::abs(next - 2 * lr[5] * (0.5 * (1 + std::cos(M_PI * 2.0 / 16))) / (0.5 * (1 + std::cos(M_PI * 1.0 / 16)))) < 1e-12);
    }

    void lossScalingChangeIsOneEvent() {
        Experiment e = quick_experiment(5);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"));
        LossScalingSpec s = t.scaler().spec();
        s.mode = LossScalingMode::off;
        auto j = nlohmann::json::parse(t.set_loss_scaling(s).data_json);
        QCOMPARE(QString::fromStdString(j["key"]), QString("precision.loss_scaling.mode"));
        QCOMPARE(QString::fromStdString(j["new"]), QString("off"));
        QCOMPARE(t.step().step.loss_scale, 1.0);
        s.mode = LossScalingMode::fixed;
        s.init_scale = 1024;
        j = nlohmann::json::parse(t.set_loss_scaling(s).data_json);
        QCOMPARE(QString::fromStdString(j["key"]), QString("precision.loss_scaling"));
        QCOMPARE(t.step().step.loss_scale, 1024.0);
    }

    // A loss scale driven below FP32's normal range is said once, as a divergence event at the step
    // that got it there, whether the step's results are read at its end or a step late (as on a
    // GPU); every later step is skipped, and a live change that brings the scale back lets a new
    // collapse be said again.
    void lossScaleCollapseIsSaidOnce_data() {
        QTest::addColumn<int>("lag");
        QTest::newRow("results at the step's end") << 0;
        QTest::newRow("results a step late") << 1;
    }
    void lossScaleCollapseIsSaidOnce() {
        QFETCH(int, lag);
        Experiment e = quick_experiment(30);
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.precision.loss_scaling.init_scale = 1;
        e.precision.loss_scaling.backoff_factor = 1e-10;  // 1, 1e-10, 1e-20, 1e-30, 1e-40 (subnormal), 0
        TrainerOptions options;
        options.sync_lag = lag;
        Trainer t(e, blobs_set(500, 3, 1), make_backend("cpu"), options);
        std::vector<StepRecord> steps;
        std::vector<Event> collapses;
        auto keep = [&](std::span<const StepReport> reports) {
            for (const StepReport& r : reports) {
                steps.push_back(r.step);
                for (const Event& ev : r.events)
                    if (ev.kind == EventKind::divergence &&
                        nlohmann::json::parse(ev.data_json).value("reason", "") == "loss_scale_collapsed")
                        collapses.push_back(ev);
            }
        };
        auto take = [&](bool inject) {
            if (inject) {
                keep(t.flush());
                t.inject_non_finite("fc2", INFINITY);
            }
            keep(t.advance());
        };
        for (int i = 0; i < 6; ++i) take(true);  // six overflows: down to 0
        for (int i = 0; i < 4; ++i) take(false);  // nothing injected: skipped all the same
        keep(t.flush());
        QCOMPARE(steps.size(), std::size_t{10});
        QCOMPARE(collapses.size(), std::size_t{1});
        const Event& c = collapses.front();
        QCOMPARE(c.step, std::int64_t{3});  // the step whose backoff left the normal range
        const auto data = nlohmann::json::parse(c.data_json);
        const double scale = data.at("scale").get<double>();
        QVERIFY2(scale > 0 && scale < std::numeric_limits<float>::min(), c.data_json.c_str());
        QCOMPARE(data.at("step").get<std::int64_t>(), std::int64_t{3});
        QVERIFY2(QString::fromStdString(c.message).startsWith("The loss scale collapsed to "), c.message.c_str());
        QVERIFY2(QString::fromStdString(c.message).contains("below FP32's smallest normal number"), c.message.c_str());
        QCOMPARE_EXACT(steps[5].loss_scale, 0.0);  // 1e-40 backed off to 0
        for (std::size_t i = 6; i < steps.size(); ++i) {
            QVERIFY2(steps[i].skipped && steps[i].overflow, qPrintable(QString("step %1 was not skipped").arg(i)));
            QCOMPARE_EXACT(steps[i].loss_scale, 0.0);
        }

        // Brought back by a live change (a new mode restarts at init_scale), then collapsed anew.
        LossScalingSpec spec = t.scaler().spec();
        spec.mode = LossScalingMode::fixed;
        keep(t.flush());
        t.set_loss_scaling(spec);
        take(false);
        spec.mode = LossScalingMode::dynamic;
        keep(t.flush());
        t.set_loss_scaling(spec);
        for (int i = 0; i < 5; ++i) take(true);
        keep(t.flush());
        QCOMPARE(collapses.size(), std::size_t{2});
        QCOMPARE(collapses[1].step, std::int64_t{14});  // steps 11-14 at 1, 1e-10, 1e-20, 1e-30: the 4th
    }

    void evaluationAndBudget() {
        Experiment e = quick_experiment(0);
        e.train.steps = 0;
        e.train.epochs = 2;
        e.train.lr = 1e-2;
        const Dataset data = blobs_set(1000, 3, 1);
        Trainer t(e, data, make_backend("cpu"));
        QCOMPARE(t.steps_per_epoch(), (data.train.rows + 63) / 64);
        QCOMPARE(t.total_steps(), 2 * t.steps_per_epoch());
        std::int64_t last_epoch = -1;
        while (!t.done()) last_epoch = t.step().step.epoch;
        QCOMPARE(last_epoch, std::int64_t{1});
        QVERIFY_THROWS_EXCEPTION(Error, t.step());
        const EvalRecord ev = t.evaluate();
        QCOMPARE(QString::fromStdString(ev.split), QString("test"));
        QVERIFY(ev.accuracy > 0.9);
        QVERIFY(ev.loss > 0 && ev.loss < 0.5);

        Experiment r = quick_experiment(20);
        Trainer reg(r, regression_set(256, 64, 4, 2, 1.0f, 3), make_backend("cpu"));
        for (int i = 0; i < 20; ++i) reg.step();
        const EvalRecord rev = reg.evaluate();
        QVERIFY(std::isnan(rev.accuracy));
        QVERIFY(rev.loss > 0 && std::isfinite(rev.loss));
    }

    void badExperimentsAreRefused() {
        const Dataset data = blobs_set(200, 3, 1);
        Experiment e = quick_experiment(5);
        e.precision.layers["fc9"] = LayerPrecision::fp16;
        try {
            Trainer t(e, data, make_backend("cpu"));
            QFAIL("an unknown layer must be refused");
        } catch (const Error& err) {
            QVERIFY(QString(err.what()).contains("precision.layers.fc9"));
        }
        e = quick_experiment(5);
        e.model.kind = "cnn";
        QVERIFY_THROWS_EXCEPTION(Error, Trainer(e, data, make_backend("cpu")));
        e = quick_experiment(5);
        e.precision.loss_scaling.backoff_factor = 2;
        QVERIFY_THROWS_EXCEPTION(Error, Trainer(e, data, make_backend("cpu")));
    }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "test_trainer.moc"
