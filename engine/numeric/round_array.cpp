// round_array: rounds a float array to a format, in place or while copying (one pass instead of a
// copy and a rounding: the CPU backend's weight casts and operand copies), the CPU backend's hot
// path. Both forms run the same kernels (load from src, store to dst), so they agree bit for bit.
//
// One AVX2 kernel covers every format, round8 of the format's method on each vector
// (numeric/round_lanes.h), bit-identical to the scalar round_to (tested over random bit patterns
// and every edge). The methods:
// - bf16, tf32: round-to-nearest-even on the fp32 bit pattern (add 0x7fff.. plus the kept LSB, then
//   clear the dropped bits). Their exponent range is fp32's, so this is exact for subnormals too.
// - fp16: the F16C conversion instructions, which round to nearest even with fp16 subnormals.
// - fp8: the normal range by the bit pattern as above; below the smallest normal, adding and
//   subtracting 2^(emin - M + 23) makes the FPU round to the subnormal quantum; overflow decided
//   after rounding, as encode() does.
// NaN lanes get the canonical NaN that round_to produces. The kernel is compiled for AVX2/F16C
// by target attributes and chosen at run time; other CPUs take the scalar path. It also has a
// measured form for scale_round_array: a multiply by the scale first, and the amax of its input.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "numeric/convert.h"
#include "numeric/round_lanes.h"

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

#ifdef MANTISSA_ROUND_LANES

using lanes::Method;

// The largest of eight magnitudes' bit patterns (below 2^31: signed and unsigned order agree).
MANTISSA_LANES_TARGET inline std::uint32_t horizontal_max(__m256i v) {
    alignas(32) std::uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    return *std::max_element(lanes, lanes + 8);
}

// Eight values from s to d; Measured: each multiplied by `scale` first, and their magnitudes'
// bit patterns into amax.
template <Method M, bool Measured>
MANTISSA_LANES_TARGET inline void round_vector(const lanes::Rounding& r, const float* s, float* d, __m256 scale,
                                               __m256i& amax) {
    __m256 v = _mm256_loadu_ps(s);
    if constexpr (Measured) {
        amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff)));
        v = _mm256_mul_ps(v, scale);
    }
    _mm256_storeu_ps(d, lanes::round8<M>(v, r));
}

// One kernel for every format, round8 of its method on each vector. The last n < 8 values go
// through the same vector on a copy padded with zeros (the passes round many short pieces, where
// a scalar round_to per value showed in profiles). Measured: each value is first multiplied by
// `scale` and the largest |src| bit pattern is accumulated into *amax_bits (scale_round_array
// in one pass; NaN above inf).
template <Method M, bool Measured>
MANTISSA_LANES_TARGET void round_lanes(const lanes::Rounding& rounding, const float* src, float* dst, std::size_t n,
                                       float scale, std::uint32_t* amax_bits) {
    const lanes::Rounding r = rounding;
    const __m256 scale_v = _mm256_set1_ps(scale);
    __m256i amax = _mm256_setzero_si256();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) round_vector<M, Measured>(r, src + i, dst + i, scale_v, amax);
    if (i < n) {
        alignas(32) float in[8] = {};
        alignas(32) float out[8];
        std::memcpy(in, src + i, (n - i) * sizeof(float));
        round_vector<M, Measured>(r, in, out, scale_v, amax);
        std::memcpy(dst + i, out, (n - i) * sizeof(float));
    }
    if constexpr (Measured) *amax_bits = std::max(*amax_bits, horizontal_max(amax));
}

template <bool Measured>
void round_in_lanes(Format format, const float* src, float* dst, std::size_t n, Overflow overflow, float scale,
                    std::uint32_t* amax_bits) {
    const lanes::Rounding r = lanes::rounding_for(format, overflow);
    lanes::with_method(r.method, [&](auto method) {
        round_lanes<decltype(method)::value, Measured>(r, src, dst, n, scale, amax_bits);
    });
}

#endif  // MANTISSA_ROUND_LANES

}  // namespace

#ifdef MANTISSA_ROUND_LANES
namespace lanes {

namespace {

Rounding rounding_of(Format format, Overflow overflow) {
    const FormatInfo& info = format_info(format);
    const NanResult nan = nan_result(format);
    Rounding r;
    r.method = format == Format::fp32   ? Method::keep
               : format == Format::fp16 ? Method::half
               : (format == Format::bf16 || format == Format::tf32) ? Method::wide_exponent
                                                                    : Method::fp8;
    r.saturate = overflow == Overflow::saturate;
    r.shift = 23 - info.mantissa_bits;
    r.nan_bits = nan.bits;
    r.nan_sign_mask = nan.sign_mask;
    r.max_finite = info.max_finite;
    r.min_normal = info.min_normal;
    r.overflow_value = r.saturate ? info.max_finite : std::abs(round_to(format, std::numeric_limits<float>::infinity()));
    r.magic = std::ldexp(1.0f, info.min_exponent - info.mantissa_bits + 23);
    return r;
}

}  // namespace

Rounding rounding_for(Format format, Overflow overflow) {
    static const auto table = [] {
        std::array<std::array<Rounding, 2>, all_formats.size()> t{};
        for (Format f : all_formats)
            for (Overflow o : {Overflow::to_inf, Overflow::saturate})
                t[static_cast<std::size_t>(f)][static_cast<std::size_t>(o)] = rounding_of(f, o);
        return t;
    }();
    return table[static_cast<std::size_t>(format)][static_cast<std::size_t>(overflow)];
}

bool supported() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    return has;
}

}  // namespace lanes
#endif

void round_array(Format format, const float* src, float* dst, std::size_t n, Overflow overflow) {
    if (n == 0) return;
    if (format == Format::fp32) {
        if (src != dst) std::memcpy(dst, src, n * sizeof(float));
        return;
    }
#ifdef MANTISSA_ROUND_LANES
    if (lanes::supported()) return round_in_lanes<false>(format, src, dst, n, overflow, 1.0f, nullptr);
#endif
    round_scalar(format, src, dst, n, overflow);
}

void round_array(Format format, float* data, std::size_t n, Overflow overflow) {
    round_array(format, data, data, n, overflow);
}

float scale_round_array(Format format, const float* src, float* dst, std::size_t n, float scale,
                        Overflow overflow) {
    std::uint32_t amax_bits = 0;
#ifdef MANTISSA_ROUND_LANES
    if (lanes::supported() && format != Format::fp32) {
        round_in_lanes<true>(format, src, dst, n, overflow, scale, &amax_bits);
        return std::bit_cast<float>(amax_bits);
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
