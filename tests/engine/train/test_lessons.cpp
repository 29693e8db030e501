// The classic mixed-precision failures, reproduced on the CPU backend and visible in the
// telemetry (what docs/numerics.md says each statistic shows):
//   - FP16 without loss scaling loses small gradients (underflow well above zero, worse loss);
//     dynamic loss scaling repairs it, and BF16 trains without any scaling;
//   - master weights off + FP16 weights + a small learning rate: most updates are lost and
//     training stalls; FP32 master weights repair it; FP32 weights (master or not) lose none,
//     even where AdamW's updates fall below FP32's own resolution (those are not counted);
//   - an injected inf skips exactly that step, leaves weights and optimizer state bit-identical,
//     and moves the scale as GradScaler does; an overflow names the first layer in backward order;
//   - FP8 layers train, with the delayed-scaling amax history behaving as specified.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "train/trainer.h"
#include "train_support.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::test;

namespace {

struct RunResult {
    double final_loss = 0;      // mean training loss of the last 20 steps
    double final_underflow = 0; // mean frac_underflow over layers and the last 20 steps
    double first_loss = 0;
};

// A classifier trained to near-zero loss on well-separated blobs with a large batch: late in
// training (p - y)/B falls below fp16's smallest subnormal (2^-24), which is how small gradients
// arise in practice.
RunResult small_gradient_run(Autocast autocast, LossScalingMode scaling) {
    static std::map<std::pair<int, int>, RunResult> cache;
    const auto key = std::pair{static_cast<int>(autocast), static_cast<int>(scaling)};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    DatasetSpec spec;
    spec.kind = "blobs";
    spec.samples = 10000;
    spec.classes = 4;
    spec.noise = 0.05;
    const int steps = 300;
    Experiment e = quick_experiment(steps, {64, 64});
    e.train.batch_size = 4096;
    e.train.lr = 1e-2;
    e.precision.autocast = autocast;
    e.precision.loss_scaling.mode = scaling;
    Trainer t(e, load_dataset(spec, 3), make_backend("cpu"));
    RunResult r;
    int n = 0;
    for (int i = 0; i < steps; ++i) {
        const StepReport& rep = t.step();
        if (i == 0) r.first_loss = rep.step.loss;
        if (i >= steps - 20) {
            r.final_loss += rep.step.loss / 20;
            for (const auto& l : rep.layers) {
                r.final_underflow += l.frac_underflow;
                ++n;
            }
        }
    }
    r.final_underflow /= std::max(1, n);
    cache[key] = r;
    return r;
}

std::vector<std::vector<float>> snapshot(Trainer& t) {
    std::vector<std::vector<float>> s;
    Network& net = t.network();
    for (int l = 0; l < net.layer_count(); ++l) {
        s.push_back(net.read(net.weight(l)));
        s.push_back(net.read(net.bias(l)));
        for (int p = 0; p < 2; ++p)
            for (int w = 0; w < 2; ++w)
                if (const Tensor* st = t.optimizer().state(l, p, w)) {
                    std::vector<float> v(static_cast<std::size_t>(st->numel()));
                    t.backend().download(*st, v.data(), st->numel());
                    s.push_back(std::move(v));
                }
    }
    return s;
}

bool bit_identical(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
            return false;
    return true;
}

}  // namespace

class TestLessons : public QObject {
    Q_OBJECT
private slots:
    void fp16WithoutScalingLosesSmallGradients() {
        const RunResult fp32 = small_gradient_run(Autocast::off, LossScalingMode::off);
        const RunResult fp16 = small_gradient_run(Autocast::fp16, LossScalingMode::off);
        qInfo("final loss fp32 %.3g, fp16 without scaling %.3g; underflow %.3f vs %.3f", fp32.final_loss,
              fp16.final_loss, fp32.final_underflow, fp16.final_underflow);
        QCOMPARE_EXACT(fp32.final_underflow, 0.0);
        QVERIFY2(fp16.final_underflow > 0.3, "most weight-gradient elements underflow late in training");
        QVERIFY2(fp16.final_loss > 1.5 * fp32.final_loss, "the lost gradients leave the loss worse");
        QVERIFY(fp16.final_loss < 0.1 * fp16.first_loss);  // it trained, then stalled
    }

