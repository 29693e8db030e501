// Gradient tracing through the passes between two matmul layers (docs/numerics.md, "Gradient
// underflow"): a chain conv -> batch norm -> relu -> 2x2 max pool, run backward from a given
// output gradient, and what the convolution's weight statistics count. A flush at batch norm's
// rounding of dx is an underflow of the convolution's dW (its FP32 reference comes from dx before
// that rounding); a chain whose roundings flush nothing counts exactly what it counts without
// tracing; and where only some planes flush, the reference comes from the others' own values,
// not from an earlier step's (cpu_unrounded_pieces.h).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::make;
using conv_test::make_with;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {

// conv (2 -> 3 channels, 3x3, padding 1, FP32 compute, no bias) on 4x4 images, batch norm over its
// 3 channels (γ = 1/16: it shrinks dx), relu, 2x2 max pool; activations and gradients in `act`.
struct Chain {
    static constexpr int batch = 2, channels = 3, side = 4, spatial = side * side;
    Conv2dGeometry g;
    Pool2dGeometry p;
    std::unique_ptr<Tensor> w, gw, x, y1, y2, y3, y4, d4, d3, d2, d1;
    std::unique_ptr<Tensor> bw, bb, bgw, bgb, rm, rv, sm, si;
    ConvTensors conv;
    BatchNormTensors bn;

    Chain(Backend& be, Format act) {
        g.in_channels = 2, g.in_h = side, g.in_w = side, g.out_channels = channels, g.kernel = 3, g.padding = 1;
        p.channels = channels, p.in_h = side, p.in_w = side;
        w = make_with(be, channels, g.patch(), Format::fp32, random_values(static_cast<std::size_t>(channels * g.patch()), 0.3f, 3), "conv.weight");
        gw = make(be, channels, g.patch(), Format::fp32, "conv.grad_weight");
        x = make_with(be, batch, g.in_size(), Format::fp32, random_values(static_cast<std::size_t>(batch * g.in_size()), 1.0f, 5), "x");
        for (auto* t : {&y1, &y2, &y3, &d3, &d2, &d1}) *t = make(be, batch, channels * spatial, act);
        y4 = make(be, batch, channels * spatial / 4, act);
        d4 = make(be, batch, channels * spatial / 4, act);
        bw = make_with(be, 1, channels, Format::fp32, std::vector<float>(channels, 1.0f / 16), "bn.weight");
        bb = make_with(be, 1, channels, Format::fp32, std::vector<float>(channels, 0.0f), "bn.bias");
        bgw = make(be, 1, channels, Format::fp32, "bn.grad_weight");
        bgb = make(be, 1, channels, Format::fp32, "bn.grad_bias");
        rm = make_with(be, 1, channels, Format::fp32, std::vector<float>(channels, 0.0f), "bn.running_mean");
        rv = make_with(be, 1, channels, Format::fp32, std::vector<float>(channels, 1.0f), "bn.running_var");
        sm = make(be, 1, channels, Format::fp32, "bn.saved_mean");
        si = make(be, 1, channels, Format::fp32, "bn.saved_invstd");
        conv.geometry = g, conv.weight = w.get(), conv.grad_weight = gw.get();
        bn.channels = channels, bn.spatial = spatial;
        bn.weight = bw.get(), bn.bias = bb.get(), bn.grad_weight = bgw.get(), bn.grad_bias = bgb.get();
        bn.running_mean = rm.get(), bn.running_var = rv.get(), bn.saved_mean = sm.get(), bn.saved_invstd = si.get();
        be.conv2d_forward(conv, *x, *y1, batch, true);
        be.batchnorm2d_forward(bn, *y1, *y2, batch, true);
        be.activation_forward(Activation::relu, *y2, *y3, batch);
        be.maxpool2d_forward(p, *y3, *y4, batch);
    }

    // One backward from the pool's output gradient; the convolution's weight statistics.
    RoundingStats backward(Backend& be, const std::vector<float>& dy) {
        be.upload(*d4, dy.data(), static_cast<std::int64_t>(dy.size()));
        be.maxpool2d_backward(p, *y3, *y4, *d4, *d3, batch);
        be.activation_backward(Activation::relu, *y2, *y3, *d3, *d2, batch);
        be.batchnorm2d_backward(bn, *y1, *d2, *d1, batch);
        RoundingStats stats;
        be.conv2d_backward(conv, *x, *d1, nullptr, batch, &stats);
        return stats;
    }
};

// The pool's output gradient: per channel ±magnitude[c] (random signs), zero where it is 0.
std::vector<float> output_gradient(Format act, const std::vector<float>& magnitude) {
    const int per_channel = Chain::spatial / 4;
    std::vector<float> dy(static_cast<std::size_t>(Chain::batch * Chain::channels * per_channel));
    const auto signs = random_values(dy.size(), 1.0f, 11);
    for (std::size_t i = 0; i < dy.size(); ++i) {
        const auto c = (i / per_channel) % Chain::channels;
        dy[i] = round_to(act, std::copysign(magnitude[c], signs[i]));
    }
    return dy;
}

// dW entries whose channel (a row of dW) is `c`.
constexpr std::int64_t row = 2 * 3 * 3;

}  // namespace

