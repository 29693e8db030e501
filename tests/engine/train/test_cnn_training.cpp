// Convolutional networks through the whole Trainer on the CPU backend: a small CNN and a ResNet
// learn a synthetic image task (stripes: horizontal against vertical) in FP32, FP16 autocast with
// dynamic scaling and master weights, and BF16 autocast; per-layer records name the state dict's
// layers with the format each ran in (convolutions in the autocast type, batchnorm in FP32);
// precision settings and live changes apply to convolutions and are refused for batchnorm; an
// injected overflow is named by its layer; a ReLU and the max pool after it run as one op each way
// train to the same bits as the two ops, layer statistics included.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "stripes_dataset.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;
using test_support::stripes;

namespace {

Experiment cnn_experiment(std::int64_t steps) {
    Experiment e = quick_experiment(steps, {16});
    e.model.kind = "cnn";
    e.model.channels = {4, 8};
    e.train.batch_size = 32;
    e.train.lr = 0.01;
    e.train.layer_stats_every = 5;
    return e;
}

double mean_loss(Trainer& t, std::int64_t steps) {
    double sum = 0;
    for (std::int64_t i = 0; i < steps; ++i) sum += t.step().step.loss;
    return sum / static_cast<double>(steps);
}

}  // namespace

class TestCnnTraining : public QObject {
    Q_OBJECT
private slots:
    void learnsInEveryRecipe_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("autocast");
        for (const char* kind : {"cnn", "resnet"}) {
            QTest::newRow((std::string(kind) + " fp32").c_str()) << kind << int(Autocast::off);
            QTest::newRow((std::string(kind) + " fp16").c_str()) << kind << int(Autocast::fp16);
            QTest::newRow((std::string(kind) + " bf16").c_str()) << kind << int(Autocast::bf16);
        }
    }
    void learnsInEveryRecipe() {
        QFETCH(QString, kind);
        QFETCH(int, autocast);
        Experiment e = cnn_experiment(80);
        e.model.kind = kind.toStdString();
        if (kind == "resnet") e.model.channels = {4, 8};
        e.model.blocks = 1;
        e.precision.autocast = static_cast<Autocast>(autocast);
        if (e.precision.autocast == Autocast::fp16) e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        Trainer t(e, stripes(640, 200, 3), make_backend("cpu"));
        const double first = mean_loss(t, 10);
        for (int i = 0; i < 60; ++i) t.step();
        const double last = mean_loss(t, 10);
        QVERIFY2(last < 0.5 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
        const EvalRecord eval = t.evaluate();
        QVERIFY2(eval.accuracy > 0.9, qPrintable(QString("accuracy %1").arg(eval.accuracy)));
    }

    void recordsNameLayersAndTheirFormats() {
        Experiment e = cnn_experiment(5);
        e.precision.autocast = Autocast::bf16;
        Trainer t(e, stripes(256, 64, 1), make_backend("cpu"));
        const StepReport& r = t.step();  // step 0 reports layer statistics
        QStringList names;
        for (const LayerStepRecord& l : r.layers) names << QString::fromStdString(l.name);
        QCOMPARE(names, (QStringList{"conv1", "bn1", "conv2", "bn2", "fc1", "fc2"}));
        QCOMPARE(r.layers[0].precision, ComputeFormat(Format::bf16));  // a convolution: autocast's type
        QCOMPARE(r.layers[1].precision, ComputeFormat(Format::fp32));  // batchnorm: FP32 statistics and parameters
        QCOMPARE(r.layers[4].precision, ComputeFormat(Format::bf16));
        QCOMPARE(r.layers[0].grad_elements, std::int64_t{4 * 9});
        QVERIFY(r.layers[0].grad_amax > 0);
        QCOMPARE(t.network().formats(1).weight_store, Format::fp32);
        QCOMPARE(t.network().weight(0).format(), Format::fp32);  // master weights
    }

    void precisionAppliesToConvolutionsOnly() {
        Experiment e = cnn_experiment(50);
        e.precision.layers["conv2"] = LayerPrecision::fp16;
        Trainer t(e, stripes(128, 32, 1), make_backend("cpu"));
        QCOMPARE(t.step().layers[2].precision, ComputeFormat(Format::fp16));
        t.set_layer_precision("conv1", LayerPrecision::bf16);
        QCOMPARE(t.step().layers.size(), std::size_t{0});  // not a statistics step
        for (int i = 0; i < 3; ++i) t.step();
        QCOMPARE(t.step().layers[0].precision, ComputeFormat(Format::bf16));

        QString said;
        try {
            t.set_layer_precision("bn1", LayerPrecision::fp16);
        } catch (const Error& err) {
            said = err.what();
        }
        QVERIFY2(said.startsWith("bn1 is a batchnorm2d layer, which keeps its statistics and parameters in FP32"),
                 qPrintable(said));

        Experiment bad = cnn_experiment(5);
        bad.precision.layers["bn2"] = LayerPrecision::fp16;
        said.clear();
        try {
            Trainer refused(bad, stripes(64, 16, 1), make_backend("cpu"));
        } catch (const Error& err) {
            said = err.what();
        }
        QVERIFY2(said.startsWith("precision.layers.bn2: bn2 is a batchnorm2d layer"), qPrintable(said));
    }

    void overflowNamesTheLayer() {
        Experiment e = cnn_experiment(5);
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.precision.autocast = Autocast::fp16;
        Trainer t(e, stripes(128, 32, 1), make_backend("cpu"));
        t.inject_non_finite("conv2", INFINITY);
        const StepReport& r = t.step();
        QVERIFY(r.step.skipped);
        QCOMPARE(r.events.size() >= 1, true);
        QVERIFY2(QString::fromStdString(r.events[0].message).startsWith("Overflow: conv2's weight gradient held inf/NaN"),
                 qPrintable(QString::fromStdString(r.events[0].message)));
    }

    // Network runs a ReLU and the max pool after it as one op each way
    // (Backend::maxpool2d_relu_forward, _backward) where the backend fuses them. Against the same
    // CNN on a backend that runs the two ops: every step's loss, every layer record of every step (the
    // underflow counts read the gradients' FP32 shadows, which the fused op carries too), and the
    // weights after the steps, bit for bit; in FP32, BF16, and FP16 with dynamic loss scaling
    // (whose skipped steps need the same inf/NaN).
    void reluAndMaxpoolFusedTrainAsTheTwoOps_data() {
        QTest::addColumn<int>("autocast");
        QTest::newRow("fp32") << int(Autocast::off);
        QTest::newRow("bf16") << int(Autocast::bf16);
        QTest::newRow("fp16, dynamic scaling") << int(Autocast::fp16);
    }
    void reluAndMaxpoolFusedTrainAsTheTwoOps() {
        QFETCH(int, autocast);
        Experiment e = cnn_experiment(12);
        e.precision.autocast = static_cast<Autocast>(autocast);
        if (e.precision.autocast == Autocast::fp16) e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.train.layer_stats_every = 1;
        auto trainer = [&](bool fused) {
            auto backend = make_backend("cpu");
            auto* cpu = dynamic_cast<CpuBackend*>(backend.get());
            cpu->set_fuses_maxpool_relu(fused);
            return std::make_unique<Trainer>(e, stripes(256, 64, 5), std::move(backend));
        };
        auto fused = trainer(true), apart = trainer(false);
        QVERIFY(fused->backend().fuses_maxpool_relu());
        QVERIFY(!apart->backend().fuses_maxpool_relu());
        auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
        for (int s = 0; s < 12; ++s) {
            const StepReport a = fused->step(), b = apart->step();
            QVERIFY2(same(a.step.loss, b.step.loss), qPrintable(QString("step %1: loss %2 against %3")
                                                                    .arg(s).arg(a.step.loss, 0, 'g', 17)
                                                                    .arg(b.step.loss, 0, 'g', 17)));
            QCOMPARE(a.step.skipped, b.step.skipped);
            QCOMPARE(a.layers.size(), b.layers.size());
            for (std::size_t l = 0; l < a.layers.size(); ++l) {
                const LayerStepRecord &x = a.layers[l], &y = b.layers[l];
                QVERIFY2(same(x.grad_amax, y.grad_amax) && same(x.frac_zero, y.frac_zero) &&
                             same(x.frac_subnormal, y.frac_subnormal) && same(x.frac_underflow, y.frac_underflow) &&
                             same(x.frac_lost_updates, y.frac_lost_updates),
                         qPrintable(QString("step %1, %2").arg(s).arg(QString::fromStdString(x.name))));
            }
        }
        Network &nf = fused->network(), &na = apart->network();
        for (int l = 0; l < nf.layer_count(); ++l) {
            const std::vector<float> wf = nf.read(nf.weight(l)), wa = na.read(na.weight(l));
            QCOMPARE(wf.size(), wa.size());
            QCOMPARE(std::memcmp(wf.data(), wa.data(), wf.size() * sizeof(float)), 0);
        }
    }
};

QTEST_APPLESS_MAIN(TestCnnTraining)
#include "test_cnn_training.moc"
