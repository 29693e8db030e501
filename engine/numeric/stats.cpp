// Gradient statistics: plain loops over FP32 arrays, written so the compiler vectorises them
// (integer compares on the bit patterns, no branches in the counting loops).
#include "numeric/stats.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mantissa {

RoundingStats& RoundingStats::operator+=(const RoundingStats& o) {
    elements += o.elements;
    zeros_before += o.zeros_before;
    zeros += o.zeros;
    subnormals += o.subnormals;
    nonfinite += o.nonfinite;
    return *this;
}

std::int64_t count_zeros(const float* data, std::size_t n) {
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    std::int64_t zeros = 0;
    for (std::size_t i = 0; i < n; ++i) zeros += (bits[i] & 0x7fffffffu) == 0;
    return zeros;
}

void count_classes(Format format, const float* data, std::size_t n, RoundingStats& stats) {
    // On magnitudes' bit patterns: zero == 0, subnormal in (0, min_normal), non-finite >= inf.
    const std::uint32_t min_normal = std::bit_cast<std::uint32_t>(format_info(format).min_normal);
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    std::int64_t zeros = 0, subnormals = 0, nonfinite = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t m = bits[i] & 0x7fffffffu;
        zeros += m == 0;
        subnormals += (m - 1u) < (min_normal - 1u);  // 0 < m < min_normal, one compare
        nonfinite += m >= 0x7f800000u;
    }
    stats.elements += static_cast<std::int64_t>(n);
    stats.zeros += zeros;
    stats.subnormals += subnormals;
    stats.nonfinite += nonfinite;
}

void round_array_with_stats(Format format, float* data, std::size_t n, RoundingStats& stats,
                            Overflow overflow) {
    stats.zeros_before += count_zeros(data, n);
    if (format != Format::fp32) round_array(format, data, n, overflow);
    count_classes(format, data, n, stats);
}

int exponent_of(float x) {
    const std::uint32_t m = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
    const int biased = static_cast<int>(m >> 23);
    if (biased != 0) return biased - 127;
    const std::uint32_t fraction = m & 0x7fffffu;  // subnormal: fraction * 2^-149
    return -149 + (31 - std::countl_zero(fraction));
}

void exponent_histogram(const float* data, std::size_t n, float multiplier, int min_exponent,
                        std::uint32_t* counts, int bins, double* amax, std::int64_t* nonfinite) {
    float local_amax = 0;
    std::int64_t local_nonfinite = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const float v = multiplier == 1.0f ? data[i] : data[i] * multiplier;
        const std::uint32_t m = std::bit_cast<std::uint32_t>(v) & 0x7fffffffu;
        if (m >= 0x7f800000u) {
            ++local_nonfinite;
            continue;
        }
        if (m == 0) continue;
        local_amax = std::max(local_amax, std::bit_cast<float>(m));
        const int bin = std::clamp(exponent_of(v) - min_exponent, 0, bins - 1);
        ++counts[bin];
    }
    *amax = std::max(*amax, static_cast<double>(local_amax));
    *nonfinite += local_nonfinite;
}

}  // namespace mantissa