    void dynamicScalingRepairsIt() {
        const RunResult fp32 = small_gradient_run(Autocast::off, LossScalingMode::off);
        const RunResult scaled = small_gradient_run(Autocast::fp16, LossScalingMode::dynamic);
        qInfo("final loss fp32 %.3g, fp16 dynamic %.3g; underflow %.3f", fp32.final_loss, scaled.final_loss,
              scaled.final_underflow);
        QVERIFY(scaled.final_underflow < 0.05);
        QVERIFY(std::abs(scaled.final_loss - fp32.final_loss) < 0.15 * fp32.final_loss);
    }

    void bf16TrainsWithoutScaling() {
        const RunResult fp32 = small_gradient_run(Autocast::off, LossScalingMode::off);
        const RunResult bf16 = small_gradient_run(Autocast::bf16, LossScalingMode::off);
        const RunResult fp16 = small_gradient_run(Autocast::fp16, LossScalingMode::off);
        qInfo("final loss fp32 %.3g, bf16 without scaling %.3g (underflow %.3f)", fp32.final_loss,
              bf16.final_loss, bf16.final_underflow);
        QVERIFY(bf16.final_underflow < 0.02);
        QVERIFY(std::abs(bf16.final_loss - fp32.final_loss) < 0.15 * fp32.final_loss);
        QVERIFY(bf16.final_loss * 1.3 < fp16.final_loss);
    }

    // AdamW moves each weight by about lr = 1e-5 per step; an fp16 weight above 2^-5 has an ulp
    // of 2^-15 or more, so the update is under half an ulp and rounds away.
    void masterWeightsOffLosesUpdates() {
        const Dataset data = blobs_set(2000, 4, 3);
        double decrease[2], lost[2], accuracy[2];
        for (int master = 0; master < 2; ++master) {
            Experiment e = quick_experiment(300, {64, 64});
            e.train.lr = 1e-5;
            e.precision.autocast = Autocast::fp16;
            e.precision.master_weights = master == 1;
            e.precision.loss_scaling.mode = LossScalingMode::dynamic;
            Trainer t(e, data, make_backend("cpu"));
            double first = 0, last = 0, frac = 0;
            int n = 0;
            for (int i = 0; i < 300; ++i) {
                const StepReport& r = t.step();
                if (i < 10) first += r.step.loss / 10;
                if (i >= 290) {
                    last += r.step.loss / 10;
                    for (const auto& l : r.layers) {
                        frac += l.frac_lost_updates;
                        ++n;
                    }
                }
            }
            decrease[master] = first - last;
            lost[master] = frac / n;
            accuracy[master] = t.evaluate().accuracy;
            // Master off: the stored weights are fp16 values.
            if (master == 0) {
                for (float w : t.network().read(t.network().weight(0))) QCOMPARE(round_to(Format::fp16, w), w);
                QCOMPARE(t.network().weight(0).format(), Format::fp16);
            }
        }
        qInfo("lost updates %.3f (master off) vs %.4f (on); loss decrease %.4f vs %.4f; accuracy %.3f vs %.3f",
              lost[0], lost[1], decrease[0], decrease[1], accuracy[0], accuracy[1]);
        QVERIFY2(lost[0] > 0.6, "most updates are lost without master weights");
        QVERIFY2(lost[1] == 0.0, "an FP32 master stores every update that changes it in FP32");
        QVERIFY2(decrease[0] < 0.5 * decrease[1], "training stalls without master weights");
        QVERIFY(accuracy[1] > accuracy[0] + 0.15);
    }

