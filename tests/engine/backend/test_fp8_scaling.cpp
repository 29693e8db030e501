// FP8 delayed scaling: the AmaxHistory window and scale formula (Transformer Engine's recipe),
// and the CPU backend's FP8 linear layer: saturating scaled casts, dequantisation of the FP32
// accumulator, amaxes recorded in training and not in evaluation.
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "backend_test_util.h"
#include "backend/amax_history.h"
#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "numeric/convert.h"

using namespace mantissa;
using backend_test::read;

namespace {

constexpr float e4m3_max = 448.0f;

}  // namespace

class TestFp8Scaling : public QObject {
    Q_OBJECT
private slots:
    void historyMaxWindow() {
        AmaxHistory h(3, 0, AmaxAlgo::max, e4m3_max);
        QCOMPARE(h.scale(), 1.0f);  // before any amax
        const float amaxes[] = {2.0f, 8.0f, 1.0f, 0.5f, 0.25f};
        const float expect[] = {448.0f / 2, 448.0f / 8, 448.0f / 8, 448.0f / 8, 448.0f / 1};
        for (int i = 0; i < 5; ++i) {
            h.record(amaxes[i] / 2);
            h.record(amaxes[i]);  // the step's amax is the max of what was recorded
            h.update();
            QCOMPARE(h.scale(), expect[i]);
            QCOMPARE(h.scale_inv(), 1.0f / expect[i]);
        }
        QCOMPARE(h.history(), (std::vector<float>{0.25f, 0.5f, 1.0f}));  // newest first, 3 kept
    }

    void historyMostRecentAndMargin() {
        AmaxHistory h(4, 2, AmaxAlgo::most_recent, e4m3_max);
        h.record(8.0f);
        h.update();
        QCOMPARE(h.scale(), 448.0f / 8 / 4);
        h.record(1.0f);
        h.update();
        QCOMPARE(h.scale(), 448.0f / 1 / 4);  // the older, larger amax is ignored
    }

    void zeroOrNonFiniteAmaxKeepsTheScale() {
        AmaxHistory h(1, 0, AmaxAlgo::max, e4m3_max);
        h.record(4.0f);
        h.update();
        QCOMPARE(h.scale(), 112.0f);
        h.update();  // nothing recorded: amax 0
        QCOMPARE(h.scale(), 112.0f);
        h.record(std::numeric_limits<float>::infinity());
        h.update();
        QCOMPARE(h.scale(), 112.0f);
        h.record(std::nanf(""));
        h.record(1.0f);
        h.update();
        QCOMPARE(h.scale(), 112.0f);
        QVERIFY_THROWS_EXCEPTION(Error, AmaxHistory(0, 0, AmaxAlgo::max, e4m3_max));
    }

    // Scaling none: the window advances as always but the scale stays 1; back to delayed, the
    // next update scales from the history kept meanwhile.
    void withoutScalingTheScaleStaysOne() {
        AmaxHistory h(3, 0, AmaxAlgo::max, e4m3_max);
        h.record(4.0f);
        h.update();
        QCOMPARE(h.scale(), 112.0f);
        h.set_scaling(Fp8Scaling::none);
        QCOMPARE(h.scale(), 1.0f);  // at once, for the next step's casts
        QCOMPARE(h.scale_inv(), 1.0f);
        h.record(16.0f);
        h.update();
        QCOMPARE(h.scale(), 1.0f);
        QCOMPARE(h.history(), (std::vector<float>{16.0f, 4.0f}));
        h.set_scaling(Fp8Scaling::delayed);
        QCOMPARE(h.scale(), 1.0f);  // until the end of the next step
        h.record(2.0f);
        h.update();
        QCOMPARE(h.scale(), 448.0f / 16);
    }

