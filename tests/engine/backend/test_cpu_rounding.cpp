// The CPU backend's stochastic rounding, Kahan-compensated updates and FP16 accumulation, against
// references written here (docs/numerics.md, "Stochastic rounding and Kahan summation", "FP16
// accumulation"):
// - FP16 accumulation: every output is the in-order IEEE binary16 sum of binary16 products; the
//   reference rounds exact double sums to fp16 by searching every fp16 value (ties to the even
//   code), so it shares nothing with the kernel's F16C conversions; all four transposes, a row
//   tail, subnormals and overflow to inf; a linear layer's three matmuls through the Backend;
//   the error against FP64 growing with K where FP32 accumulation's stays at its roundoff;
// - stochastic gradients: a bf16 layer's dX and dW are the exact FP32 products (integer data)
//   rounded with the seeded keys in order; a block-scaled layer's backward is reproducible by seed;
// - the optimizer: stochastic weights are round_stochastic of the FP32 update with the step's
//   key; Kahan matches a scalar reference of y = (new - w) + c, w' = rnd(w + y), c' = rnd(y - (w' - w))
//   bit for bit over many steps, and keeps updates nearest rounding loses.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_fp16_accumulate.h"
#include "error.h"
#include "numeric/block_format.h"
#include "numeric/stochastic_round.h"

using namespace mantissa;
using backend_test::read;
using conv_test::make;
using conv_test::make_with;

namespace {

// ---- an fp16 rounding of doubles, from the list of every fp16 value

const std::vector<double>& fp16_values() {  // every finite fp16 value, ascending (codes with it)
    static const std::vector<double> v = [] {
        std::vector<double> all;
        for (std::uint32_t code = 0; code < 0x10000; ++code) {
            const float x = decode(Format::fp16, code);
            if (std::isfinite(x) && !(x == 0 && code == 0x8000)) all.push_back(x);
        }
        std::sort(all.begin(), all.end());
        return all;
    }();
    return v;
}

// x rounded to the nearest fp16 value, ties to the one whose code is even, inf beyond
// 65504 + half a step (IEEE's overflow threshold).
double fp16_nearest(double x) {
    if (std::isnan(x)) return x;
    const std::vector<double>& v = fp16_values();
    if (std::fabs(x) >= 65520.0) return std::copysign(INFINITY, x);
    const auto hi = std::lower_bound(v.begin(), v.end(), x);
    if (*hi == x) return x;
    const double up = *hi, down = *(hi - 1);
    if (x - down != up - x) return x - down < up - x ? down : up;
    const std::uint32_t down_code = encode(Format::fp16, static_cast<float>(down));
    return (down_code & 1u) == 0 ? down : up;
}

// C = op(A)·op(B) in doubles, each output's sum s = add(s, a_k, b_k) from 0 over k in order. A is
// stored (M, K), or (K, M) when ta; B (K, N), or (N, K) when tb.
template <class Add>
std::vector<float> reference_product(const std::vector<float>& a, bool ta, const std::vector<float>& b, bool tb,
                                     std::int64_t m, std::int64_t n, std::int64_t k, Add add) {
    std::vector<float> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::int64_t kk = 0; kk < k; ++kk)
                s = add(s, a[static_cast<std::size_t>(ta ? kk * m + i : i * k + kk)],
                        b[static_cast<std::size_t>(tb ? j * k + kk : kk * n + j)]);
            c[static_cast<std::size_t>(i * n + j)] = static_cast<float>(s);
        }
    return c;
}

// With fp16 products and in-order fp16 sums (a sum of two fp16 values is exact in double).
std::vector<float> fp16_reference(const std::vector<float>& a, bool ta, const std::vector<float>& b, bool tb,
                                  std::int64_t m, std::int64_t n, std::int64_t k) {
    return reference_product(a, ta, b, tb, m, n, k,
                             [](double s, double x, double y) { return fp16_nearest(s + fp16_nearest(x * y)); });
}

std::vector<float> random_fp16(std::size_t n, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = round_to(Format::fp16, normal(rng));
    return v;
}

