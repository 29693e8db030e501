// The CPU backend's operations against independent double-precision references: the linear
// layer's rounding points (operands cast to the compute format, FP32 accumulation, output and
// gradients rounded to their formats, underflow counted), activations (relu's gradient passing
// through NaN as torch's does), losses, the fused unscale and check, SGD/AdamW (torch's formulas,
// written out here in double), lost updates (lost to the stored precision: counted over the
// updates that change a weight in FP32), memory accounting, and the backend factory.
#include <QtTest>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "backend_test_util.h"
#include "backend/backend.h"
#include "backend/bias_grad_order.h"
#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "numeric/convert.h"
#include "numeric/elementary.h"
#include "numeric/stats.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::read;
using backend_test::random_values;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::Activation)

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

std::unique_ptr<Tensor> make(Backend& b, std::int64_t rows, std::int64_t cols, Format f,
                             MemoryCategory c = MemoryCategory::workspace, const char* name = "t") {
    return b.allocate(TensorDesc{name, rows, cols, f, c});
}

std::vector<float> rounded(Format f, std::vector<float> v) {
    for (auto& x : v) x = round_to(f, x);
    return v;
}

bool all_in_format(Format f, const std::vector<float>& v) {
    for (float x : v)
        if (!(round_to(f, x) == x || (std::isnan(x) && std::isnan(round_to(f, x))))) return false;
    return true;
}

// One linear layer's tensors in a given compute format, output format `out_format`.
struct LinearFixture {
    std::unique_ptr<Tensor> w, b, wc, grad_w, grad_b, x, y, dy, dx;
    LinearTensors t;
    LinearFixture(Backend& be, int batch, int in, int out, Format compute, Format out_format) {
        w = make(be, out, in, Format::fp32, MemoryCategory::master_weights, "w");
        b = make(be, 1, out, Format::fp32, MemoryCategory::master_weights, "b");
        if (compute == Format::fp16 || compute == Format::bf16)
            wc = make(be, out, in, compute, MemoryCategory::parameters, "wc");
        grad_w = make(be, out, in, out_format, MemoryCategory::gradients, "gw");
        grad_b = make(be, 1, out, out_format, MemoryCategory::gradients, "gb");
        x = make(be, batch, in, Format::fp32, MemoryCategory::activations, "x");
        y = make(be, batch, out, out_format, MemoryCategory::activations, "y");
        dy = make(be, batch, out, out_format, MemoryCategory::workspace, "dy");
        dx = make(be, batch, in, out_format, MemoryCategory::workspace, "dx");
        t.compute = compute;
        t.weight = w.get();
        t.weight_compute = wc.get();
        t.bias = b.get();
        t.grad_weight = grad_w.get();
        t.grad_bias = grad_b.get();
    }
};

}  // namespace

