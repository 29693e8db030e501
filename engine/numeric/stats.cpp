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

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MANTISSA_HOT
#endif

// 32-bit counters per block of 2^24 elements (they cannot overflow), summed in 64 bits: the
// loops stay in 32-bit lanes and vectorise.
constexpr std::size_t block = std::size_t{1} << 24;

MANTISSA_HOT std::uint32_t zeros_in(const std::uint32_t* __restrict bits, std::size_t n) {
    std::uint32_t zeros = 0;
    for (std::size_t i = 0; i < n; ++i) zeros += (bits[i] & 0x7fffffffu) == 0;
    return zeros;
}

MANTISSA_HOT void classes_in(const std::uint32_t* __restrict bits, std::size_t n, std::uint32_t min_normal,
                             std::uint32_t* zeros, std::uint32_t* subnormals, std::uint32_t* nonfinite) {
    std::uint32_t z = 0, s = 0, f = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t m = bits[i] & 0x7fffffffu;
        z += m == 0;
        s += (m - 1u) < (min_normal - 1u);  // 0 < m < min_normal, one compare
        f += m >= 0x7f800000u;
    }
    *zeros = z;
    *subnormals = s;
    *nonfinite = f;
}

}  // namespace

std::int64_t count_zeros(const float* data, std::size_t n) {
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    std::int64_t zeros = 0;
    for (std::size_t start = 0; start < n; start += block)
        zeros += zeros_in(bits + start, std::min(block, n - start));
    return zeros;
}

void count_classes(Format format, const float* data, std::size_t n, RoundingStats& stats) {
    const std::uint32_t min_normal = std::bit_cast<std::uint32_t>(format_info(format).min_normal);
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    for (std::size_t start = 0; start < n; start += block) {
        std::uint32_t z, s, f;
        classes_in(bits + start, std::min(block, n - start), min_normal, &z, &s, &f);
        stats.zeros += z;
        stats.subnormals += s;
        stats.nonfinite += f;
    }
    stats.elements += static_cast<std::int64_t>(n);
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

namespace {

// Counts of the exponent field (bits 23..30) over bits[0..n), four interleaved tables so
// consecutive increments of one bin do not wait on each other; the largest finite magnitude's
// bits and the number of exact zeros.
MANTISSA_HOT void exponent_fields(const std::uint32_t* __restrict bits, std::size_t n,
                                  std::uint32_t (*__restrict tables)[256], std::uint32_t* amax_bits,
                                  std::uint64_t* zeros) {
    std::uint32_t amax = 0;
    std::uint64_t z = 0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (std::size_t k = 0; k < 4; ++k) {
            const std::uint32_t m = bits[i + k] & 0x7fffffffu;
            ++tables[k][m >> 23];
            amax = std::max(amax, m < 0x7f800000u ? m : 0u);
            z += m == 0;
        }
    }
    for (; i < n; ++i) {
        const std::uint32_t m = bits[i] & 0x7fffffffu;
        ++tables[0][m >> 23];
        amax = std::max(amax, m < 0x7f800000u ? m : 0u);
        z += m == 0;
    }
    *amax_bits = std::max(*amax_bits, amax);
    *zeros += z;
}

}  // namespace

void exponent_histogram(const float* data, std::size_t n, float multiplier, int min_exponent,
                        std::uint32_t* counts, int bins, double* amax, std::int64_t* nonfinite) {
    auto bin_of = [&](int exponent) { return static_cast<std::size_t>(std::clamp(exponent - min_exponent, 0, bins - 1)); };
    if (multiplier != 1.0f) {  // rare: the plain definition
        float local = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const float v = data[i] * multiplier;
            if (!std::isfinite(v)) {
                ++*nonfinite;
            } else if (v != 0.0f) {
                local = std::max(local, std::abs(v));
                ++counts[bin_of(exponent_of(v))];
            }
        }
        *amax = std::max(*amax, static_cast<double>(local));
        return;
    }
    // The exponent field is the bin for normal values (field f: exponent f - 127); field 255 is
    // inf/NaN; field 0 holds the zeros and the subnormals, whose exponents need their fraction.
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    std::uint32_t tables[4][256] = {};
    std::uint32_t amax_bits = 0;
    std::uint64_t zeros = 0;
    for (std::size_t start = 0; start < n; start += block)
        exponent_fields(bits + start, std::min(block, n - start), tables, &amax_bits, &zeros);
    std::uint64_t field[256];
    for (int f = 0; f < 256; ++f) field[f] = std::uint64_t{tables[0][f]} + tables[1][f] + tables[2][f] + tables[3][f];
    for (int f = 1; f < 255; ++f) counts[bin_of(f - 127)] += static_cast<std::uint32_t>(field[f]);
    *nonfinite += static_cast<std::int64_t>(field[255]);
    if (field[0] > zeros) {  // subnormals present
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t m = bits[i] & 0x7fffffffu;
            if (m != 0 && m < 0x00800000u) ++counts[bin_of(exponent_of(data[i]))];
        }
    }
    *amax = std::max(*amax, static_cast<double>(std::bit_cast<float>(amax_bits)));
}

}  // namespace mantissa
