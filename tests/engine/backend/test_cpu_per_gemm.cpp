// A linear layer whose three matmuls run in different precisions (LinearTensors::dgrad, wgrad)
// on the CPU backend, held to layers that run all three in one: each backward matmul of the mixed
// layer gives exactly what the uniform layer of its own precision gives (same inputs, same FP8
// state), so the mix changes which operands each matmul sees and nothing else. Covers FP8 with
// one GEMM left in BF16 (Transformer Engine's DisableFP8GEMM), a block format in one GEMM, and an
// FP8 GEMM whose forward is not FP8 (its weight and input quantised in the backward, their amaxes
// recorded), and convolutions. docs/numerics.md, "Precision per matmul".
#include <QtTest>

#include <memory>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::make;
using conv_test::make_with;

namespace {

constexpr std::int64_t batch = 48, in = 70, out = 36;

// One linear layer's tensors, its forward run: FP32 stored weights and gradients; an fp8 or a
// 16-bit forward gets its weight copy and saved input (and FP8 state) as the network declares them.
struct Layer {
    std::unique_ptr<Tensor> w, b, wc, gw, gb, xs, y, dx;
    std::unique_ptr<Fp8State> state;
    LinearTensors t;

    Layer(CpuBackend& be, const ComputeFormat& forward, std::optional<ComputeFormat> dgrad,
          std::optional<ComputeFormat> wgrad, const std::vector<float>& wv, const Tensor& x) {
        w = make_with(be, out, in, Format::fp32, wv, "fc.weight");
        b = make(be, 1, out, Format::fp32, "fc.bias");
        gw = make(be, out, in, Format::fp32, "fc.grad_weight");
        gb = make(be, 1, out, Format::fp32, "fc.grad_bias");
        y = make(be, batch, out, Format::fp32, "y");
        dx = make(be, batch, in, Format::fp32, "dx");
        t.compute = forward.format;
        t.block = forward.block;
        const bool copies = !forward.block && forward.format != Format::fp32 && forward.format != Format::tf32;
        if (copies) {
            wc = make(be, out, in, forward.format, "fc.weight_compute");
            xs = make(be, batch, in, forward.format, "fc.saved_input");
        }
        const ComputeFormat e4m3(Format::fp8_e4m3);
        if (forward == e4m3 || dgrad == e4m3 || wgrad == e4m3) state = be.create_fp8_state(Fp8Recipe{4, 0, AmaxAlgo::max});
        t.weight = w.get(), t.bias = b.get(), t.weight_compute = wc.get(), t.grad_weight = gw.get();
        t.grad_bias = gb.get(), t.saved_input = xs.get(), t.fp8 = state.get();
        t.dgrad = dgrad, t.wgrad = wgrad;
        be.linear_forward(t, x, *y, batch, true);
    }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
    return true;
}

// The three formats of a mix, as the data rows name them.
struct Mix {
    ComputeFormat forward, dgrad, wgrad;
};

void add_mix_columns() {
    QTest::addColumn<QString>("forward");
    QTest::addColumn<QString>("dgrad");
    QTest::addColumn<QString>("wgrad");
}

Mix fetch_mix() {
    QFETCH(QString, forward);
    QFETCH(QString, dgrad);
    QFETCH(QString, wgrad);
    return {*parse_compute_format(forward.toStdString()), *parse_compute_format(dgrad.toStdString()),
            *parse_compute_format(wgrad.toStdString())};
}

}  // namespace