    // Current scaling: the scale from the tensor's own amax at once (1 for 0 or a non-finite
    // amax), nothing recorded by it, and update() leaves it; power-of-two scales round down.
    void currentScalingAndPowerOfTwoScales() {
        AmaxHistory h(4, 0, AmaxAlgo::max, 448.0f);
        h.set_scaling(Fp8Scaling::current);
        QVERIFY(h.current());
        h.use_amax(3.0f);
        QCOMPARE(h.scale(), 448.0f / 3.0f);
        QCOMPARE(h.scale_inv(), 1.0f / (448.0f / 3.0f));
        QVERIFY(h.history().empty());  // use_amax records nothing
        h.record(3.0f);
        h.update();
        QCOMPARE(h.scale(), 448.0f / 3.0f);  // the window does not set a current scale
        h.use_amax(0.0f);
        QCOMPARE(h.scale(), 1.0f);
        h.use_amax(std::numeric_limits<float>::infinity());
        QCOMPARE(h.scale(), 1.0f);
        h.set_power_of_two(true);
        h.use_amax(3.0f);
        QCOMPARE(h.scale(), 128.0f);  // 149.3 rounded down: 3 · 128 = 384 <= 448
        AmaxHistory d(1, 0, AmaxAlgo::max, 448.0f);
        d.set_power_of_two(true);
        d.record(0.001f);
        d.update();
        QCOMPARE(d.scale(), 262144.0f);  // 448000 -> 2^18
    }

    // An FP8 linear layer with current scaling quantises this step's x and W with their own
    // amaxes: its first forward is bit for bit a delayed layer's whose one-entry history already
    // holds those amaxes; its backward scales dy by dy's amax the same way.
    void currentScalingIsDelayedWithoutTheLag() {
        CpuBackend be;
        const int B = 4, in = 5, out = 3;
        auto mk = [&](std::int64_t r, std::int64_t c) { return be.allocate(TensorDesc{"t", r, c, Format::fp32, MemoryCategory::workspace}); };
        const std::vector<float> xv = backend_test::random_values(B * in, 40.0f, 1), wv = backend_test::random_values(out * in, 0.01f, 2),
                                 dyv = backend_test::random_values(B * out, 1e-6f, 3);
        auto x = mk(B, in), dy = mk(B, out);
        be.upload(*x, xv.data(), B * in);
        be.upload(*dy, dyv.data(), B * out);
        backend_test::Fp8Linear current(be, B, in, out, 1), delayed(be, B, in, out, 1);
        current.state->set_scaling(Fp8Scaling::current);
        for (auto* l : {&current, &delayed}) be.upload(*l->w, wv.data(), out * in);
        auto y1 = mk(B, out), y2 = mk(B, out), dx1 = mk(B, in), dx2 = mk(B, in);
        // Prime the delayed layer: one step records the amaxes, the update turns them into scales.
        be.linear_forward(delayed.t, *x, *y2, B, true);
        be.linear_backward(delayed.t, *x, *dy, dx2.get(), B, nullptr);
        be.update_fp8_scales(*delayed.state);
        be.linear_forward(delayed.t, *x, *y2, B, true);
        be.linear_backward(delayed.t, *x, *dy, dx2.get(), B, nullptr);
        be.linear_forward(current.t, *x, *y1, B, true);
        be.linear_backward(current.t, *x, *dy, dx1.get(), B, nullptr);
        QCOMPARE(read(be, *y1), read(be, *y2));
        QCOMPARE(read(be, *dx1), read(be, *dx2));
        QCOMPARE(read(be, *current.gw), read(be, *delayed.gw));
        QVERIFY(current.state->snapshot(Fp8Role::input).scale != 1.0f);
        // The amaxes still enter the history (the telemetry's), at the end of the step.
        be.update_fp8_scales(*current.state);
        QCOMPARE(current.state->snapshot(Fp8Role::grad_output).amax_history.size(), std::size_t{1});
    }

