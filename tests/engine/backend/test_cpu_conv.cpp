// The CPU backend's conv2d against an independent reference written here with plain loops in
// double: the forward on odd sizes, strides 1 and 2, padding 0 and 1, kernels 1 to 5, batches 1
// and 3, with and without bias; the backward against central finite differences of that
// reference; the rounding points in tf32, fp16, bf16 and fp8-e4m3 (operands cast, FP32
// accumulation, outputs and gradients values of their formats); the weight gradient's underflow
// counted in weight_stats, also when the output gradient flushed at its own rounding (gradient
// tracing). Shapes whose channels fill oneDNN's blocks (16 and 32 channels: its direct convolution,
// engine/backend/cpu/onednn_conv.h) and shapes it leaves to im2col (a few channels) both run
// through every check: the two paths round at the same points and differ only in the order of
// their FP32 sums, which the tolerances (FP32 accumulation against double) allow.
// docs/numerics.md, "Convolutional ops".
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_conv.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::all_in_format;
using conv_test::make;
using conv_test::make_with;
using conv_test::rounded;
using conv_test::to_double;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::Conv2dGeometry)

namespace {

// y(batch, Co·oh·ow) of the convolution, in double: Σ over (c, ky, kx) inside the image of
// x·w, plus b; positions in the padding contribute nothing.
std::vector<double> conv_ref(const Conv2dGeometry& g, int batch, const std::vector<double>& x,
                             const std::vector<double>& w, const std::vector<double>* b) {
    const std::int64_t oh = g.out_h(), ow = g.out_w(), k = g.kernel;
    std::vector<double> y(static_cast<std::size_t>(batch * g.out_channels * oh * ow));
    for (int n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < g.out_channels; ++o)
            for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                    double acc = b ? (*b)[static_cast<std::size_t>(o)] : 0.0;
                    for (std::int64_t c = 0; c < g.in_channels; ++c)
                        for (std::int64_t ky = 0; ky < k; ++ky)
                            for (std::int64_t kx = 0; kx < k; ++kx) {
                                const std::int64_t iy = oy * g.stride - g.padding + ky;
                                const std::int64_t ix = ox * g.stride - g.padding + kx;
                                if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                                acc += x[static_cast<std::size_t>(n * g.in_size() + (c * g.in_h + iy) * g.in_w + ix)] *
                                       w[static_cast<std::size_t>(o * g.patch() + (c * k + ky) * k + kx)];
                            }
                    y[static_cast<std::size_t>(n * g.out_size() + (o * oh + oy) * ow + ox)] = acc;
                }
    return y;
}

// The adjoints of conv_ref for an output gradient r(batch, Co·oh·ow), in double: dx = Σ W·r over
// the outputs each input feeds, dW = Σ x·r.
void conv_adjoints_ref(const Conv2dGeometry& g, int batch, const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& r, std::vector<double>& dx, std::vector<double>& dw) {
    const std::int64_t oh = g.out_h(), ow = g.out_w(), k = g.kernel;
    dx.assign(x.size(), 0.0);
    dw.assign(w.size(), 0.0);
    for (int n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < g.out_channels; ++o)
            for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                    const double d = r[static_cast<std::size_t>(n * g.out_size() + (o * oh + oy) * ow + ox)];
                    for (std::int64_t c = 0; c < g.in_channels; ++c)
                        for (std::int64_t ky = 0; ky < k; ++ky)
                            for (std::int64_t kx = 0; kx < k; ++kx) {
                                const std::int64_t iy = oy * g.stride - g.padding + ky;
                                const std::int64_t ix = ox * g.stride - g.padding + kx;
                                if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                                const auto xi = static_cast<std::size_t>(n * g.in_size() + (c * g.in_h + iy) * g.in_w + ix);
                                const auto wi = static_cast<std::size_t>(o * g.patch() + (c * k + ky) * k + kx);
                                dx[xi] += w[wi] * d;
                                dw[wi] += x[xi] * d;
                            }
                }
}

// One convolution's tensors: weights and bias FP32 (the master), activations and gradients in
// `act`, the weight copy and saved input in the compute format when it differs.
struct Conv {
    Conv2dGeometry g;
    int batch;
    std::unique_ptr<Tensor> w, wc, b, bc, gw, gb, xs, x, y, dy, dx;
    std::unique_ptr<Fp8State> fp8;
    ConvTensors t;
    std::vector<float> xv, wv, bv;