class TestCpuPerGemm : public QObject {
    Q_OBJECT

private slots:
    void eachMatmulIsItsUniformLayers_data() {
        add_mix_columns();
        QTest::newRow("fp8, wgrad in bf16") << "fp8-e4m3" << "fp8-e4m3" << "bf16";
        QTest::newRow("fp8, dgrad in bf16") << "fp8-e4m3" << "bf16" << "fp8-e4m3";
        QTest::newRow("fp32, dgrad mxfp4, wgrad bf16") << "fp32" << "mxfp4" << "bf16";
        QTest::newRow("mxfp4 forward only") << "mxfp4" << "fp32" << "fp32";
        QTest::newRow("bf16, wgrad fp8") << "bf16" << "bf16" << "fp8-e4m3";
        QTest::newRow("nvfp4, dgrad fp16") << "nvfp4" << "fp16" << "nvfp4";
    }
    void eachMatmulIsItsUniformLayers() {
        const auto [f, d, g] = fetch_mix();
        CpuBackend be;
        const std::vector<float> xv = random_values(batch * in, 1.0f, 1), wv = random_values(out * in, 0.2f, 2),
                                 dyv = random_values(batch * out, 1e-2f, 3);
        auto x = make_with(be, batch, in, Format::fp32, xv, "x");
        auto dy = make_with(be, batch, out, Format::fp32, dyv, "dy");

        Layer mixed(be, f, d, g, wv, *x), as_dgrad(be, d, std::nullopt, std::nullopt, wv, *x),
            as_wgrad(be, g, std::nullopt, std::nullopt, wv, *x);
        for (Layer* l : {&mixed, &as_dgrad, &as_wgrad}) be.linear_backward(l->t, *x, *dy, l->dx.get(), batch, nullptr);

        QVERIFY2(same_bits(read(be, *mixed.dx), read(be, *as_dgrad.dx)), "dx differs from the dgrad format's layer");
        QVERIFY2(same_bits(read(be, *mixed.gw), read(be, *as_wgrad.gw)), "dW differs from the wgrad format's layer");
        // The bias gradient is the unquantised dy's, whatever the matmuls.
        auto plain = Layer(be, ComputeFormat(Format::fp32), std::nullopt, std::nullopt, wv, *x);
        be.linear_backward(plain.t, *x, *dy, plain.dx.get(), batch, nullptr);
        QVERIFY(same_bits(read(be, *mixed.gb), read(be, *plain.gb)));
        // And the mix is not the forward's layer run three times: a changed matmul changes its result.
        Layer as_forward(be, f, std::nullopt, std::nullopt, wv, *x);
        be.linear_backward(as_forward.t, *x, *dy, as_forward.dx.get(), batch, nullptr);
        if (!(d == f)) QVERIFY(!same_bits(read(be, *mixed.dx), read(be, *as_forward.dx)));
        if (!(g == f)) QVERIFY(!same_bits(read(be, *mixed.gw), read(be, *as_forward.gw)));
    }