    // Rowwise scaling: every run along a matmul's reduction quantised with its own scale
    // (fp8_max / amax_run), decoded in FP32, against a quantiser and double products written here.
    void rowwiseScalesEachRowAlongItsReduction() {
        CpuBackend be;
        const int B = 6, in = 7, out = 5;
        auto mk = [&](std::int64_t r, std::int64_t c) { return be.allocate(TensorDesc{"t", r, c, Format::fp32, MemoryCategory::workspace}); };
        std::vector<float> xv = backend_test::random_values(B * in, 1.0f, 4), wv = backend_test::random_values(out * in, 0.1f, 5),
                           dyv = backend_test::random_values(B * out, 1e-5f, 6);
        for (int r = 0; r < B; ++r) xv[r * in] *= std::ldexp(1.0f, 3 * r);  // rows of very different amax
        auto x = mk(B, in), y = mk(B, out), dy = mk(B, out), dx = mk(B, in);
        be.upload(*x, xv.data(), B * in);
        be.upload(*dy, dyv.data(), B * out);
        backend_test::Fp8Linear layer(be, B, in, out, 4);
        layer.state->set_scaling(Fp8Scaling::rowwise);
        be.upload(*layer.w, wv.data(), out * in);
        // v viewed (outer, K, inner), each run of K quantised with its own scale.
        auto quantised = [](Format f, const std::vector<float>& v, int outer, int K, int inner) {
            std::vector<double> q(v.size());
            const float fmax = format_info(f).max_finite;
            for (int o = 0; o < outer; ++o)
                for (int i = 0; i < inner; ++i) {
                    float amax = 0;
                    for (int k = 0; k < K; ++k) amax = std::max(amax, std::abs(v[(o * K + k) * inner + i]));
                    const float s = amax > 0 ? fmax / amax : 1.0f, inv = 1.0f / s;
                    for (int k = 0; k < K; ++k) {
                        const int at = (o * K + k) * inner + i;
                        q[at] = round_to(f, v[at] * s, Overflow::saturate) * inv;
                    }
                }
            return q;
        };
        auto check = [](const char* what, const std::vector<float>& got, const std::vector<double>& want) {
            for (std::size_t i = 0; i < got.size(); ++i)
                QVERIFY2(std::abs(got[i] - want[i]) <= 1e-5 * (std::abs(want[i]) + 1e-30) + 1e-6 * std::abs(want[i]) + 1e-38,
                         qPrintable(QString("%1[%2] = %3, want %4").arg(what).arg(i).arg(got[i]).arg(want[i])));
        };
        be.linear_forward(layer.t, *x, *y, B, true);
        {
            const auto xq = quantised(Format::fp8_e4m3, xv, B, in, 1), wq = quantised(Format::fp8_e4m3, wv, out, in, 1);
            std::vector<double> want(B * out);
            for (int r = 0; r < B; ++r)
                for (int o = 0; o < out; ++o)
                    for (int k = 0; k < in; ++k) want[r * out + o] += xq[r * in + k] * wq[o * in + k];
            check("y", read(be, *y), want);
        }
        be.linear_backward(layer.t, *x, *dy, dx.get(), B, nullptr);
        {
            const auto dyr = quantised(Format::fp8_e5m2, dyv, B, out, 1), wc = quantised(Format::fp8_e4m3, wv, 1, out, in);
            std::vector<double> want(B * in);
            for (int r = 0; r < B; ++r)
                for (int k = 0; k < in; ++k)
                    for (int o = 0; o < out; ++o) want[r * in + k] += dyr[r * out + o] * wc[o * in + k];
            check("dx", read(be, *dx), want);
            const auto dyc = quantised(Format::fp8_e5m2, dyv, 1, B, out), xc = quantised(Format::fp8_e4m3, xv, 1, B, in);
            std::vector<double> gw(out * in);
            for (int o = 0; o < out; ++o)
                for (int k = 0; k < in; ++k)
                    for (int r = 0; r < B; ++r) gw[o * in + k] += dyc[r * out + o] * xc[r * in + k];
            check("grad_weight", read(be, *layer.gw), gw);
        }
        // The tensor amaxes still reach the history.
        be.update_fp8_scales(*layer.state);
        float amax_x = 0;
        for (float v : xv) amax_x = std::max(amax_x, std::abs(v));
        QCOMPARE(layer.state->snapshot(Fp8Role::input).amax_history.at(0), amax_x);
    }

