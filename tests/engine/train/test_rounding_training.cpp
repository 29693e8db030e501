// Stochastic rounding, Kahan-compensated updates and FP16 accumulation through the whole Trainer
// on the CPU backend (docs/numerics.md, "Stochastic rounding and Kahan summation", "FP16
// accumulation"):
// - BF16 weights without masters, trained with plain SGD and small steps: to nearest most updates
//   are lost and the loss stalls; stochastic rounding and Kahan keep them (Kahan loses none) and
//   reach a lower loss; Kahan's buffers are counted as optimizer state in the weights' format;
// - a seeded stochastic run is reproducible bit for bit, and another seed changes it;
// - precision.rounding changes live with a setting event, Kahan's buffers made and dropped;
// - FP16 accumulation trains an fp16 layer and is refused, with a sentence, for a bf16 layer and a
//   convolution; MXFP4 and rowwise FP8 train with stochastic gradients.
#include <QtTest>

#include <cmath>
#include <string>

#include "backend/backend.h"
#include "error.h"
#include "error_of.h"
#include "stripes_dataset.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using test_support::error_of;
using namespace mantissa::test;
using test_support::stripes;

namespace {

Experiment bf16_without_masters(std::int64_t steps, WeightRounding rounding) {
    Experiment e = quick_experiment(steps, {64, 64});
    e.train.optimizer = OptimizerKind::sgd;
    e.train.momentum = 0.9;
    e.train.lr = 0.01;
    e.train.batch_size = 64;
    e.train.layer_stats_every = 1;
    e.precision.autocast = Autocast::bf16;
    e.precision.master_weights = false;
    e.precision.rounding.weights = rounding;
    return e;
}

Dataset regression() { return regression_set(2048, 512, 8, 4, 1.0f, 11); }

// 200 AdamW steps with every layer in `p` under BF16 autocast, gradients rounded stochastically.
Experiment stochastic_gradients_everywhere(LayerPrecision p) {
    Experiment e = quick_experiment(200, {64, 64});
    e.train.optimizer = OptimizerKind::adamw;
    e.train.lr = 0.003;
    e.precision.autocast = Autocast::bf16;
    for (const char* n : {"fc1", "fc2", "fc3"}) e.precision.layers[n] = p;
    e.precision.rounding.gradients = GradientRounding::stochastic;
    return e;
}

struct Trained {
    double test_loss = 0;
    double lost = 0;  // mean over the run of the layers' mean fraction of lost updates
    std::vector<double> losses;
};

Trained train(const Experiment& e, const Dataset& data = regression()) {
    Trainer t(e, data, make_backend("cpu"));
    Trained r;
    double lost = 0;
    int counted = 0;
    for (std::int64_t i = 0; i < e.train.steps; ++i) {
        const StepReport& s = t.step();
        r.losses.push_back(s.step.loss);
        for (const auto& l : s.layers) {
            lost += l.frac_lost_updates;
            ++counted;
        }
    }
    r.lost = counted ? lost / counted : 0;
    r.test_loss = t.evaluate().loss;
    return r;
}


}  // namespace

class TestRoundingTraining : public QObject {
    Q_OBJECT
private slots:
    void bf16WeightsKeepTheirUpdates() {
        const std::int64_t steps = 1000;
        const Trained nearest = train(bf16_without_masters(steps, WeightRounding::nearest));
        const Trained stochastic = train(bf16_without_masters(steps, WeightRounding::stochastic));
        const Trained kahan = train(bf16_without_masters(steps, WeightRounding::kahan));
        Experiment masters = bf16_without_masters(steps, WeightRounding::nearest);
        masters.precision.master_weights = true;
        const Trained fp32_masters = train(masters);
        qInfo("test loss: nearest %g (%.0f%% of updates lost), stochastic %g (%.0f%%), kahan %g (%.0f%%), "
              "FP32 masters %g",
              nearest.test_loss, 100 * nearest.lost, stochastic.test_loss, 100 * stochastic.lost, kahan.test_loss,
              100 * kahan.lost, fp32_masters.test_loss);
        QVERIFY(nearest.lost > 0.5);
        // Kahan loses an update only when it is too small to change even the BF16 compensation.
        QVERIFY(kahan.lost < 0.05);
        QVERIFY(stochastic.lost < nearest.lost);  // still most: each step keeps an update by chance
        QVERIFY(kahan.test_loss < 0.7 * nearest.test_loss);
        QVERIFY(stochastic.test_loss < 0.7 * nearest.test_loss);
        QVERIFY(std::abs(kahan.test_loss - fp32_masters.test_loss) < 0.05 * fp32_masters.test_loss);
    }

    void kahanBuffersAreOptimizerState() {
        Experiment e = bf16_without_masters(2, WeightRounding::nearest);
        Trainer plain(e, regression(), make_backend("cpu"));
        plain.step();
        e.precision.rounding.weights = WeightRounding::kahan;
        Trainer kahan(e, regression(), make_backend("cpu"));
        kahan.step();
        const Tensor* c = kahan.optimizer().compensation(0, 0);
        QVERIFY(c && c->format() == Format::bf16);
        QVERIFY(!plain.optimizer().compensation(0, 0));
        // One bf16 value per stored parameter: the weights' and biases' bytes again.
        QCOMPARE(kahan.backend().memory().optimizer_state - plain.backend().memory().optimizer_state,
                 kahan.backend().memory().parameters);
    }

