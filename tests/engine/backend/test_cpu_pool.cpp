// The CPU backend's pools against independent references written here in double: max and
// average pools on odd sizes, strides 1 and 2 (overlapping windows), padding 0 and 1, batches 1
// and 3; global average pool; every backward against central finite differences of its
// reference; maxpool's ties (the first position of the window in row-major order, as PyTorch)
// and NaN; the rounding of outputs and gradients to fp16 and bf16 (selections exact, sums in
// FP32 then rounded); and the max pool's backward carried through a ReLU (maxpool2d_relu_backward)
// against the two ops. docs/numerics.md, "Convolutional ops".
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_pool_kernels.h"
#include "numeric/convert.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::all_in_format;
using conv_test::make;
using conv_test::make_with;
using conv_test::mismatch;
using conv_test::to_double;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {

Pool2dGeometry pool(int c, int h, int w, int k, int s, int p) {
    Pool2dGeometry g;
    g.channels = c, g.in_h = h, g.in_w = w, g.kernel = k, g.stride = s, g.padding = p;
    return g;
}

// Over the window of each output, clipped to the image: the maximum, or the sum / k².
std::vector<double> pool_ref(const Pool2dGeometry& g, int batch, const std::vector<double>& x, bool max) {
    const std::int64_t oh = g.out_h(), ow = g.out_w();
    std::vector<double> y(static_cast<std::size_t>(batch * g.out_size()));
    for (int n = 0; n < batch; ++n)
        for (std::int64_t c = 0; c < g.channels; ++c)
            for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                    double m = -std::numeric_limits<double>::infinity(), sum = 0;
                    for (std::int64_t ky = 0; ky < g.kernel; ++ky)
                        for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
                            const std::int64_t iy = oy * g.stride - g.padding + ky;
                            const std::int64_t ix = ox * g.stride - g.padding + kx;
                            if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                            const double v = x[static_cast<std::size_t>(n * g.in_size() + (c * g.in_h + iy) * g.in_w + ix)];
                            m = std::max(m, v);
                            sum += v;
                        }
                    y[static_cast<std::size_t>(n * g.out_size() + (c * oh + oy) * ow + ox)] =
                        max ? m : sum / static_cast<double>(g.kernel * g.kernel);
                }
    return y;
}

std::vector<double> global_ref(int channels, int spatial, int batch, const std::vector<double>& x) {
    std::vector<double> y(static_cast<std::size_t>(batch * channels));
    for (int n = 0; n < batch; ++n)
        for (int c = 0; c < channels; ++c) {
            double sum = 0;
            for (int p = 0; p < spatial; ++p) sum += x[static_cast<std::size_t>((n * channels + c) * spatial + p)];
            y[static_cast<std::size_t>(n * channels + c)] = sum / spatial;
        }
    return y;
}

void add_pool_rows() {
    QTest::addColumn<int>("c");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("w");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("s");
    QTest::addColumn<int>("p");
    QTest::addColumn<int>("batch");
    QTest::newRow("k2 s2 p0 b3 odd") << 2 << 7 << 5 << 2 << 2 << 0 << 3;
    QTest::newRow("k2 s2 p1 b1") << 3 << 6 << 6 << 2 << 2 << 1 << 1;
    QTest::newRow("k3 s2 p1 b3") << 2 << 7 << 9 << 3 << 2 << 1 << 3;
    QTest::newRow("k3 s1 p1 b1 overlapping") << 2 << 5 << 7 << 3 << 1 << 1 << 1;
    QTest::newRow("k3 s1 p0 b3 overlapping") << 1 << 6 << 5 << 3 << 1 << 0 << 3;
    QTest::newRow("k3 s3 p0 b1 leftover") << 2 << 8 << 7 << 3 << 3 << 0 << 1;
}

Pool2dGeometry fetch_pool() {
    QFETCH(int, c);
    QFETCH(int, h);
    QFETCH(int, w);
    QFETCH(int, k);
    QFETCH(int, s);
    QFETCH(int, p);
    return pool(c, h, w, k, s, p);
}

}  // namespace

