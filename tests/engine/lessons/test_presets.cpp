// The classroom presets in resources/experiments/lessons: each one loads, runs on the CPU backend
// and shows, in the telemetry, the effect its lesson text promises. A preset whose lesson stopped
// being visible (after a change to the engine or to the file) fails here, not in front of a class.
#include <QtTest>

#include <cmath>
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

struct Tail {  // averages over the last `window` steps
    double loss = 0, underflow = 0, lost = 0;
    int overflows = 0, skipped = 0, scale_ups = 0, scale_downs = 0;
};

Tail run(Trainer& t, std::int64_t steps, std::int64_t window) {
    Tail tail;
    double prev_scale = -1;
    int layer_rows = 0;
    for (std::int64_t i = 0; i < steps && !t.done(); ++i) {
        const StepReport& r = t.step();
        if (prev_scale > 0 && r.step.loss_scale > prev_scale) ++tail.scale_ups;
        if (prev_scale > 0 && r.step.loss_scale < prev_scale) ++tail.scale_downs;
        prev_scale = r.step.loss_scale;
        tail.overflows += r.step.overflow;
        tail.skipped += r.step.skipped;
        if (i >= steps - window) {
            tail.loss += r.step.loss / static_cast<double>(window);
            for (const auto& l : r.layers) {
                tail.underflow += l.frac_underflow;
                tail.lost += l.frac_lost_updates;
                ++layer_rows;
            }
        }
    }
    if (layer_rows) {
        tail.underflow /= layer_rows;
        tail.lost /= layer_rows;
    }
    return tail;
}

}  // namespace

class TestPresets : public QObject {
    Q_OBJECT
private slots:
    void everyPresetHasALesson() {
        const QDir dir(qgetenv("MANTISSA_SOURCE_DIR") + "/resources/experiments/lessons");
        const QStringList files = dir.entryList({"*.json"}, QDir::Files);
        QVERIFY(files.size() >= 6);
        for (const QString& f : files) {
            const Experiment e = preset(f.toUtf8().constData());
            QVERIFY2(!e.lesson.title.empty() && !e.lesson.text.empty() && !e.lesson.watch.empty(), qPrintable(f));
            QVERIFY2(e.lesson.classroom, qPrintable(f));
        }
    }

    // Underflow without scaling; dynamic scaling (switched on live, as the lesson says) repairs it.
    void fp16Underflow() {
        const Experiment e = preset("01-fp16-underflow.json");
        Trainer plain = make(e);
        const Tail off = run(plain, e.train.steps, 20);
        Experiment scaled = e;
        scaled.precision.loss_scaling.mode = LossScalingMode::dynamic;
        Trainer repaired = make(scaled);
        const Tail on = run(repaired, e.train.steps, 20);
        qInfo("underflow without scaling %.3f, with %.3f; loss %.4g vs %.4g", off.underflow, on.underflow, off.loss, on.loss);
        QVERIFY(off.underflow > 0.3);
        QVERIFY(on.underflow < 0.02);
        QVERIFY(on.loss < off.loss);
    }

    void dynamicLossScaling() {
        const Experiment e = preset("02-dynamic-loss-scaling.json");
        Trainer t = make(e);
        const Tail tail = run(t, e.train.steps, 20);
        qInfo("scale grew %d times, backed off %d times; %d skipped steps; underflow %.3f", tail.scale_ups, tail.scale_downs,
              tail.skipped, tail.underflow);
        QVERIFY(tail.scale_ups >= 3);
        QVERIFY(tail.scale_downs >= 1);
        QCOMPARE(tail.skipped, tail.scale_downs);  // every backoff is a skipped step
        QVERIFY(tail.underflow < 0.05);
    }

    void lostUpdates() {
        const Experiment e = preset("03-lost-updates.json");
        Trainer off = make(e);
        const Tail without = run(off, 150, 20);
        Trainer on = make(e);
        on.set_master_weights(true);
        const Tail with = run(on, 150, 20);
        qInfo("lost updates without master weights %.3f, with %.3f", without.lost, with.lost);
        QVERIFY(without.lost > 0.5);
        QVERIFY(with.lost == 0.0);  // the lesson says "drops to exactly zero": FP32 masters lose none
    }

