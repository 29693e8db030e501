// The reference experiment (resources/experiments/reference-fp32.json) on Fashion-MNIST: 784-256-128-10, relu, AdamW lr 1e-3,
// batch 128, 3 epochs. FP32 reaches at least 85% test accuracy, and autocast fp16 with dynamic
// loss scaling and FP32 master weights lands within 0.5 points of it. Label "slow" (about a
// minute on two cores); skipped when the dataset is not installed.
#include <QtTest>

#include <cmath>
#include <filesystem>

#include "train/session.h"

using namespace mantissa;

namespace {

const char* const dataset_dir = "/usr/share/datasets/fashion-mnist";

RunSummary run(Autocast autocast, LossScalingMode scaling) {
    Experiment e;
    e.name = "reference";
    e.backend = "cpu";
    e.train.eval_every = 0;  // evaluate once, at the end
    e.train.layer_stats_every = 10;
    e.precision.autocast = autocast;
    e.precision.master_weights = true;
    e.precision.loss_scaling.mode = scaling;
    Session s(e);
    s.start();
    s.wait();
    return s.summary();
}

}  // namespace

class TestReference : public QObject {
    Q_OBJECT
private slots:
    void fashionMnistFp32AndFp16() {
        namespace fs = std::filesystem;
        const bool present = fs::exists(fs::path(dataset_dir) / "train-images-idx3-ubyte.gz") ||
                             fs::exists(fs::path(dataset_dir) / "train-images-idx3-ubyte");
        if (!present) QSKIP("Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist (package dataset-fashion-mnist)");
        const RunSummary fp32 = run(Autocast::off, LossScalingMode::off);
        const RunSummary fp16 = run(Autocast::fp16, LossScalingMode::dynamic);
        qInfo("test accuracy: fp32 %.4f, fp16 + dynamic scaling + master weights %.4f (%lld steps, %.0f and %.0f samples/s)",
              fp32.test_accuracy, fp16.test_accuracy, static_cast<long long>(fp32.steps), fp32.samples_per_s,
              fp16.samples_per_s);
        QCOMPARE(fp32.state, SessionState::completed);
        QCOMPARE(fp16.state, SessionState::completed);
        QCOMPARE(fp32.steps, std::int64_t{3 * 469});
        QVERIFY(fp32.test_accuracy >= 0.85);
        QVERIFY(std::abs(fp16.test_accuracy - fp32.test_accuracy) <= 0.005);
        QCOMPARE(fp16.skipped_steps, fp16.overflow_steps);
    }
};

QTEST_GUILESS_MAIN(TestReference)
#include "test_reference.moc"