class TestCpuPool : public QObject {
    Q_OBJECT
private slots:
    // FP32 forwards against the references (max exact, average within FP32 summation) and the
    // backwards against central differences of Σ y·r (r = dy): dx is the gradient of the
    // reference, windows overlapping or not.
    void poolsMatchReferences_data() { add_pool_rows(); }
    void poolsMatchReferences() {
        const Pool2dGeometry g = fetch_pool();
        QFETCH(int, batch);
        CpuBackend be;
        const auto xv = random_values(static_cast<std::size_t>(batch * g.in_size()), 1.0f, 3);
        const auto rv = random_values(static_cast<std::size_t>(batch * g.out_size()), 1.0f, 4);
        auto x = make_with(be, batch, g.in_size(), Format::fp32, xv, "x");
        auto dy = make_with(be, batch, g.out_size(), Format::fp32, rv, "dy");
        auto y = make(be, batch, g.out_size(), Format::fp32, "y");
        auto dx = make(be, batch, g.in_size(), Format::fp32, "dx");
        const auto xd = to_double(xv), r = to_double(rv);
        for (bool max : {true, false}) {
            if (max) {
                be.maxpool2d_forward(g, *x, *y, batch);
                be.maxpool2d_backward(g, *x, *y, *dy, *dx, batch);
            } else {
                be.avgpool2d_forward(g, *x, *y, batch);
                be.avgpool2d_backward(g, *dy, *dx, batch);
            }
            QString diff = mismatch(max ? "max y" : "avg y", read(be, *y), pool_ref(g, batch, xd, max), max ? 0.0 : 1e-6);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
            // Small steps: no maximum changes place (random values have no ties).
            const auto fd = conv_test::finite_differences(
                xd, [&](const std::vector<double>& v) { return conv_test::dot(pool_ref(g, batch, v, max), r); }, 1e-7);
            diff = mismatch(max ? "max dx" : "avg dx", read(be, *dx), fd, 1e-5);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
        }
    }

