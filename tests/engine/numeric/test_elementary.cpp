// exp_poly and erf_poly (engine/numeric/elementary.h) against double precision: their error in
// ulps over dense walks of the float line, the special values, erf_near_zero as erf_poly's own
// branch, and the same bits whether a loop of them is compiled to scalar code, to SSE2, AVX2 or
// AVX-512 vectors.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "numeric/elementary.h"
#include "exact_compare.h"

using namespace mantissa;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// The spacing of floats at the float nearest `exact` (a subnormal's is the smallest subnormal),
// and the distance of `got` from `exact` in that unit.
double ulps_off(float got, double exact) {
    const float nearest = static_cast<float>(exact);
    const double a = std::abs(static_cast<double>(nearest));
    const double spacing = a < std::numeric_limits<float>::min()
                               ? std::numeric_limits<float>::denorm_min()
                               : static_cast<double>(std::nextafter(static_cast<float>(a), inf)) - a;
    return std::abs(static_cast<double>(got) - exact) / spacing;
}

struct Worst {
    double ulps = 0;
    float at = 0;
    void see(double u, float x) {
        if (u > ulps) {
            ulps = u;
            at = x;
        }
    }
};

// Every `stride`-th float from `from` up to `to` (both finite, same sign or either side of 0).
template <typename Visit>
void walk(float from, float to, std::uint32_t stride, Visit visit) {
    // Floats ordered by value map to integers in order: negative ones mirrored below zero.
    auto key = [](float x) {
        const std::uint32_t b = bits_of(x);
        return b & 0x80000000u ? -static_cast<std::int64_t>(b & 0x7fffffffu) : static_cast<std::int64_t>(b);
    };
    auto value = [](std::int64_t k) {
        return k < 0 ? std::bit_cast<float>(static_cast<std::uint32_t>(-k) | 0x80000000u)
                     : std::bit_cast<float>(static_cast<std::uint32_t>(k));
    };
    for (std::int64_t k = key(from); k <= key(to); k += stride) visit(value(k));
}

// The same loop four ways, for F = exp_poly or erf_poly. Loops over these functions are what the
// CPU backend's passes run.
using Curve = float (*)(float);
template <Curve F>
__attribute__((optimize("no-tree-vectorize"))) void on_scalar(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = F(x[i]);
}
template <Curve F>
__attribute__((optimize("tree-vectorize"))) void on_sse2(const float* __restrict x, float* __restrict y, int n) {
    for (int i = 0; i < n; ++i) y[i] = F(x[i]);
}
#if defined(__x86_64__)
template <Curve F>
__attribute__((target("avx2"), optimize("tree-vectorize"))) void on_avx2(const float* __restrict x,
                                                                       float* __restrict y, int n) {
    for (int i = 0; i < n; ++i) y[i] = F(x[i]);
}
template <Curve F>
__attribute__((target("avx512f"), optimize("tree-vectorize"))) void on_avx512(const float* __restrict x,
                                                                            float* __restrict y, int n) {
    for (int i = 0; i < n; ++i) y[i] = F(x[i]);
}
#endif

}  // namespace

class TestElementary : public QObject {
    Q_OBJECT
private slots:
    // Where e^x is a normal float: within 1 ulp; a subnormal: within 1 of the smallest subnormal.
    void expWithinOneUlp() {
        Worst normal, subnormal;
        walk(-103.97f, 88.72f, 61, [&](float x) {
            const double exact = std::exp(static_cast<double>(x));
            const double u = ulps_off(exp_poly(x), exact);
            (exact < std::numeric_limits<float>::min() ? subnormal : normal).see(u, x);
        });
        QVERIFY2(normal.ulps <= 1.0, qPrintable(QString("exp(%1): %2 ulp").arg(normal.at, 0, 'g', 9).arg(normal.ulps)));
        QVERIFY2(subnormal.ulps <= 1.0,
                 qPrintable(QString("exp(%1): %2 ulp").arg(subnormal.at, 0, 'g', 9).arg(subnormal.ulps)));
    }

    void erfWithinOneAndAQuarterUlp() {
        Worst worst;
        auto check = [&](float x) { worst.see(ulps_off(erf_poly(x), std::erf(static_cast<double>(x))), x); };
        walk(-6.0f, 6.0f, 37, check);  // includes the tiny values near 0, walked densely by bits
        // Densely across the switch between the two forms at 0.9, and where the tail reaches 1.
        walk(0.85f, 0.95f, 1, check);
        walk(-0.95f, -0.85f, 1, check);
        walk(3.9f, 4.1f, 1, check);
        QVERIFY2(worst.ulps <= 1.25, qPrintable(QString("erf(%1): %2 ulp").arg(worst.at, 0, 'g', 9).arg(worst.ulps)));
    }

    // erf_near_zero is erf_poly's own result wherever |x| < erf_near_zero_limit, bit for bit (the
    // CPU backend's GELU takes it alone for a block of such values): every float in (-0.9, 0.9)
    // from the smallest subnormals up, walked by bits, densely next to the limit.
    void erfNearZeroIsErfPolyBelowTheLimit() {
        const float below = std::nextafter(erf_near_zero_limit, 0.0f);
        std::int64_t seen = 0;
        auto check = [&](float x) {
            ++seen;
            if (bits_of(erf_near_zero(x)) != bits_of(erf_poly(x)))
                QFAIL(qPrintable(QString("erf_near_zero(%1) = %2, erf_poly %3").arg(x, 0, 'g', 9)
                                     .arg(erf_near_zero(x), 0, 'g', 9).arg(erf_poly(x), 0, 'g', 9)));
        };
        walk(-below, below, 97, check);
        walk(0.89f, below, 1, check);
        walk(-below, -0.89f, 1, check);
        QVERIFY2(seen > 1000000, "the walk saw too few values");
    }

