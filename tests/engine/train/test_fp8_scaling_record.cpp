// The FP8 scaling columns of the layer records (LayerStepRecord::fp8) on the CPU backend: each
// recorded scale is the delayed-scaling recipe applied to the recorded amaxes (history length,
// margin, max or most recent; fp8_max 448 for x and W, 57344 for dy), the amaxes are this step's
// (fc1's x is the batch, W the weights the step read) and the backend's own history, scaling none
// records scale 1 while the amaxes go on, live changes show where docs/schema.md says, non-FP8
// layers carry none, and a pipeline that reports steps late records none rather than another
// step's.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;
Q_DECLARE_METATYPE(mantissa::AmaxAlgo)

namespace {

constexpr int steps = 12;
constexpr Fp8Role roles[] = {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output};

const Fp8TensorScaling& of(const Fp8LayerScaling& f, Fp8Role role) {
    return role == Fp8Role::input ? f.input : role == Fp8Role::weight ? f.weight : f.grad_output;
}

float fp8_max(Fp8Role role) { return role == Fp8Role::grad_output ? 57344.0f : 448.0f; }

// fc1, fc2 in FP8 beside an fc3 in BF16 (autocast), Transformer Engine's recipe as given.
Experiment fp8_experiment(int history_len, int margin, AmaxAlgo algo) {
    Experiment e = quick_experiment(steps);
    e.precision.autocast = Autocast::bf16;
    e.precision.layers["fc1"] = LayerPrecision::fp8_e4m3;
    e.precision.layers["fc2"] = LayerPrecision::fp8_e4m3;
    e.precision.fp8.amax_history_len = history_len;
    e.precision.fp8.margin = margin;
    e.precision.fp8.amax_compute_algo = algo;
    return e;
}

// The scales the recipe gives after each step, from that step's and the earlier steps' amaxes,
// in FP32 as AmaxHistory computes them; `delayed[k]` false: scaling none at step k (scale 1), and
// the first step after switching back to delayed takes the history's scale again.
std::vector<float> recipe_scales(const std::vector<double>& amaxes, Fp8Role role, int history_len, int margin,
                                 AmaxAlgo algo, const std::vector<bool>& delayed) {
    std::vector<float> out;
    float scale = 1.0f;
    for (std::size_t k = 0; k < amaxes.size(); ++k) {
        float amax = static_cast<float>(amaxes[k]);
        if (algo == AmaxAlgo::max) {
            const std::size_t first = k + 1 >= static_cast<std::size_t>(history_len) ? k + 1 - history_len : 0;
            for (std::size_t j = first; j <= k; ++j) amax = std::max(amax, static_cast<float>(amaxes[j]));
        }
        if (!delayed[k]) scale = 1.0f;
        else if (amax > 0.0f && std::isfinite(amax)) scale = (fp8_max(role) / amax) / std::ldexp(1.0f, margin);
        out.push_back(scale);
    }
    return out;
}

float max_abs(const std::vector<float>& v, std::size_t n) {
    float m = 0;
    for (std::size_t i = 0; i < n && i < v.size(); ++i) m = std::max(m, std::abs(v[i]));
    return m;
}

// Every step's layer records, by layer.
struct Recorded {
    std::vector<std::vector<LayerStepRecord>> by_layer;
    void add(const std::vector<LayerStepRecord>& layers) {
        for (const auto& r : layers) {
            if (by_layer.size() <= static_cast<std::size_t>(r.layer)) by_layer.resize(static_cast<std::size_t>(r.layer) + 1);
            by_layer[static_cast<std::size_t>(r.layer)].push_back(r);
        }
    }
    std::vector<double> amaxes(int layer, Fp8Role role) const {
        std::vector<double> out;
        for (const auto& r : by_layer[static_cast<std::size_t>(layer)]) out.push_back(of(*r.fp8, role).amax);
        return out;
    }
};

}  // namespace

class TestFp8ScalingRecord : public QObject {
    Q_OBJECT
private slots:
    void scalesFollowTheRecipe_data() {
        QTest::addColumn<int>("historyLen");
        QTest::addColumn<int>("margin");
        QTest::addColumn<AmaxAlgo>("algo");
        QTest::newRow("history 16, margin 0, max") << 16 << 0 << AmaxAlgo::max;
        QTest::newRow("history 4, margin 1, max") << 4 << 1 << AmaxAlgo::max;
        QTest::newRow("history 3, margin 2, most recent") << 3 << 2 << AmaxAlgo::most_recent;
    }