    // A one-layer FP8 forward: x and W quantised with their scales (saturating), the product
    // dequantised by 1/(sx·sw), the bias added, the output stored in the output format.
    void fp8LinearForwardAndBackward() {
        CpuBackend be;
        const int B = 2, in = 3, out = 2;
        auto mk = [&](std::int64_t r, std::int64_t c, Format f) {
            return be.allocate(TensorDesc{"t", r, c, f, MemoryCategory::workspace});
        };
        backend_test::Fp8Linear layer(be, B, in, out, 2);
        LinearTensors& t = layer.t;
        Tensor *w = layer.w.get(), *b = layer.b.get(), *xs = layer.xs.get(), *gb = layer.gb.get();
        Fp8State* state = layer.state.get();
        auto x = mk(B, in, Format::fp32), y = mk(B, out, Format::fp32), dy = mk(B, out, Format::fp32), dx = mk(B, in, Format::fp32);
        const std::vector<float> xv = {1000.0f, 0.3f, -2.0f, 0.01f, 5.0f, -7.0f};  // 1000 saturates at 448
        const std::vector<float> wv = {0.5f, -0.25f, 0.125f, 1.1f, 0.0f, -3.0f};
        const std::vector<float> bv = {0.1f, -0.2f};
        be.upload(*x, xv.data(), B * in);
        be.upload(*w, wv.data(), out * in);
        be.upload(*b, bv.data(), out);

        auto check_forward = [&](float sx, float sw) {
            be.linear_forward(t, *x, *y, B, true);
            const auto yv = read(be, *y);
            for (int r = 0; r < B; ++r) {
                for (int c = 0; c < out; ++c) {
                    float acc = 0;
                    for (int k = 0; k < in; ++k)
                        acc += round_to(Format::fp8_e4m3, xv[r * in + k] * sx, Overflow::saturate) *
                               round_to(Format::fp8_e4m3, wv[c * in + k] * sw, Overflow::saturate);
                    const float ref = acc * ((1.0f / sx) * (1.0f / sw)) + bv[c];
                    QVERIFY2(std::abs(yv[r * out + c] - ref) <= 1e-5f * (1 + std::abs(ref)),
                             qPrintable(QString("%1 vs %2").arg(yv[r * out + c]).arg(ref)));
                }
            }
        };
        check_forward(1.0f, 1.0f);  // first step: scale 1
        QCOMPARE(read(be, *xs)[0], 448.0f);  // saturated, not NaN

        const std::vector<float> dyv = {1e-3f, -2e-3f, 4e-3f, 0.5f};
        be.upload(*dy, dyv.data(), B * out);
        be.linear_backward(t, *x, *dy, dx.get(), B, nullptr);
        // dB sums the unquantised gradient.
        QVERIFY(std::abs(read(be, *gb)[1] - (-2e-3f + 0.5f)) < 1e-7f);

        be.update_fp8_scales(*state);
        const auto sx = state->snapshot(Fp8Role::input), sw = state->snapshot(Fp8Role::weight),
                   sg = state->snapshot(Fp8Role::grad_output);
        QCOMPARE(sx.scale, 448.0f / 1000.0f);
        QCOMPARE(sw.scale, 448.0f / 3.0f);
        QCOMPARE(sg.scale, 57344.0f / 0.5f);
        QCOMPARE(sx.amax_history, (std::vector<float>{1000.0f}));
        check_forward(sx.scale, sw.scale);

        be.update_fp8_scales(*state);
        QCOMPARE(state->snapshot(Fp8Role::input).amax_history, (std::vector<float>{1000.0f, 1000.0f}));

        // Evaluation forwards do not record amaxes: a step with only an evaluation adds amax 0.
        const std::vector<float> x2 = {50.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
        be.upload(*x, x2.data(), B * in);
        be.linear_forward(t, *x, *y, B, false);
        be.update_fp8_scales(*state);
        QCOMPARE(state->snapshot(Fp8Role::input).amax_history, (std::vector<float>{0.0f, 1000.0f}));
    }
};

QTEST_GUILESS_MAIN(TestFp8Scaling)
#include "test_fp8_scaling.moc"