    void bf16Range() {
        const Experiment e = preset("04-bf16-range.json");
        Trainer t = make(e);
        const Tail bf16 = run(t, e.train.steps, 20);
        Experiment as_fp16 = e;
        as_fp16.precision.autocast = Autocast::fp16;
        Trainer f = make(as_fp16);
        const Tail fp16 = run(f, e.train.steps, 20);
        qInfo("bf16 underflow %.3f loss %.4g; fp16 underflow %.3f loss %.4g", bf16.underflow, bf16.loss, fp16.underflow, fp16.loss);
        QVERIFY(bf16.underflow < 0.02);
        QVERIFY(bf16.loss < fp16.loss);
    }

    // With its per-tensor scales the FP8 lesson trains; with every scale 1 (the lesson's switch)
    // E5M2 flushes the batch-4096 output gradients: fc1's and fc2's gradients hold more zeros and
    // the loss falls behind. The same steps, side by side.
    void fp8Scaling() {
        Experiment e = preset("05-fp8-scaling.json");
        QCOMPARE(e.precision.fp8.scaling, Fp8Scaling::delayed);
        Trainer scaled = make(e);
        e.precision.fp8.scaling = Fp8Scaling::none;
        Trainer unscaled = make(e);
        const StepReport first = scaled.step();
        QCOMPARE(first.layers.at(0).precision, ComputeFormat(Format::fp8_e4m3));
        QCOMPARE(first.layers.at(1).precision, ComputeFormat(Format::fp8_e4m3));
        QCOMPARE(first.layers.at(2).precision, ComputeFormat(Format::bf16));
        unscaled.step();
        constexpr int steps = 60, window = 10;
        double loss_scaled = 0, loss_unscaled = 0, zeros_scaled = 0, zeros_unscaled = 0;
        for (int i = 0; i < steps; ++i) {
            const StepReport& a = scaled.step();
            if (i >= steps - window) {
                loss_scaled += a.step.loss / window;
                zeros_scaled += (a.layers[0].frac_zero + a.layers[1].frac_zero) / (2 * window);
            }
            const StepReport& b = unscaled.step();
            if (i >= steps - window) {
                loss_unscaled += b.step.loss / window;
                zeros_unscaled += (b.layers[0].frac_zero + b.layers[1].frac_zero) / (2 * window);
            }
        }
        qInfo("fp8 per tensor: loss %.4g -> %.4g, zeros %.3f; unscaled: loss %.4g, zeros %.3f", first.step.loss,
              loss_scaled, zeros_scaled, loss_unscaled, zeros_unscaled);
        QVERIFY(loss_scaled < 0.6 * first.step.loss);
        QVERIFY(loss_unscaled > 1.1 * loss_scaled);
        QVERIFY(zeros_unscaled > zeros_scaled + 0.05);
        // The per-tensor scales moved off 1 from the recorded amaxes; unscaled, they stayed at 1.
        QVERIFY(scaled.network().fp8_state(0)->snapshot(Fp8Role::input).scale != 1.0f);
        QCOMPARE(unscaled.network().fp8_state(0)->snapshot(Fp8Role::grad_output).scale, 1.0f);
        QVERIFY(!unscaled.network().fp8_state(0)->snapshot(Fp8Role::grad_output).amax_history.empty());
    }

    void perLayerPrecision() {
        const Experiment e = preset("06-per-layer-precision.json");
        Trainer t = make(e);
        const StepReport r = t.step();
        QCOMPARE(r.layers.at(0).precision, ComputeFormat(Format::fp16));
        QCOMPARE(r.layers.at(1).precision, ComputeFormat(Format::fp16));
        QCOMPARE(r.layers.at(2).precision, ComputeFormat(Format::fp32));
    }

    void injectedOverflow() {
        const Experiment e = preset("07-injected-overflow.json");
        Trainer t = make(e);
        run(t, 10, 1);
        const double scale = t.step().step.loss_scale;
        t.inject_non_finite("fc2", std::numeric_limits<float>::infinity());
        const StepReport r = t.step();
        QVERIFY(r.step.overflow);
        QVERIFY(r.step.skipped);
        const StepReport next = t.step();
        QCOMPARE(next.step.loss_scale, scale * 0.5);
        QVERIFY(std::isfinite(next.step.loss));
    }
};

QTEST_GUILESS_MAIN(TestPresets)
#include "test_presets.moc"
