// Gradient statistics: plain loops over FP32 arrays, written so the compiler vectorises them
// (integer compares on the bit patterns, no branches in the counting loops); the one loop it does
// not vectorise (amax and zeros of the histogram) is written in AVX2 by hand, chosen at run time.
// The exponent histogram's table increments stay scalar (about two cycles a value): they are the
// floor of a statistics step's cost.
#include "numeric/stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MANTISSA_X86 1
#endif

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

// Indices in bits_a[0..n) and bits_b[0..n) where one value is zero and the other not.
MANTISSA_HOT std::uint32_t zero_mismatches_in(const std::uint32_t* __restrict a, const std::uint32_t* __restrict b,
                                              std::size_t n) {
    std::uint32_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) mismatches += ((a[i] & 0x7fffffffu) == 0) != ((b[i] & 0x7fffffffu) == 0);
    return mismatches;
}

// Non-zero magnitudes below `below` (a bit pattern) in bits[0..n).
MANTISSA_HOT std::uint32_t nonzero_below_in(const std::uint32_t* __restrict bits, std::size_t n, std::uint32_t below) {
    std::uint32_t count = 0;
    for (std::size_t i = 0; i < n; ++i) count += ((bits[i] & 0x7fffffffu) - 1u) < (below - 1u);
    return count;
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

// The magnitudes' bit patterns order as the values do (NaN's above inf's), and a signed
// integer max vectorises where a float one (with NaN's rules) does not.
MANTISSA_HOT float max_abs_kernel(const float* data, std::size_t n) {
    std::int32_t m = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t a = std::bit_cast<std::int32_t>(data[i]) & 0x7FFFFFFF;
        m = a > m ? a : m;
    }
    return std::bit_cast<float>(m);
}

}  // namespace

float max_abs(const float* data, std::size_t n) { return max_abs_kernel(data, n); }

std::int64_t count_zeros(const float* data, std::size_t n) {
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    std::int64_t zeros = 0;
    for (std::size_t start = 0; start < n; start += block)
        zeros += zeros_in(bits + start, std::min(block, n - start));
    return zeros;
}

bool same_zeros(const float* a, const float* b, std::size_t n) {
    // Pieces of 16 KiB, so a difference near the start ends the pass early.
    constexpr std::size_t piece = 4096;
    const auto* bits_a = reinterpret_cast<const std::uint32_t*>(a);
    const auto* bits_b = reinterpret_cast<const std::uint32_t*>(b);
    for (std::size_t start = 0; start < n; start += piece)
        if (zero_mismatches_in(bits_a + start, bits_b + start, std::min(piece, n - start)) != 0) return false;
    return true;
}

bool rounding_may_flush(Format format, const float* data, std::size_t n) {
    const std::uint32_t below = std::bit_cast<std::uint32_t>(format_info(format).min_subnormal);
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    for (std::size_t start = 0; start < n; start += block)
        if (nonzero_below_in(bits + start, std::min(block, n - start), below) != 0) return true;
    return false;
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
    // Blocks of 2048 values (8 KiB): counted, rounded and counted again while in the L1 cache.
    // Integer counts, so the blocking changes nothing in the result.
    if (format == Format::fp32) {  // rounding changes nothing: one counting pass
        const std::int64_t zeros = stats.zeros;
        count_classes(format, data, n, stats);
        stats.zeros_before += stats.zeros - zeros;
        return;
    }
    constexpr std::size_t piece = 2048;
    for (std::size_t start = 0; start < n; start += piece) {
        const std::size_t len = std::min(piece, n - start);
        float* p = data + start;
        stats.zeros_before += count_zeros(p, len);
        if (format != Format::fp32) round_array(format, p, len, overflow);
        count_classes(format, p, len, stats);
    }
}

namespace {

// Counts of the exponent field (bits 23..30) over bits[0..n), four interleaved tables so
// consecutive increments of one bin do not wait on each other. n < 2^24 per table between
// flushes (32-bit counters). Scalar: four instructions a value.
void exponent_fields(const std::uint32_t* __restrict bits, std::size_t n,
                     std::uint32_t (*__restrict tables)[256]) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        ++tables[0][(bits[i] >> 23) & 0xffu];
        ++tables[1][(bits[i + 1] >> 23) & 0xffu];
        ++tables[2][(bits[i + 2] >> 23) & 0xffu];
        ++tables[3][(bits[i + 3] >> 23) & 0xffu];
    }
    for (; i < n; ++i) ++tables[0][(bits[i] >> 23) & 0xffu];
}

// The largest finite magnitude's bits and the number of exact zeros (the compiler does not
// vectorise this loop: the AVX2 form below does it by hand).
void amax_and_zeros_scalar(const std::uint32_t* bits, std::size_t n, std::uint32_t* amax_bits,
                           std::uint32_t* zeros) {
    std::uint32_t amax = 0, z = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t m = bits[i] & 0x7fffffffu;
        amax = std::max(amax, m < 0x7f800000u ? m : 0u);
        z += m == 0;
    }
    *amax_bits = std::max(*amax_bits, amax);
    *zeros += z;
}

