// round_array: rounds a float array to a format, in place or while copying (one pass instead of a
// copy and a rounding: the CPU backend's weight casts and operand copies), the CPU backend's hot
// path. Both forms run the same kernels (load from src, store to dst), so they agree bit for bit.
//
// Three AVX2 kernels cover every format, each bit-identical to the scalar round_to (tested over
// random bit patterns and every edge):
// - bf16, tf32: round-to-nearest-even on the fp32 bit pattern (add 0x7fff.. plus the kept LSB, then
//   clear the dropped bits). Their exponent range is fp32's, so this is exact for subnormals too.
// - fp16: the F16C conversion instructions, which round to nearest even with fp16 subnormals.
// - fp8: the normal range by the bit pattern as above; below the smallest normal, adding and
//   subtracting 2^(emin - M + 23) makes the FPU round to the subnormal quantum; overflow decided
//   after rounding, as encode() does.
// NaN lanes get the canonical NaN that round_to produces. The kernels are compiled for AVX2/F16C
// by target attributes and chosen at run time; other CPUs take the scalar path. Each also has a
// measured form for scale_round_array: a multiply by the scale first, and the amax of its input.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "numeric/convert.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MANTISSA_X86 1
#endif

namespace mantissa {

namespace {

// src == dst (in place) or the two do not overlap; element i is read before it is written.
void round_scalar(Format format, const float* src, float* dst, std::size_t n, Overflow overflow) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = round_to(format, src[i], overflow);
}

// The fp32 bits round_to gives for NaN: {positive pattern, whether the input's sign is kept}.
struct NanResult {
    std::uint32_t bits;
    std::uint32_t sign_mask;
};

NanResult nan_result_of(Format f) {
    const float positive = round_to(f, std::bit_cast<float>(0x7fc00000u));
    const float negative = round_to(f, std::bit_cast<float>(0xffc00000u));
    const std::uint32_t pb = std::bit_cast<std::uint32_t>(positive);
    const std::uint32_t nb = std::bit_cast<std::uint32_t>(negative);
    return {pb, (pb ^ nb) & 0x80000000u};
}

// Worked out once per format: the passes round many short pieces (a batch norm rounds each
// plane of 196 values), where two scalar round_to calls per piece showed in profiles.
NanResult nan_result(Format f) {
    static const std::array<NanResult, all_formats.size()> results = [] {
        std::array<NanResult, all_formats.size()> r{};
        for (Format g : all_formats) r[static_cast<std::size_t>(g)] = nan_result_of(g);
        return r;
    }();
    return results[static_cast<std::size_t>(f)];
}

#ifdef MANTISSA_X86

__attribute__((target("avx2"))) inline __m256 apply_nan(__m256 input, __m256 rounded, NanResult nan) {
    const __m256 is_nan = _mm256_cmp_ps(input, input, _CMP_UNORD_Q);
    const __m256i sign = _mm256_and_si256(_mm256_castps_si256(input), _mm256_set1_epi32(static_cast<int>(nan.sign_mask)));
    const __m256 nan_value = _mm256_castsi256_ps(_mm256_or_si256(_mm256_set1_epi32(static_cast<int>(nan.bits)), sign));
    return _mm256_blendv_ps(rounded, nan_value, is_nan);
}

// Round-to-nearest-even of the fp32 bit pattern to (23 - shift) mantissa bits.
__attribute__((target("avx2"))) inline __m256i round_bits(__m256i bits, int shift) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, shift), one);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32((1 << (shift - 1)) - 1), lsb);
    return _mm256_and_si256(_mm256_add_epi32(bits, bias), _mm256_set1_epi32(~((1 << shift) - 1)));
}

__attribute__((target("avx2"))) inline __m256 saturate(__m256 r, float max_finite) {
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    const __m256 mag = _mm256_min_ps(_mm256_andnot_ps(sign_mask, r), _mm256_set1_ps(max_finite));
    return _mm256_or_ps(mag, _mm256_and_ps(sign_mask, r));
}

// The largest of eight magnitudes' bit patterns (below 2^31: signed and unsigned order agree).
__attribute__((target("avx2"))) inline std::uint32_t horizontal_max(__m256i v) {
    alignas(32) std::uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    return *std::max_element(lanes, lanes + 8);
}

// The last n < 8 values of a piece, through the 8-wide kernel on a padded copy: the same bits
// as the scalar round_to, without its per-value cost (the passes round many short pieces).
template <class Kernel>
void round_tail(const float* src, float* dst, std::size_t n, Kernel kernel) {
    alignas(32) float in[8] = {};
    alignas(32) float out[8];
    std::memcpy(in, src, n * sizeof(float));
    kernel(in, out);
    std::memcpy(dst, out, n * sizeof(float));
}

