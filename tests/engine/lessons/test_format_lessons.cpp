// The lessons on the formats after FP8 (resources/experiments/lessons 11 to 15): each preset runs
// on the CPU backend and shows, in the telemetry, the effect its text promises, measured here
// against the alternative the lesson asks the class to switch to.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

// A run as the window drives it: each move is applied before the step it names, as a control
// changed during a run is before the session's next step; the test set is evaluated every
// train.eval_every steps and at the end, as the session does. `steps` 0: the whole run.
struct Move {
    std::int64_t step;
    std::function<void(Trainer&)> apply;
};

// A move that sets these layers to BF16, as the Layers table does.
std::function<void(Trainer&)> bf16_layers(std::vector<const char*> layers) {
    return [layers = std::move(layers)](Trainer& t) {
        for (const char* l : layers) t.set_layer_precision(l, LayerSetting(LayerPrecision::bf16));
    };
}

struct Curve {
    std::vector<double> loss;                               // by step
    std::vector<std::pair<std::int64_t, double>> evals;    // (steps taken, test loss)

    double mean(std::int64_t from, std::int64_t to) const {  // steps [from, to)
        double sum = 0;
        for (std::int64_t i = from; i < to; ++i) sum += loss[static_cast<std::size_t>(i)];
        return sum / static_cast<double>(to - from);
    }
    double eval_mean_after(std::int64_t step) const {
        double sum = 0;
        int n = 0;
        for (const auto& [at, l] : evals)
            if (at > step) {
                sum += l;
                ++n;
            }
        return n ? sum / n : 0;
    }
};