    // The same for a convolution, whose block-scaled wgrad quantises its im2col chunks.
    void convEachMatmulIsItsUniformLayers_data() {
        add_mix_columns();
        QTest::newRow("fp32, dgrad bf16, wgrad fp16") << "fp32" << "bf16" << "fp16";
        QTest::newRow("fp16, dgrad mxfp4, wgrad mxfp8") << "fp16" << "mxfp4" << "mxfp8-e4m3";
        QTest::newRow("mxfp4, dgrad fp32, wgrad fp8") << "mxfp4" << "fp32" << "fp8-e4m3";
    }
    void convEachMatmulIsItsUniformLayers() {
        const auto [f, d, g] = fetch_mix();
        CpuBackend be;
        Conv2dGeometry geo;
        geo.in_channels = 6, geo.in_h = 6, geo.in_w = 5, geo.out_channels = 8, geo.kernel = 3, geo.stride = 1, geo.padding = 1;
        const std::int64_t n = 3;
        const std::vector<float> xv = random_values(n * geo.in_size(), 1.0f, 7), wv = random_values(geo.out_channels * geo.patch(), 0.2f, 8),
                                 dyv = random_values(n * geo.out_size(), 1e-2f, 9);
        auto x = make_with(be, n, geo.in_size(), Format::fp32, xv, "x");
        auto dy = make_with(be, n, geo.out_size(), Format::fp32, dyv, "dy");
        struct Conv {
            std::unique_ptr<Tensor> w, wc, gw, xs, y, dx;
            std::unique_ptr<Fp8State> state;
            ConvTensors t;
        };
        auto conv = [&](const ComputeFormat& fwd, std::optional<ComputeFormat> dg, std::optional<ComputeFormat> wg) {
            auto c = std::make_unique<Conv>();
            c->w = make_with(be, geo.out_channels, geo.patch(), Format::fp32, wv, "conv.weight");
            c->gw = make(be, geo.out_channels, geo.patch(), Format::fp32, "conv.grad_weight");
            c->y = make(be, n, geo.out_size(), Format::fp32, "y");
            c->dx = make(be, n, geo.in_size(), Format::fp32, "dx");
            if (!fwd.block && fwd.format != Format::fp32) {
                c->wc = make(be, geo.out_channels, geo.patch(), fwd.format, "conv.weight_compute");
                c->xs = make(be, n, geo.in_size(), fwd.format, "conv.saved_input");
            }
            const ComputeFormat e4m3(Format::fp8_e4m3);
            if (fwd == e4m3 || dg == e4m3 || wg == e4m3) c->state = be.create_fp8_state(Fp8Recipe{4, 0, AmaxAlgo::max});
            c->t.geometry = geo, c->t.compute = fwd.format, c->t.block = fwd.block, c->t.weight = c->w.get();
            c->t.weight_compute = c->wc.get(), c->t.grad_weight = c->gw.get(), c->t.saved_input = c->xs.get();
            c->t.fp8 = c->state.get(), c->t.dgrad = dg, c->t.wgrad = wg;
            be.conv2d_forward(c->t, *x, *c->y, n, true);
            be.conv2d_backward(c->t, *x, *dy, c->dx.get(), n, nullptr);
            return c;
        };
        const auto mixed = conv(f, d, g), as_dgrad = conv(d, std::nullopt, std::nullopt), as_wgrad = conv(g, std::nullopt, std::nullopt);
        QVERIFY2(same_bits(read(be, *mixed->dx), read(be, *as_dgrad->dx)), "dx differs from the dgrad format's convolution");
        QVERIFY2(same_bits(read(be, *mixed->gw), read(be, *as_wgrad->gw)), "dW differs from the wgrad format's convolution");
    }

    // An FP8 wgrad under a BF16 forward quantises x and dy in the backward and records their amaxes
    // in the layer's state (the forward recorded none), so the next step's scales follow them.
    void fp8BackwardRecordsItsAmaxes() {
        CpuBackend be;
        const std::vector<float> xv = random_values(batch * in, 3.0f, 4), wv = random_values(out * in, 0.2f, 5),
                                 dyv = random_values(batch * out, 1e-2f, 6);
        auto x = make_with(be, batch, in, Format::fp32, xv, "x");
        auto dy = make_with(be, batch, out, Format::fp32, dyv, "dy");
        Layer l(be, ComputeFormat(Format::bf16), ComputeFormat(Format::fp8_e4m3), ComputeFormat(Format::fp8_e4m3), wv, *x);
        be.linear_backward(l.t, *x, *dy, l.dx.get(), batch, nullptr);
        be.update_fp8_scales(*l.state);
        float amax_x = 0, amax_w = 0, amax_dy = 0;
        for (float v : xv) amax_x = std::max(amax_x, std::abs(v));
        for (float v : wv) amax_w = std::max(amax_w, std::abs(v));
        for (float v : dyv) amax_dy = std::max(amax_dy, std::abs(v));
        QCOMPARE(l.state->snapshot(Fp8Role::input).amax_history.at(0), amax_x);
        QCOMPARE(l.state->snapshot(Fp8Role::weight).amax_history.at(0), amax_w);
        QCOMPARE(l.state->snapshot(Fp8Role::grad_output).amax_history.at(0), amax_dy);
        QCOMPARE(l.state->snapshot(Fp8Role::input).scale, 448.0f / amax_x);
    }
};

QTEST_GUILESS_MAIN(TestCpuPerGemm)
#include "test_cpu_per_gemm.moc"