    void globalAvgpoolMatchesReference_data() {
        QTest::addColumn<int>("channels");
        QTest::addColumn<int>("spatial");
        QTest::addColumn<int>("batch");
        QTest::newRow("3x(5x7) b3") << 3 << 35 << 3;
        QTest::newRow("4x(3x3) b1") << 4 << 9 << 1;
        QTest::newRow("2x(1x1) b3") << 2 << 1 << 3;
    }
    void globalAvgpoolMatchesReference() {
        QFETCH(int, channels);
        QFETCH(int, spatial);
        QFETCH(int, batch);
        CpuBackend be;
        const auto xv = random_values(static_cast<std::size_t>(batch * channels * spatial), 1.0f, 5);
        const auto rv = random_values(static_cast<std::size_t>(batch * channels), 1.0f, 6);
        auto x = make_with(be, batch, channels * spatial, Format::fp32, xv, "x");
        auto dy = make_with(be, batch, channels, Format::fp32, rv, "dy");
        auto y = make(be, batch, channels, Format::fp32, "y");
        auto dx = make(be, batch, channels * spatial, Format::fp32, "dx");
        be.global_avgpool_forward(channels, spatial, *x, *y, batch);
        be.global_avgpool_backward(channels, spatial, *dy, *dx, batch);
        const auto xd = to_double(xv), r = to_double(rv);
        QString diff = mismatch("y", read(be, *y), global_ref(channels, spatial, batch, xd), 1e-6);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        const auto fd = conv_test::finite_differences(
            xd, [&](const std::vector<double>& v) { return conv_test::dot(global_ref(channels, spatial, batch, v), r); }, 1e-3);
        diff = mismatch("dx", read(be, *dx), fd, 1e-6);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // Equal values in a window: the maximum is the first in row-major order of the window (the
    // image's part of it), and the backward routes the gradient there, as PyTorch does. A NaN is
    // the maximum of its window, its gradient going to it.
    void maxpoolTiesPickTheFirstPosition() {
        CpuBackend be;
        const Pool2dGeometry g = pool(1, 5, 5, 3, 2, 1);  // windows clipped by the padding at the edges
        std::vector<float> xv(25, 2.0f);
        auto x = make_with(be, 1, 25, Format::fp32, xv, "x");
        auto y = make(be, 1, g.out_size(), Format::fp32, "y");
        std::vector<float> ones(static_cast<std::size_t>(g.out_size()), 1.0f);
        auto dy = make_with(be, 1, g.out_size(), Format::fp32, ones, "dy");
        auto dx = make(be, 1, 25, Format::fp32, "dx");
        be.maxpool2d_forward(g, *x, *y, 1);
        be.maxpool2d_backward(g, *x, *y, *dy, *dx, 1);
        // Output (oy, ox) covers rows 2oy-1 .. 2oy+1 clipped to [0, 5): its first position is
        // (max(2oy-1, 0), max(2ox-1, 0)).
        std::vector<float> want(25, 0.0f);
        for (int oy = 0; oy < g.out_h(); ++oy)
            for (int ox = 0; ox < g.out_w(); ++ox) want[std::max(2 * oy - 1, 0) * 5 + std::max(2 * ox - 1, 0)] += 1.0f;
        QCOMPARE(read(be, *dx), want);
        QCOMPARE(read(be, *y), std::vector<float>(static_cast<std::size_t>(g.out_size()), 2.0f));

        // A NaN at (2, 2) is the maximum of the four windows holding it, and gets their gradient.
        xv[2 * 5 + 2] = std::numeric_limits<float>::quiet_NaN();
        xv[2 * 5 + 3] = 100.0f;
        be.upload(*x, xv.data(), 25);
        be.maxpool2d_forward(g, *x, *y, 1);
        be.maxpool2d_backward(g, *x, *y, *dy, *dx, 1);
        const auto yv = read(be, *y), dxv = read(be, *dx);
        for (int oy = 0; oy < g.out_h(); ++oy)
            for (int ox = 0; ox < g.out_w(); ++ox)
                QCOMPARE(std::isnan(yv[static_cast<std::size_t>(oy * g.out_w() + ox)]), oy == 1 && ox == 1);
        QCOMPARE(dxv[2 * 5 + 2], 1.0f);  // only the window (1, 1) holds (2, 2) with stride 2
        QCOMPARE(dxv[2 * 5 + 3], 1.0f);  // (1, 2) holds columns 3 .. 5: 100 wins there
    }

    // The 2×2 stride-2 fast path selects what the general path selects, bit for bit: values
    // drawn from a small set so that windows hold ties, +0 next to -0, ±inf and NaNs of
    // different payloads (the first NaN wins); even and odd image sizes (an odd size leaves a
    // row or column outside every window, whose dx is +0); dy holding -0 (routed as 0 + dy);
    // rows wide enough for the 8-output AVX2 blocks and their scalar tails; routed through a ReLU
    // too.
    void maxpoolFastPathMatchesGeneralPath_data() {
        QTest::addColumn<int>("h");
        QTest::addColumn<int>("w");
        QTest::newRow("28x28") << 28 << 28;
        QTest::newRow("7x5") << 7 << 5;
        QTest::newRow("2x9") << 2 << 9;
        QTest::newRow("6x40 (AVX2 blocks and a tail)") << 6 << 40;
        QTest::newRow("5x35") << 5 << 35;
        QTest::newRow("14x14 (seven windows a row: all in the staged tail)") << 14 << 14;
        QTest::newRow("4x32 (no tail)") << 4 << 32;
    }
    void maxpoolFastPathMatchesGeneralPath() {
        QFETCH(int, h);
        QFETCH(int, w);
        const Pool2dGeometry g = pool(3, h, w, 2, 2, 0);
        QVERIFY(cpu_detail::maxpool_fast_path(g));
        const int batch = 5;
        const float inf = std::numeric_limits<float>::infinity();
        std::uint32_t nan_a = 0x7fc00001u, nan_b = 0xffc00002u;
        float qa, qb;
        std::memcpy(&qa, &nan_a, 4);
        std::memcpy(&qb, &nan_b, 4);
        const float pool_values[] = {1.0f, 1.0f, 2.0f, -1.0f, 0.0f, -0.0f, inf, -inf, qa, qb, 2.0f, -0.0f};
        const std::size_t n_x = static_cast<std::size_t>(batch * g.in_size());
        const std::size_t n_y = static_cast<std::size_t>(batch * g.out_size());
        std::vector<float> x(n_x), dy(n_y);
        std::uint32_t state = 12345u;
        auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8; };
        for (auto& v : x) v = pool_values[next() % 12];
        const auto dyr = random_values(n_y, 1.0f, 21);
        for (std::size_t i = 0; i < n_y; ++i) dy[i] = next() % 7 == 0 ? -0.0f : dyr[i];
        std::vector<float> y_fast(n_y, 7.0f), y_gen(n_y, 8.0f), dx_fast(n_x, 7.0f), dx_gen(n_x, 8.0f);
        cpu_detail::maxpool_forward(g, x.data(), y_fast.data(), batch);
        cpu_detail::maxpool_forward_general(g, x.data(), y_gen.data(), batch);
        cpu_detail::maxpool_route(g, x.data(), dy.data(), dx_fast.data(), batch);
        cpu_detail::maxpool_route_general(g, x.data(), dy.data(), dx_gen.data(), batch);
        QCOMPARE(std::memcmp(y_fast.data(), y_gen.data(), n_y * sizeof(float)), 0);
        QCOMPARE(std::memcmp(dx_fast.data(), dx_gen.data(), n_x * sizeof(float)), 0);
        // Through a ReLU (x its output): the same selection, the same maxima stopped.
        cpu_detail::maxpool_route(g, x.data(), dy.data(), dx_fast.data(), batch, true);
        cpu_detail::maxpool_route_general(g, x.data(), dy.data(), dx_gen.data(), batch, true);
        QCOMPARE(std::memcmp(dx_fast.data(), dx_gen.data(), n_x * sizeof(float)), 0);
        // A side of 1 pixel makes clipped windows: the general path takes them.
        QVERIFY(!cpu_detail::maxpool_fast_path(pool(3, 1, 6, 2, 2, 0)));
    }