    void scalesFollowTheRecipe() {
        QFETCH(int, historyLen);
        QFETCH(int, margin);
        QFETCH(AmaxAlgo, algo);
        Trainer t(fp8_experiment(historyLen, margin, algo), blobs_set(2000, 3, 7), make_backend("cpu"));
        Network& net = t.network();
        Recorded rec;
        for (int k = 0; k < steps; ++k) {
            // What fc1's casts will read this step: W (the FP32 master) now, x once it is uploaded.
            const float w_amax = max_abs(net.read(net.weight(0)), static_cast<std::size_t>(net.weight(0).numel()));
            const StepReport& r = t.step();
            QCOMPARE(r.layers.size(), std::size_t(3));
            const float x_amax = max_abs(net.read(net.input()), static_cast<std::size_t>(r.samples * net.input().cols()));
            const LayerStepRecord& fc1 = r.layers[0];
            QVERIFY(fc1.fp8.has_value());
            QCOMPARE(fc1.fp8->input.amax, static_cast<double>(x_amax));
            QCOMPARE(fc1.fp8->weight.amax, static_cast<double>(w_amax));
            rec.add(r.layers);
        }
        for (const auto& r : rec.by_layer[2]) QVERIFY2(!r.fp8, "fc3 computes in bf16: no FP8 scaling");
        const std::vector<bool> delayed(steps, true);
        for (int layer : {0, 1}) {
            for (Fp8Role role : roles) {
                const std::vector<double> amaxes = rec.amaxes(layer, role);
                for (double a : amaxes) QVERIFY(a > 0 && std::isfinite(a));
                const std::vector<float> want = recipe_scales(amaxes, role, historyLen, margin, algo, delayed);
                for (int k = 0; k < steps; ++k) {
                    const double got = of(*rec.by_layer[static_cast<std::size_t>(layer)][static_cast<std::size_t>(k)].fp8,
                                          role).scale;
                    if (got != static_cast<double>(want[static_cast<std::size_t>(k)]))
                        QFAIL(qPrintable(QString("fc%1 %2 step %3: scale %4, the recipe gives %5")
                                             .arg(layer + 1)
                                             .arg(fp8_role_name(role))
                                             .arg(k)
                                             .arg(got, 0, 'g', 9)
                                             .arg(want[static_cast<std::size_t>(k)], 0, 'g', 9)));
                }
                // The backend's own history holds the recorded amaxes, newest first.
                const Fp8TensorSnapshot snap = net.fp8_state(layer)->snapshot(role);
                QCOMPARE(snap.amax_history.size(), std::size_t(std::min(historyLen, steps)));
                for (std::size_t i = 0; i < snap.amax_history.size(); ++i)
                    QCOMPARE(static_cast<double>(snap.amax_history[i]), amaxes[amaxes.size() - 1 - i]);
                QCOMPARE(static_cast<double>(snap.scale), of(*rec.by_layer[static_cast<std::size_t>(layer)].back().fp8, role).scale);
            }
        }
    }

    // Scaling none from the start: every scale 1, the amaxes recorded all the same.
    void scalingNoneRecordsOneAndTheAmaxes() {
        Experiment e = fp8_experiment(16, 0, AmaxAlgo::max);
        e.precision.fp8.scaling = Fp8Scaling::none;
        Trainer t(e, blobs_set(2000, 3, 7), make_backend("cpu"));
        for (int k = 0; k < 5; ++k) {
            const StepReport& r = t.step();
            for (int layer : {0, 1}) {
                const auto& f = r.layers[static_cast<std::size_t>(layer)].fp8;
                QVERIFY(f.has_value());
                for (Fp8Role role : roles) {
                    QCOMPARE(of(*f, role).scale, 1.0);
                    QVERIFY(of(*f, role).amax > 0);
                    QCOMPARE(static_cast<double>(t.network().fp8_state(layer)->snapshot(role).amax_history.front()),
                             of(*f, role).amax);
                }
            }
        }
    }

