// The lessons on the formats after FP8 (resources/experiments/lessons 11 to 15): each preset runs
// on the CPU backend and shows, in the telemetry, the effect its text promises, measured here
// against the alternative the lesson asks the class to switch to.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/backend.h"
#include "data/dataset.h"
#include "config/experiment.h"
#include "lesson_presets.h"
#include "train/trainer.h"

using namespace mantissa;
using lesson_test::make;
using lesson_test::preset;

namespace {

struct Outcome {
    double test_loss = 0, accuracy = 0, lost = 0, tail_loss = 0;
};

// Trains `steps` steps (0: the whole run): the test loss, and the mean lost-update fraction of the
// layers and training loss over the last `window` steps.
Outcome train(const Experiment& e, std::int64_t steps = 0, std::int64_t window = 50) {
    Trainer t = make(e);
    if (steps == 0) steps = t.total_steps();
    Outcome o;
    int rows = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
        const StepReport& r = t.step();
        if (i < steps - window) continue;
        o.tail_loss += r.step.loss / static_cast<double>(window);
        for (const auto& l : r.layers) {
            o.lost += l.frac_lost_updates;
            ++rows;
        }
    }
    if (rows) o.lost /= rows;
    const EvalRecord eval = t.evaluate();
    o.test_loss = eval.loss;
    o.accuracy = eval.accuracy;
    return o;
}

}  // namespace

class TestFormatLessons : public QObject {
    Q_OBJECT
private slots:
    void bf16WeightRounding() {
        Experiment e = preset("11-bf16-weight-rounding.json");
        const Outcome nearest = train(e);
        e.precision.rounding.weights = WeightRounding::stochastic;
        const Outcome stochastic = train(e);
        e.precision.rounding.weights = WeightRounding::kahan;
        const Outcome kahan = train(e);
        const Outcome masters = train(lesson_reference_experiment(preset("11-bf16-weight-rounding.json")));
        qInfo("test loss (lost updates): nearest %.4f (%.2f), stochastic %.4f (%.2f), kahan %.4f (%.3f), "
              "FP32 masters %.4f",
              nearest.test_loss, nearest.lost, stochastic.test_loss, stochastic.lost, kahan.test_loss, kahan.lost,
              masters.test_loss);
        QVERIFY(nearest.lost > 0.8);             // "almost all of fc1's updates lost" (most weights)
        QVERIFY(stochastic.lost > 0.5);          // "most updates are still not taken"
        QVERIFY(kahan.lost < 0.08);              // "a few percent"
        QVERIFY(nearest.test_loss > 2 * masters.test_loss);
        QVERIFY(std::abs(stochastic.test_loss - masters.test_loss) < 0.1 * masters.test_loss);
        QVERIFY(std::abs(kahan.test_loss - masters.test_loss) < 0.05 * masters.test_loss);
    }

    void mxfp4StochasticRounding() {
        // The whole run in each setting (the lesson switches between them live; each settles in
        // less than an epoch): MXFP4 everywhere lags BF16; stochastic gradients do not make it
        // worse and close little of the gap here; fc3 in BF16 closes it.
        Experiment e = preset("12-mxfp4-stochastic-rounding.json");
        const Outcome nearest = train(e);
        e.precision.rounding.gradients = GradientRounding::stochastic;
        const Outcome stochastic = train(e);
        e.precision.rounding.gradients = GradientRounding::nearest;
        e.precision.layers["fc3"] = LayerPrecision::bf16;
        const Outcome last_bf16 = train(e);
        const Outcome bf16 = train(lesson_reference_experiment(preset("12-mxfp4-stochastic-rounding.json")));
        qInfo("test loss (accuracy): MXFP4 nearest %.4f (%.4f), stochastic %.4f (%.4f), fc3 in BF16 %.4f (%.4f), "
              "BF16 %.4f (%.4f)",
              nearest.test_loss, nearest.accuracy, stochastic.test_loss, stochastic.accuracy, last_bf16.test_loss,
              last_bf16.accuracy, bf16.test_loss, bf16.accuracy);
        QVERIFY(nearest.test_loss > bf16.test_loss + 0.01);              // "a little above it"
        QVERIFY(stochastic.test_loss < nearest.test_loss + 0.005);      // no worse
        QVERIFY(std::abs(last_bf16.test_loss - bf16.test_loss) < 0.005);  // "back to the reference"
    }

    void nvfp4LastLayerBf16() {
        Experiment e = preset("13-nvfp4-last-layer-bf16.json");
        const Outcome all = train(e);
        e.precision.layers["fc3"] = LayerPrecision::bf16;
        const Outcome last_bf16 = train(e);
        const Outcome bf16 = train(lesson_reference_experiment(preset("13-nvfp4-last-layer-bf16.json")));
        qInfo("test loss (accuracy): NVFP4 everywhere %.4f (%.4f), fc3 in BF16 %.4f (%.4f), BF16 %.4f (%.4f)",
              all.test_loss, all.accuracy, last_bf16.test_loss, last_bf16.accuracy, bf16.test_loss, bf16.accuracy);
        QVERIFY(all.test_loss > bf16.test_loss + 0.02);  // "it lags"
        QVERIFY(last_bf16.test_loss - bf16.test_loss < 0.5 * (all.test_loss - bf16.test_loss));  // "close"
    }