bool same_value(float a, float b) {  // bit for bit; any NaN is a NaN (inf - inf's sign is the CPU's)
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_value(a[i], b[i])) return false;
    return true;
}

QString first_difference(const std::vector<float>& got, const std::vector<float>& want) {
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!same_value(got[i], want[i]))
            return QString("[%1]: %2, expected %3").arg(i).arg(double(got[i]), 0, 'g', 9).arg(double(want[i]), 0, 'g', 9);
    return "none";
}

// Integer-valued data: every FP32 sum of its products is exact.
std::vector<float> small_integers(std::size_t n, int range, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % (2 * range + 1)) - range);
    return v;
}

// Exactly, for small_integers (every sum fits in FP32).
std::vector<float> exact_product(const std::vector<float>& a, bool ta, const std::vector<float>& b, bool tb,
                                 std::int64_t m, std::int64_t n, std::int64_t k) {
    return reference_product(a, ta, b, tb, m, n, k, [](double s, double x, double y) { return s + x * y; });
}

// One linear layer's backward on a fresh backend seeded `seed`: its operands in `format` (or FP32
// with `block`), dy, W and x given; returns {dX, dW}.
struct Backward {
    std::int64_t batch, in, out;
    Format format = Format::fp32;
    std::optional<BlockFormat> block;
    std::pair<std::vector<float>, std::vector<float>> run(const std::vector<float>& xv, const std::vector<float>& wv,
                                                          const std::vector<float>& dyv, bool stochastic_gradients,
                                                          std::uint64_t seed) const {
        CpuBackend be;
        be.seed_stochastic_rounding(seed);
        auto x = make_with(be, batch, in, format, xv, "x");
        auto dy = make_with(be, batch, out, format, dyv, "dy");
        auto w = make_with(be, out, in, format, wv, "w");
        auto b = make(be, 1, out, format);
        auto gw = make(be, out, in, format), gb = make(be, 1, out, format);
        auto dx = make(be, batch, in, format);
        LinearTensors t;
        t.compute = format;
        t.block = block;
        t.weight = w.get(), t.bias = b.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.stochastic_gradients = stochastic_gradients;
        be.linear_backward(t, *x, *dy, dx.get(), batch, nullptr);
        return {read(be, *dx), read(be, *gw)};
    }
};

std::vector<float> stochastic(Format f, std::vector<float> v, std::uint64_t key) {
    round_array_stochastic(f, v.data(), v.data(), v.size(), key);
    return v;
}

}  // namespace

class TestCpuRounding : public QObject {
    Q_OBJECT
private slots:
    void fp16AccumulationIsTheInOrderFp16Sum_data() {
        QTest::addColumn<bool>("ta");
        QTest::addColumn<bool>("tb");
        QTest::newRow("A·B") << false << false;
        QTest::newRow("Aᵀ·B") << true << false;
        QTest::newRow("A·Bᵀ") << false << true;
        QTest::newRow("Aᵀ·Bᵀ") << true << true;
    }
    void fp16AccumulationIsTheInOrderFp16Sum() {
        QFETCH(bool, ta);
        QFETCH(bool, tb);
        const std::int64_t m = 7, n = 21, k = 300;  // n: two vectors of 8 and a tail of 5
        std::vector<float> a = random_fp16(static_cast<std::size_t>(m * k), 3.0f, 1);
        std::vector<float> b = random_fp16(static_cast<std::size_t>(k * n), 0.5f, 2);
        a[3] = 0x1p-20f, b[5] = 0x1p-10f;      // a product in fp16's subnormals
        for (std::int64_t kk = 0; kk < k; ++kk)  // one row of large values: its sums overflow to inf
            a[static_cast<std::size_t>(ta ? kk * m + 2 : 2 * k + kk)] = 60000.0f;
        std::vector<float> c(static_cast<std::size_t>(m * n)), pack;
        fp16_accumulate_multiply(a.data(), ta, b.data(), tb, c.data(), m, n, k, pack);
        const std::vector<float> want = fp16_reference(a, ta, b, tb, m, n, k);
        QVERIFY2(same_bits(c, want), qPrintable(first_difference(c, want)));
        QVERIFY(std::any_of(c.begin(), c.end(), [](float v) { return !std::isfinite(v); }));  // overflowed
    }