    // Lost updates are lost to the stored precision: with FP32 weights (autocast off, or FP32
    // masters) none is, at every step and layer. This run (relu, AdamW, lr 1e-3) trains to near
    // zero loss, so many units' gradients are exactly zero and AdamW's decaying momentum keeps
    // producing updates too small to move an FP32 weight; they count neither as lost nor in the
    // denominator (the old definition, "a non-zero update left the weight unchanged", put fc2's
    // and fc3's fraction near 10% here). Without masters, FP16 weights still lose some.
    void fp32WeightsLoseNoUpdates_data() {
        QTest::addColumn<int>("autocast");
        QTest::addColumn<bool>("master");
        QTest::newRow("fp32") << static_cast<int>(Autocast::off) << false;
        QTest::newRow("fp16 with fp32 masters") << static_cast<int>(Autocast::fp16) << true;
        QTest::newRow("fp16 weights") << static_cast<int>(Autocast::fp16) << false;
    }
    void fp32WeightsLoseNoUpdates() {
        QFETCH(int, autocast);
        QFETCH(bool, master);
        Experiment e = quick_experiment(300, {64, 64});
        e.train.lr = 1e-3;
        e.precision.autocast = static_cast<Autocast>(autocast);
        e.precision.master_weights = master;
        e.precision.loss_scaling.mode = autocast == static_cast<int>(Autocast::off) ? LossScalingMode::off
                                                                                     : LossScalingMode::dynamic;
        Trainer t(e, blobs_set(2000, 4, 3), make_backend("cpu"));
        double lost = 0, worst = 0, last_loss = 0;
        for (int i = 0; i < 300; ++i) {
            const StepReport& r = t.step();
            last_loss = r.step.loss;
            for (const auto& l : r.layers) {
                QVERIFY(l.frac_lost_updates >= 0 && l.frac_lost_updates <= 1);
                lost += l.frac_lost_updates;
                worst = std::max(worst, l.frac_lost_updates);
            }
        }
        qInfo("lost updates: mean %.4f, worst %.4f; final loss %.3g", lost / (300.0 * 3), worst, last_loss);
        QVERIFY(last_loss < 0.1);  // trained far enough for dead units and AdamW's residues
        const bool fp32_weights = autocast == static_cast<int>(Autocast::off) || master;
        if (fp32_weights)
            QVERIFY2(worst == 0.0, "FP32 weights lose no update to their precision");
        else
            QVERIFY(lost > 0);
    }

    // GradScaler(growth_interval=3): steps 0, 1 clean; step 2 has an injected inf in fc2's weight
    // gradient: skipped, scale halved, counter reset; steps 3, 4, 5 clean: the scale doubles at 5.
    void injectedInfSkipsExactlyThatStep() {
        Experiment e = quick_experiment(8);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.precision.loss_scaling.growth_interval = 3;
        Trainer t(e, blobs_set(1000, 3, 5), make_backend("cpu"));
        std::vector<double> scales;
        std::vector<Event> events;
        for (int i = 0; i < 2; ++i) scales.push_back(t.step().step.loss_scale);
        const auto before = snapshot(t);
        const std::int64_t adam_steps = t.optimizer().steps_taken();
        const Event notice = t.inject_non_finite("fc2", std::numeric_limits<float>::infinity());
        QCOMPARE(notice.step, std::int64_t{2});
        const StepReport& r = t.step();
        QVERIFY(r.step.overflow);
        QVERIFY(r.step.skipped);
        QVERIFY(!std::isfinite(r.step.grad_norm));
        scales.push_back(r.step.loss_scale);
        events = r.events;
        QVERIFY(bit_identical(before, snapshot(t)));
        QCOMPARE(t.optimizer().steps_taken(), adam_steps);
        QCOMPARE(t.scaler().growth_tracker(), std::int64_t{0});
        // The overflow event names fc2 (the only non-finite gradient); the scale backs off.
        bool overflow = false, backoff = false;
        for (const auto& ev : events) {
            const auto j = nlohmann::json::parse(ev.data_json);
            if (ev.kind == EventKind::overflow) {
                overflow = true;
                QCOMPARE(QString::fromStdString(j["layer"]), QString("fc2"));
                QCOMPARE(QString::fromStdString(j["tensor"]), QString("dW"));
            }
            if (ev.kind == EventKind::scale_change) {
                backoff = true;
                QCOMPARE(j["old"].get<double>(), 65536.0);
                QCOMPARE(j["new"].get<double>(), 32768.0);
            }
        }
        QVERIFY(overflow && backoff);
        // The layer record shows the non-finite element.
        QVERIFY(r.layers.at(1).frac_nonfinite > 0);
        QCOMPARE_EXACT(r.layers.at(0).frac_nonfinite, 0.0);
        bool grew = false;
        for (int i = 3; i < 7; ++i) {
            const StepReport& s = t.step();
            QVERIFY(!s.step.overflow && !s.step.skipped);
            scales.push_back(s.step.loss_scale);
            for (const auto& ev : s.events)
                if (ev.kind == EventKind::scale_change) {
                    QCOMPARE(i, 5);
                    grew = true;
                }
        }
        QVERIFY(grew);
        QCOMPARE(scales, (std::vector<double>{65536, 65536, 65536, 32768, 32768, 32768, 65536}));
        QVERIFY(!bit_identical(before, snapshot(t)));  // clean steps do move the weights
    }