    // fp16 and bf16 tensors: the max pool's outputs are the inputs' values (a selection), the
    // average pools' the FP32 sum in row-major window order / k² rounded once, the gradients
    // dy / k² summed in FP32 then rounded; all are values of the format.
    void poolsRoundToTheirFormats_data() {
        QTest::addColumn<Format>("format");
        QTest::newRow("fp16") << Format::fp16;
        QTest::newRow("bf16") << Format::bf16;
    }
    void poolsRoundToTheirFormats() {
        QFETCH(Format, format);
        CpuBackend be;
        const int batch = 3;
        const Pool2dGeometry g = pool(2, 7, 6, 3, 2, 1);
        const auto xv = conv_test::rounded(format, random_values(static_cast<std::size_t>(batch * g.in_size()), 1.0f, 7));
        const auto dyv = random_values(static_cast<std::size_t>(batch * g.out_size()), 1.0f, 8);
        auto x = make_with(be, batch, g.in_size(), format, xv, "x");
        auto dy = make_with(be, batch, g.out_size(), format, dyv, "dy");
        auto y = make(be, batch, g.out_size(), format, "y");
        auto dx = make(be, batch, g.in_size(), format, "dx");
        be.maxpool2d_forward(g, *x, *y, batch);
        const auto ymax = read(be, *y);
        const auto maxref = pool_ref(g, batch, to_double(xv), true);
        for (std::size_t i = 0; i < maxref.size(); ++i) QCOMPARE(static_cast<double>(ymax[i]), maxref[i]);

        be.avgpool2d_forward(g, *x, *y, batch);
        be.avgpool2d_backward(g, *dy, *dx, batch);
        const auto yavg = read(be, *y), dxv = read(be, *dx), dyr = read(be, *dy);
        QVERIFY(all_in_format(format, yavg));
        QVERIFY(all_in_format(format, dxv));
        const std::int64_t oh = g.out_h(), ow = g.out_w();
        std::vector<float> dx_fp32(static_cast<std::size_t>(batch * g.in_size()), 0.0f);
        for (int n = 0; n < batch; ++n)
            for (std::int64_t c = 0; c < g.channels; ++c)
                for (std::int64_t oy = 0; oy < oh; ++oy)
                    for (std::int64_t ox = 0; ox < ow; ++ox) {
                        float sum = 0.0f;
                        const std::size_t o = static_cast<std::size_t>(n * g.out_size() + (c * oh + oy) * ow + ox);
                        const float share = dyr[o] / 9.0f;
                        for (std::int64_t iy = std::max<std::int64_t>(oy * 2 - 1, 0); iy < std::min<std::int64_t>(oy * 2 + 2, g.in_h); ++iy)
                            for (std::int64_t ix = std::max<std::int64_t>(ox * 2 - 1, 0); ix < std::min<std::int64_t>(ox * 2 + 2, g.in_w); ++ix) {
                                const std::size_t i = static_cast<std::size_t>(n * g.in_size() + (c * g.in_h + iy) * g.in_w + ix);
                                sum += xv[i];
                                dx_fp32[i] += share;
                            }
                        QCOMPARE(yavg[o], round_to(format, sum / 9.0f));
                    }
        QCOMPARE(dxv, conv_test::rounded(format, dx_fp32));

        const int spatial = 42;
        auto xg = make_with(be, batch, 2 * spatial, format, conv_test::rounded(format, random_values(static_cast<std::size_t>(batch * 2 * spatial), 1.0f, 9)), "xg");
        auto yg = make(be, batch, 2, format, "yg");
        be.global_avgpool_forward(2, spatial, *xg, *yg, batch);
        const auto xgv = read(be, *xg), ygv = read(be, *yg);
        for (int i = 0; i < batch * 2; ++i) {
            float sum = 0.0f;
            for (int p = 0; p < spatial; ++p) sum += xgv[static_cast<std::size_t>(i * spatial + p)];
            QCOMPARE(ygv[static_cast<std::size_t>(i)], round_to(format, sum / static_cast<float>(spatial)));
        }
    }