    // Live: none from step 4 (scale 1 at once), delayed again from step 8 (the row of step 8
    // already shows the scale from the history kept meanwhile); fc2 leaves FP8 at step 6.
    void liveChangesShowWhereTheDocsSay() {
        Trainer t(fp8_experiment(16, 0, AmaxAlgo::max), blobs_set(2000, 3, 7), make_backend("cpu"));
        Recorded rec;
        std::vector<bool> delayed;
        for (int k = 0; k < steps; ++k) {
            if (k == 4) t.set_fp8_scaling(Fp8Scaling::none);
            if (k == 8) t.set_fp8_scaling(Fp8Scaling::delayed);
            if (k == 6) t.set_layer_precision("fc2", LayerPrecision::bf16);
            const StepReport& r = t.step();
            rec.add(r.layers);
            delayed.push_back(k < 4 || k >= 8);
        }
        for (Fp8Role role : roles) {
            const std::vector<double> amaxes = rec.amaxes(0, role);
            const std::vector<float> want = recipe_scales(amaxes, role, 16, 0, AmaxAlgo::max, delayed);
            for (int k = 0; k < steps; ++k)
                QCOMPARE(of(*rec.by_layer[0][static_cast<std::size_t>(k)].fp8, role).scale,
                         static_cast<double>(want[static_cast<std::size_t>(k)]));
            QCOMPARE(of(*rec.by_layer[0][5].fp8, role).scale, 1.0);
            QVERIFY(of(*rec.by_layer[0][8].fp8, role).scale != 1.0);
        }
        for (int k = 0; k < steps; ++k) {
            const LayerStepRecord& fc2 = rec.by_layer[1][static_cast<std::size_t>(k)];
            QCOMPARE(fc2.fp8.has_value(), k < 6);
            QCOMPARE(fc2.precision, k < 6 ? Format::fp8_e4m3 : Format::bf16);
        }
    }

    void layersWithoutFp8CarryNone() {
        Experiment e = quick_experiment(4);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        Trainer t(e, blobs_set(500, 3, 3), make_backend("cpu"));
        for (int k = 0; k < 4; ++k) {
            const StepReport& r = t.step();
            QCOMPARE(r.layers.size(), std::size_t(3));
            for (const auto& l : r.layers) QVERIFY(!l.fp8.has_value());
        }
    }

    // Only the statistics steps carry layer records; each FP8 one carries its scaling.
    void statisticsEveryKSteps() {
        Experiment e = fp8_experiment(16, 0, AmaxAlgo::max);
        e.train.layer_stats_every = 3;
        Trainer t(e, blobs_set(2000, 3, 7), make_backend("cpu"));
        for (int k = 0; k < 7; ++k) {
            const StepReport& r = t.step();
            QCOMPARE(r.layers.empty(), k % 3 != 0);
            if (!r.layers.empty()) {
                QVERIFY(r.layers[0].fp8.has_value());
                QCOMPARE(static_cast<double>(t.network().fp8_state(0)->snapshot(Fp8Role::grad_output).scale),
                         r.layers[0].fp8->grad_output.scale);
            }
        }
    }

    // Results held back a step (as a GPU's are): the state at a report is a later step's, so
    // nothing is recorded; the other statistics are as before.
    void lateReportsRecordNone() {
        TrainerOptions options;
        options.sync_lag = 1;
        Trainer t(fp8_experiment(16, 0, AmaxAlgo::max), blobs_set(2000, 3, 7), make_backend("cpu"), options);
        int reported = 0;
        auto check = [&](std::span<const StepReport> reports) {
            for (const StepReport& r : reports) {
                ++reported;
                QCOMPARE(r.layers.size(), std::size_t(3));
                QCOMPARE(r.layers[0].precision, ComputeFormat(Format::fp8_e4m3));
                QVERIFY(r.layers[0].grad_amax > 0);
                for (const auto& l : r.layers) QVERIFY(!l.fp8.has_value());
            }
        };
        for (int k = 0; k < 5; ++k) check(t.advance());
        check(t.flush());
        QCOMPARE(reported, 5);
    }
};

QTEST_GUILESS_MAIN(TestFp8ScalingRecord)
#include "test_fp8_scaling_record.moc"