#ifdef MANTISSA_X86
// Magnitudes are below 2^31, so signed 32-bit compares order them.
__attribute__((target("avx2"))) void amax_and_zeros_avx2(const std::uint32_t* bits, std::size_t n,
                                                         std::uint32_t* amax_bits, std::uint32_t* zeros) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf_bits = _mm256_set1_epi32(0x7f800000);
    const __m256i zero = _mm256_setzero_si256();
    __m256i amax = zero, count = zero;  // count: minus the zeros per lane
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i m = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + i)), abs_mask);
        amax = _mm256_max_epi32(amax, _mm256_and_si256(m, _mm256_cmpgt_epi32(inf_bits, m)));
        count = _mm256_add_epi32(count, _mm256_cmpeq_epi32(m, zero));
    }
    alignas(32) std::uint32_t a[8], c[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(a), amax);
    _mm256_store_si256(reinterpret_cast<__m256i*>(c), count);
    std::uint32_t z = 0;
    for (int k = 0; k < 8; ++k) {
        *amax_bits = std::max(*amax_bits, a[k]);
        z -= c[k];
    }
    *zeros += z;
    amax_and_zeros_scalar(bits + i, n - i, amax_bits, zeros);
}
#endif

void amax_and_zeros(const std::uint32_t* bits, std::size_t n, std::uint32_t* amax_bits,
                    std::uint32_t* zeros) {
#ifdef MANTISSA_X86
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return amax_and_zeros_avx2(bits, n, amax_bits, zeros);
#endif
    amax_and_zeros_scalar(bits, n, amax_bits, zeros);
}

}  // namespace

void ExponentTally::reset() {
    std::fill(std::begin(m_fields), std::end(m_fields), std::uint64_t{0});
    std::fill(std::begin(m_subnormal), std::end(m_subnormal), std::uint64_t{0});
    std::fill(&m_tables[0][0], &m_tables[0][0] + 4 * 256, std::uint32_t{0});
    m_pending = 0;
    m_amax_bits = 0;
}

void ExponentTally::flush() {
    for (int f = 0; f < 256; ++f) {
        m_fields[f] += std::uint64_t{m_tables[0][f]} + m_tables[1][f] + m_tables[2][f] + m_tables[3][f];
        m_tables[0][f] = m_tables[1][f] = m_tables[2][f] = m_tables[3][f] = 0;
    }
    m_pending = 0;
}

void ExponentTally::add(const float* data, std::size_t n) {
    // Pieces of 2048 values: the two loops over a piece read it from the L1 cache.
    constexpr std::size_t piece = 2048;
    const auto* bits = reinterpret_cast<const std::uint32_t*>(data);
    for (std::size_t start = 0; start < n; start += piece) {
        const std::size_t len = std::min(piece, n - start);
        if (m_pending + len >= block) flush();
        const std::uint64_t field0 =
            std::uint64_t{m_tables[0][0]} + m_tables[1][0] + m_tables[2][0] + m_tables[3][0];
        exponent_fields(bits + start, len, m_tables);
        std::uint32_t zeros = 0;
        amax_and_zeros(bits + start, len, &m_amax_bits, &zeros);
        m_pending += len;
        const std::uint64_t field0_now =
            std::uint64_t{m_tables[0][0]} + m_tables[1][0] + m_tables[2][0] + m_tables[3][0];
        if (field0_now - field0 > zeros) {  // subnormals in this piece: their exponents need the fraction
            for (std::size_t i = start; i < start + len; ++i) {
                const std::uint32_t m = bits[i] & 0x7fffffffu;
                if (m != 0 && m < 0x00800000u) ++m_subnormal[exponent_of(data[i]) + 149];
            }
        }
    }
}

void ExponentTally::finish(int min_exponent, std::uint32_t* counts, int bins, double* amax,
                           std::int64_t* nonfinite) const {
    auto bin_of = [&](int exponent) { return static_cast<std::size_t>(std::clamp(exponent - min_exponent, 0, bins - 1)); };
    for (int f = 1; f < 256; ++f) {
        const std::uint64_t c = m_fields[f] + m_tables[0][f] + m_tables[1][f] + m_tables[2][f] + m_tables[3][f];
        if (f == 255) *nonfinite += static_cast<std::int64_t>(c);
        else counts[bin_of(f - 127)] += static_cast<std::uint32_t>(c);
    }
    for (int e = 0; e < 23; ++e) counts[bin_of(e - 149)] += static_cast<std::uint32_t>(m_subnormal[e]);
    *amax = std::max(*amax, static_cast<double>(std::bit_cast<float>(m_amax_bits)));
}

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
    ExponentTally tally;
    tally.add(data, n);
    tally.finish(min_exponent, counts, bins, amax, nonfinite);
}

}  // namespace mantissa