class TestCpuGradientTracing : public QObject {
    Q_OBJECT
private slots:
    // bf16 keeps FP32's exponent range: nothing flushes, so tracing counts what no tracing does,
    // and leaves the gradients as they are.
    void noFlushCountsAsWithoutTracing() {
        CpuBackend be;
        Chain chain(be, Format::bf16);
        const auto dy = output_gradient(Format::bf16, {1.0f, 0.01f, 1e-20f});
        RoundingStats with, without;
        be.set_gradient_tracing(true);
        with = chain.backward(be, dy);
        const auto gw_with = read(be, *chain.gw);
        be.set_gradient_tracing(false);
        without = chain.backward(be, dy);
        QCOMPARE(read(be, *chain.gw), gw_with);
        QCOMPARE(with.elements, without.elements);
        QCOMPARE(with.zeros_before, without.zeros_before);
        QCOMPARE(with.zeros, without.zeros);
        QCOMPARE(with.subnormals, without.subnormals);
        QCOMPARE(with.underflows(), std::int64_t{0});
    }

    // Batch norm's dx rounded in the registers as it is computed, or stored and rounded after
    // (CpuBackend::set_rounds_in_lanes): the same planes are kept before their rounding.
    static void add_rounding_rows() {
        QTest::addColumn<bool>("in_lanes");
        QTest::newRow("rounded in the registers") << true;
        QTest::newRow("rounded after the store") << false;
    }

    // fp16: an output gradient of ±2^-24 (the smallest subnormal) passes the pool and relu exactly,
    // and batch norm's dx (γ = 1/16 times it, about) rounds to zero: the convolution's dW is zero,
    // an underflow of every entry with tracing, zeros that were zeros without.
    void batchNormFlushIsAnUnderflowOfTheNextWeights_data() { add_rounding_rows(); }
    void batchNormFlushIsAnUnderflowOfTheNextWeights() {
        QFETCH(bool, in_lanes);
        CpuBackend be;
        be.set_rounds_in_lanes(in_lanes);
        Chain chain(be, Format::fp16);
        const float tiny = std::ldexp(1.0f, -24);
        const auto dy = output_gradient(Format::fp16, {tiny, tiny, tiny});
        const std::int64_t n_w = Chain::channels * row;
        for (bool tracing : {true, false}) {
            be.set_gradient_tracing(tracing);
            const RoundingStats stats = chain.backward(be, dy);
            const auto d1 = read(be, *chain.d1);
            QVERIFY(std::all_of(d1.begin(), d1.end(), [](float v) { return v == 0.0f; }));
            QCOMPARE(stats.zeros, n_w);
            QCOMPARE(stats.underflows(), tracing ? n_w : 0);
        }
    }

    // Only channel 0 flushes (channel 1's gradient is zero, channel 2's normal), in a step after
    // one where every channel flushed: the underflows are channel 0's row of dW alone. Channel
    // 1's dx is zero before and after its rounding, so its row is a zero that was a zero; an
    // earlier step's values in the shadow would have made it an underflow too.
    void onlyTheFlushedPlanesCount_data() { add_rounding_rows(); }
    void onlyTheFlushedPlanesCount() {
        QFETCH(bool, in_lanes);
        CpuBackend be;
        be.set_rounds_in_lanes(in_lanes);
        Chain chain(be, Format::fp16);
        const float tiny = std::ldexp(1.0f, -24);
        be.set_gradient_tracing(true);
        QCOMPARE(chain.backward(be, output_gradient(Format::fp16, {tiny, tiny, tiny})).underflows(),
                 Chain::channels * row);
        be.set_gradient_tracing(true);  // the next step
        const RoundingStats stats = chain.backward(be, output_gradient(Format::fp16, {tiny, 0.0f, 1.0f}));
        QCOMPARE(stats.underflows(), row);
        const auto gw = read(be, *chain.gw);
        for (std::int64_t k = 0; k < 2 * row; ++k) QCOMPARE_EXACT(gw[static_cast<std::size_t>(k)], 0.0f);
        for (std::int64_t k = 2 * row; k < 3 * row; ++k) QVERIFY(gw[static_cast<std::size_t>(k)] != 0.0f);
    }
};

QTEST_APPLESS_MAIN(TestCpuGradientTracing)
#include "test_cpu_gradient_tracing.moc"