    void fp16AccumulationErrorGrowsWithK() {
        // Σ_k a_k·b_k of positive products: an FP16 running sum stops taking small products once
        // it is 2^11 times larger (swamping), so its error against FP64 grows with K.
        CpuMatmul fp32;
        std::vector<float> pack;
        double previous = 0;
        for (std::int64_t k : {64, 1024, 8192}) {
            std::mt19937 rng(static_cast<unsigned>(k));
            std::uniform_real_distribution<float> u(0.0f, 1.0f);
            std::vector<float> a(static_cast<std::size_t>(k)), b(static_cast<std::size_t>(k));
            for (float& v : a) v = round_to(Format::fp16, u(rng));
            for (float& v : b) v = round_to(Format::fp16, u(rng));
            double exact = 0;
            for (std::size_t i = 0; i < a.size(); ++i) exact += double(a[i]) * b[i];
            float c16 = 0, c32 = 0;
            fp16_accumulate_multiply(a.data(), false, b.data(), false, &c16, 1, 1, k, pack);
            fp32.multiply(a.data(), false, b.data(), false, &c32, 1, 1, k);
            const double e16 = std::fabs(c16 - exact) / exact, e32 = std::fabs(c32 - exact) / exact;
            QVERIFY2(e32 < 1e-5, qPrintable(QString("K %1: FP32 error %2").arg(k).arg(e32)));
            QVERIFY2(e16 > 10 * e32, qPrintable(QString("K %1: FP16 %2, FP32 %3").arg(k).arg(e16).arg(e32)));
            QVERIFY2(e16 > previous, qPrintable(QString("K %1: error %2 after %3").arg(k).arg(e16).arg(previous)));
            previous = e16;
        }
        QVERIFY(previous > 0.05);  // K = 8192: the sum (about 2048) has stopped growing
    }

