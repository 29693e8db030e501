// Rounding a float to a small format's grid without branches, so that the loops calling it
// vectorise: to nearest even (round_to_grid, the block quantisers' element rounding) or
// stochastically (stochastic_to_grid). Private to engine/numeric (block_round.cpp,
// stochastic_round.cpp).
//
// A grid is the values m · 2^(e - M) for e in [emin, emax] and |value| <= max_finite: an element
// format's, or a tensor format's whose step 2^(emin - M) is a normal float (fp16 and the fp8s; not
// bf16 or tf32, whose smallest steps are fp32 subnormals: those round on the bit pattern). The
// step in q's binade is a power of two, so q / step is exact.
#pragma once

#include <bit>
#include <cstdint>

namespace mantissa::grid_detail {

struct Grid {
    int mantissa_bits, emin, emax;
    float max_finite;
};

// q's step on the grid and its inverse, from q's biased exponent clamped to the normal range (0
// for zeros and subnormals, which take the smallest step).
struct GridStep {
    float step, inverse;
};
inline GridStep step_of(float q, Grid g) {
    std::int32_t e = static_cast<std::int32_t>((std::bit_cast<std::uint32_t>(q) >> 23) & 0xFFu);
    e = e < g.emin + 127 ? g.emin + 127 : e;
    e = e > g.emax + 127 ? g.emax + 127 : e;
    return {std::bit_cast<float>(static_cast<std::uint32_t>(e - g.mantissa_bits) << 23),
            std::bit_cast<float>(static_cast<std::uint32_t>(254 - e + g.mantissa_bits) << 23)};
}

// Adding and subtracting 1.5 · 2^23 rounds |y| < 2^22 to an integer, ties to even; a larger y
// (only beyond a grid's max) passes unchanged.
inline constexpr float round_magic = 12582912.0f;

inline float with_sign_of(float magnitude, float q) {
    return std::bit_cast<float>((std::bit_cast<std::uint32_t>(magnitude) & 0x7FFFFFFFu) |
                                (std::bit_cast<std::uint32_t>(q) & 0x80000000u));
}

// q rounded to nearest even on the grid, saturating at ±max; NaN stays NaN, ±inf saturates.
inline float round_to_grid(float q, Grid g) {
    const GridStep s = step_of(q, g);
    const float y = q * s.inverse;
    float r = ((y + round_magic) - round_magic) * s.step;
    r = r > g.max_finite ? g.max_finite : r;  // comparisons are false for NaN: it stays
    r = r < -g.max_finite ? -g.max_finite : r;
    return with_sign_of(r, q);
}

// |q| rounded down to the grid (lo) or up (lo + step), up when u < (|q| - lo) / step: the
// probability that makes the expected result |q|. u is in [0, 1) with 24 bits; within the grid's
// normal range the fraction has at most 23 - M bits, so the probability is exact; below the
// smallest normal it is the fraction rounded up to a multiple of 2^-24. A result beyond max_finite
// becomes `beyond` (max_finite to saturate, inf, or NaN for a format without inf); NaN stays NaN
// and ±inf becomes ±beyond.
inline float stochastic_to_grid(float q, Grid g, float u, float beyond) {
    const GridStep s = step_of(q, g);
    const float y = std::bit_cast<float>(std::bit_cast<std::uint32_t>(q) & 0x7FFFFFFFu) * s.inverse;
    const float nearest = (y + round_magic) - round_magic;
    // floor(y), and whether to round up. The comparisons are of bit patterns (all the values are
    // >= 0, where the patterns' order is the values'): GCC does not vectorise a float comparison
    // feeding a select under the default -ftrapping-math, and these loops must vectorise.
    // (As int32 0 or 1, converted to float: a bool converted to float is a branch to GCC.)
    const std::int32_t over = std::bit_cast<std::int32_t>(nearest) > std::bit_cast<std::int32_t>(y);
    const float down = nearest - static_cast<float>(over);
    const float fraction = y - down;  // exact
    const std::int32_t up = std::bit_cast<std::int32_t>(u) < std::bit_cast<std::int32_t>(fraction);
    float r = (down + static_cast<float>(up)) * s.step;
    r = r > g.max_finite ? beyond : r;
    return with_sign_of(r, q);
}

// 32 random bits for value `index` of a pass keyed `key`: a counter-based generator (two rounds of
// a 32-bit integer hash), so a value's bits depend on nothing but the key and its index, whatever
// the order, blocking or threading of the pass.
inline std::uint32_t hash32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}
inline std::uint32_t random_bits(std::uint64_t key, std::uint64_t index) {
    const auto low = static_cast<std::uint32_t>(key), high = static_cast<std::uint32_t>(key >> 32);
    return hash32(hash32(static_cast<std::uint32_t>(index) ^ low) + high);
}
// The uniform u in [0, 1) of stochastic_to_grid from 32 random bits (their top 24). Converted
// from a signed int: AVX2 converts signed 32-bit integers to float, not unsigned ones, so this is
// what lets the loops vectorise.
inline float unit_of(std::uint32_t bits) { return static_cast<float>(static_cast<std::int32_t>(bits >> 8)) * 0x1.0p-24f; }

}  // namespace mantissa::grid_detail