    Conv(Backend& be, Conv2dGeometry geo, int n, bool bias, Format compute, Format act, unsigned seed)
        : g(geo), batch(n) {
        xv = random_values(static_cast<std::size_t>(batch * g.in_size()), 1.0f, seed);
        wv = random_values(static_cast<std::size_t>(g.out_channels * g.patch()), 0.3f, seed + 1);
        bv = random_values(static_cast<std::size_t>(g.out_channels), 0.1f, seed + 2);
        w = make_with(be, g.out_channels, g.patch(), Format::fp32, wv, "conv.weight");
        gw = make(be, g.out_channels, g.patch(), act, "conv.grad_weight");
        x = make_with(be, batch, g.in_size(), Format::fp32, xv, "x");
        y = make(be, batch, g.out_size(), act, "y");
        dy = make(be, batch, g.out_size(), act, "dy");
        dx = make(be, batch, g.in_size(), act, "dx");
        if (bias) {
            b = make_with(be, 1, g.out_channels, Format::fp32, bv, "conv.bias");
            gb = make(be, 1, g.out_channels, act, "conv.grad_bias");
            if (act != Format::fp32) bc = make(be, 1, g.out_channels, act, "conv.bias_compute");
        }
        const bool fp8_layer = compute == Format::fp8_e4m3;
        if (compute != Format::fp32 && compute != Format::tf32) {
            wc = make(be, g.out_channels, g.patch(), compute, "conv.weight_compute");
            xs = make(be, batch, g.in_size(), compute, "conv.saved_input");
        }
        if (fp8_layer) fp8 = be.create_fp8_state(Fp8Recipe{4, 0, AmaxAlgo::max});
        t.geometry = g;
        t.compute = compute;
        t.weight = w.get();
        t.weight_compute = wc.get();
        t.bias = b.get();
        t.bias_compute = fp8_layer ? nullptr : bc.get();
        t.grad_weight = gw.get();
        t.grad_bias = gb.get();
        t.saved_input = xs.get();
        t.fp8 = fp8.get();
    }
};

Conv2dGeometry geometry(int c, int h, int w, int co, int k, int s, int p) {
    Conv2dGeometry g;
    g.in_channels = c, g.in_h = h, g.in_w = w, g.out_channels = co, g.kernel = k, g.stride = s, g.padding = p;
    return g;
}

Conv2dGeometry fetch_geometry() {
    QFETCH(int, c);
    QFETCH(int, h);
    QFETCH(int, w);
    QFETCH(int, co);
    QFETCH(int, k);
    QFETCH(int, s);
    QFETCH(int, p);
    return geometry(c, h, w, co, k, s, p);
}

void add_geometry_rows() {
    QTest::addColumn<int>("c");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("w");
    QTest::addColumn<int>("co");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("s");
    QTest::addColumn<int>("p");
    QTest::addColumn<int>("batch");
    QTest::addColumn<bool>("bias");
    QTest::newRow("k3 s1 p0 b1") << 2 << 7 << 5 << 3 << 3 << 1 << 0 << 1 << true;
    QTest::newRow("k3 s1 p1 b3") << 2 << 7 << 5 << 3 << 3 << 1 << 1 << 3 << true;
    QTest::newRow("k3 s2 p0 b3") << 3 << 9 << 7 << 4 << 3 << 2 << 0 << 3 << true;
    QTest::newRow("k3 s2 p1 b1 no bias") << 3 << 9 << 7 << 4 << 3 << 2 << 1 << 1 << false;
    QTest::newRow("k2 s2 p0 b3 odd") << 1 << 5 << 7 << 2 << 2 << 2 << 0 << 3 << true;
    QTest::newRow("k1 s1 p0 b3 direct") << 4 << 5 << 3 << 3 << 1 << 1 << 0 << 3 << true;
    QTest::newRow("k1 s2 p1 b1 no bias") << 2 << 5 << 5 << 2 << 1 << 2 << 1 << 1 << false;
    QTest::newRow("k5 s1 p1 b3") << 2 << 6 << 5 << 2 << 5 << 1 << 1 << 3 << true;
    QTest::newRow("one row s2 p1 b3") << 2 << 1 << 6 << 2 << 3 << 2 << 1 << 3 << true;
    // oneDNN's direct convolution in every direction (nChw16c), and in the forward and dW of a
    // first layer (one input channel; its dX stays on im2col: 15 of 16 blocked channels padding).
    QTest::newRow("k3 s1 p1 b3 blocked") << 16 << 6 << 5 << 16 << 3 << 1 << 1 << 3 << true;
    QTest::newRow("k3 s2 p1 b2 blocked no bias") << 16 << 7 << 6 << 32 << 3 << 2 << 1 << 2 << false;
    QTest::newRow("k1 s2 p0 b3 blocked") << 16 << 5 << 5 << 16 << 1 << 2 << 0 << 3 << true;
    QTest::newRow("k3 s1 p1 b3 one channel to 16") << 1 << 6 << 5 << 16 << 3 << 1 << 1 << 3 << true;
}

// The small shape of a test (im2col) and one with 16 channels (oneDNN's direct convolution).
void add_path_rows(Conv2dGeometry small) {
    QTest::addColumn<Conv2dGeometry>("g");
    QTest::newRow("im2col") << small;
    small.in_channels = small.out_channels = 16;
    QTest::newRow("direct") << small;
}

}  // namespace

class TestCpuConv : public QObject {
    Q_OBJECT
private slots:
    // FP32: y = W ⋆ x + b within FP32 accumulation of the double reference.
    void forwardMatchesReference_data() { add_geometry_rows(); }
    void forwardMatchesReference() {
        const Conv2dGeometry g = fetch_geometry();
        QFETCH(int, batch);
        QFETCH(bool, bias);
        CpuBackend be;
        Conv cv(be, g, batch, bias, Format::fp32, Format::fp32, 11);
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        const std::vector<double> bd = to_double(cv.bv);
        const auto ref = conv_ref(cv.g, batch, to_double(cv.xv), to_double(cv.wv), bias ? &bd : nullptr);
        const auto got = read(be, *cv.y);
        QCOMPARE(got.size(), ref.size());
        const std::int64_t bad = conv_test::first_mismatch(got, ref, 1e-5);
        QVERIFY2(bad < 0, qPrintable(QString("y[%1] = %2, reference %3").arg(bad).arg(got[bad]).arg(ref[bad])));
    }

