// Stochastic rounding of floats and float arrays (stochastic_round.h). The element function is
// branch-free so that the array loops vectorise (built for AVX2 and baseline x86-64, chosen at run
// time); the block formats' stochastic pass is block_round.cpp's, with the same element rounding.
#include "numeric/stochastic_round.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "numeric/grid_round.h"

namespace mantissa {

namespace {

using namespace grid_detail;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_SR_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MANTISSA_SR_HOT
#endif

// How one format rounds: on the fp32 bit pattern (bf16, tf32: `dropped` low bits), or on a grid.
struct Rounder {
    int dropped = 0;                 // bit-pattern formats; 0: a grid format (or fp32)
    std::uint32_t overflow_bits = 0; // bit-pattern formats: a result at or beyond inf's pattern
    Grid grid{};
    float beyond = 0;                // grid formats: a result beyond max_finite
    bool identity = false;           // fp32
};

Rounder rounder_of(Format format, Overflow overflow) {
    Rounder r;
    const FormatInfo& f = format_info(format);
    if (format == Format::fp32) {
        r.identity = true;
    } else if (format == Format::bf16 || format == Format::tf32) {
        r.dropped = 23 - f.mantissa_bits;
        r.overflow_bits = overflow == Overflow::saturate ? std::bit_cast<std::uint32_t>(f.max_finite) : 0x7F800000u;
    } else {
        r.grid = {f.mantissa_bits, f.min_exponent, f.max_exponent, f.max_finite};
        r.beyond = overflow == Overflow::saturate ? f.max_finite
                   : f.has_infinity              ? std::numeric_limits<float>::infinity()
                                                 : std::numeric_limits<float>::quiet_NaN();
    }
    return r;
}

// bf16, tf32: the random bits added below the kept mantissa carry into it with probability
// (dropped bits) / 2^dropped, then the dropped bits are cleared (a carry into the exponent is the
// next binade's first value, or inf). NaN gives the canonical quiet NaN of its sign.
inline float round_bits(float x, std::uint32_t random, int dropped, std::uint32_t overflow_bits) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = bits & 0x80000000u, magnitude = bits & 0x7FFFFFFFu;
    const std::uint32_t mask = (1u << dropped) - 1u;
    std::uint32_t r = (magnitude + (random >> (32 - dropped))) & ~mask;
    r = r >= 0x7F800000u ? overflow_bits : r;
    r = magnitude > 0x7F800000u ? 0x7FC00000u : r;
    return std::bit_cast<float>(r | sign);
}

inline float round_one(const Rounder& r, float x, std::uint32_t random) {
    if (r.identity) return x;
    if (r.dropped) return round_bits(x, random, r.dropped, r.overflow_bits);
    return stochastic_to_grid(x, r.grid, unit_of(random), r.beyond);
}

MANTISSA_SR_HOT void bits_pass(const float* src, float* dst, std::size_t n, std::uint64_t key, std::uint64_t first,
                               int dropped, std::uint32_t overflow_bits) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = round_bits(src[i], random_bits(key, first + i), dropped, overflow_bits);
}

MANTISSA_SR_HOT void grid_pass(const float* src, float* dst, std::size_t n, std::uint64_t key, std::uint64_t first,
                               Grid g, float beyond, float scale) {
    for (std::size_t i = 0; i < n; ++i)
        dst[i] = stochastic_to_grid(src[i] * scale, g, unit_of(random_bits(key, first + i)), beyond);
}

MANTISSA_SR_HOT void scale_pass(const float* src, float* dst, std::size_t n, float scale) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] * scale;
}

// max |src| with scale_round_array's NaN rule: the order of the bit patterns (NaN above inf).
MANTISSA_SR_HOT std::uint32_t magnitude_max(const float* src, std::size_t n) {
    std::int32_t m = 0;  // signed: GCC vectorises signed integer max reductions
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t a = std::bit_cast<std::int32_t>(src[i]) & 0x7FFFFFFF;
        m = a > m ? a : m;
    }
    return static_cast<std::uint32_t>(m);
}

}  // namespace

std::uint64_t stochastic_key(std::uint64_t seed, std::uint64_t pass) {
    // SplitMix64's finaliser over the seed and the pass (its increment apart per pass).
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (pass + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint32_t stochastic_bits(std::uint64_t key, std::uint64_t index) { return random_bits(key, index); }

float round_stochastic(Format format, float x, std::uint32_t random, Overflow overflow) {
    return round_one(rounder_of(format, overflow), x, random);
}

void round_array_stochastic(Format format, const float* src, float* dst, std::size_t n, std::uint64_t key,
                            std::uint64_t first_index, Overflow overflow) {
    const Rounder r = rounder_of(format, overflow);
    if (r.identity) {
        if (src != dst) std::copy(src, src + n, dst);
    } else if (r.dropped) {
        bits_pass(src, dst, n, key, first_index, r.dropped, r.overflow_bits);
    } else {
        grid_pass(src, dst, n, key, first_index, r.grid, r.beyond, 1.0f);
    }
}

float scale_round_array_stochastic(Format format, const float* src, float* dst, std::size_t n, float scale,
                                   std::uint64_t key, Overflow overflow) {
    const float amax = std::bit_cast<float>(magnitude_max(src, n));
    const Rounder r = rounder_of(format, overflow);
    if (r.identity || r.dropped) {
        scale_pass(src, dst, n, scale);
        round_array_stochastic(format, dst, dst, n, key, 0, overflow);
    } else {
        grid_pass(src, dst, n, key, 0, r.grid, r.beyond, scale);
    }
    return amax;
}

}  // namespace mantissa