    // A scale so large that fp16 overflows at the output gradient: the first non-finite gradient
    // in backward order is the last layer's.
    void overflowNamesTheFirstLayerInBackwardOrder() {
        Experiment e = quick_experiment(1);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::fixed;
        e.precision.loss_scaling.init_scale = std::ldexp(1.0, 100);
        Trainer t(e, blobs_set(1000, 3, 5), make_backend("cpu"));
        const auto before = snapshot(t);
        const StepReport& r = t.step();
        QVERIFY(r.step.overflow && r.step.skipped);
        QVERIFY(bit_identical(before, snapshot(t)));
        QCOMPARE(r.step.loss_scale, std::ldexp(1.0, 100));  // static: unchanged
        int overflow_events = 0;
        for (const auto& ev : r.events) {
            QVERIFY(ev.kind != EventKind::scale_change);
            if (ev.kind == EventKind::overflow) {
                ++overflow_events;
                QCOMPARE(QString::fromStdString(nlohmann::json::parse(ev.data_json)["layer"]), QString("fc3"));
            }
        }
        QCOMPARE(overflow_events, 1);
    }

    // Without loss scaling nothing is skipped: an injected inf reaches the weights (the run
    // diverges, and says so).
    void withoutScalingTheOverflowReachesTheWeights() {
        Experiment e = quick_experiment(3);
        Trainer t(e, blobs_set(1000, 3, 5), make_backend("cpu"));
        t.step();
        t.inject_non_finite("fc1", std::nanf(""));
        const StepReport& r = t.step();
        QVERIFY(r.step.overflow);
        QVERIFY(!r.step.skipped);
        const auto w = t.network().read(t.network().weight(0));
        QVERIFY(std::any_of(w.begin(), w.end(), [](float v) { return std::isnan(v); }));
        const StepReport& next = t.step();
        QVERIFY(std::isnan(next.step.loss));
        QVERIFY(std::any_of(next.events.begin(), next.events.end(),
                            [](const Event& ev) { return ev.kind == EventKind::divergence; }));
    }

