// The accumulation-error statistic (train/accumulation_error.h): one sum's error in each
// accumulator against sums whose exact and in-order results are worked out here by hand; through
// the Trainer, a layer accumulating in FP16 against one in FP32, the weight gradient's rows, a
// CNN's convolutions (forward only), no effect on the run, and nothing when it is off.
#include <QtTest>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/experiment.h"
#include "numeric/convert.h"
#include "train/accumulation_error.h"
#include "train/trainer.h"
#include "train_support.h"
#include "stripes_dataset.h"
#include "exact_compare.h"

using namespace mantissa;
using mantissa::test::quick_experiment;
using mantissa::test::regression_set;

namespace {

Dataset regression() { return regression_set(1024, 256, 64, 4, 1.0f, 5); }

// The value of `stat` for layer `name` among a step's rows; NaN when there is none.
double stat_of(const std::vector<OpStepRecord>& rows, const std::string& name, const std::string& stat) {
    for (const OpStepRecord& r : rows)
        if (r.name == name && r.stat == stat) return r.value;
    return std::numeric_limits<double>::quiet_NaN();
}

LayerSetting fp16_accumulating() {
    LayerSetting s(LayerPrecision::fp16);
    s.accumulate = Accumulation::fp16;
    return s;
}

}  // namespace

class TestAccumulationError : public QObject {
    Q_OBJECT
private slots:
    void swampedSumLosesHalf() {
        // 4096 products of 1·1: FP16's running sum reaches 2048, where its spacing is 2, so 2048 + 1
        // rounds back to 2048 (to even) and every later product is lost: 2048 of 4096, an error of
        // 1/2. FP32 counts exactly to 4096.
        std::vector<float> ones(4096, 1.0f), scratch;
        QCOMPARE(dot_accumulation_error(ones.data(), 1, ones.data(), 1, 4096, true, scratch), 0.5);
        QCOMPARE_EXACT(dot_accumulation_error(ones.data(), 1, ones.data(), 1, 4096, false, scratch), 0.0);
        // Up to 2048 FP16 is still exact.
        QCOMPARE_EXACT(dot_accumulation_error(ones.data(), 1, ones.data(), 1, 2048, true, scratch), 0.0);
    }

    void fp32LosesAtItsOwnSpacing() {
        // 2^24 + 1 + 1: after 2^24 FP32's spacing is 2, so each +1 is a tie rounded to even 2^24:
        // the sum stays 2^24, off by 2 of 2^24 + 2.
        std::vector<float> a = {16777216.0f, 1.0f, 1.0f}, b = {1.0f, 1.0f, 1.0f}, scratch;
        const double expected = 2.0 / (16777216.0 + 2.0);
        QCOMPARE(dot_accumulation_error(a.data(), 1, b.data(), 1, 3, false, scratch), expected);
    }

    void overflowIsInfinite() {
        // 300 products of 256: 76800 is beyond FP16's 65504.
        std::vector<float> a(300, 256.0f), b(300, 1.0f), scratch;
        QVERIFY(std::isinf(dot_accumulation_error(a.data(), 1, b.data(), 1, 300, true, scratch)));
        QVERIFY(dot_accumulation_error(a.data(), 1, b.data(), 1, 300, false, scratch) == 0.0);
    }

    void zeroProductsAreNoError() {
        std::vector<float> a(64, 0.0f), b(64, 3.0f), scratch;
        QCOMPARE_EXACT(dot_accumulation_error(a.data(), 1, b.data(), 1, 64, true, scratch), 0.0);
    }

    void stridesReadColumns() {
        // A (K, 3) matrix read down its middle column is the contiguous column.
        const std::int64_t K = 3000;
        std::vector<float> m(static_cast<std::size_t>(3 * K)), col(static_cast<std::size_t>(K)), ones(static_cast<std::size_t>(K), 1.0f);
        for (std::int64_t k = 0; k < K; ++k) {
            const float v = round_to(Format::fp16, 0.5f + static_cast<float>(k % 7) / 8.0f);
            m[static_cast<std::size_t>(3 * k + 1)] = v;
            m[static_cast<std::size_t>(3 * k)] = m[static_cast<std::size_t>(3 * k + 2)] = -100.0f;
            col[static_cast<std::size_t>(k)] = v;
        }
        std::vector<float> scratch;
        const double strided = dot_accumulation_error(m.data() + 1, 3, ones.data(), 1, K, true, scratch);
        QCOMPARE(strided, dot_accumulation_error(col.data(), 1, ones.data(), 1, K, true, scratch));
        QVERIFY(strided > 1e-3);  // a positive sum past 2048: swamped
    }