    void linearLayerAccumulatesInFp16() {
        CpuBackend be;
        const std::int64_t batch = 16, in = 40, out = 12;
        const std::vector<float> xv = random_fp16(batch * in, 1.0f, 3), wv = random_fp16(out * in, 0.3f, 4),
                                 dyv = random_fp16(batch * out, 0.1f, 5), bv(out, 0.0f);
        auto x = make_with(be, batch, in, Format::fp16, xv, "x");
        auto dy = make_with(be, batch, out, Format::fp16, dyv, "dy");
        auto w = make_with(be, out, in, Format::fp16, wv, "w");
        auto b = make_with(be, 1, out, Format::fp16, bv, "b");
        auto gw = make(be, out, in, Format::fp16), gb = make(be, 1, out, Format::fp16);
        auto y = make(be, batch, out, Format::fp16), dx = make(be, batch, in, Format::fp16);
        LinearTensors t;
        t.compute = Format::fp16;
        t.weight = w.get(), t.bias = b.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.fp16_accumulation = true;
        be.linear_forward(t, *x, *y, batch, false);
        be.linear_backward(t, *x, *dy, dx.get(), batch, nullptr);
        const std::vector<float> want_y = fp16_reference(xv, false, wv, true, batch, out, in);  // + 0 bias
        QVERIFY2(same_bits(read(be, *y), want_y), qPrintable(first_difference(read(be, *y), want_y)));
        const std::vector<float> want_dx = fp16_reference(dyv, false, wv, false, batch, in, out);
        QVERIFY2(same_bits(read(be, *dx), want_dx), qPrintable(first_difference(read(be, *dx), want_dx)));
        const std::vector<float> want_dw = fp16_reference(dyv, true, xv, false, out, in, batch);
        QVERIFY2(same_bits(read(be, *gw), want_dw), qPrintable(first_difference(read(be, *gw), want_dw)));
        // And FP32 accumulation of the same layer differs.
        t.fp16_accumulation = false;
        be.linear_forward(t, *x, *y, batch, false);
        QVERIFY(!same_bits(read(be, *y), want_y));
        // FP16 accumulation of bf16 operands is refused at the backend too, naming the layer.
        t.fp16_accumulation = true;
        t.compute = Format::bf16;
        try {
            be.linear_forward(t, *x, *y, batch, false);
            QFAIL("FP16 accumulation of bf16 operands was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("w") && QString(e.what()).contains("fp16"), e.what());
        }
    }

    void stochasticGradientsAreTheSeededRounding() {
        const std::int64_t batch = 24, in = 30, out = 20;
        const std::vector<float> xv = small_integers(batch * in, 100, 6), wv = small_integers(out * in, 100, 7),
                                 dyv = small_integers(batch * out, 100, 8);
        const Backward layer{batch, in, out, Format::bf16, std::nullopt};  // small integers: bf16 values
        auto run = [&](bool sr, std::uint64_t seed) { return layer.run(xv, wv, dyv, sr, seed); };
        const std::vector<float> exact_dx = exact_product(dyv, false, wv, false, batch, in, out);
        const std::vector<float> exact_dw = exact_product(dyv, true, xv, false, out, in, batch);
        const auto [dx, dw] = run(true, 7);
        // The backward's passes draw keys 0 (dX) and 1 (dW) of the seed.
        QVERIFY2(same_bits(dx, stochastic(Format::bf16, exact_dx, stochastic_key(7, 0))), "dX");
        QVERIFY2(same_bits(dw, stochastic(Format::bf16, exact_dw, stochastic_key(7, 1))), "dW");
        const auto [nearest_dx, nearest_dw] = run(false, 7);
        QVERIFY(same_bits(nearest_dx, conv_test::rounded(Format::bf16, exact_dx)));
        QVERIFY(!same_bits(dx, nearest_dx));
        QVERIFY(same_bits(run(true, 7).second, dw));  // reproducible
        QVERIFY(!same_bits(run(true, 8).second, dw));
    }

    void blockScaledGradientsRoundStochastically() {
        const std::int64_t batch = 64, in = 64, out = 32;
        const std::vector<float> xv = backend_test::random_values(batch * in, 1.0f, 9),
                                 wv = backend_test::random_values(out * in, 0.2f, 10),
                                 dyv = backend_test::random_values(batch * out, 1e-2f, 11);
        const Backward layer{batch, in, out, Format::fp32, BlockFormat::mxfp4};
        auto run = [&](bool sr, std::uint64_t seed) { return layer.run(xv, wv, dyv, sr, seed).second; };
        const std::vector<float> a = run(true, 1);
        QVERIFY(same_bits(run(true, 1), a));
        QVERIFY(!same_bits(run(true, 2), a));
        QVERIFY(!same_bits(run(false, 1), a));
        // Stochastic dy operands are unbiased (but for the values a block's scale saturates):
        // dW averaged over seeds comes much closer to dyᵀ·x_q, the product with dy unquantised,
        // than the nearest-rounded dW does.
        std::vector<float> xq(xv.size());
        round_blocks_along(BlockFormat::mxfp4, xv.data(), xq.data(), 1, batch, in);  // wgrad's x operand
        const std::vector<float> reference = exact_product(dyv, true, xq, false, out, in, batch);
        const std::vector<float> nearest = run(false, 1);
        std::vector<double> mean(reference.size(), 0.0);
        const int seeds = 64;
        for (int s = 0; s < seeds; ++s) {
            const std::vector<float> g = run(true, 100 + static_cast<std::uint64_t>(s));
            for (std::size_t i = 0; i < g.size(); ++i) mean[i] += g[i] / double(seeds);
        }
        double mean_error = 0, nearest_error = 0;
        for (std::size_t i = 0; i < reference.size(); ++i) {
            mean_error += std::fabs(mean[i] - reference[i]);
            nearest_error += std::fabs(double(nearest[i]) - reference[i]);
        }
        QVERIFY2(mean_error < 0.5 * nearest_error,
                 qPrintable(QString("mean of 64 seeds off by %1, nearest by %2").arg(mean_error).arg(nearest_error)));
    }

    void stochasticWeightsAreTheRoundedUpdate() {
        CpuBackend be;
        be.seed_stochastic_rounding(3);
        const std::int64_t n = 5000;
        const std::vector<float> pv(n, 1.0f), gv(n, -0x1p-10f);  // lr 1: an eighth of a bf16 step
        auto p = make_with(be, 1, n, Format::bf16, pv, "w");
        auto g = make_with(be, 1, n, Format::fp32, gv, "g");
        OptimizerTensors t;
        t.param = p.get(), t.grad = g.get(), t.rounding = WeightRounding::stochastic;
        SgdParams s;
        s.lr = 1.0;
        const UpdateCounts c = be.sgd_step(t, s);
        std::vector<float> want(n, 1.0f + 0x1p-10f);
        want = stochastic(Format::bf16, want, stochastic_key(3, 0));
        QVERIFY(same_bits(read(be, *p), want));
        const auto moved = std::count_if(want.begin(), want.end(), [](float v) { return v != 1.0f; });
        QCOMPARE(c.nonzero_updates, n);
        QCOMPARE(c.lost_updates, n - moved);
        QVERIFY(moved > n / 16 && moved < n / 4);  // about an eighth
        // To nearest every update is lost.
        auto q = make_with(be, 1, n, Format::bf16, pv, "w");
        t.param = q.get(), t.rounding = WeightRounding::nearest;
        QCOMPARE(be.sgd_step(t, s).lost_updates, n);
    }

    void kahanMatchesItsReferenceAndKeepsSmallUpdates() {
        CpuBackend be;
        const std::int64_t n = 3000, steps = 40;
        std::mt19937 rng(12);
        std::uniform_real_distribution<float> u(0.5f, 2.0f);
        std::vector<float> pv(n), gv(n);
        for (float& v : pv) v = round_to(Format::bf16, u(rng));
        for (float& v : gv) v = -u(rng) * 1e-4f;  // updates well under half a bf16 step
        auto p = make_with(be, 1, n, Format::bf16, pv, "w");
        auto c = make(be, 1, n, Format::bf16, "w.kahan");
        auto plain = make_with(be, 1, n, Format::bf16, pv, "plain");
        auto g = make_with(be, 1, n, Format::fp32, gv, "g");
        OptimizerTensors t;
        t.param = p.get(), t.grad = g.get(), t.rounding = WeightRounding::kahan, t.compensation = c.get();
        OptimizerTensors nearest;
        nearest.param = plain.get(), nearest.grad = g.get();
        SgdParams s;
        s.lr = 1.0;
        std::vector<float> w = pv, comp(n, 0.0f);
        std::int64_t lost = 0;
        for (std::int64_t step = 0; step < steps; ++step) {
            lost += be.sgd_step(t, s).lost_updates;
            be.sgd_step(nearest, s);
            for (std::int64_t i = 0; i < n; ++i) {  // sgd_kernel's update, then Kahan's steps
                const float fresh = w[i] + -1.0f * (gv[i] + 0.0f * w[i]);
                const float y = (fresh - w[i]) + comp[i];
                const float next = round_to(Format::bf16, w[i] + y);
                comp[i] = round_to(Format::bf16, y - (next - w[i]));
                w[i] = next;
            }
        }
        QVERIFY2(same_bits(read(be, *p), w), qPrintable(first_difference(read(be, *p), w)));
        QVERIFY2(same_bits(read(be, *c), comp), qPrintable(first_difference(read(be, *c), comp)));
        QCOMPARE(lost, std::int64_t{0});  // every update lives on in the weight or its compensation
        QVERIFY(same_bits(read(be, *plain), pv));  // nearest rounding lost them all
        double drift = 0, want_drift = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            drift += double(w[i]) + comp[i] - pv[i];
            want_drift += -double(gv[i]) * steps;
        }
        QVERIFY2(std::fabs(drift - want_drift) < 0.01 * std::fabs(want_drift),
                 qPrintable(QString("moved %1 of %2").arg(drift).arg(want_drift)));
        // Kahan without its buffer is refused with a sentence.
        t.compensation = nullptr;
        QVERIFY_THROWS_EXCEPTION(Error, be.sgd_step(t, s));
    }
};

QTEST_APPLESS_MAIN(TestCpuRounding)
#include "test_cpu_rounding.moc"