    // maxpool2d_relu_forward(z) is maxpool2d_forward(relu(z)), and maxpool2d_relu_backward(z) is
    // maxpool2d_backward(relu(z)) followed by activation_backward(relu), bit for bit (given z or
    // relu(z)). z from a small set of values so that windows hold ties, ±0, negatives only, ±inf
    // and NaNs of two payloads (a NaN maximum passes the ReLU); dy with -0 and NaN (stopped as
    // the ReLU stops it); the 2x2 fast path on even and odd sizes and the general path,
    // overlapping windows and padding included; FP32, BF16 and FP16 tensors; one thread and two
    // (a batch of more than 2^16 values shares its samples out).
    void reluAndMaxpoolFusedAreTheTwoOps_data() {
        QTest::addColumn<int>("h");
        QTest::addColumn<int>("w");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("stride");
        QTest::addColumn<int>("pad");
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("threads");
        for (const Format f : {Format::fp32, Format::bf16, Format::fp16}) {
            const std::string name(format_info(f).name);
            for (const int threads : {1, 2}) {
                const std::string t = threads == 1 ? ", 1 thread" : ", 2 threads";
                QTest::newRow(("2x2 on 28x28, " + name + t).c_str()) << 28 << 28 << 2 << 2 << 0 << f << threads;
                QTest::newRow(("2x2 on 7x5, " + name + t).c_str()) << 7 << 5 << 2 << 2 << 0 << f << threads;
                QTest::newRow(("3x3 stride 2 pad 1 on 9x8, " + name + t).c_str()) << 9 << 8 << 3 << 2 << 1 << f << threads;
                QTest::newRow(("3x3 stride 1 on 6x6, " + name + t).c_str()) << 6 << 6 << 3 << 1 << 0 << f << threads;
            }
        }
    }
    void reluAndMaxpoolFusedAreTheTwoOps() {
        QFETCH(int, h);
        QFETCH(int, w);
        QFETCH(int, k);
        QFETCH(int, stride);
        QFETCH(int, pad);
        QFETCH(Format, format);
        QFETCH(int, threads);
        CpuBackend be;
        be.matmul().set_threads(threads);
        const Pool2dGeometry g = pool(4, h, w, k, stride, pad);
        const int batch = static_cast<int>((std::int64_t{1} << 17) / g.in_size()) + 1;
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        const float other_nan = -nan;
        const float x_values[] = {1.0f, 1.0f, 2.0f, -1.0f, -3.0f, 0.0f, -0.0f, 0.5f, inf, -inf, nan, -2.0f, other_nan};
        const std::size_t n_x = static_cast<std::size_t>(batch * g.in_size());
        const std::size_t n_y = static_cast<std::size_t>(batch * g.out_size());
        std::vector<float> xv(n_x), dyv(n_y);
        std::uint32_t state = 777u;
        auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8; };
        for (auto& v : xv) v = x_values[next() % 13];
        const auto dyr = conv_test::rounded(format, random_values(n_y, 2.0f, 31));
        for (std::size_t i = 0; i < n_y; ++i) dyv[i] = next() % 9 == 0 ? -0.0f : next() % 50 == 0 ? nan : dyr[i];
        auto z = make_with(be, batch, g.in_size(), format, xv, "z");
        auto x = make(be, batch, g.in_size(), format, "relu(z)");
        auto dy = make_with(be, batch, g.out_size(), format, dyv, "dy");
        auto y = make(be, batch, g.out_size(), format, "y");
        auto y_fused = make(be, batch, g.out_size(), format, "y fused");
        auto pooled = make(be, batch, g.in_size(), format, "pooled");
        auto two_ops = make(be, batch, g.in_size(), format, "two_ops");
        auto fused = make(be, batch, g.in_size(), format, "fused");
        be.activation_forward(Activation::relu, *z, *x, batch);
        be.maxpool2d_forward(g, *x, *y, batch);
        be.maxpool2d_relu_forward(g, *z, *y_fused, batch);
        const auto yf = read(be, *y_fused), yt = read(be, *y);
        QCOMPARE(std::memcmp(yf.data(), yt.data(), n_y * sizeof(float)), 0);
        be.maxpool2d_backward(g, *x, *y, *dy, *pooled, batch);
        be.activation_backward(Activation::relu, *z, *x, *pooled, *two_ops, batch);
        const auto b = read(be, *two_ops);
        be.maxpool2d_relu_backward(g, *z, *y, *dy, *fused, batch);
        const auto a = read(be, *fused);
        QCOMPARE(std::memcmp(a.data(), b.data(), n_x * sizeof(float)), 0);
        be.maxpool2d_relu_backward(g, *x, *y, *dy, *fused, batch);  // from the ReLU's output
        QCOMPARE(std::memcmp(read(be, *fused).data(), b.data(), n_x * sizeof(float)), 0);
        // The case is not empty: some gradient passes, some is stopped by the ReLU.
        std::size_t passed = 0, stopped = 0;
        const auto p = read(be, *pooled);
        for (std::size_t i = 0; i < n_x; ++i) {
            passed += a[i] != 0.0f;
            stopped += p[i] != 0.0f && a[i] == 0.0f;
        }
        QVERIFY(passed > 0 && stopped > 0);
    }
};

QTEST_APPLESS_MAIN(TestCpuPool)
#include "test_cpu_pool.moc"
