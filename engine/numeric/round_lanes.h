// Rounding eight floats in an AVX2 register to a format: round_array's kernels one vector at a
// time, for the passes that compute values and can round them before they store them (batch
// norm, a convolution's epilogue) instead of storing, reading back and rounding in a second pass.
// round_array is made of these (round_array.cpp), and test_round_array holds it to round_to bit
// for bit, so every caller gets round_to's bits.
//
// The methods, as round_array.cpp describes them: bf16 and tf32 by the fp32 bit pattern (their
// exponent range is fp32's), fp16 by F16C's conversions, fp8 by the bit pattern with the FPU
// rounding to the subnormal quantum; fp32 keeps its values. NaN lanes get round_to's NaN.
#pragma once

#include <cstdint>
#include <type_traits>

#include "numeric/convert.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MANTISSA_ROUND_LANES 1
#define MANTISSA_LANES_TARGET __attribute__((target("avx2,f16c")))

namespace mantissa::lanes {

enum class Method : std::uint8_t { keep, wide_exponent, half, fp8 };

// One format's rounding, scalars a kernel broadcasts once (copy it to a local first, so that the
// compiler sees that the kernel's stores cannot change it).
struct Rounding {
    Method method = Method::keep;
    bool saturate = false;
    int shift = 0;                                  // 23 − the format's mantissa bits
    std::uint32_t nan_bits = 0, nan_sign_mask = 0;  // round_to's NaN, and whether it keeps the sign
    float max_finite = 0, min_normal = 0;
    float overflow_value = 0;  // fp8: what overflows to (|round_to(inf)|, or max_finite saturating)
    float magic = 0;           // fp8: 2^(emin − M + 23), a binade whose ulp is the subnormal quantum
};

Rounding rounding_for(Format format, Overflow overflow = Overflow::to_inf);

// Whether this CPU has AVX2 and F16C, asked once; without them callers round with round_array.
bool supported();

MANTISSA_LANES_TARGET inline __m256 apply_nan(__m256 input, __m256 rounded, const Rounding& r) {
    const __m256 is_nan = _mm256_cmp_ps(input, input, _CMP_UNORD_Q);
    const __m256i sign = _mm256_and_si256(_mm256_castps_si256(input), _mm256_set1_epi32(static_cast<int>(r.nan_sign_mask)));
    const __m256 nan_value = _mm256_castsi256_ps(_mm256_or_si256(_mm256_set1_epi32(static_cast<int>(r.nan_bits)), sign));
    return _mm256_blendv_ps(rounded, nan_value, is_nan);
}

// Round-to-nearest-even of the fp32 bit pattern to (23 − shift) mantissa bits.
MANTISSA_LANES_TARGET inline __m256i round_bits(__m256i bits, int shift) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, shift), one);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32((1 << (shift - 1)) - 1), lsb);
    return _mm256_and_si256(_mm256_add_epi32(bits, bias), _mm256_set1_epi32(~((1 << shift) - 1)));
}

template <Method M>
MANTISSA_LANES_TARGET inline __m256 round8(__m256 v, const Rounding& r) {
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    if constexpr (M == Method::keep) {
        return v;
    } else if constexpr (M == Method::wide_exponent) {
        __m256 rounded = _mm256_castsi256_ps(round_bits(_mm256_castps_si256(v), r.shift));
        if (r.saturate) {
            const __m256 magnitude = _mm256_min_ps(_mm256_andnot_ps(sign_mask, rounded), _mm256_set1_ps(r.max_finite));
            rounded = _mm256_or_ps(magnitude, _mm256_and_ps(sign_mask, rounded));
        }
        return apply_nan(v, rounded, r);
    } else if constexpr (M == Method::half) {
        // Clamping the input is the same as saturating the result: everything that would round
        // past 65504 becomes 65504, and nothing below it changes (NaN lanes are replaced below).
        __m256 x = v;
        if (r.saturate)
            x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(r.max_finite)), _mm256_set1_ps(-r.max_finite));
        const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return apply_nan(v, _mm256_cvtph_ps(h), r);
    } else {
        const __m256 magic = _mm256_set1_ps(r.magic);
        const __m256 a = _mm256_andnot_ps(sign_mask, v);
        const __m256 normal = _mm256_castsi256_ps(round_bits(_mm256_castps_si256(a), r.shift));
        const __m256 subnormal = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
        __m256 rounded = _mm256_blendv_ps(normal, subnormal, _mm256_cmp_ps(a, _mm256_set1_ps(r.min_normal), _CMP_LT_OQ));
        rounded = _mm256_blendv_ps(rounded, _mm256_set1_ps(r.overflow_value),
                                   _mm256_cmp_ps(rounded, _mm256_set1_ps(r.max_finite), _CMP_GT_OQ));
        rounded = _mm256_or_ps(rounded, _mm256_and_ps(v, sign_mask));
        return apply_nan(v, rounded, r);
    }
}

// A mask of the first n lanes (0 <= n <= 8), for _mm256_maskload_ps and _mm256_maskstore_ps: a
// pass's last n < 8 values without a scalar loop and without touching memory past them.
MANTISSA_LANES_TARGET inline __m256i first_lanes(std::int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The lanes whose magnitude's bit pattern is above zero and below `below` (all ones), as
// rounding_may_flush (numeric/stats.h) tests each value: for a pass that checks what it
// computes before it rounds it. Magnitudes are below 2^31, so the signed compares order them.
MANTISSA_LANES_TARGET inline __m256i nonzero_below(__m256 v, __m256i below) {
    const __m256i m = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
    return _mm256_and_si256(_mm256_cmpgt_epi32(m, _mm256_setzero_si256()), _mm256_cmpgt_epi32(below, m));
}

// f(std::integral_constant<Method, M>{}) for the rounding's method: one kernel per method,
// chosen once per pass.
template <class F>
decltype(auto) with_method(Method m, F&& f) {
    switch (m) {
    case Method::wide_exponent: return f(std::integral_constant<Method, Method::wide_exponent>{});
    case Method::half: return f(std::integral_constant<Method, Method::half>{});
    case Method::fp8: return f(std::integral_constant<Method, Method::fp8>{});
    case Method::keep: break;
    }
    return f(std::integral_constant<Method, Method::keep>{});
}

}  // namespace mantissa::lanes

#endif