    // dx, dW and dB against central differences of the double reference's Σ y·r (r = dy); the
    // gradients are written, not accumulated (a second backward gives the same values).
    void backwardMatchesFiniteDifferences_data() { add_geometry_rows(); }
    void backwardMatchesFiniteDifferences() {
        const Conv2dGeometry g = fetch_geometry();
        QFETCH(int, batch);
        QFETCH(bool, bias);
        CpuBackend be;
        Conv cv(be, g, batch, bias, Format::fp32, Format::fp32, 21);
        const auto rv = random_values(static_cast<std::size_t>(batch * cv.g.out_size()), 1.0f, 25);
        be.upload(*cv.dy, rv.data(), static_cast<std::int64_t>(rv.size()));
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
        const auto dx = read(be, *cv.dx), gw = read(be, *cv.gw);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
        QCOMPARE(read(be, *cv.dx), dx);
        QCOMPARE(read(be, *cv.gw), gw);

        const auto r = to_double(rv);
        auto xd = to_double(cv.xv), wd = to_double(cv.wv), bd = to_double(cv.bv);
        auto loss_x = [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, v, wd, bias ? &bd : nullptr), r); };
        auto loss_w = [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, xd, v, bias ? &bd : nullptr), r); };
        auto loss_b = [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, xd, wd, &v), r); };
        const double hstep = 1e-2;  // the loss is linear in each argument: the differences are exact
        const auto fd_x = conv_test::finite_differences(xd, loss_x, hstep);
        const auto fd_w = conv_test::finite_differences(wd, loss_w, hstep);
        std::int64_t bad = conv_test::first_mismatch(dx, fd_x, 1e-4);
        QVERIFY2(bad < 0, qPrintable(QString("dx[%1] = %2, finite difference %3").arg(bad).arg(dx[bad]).arg(fd_x[bad])));
        bad = conv_test::first_mismatch(gw, fd_w, 1e-4);
        QVERIFY2(bad < 0, qPrintable(QString("dW[%1] = %2, finite difference %3").arg(bad).arg(gw[bad]).arg(fd_w[bad])));
        if (bias) {
            const auto gb = read(be, *cv.gb);
            const auto fd_b = conv_test::finite_differences(bd, loss_b, hstep);
            bad = conv_test::first_mismatch(gb, fd_b, 1e-4);
            QVERIFY2(bad < 0, qPrintable(QString("dB[%1] = %2, finite difference %3").arg(bad).arg(gb[bad]).arg(fd_b[bad])));
        }
        // Without dx (a first layer), the parameters' gradients are the same.
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, nullptr, batch, nullptr);
        QCOMPARE(read(be, *cv.gw), gw);
    }

    // A batch of large images is taken in chunks of whole samples (cpu_conv.cpp: a chunk's column
    // matrix stays under 2^22 values; here two samples, then one): y, dx and dW match the double
    // reference whichever chunk a sample falls in, and dW sums over every chunk (dB is summed
    // sample by sample, unchunked).
    void chunkedBatchMatchesReference() {
        const Conv2dGeometry g = geometry(1, 400, 400, 8, 3, 1, 1);  // 9 × 160000 values a sample
        const int batch = 3;
        CpuBackend be;
        Conv cv(be, g, batch, true, Format::fp32, Format::fp32, 31);
        const auto rv = random_values(static_cast<std::size_t>(batch * g.out_size()), 1.0f, 35);
        be.upload(*cv.dy, rv.data(), static_cast<std::int64_t>(rv.size()));
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);

        const auto xd = to_double(cv.xv), wd = to_double(cv.wv), bd = to_double(cv.bv), r = to_double(rv);
        const auto y_ref = conv_ref(g, batch, xd, wd, &bd);
        std::int64_t bad = conv_test::first_mismatch(read(be, *cv.y), y_ref, 1e-5);
        QVERIFY2(bad < 0, qPrintable(QString("y[%1]").arg(bad)));
        std::vector<double> dx_ref, dw_ref;
        conv_adjoints_ref(g, batch, xd, wd, r, dx_ref, dw_ref);
        bad = conv_test::first_mismatch(read(be, *cv.dx), dx_ref, 1e-5);
        QVERIFY2(bad < 0, qPrintable(QString("dx[%1]").arg(bad)));
        bad = conv_test::first_mismatch(read(be, *cv.gw), dw_ref, 1e-4);  // sums of 480,000 products
        QVERIFY2(bad < 0, qPrintable(QString("dW[%1] = %2, reference %3").arg(bad).arg(read(be, *cv.gw)[bad]).arg(dw_ref[bad])));
    }

    // oneDNN's weight gradient (onednn_conv.h) takes the batch in chunks of whole samples (here
    // 70 samples of 64 positions: 24, 24 and 22), one primitive each, the chunks' dWs added in
    // order: y, dx and dW match the double reference, dW over every chunk.
    void directWeightGradientSumsEveryChunk() {
        const Conv2dGeometry g = geometry(16, 8, 8, 16, 3, 1, 1);
        const int batch = 70;
        CpuBackend be;
        Conv cv(be, g, batch, true, Format::fp32, Format::fp32, 37);
        const auto rv = random_values(static_cast<std::size_t>(batch * g.out_size()), 1.0f, 38);
        be.upload(*cv.dy, rv.data(), static_cast<std::int64_t>(rv.size()));
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);

        const auto xd = to_double(cv.xv), wd = to_double(cv.wv), bd = to_double(cv.bv), r = to_double(rv);
        std::int64_t bad = conv_test::first_mismatch(read(be, *cv.y), conv_ref(g, batch, xd, wd, &bd), 1e-5);
        QVERIFY2(bad < 0, qPrintable(QString("y[%1]").arg(bad)));
        std::vector<double> dx_ref, dw_ref;
        conv_adjoints_ref(g, batch, xd, wd, r, dx_ref, dw_ref);
        bad = conv_test::first_mismatch(read(be, *cv.dx), dx_ref, 1e-5);
        QVERIFY2(bad < 0, qPrintable(QString("dx[%1]").arg(bad)));
        bad = conv_test::first_mismatch(read(be, *cv.gw), dw_ref, 1e-4);  // sums of 4,480 products
        QVERIFY2(bad < 0, qPrintable(QString("dW[%1] = %2, reference %3").arg(bad).arg(read(be, *cv.gw)[bad]).arg(dw_ref[bad])));
        // A second backward writes the same bits (nothing of the first is left in the chunks' sums).
        const auto gw = read(be, *cv.gw);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
        QCOMPARE(read(be, *cv.gw), gw);
    }

    // oneDNN's forward takes the batch in chunks whose blocked result fits the L2 cache (cpu_conv.cpp,
    // forward_chunk_samples; here 8,192 outputs a sample: chunks of 16, 16 and 5 samples, two
    // primitives). Every sample's y is the bits of the same sample run alone, on the FP32 and
    // the bf16 kernels: a chunk's size changes neither the kernel nor any sum's order.
    void directForwardChunksGiveEachSamplesBits_data() {
        QTest::addColumn<QString>("path");
        QTest::newRow("fp32 kernels") << "fp32";
        if (CpuMatmul::bf16_available()) QTest::newRow("bf16 kernels") << "bf16";
    }
    void directForwardChunksGiveEachSamplesBits() {
        QFETCH(QString, path);
        const Conv2dGeometry g = geometry(16, 16, 16, 32, 3, 1, 1);
        const int batch = 37;
        const OneDnnConvDims dims{batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding};
        QVERIFY(OneDnnConv::find(OneDnnConv::Direction::forward, dims, 1));
        CpuBackend be;
        be.set_bf16_matmul_path(path.toStdString());
        Conv whole(be, g, batch, true, Format::bf16, Format::bf16, 57);
        be.conv2d_forward(whole.t, *whole.x, *whole.y, batch, true);
        const auto y = read(be, *whole.y);
        Conv alone(be, g, 1, true, Format::bf16, Format::bf16, 57);  // the same weights and bias
        for (int i = 0; i < batch; ++i) {
            be.upload(*alone.x, whole.xv.data() + i * g.in_size(), g.in_size());
            be.conv2d_forward(alone.t, *alone.x, *alone.y, 1, true);
            const auto yi = read(be, *alone.y);
            QVERIFY2(std::memcmp(yi.data(), y.data() + i * g.out_size(), yi.size() * sizeof(float)) == 0,
                     qPrintable(QString("sample %1").arg(i)));
        }
        const auto xd = to_double(rounded(Format::bf16, whole.xv)), wd = to_double(rounded(Format::bf16, whole.wv));
        const auto bd = to_double(rounded(Format::bf16, whole.bv));
        QVERIFY(all_in_format(Format::bf16, y));
        const QString bad = conv_test::mismatch("y", y, conv_ref(g, batch, xd, wd, &bd), 1.0 / 256, 1e-6);  // an ulp
        QVERIFY2(bad.isEmpty(), qPrintable(bad));
    }

    // bf16 operands on each path the backend may take (onednn_conv.h): oneDNN's bf16 kernels
    // (where the CPU has them: the operands as bf16 bits) and its FP32 kernels on the same values.
    // The products are exact either way, so with FP32 outputs y, dx and dW match the double
    // reference of the bf16 operands to FP32 summation, and the two paths match each other as
    // closely; the weight gradient over several chunks (40 samples of 64 positions).
    void bf16KernelsMatchTheFp32Kernels_data() {
        QTest::addColumn<Conv2dGeometry>("g");
        QTest::addColumn<int>("batch");
        QTest::newRow("3x3 stride 1, 40 samples") << geometry(16, 8, 8, 32, 3, 1, 1) << 40;
        QTest::newRow("3x3 stride 2, 3 samples") << geometry(32, 7, 6, 16, 3, 2, 1) << 3;
    }
    void bf16KernelsMatchTheFp32Kernels() {
        QFETCH(Conv2dGeometry, g);
        QFETCH(int, batch);
        const OneDnnConvDims dims{batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding};
        using Direction = OneDnnConv::Direction;
        for (Direction d : {Direction::forward, Direction::backward_data, Direction::backward_weights}) {
            QVERIFY(OneDnnConv::find(d, dims, 1));
            // Wherever oneDNN has a bf16 matmul, it has these bf16 kernels too: the test runs them.
            QVERIFY(!CpuMatmul::bf16_available() || OneDnnConv::find(d, dims, 1, ConvOperands::bf16));
        }
        struct Result {
            std::vector<float> y, dx, dw, x, w;  // x, w: the values the run drew
        };
        std::vector<float> dy_values = random_values(static_cast<std::size_t>(batch * g.out_size()), 1.0f, 52);
        dy_values = rounded(Format::bf16, dy_values);  // an operand either way: its values bf16's
        const auto run = [&](const char* path) {
            CpuBackend be;
            be.set_bf16_matmul_path(path);
            Conv cv(be, g, batch, false, Format::bf16, Format::fp32, 51);
            be.upload(*cv.dy, dy_values.data(), static_cast<std::int64_t>(dy_values.size()));
            be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
            be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
            return Result{read(be, *cv.y), read(be, *cv.dx), read(be, *cv.gw), cv.xv, cv.wv};
        };
        const Result fp32 = run("fp32"), bf16 = run("bf16");
        const auto xd = to_double(rounded(Format::bf16, fp32.x)), wd = to_double(rounded(Format::bf16, fp32.w));
        std::vector<double> dx_ref, dw_ref;
        conv_adjoints_ref(g, batch, xd, wd, to_double(dy_values), dx_ref, dw_ref);
        const auto y_ref = conv_ref(g, batch, xd, wd, nullptr);
        for (const auto& [name, r] : {std::pair{"fp32 kernels", &fp32}, std::pair{"bf16 kernels", &bf16}}) {
            QString bad = conv_test::mismatch("y", r->y, y_ref, 1e-5);
            QVERIFY2(bad.isEmpty(), qPrintable(QString("%1: %2").arg(name, bad)));
            bad = conv_test::mismatch("dx", r->dx, dx_ref, 1e-5);
            QVERIFY2(bad.isEmpty(), qPrintable(QString("%1: %2").arg(name, bad)));
            bad = conv_test::mismatch("dW", r->dw, dw_ref, 1e-4);  // sums of up to 2,560 products
            QVERIFY2(bad.isEmpty(), qPrintable(QString("%1: %2").arg(name, bad)));
        }
    }

    // y = rnd_out( Σ rnd_F(x)·rnd_F(W) + rnd_out(b) ): the outputs are values of their format,
    // within one ulp of the double reference of the same rounding points, plus the FP32
    // accumulation's own error (which only an FP32 output can show);
    // the weight copy and saved input hold the operands.
    void forwardRoundsAtTheDesignPoints_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("output");
        QTest::addColumn<Conv2dGeometry>("g");
        for (const auto& [path, g] : {std::pair{"im2col", geometry(3, 7, 6, 4, 3, 2, 1)},
                                      std::pair{"direct", geometry(16, 7, 6, 16, 3, 2, 1)}}) {
            QTest::addRow("fp32 %s", path) << Format::fp32 << Format::fp32 << g;
            QTest::addRow("tf32 %s", path) << Format::tf32 << Format::fp32 << g;
            QTest::addRow("fp16 %s", path) << Format::fp16 << Format::fp16 << g;
            QTest::addRow("bf16 %s", path) << Format::bf16 << Format::bf16 << g;
        }
    }
    void forwardRoundsAtTheDesignPoints() {
        QFETCH(Format, compute);
        QFETCH(Format, output);
        QFETCH(Conv2dGeometry, g);
        CpuBackend be;
        const int batch = 3;
        Conv cv(be, g, batch, true, compute, output, 31);
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        const auto y = read(be, *cv.y);
        QVERIFY(all_in_format(output, y));
        const std::vector<double> br = to_double(rounded(output, cv.bv));
        const auto xd = to_double(rounded(compute, cv.xv)), wd = to_double(rounded(compute, cv.wv));
        const auto ref = conv_ref(cv.g, batch, xd, wd, nullptr);
        // The FP32 sum of K = C·k·k products, in any order, is within K·u32·Σ|x·w| of the exact
        // one (u32 = 2^-24): next to an fp16 or bf16 output's ulp that is nothing, next to an
        // FP32 output's it is several ulps for the 144 products of the 16-channel shape.
        auto magnitude = [](std::vector<double> v) {
            for (double& e : v) e = std::abs(e);
            return v;
        };
        const auto abs_ref = conv_ref(cv.g, batch, magnitude(xd), magnitude(wd), nullptr);
        const double accumulation = static_cast<double>(cv.g.patch()) * std::ldexp(1.0, -24);
        const double ulp = format_info(output).epsilon;
        const std::int64_t positions = cv.g.out_h() * cv.g.out_w();
        for (std::size_t i = 0; i < ref.size(); ++i) {
            const std::int64_t channel = (static_cast<std::int64_t>(i) % cv.g.out_size()) / positions;
            const double want = round_to(output, static_cast<float>(ref[i] + br[static_cast<std::size_t>(channel)]));
            QVERIFY2(std::abs(y[i] - want) <= std::abs(want) * ulp * 1.01 + accumulation * abs_ref[i] + 1e-6,
                     qPrintable(QString("y[%1] = %2, reference %3").arg(i).arg(y[i]).arg(want)));
        }
        if (cv.wc) {
            QCOMPARE(read(be, *cv.wc), rounded(compute, cv.wv));
            QCOMPARE(read(be, *cv.xs), rounded(compute, cv.xv));
        }
    }

    // Backward in fp16 and bf16: dy is an operand as it is (its format is the compute format),
    // dX and dW are the FP32 sums rounded once (within one ulp of the double reference),
    // dB = Σ dy in FP32 rounded; every gradient is a value of its format.
    void backwardRoundsToGradientFormats_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<Conv2dGeometry>("g");
        for (const auto& [path, g] : {std::pair{"im2col", geometry(2, 6, 7, 3, 3, 2, 1)},
                                      std::pair{"direct", geometry(16, 5, 4, 16, 3, 1, 1)}}) {
            QTest::addRow("fp16 %s", path) << Format::fp16 << g;
            QTest::addRow("bf16 %s", path) << Format::bf16 << g;
        }
    }
    void backwardRoundsToGradientFormats() {
        QFETCH(Format, format);
        QFETCH(Conv2dGeometry, g);
        CpuBackend be;
        const int batch = 3;
        Conv cv(be, g, batch, true, format, format, 41);
        const auto rv = random_values(static_cast<std::size_t>(batch * cv.g.out_size()), 1.0f, 45);
        be.upload(*cv.dy, rv.data(), static_cast<std::int64_t>(rv.size()));
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
        const auto dx = read(be, *cv.dx), gw = read(be, *cv.gw), gb = read(be, *cv.gb);
        QVERIFY(all_in_format(format, dx));
        QVERIFY(all_in_format(format, gw));
        QVERIFY(all_in_format(format, gb));
        // The references: gradients of Σ y·dy with the operands' values.
        const auto r = to_double(read(be, *cv.dy));
        auto xd = to_double(rounded(format, cv.xv)), wd = to_double(rounded(format, cv.wv));
        const auto fd_x = conv_test::finite_differences(
            xd, [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, v, wd, nullptr), r); }, 1e-2);
        const auto fd_w = conv_test::finite_differences(
            wd, [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, xd, v, nullptr), r); }, 1e-2);
        const double ulp = format_info(format).epsilon;
        auto within = [&](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
            for (std::size_t i = 0; i < want.size(); ++i) {
                const double ref = round_to(format, static_cast<float>(want[i]));
                if (!(std::abs(got[i] - ref) <= std::abs(ref) * ulp * 1.01 + 1e-5))
                    return QString("%1[%2] = %3, reference %4").arg(what).arg(i).arg(got[i]).arg(ref);
            }
            return QString();
        };
        QString diff = within(dx, fd_x, "dx");
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        diff = within(gw, fd_w, "dW");
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        const std::int64_t positions = cv.g.out_h() * cv.g.out_w();
        for (std::int64_t o = 0; o < cv.g.out_channels; ++o) {
            double sum = 0;
            for (int n = 0; n < batch; ++n)
                for (std::int64_t q = 0; q < positions; ++q)
                    sum += r[static_cast<std::size_t>(n * cv.g.out_size() + o * positions + q)];
            const double ref = round_to(format, static_cast<float>(sum));
            QVERIFY2(std::abs(gb[static_cast<std::size_t>(o)] - ref) <= std::abs(ref) * ulp * 1.01 + 1e-5,
                     qPrintable(QString("dB[%1] = %2, reference %3").arg(o).arg(gb[o]).arg(ref)));
        }
    }

    // dW = Σ dy·x of tiny values: in fp16 each element is 9·2⁻¹⁴·x. With x = 2⁻¹⁶ that is
    // 8.4e-9, below half of fp16's smallest subnormal (2⁻²⁵): every element underflows, counted
    // in weight_stats (non-zero in FP32, zero after rounding). With x = 2⁻¹² the elements are
    // subnormals of fp16 and nothing underflows.
    void weightGradientUnderflowIsCounted_data() {
        QTest::addColumn<float>("x");
        QTest::addColumn<bool>("flushes");
        QTest::addColumn<Conv2dGeometry>("g");
        for (const auto& [path, g] : {std::pair{"im2col", geometry(2, 5, 5, 3, 3, 1, 0)},
                                      std::pair{"direct", geometry(16, 5, 5, 16, 3, 1, 0)}}) {
            QTest::addRow("2^-16: flushes, %s", path) << std::ldexp(1.0f, -16) << true << g;
            QTest::addRow("2^-12: subnormal, %s", path) << std::ldexp(1.0f, -12) << false << g;
        }
    }
    void weightGradientUnderflowIsCounted() {
        QFETCH(float, x);
        QFETCH(bool, flushes);
        QFETCH(Conv2dGeometry, g);
        CpuBackend be;
        const int batch = 1;
        Conv cv(be, g, batch, false, Format::fp16, Format::fp16, 51);
        const std::vector<float> xv(static_cast<std::size_t>(cv.g.in_size()), x);
        const std::vector<float> dyv(static_cast<std::size_t>(cv.g.out_size()), std::ldexp(1.0f, -14));
        be.upload(*cv.x, xv.data(), cv.g.in_size());
        be.upload(*cv.dy, dyv.data(), cv.g.out_size());
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);  // fills saved_input, the backward's x
        RoundingStats stats;
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, &stats);
        const std::int64_t n_w = cv.g.out_channels * cv.g.patch();
        const auto gw = read(be, *cv.gw);
        QCOMPARE(stats.elements, n_w);
        QCOMPARE(stats.zeros_before, std::int64_t{0});
        if (flushes) {
            QVERIFY(std::all_of(gw.begin(), gw.end(), [](float v) { return v == 0.0f; }));
            QCOMPARE(stats.underflows(), n_w);
        } else {
            QCOMPARE_EXACT(gw[0], round_to(Format::fp16, 9 * x * std::ldexp(1.0f, -14)));  // fp16 subnormals
            QCOMPARE(stats.underflows(), std::int64_t{0});
            QCOMPARE(stats.subnormals, n_w);
        }
    }

    // Gradient tracing: an output gradient that flushed to zero at its own rounding (the loss
    // wrote 1e-9 into an fp16 tensor) leaves dW zero; with tracing the zero counts as an
    // underflow (its FP32 reference, from the unrounded dy, is not zero), without it as a zero
    // that was already zero.
    void tracedOutputGradientFlushCountsAsUnderflow_data() { add_path_rows(geometry(2, 5, 4, 3, 3, 1, 1)); }
    void tracedOutputGradientFlushCountsAsUnderflow() {
        QFETCH(Conv2dGeometry, g);
        CpuBackend be;
        const int batch = 2;
        Conv cv(be, g, batch, true, Format::fp16, Format::fp16, 61);
        const std::int64_t n = batch * cv.g.out_size();
        const std::vector<float> targets(static_cast<std::size_t>(n), -1e-9f * static_cast<float>(n) / 2);
        const std::int64_t n_w = cv.g.out_channels * cv.g.patch();
        auto zeros = make(be, batch, cv.g.out_size(), Format::fp16, "zeros");
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        for (bool tracing : {true, false}) {
            be.set_gradient_tracing(tracing);
            be.mse(*zeros, targets.data(), batch, 1.0f, cv.dy.get());  // dy = 1e-9 -> 0 in fp16
            const auto dy = read(be, *cv.dy);
            QVERIFY(std::all_of(dy.begin(), dy.end(), [](float v) { return v == 0.0f; }));
            RoundingStats stats;
            be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, &stats);
            QCOMPARE(stats.zeros, n_w);
            QCOMPARE(stats.underflows(), tracing ? n_w : 0);
        }
    }

    // fp8-e4m3 with the hybrid recipe's first step (every scale 1): x and W saturate-cast to
    // e4m3 (into saved_input and weight_compute), dy to e5m2; y, dX and dW the FP32 sums
    // rounded to their formats; dB the sum of the unquantised dy; the amaxes recorded.
    // The forward's epilogue rounding y in the registers before the store (cpu_rounded_store.h)
    // gives the bits of the epilogue that stores, reads back and rounds: on im2col's rows and on
    // oneDNN's blocked result (8×8 tiles, the channels past the last eight of a block, positions
    // past a multiple of 8 and past a 64-position tile), with and without bias, FP8's dequant,
    // outputs that overflow fp16 (a bias of 7e4) and outputs below its normals. Tried: an 8×8
    // tile whose tail is stored in full fails every direct row (it writes over the next channel's
    // positions); the channels past the last eight left unrounded fails the 28-channel rows.
    void epilogueRoundedInTheRegistersIsTheTwoPassesBits_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("output");
        QTest::addColumn<Conv2dGeometry>("g");
        QTest::addColumn<bool>("bias");
        const std::pair<const char*, Conv2dGeometry> shapes[] = {
            {"im2col 12 positions", geometry(3, 7, 6, 5, 3, 2, 1)},
            {"direct 12 positions", geometry(16, 7, 6, 16, 3, 2, 1)},
            {"direct 28 channels 90 positions", geometry(16, 9, 10, 28, 3, 1, 1)}};
        for (const auto& [name, g] : shapes)
            for (bool bias : {true, false}) {
                const char* b = bias ? "bias" : "no bias";
                QTest::addRow("fp32 %s %s", name, b) << Format::fp32 << Format::fp32 << g << bias;
                QTest::addRow("bf16 %s %s", name, b) << Format::bf16 << Format::bf16 << g << bias;
                QTest::addRow("fp16 %s %s", name, b) << Format::fp16 << Format::fp16 << g << bias;
                QTest::addRow("fp8 to fp16 %s %s", name, b) << Format::fp8_e4m3 << Format::fp16 << g << bias;
            }
    }
    void epilogueRoundedInTheRegistersIsTheTwoPassesBits() {
        QFETCH(Format, compute);
        QFETCH(Format, output);
        QFETCH(Conv2dGeometry, g);
        QFETCH(bool, bias);
        const int batch = 3;
        std::vector<float> y[2];
        for (bool lanes : {false, true}) {
            CpuBackend be;
            be.set_rounds_in_lanes(lanes);
            Conv cv(be, g, batch + 1, bias, compute, output, 81);
            if (bias) {
                std::vector<float> b = cv.bv;
                b[0] = 7.0e4f;   // past fp16's largest value
                b[1] = 1.0e-6f;  // with x of channel 1 scaled down below: under fp16's normals
                be.upload(*cv.b, b.data(), static_cast<std::int64_t>(b.size()));
            }
            std::vector<float> w = cv.wv;
            for (std::int64_t k = 0; k < g.patch(); ++k) w[static_cast<std::size_t>(g.patch() + k)] *= 1.0e-6f;
            be.upload(*cv.w, w.data(), static_cast<std::int64_t>(w.size()));
            const std::vector<float> marker(static_cast<std::size_t>((batch + 1) * g.out_size()), 5.0f);
            be.upload(*cv.y, marker.data(), static_cast<std::int64_t>(marker.size()));
            be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
            y[lanes] = read(be, *cv.y);
            for (std::size_t i = static_cast<std::size_t>(batch * g.out_size()); i < y[lanes].size(); ++i)
                QCOMPARE(y[lanes][i], 5.0f);  // the sample past the batch untouched
        }
        QVERIFY(all_in_format(output, y[1]));
        const QString diff = conv_test::first_bit_difference("y", y[1], y[0]);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    void fp8UsesTheScaledCastsOfLinear_data() { add_path_rows(geometry(2, 6, 5, 3, 3, 2, 1)); }
    void fp8UsesTheScaledCastsOfLinear() {
        QFETCH(Conv2dGeometry, g);
        CpuBackend be;
        const int batch = 3;
        Conv cv(be, g, batch, true, Format::fp8_e4m3, Format::fp16, 71);
        be.conv2d_forward(cv.t, *cv.x, *cv.y, batch, true);
        const auto xq = rounded(Format::fp8_e4m3, cv.xv), wq = rounded(Format::fp8_e4m3, cv.wv);
        QCOMPARE(read(be, *cv.xs), xq);
        QCOMPARE(read(be, *cv.wc), wq);
        const auto y = read(be, *cv.y);
        QVERIFY(all_in_format(Format::fp16, y));
        const auto ref = conv_ref(cv.g, batch, to_double(xq), to_double(wq), nullptr);
        const double ulp = format_info(Format::fp16).epsilon;
        const std::int64_t positions = cv.g.out_h() * cv.g.out_w();
        for (std::size_t i = 0; i < ref.size(); ++i) {
            const std::int64_t channel = (static_cast<std::int64_t>(i) % cv.g.out_size()) / positions;
            const double want = round_to(Format::fp16, static_cast<float>(ref[i]) + cv.bv[static_cast<std::size_t>(channel)]);
            QVERIFY2(std::abs(y[i] - want) <= std::abs(want) * ulp * 1.01 + 1e-6,
                     qPrintable(QString("y[%1] = %2, reference %3").arg(i).arg(y[i]).arg(want)));
        }

        const auto dyv = random_values(static_cast<std::size_t>(batch * cv.g.out_size()), 1.0f, 75);
        be.upload(*cv.dy, dyv.data(), static_cast<std::int64_t>(dyv.size()));
        be.conv2d_backward(cv.t, *cv.x, *cv.dy, cv.dx.get(), batch, nullptr);
        const auto dy = read(be, *cv.dy);
        const auto dyq = to_double(rounded(Format::fp8_e5m2, dy));
        const auto xd = to_double(xq), wd = to_double(wq);
        const auto fd_w = conv_test::finite_differences(
            wd, [&](const std::vector<double>& v) { return conv_test::dot(conv_ref(cv.g, batch, xd, v, nullptr), dyq); }, 1e-2);
        const auto gw = read(be, *cv.gw);
        for (std::size_t i = 0; i < fd_w.size(); ++i) {
            const double want = round_to(Format::fp16, static_cast<float>(fd_w[i]));
            QVERIFY2(std::abs(gw[i] - want) <= std::abs(want) * ulp * 1.01 + 1e-5,
                     qPrintable(QString("dW[%1] = %2, reference %3").arg(i).arg(gw[i]).arg(want)));
        }
        const auto gb = read(be, *cv.gb);
        for (std::int64_t o = 0; o < cv.g.out_channels; ++o) {
            double sum = 0;
            for (int n = 0; n < batch; ++n)
                for (std::int64_t q = 0; q < positions; ++q) sum += dy[static_cast<std::size_t>(n * cv.g.out_size() + o * positions + q)];
            const double want = round_to(Format::fp16, static_cast<float>(sum));
            QVERIFY(std::abs(gb[static_cast<std::size_t>(o)] - want) <= std::abs(want) * ulp * 1.01 + 1e-5);
        }

        be.update_fp8_scales(*cv.fp8);
        auto amax = [](const std::vector<float>& v) {
            float m = 0;
            for (float e : v) m = std::max(m, std::abs(e));
            return m;
        };
        QCOMPARE(cv.fp8->snapshot(Fp8Role::input).amax_history.front(), amax(cv.xv));
        QCOMPARE(cv.fp8->snapshot(Fp8Role::weight).amax_history.front(), amax(cv.wv));
        QCOMPARE(cv.fp8->snapshot(Fp8Role::grad_output).amax_history.front(), amax(dy));
        QCOMPARE(cv.fp8->snapshot(Fp8Role::input).scale, 448.0f / amax(cv.xv));
    }
};

QTEST_APPLESS_MAIN(TestCpuConv)
#include "test_cpu_conv.moc"