Curve curve(const Experiment& e, const std::vector<Move>& moves = {}, std::int64_t steps = 0) {
    Trainer t = make(e);
    if (steps == 0) steps = t.total_steps();
    Curve c;
    for (std::int64_t i = 0; i < steps; ++i) {
        for (const Move& m : moves)
            if (m.step == i) m.apply(t);
        c.loss.push_back(t.step().step.loss);
        const std::int64_t every = e.train.eval_every;
        if ((every > 0 && (i + 1) % every == 0) || i + 1 == steps) c.evals.emplace_back(i + 1, t.evaluate().loss);
    }
    return c;
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
        // The lesson as the class runs it, one run with its two live moves (stochastic gradients at
        // step 469, fc3 in BF16 at 938), beside the BF16 reference and runs that leave out a move or
        // make another one at 938. The class reads gaps to the reference: the mean training loss
        // over a window minus the reference's over the same steps. The bounds come from ten seeds
        // of each run (mantissa-cli train with --set train.seed=1..10 and the same --at moves,
        // which give the preset's seed the numbers printed here): each lies outside the seeds'
        // range, 2 to 4 of their standard deviations from their mean, so a change that only moves
        // the run within the spread of seeds passes, and a claim that stopped being true fails.
        const Experiment e = preset("12-mxfp4-stochastic-rounding.json");
        auto stochastic = [](Trainer& t) {
            RoundingSpec r = t.settings().precision.rounding;
            r.gradients = GradientRounding::stochastic;
            t.set_rounding(r);
        };
        const Curve reference = curve(lesson_reference_experiment(e));
        const Curve lesson = curve(e, {{469, stochastic}, {938, bf16_layers({"fc3"})}});
        const Curve nearest = curve(e, {}, 938);
        const Curve stochastic_only = curve(e, {{469, stochastic}});
        const Curve fc1_instead = curve(e, {{469, stochastic}, {938, bf16_layers({"fc1"})}});
        const Curve all_bf16 = curve(e, {{469, stochastic}, {938, bf16_layers({"fc1", "fc2", "fc3"})}});
        auto gap = [&](const Curve& c, std::int64_t from, std::int64_t to) {
            return c.mean(from, to) - reference.mean(from, to);
        };
        const double first_epoch = gap(lesson, 300, 469);
        const double sr_gain = gap(nearest, 800, 938) - gap(lesson, 800, 938);
        const double last_epoch = gap(lesson, 1000, 1407);
        const double fc3_gain = gap(stochastic_only, 1000, 1407) - last_epoch;
        const double fc1_vs_fc3 = gap(fc1_instead, 1000, 1407) - last_epoch;
        const double all_end = gap(all_bf16, 1200, 1407);
        const double test_gap = lesson.eval_mean_after(938) - reference.eval_mean_after(938);
        qInfo("training-loss gap to BF16: MXFP4, steps 300-468 %.4f; stochastic gradients take %.4f off it by "
              "steps 800-937 (nearest %.4f); steps 1000-1406 with fc3 in BF16 %.4f, stochastic alone %.4f (fc3 "
              "takes %.4f off), fc1 in BF16 instead %+.4f against fc3; all three in BF16, steps 1200-1406 %.4f; "
              "test loss after step 938 %.4f above BF16's %.4f",
              first_epoch, sr_gain, gap(nearest, 800, 938), last_epoch, gap(stochastic_only, 1000, 1407), fc3_gain,
              fc1_vs_fc3, all_end, test_gap, reference.eval_mean_after(938));
        // "about 0.02 (5%) above it": 0.017 to 0.033 (mean 0.021, sd 0.005).
        QVERIFY(first_epoch > 0.01 && first_epoch < 0.04);
        // The gap narrows a little by itself: to nearest it is 0.004 smaller by steps 800-937 on
        // average (sd 0.004), from 0.013 smaller to 0.001 larger.
        QVERIFY(gap(nearest, 800, 938) < first_epoch + 0.004);
        // Stochastic rounding "takes only about 0.002 off the gap, less than runs with other seeds differ by":
        // -0.002 to 0.008 (mean 0.002, sd 0.003), against gaps of 0.012 to 0.021; never half of one.
        QVERIFY(sr_gain > -0.005 && sr_gain < 0.5 * gap(nearest, 800, 938));
        // fc3 in BF16 "takes about 0.004 off, a fifth of the gap", against stochastic rounding
        // alone: 0.0016 to 0.0058 (mean 0.0036, sd 0.0013), in every seed.
        QVERIFY(fc3_gain > 0.0005 && fc3_gain < 0.008);
        // "the loss ... stay[s] about 0.01 above the reference (0.008 to 0.013 in ten seeds)": mean
        // 0.010, sd 0.002. It does not come back.
        QVERIFY(last_epoch > 0.005 && last_epoch < 0.016);
        // "and the test-loss points": the mean of the evaluations after step 938
        // (1000, 1200, 1400, 1407), 0.0035 to 0.015 above the reference's (mean 0.0095, sd 0.004).
        QVERIFY(test_gap > 0.001 && test_gap < 0.02);
        // "fc1 in BF16 would take off about as much": -0.0017 to +0.0013 against fc3 (mean
        // -0.0007, sd 0.0009), where fc3 itself takes off 0.004; and it leaves as much, 0.0065
        // to 0.012 (mean 0.0096, sd 0.0018).
        QVERIFY(std::abs(fc1_vs_fc3) < 0.003);
        QVERIFY(gap(fc1_instead, 1000, 1407) > 0.005);
        // "only with all three in BF16 does the loss end within about 0.003 of the reference":
        // 0.0001 to 0.0052 over the last 200 steps (mean 0.0026, sd 0.0014).
        QVERIFY(all_end < 0.006);
    }

    void nvfp4LastLayerBf16() {
        // The lesson as the class runs it, one run with its live move (fc3 in BF16 at step 200,
        // after the second test-loss point), beside the BF16 reference, NVFP4 left everywhere, and
        // runs that move fc1, fc2 or all three at 200 instead. The gaps are the mean training loss
        // over steps 300-468 minus the reference's over the same steps, as in mxfp4StochasticRounding.
        // The bounds come from ten seeds of each run (mantissa-cli train with --set train.seed=1..10
        // and the same --at moves, MANTISSA_CPU_THREADS=1; seed 1, the preset's, gives the numbers
        // printed here, with one thread or two): each lies outside the seeds' range, so a change
        // that only moves the run within the spread of seeds passes, and a claim that stopped being
        // true fails. Unlike MXFP4 (lesson 12), most of NVFP4's cost here is the last layer's.
        const Experiment e = preset("13-nvfp4-last-layer-bf16.json");
        const Curve reference = curve(lesson_reference_experiment(e));
        const Curve lesson = curve(e, {{200, bf16_layers({"fc3"})}});
        const Curve nvfp4 = curve(e);
        const Curve fc1_instead = curve(e, {{200, bf16_layers({"fc1"})}});
        const Curve fc2_instead = curve(e, {{200, bf16_layers({"fc2"})}});
        const Curve all_bf16 = curve(e, {{200, bf16_layers({"fc1", "fc2", "fc3"})}});
        auto gap = [&](const Curve& c, std::int64_t from = 300, std::int64_t to = 469) {
            return c.mean(from, to) - reference.mean(from, to);
        };
        auto test_gap = [&](const Curve& c) { return c.eval_mean_after(200) - reference.eval_mean_after(200); };
        const double before = gap(lesson, 100, 200);
        const double left = gap(nvfp4), after = gap(lesson);
        const double share = (left - after) / left;
        const double fc1_gain = left - gap(fc1_instead), fc2_gain = left - gap(fc2_instead);
        qInfo("training-loss gap to BF16: NVFP4, steps 100-199 %.4f; steps 300-468 NVFP4 left %.4f, fc3 in BF16 "
              "%.4f (%.0f%% of the gap off), fc1 instead %.4f, fc2 instead %.4f, all three %.4f; test loss after "
              "step 200 %.4f above BF16's %.4f (NVFP4 left %.4f)",
              before, left, after, 100 * share, gap(fc1_instead), gap(fc2_instead), gap(all_bf16), test_gap(lesson),
              reference.eval_mean_after(200), test_gap(nvfp4));
        // "about 0.015 above it": 0.007 to 0.025 over steps 100-199 (mean 0.014, sd 0.005).
        QVERIFY(before > 0.004 && before < 0.035);
        // Left in NVFP4 it stays there: 0.012 to 0.024 over steps 300-468 (mean 0.018, sd 0.005).
        QVERIFY(left > 0.007 && left < 0.032);
        // fc3 in BF16: "about 0.006 above the reference (0.003 to 0.009 in ten seeds)": mean 0.0056,
        // sd 0.002. Closer, not back: above it in every seed.
        QVERIFY(after > 0.001 && after < 0.012);
        // "two thirds of the gap": 56% to 78% of the NVFP4 run's gap (mean 68%, sd 8%).
        QVERIFY(share > 0.45 && share < 0.9);
        // "The test-loss points after it sit about 0.003 above the reference's, against about 0.016":
        // the mean of the evaluations at 300, 400 and 469, -0.003 to 0.014 above (mean 0.003, sd
        // 0.006); NVFP4 left everywhere, 0.005 to 0.036 (mean 0.016); the switch lowers them by
        // 0.005 to 0.022 in every seed (mean 0.013, sd 0.006).
        QVERIFY(test_gap(lesson) < 0.018);
        QVERIFY(test_gap(nvfp4) - test_gap(lesson) > 0.002);
        // "fc1 or fc2 in BF16 instead would take off only about 0.002, less than runs with other
        // seeds differ by": fc1 -0.003 to 0.0066 (mean 0.0021, sd 0.0027), fc2 -0.0012 to 0.0057
        // (mean 0.0023, sd 0.0022); each leaves the loss 0.003 to 0.016 above fc3's move.
        QVERIFY(fc1_gain > -0.006 && fc1_gain < 0.009);
        QVERIFY(fc2_gain > -0.006 && fc2_gain < 0.009);
        QVERIFY(gap(fc1_instead) > after + 0.0015 && gap(fc2_instead) > after + 0.0015);
        // "only with all three in BF16 does the loss end within about 0.003": 0.000 to 0.0032
        // (mean 0.0018, sd 0.0011).
        QVERIFY(gap(all_bf16) < 0.005);

        // "fc3 goes from 726 B to 2.52 KiB": the Memory column is the layer's parameters (128 x 10
        // weights and 10 biases) times the bytes a value of the format in effect takes
        // (ui/models/layer_table_model.cpp), and after the move a step records fc3 in BF16.
        Trainer t = make(e);
        t.set_layer_precision("fc3", LayerSetting(LayerPrecision::bf16));
        const StepReport& r = t.step();
        QCOMPARE(r.layers[2].name, std::string("fc3"));
        QCOMPARE(1290 * ComputeFormat(BlockFormat::nvfp4).bytes_per_value(), 725.625);
        QCOMPARE(1290 * r.layers[2].precision.bytes_per_value(), 2580.0);
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
