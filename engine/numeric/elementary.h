// The engine's own exp and erf in FP32, for the CPU backend's vectorised passes (GELU, the
// attention softmax): branch-free polynomials that a compiler turns into vector code inside a
// caller's loop, where the C library's expf and erff are one call per value (a third of a GPT
// step's time in perf).
//
// Each is plain multiplies and adds in a fixed order, so every build, vector width and CPU gives
// the same bits, and they do not move with the C library, as long as no multiply and add are
// fused: a caller's clone for a target with FMA (AVX-512) needs -ffp-contract=off. The caller
// also needs -fno-trapping-math, or GCC keeps the selects as branches (it will not compute an
// arm that might raise an exception flag) and the loop stays scalar, slower than the library's.
// engine/backend/CMakeLists.txt sets both for the sources that call these.
//
// Accuracy, measured against double precision over dense walks of the float line
// (tests/engine/numeric/test_elementary.cpp): exp within 1 ulp where its result is a normal
// number (gradually less precise as a subnormal, 0 below e^-103.97, +inf above e^88.72); erf
// within 1.25 ulp. A NaN comes out as it went in; ±inf go to 0/+inf and ±1; erf keeps -0.
//
// The coefficients are least-squares fits at Chebyshev nodes in double precision, rounded to
// FP32 (engine/numeric/fit_elementary.py prints them, with their errors).
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace mantissa {

namespace elementary_detail {

// 1.5 · 2^23: adding and subtracting it rounds a float of magnitude below 2^22 to an integer
// (to nearest, ties to even) with SSE2 alone.
constexpr float round_shift = 12582912.0f;
constexpr float log2e = 1.44269504088896341f;
// ln 2 split so that n · ln2_high is exact for |n| < 2^15 (ln2_high has 9 significant bits).
constexpr float ln2_high = 0.693359375f;
constexpr float ln2_low = -2.12194440e-4f;
constexpr float exp_lowest = -103.972084f;  // below: e^x rounds to +0
constexpr float exp_highest = 88.7228394f;  // above: e^x rounds to +inf

// 2^n as a float for n in [-126, 127], built in its exponent field.
inline float power_of_two(std::int32_t n) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(n + 127) << 23);
}

}  // namespace elementary_detail

// e^x: x = n·ln2 + r, |r| <= ln2/2, e^r = 1 + r + r²·Q(r), scaled by 2^n in two halves so that
// results down to the subnormals are built from normal scales.
inline float exp_poly(float x) {
    using namespace elementary_detail;
    // Computed on x clamped to the range (a NaN to its top), so every step stays finite; out of
    // the range and for a NaN the result is chosen at the end.
    const float xc = x < exp_highest ? (exp_lowest < x ? x : exp_lowest) : exp_highest;
    const float t = xc * log2e;
    const float n = (t + round_shift) - round_shift;
    float r = xc - n * ln2_high;
    r = r - n * ln2_low;
    float q = 0.000198495181f;
    q = q * r + 0.00139335811f;
    q = q * r + 0.00833337288f;
    q = q * r + 0.0416664667f;
    q = q * r + 0.166666672f;
    q = q * r + 0.5f;
    const float p = q * (r * r) + r + 1.0f;
    const auto ni = static_cast<std::int32_t>(n);
    const std::int32_t n1 = ni >> 1;
    const float e = p * power_of_two(n1) * power_of_two(ni - n1);
    const float low_or_e = x < exp_lowest ? 0.0f : e;
    const float result = x > exp_highest ? std::numeric_limits<float>::infinity() : low_or_e;
    return x == x ? result : x;  // a NaN as it came, whatever the vector code did to its payload
}

// erf(x): below erf_near_zero_limit (0.9) in magnitude x + x·A(x²) (erf_near_zero); above,
// 1 - e^(-x²)·B(1/x - 0.680555582) with the sign of x, where B fits erfc(x)·e^(x²) on [0.9, 4]
// (erfc(4) is below half an ulp of 1, so |x| >= 4 gives ±1).
inline constexpr float erf_near_zero_limit = 0.9f;

// erf_poly's result for |x| < erf_near_zero_limit, bit for bit (erf_poly returns this very
// expression there): a caller that knows its values lie in that range may skip the other branch.
inline float erf_near_zero(float x) {
    const float x2 = x * x;
    float a = -0.00060860673f;
    a = a * x2 + 0.00501108309f;
    a = a * x2 - 0.0267782751f;
    a = a * x2 + 0.112821221f;
    a = a * x2 - 0.376125216f;
    a = a * x2 + 0.128379151f;
    return x + x * a;
}

inline float erf_poly(float x) {
    const float ax = x < 0.0f ? -x : x;
    const float near_zero = erf_near_zero(x);
    const float axc = 4.0f < ax ? 4.0f : ax;  // a NaN stays a NaN
    const float t = 1.0f / axc - 0.680555582f;
    float b = 0.0185548309f;
    b = b * t + 0.000427499239f;
    b = b * t - 0.0263313632f;
    b = b * t + 0.0352064222f;
    b = b * t - 0.0337817483f;
    b = b * t + 0.0120328395f;
    b = b * t + 0.0476227626f;
    b = b * t - 0.164740741f;
    b = b * t + 0.363548189f;
    b = b * t + 0.326666594f;
    const float tail = 1.0f - exp_poly(-(axc * axc)) * b;
    const float signed_tail = x < 0.0f ? -tail : tail;
    const float result = ax < erf_near_zero_limit ? near_zero : signed_tail;
    return x == x ? result : x;
}

}  // namespace mantissa