    // All layers in fp8-e4m3 (E5M2 gradients): the loss decreases, and fc1's input scale follows
    // the delayed-scaling rule from the batches' amaxes: scale_k = 448 / max(amax of the last
    // `len` batches) / 2^margin.
    void fp8LayersTrainWithDelayedScaling() {
        Experiment e = quick_experiment(60);
        e.precision.autocast = Autocast::bf16;
        for (const char* l : {"fc1", "fc2", "fc3"}) e.precision.layers[l] = LayerPrecision::fp8_e4m3;
        e.precision.fp8.amax_history_len = 3;
        e.precision.fp8.margin = 1;
        e.train.lr = 3e-3;
        const Dataset data = blobs_set(2000, 3, 5);
        Trainer t(e, data, make_backend("cpu"));
        const Fp8State* st = t.network().fp8_state(0);
        QVERIFY(st);
        QCOMPARE(st->snapshot(Fp8Role::input).scale, 1.0f);
        const auto order = epoch_order(data.train.rows, e.train.seed, 0);
        std::vector<float> batch_amax;
        double first = 0, last = 0;
        for (int i = 0; i < 60; ++i) {
            const StepReport& r = t.step();
            QCOMPARE(r.layers.at(0).precision, ComputeFormat(Format::fp8_e4m3));
            if (i < 5) first += r.step.loss / 5;
            if (i >= 55) last += r.step.loss / 5;
            if (i < 6) {  // the batches of the first epoch, in order
                float amax = 0;
                for (int row = 0; row < e.train.batch_size; ++row)
                    for (int f = 0; f < data.features; ++f)
                        amax = std::max(amax, std::abs(data.train.x[static_cast<std::size_t>(
                                                  order[static_cast<std::size_t>(i * e.train.batch_size + row)] * data.features + f)]));
                batch_amax.push_back(amax);
                const float window = *std::max_element(batch_amax.end() - std::min<std::ptrdiff_t>(3, static_cast<std::ptrdiff_t>(batch_amax.size())),
                                                       batch_amax.end());
                const Fp8TensorSnapshot s = st->snapshot(Fp8Role::input);
                QCOMPARE(s.scale, (448.0f / window) / 2.0f);
                QCOMPARE(s.amax_history.front(), amax);
                QVERIFY(s.amax_history.size() <= 3);
            }
        }
        qInfo("fp8 loss %.4f -> %.4f", first, last);
        QVERIFY(last < 0.8 * first);
        const auto g = st->snapshot(Fp8Role::grad_output);
        QVERIFY(g.scale != 1.0f && std::isfinite(g.scale));
        QVERIFY(t.evaluate().accuracy > 0.8);
    }

    // FP8 without scaling: every scale stays 1 while the amax history is still kept; switched on
    // during the run (a setting_change event), per-tensor scaling takes its scales from that
    // history at the end of the next step. (What it costs the training is the lesson preset's test.)
    void fp8ScalingSwitchesDuringTheRun() {
        Experiment e = quick_experiment(40);
        for (const char* l : {"fc1", "fc2", "fc3"}) e.precision.layers[l] = LayerPrecision::fp8_e4m3;
        e.precision.fp8.scaling = Fp8Scaling::none;
        Trainer t(e, blobs_set(2000, 3, 5), make_backend("cpu"));
        for (int i = 0; i < 5; ++i) {
            t.step();
            for (Fp8Role role : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
                const Fp8TensorSnapshot s = t.network().fp8_state(0)->snapshot(role);
                QCOMPARE(s.scale, 1.0f);
                QCOMPARE(s.amax_history.size(), static_cast<std::size_t>(i + 1));
            }
        }
        const Event ev = t.set_fp8_scaling(Fp8Scaling::delayed);
        QCOMPARE(ev.kind, EventKind::setting_change);
        QCOMPARE(ev.message, std::string("precision.fp8.scaling: none -> delayed."));
        t.step();
        const Fp8TensorSnapshot g = t.network().fp8_state(0)->snapshot(Fp8Role::grad_output);
        QCOMPARE(g.scale, 57344.0f / *std::max_element(g.amax_history.begin(), g.amax_history.end()));
        QVERIFY(g.scale > 1.0f);  // the small output gradients are scaled up

        t.set_fp8_scaling(Fp8Scaling::none);
        QCOMPARE(t.network().fp8_state(0)->snapshot(Fp8Role::grad_output).scale, 1.0f);  // from the next step
    }
};

QTEST_GUILESS_MAIN(TestLessons)
#include "test_lessons.moc"