    void fp8CurrentScaling() {
        // The lesson's move: 100 steps at a loss scale of 2^32, then 1; the underflow of fc1's and
        // fc2's weight gradients over the next 16 steps and the 16 after, delayed against current.
        Experiment e = preset("14-fp8-current-scaling.json");
        auto underflow_after_drop = [](Experiment x) {
            Trainer t = make(x);
            for (int i = 0; i < 100; ++i) t.step();
            LossScalingSpec one = x.precision.loss_scaling;
            one.init_scale = 1;
            t.set_loss_scaling(one);
            double during = 0, after = 0;
            for (int i = 0; i < 32; ++i) {
                const StepReport& r = t.step();
                const double u = (r.layers[0].frac_underflow + r.layers[1].frac_underflow) / 2;
                (i < 16 ? during : after) += u / 16;
            }
            return std::pair{during, after};
        };
        const auto [delayed_during, delayed_after] = underflow_after_drop(e);
        e.precision.fp8.scaling = Fp8Scaling::current;
        const auto [current_during, current_after] = underflow_after_drop(e);
        qInfo("underflow over the 16 steps after the drop (then the next 16): delayed %.3f (%.3f), current %.3f (%.3f)",
              delayed_during, delayed_after, current_during, current_after);
        QVERIFY(delayed_during > 0.5);                 // "mostly lost to underflow"
        QVERIFY(delayed_after < 0.2 * delayed_during);  // "then the history forgets"
        QVERIFY(current_during < 0.05);                // "nothing is lost"
    }

    void fp16Accumulation() {
        // The lesson's move: fc3 switched to FP16 accumulation live, at step 100 of 300; its sums'
        // error before and after, beside fc1's and fc2's (FP16 from the start); the test loss
        // against the reference, which accumulates in FP32 throughout.
        const Experiment e = preset("15-fp16-accumulation.json");
        QVERIFY(e.train.accumulation_error);
        const double unit_roundoff = 1.0 / 2048;
        auto error = [](const StepReport& r, const char* layer, bool wgrad) {
            const std::string stat = wgrad ? "accumulation_error_wgrad" : "accumulation_error";
            for (const OpStepRecord& o : r.ops)
                if (o.name == layer && o.stat == stat) return o.value;
            return -1.0;
        };
        Trainer t = make(e);
        double fp16_layers = 0, fc3_fp32 = 0, fc3_fp16 = 0;
        for (std::int64_t i = 0; i < t.total_steps(); ++i) {
            if (i == 100) {
                LayerSetting fp16;  // the dialog's tick: the matmuls stay auto (fp16 under FP16 autocast)
                fp16.accumulate = Accumulation::fp16;
                t.set_layer_precision("fc3", fp16);
            }
            const StepReport& r = t.step();
            for (const char* layer : {"fc1", "fc2"})
                for (bool wgrad : {false, true}) fp16_layers = std::max(fp16_layers, error(r, layer, wgrad));
            for (bool wgrad : {false, true}) {
                const double fc3 = error(r, "fc3", wgrad);
                QVERIFY(fc3 >= 0);  // measured every step
                if (i < 100) fc3_fp32 = std::max(fc3_fp32, fc3);
                else if (i >= 110) fc3_fp16 += fc3 / (2.0 * static_cast<double>(t.total_steps() - 110));
            }
            if (i < 100)
                for (const char* layer : {"fc1", "fc2"})
                    for (bool wgrad : {false, true}) QVERIFY(error(r, layer, wgrad) > 1e-5);
        }
        const EvalRecord fp16_eval = t.evaluate();
        const Outcome reference = train(lesson_reference_experiment(e));
        qInfo("largest median error: fc1/fc2 in FP16 %.3g, fc3 in FP32 %.3g; fc3 in FP16 (mean from step 110) %.3g; "
              "test loss %.4f, reference (FP32 accumulation) %.4f",
              fp16_layers, fc3_fp32, fc3_fp16, fp16_eval.loss, reference.test_loss);
        QVERIFY(fp16_layers < unit_roundoff);              // "a little below FP16's unit roundoff"
        QVERIFY(fc3_fp32 < 1e-6);                           // "about ten thousand times lower"
        QVERIFY(fc3_fp16 > 1000 * fc3_fp32 && fc3_fp16 < unit_roundoff);  // "jump up to the others"
        QVERIFY(std::abs(fp16_eval.loss - reference.test_loss) < 0.02 * reference.test_loss);  // "on the reference"
    }
};

QTEST_APPLESS_MAIN(TestFormatLessons)
#include "test_format_lessons.moc"