    void fp16LayerShowsTheLargerError() {
        // fc1 adds in FP16, fc2 and fc3 in FP32; FP16 autocast, statistics every other step.
        Experiment e = quick_experiment(6, {128, 64});
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;
        e.precision.layers["fc1"] = fp16_accumulating();
        e.train.accumulation_error = true;
        e.train.layer_stats_every = 2;
        e.train.batch_size = 256;
        Trainer t(e, regression(), make_backend("cpu"));
        for (int i = 0; i < 6; ++i) {
            const StepReport& r = t.step();
            std::size_t rows = 0;
            for (const OpStepRecord& o : r.ops) rows += o.stat.starts_with("accumulation_error");
            if (i % 2 == 1) {
                QCOMPARE(rows, std::size_t{0});
                continue;
            }
            QCOMPARE(rows, std::size_t{6});  // three linear layers, forward and weight gradient
            for (const OpStepRecord& o : r.ops) QCOMPARE(o.step, std::int64_t{i});
            const double fc1 = stat_of(r.ops, "fc1", accumulation_error_stat);
            const double fc2 = stat_of(r.ops, "fc2", accumulation_error_stat);
            const double fc1_w = stat_of(r.ops, "fc1", accumulation_error_wgrad_stat);
            const double fc3_w = stat_of(r.ops, "fc3", accumulation_error_wgrad_stat);
            qInfo("step %d: forward fc1 %.3g fc2 %.3g, wgrad fc1 %.3g fc3 %.3g", i, fc1, fc2, fc1_w, fc3_w);
            // FP16 keeps 11 bits, FP32 24: three orders of magnitude and more apart.
            QVERIFY(fc1 > 1e-5 && fc1 < 1e-2);
            QVERIFY(fc2 >= 0 && fc2 < 1e-6);
            QVERIFY(fc1_w > 1000 * fc3_w);
        }
    }

    void measuringChangesNothing() {
        Experiment off = quick_experiment(40, {32, 32});
        off.precision.autocast = Autocast::fp16;
        off.precision.layers["fc2"] = fp16_accumulating();
        Experiment on = off;
        on.train.accumulation_error = true;
        Trainer a(off, regression(), make_backend("cpu"));
        Trainer b(on, regression(), make_backend("cpu"));
        std::int64_t rows = 0;
        for (int i = 0; i < 40; ++i) {
            const StepReport& ra = a.step();
            QVERIFY(ra.ops.empty());  // off by default: nothing measured
            const double la = ra.step.loss;
            const StepReport& rb = b.step();
            QCOMPARE(rb.step.loss, la);  // bit for bit
            rows += static_cast<std::int64_t>(rb.ops.size());
        }
        QCOMPARE(rows, std::int64_t{40 * 3 * 2});
    }

    void convolutionsHaveTheForwardOnly() {
        Experiment e = quick_experiment(2, {16});
        e.model.kind = "cnn";
        e.model.channels = {4, 8};
        e.train.batch_size = 16;
        e.train.accumulation_error = true;
        Trainer t(e, test_support::stripes(256, 64, 3), make_backend("cpu"));
        const StepReport& r = t.step();
        for (const char* conv : {"conv1", "conv2"}) {
            const double forward = stat_of(r.ops, conv, accumulation_error_stat);
            QVERIFY2(forward >= 0 && forward < 1e-6, conv);  // FP32 sums
            QVERIFY(std::isnan(stat_of(r.ops, conv, accumulation_error_wgrad_stat)));
        }
        QVERIFY(!std::isnan(stat_of(r.ops, "fc1", accumulation_error_wgrad_stat)));
    }

    void settingIsRead() {
        const Experiment e = experiment_from_json(nlohmann::json::parse(R"({"train": {"accumulation_error": true}})"));
        QVERIFY(e.train.accumulation_error);
        QVERIFY(!Experiment{}.train.accumulation_error);
        bool refused = false;
        try {
            experiment_from_json(nlohmann::json::parse(R"({"train": {"accumulation_error": "yes"}})"));
        } catch (const Error& err) {
            refused = std::string(err.what()).find("train.accumulation_error") != std::string::npos;
        }
        QVERIFY(refused);
    }
};

QTEST_APPLESS_MAIN(TestAccumulationError)
#include "test_accumulation_error.moc"