    void seededRunsAreReproducible() {
        Experiment e = bf16_without_masters(30, WeightRounding::stochastic);
        e.precision.rounding.gradients = GradientRounding::stochastic;
        const Trained a = train(e), b = train(e);
        QVERIFY(a.losses == b.losses);
        // The statistics steps (their gradient tracing, their blocked weight-gradient counts) draw
        // the keys the other steps draw: how often a run records statistics changes nothing.
        Experiment sparse = e;
        sparse.train.layer_stats_every = 7;
        QVERIFY(train(sparse).losses == a.losses);
        // Another rounding seed, the same data order and initial weights: the runs part.
        Trainer t1(e, regression(), make_backend("cpu"));
        Trainer t2(e, regression(), make_backend("cpu"));
        t2.backend().seed_stochastic_rounding(99);
        bool differ = false;
        for (int i = 0; i < 10; ++i) differ |= t1.step().step.loss != t2.step().step.loss;
        QVERIFY(differ);
    }

    void roundingChangesLive() {
        Trainer t(bf16_without_masters(10, WeightRounding::nearest), regression(), make_backend("cpu"));
        t.step();
        const Event ev = t.set_rounding({GradientRounding::nearest, WeightRounding::kahan});
        QCOMPARE(ev.message, std::string("precision.rounding.weights: nearest -> kahan."));
        QCOMPARE(t.settings().precision.rounding.weights, WeightRounding::kahan);
        t.step();
        QVERIFY(t.optimizer().compensation(1, 0));
        const Event both = t.set_rounding({GradientRounding::stochastic, WeightRounding::stochastic});
        QVERIFY2(QString::fromStdString(both.message).startsWith("precision.rounding: "), both.message.c_str());
        t.step();
        QVERIFY(!t.optimizer().compensation(1, 0));
        QVERIFY(t.network().formats(0).stochastic_gradients);
        t.set_rounding({GradientRounding::nearest, WeightRounding::stochastic});
        QVERIFY(!t.network().formats(0).stochastic_gradients);
    }

    void fp16AccumulationTrainsAndIsRefusedElsewhere() {
        Experiment e = quick_experiment(40, {32, 32});
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        LayerSetting fc1 = LayerPrecision::fp16;
        fc1.accumulate = Accumulation::fp16;
        e.precision.layers["fc1"] = fc1;
        const Trained r = train(e);
        QVERIFY(std::isfinite(r.test_loss));
        QVERIFY(r.losses.back() < r.losses.front());

        Experiment bf16 = e;
        bf16.precision.autocast = Autocast::bf16;
        LayerSetting wrong = LayerPrecision::automatic;
        wrong.accumulate = Accumulation::fp16;
        bf16.precision.layers["fc1"] = wrong;
        const QString why = error_of([&] { Trainer(bf16, regression(), make_backend("cpu")); });
        QVERIFY2(why.contains("fc1") && why.contains("FP16 accumulation needs") && why.contains("bf16"), qPrintable(why));

        // Live: a layer that follows autocast and accumulates in FP16; the autocast change that
        // would leave it bf16 is refused whole.
        Experiment following = e;
        following.precision.layers["fc1"] = wrong;  // auto, accumulating in FP16
        Trainer t(following, regression(), make_backend("cpu"));
        t.step();
        const QString live = error_of([&] { t.set_autocast(Autocast::bf16); });
        QVERIFY2(live.contains("FP16 accumulation"), qPrintable(live));
        QCOMPARE(t.settings().precision.autocast, Autocast::fp16);
        t.step();
    }

    void fp16AccumulationIsForLinearLayers() {
        Experiment cnn = quick_experiment(2, {16});
        cnn.model.kind = "cnn";
        cnn.model.channels = {4, 8};
        cnn.train.batch_size = 32;
        cnn.precision.autocast = Autocast::fp16;
        LayerSetting conv = LayerPrecision::fp16;
        conv.accumulate = Accumulation::fp16;
        cnn.precision.layers["conv1"] = conv;
        const QString why = error_of([&] { Trainer(cnn, stripes(128, 32, 1), make_backend("cpu")); });
        QVERIFY2(why.startsWith("conv1: FP16 accumulation is offered for linear layers only"), qPrintable(why));
    }

    void rowwiseFp8TakesStochasticGradients() {
        Experiment e = stochastic_gradients_everywhere(LayerPrecision::fp8_e4m3);
        e.precision.fp8.scaling = Fp8Scaling::rowwise;
        const Trained a = train(e), b = train(e);
        QVERIFY(a.losses == b.losses);  // seeded
        QVERIFY2(a.test_loss < 0.6 * a.losses.front(), qPrintable(QString("%1 from %2").arg(a.test_loss).arg(a.losses.front())));
        e.precision.rounding.gradients = GradientRounding::nearest;
        QVERIFY(train(e).losses != a.losses);  // the rounding is not nearest's
    }

    void mxfp4TrainsWithStochasticGradients() {
        const Experiment e = stochastic_gradients_everywhere(LayerPrecision::mxfp4);
        const Trained r = train(e);
        QVERIFY(std::isfinite(r.test_loss));
        QVERIFY2(r.test_loss < 0.6 * r.losses.front(), qPrintable(QString("%1 from %2").arg(r.test_loss).arg(r.losses.front())));
    }
};

QTEST_APPLESS_MAIN(TestRoundingTraining)
#include "test_rounding_training.moc"