    void specialValues() {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        QVERIFY(std::isnan(exp_poly(nan)));
        QVERIFY(std::isnan(exp_poly(-nan)));
        QCOMPARE_EXACT(exp_poly(-inf), 0.0f);
        QCOMPARE(exp_poly(inf), inf);
        QCOMPARE(bits_of(exp_poly(0.0f)), bits_of(1.0f));
        QCOMPARE(bits_of(exp_poly(-0.0f)), bits_of(1.0f));
        QCOMPARE_EXACT(exp_poly(-104.0f), 0.0f);
        QCOMPARE_EXACT(exp_poly(-1e30f), 0.0f);
        QCOMPARE(exp_poly(88.8f), inf);
        QVERIFY(std::isfinite(exp_poly(88.72f)));
        QVERIFY(exp_poly(-103.9f) > 0.0f);  // the smallest subnormals
        QCOMPARE(exp_poly(1.0f), static_cast<float>(std::exp(1.0)));
        const float payload = std::bit_cast<float>(0xffc01234u);  // a negative quiet NaN with a payload
        QCOMPARE(bits_of(exp_poly(payload)), bits_of(payload));
        QCOMPARE(bits_of(erf_poly(payload)), bits_of(payload));

        QVERIFY(std::isnan(erf_poly(nan)));
        QCOMPARE(erf_poly(inf), 1.0f);
        QCOMPARE(erf_poly(-inf), -1.0f);
        QCOMPARE(erf_poly(1e30f), 1.0f);
        QCOMPARE(erf_poly(4.0f), 1.0f);
        QCOMPARE(bits_of(erf_poly(0.0f)), bits_of(0.0f));
        QCOMPARE(bits_of(erf_poly(-0.0f)), bits_of(-0.0f));
        const float tiny = std::numeric_limits<float>::denorm_min();
        QCOMPARE(bits_of(erf_poly(tiny)), bits_of(tiny));  // 2/√π·tiny rounds back to the smallest subnormal
        QCOMPARE(erf_poly(-1e-30f), static_cast<float>(std::erf(-1e-30)));
    }

    // The bits do not depend on how a loop over the functions is compiled: one value at a time,
    // four to a vector (SSE2), eight (AVX2) or sixteen (AVX-512), on random bit patterns and on
    // values in range.
    void vectorisedMatchesScalar() {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> wide(-120.0f, 100.0f), narrow(-6.0f, 6.0f);
        std::vector<float> x;
        for (int i = 0; i < 4096; ++i) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
        for (int i = 0; i < 8192; ++i) x.push_back(wide(rng));
        for (int i = 0; i < 8192; ++i) x.push_back(narrow(rng));
        for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.9f, -0.9f, 4.0f, -4.0f,
                        -103.972084f, 88.7228394f})
            x.push_back(v);
        const int n = static_cast<int>(x.size());
        auto same = [&](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
            for (int i = 0; i < n; ++i)
                if (bits_of(a[static_cast<std::size_t>(i)]) != bits_of(b[static_cast<std::size_t>(i)]))
                    QFAIL(qPrintable(QString("%1(%2): %3 against %4").arg(what).arg(x[static_cast<std::size_t>(i)], 0, 'g', 9)
                                         .arg(a[static_cast<std::size_t>(i)], 0, 'g', 9)
                                         .arg(b[static_cast<std::size_t>(i)], 0, 'g', 9)));
        };
        std::vector<float> scalar(x.size()), vector(x.size());
        using Loop = void (*)(const float*, float*, int);
        auto compare = [&](Loop reference, Loop vectorised, const char* what) {
            reference(x.data(), scalar.data(), n);
            vectorised(x.data(), vector.data(), n);
            same(scalar, vector, what);
        };
        compare(on_scalar<exp_poly>, on_sse2<exp_poly>, "exp, SSE2");
        compare(on_scalar<erf_poly>, on_sse2<erf_poly>, "erf, SSE2");
        compare(on_scalar<erf_near_zero>, on_sse2<erf_near_zero>, "erf near zero, SSE2");
#if defined(__x86_64__)
        if (!__builtin_cpu_supports("avx2")) QSKIP("no AVX2 on this CPU: the SSE2 and scalar loops agreed");
        compare(on_scalar<exp_poly>, on_avx2<exp_poly>, "exp, AVX2");
        compare(on_scalar<erf_poly>, on_avx2<erf_poly>, "erf, AVX2");
        compare(on_scalar<erf_near_zero>, on_avx2<erf_near_zero>, "erf near zero, AVX2");
        // The avx512f target enables FMA: this file, as the backend's callers, is compiled with
        // -ffp-contract=off, or these would round differently.
        if (!__builtin_cpu_supports("avx512f")) QSKIP("no AVX-512 on this CPU: the SSE2, AVX2 and scalar loops agreed");
        compare(on_scalar<exp_poly>, on_avx512<exp_poly>, "exp, AVX-512");
        compare(on_scalar<erf_poly>, on_avx512<erf_poly>, "erf, AVX-512");
        compare(on_scalar<erf_near_zero>, on_avx512<erf_near_zero>, "erf near zero, AVX-512");
#endif
    }
};

QTEST_APPLESS_MAIN(TestElementary)
#include "test_elementary.moc"