// Measured: each value is first multiplied by `scale` and the largest |src| bit pattern is
// accumulated into *amax_bits, as in round_fp8_avx2_impl (scale_round_array in one pass).
template <bool Measured>
__attribute__((target("avx2"))) void round_wide_exponent_avx2_impl(Format format, const float* src, float* dst,
                                                                   std::size_t n, Overflow overflow, float scale,
                                                                   std::uint32_t* amax_bits) {
    const int shift = 23 - format_info(format).mantissa_bits;
    const NanResult nan = nan_result(format);
    const float max_finite = format_info(format).max_finite;
    const __m256 scale_v = _mm256_set1_ps(scale);
    const __m256i abs_bits = _mm256_set1_epi32(0x7fffffff);
    __m256i amax = _mm256_setzero_si256();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        if constexpr (Measured) {
            amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(v), abs_bits));
            v = _mm256_mul_ps(v, scale_v);
        }
        __m256 r = _mm256_castsi256_ps(round_bits(_mm256_castps_si256(v), shift));
        if (overflow == Overflow::saturate) r = saturate(r, max_finite);
        _mm256_storeu_ps(dst + i, apply_nan(v, r, nan));
    }
    if constexpr (Measured) *amax_bits = std::max(*amax_bits, horizontal_max(amax));
    if (i < n) round_tail(src + i, dst + i, n - i, [&](const float* s, float* d) {
        round_wide_exponent_avx2_impl<Measured>(format, s, d, 8, overflow, scale, amax_bits);  // zeros pad
    });
}

__attribute__((target("avx2"))) void round_wide_exponent_avx2(Format format, const float* src, float* dst,
                                                               std::size_t n, Overflow overflow) {
    round_wide_exponent_avx2_impl<false>(format, src, dst, n, overflow, 1.0f, nullptr);
}

template <bool Measured>
__attribute__((target("avx2,f16c"))) void round_fp16_f16c_impl(const float* src, float* dst, std::size_t n,
                                                                Overflow overflow, float scale, std::uint32_t* amax_bits) {
    const NanResult nan = nan_result(Format::fp16);
    const float max_finite = format_info(Format::fp16).max_finite;
    const __m256 scale_v = _mm256_set1_ps(scale);
    const __m256i abs_bits = _mm256_set1_epi32(0x7fffffff);
    __m256i amax = _mm256_setzero_si256();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        if constexpr (Measured) {
            amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(v), abs_bits));
            v = _mm256_mul_ps(v, scale_v);
        }
        __m256 x = v;
        // Clamping the input is the same as saturating the result: everything that would round
        // past 65504 becomes 65504, and nothing below it changes. (NaN lanes are replaced below.)
        if (overflow == Overflow::saturate)
            x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(max_finite)), _mm256_set1_ps(-max_finite));
        const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(dst + i, apply_nan(v, _mm256_cvtph_ps(h), nan));
    }
    if constexpr (Measured) *amax_bits = std::max(*amax_bits, horizontal_max(amax));
    if (i < n) round_tail(src + i, dst + i, n - i, [&](const float* s, float* d) {
        round_fp16_f16c_impl<Measured>(s, d, 8, overflow, scale, amax_bits);  // zeros pad
    });
}

__attribute__((target("avx2,f16c"))) void round_fp16_f16c(const float* src, float* dst, std::size_t n,
                                                           Overflow overflow) {
    round_fp16_f16c_impl<false>(src, dst, n, overflow, 1.0f, nullptr);
}

