// The CPU backend's memory estimate (cpu_training_bytes) and the refusal of a model that cannot
// fit in this machine's memory: the estimate is checked against the CPU ledger (which counts the
// declared formats' bytes, equal to the FP32 storage for an all-FP32 model), and a model at the
// documented limits is refused with a sentence before any tensor is allocated.
#include <QtTest>

#include <string>

#include "backend/backend.h"
#include "error.h"
#include "model/model_desc.h"
#include "train/trainer.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;

namespace {

std::vector<LayerFormats> formats_of(Trainer& t) {
    std::vector<LayerFormats> f;
    for (int i = 0; i < t.network().layer_count(); ++i) f.push_back(t.network().formats(i));
    return f;
}

std::vector<LayerFormats> fp32_formats(std::size_t layers) {
    return std::vector<LayerFormats>(layers, resolve_layer_formats(LayerPrecision::automatic, Autocast::off, true));
}

}  // namespace

class TestMemoryEstimate : public QObject {
    Q_OBJECT

private slots:
    // For FP32 layers the ledger's bytes are the FP32 storage, so the estimate must equal them.
    void estimate_matches_the_ledger_for_fp32_data() {
        QTest::addColumn<int>("optimizer");
        QTest::addColumn<double>("momentum");
        QTest::newRow("adamw") << int(OptimizerKind::adamw) << 0.9;
        QTest::newRow("sgd with momentum") << int(OptimizerKind::sgd) << 0.9;
        QTest::newRow("sgd without momentum") << int(OptimizerKind::sgd) << 0.0;
    }
    void estimate_matches_the_ledger_for_fp32() {
        QFETCH(int, optimizer);
        QFETCH(double, momentum);
        Experiment e = quick_experiment(1, {24, 16});
        e.train.optimizer = static_cast<OptimizerKind>(optimizer);
        e.train.momentum = momentum;
        Trainer t(e, blobs_set(200, 3, 1), make_backend("cpu"));
        const std::int64_t estimate = cpu_training_bytes(t.network().desc(), formats_of(t), e.train.batch_size, e.train);
        QCOMPARE(estimate, t.backend().memory().total());
    }

    // With 16-bit layers the ledger counts 2 bytes a value; the CPU backend stores 4.
    void estimate_covers_the_ledger_for_bf16() {
        Experiment e = quick_experiment(1, {24, 16});
        e.precision.autocast = Autocast::bf16;
        Trainer t(e, blobs_set(200, 3, 1), make_backend("cpu"));
        const std::int64_t estimate = cpu_training_bytes(t.network().desc(), formats_of(t), e.train.batch_size, e.train);
        QVERIFY2(estimate >= t.backend().memory().total(), qPrintable(QString::number(estimate)));
    }

    // Kahan's compensation is one more value per narrow weight and bias, counted (4 bytes each on
    // the CPU backend) once the first step has made the buffers.
    void estimate_counts_kahan_buffers() {
        Experiment e = quick_experiment(1, {24, 16});
        e.precision.autocast = Autocast::bf16;
        e.precision.master_weights = false;
        e.precision.rounding.weights = WeightRounding::kahan;
        Trainer t(e, blobs_set(200, 3, 1), make_backend("cpu"));
        t.step();
        const std::int64_t nearest = cpu_training_bytes(t.network().desc(), formats_of(t), e.train.batch_size, e.train);
        const std::int64_t kahan =
            cpu_training_bytes(t.network().desc(), formats_of(t), e.train.batch_size, e.train, {}, e.precision.rounding);
        std::int64_t narrow = 0;
        for (int l = 0; l < t.network().layer_count(); ++l)
            for (int p = 0; p < 2; ++p)
                if (const Tensor* c = t.optimizer().compensation(l, p)) narrow += c->numel();
        QCOMPARE(narrow, std::int64_t{2 * 24 + 24 + 24 * 16 + 16 + 16 * 3 + 3});
        QCOMPARE(kahan - nearest, narrow * std::int64_t{4});
    }

    // The audit's case: spirals (2 features, 3 classes), hidden [65536, 65536], batch 128, AdamW:
    // weights, gradients and two state tensors of ~4.3e9 values each, 4 bytes a value.
    void two_layers_of_65536_need_about_69_gb() {
        ModelSpec m;
        m.hidden = {65536, 65536};
        const ModelDesc desc = describe_model(m, 2, 3, false);
        const std::int64_t bytes = cpu_training_bytes(desc, fp32_formats(desc.layers.size()), 128, TrainSpec{});
        QVERIFY2(bytes > 68'500'000'000 && bytes < 69'500'000'000, qPrintable(QString::number(bytes)));
        QCOMPARE(QString::fromStdString([&] {
                     try {
                         check_cpu_memory(m, 128, bytes, 23'000'000'000);
                     } catch (const Error& err) {
                         return std::string(err.what());
                     }
                     return std::string();
                 }()),
                 QString("model.hidden [65536, 65536] with batch 128 needs about 69 GB on the CPU backend, more than "
                         "this machine's 23 GB; use fewer or narrower hidden layers, or a smaller train.batch_size."));
        check_cpu_memory(m, 128, bytes, 100'000'000'000);  // fits: no error
        check_cpu_memory(m, 128, bytes, 0);                // unknown memory: no refusal
    }

    // Sixteen layers of 65536 (about 1 TB) fit no machine: refused before any allocation.
    void trainer_refuses_a_model_larger_than_memory() {
        Experiment e = quick_experiment(5, std::vector<int>(16, 65536));
        QString message;
        try {
            Trainer t(e, blobs_set(200, 3, 1), make_backend("cpu"));
        } catch (const Error& err) {
            message = err.what();
        }
        QVERIFY2(message.startsWith("model.hidden [65536, 65536, ") && message.contains("with batch 64 needs about ") &&
                     message.contains(" GB on the CPU backend, more than this machine's "),
                 qPrintable("got: " + message));
    }
};

QTEST_GUILESS_MAIN(TestMemoryEstimate)
#include "test_memory_estimate.moc"