class TestCpuOps : public QObject {
    Q_OBJECT
private slots:
    // y = round_out( Σ round_F(x)·round_F(w) + round_out(b) ): compared with a double reference
    // of the same rounding points; FP32 accumulation allows a one-ulp difference of the output.
    void linearForwardRoundsAtTheDesignPoints_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("output");
        QTest::newRow("fp32") << Format::fp32 << Format::fp32;
        QTest::newRow("tf32") << Format::tf32 << Format::fp32;
        QTest::newRow("fp16") << Format::fp16 << Format::fp16;
        QTest::newRow("bf16") << Format::bf16 << Format::bf16;
    }
    void linearForwardRoundsAtTheDesignPoints() {
        QFETCH(Format, compute);
        QFETCH(Format, output);
        CpuBackend be;
        const int B = 7, in = 33, out = 5;
        LinearFixture f(be, B, in, out, compute, output);
        auto xv = random_values(B * in, 1.0f, 1), wv = random_values(in * out, 0.3f, 2), bv = random_values(out, 0.1f, 3);
        be.upload(*f.x, xv.data(), B * in);
        be.upload(*f.w, wv.data(), in * out);
        be.upload(*f.b, bv.data(), out);
        std::unique_ptr<Tensor> bc;
        if (output != Format::fp32) {
            bc = make(be, 1, out, output, MemoryCategory::parameters, "bc");
            f.t.bias_compute = bc.get();
        }
        be.linear_forward(f.t, *f.x, *f.y, B, true);
        const auto y = read(be, *f.y);
        QVERIFY(all_in_format(output, y));
        const auto xr = rounded(compute, xv), wr = rounded(compute, wv), br = rounded(output, bv);
        const double ulp = format_info(output).epsilon;
        for (int r = 0; r < B; ++r) {
            for (int c = 0; c < out; ++c) {
                double acc = 0;
                for (int k = 0; k < in; ++k) acc += static_cast<double>(xr[r * in + k]) * wr[c * in + k];
                const double ref = round_to(output, static_cast<float>(acc + br[c]));
                const double got = y[r * out + c];
                QVERIFY2(std::abs(got - ref) <= std::abs(ref) * ulp * 1.01 + 1e-6,
                         qPrintable(QString("y[%1,%2] = %3, reference %4").arg(r).arg(c).arg(got).arg(ref)));
            }
        }
        if (compute == Format::fp16 || compute == Format::bf16) QVERIFY(all_in_format(compute, read(be, *f.wc)));
    }

    // Backward: dy rounded to F, dX = dy·W and dW = dyᵀ·x in FP32 then rounded to the gradient
    // format, dB = Σ dy; underflow is counted where a non-zero FP32 value rounds to zero.
    void linearBackwardRoundsAndCountsUnderflow() {
        CpuBackend be;
        const int B = 4, in = 6, out = 3;
        LinearFixture f(be, B, in, out, Format::fp16, Format::fp16);
        auto xv = random_values(B * in, 1.0f, 4), wv = random_values(in * out, 0.5f, 5);
        // Tiny gradients: most products fall below fp16's smallest subnormal (2^-24 ≈ 6e-8).
        auto dyv = random_values(B * out, 1e-4f, 6);
        xv[0] = 1e-4f;  // x rounds to fp16 before the product
        be.upload(*f.x, xv.data(), B * in);
        be.upload(*f.w, wv.data(), in * out);
        be.linear_forward(f.t, *f.x, *f.y, B, true);
        be.upload(*f.dy, dyv.data(), B * out);  // rounded to fp16 on upload (dy's format)
        // Scale the x so dW products underflow: x·1e-4 with |x| ~ 1e-4.
        std::vector<float> small_x(B * in);
        for (int i = 0; i < B * in; ++i) small_x[i] = xv[i] * 1e-4f;
        be.upload(*f.x, small_x.data(), B * in);
        RoundingStats stats;
        be.linear_backward(f.t, *f.x, *f.dy, f.dx.get(), B, &stats);

        const auto dy = read(be, *f.dy), gw = read(be, *f.grad_w), gb = read(be, *f.grad_b), dx = read(be, *f.dx);
        const auto xr = rounded(Format::fp16, small_x), wr = rounded(Format::fp16, wv);
        QVERIFY(all_in_format(Format::fp16, gw));
        QVERIFY(all_in_format(Format::fp16, dx));
        std::int64_t expect_underflow = 0, expect_zero_before = 0;
        for (int o = 0; o < out; ++o) {
            for (int i = 0; i < in; ++i) {
                double acc = 0;
                for (int r = 0; r < B; ++r) acc += static_cast<double>(dy[r * out + o]) * xr[r * in + i];
                const float fp32 = static_cast<float>(acc);
                const float ref = round_to(Format::fp16, fp32);
                QCOMPARE(gw[o * in + i], ref);
                expect_zero_before += fp32 == 0.0f;
                expect_underflow += fp32 != 0.0f && ref == 0.0f;
            }
        }
        QVERIFY(expect_underflow > 0);  // the case exercises underflow
        QCOMPARE(stats.elements, std::int64_t{out * in});
        QCOMPARE(stats.zeros_before, expect_zero_before);
        QCOMPARE(stats.underflows(), expect_underflow);
        for (int i = 0; i < in; ++i) {
            for (int r = 0; r < B; ++r) {
                double acc = 0;
                for (int o = 0; o < out; ++o) acc += static_cast<double>(dy[r * out + o]) * wr[o * in + i];
                QCOMPARE(dx[r * in + i], round_to(Format::fp16, static_cast<float>(acc)));
            }
        }
        for (int o = 0; o < out; ++o) {
            float acc = 0;
            for (int r = 0; r < B; ++r) acc += dy[r * out + o];
            QCOMPARE(gb[o], round_to(Format::fp16, acc));
        }
    }

    // dB adds its rows in blocks of bias_grad_block_rows (bias_grad_order.h), each block in row
    // order, then the block sums: the order the CUDA backend adds them in too. A column of 2^24
    // followed by ones tells the orders apart: in one chain each +1 is lost to rounding (2^24 + 1
    // rounds to even), a block of ones keeps its count.
    void biasGradientAddsBlocksOfRows_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<float>("expected");
        constexpr float big = 16777216.0f;  // 2^24: big + 1 rounds back to big
        QTest::newRow("one block: one chain") << 256 << big;
        QTest::newRow("two blocks") << 512 << big + 256.0f;
        QTest::newRow("a partial last block") << 300 << big + 44.0f;
    }
    void biasGradientAddsBlocksOfRows() {
        QFETCH(int, batch);
        QFETCH(float, expected);
        QCOMPARE(bias_grad_block_rows, std::int64_t{256});  // the rows above are laid out for it
        CpuBackend be;
        const int in = 2, out = 2;
        LinearFixture f(be, batch, in, out, Format::fp32, Format::fp32);
        std::vector<float> dy(static_cast<std::size_t>(batch * out), 1.0f);
        dy[0] = 16777216.0f;  // column 0: 2^24, then ones
        const std::vector<float> x(static_cast<std::size_t>(batch * in), 0.5f), w(in * out, 0.25f);
        be.upload(*f.x, x.data(), batch * in);
        be.upload(*f.w, w.data(), in * out);
        be.upload(*f.dy, dy.data(), batch * out);
        be.linear_backward(f.t, *f.x, *f.dy, f.dx.get(), batch, nullptr);
        const auto gb = read(be, *f.grad_b);
        // Exact comparisons: QCOMPARE's fuzzy float compare would take 2^24 + 44 for 2^24.
        const QString got = QString("got %1, expected %2").arg(gb[0], 0, 'f', 1).arg(expected, 0, 'f', 1);
        QVERIFY2(gb[0] == expected, qPrintable(got));
        QVERIFY(gb[1] == static_cast<float>(batch));  // ones throughout: exact in any order
    }

    // With master weights on, the forward reads the weight cast from the FP32 master: a master
    // value between two fp16 values is read as its rounding, and the master keeps its value.
    void forwardCastsFromTheMaster() {
        CpuBackend be;
        LinearFixture f(be, 1, 1, 1, Format::fp16, Format::fp16);
        const float w = 1.0f + 0x1.0p-12f;  // not an fp16 value (fp16 has 10 fraction bits)
        const float x = 1.0f;
        be.upload(*f.w, &w, 1);
        be.upload(*f.x, &x, 1);
        be.linear_forward(f.t, *f.x, *f.y, 1, true);
        QCOMPARE(read(be, *f.y)[0], 1.0f);
        QCOMPARE(read(be, *f.w)[0], w);
        QCOMPARE(read(be, *f.wc)[0], 1.0f);
    }

    void activations_data() {
        QTest::addColumn<Activation>("act");
        QTest::newRow("relu") << Activation::relu;
        QTest::newRow("gelu") << Activation::gelu;
        QTest::newRow("tanh") << Activation::tanh;
    }
    void activations() {
        QFETCH(Activation, act);
        CpuBackend be;
        const int n = 64;
        auto zv = random_values(n, 2.0f, 7);
        auto dav = random_values(n, 1.0f, 8);
        auto z = make(be, 1, n, Format::fp32), a = make(be, 1, n, Format::fp32);
        auto da = make(be, 1, n, Format::fp32), dz = make(be, 1, n, Format::fp32);
        be.upload(*z, zv.data(), n);
        be.upload(*da, dav.data(), n);
        be.activation_forward(act, *z, *a, 1);
        be.activation_backward(act, *z, *a, *da, *dz, 1);
        const auto av = read(be, *a), dzv = read(be, *dz);
        for (int i = 0; i < n; ++i) {
            const double zz = zv[i];
            double ref, deriv;
            switch (act) {
            case Activation::relu: ref = zz > 0 ? zz : 0; deriv = zz > 0 ? 1 : 0; break;
            case Activation::gelu: {
                const double cdf = 0.5 * (1 + std::erf(zz / std::sqrt(2.0)));
                ref = zz * cdf;
                deriv = cdf + zz * std::exp(-zz * zz / 2) / std::sqrt(2 * M_PI);
                break;
            }
            default: ref = std::tanh(zz); deriv = 1 - std::tanh(zz) * std::tanh(zz); break;
            }
            QVERIFY(std::abs(av[i] - ref) <= 1e-6 * (1 + std::abs(ref)));
            QVERIFY(std::abs(dzv[i] - dav[i] * deriv) <= 1e-5 * (1 + std::abs(dav[i] * deriv)));
        }
        // Output rounding: into an fp16 tensor the result is an fp16 value.
        auto a16 = make(be, 1, n, Format::fp16);
        be.activation_forward(act, *z, *a16, 1);
        QVERIFY(all_in_format(Format::fp16, read(be, *a16)));
    }

    // GELU takes erf's near-zero polynomial alone for a block of 16 values all inside its range
    // (cpu_elementwise.cpp): the bits must be those of erf_poly value by value, for blocks all
    // inside, blocks with one value outside at each position (just outside |z/√2| = 0.9, far out,
    // ±inf, NaN), and the values after the last whole block.
    void geluBlocksGiveErfPolysBits() {
        constexpr float inv_sqrt2 = 0.70710678118654752440f, inv_sqrt_2pi = 0.39894228040143267794f;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> outside = {nan, inf, -inf, 7.5f, -3.0f};
        // The two smallest z with |z/√2| not below the limit, and their negatives.
        for (float z = 0.9999f * erf_near_zero_limit / inv_sqrt2; outside.size() < 9; z = std::nextafter(z, inf))
            if (!(z * inv_sqrt2 < erf_near_zero_limit)) {
                outside.push_back(z);
                outside.push_back(-z);
            }
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> inside(-1.2f, 1.2f);
        std::vector<float> zv;
        for (int b = 0; b < 4; ++b)  // blocks all inside
            for (int j = 0; j < 16; ++j) zv.push_back(inside(rng));
        for (float far : outside)
            for (int at = 0; at < 16; ++at)
                for (int j = 0; j < 16; ++j) zv.push_back(j == at ? far : inside(rng));
        for (int j = 0; j < 11; ++j) zv.push_back(j == 5 ? 2.5f : inside(rng));  // the tail
        const int n = static_cast<int>(zv.size());
        const auto dav = random_values(n, 1.0f, 12);
        CpuBackend be;
        auto z = make(be, 1, n, Format::fp32), a = make(be, 1, n, Format::fp32);
        auto da = make(be, 1, n, Format::fp32), dz = make(be, 1, n, Format::fp32);
        be.upload(*z, zv.data(), n);
        be.upload(*da, dav.data(), n);
        be.activation_forward(Activation::gelu, *z, *a, 1);
        be.activation_backward(Activation::gelu, *z, *a, *da, *dz, 1);
        const auto av = read(be, *a), dzv = read(be, *dz);
        const auto same = [](float got, float want) {
            return std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want) ||
                   (std::isnan(got) && std::isnan(want));
        };
        for (std::size_t i = 0; i < zv.size(); ++i) {
            const float zi = zv[i];
            const float cdf = 0.5f * (1.0f + erf_poly(zi * inv_sqrt2));
            const float want_a = 0.5f * zi * (1.0f + erf_poly(zi * inv_sqrt2));
            const float want_dz = dav[i] * (cdf + zi * (inv_sqrt_2pi * exp_poly(-0.5f * zi * zi)));
            QVERIFY2(same(av[i], want_a), qPrintable(QString("gelu(%1) = %2, erf_poly gives %3")
                                                         .arg(zi, 0, 'g', 9).arg(av[i], 0, 'g', 9).arg(want_a, 0, 'g', 9)));
            QVERIFY2(same(dzv[i], want_dz), qPrintable(QString("gelu'(%1)·da = %2, erf_poly gives %3")
                                                           .arg(zi, 0, 'g', 9).arg(dzv[i], 0, 'g', 9).arg(want_dz, 0, 'g', 9)));
        }
    }

    // relu's backward is torch's threshold_backward on the stored output: dz = a <= 0 ? 0 : da.
    // The forward keeps a NaN input, and the gradient passes through it (NaN of either sign), as
    // through any a > 0 (a subnormal, inf); it stops at a <= 0 (±0, negatives, -inf). The pattern
    // is repeated past the vector width so the vector loop and its tail both see every case; in
    // FP32 and in fp16 tensors.
    void reluBackwardPassesWhereOutputIsNaN_data() {
        QTest::addColumn<Format>("format");
        QTest::newRow("fp32") << Format::fp32;
        QTest::newRow("fp16") << Format::fp16;
    }
    void reluBackwardPassesWhereOutputIsNaN() {
        QFETCH(Format, format);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float sub = format == Format::fp16 ? 1e-7f : 1e-40f;  // subnormal in the format
        const std::vector<float> zs = {nan, -nan, 1.0f, -1.0f, 0.0f, -0.0f, inf, -inf, sub, -sub, 2.5f};
        const std::vector<float> passes = {1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1};
        const int reps = 7, k = static_cast<int>(zs.size()), n = reps * k;
        std::vector<float> zv, dav;
        for (int r = 0; r < reps; ++r)
            for (int i = 0; i < k; ++i) {
                zv.push_back(zs[i]);
                dav.push_back(round_to(format, 0.25f * static_cast<float>(1 + i + r * k)));
            }
        CpuBackend be;
        auto z = make(be, 1, n, format), a = make(be, 1, n, format);
        auto da = make(be, 1, n, format), dz = make(be, 1, n, format);
        be.upload(*z, zv.data(), n);
        be.upload(*da, dav.data(), n);
        be.activation_forward(Activation::relu, *z, *a, 1);
        be.activation_backward(Activation::relu, *z, *a, *da, *dz, 1);
        const auto av = read(be, *a), dzv = read(be, *dz);
        for (int i = 0; i < n; ++i) {
            const int c = i % k;
            if (std::isnan(zs[c])) QVERIFY(std::isnan(av[i]));  // the forward keeps NaN
            const float want = passes[c] != 0 ? dav[i] : 0.0f;
            QVERIFY2(std::bit_cast<std::uint32_t>(dzv[i]) == std::bit_cast<std::uint32_t>(want),
                     qPrintable(QString("z = %1: dz %2, want %3").arg(zs[c]).arg(dzv[i]).arg(want)));
        }
    }

    void softmaxCrossEntropyAndMse() {
        CpuBackend be;
        const int B = 5, C = 4;
        auto lv = random_values(B * C, 2.0f, 9);
        std::vector<std::int32_t> labels = {0, 3, 1, 2, 3};
        auto logits = make(be, B, C, Format::fp32), d = make(be, B, C, Format::fp32);
        be.upload(*logits, lv.data(), B * C);
        const float scale = 1024.0f;
        const LossResult r = be.softmax_cross_entropy(*logits, labels.data(), B, scale, d.get());
        const auto dv = read(be, *d);
        double total = 0;
        std::int64_t correct = 0;
        for (int i = 0; i < B; ++i) {
            double m = -1e300;
            int arg = 0;
            for (int c = 0; c < C; ++c)
                if (lv[i * C + c] > m) m = lv[i * C + c], arg = c;
            double s = 0;
            for (int c = 0; c < C; ++c) s += std::exp(lv[i * C + c] - m);
            total += std::log(s) + m - lv[i * C + labels[i]];
            correct += arg == labels[i];
            for (int c = 0; c < C; ++c) {
                const double p = std::exp(lv[i * C + c] - m) / s;
                const double ref = (p - (c == labels[i])) * scale / B;
                QVERIFY(std::abs(dv[i * C + c] - ref) <= 1e-5 * (1 + std::abs(ref)));
            }
        }
        QVERIFY(std::abs(r.loss - total / B) <= 1e-6 * (1 + total / B));
        QCOMPARE(r.correct, correct);

        auto y = make(be, B, 2, Format::fp32), dy = make(be, B, 2, Format::fp32);
        auto yv = random_values(B * 2, 1.0f, 10), tv = random_values(B * 2, 1.0f, 11);
        be.upload(*y, yv.data(), B * 2);
        const LossResult m = be.mse(*y, tv.data(), B, 2.0f, dy.get());
        const auto dyv = read(be, *dy);
        double se = 0;
        for (int i = 0; i < B * 2; ++i) {
            se += (static_cast<double>(yv[i]) - tv[i]) * (static_cast<double>(yv[i]) - tv[i]);
            const double ref = 2.0 * (static_cast<double>(yv[i]) - tv[i]) * 2.0 / (B * 2);
            QVERIFY(std::abs(dyv[i] - ref) <= 1e-6 * (1 + std::abs(ref)));
        }
        QVERIFY(std::abs(m.loss - se / (B * 2)) <= 1e-6 * (1 + se));
        // A label outside the classes is an error naming it.
        labels[2] = 7;
        QVERIFY_THROWS_EXCEPTION(Error, be.softmax_cross_entropy(*logits, labels.data(), B, 1.0f, nullptr));
    }

    // One pass: ×inv_scale in FP32, the first non-finite tensor in the given order, the sum of
    // squares, and per-tensor amax / exponent histogram when asked.
    void unscaleAndCheck() {
        CpuBackend be;
        auto g0 = make(be, 1, 4, Format::fp16), g1 = make(be, 1, 3, Format::fp16), g2 = make(be, 1, 2, Format::fp16);
        const std::vector<float> v0 = {1024, -2048, 0, 512}, v1 = {8, 16, 32}, v2 = {4, 4};
        be.upload(*g0, v0.data(), 4);
        be.upload(*g1, v1.data(), 3);
        be.upload(*g2, v2.data(), 2);
        std::vector<GradientSummary> sums;
        UnscaleResult r = be.unscale_and_check({g0.get(), g1.get(), g2.get()}, 1.0f / 1024, {true, false, true}, &sums);
        QVERIFY(!r.found_nonfinite);
        QCOMPARE(r.first_nonfinite, -1);
        QCOMPARE(read(be, *g0), (std::vector<float>{1, -2, 0, 0.5f}));
        const double expect = 1 + 4 + 0.25 + (64.0 + 256 + 1024) / (1024.0 * 1024) + 2 * 16.0 / (1024.0 * 1024);
        QVERIFY(std::abs(r.sum_squares - expect) < 1e-12);
        QCOMPARE(sums[0].amax, 2.0);
        QCOMPARE(sums[0].exponents.counts[0 - ExponentHistogram::min_exponent], 1u);  // 1
        QCOMPARE(sums[0].exponents.counts[1 - ExponentHistogram::min_exponent], 1u);  // -2
        QCOMPARE(sums[0].exponents.counts[-1 - ExponentHistogram::min_exponent], 1u); // 0.5
        QCOMPARE(sums[2].amax, 4.0 / 1024);

        be.poke(*g1, 1, inf);
        be.poke(*g2, 0, std::nanf(""));
        r = be.unscale_and_check({g0.get(), g1.get(), g2.get()}, 1.0f, {false, false, false}, nullptr);
        QVERIFY(r.found_nonfinite);
        QCOMPARE(r.first_nonfinite, 1);
        QVERIFY(!std::isfinite(r.sum_squares));
    }

    // The vectorised, blocked unscale against the scalar definition, bit for bit: the values
    // (×inv_scale in FP32), the sum of squares (double, four lanes by index mod 4, the last n mod
    // 4 values in lane 0, summed (l0 + l1) + (l2 + l3)) and the summary (exponent_histogram of
    // the unscaled values), over sizes that cross the kernel's vectors and blocks.
    void unscaleMatchesScalarDefinition() {
        CpuBackend be;
        const std::vector<std::int64_t> sizes = {1, 7, 2048, 2053, 70'003};
        for (float inv_scale : {1.0f, 1.0f / 1024, 3.0f}) {
            std::vector<std::unique_ptr<Tensor>> owned;
            std::vector<Tensor*> grads;
            std::vector<std::vector<float>> values;
            for (std::size_t t = 0; t < sizes.size(); ++t) {
                auto v = random_values(static_cast<std::size_t>(sizes[t]), 0.01f, 70 + static_cast<unsigned>(t));
                if (t == 3) v[5] = 0.0f;
                owned.push_back(make(be, 1, sizes[t], Format::fp32, MemoryCategory::gradients));
                be.upload(*owned.back(), v.data(), sizes[t]);
                grads.push_back(owned.back().get());
                values.push_back(std::move(v));
            }
            std::vector<GradientSummary> sums;
            const std::vector<bool> want = {true, false, true, true, true};
            const UnscaleResult r = be.unscale_and_check(grads, inv_scale, want, &sums);
            double total = 0;
            for (std::size_t t = 0; t < sizes.size(); ++t) {
                std::vector<float> u(values[t].size());
                double lane[4] = {0, 0, 0, 0};
                const std::size_t n = u.size();
                for (std::size_t i = 0; i < n; ++i) {
                    u[i] = values[t][i] * inv_scale;
                    const double d = u[i];
                    lane[i < n / 4 * 4 ? i % 4 : 0] += d * d;
                }
                total += (lane[0] + lane[1]) + (lane[2] + lane[3]);
                const auto got = read(be, *grads[t]);
                for (std::size_t i = 0; i < n; ++i)
                    QCOMPARE(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(u[i]));
                if (want[t]) {
                    std::array<std::uint32_t, ExponentHistogram::bins> h{};
                    double amax = 0;
                    std::int64_t nonfinite = 0;
                    exponent_histogram(u.data(), n, 1.0f, ExponentHistogram::min_exponent, h.data(),
                                       ExponentHistogram::bins, &amax, &nonfinite);
                    QVERIFY(sums[t].exponents.counts == h);
                    QCOMPARE(sums[t].amax, amax);
                    QCOMPARE(sums[t].nonfinite, nonfinite);
                }
            }
            QVERIFY(!r.found_nonfinite);
            QCOMPARE(std::bit_cast<std::uint64_t>(r.sum_squares), std::bit_cast<std::uint64_t>(total));
        }
        // A non-finite value far into a large tensor, past the first block, is found.
        auto big = make(be, 1, 70'003, Format::fp32, MemoryCategory::gradients);
        be.poke(*big, 65'000, -inf);
        const UnscaleResult r = be.unscale_and_check({big.get()}, 1.0f, {false}, nullptr);
        QVERIFY(r.found_nonfinite);
        QCOMPARE(r.first_nonfinite, 0);
    }

    // The optimizers work block by block; the result must be elementwise: one large tensor gives,
    // bit for bit, what the same values give split into small tensors, for FP32 and for fp16
    // parameters (master weights off: rounding and lost updates), with the same counts.
    void optimizerBlocksAreElementwise_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<bool>("adamw");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16}) {
            QTest::newRow((std::string(format_name(f)) + " adamw").c_str()) << f << true;
            QTest::newRow((std::string(format_name(f)) + " sgd").c_str()) << f << false;
        }
    }
    void optimizerBlocksAreElementwise() {
        QFETCH(Format, format);
        QFETCH(bool, adamw);
        CpuBackend be;
        const int n = 5000, part = 500;
        const auto pv = random_values(n, 1.0f, 81);
        auto big = make(be, 1, n, format), bg = make(be, 1, n, Format::fp32);
        auto bs1 = make(be, 1, n, Format::fp32), bs2 = make(be, 1, n, Format::fp32);
        be.upload(*big, pv.data(), n);
        std::vector<std::unique_ptr<Tensor>> p, g, s1, s2;
        for (int k = 0; k < n / part; ++k) {
            p.push_back(make(be, 1, part, format));
            g.push_back(make(be, 1, part, Format::fp32));
            s1.push_back(make(be, 1, part, Format::fp32));
            s2.push_back(make(be, 1, part, Format::fp32));
            be.upload(*p.back(), pv.data() + k * part, part);
        }
        for (int step = 1; step <= 3; ++step) {
            auto gv = random_values(n, step == 2 ? 1e-5f : 0.1f, 90 + step);
            be.upload(*bg, gv.data(), n);
            UpdateCounts whole, split;
            if (adamw) {
                const AdamWParams a{1e-3, 0.9, 0.999, 1e-8, 0.01, step};
                whole = be.adamw_step({big.get(), bg.get(), bs1.get(), bs2.get()}, a);
                for (int k = 0; k < n / part; ++k) {
                    be.upload(*g[k], gv.data() + k * part, part);
                    const UpdateCounts c = be.adamw_step({p[k].get(), g[k].get(), s1[k].get(), s2[k].get()}, a);
                    split.nonzero_updates += c.nonzero_updates;
                    split.lost_updates += c.lost_updates;
                }
            } else {
                const SgdParams sp{0.05, 0.9, 1e-4, step == 1};
                whole = be.sgd_step({big.get(), bg.get(), bs1.get(), nullptr}, sp);
                for (int k = 0; k < n / part; ++k) {
                    be.upload(*g[k], gv.data() + k * part, part);
                    const UpdateCounts c = be.sgd_step({p[k].get(), g[k].get(), s1[k].get(), nullptr}, sp);
                    split.nonzero_updates += c.nonzero_updates;
                    split.lost_updates += c.lost_updates;
                }
            }
            QCOMPARE(whole.nonzero_updates, split.nonzero_updates);
            QCOMPARE(whole.lost_updates, split.lost_updates);
            if (format != Format::fp32 && step == 2) QVERIFY(whole.lost_updates > 0);  // tiny updates vanish
            const auto w = read(be, *big);
            for (int k = 0; k < n / part; ++k) {
                const auto q = read(be, *p[k]);
                for (int i = 0; i < part; ++i)
                    QCOMPARE(std::bit_cast<std::uint32_t>(w[static_cast<std::size_t>(k * part + i)]),
                             std::bit_cast<std::uint32_t>(q[static_cast<std::size_t>(i)]));
            }
        }
    }

    // Asking for the weight gradient's statistics changes no gradient: the fused count-and-round
    // gives the values the plain rounding gives, for every compute format (FP8's dequantisation
    // and store are fused too), on a layer larger than the fused passes' blocks.
    void weightStatsDoNotChangeGradients_data() {
        QTest::addColumn<Format>("compute");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3})
            QTest::newRow(format_name(f).data()) << f;
    }
    void weightStatsDoNotChangeGradients() {
        QFETCH(Format, compute);
        const int B = 16, in = 300, out = 20;
        const Format out_format = compute == Format::fp8_e4m3 ? Format::fp16 : (compute == Format::fp16 || compute == Format::bf16 ? compute : Format::fp32);
        std::vector<std::vector<float>> grads[2];
        RoundingStats stats;
        for (int with_stats = 0; with_stats < 2; ++with_stats) {
            CpuBackend be;
            LinearFixture f(be, B, in, out, compute, out_format);
            std::unique_ptr<Tensor> saved, wc;
            std::unique_ptr<Fp8State> fp8;
            if (compute == Format::fp8_e4m3) {
                fp8 = be.create_fp8_state(Fp8Recipe{});
                wc = make(be, out, in, Format::fp8_e4m3, MemoryCategory::parameters, "wq");
                saved = make(be, B, in, Format::fp8_e4m3, MemoryCategory::activations, "xq");
                f.t.fp8 = fp8.get();
                f.t.weight_compute = wc.get();
                f.t.saved_input = saved.get();
            }
            const auto xv = random_values(B * in, 1.0f, 5), wv = random_values(out * in, 0.1f, 6),
                       dyv = random_values(B * out, 1e-3f, 7);
            be.upload(*f.x, xv.data(), B * in);
            be.upload(*f.w, wv.data(), out * in);
            be.upload(*f.dy, dyv.data(), B * out);
            for (int step = 0; step < 2; ++step) {  // the second step runs with FP8 scales from the first
                be.linear_forward(f.t, *f.x, *f.y, B, true);
                RoundingStats s;
                be.linear_backward(f.t, *f.x, *f.dy, f.dx.get(), B, with_stats ? &s : nullptr);
                if (fp8) be.update_fp8_scales(*fp8);
                if (with_stats) stats = s;
            }
            grads[with_stats] = {read(be, *f.grad_w), read(be, *f.grad_b), read(be, *f.dx), read(be, *f.y)};
        }
        for (std::size_t k = 0; k < grads[0].size(); ++k)
            for (std::size_t i = 0; i < grads[0][k].size(); ++i)
                QCOMPARE(std::bit_cast<std::uint32_t>(grads[1][k][i]), std::bit_cast<std::uint32_t>(grads[0][k][i]));
        QCOMPARE(stats.elements, std::int64_t{out * in});
        std::int64_t zeros = 0;
        for (float v : grads[0][0]) zeros += v == 0.0f;
        QCOMPARE(stats.zeros, zeros);
    }

    // SGD with momentum and weight decay over three steps against torch's formulas in double.
    void sgdFollowsTorch() {
        CpuBackend be;
        const int n = 5;
        auto p = make(be, 1, n, Format::fp32), g = make(be, 1, n, Format::fp32), buf = make(be, 1, n, Format::fp32);
        auto pv = random_values(n, 1.0f, 12);
        be.upload(*p, pv.data(), n);
        std::vector<double> P(pv.begin(), pv.end()), Bf(n, 0);
        const double lr = 0.1, mu = 0.9, wd = 0.01;
        for (int step = 0; step < 3; ++step) {
            auto gv = random_values(n, 1.0f, 20 + step);
            be.upload(*g, gv.data(), n);
            SgdParams s{lr, mu, wd, step == 0};
            const UpdateCounts c = be.sgd_step({p.get(), g.get(), buf.get(), nullptr}, s);
            QCOMPARE(c.nonzero_updates, std::int64_t{n});
            QCOMPARE(c.lost_updates, std::int64_t{0});
            for (int i = 0; i < n; ++i) {
                const double d = gv[i] + wd * P[i];
                Bf[i] = step == 0 ? d : mu * Bf[i] + d;
                P[i] -= lr * Bf[i];
            }
        }
        const auto got = read(be, *p);
        for (int i = 0; i < n; ++i) QVERIFY(std::abs(got[i] - P[i]) < 1e-6);
    }

    void adamwFollowsTorch() {
        CpuBackend be;
        const int n = 6;
        auto p = make(be, 1, n, Format::fp32), g = make(be, 1, n, Format::fp32);
        auto m = make(be, 1, n, Format::fp32), v = make(be, 1, n, Format::fp32);
        auto pv = random_values(n, 1.0f, 13);
        be.upload(*p, pv.data(), n);
        std::vector<double> P(pv.begin(), pv.end()), M(n, 0), V(n, 0);
        const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05;
        for (int t = 1; t <= 4; ++t) {
            auto gv = random_values(n, 1.0f, 30 + t);
            be.upload(*g, gv.data(), n);
            AdamWParams a{lr, b1, b2, eps, wd, t};
            be.adamw_step({p.get(), g.get(), m.get(), v.get()}, a);
            for (int i = 0; i < n; ++i) {
                P[i] *= 1 - lr * wd;
                M[i] = b1 * M[i] + (1 - b1) * gv[i];
                V[i] = b2 * V[i] + (1 - b2) * gv[i] * gv[i];
                const double mh = M[i] / (1 - std::pow(b1, t)), vh = V[i] / (1 - std::pow(b2, t));
                P[i] -= lr * mh / (std::sqrt(vh) + eps);
            }
        }
        const auto got = read(be, *p), mv = read(be, *m), vv = read(be, *v);
        for (int i = 0; i < n; ++i) {
            QVERIFY2(std::abs(got[i] - P[i]) < 1e-6, qPrintable(QString("%1 vs %2").arg(got[i]).arg(P[i])));
            QVERIFY(std::abs(mv[i] - M[i]) < 1e-6);
            QVERIFY(std::abs(vv[i] - V[i]) < 1e-6);
        }
    }

    // An FP32 parameter is updated in place, without the rounding path's block buffer: every value
    // as the optimizers' formulas give it in FP32, bit for bit (each operation rounded, in
    // cpu_optimizer.cpp's order), over several blocks (the counts summed across them), with a NaN,
    // an infinity, a -0 and a zero gradient among them, and the changed values counted.
    void fp32UpdatesInPlaceFollowTheFormulaBitForBit_data() {
        QTest::addColumn<int>("optimizer");  // 0 AdamW, 1 SGD with momentum, 2 SGD without
        QTest::newRow("adamw") << 0;
        QTest::newRow("sgd-momentum") << 1;
        QTest::newRow("sgd") << 2;
    }
    void fp32UpdatesInPlaceFollowTheFormulaBitForBit() {
        QFETCH(int, optimizer);
        CpuBackend be;
        const int n = 5000;
        auto p = make(be, 1, n, Format::fp32), g = make(be, 1, n, Format::fp32);
        auto s1 = make(be, 1, n, Format::fp32), s2 = make(be, 1, n, Format::fp32);
        std::vector<float> P = random_values(n, 1.0f, 40), S1(n, 0.0f), S2(n, 0.0f);
        P[7] = -0.0f;
        P[8] = std::numeric_limits<float>::infinity();
        be.upload(*p, P.data(), n);
        be.fill(*s1, 0.0f);
        be.fill(*s2, 0.0f);
        const float lr = 1e-2f, wd = 0.01f, mu = 0.9f;
        for (int t = 1; t <= 3; ++t) {
            std::vector<float> G = random_values(n, 1e-3f, 50 + t);
            G[3] = std::numeric_limits<float>::quiet_NaN();
            G[7] = G[9] = 0.0f;
            be.upload(*g, G.data(), n);
            std::int64_t changed = 0;
            UpdateCounts c;
            if (optimizer == 0) {
                const AdamWParams a{lr, 0.9, 0.999, 1e-8, wd, t};
                c = be.adamw_step({p.get(), g.get(), s1.get(), s2.get()}, a);
                const float decay = static_cast<float>(1.0 - a.lr * a.weight_decay);
                const float step_size = static_cast<float>(a.lr / (1.0 - std::pow(0.9, t)));
                const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(0.999, t)));
                const float w1 = static_cast<float>(1.0 - 0.9), w2 = static_cast<float>(1.0 - 0.999);
                for (int i = 0; i < n; ++i) {
                    const float decayed = P[i] * decay;
                    const float gg = G[i] * G[i];
                    S1[i] = S1[i] + w1 * (G[i] - S1[i]);
                    S2[i] = S2[i] * 0.999f + w2 * gg;
                    const float denom = std::sqrt(S2[i]) / bc2_sqrt + 1e-8f;
                    const float q = S1[i] / denom;
                    const float fresh = decayed + -step_size * q;
                    changed += fresh != P[i];
                    P[i] = fresh;
                }
            } else {
                const bool momentum = optimizer == 1;
                const SgdParams s{lr, momentum ? mu : 0.0, wd, t == 1};
                c = be.sgd_step({p.get(), g.get(), momentum ? s1.get() : nullptr, nullptr}, s);
                for (int i = 0; i < n; ++i) {
                    const float decay = wd * P[i];
                    float d = G[i] + decay;
                    if (momentum) {
                        const float kept = mu * S1[i];
                        d = t == 1 ? d : kept + d;
                        S1[i] = d;
                    }
                    const float step = -lr * d;
                    const float fresh = P[i] + step;
                    changed += fresh != P[i];
                    P[i] = fresh;
                }
            }
            QCOMPARE(c.nonzero_updates, changed);
            QCOMPARE(c.lost_updates, std::int64_t{0});
            const auto got = read(be, *p), state = read(be, *s1);
            for (int i = 0; i < n; ++i) {
                QCOMPARE(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(P[i]));
                if (optimizer != 2)
                    QCOMPARE(std::bit_cast<std::uint32_t>(state[i]), std::bit_cast<std::uint32_t>(S1[i]));
            }
        }
    }

    // Master weights off: an fp16 weight of 1.0 has an ulp of 2^-10; an update below half of it
    // is swallowed (lost), a larger one lands. The FP32 master keeps the small update.
    void lostUpdatesWithoutMaster() {
        CpuBackend be;
        auto p16 = make(be, 1, 2, Format::fp16), p32 = make(be, 1, 2, Format::fp32), g = make(be, 1, 2, Format::fp32);
        const std::vector<float> w = {1.0f, 1.0f}, gv = {1e-4f, 1e-2f};
        be.upload(*p16, w.data(), 2);
        be.upload(*p32, w.data(), 2);
        be.upload(*g, gv.data(), 2);
        const SgdParams s{1.0, 0.0, 0.0, true};
        const UpdateCounts c16 = be.sgd_step({p16.get(), g.get(), nullptr, nullptr}, s);
        QCOMPARE(c16.nonzero_updates, std::int64_t{2});
        QCOMPARE(c16.lost_updates, std::int64_t{1});
        const auto a = read(be, *p16);
        QCOMPARE(a[0], 1.0f);
        QCOMPARE(a[1], round_to(Format::fp16, 1.0f - 1e-2f));
        const UpdateCounts c32 = be.sgd_step({p32.get(), g.get(), nullptr, nullptr}, s);
        QCOMPARE(c32.lost_updates, std::int64_t{0});
        QCOMPARE(read(be, *p32)[0], 1.0f - 1e-4f);
    }

    // Lost updates are lost to the stored precision: the count is over the updates that change
    // the weight in FP32 (fp32(w + u) != w), and counts those whose stored value stays w. SGD with
    // lr 1, so u = -g, on values chosen so each case is known by hand:
    //   w = 1,  g = 1e-4   changes in FP32; under half an ulp below 1 in fp16 (2^-12) and bf16
    //                      (2^-9): lost in both
    //   w = 1,  g = 1e-2   changes; lands in fp16 and bf16
    //   w = 1,  g = 1e-9   below FP32's half ulp (2^-25): no change in FP32, in neither count
    //   w = 0,  g = 1e-9   changes; fp16 flushes -1e-9 to -0 (its smallest subnormal is 2^-24):
    //                      lost; bf16 keeps it
    //   w = 1,  g = NaN    changes (to NaN): not lost
    //   w = 3,  g = 0      no update at all: in neither count
    // FP32 weights (master weights on, or FP32 training) lose nothing by construction.
    void lostUpdatesCountTheStoredPrecision_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("changed");
        QTest::addColumn<int>("lost");
        QTest::newRow("fp32") << Format::fp32 << 4 << 0;
        QTest::newRow("fp16") << Format::fp16 << 4 << 2;
        QTest::newRow("bf16") << Format::bf16 << 4 << 1;
    }
    void lostUpdatesCountTheStoredPrecision() {
        QFETCH(Format, format);
        QFETCH(int, changed);
        QFETCH(int, lost);
        CpuBackend be;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const std::vector<float> w = {1.0f, 1.0f, 1.0f, 0.0f, 1.0f, 3.0f}, gv = {1e-4f, 1e-2f, 1e-9f, 1e-9f, nan, 0.0f};
        const int n = static_cast<int>(w.size());
        auto p = make(be, 1, n, format), g = make(be, 1, n, Format::fp32);
        be.upload(*p, w.data(), n);
        be.upload(*g, gv.data(), n);
        const UpdateCounts c = be.sgd_step({p.get(), g.get(), nullptr, nullptr}, SgdParams{1.0, 0.0, 0.0, true});
        QCOMPARE(c.nonzero_updates, std::int64_t{changed});
        QCOMPARE(c.lost_updates, std::int64_t{lost});
        // The counts describe what was stored.
        const auto got = read(be, *p);
        int stored_unchanged = 0;
        for (int i = 0; i < n; ++i) {
            const float fresh = w[i] - gv[i];
            if (fresh != w[i]) stored_unchanged += got[i] == w[i];
            if (std::isnan(fresh))
                QVERIFY(std::isnan(got[i]));
            else
                QCOMPARE(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(round_to(format, fresh)));
        }
        QCOMPARE(stored_unchanged, lost);
    }

    // AdamW, first step (t = 1): m̂ = g, v̂ = g², so u = -lr·g/(|g| + eps) ≈ -lr·sign(g); lr = 1e-4.
    //   w = 1,     g = 1   1 - 1e-4 rounds back to 1 in fp16 (half an ulp below 1 is 2^-12): lost
    //   w = 0.01,  g = 1   fp16's ulp there is 2^-17: lands
    //   w = 1,     g = 0   m = 0: no update, in neither count
    //   w = -0.5,  g = -1  -0.4999: half an ulp above -0.5 is 2^-13 in fp16: lost
    // An update under FP32's resolution (lr = 1e-10: below half an FP32 ulp of each weight, as
    // AdamW's residue on weights whose gradient is zero, e.g. behind a dead relu) is in neither
    // count, for any format.
    void lostUpdatesAdamW_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<double>("lr");
        QTest::addColumn<int>("changed");
        QTest::addColumn<int>("lost");
        QTest::newRow("fp32") << Format::fp32 << 1e-4 << 3 << 0;
        QTest::newRow("fp16") << Format::fp16 << 1e-4 << 3 << 2;
        QTest::newRow("fp32 below resolution") << Format::fp32 << 1e-10 << 0 << 0;
        QTest::newRow("fp16 below resolution") << Format::fp16 << 1e-10 << 0 << 0;
    }
    void lostUpdatesAdamW() {
        QFETCH(Format, format);
        QFETCH(double, lr);
        QFETCH(int, changed);
        QFETCH(int, lost);
        CpuBackend be;
        const std::vector<float> w = {1.0f, 0.01f, 1.0f, -0.5f}, gv = {1.0f, 1.0f, 0.0f, -1.0f};
        const int n = static_cast<int>(w.size());
        auto p = make(be, 1, n, format), g = make(be, 1, n, Format::fp32);
        auto m = make(be, 1, n, Format::fp32), v = make(be, 1, n, Format::fp32);
        be.upload(*p, w.data(), n);
        be.upload(*g, gv.data(), n);
        const UpdateCounts c = be.adamw_step({p.get(), g.get(), m.get(), v.get()}, AdamWParams{lr, 0.9, 0.999, 1e-8, 0.0, 1});
        QCOMPARE(c.nonzero_updates, std::int64_t{changed});
        QCOMPARE(c.lost_updates, std::int64_t{lost});
        const auto got = read(be, *p);
        if (format == Format::fp16 && lr == 1e-4) {
            QCOMPARE(got[0], 1.0f);
            const float w1 = round_to(Format::fp16, 0.01f);  // as uploaded
            QVERIFY(got[1] != w1);
            QVERIFY(std::abs(got[1] - (w1 - 1e-4f)) < 8e-6f);  // within an fp16 ulp (2^-17)
            QCOMPARE(got[3], -0.5f);
        }
    }

    void memoryIsAccountedByCategory() {
        CpuBackend be;
        QCOMPARE(be.memory().total(), std::int64_t{0});
        auto a = make(be, 10, 10, Format::fp16, MemoryCategory::parameters);
        auto b = make(be, 10, 10, Format::fp32, MemoryCategory::master_weights);
        auto c = make(be, 4, 8, Format::fp8_e4m3, MemoryCategory::activations);
        MemoryBreakdown m = be.memory();
        QCOMPARE(m.parameters, std::int64_t{200});
        QCOMPARE(m.master_weights, std::int64_t{400});
        QCOMPARE(m.activations, std::int64_t{32});
        QVERIFY(m.modelled);
        be.convert(*a, Format::fp32);
        QCOMPARE(be.memory().parameters, std::int64_t{400});
        b.reset();
        QCOMPARE(be.memory().master_weights, std::int64_t{0});
        QCOMPARE(be.memory().total(), std::int64_t{432});
    }

    // poke stores what the format's storage can hold, as the GPU does: 4-byte formats any FP32
    // value, narrower ones the nearest value; e4m3 has no infinity, so an injected inf is NaN.
    void pokeStoresWhatTheFormatHolds() {
        CpuBackend be;
        const float inf = std::numeric_limits<float>::infinity();
        for (Format f : all_formats) {
            auto t = make(be, 1, 6, f);
            const float values[] = {inf, -inf, std::nanf(""), 1e-9f, 70000.0f, 0.1f};
            for (int i = 0; i < 6; ++i) be.poke(*t, i, values[i]);
            const std::vector<float> got = read(be, *t);
            for (int i = 0; i < 6; ++i) {
                const float want = format_bytes(f) == 4 ? values[i] : round_to(f, values[i]);
                QVERIFY2(std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want) ||
                             (std::isnan(got[i]) && std::isnan(want)),
                         qPrintable(QString("%1[%2]").arg(format_name(f).data()).arg(i)));
            }
            if (f == Format::fp8_e4m3) QVERIFY(std::isnan(got[0]) && std::isnan(got[1]));
            if (f == Format::fp16) QVERIFY(std::isinf(got[0]) && got[3] == 0.0f);
            if (f == Format::fp32) QCOMPARE(got[3], 1e-9f);
        }
    }

    void convertRoundsValues() {
        CpuBackend be;
        auto t = make(be, 1, 3, Format::fp32);
        const std::vector<float> v = {1.0f + 0x1.0p-12f, 1e-9f, 70000.0f};
        be.upload(*t, v.data(), 3);
        be.convert(*t, Format::fp16);
        QCOMPARE(t->format(), Format::fp16);
        const auto r = read(be, *t);
        QCOMPARE(r[0], 1.0f);
        QCOMPARE_EXACT(r[1], 0.0f);
        QCOMPARE(r[2], inf);
    }

    void formatInclusion() {
        QVERIFY(format_contains(Format::fp32, Format::fp16));
        QVERIFY(format_contains(Format::tf32, Format::fp16));
        QVERIFY(format_contains(Format::tf32, Format::bf16));
        QVERIFY(format_contains(Format::fp16, Format::fp8_e4m3));
        QVERIFY(format_contains(Format::bf16, Format::fp8_e5m2));
        QVERIFY(!format_contains(Format::fp16, Format::bf16));
        QVERIFY(!format_contains(Format::bf16, Format::fp16));
        QVERIFY(!format_contains(Format::fp8_e4m3, Format::fp8_e5m2));
        QVERIFY(!format_contains(Format::fp16, Format::fp32));
    }

    void statsHelpers() {
        QCOMPARE(exponent_of(1.0f), 0);
        QCOMPARE(exponent_of(-3.0f), 1);
        QCOMPARE(exponent_of(0x1.0p-149f), -149);
        QCOMPARE(exponent_of(0x1.8p-140f), -140);
        QCOMPARE(exponent_of(std::numeric_limits<float>::max()), 127);
        std::vector<float> v = {0.0f, -0.0f, 1e-6f, 1.0f, 6e-5f, inf, std::nanf("")};
        RoundingStats s;
        round_array_with_stats(Format::fp16, v.data(), v.size(), s);
        QCOMPARE(s.elements, std::int64_t{7});
        QCOMPARE(s.zeros_before, std::int64_t{2});
        QCOMPARE(s.zeros, std::int64_t{2});          // 1e-6 is an fp16 subnormal, not zero
        QCOMPARE(s.subnormals, std::int64_t{2});     // 1e-6 and 6e-5 (< 2^-14)
        QCOMPARE(s.nonfinite, std::int64_t{2});
        std::vector<float> tiny = {1e-9f, 2e-8f, 1.0f};
        RoundingStats t;
        round_array_with_stats(Format::fp16, tiny.data(), tiny.size(), t);
        QCOMPARE(t.underflows(), std::int64_t{2});
    }

    // The fast exponent histogram against its definition, over normals, subnormals, zeros and
    // non-finite values, with and without a multiplier.
    void exponentHistogramMatchesDefinition() {
        std::mt19937 rng(99);
        std::vector<float> v;
        for (int i = 0; i < 5000; ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
        for (int i = 0; i < 300; ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x807fffffu));
        v.insert(v.end(), {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e-45f, 3e38f});
        for (float multiplier : {1.0f, 0.25f}) {
            std::array<std::uint32_t, ExponentHistogram::bins> got{}, want{};
            double amax = 0, want_amax = 0;
            std::int64_t nonfinite = 0, want_nonfinite = 0;
            exponent_histogram(v.data(), v.size(), multiplier, ExponentHistogram::min_exponent, got.data(),
                               ExponentHistogram::bins, &amax, &nonfinite);
            for (float x : v) {
                const float y = x * multiplier;
                if (!std::isfinite(y)) {
                    ++want_nonfinite;
                    continue;
                }
                if (y == 0.0f) continue;
                want_amax = std::max(want_amax, static_cast<double>(std::abs(y)));
                const int e = static_cast<int>(std::floor(std::log2(static_cast<double>(std::abs(y)))));
                ++want[static_cast<std::size_t>(std::clamp(e - ExponentHistogram::min_exponent, 0, ExponentHistogram::bins - 1))];
            }
            QCOMPARE(nonfinite, want_nonfinite);
            QCOMPARE(amax, want_amax);
            QVERIFY(got == want);
        }
    }

    // The matmul's thread policy: one thread per 2^20 multiply-adds, at least one, at most the
    // allowed count (the reference model's fc2, 128x256x128, gets four at most).
    void matmulThreadsFollowTheWork() {
        QCOMPARE(CpuMatmul::threads_for(0, 8), 1);
        QCOMPARE(CpuMatmul::threads_for((std::int64_t{1} << 21) - 1, 8), 1);
        QCOMPARE(CpuMatmul::threads_for(std::int64_t{3} << 20, 8), 3);
        QCOMPARE(CpuMatmul::threads_for(128 * 256 * 128, 15), 4);
        QCOMPARE(CpuMatmul::threads_for(128 * 784 * 256, 15), 15);
        QCOMPARE(CpuMatmul::threads_for(128 * 784 * 256, 0), 1);
    }

    void factory() {
        auto cpu = make_backend("cpu");
        QCOMPARE(QString::fromStdString(cpu->name()), QString("cpu"));
        QVERIFY(!cpu->device_name().empty());
        auto automatic = make_backend("auto");
        QVERIFY(automatic != nullptr);
        QVERIFY_THROWS_EXCEPTION(Error, make_backend("tpu"));
        bool cuda_ok = false;
        for (const auto& a : backend_availability()) {
            if (a.name == "cuda") cuda_ok = a.available;
            if (a.name == "cpu") QVERIFY(a.available);
        }
        if (!cuda_ok) {
            try {
                make_backend("cuda");
                QFAIL("make_backend(\"cuda\") must throw without the CUDA module");
            } catch (const Error& e) {
                QVERIFY(QString(e.what()).contains("The CUDA backend cannot be used: "));
            }
            QCOMPARE(QString::fromStdString(automatic->name()), QString("cpu"));
        }
    }

    // backend.threads: a fixed count, or 0 for this process's auto count: MANTISSA_CPU_THREADS,
    // else OMP_NUM_THREADS, else the hardware threads less the spare ones (the GUI keeps one).
    void factoryThreads() {
        const auto threads_of = [](const std::unique_ptr<Backend>& b) {
            return dynamic_cast<CpuBackend&>(*b).matmul().threads();
        };
        QCOMPARE(threads_of(make_backend("cpu", 0, 3)), 3);
        QVERIFY(QString::fromStdString(make_backend("cpu", 0, 3)->device_name()).contains("(3 threads, "));
        QVERIFY(QString::fromStdString(make_backend("cpu", 0, 1)->device_name()).contains("(1 thread, "));

        const QByteArray mantissa = qgetenv("MANTISSA_CPU_THREADS"), omp = qgetenv("OMP_NUM_THREADS");
        qunsetenv("MANTISSA_CPU_THREADS");
        qunsetenv("OMP_NUM_THREADS");
        const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
        QCOMPARE(auto_cpu_threads(), hardware);  // mantissa-cli's: every hardware thread
        QCOMPARE(threads_of(make_backend("cpu")), hardware);
        set_spare_cpu_threads(1);
        QCOMPARE(auto_cpu_threads(), std::max(1, hardware - 1));
        QCOMPARE(threads_of(make_backend("cpu", 0, 0)), std::max(1, hardware - 1));
        QCOMPARE(threads_of(make_backend("cpu", 0, 2)), 2);  // a fixed count keeps no spare
        qputenv("MANTISSA_CPU_THREADS", "2");
        QCOMPARE(auto_cpu_threads(), 2);  // a person's setting wins over the spare
        set_spare_cpu_threads(0);
        if (mantissa.isNull()) qunsetenv("MANTISSA_CPU_THREADS"); else qputenv("MANTISSA_CPU_THREADS", mantissa);
        if (!omp.isNull()) qputenv("OMP_NUM_THREADS", omp);
    }
};

QTEST_GUILESS_MAIN(TestCpuOps)
#include "test_cpu_ops.moc"