// Scaled: each value is first multiplied by `scale` (an FP32 multiply, as a separate pass would
// do) and the largest |src| bit pattern is accumulated into *amax_bits (NaN above inf).
template <bool Scaled>
__attribute__((target("avx2"))) void round_fp8_avx2_impl(Format format, const float* src, float* dst,
                                                          std::size_t n, Overflow overflow, float scale,
                                                          std::uint32_t* amax_bits) {
    const FormatInfo& info = format_info(format);
    const int shift = 23 - info.mantissa_bits;
    const NanResult nan = nan_result(format);
    // Adding 2^(emin - M + 23) puts |x| < 2^emin in a binade whose ulp is the subnormal quantum.
    const __m256 magic = _mm256_set1_ps(std::ldexp(1.0f, info.min_exponent - info.mantissa_bits + 23));
    const __m256 min_normal = _mm256_set1_ps(info.min_normal);
    const __m256 max_finite = _mm256_set1_ps(info.max_finite);
    const float overflow_value = overflow == Overflow::saturate
                                     ? info.max_finite
                                     : std::abs(round_to(format, std::numeric_limits<float>::infinity()));
    const __m256 overflow_v = _mm256_set1_ps(overflow_value);
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    const __m256 scale_v = _mm256_set1_ps(scale);
    const __m256i abs_bits = _mm256_set1_epi32(0x7fffffff);
    __m256i amax = _mm256_setzero_si256();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        if constexpr (Scaled) {
            amax = _mm256_max_epu32(amax, _mm256_and_si256(_mm256_castps_si256(v), abs_bits));
            v = _mm256_mul_ps(v, scale_v);
        }
        const __m256 a = _mm256_andnot_ps(sign_mask, v);
        const __m256 normal = _mm256_castsi256_ps(round_bits(_mm256_castps_si256(a), shift));
        const __m256 sub = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
        __m256 r = _mm256_blendv_ps(normal, sub, _mm256_cmp_ps(a, min_normal, _CMP_LT_OQ));
        r = _mm256_blendv_ps(r, overflow_v, _mm256_cmp_ps(r, max_finite, _CMP_GT_OQ));
        r = _mm256_or_ps(r, _mm256_and_ps(v, sign_mask));
        _mm256_storeu_ps(dst + i, apply_nan(v, r, nan));
    }
    if constexpr (Scaled) {
        *amax_bits = std::max(*amax_bits, horizontal_max(amax));
        for (; i < n; ++i) {
            *amax_bits = std::max(*amax_bits, std::bit_cast<std::uint32_t>(src[i]) & 0x7fffffffu);
            dst[i] = round_to(format, src[i] * scale, overflow);
        }
    } else if (i < n) {
        round_tail(src + i, dst + i, n - i, [&](const float* s, float* d) {
            round_fp8_avx2_impl<false>(format, s, d, 8, overflow, scale, amax_bits);
        });
    }
}

__attribute__((target("avx2"))) void round_fp8_avx2(Format format, const float* src, float* dst, std::size_t n,
                                                     Overflow overflow) {
    round_fp8_avx2_impl<false>(format, src, dst, n, overflow, 1.0f, nullptr);
}

bool cpu_has_avx2_f16c() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    return has;
}

#endif  // MANTISSA_X86

}  // namespace

void round_array(Format format, const float* src, float* dst, std::size_t n, Overflow overflow) {
    if (n == 0) return;
    if (format == Format::fp32) {
        if (src != dst) std::memcpy(dst, src, n * sizeof(float));
        return;
    }
#ifdef MANTISSA_X86
    if (cpu_has_avx2_f16c()) {
        switch (format) {
        case Format::bf16:
        case Format::tf32: round_wide_exponent_avx2(format, src, dst, n, overflow); return;
        case Format::fp16: round_fp16_f16c(src, dst, n, overflow); return;
        case Format::fp8_e4m3:
        case Format::fp8_e5m2: round_fp8_avx2(format, src, dst, n, overflow); return;
        case Format::fp32: return;
        }
    }
#endif
    round_scalar(format, src, dst, n, overflow);
}

void round_array(Format format, float* data, std::size_t n, Overflow overflow) {
    round_array(format, data, data, n, overflow);
}

float scale_round_array(Format format, const float* src, float* dst, std::size_t n, float scale,
                        Overflow overflow) {
    std::uint32_t amax_bits = 0;
#ifdef MANTISSA_X86
    if (cpu_has_avx2_f16c()) {
        switch (format) {
        case Format::fp8_e4m3:
        case Format::fp8_e5m2: round_fp8_avx2_impl<true>(format, src, dst, n, overflow, scale, &amax_bits); break;
        case Format::bf16:
        case Format::tf32:
            round_wide_exponent_avx2_impl<true>(format, src, dst, n, overflow, scale, &amax_bits);
            break;
        case Format::fp16: round_fp16_f16c_impl<true>(src, dst, n, overflow, scale, &amax_bits); break;
        case Format::fp32: break;  // below: the multiply alone
        }
        if (format != Format::fp32) return std::bit_cast<float>(amax_bits);
    }
#endif
    // Other formats and CPUs: the multiply and the rounding in blocks of 1024 (in the L1 cache).
    constexpr std::size_t block = 1024;
    for (std::size_t start = 0; start < n; start += block) {
        const std::size_t len = std::min(block, n - start);
        for (std::size_t i = start; i < start + len; ++i) {
            amax_bits = std::max(amax_bits, std::bit_cast<std::uint32_t>(src[i]) & 0x7fffffffu);
            dst[i] = src[i] * scale;
        }
        round_array(format, dst + start, len, overflow);
    }
    return std::bit_cast<float>(amax_bits);
}

}  // namespace mantissa
