// Stochastic rounding on the device, host and device alike (MANTISSA_HD, as convert.cuh): the
// CPU's definition (numeric/stochastic_round.h, grid_round.h) written for the kernels, the same
// keys, the same random bits for value i of a pass, the same rounded values.
// tests/engine/cuda_host runs these functions on the CPU against numeric/stochastic_round.h, bit
// for bit: keys, random bits, and every format's rounding of probe values.
//   keys: SplitMix64's finaliser of (seed, pass); bits: two rounds of a 32-bit integer hash of
//   (index, key); bf16 and tf32 add the random bits below the kept mantissa to the FP32 pattern
//   and clear them; fp16 and the FP8s compare a 24-bit uniform with the fraction on their grid.
// Overflow goes to inf (NaN for e4m3), as the CPU's Overflow::to_inf (weights, dX, dW), or to the
// largest finite value where saturating (Overflow::saturate: the FP8 gradient operand).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/convert.cuh"

namespace mantissa::cuda {

// The key of rounding pass `pass` of a run seeded with `seed` (mantissa::stochastic_key).
MANTISSA_HD std::uint64_t stochastic_key(std::uint64_t seed, std::uint64_t pass) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (pass + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

MANTISSA_HD std::uint32_t hash32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

// The 32 random bits value `index` of the pass keyed `key` gets (mantissa::stochastic_bits).
MANTISSA_HD std::uint32_t stochastic_bits(std::uint64_t key, std::uint64_t index) {
    const auto low = static_cast<std::uint32_t>(key), high = static_cast<std::uint32_t>(key >> 32);
    return hash32(hash32(static_cast<std::uint32_t>(index) ^ low) + high);
}

// bf16, tf32: `dropped` low bits of the FP32 pattern; the random bits' top `dropped` added below
// the kept mantissa carry into it with the dropped bits' probability. A NaN gives the quiet NaN
// of its sign; a carry to inf's pattern or beyond is `overflow_bits` (inf's, or the largest
// finite value's where saturating).
MANTISSA_HD float stochastic_on_bits(float x, std::uint32_t random, int dropped, std::uint32_t overflow_bits) {
    const std::uint32_t bits = bits_of(x);
    const std::uint32_t sign = bits & 0x80000000u, magnitude = bits & 0x7FFFFFFFu;
    const std::uint32_t mask = (1u << dropped) - 1u;
    std::uint32_t r = (magnitude + (random >> (32 - dropped))) & ~mask;
    r = r >= 0x7F800000u ? overflow_bits : r;
    r = magnitude > 0x7F800000u ? 0x7FC00000u : r;
    return float_of(r | sign);
}

// The grid step m·2^(e - mantissa_bits) of x's binade, e clamped to [emin, emax] (the smallest
// step below the normal range), and its inverse: powers of two, so x / step is exact
// (numeric/grid_round.h's step_of).
MANTISSA_HD void grid_step_of(float x, int mantissa_bits, int emin, int emax, float& step, float& inverse) {
    std::int32_t e = static_cast<std::int32_t>((bits_of(x) >> 23) & 0xFFu);
    e = e < emin + 127 ? emin + 127 : e;
    e = e > emax + 127 ? emax + 127 : e;
    step = float_of(static_cast<std::uint32_t>(e - mantissa_bits) << 23);
    inverse = float_of(static_cast<std::uint32_t>(254 - e + mantissa_bits) << 23);
}

// fp16 and the FP8s: |x| rounded down to the grid m·2^(e - mantissa_bits), e in [emin, emax]
// (the step of x's binade, the smallest below the normal range), or up by one step when u, a
// uniform in [0, 1) from the top 24 random bits, is below the fraction; beyond max_finite the
// result is `beyond`. In the CPU's operations: the step and its inverse as powers of two, the
// floor by the 1.5·2^23 trick, the comparisons on bit patterns of non-negative floats.
MANTISSA_HD float stochastic_on_grid(float x, std::uint32_t random, int mantissa_bits, int emin, int emax,
                                     float max_finite, float beyond) {
    float step, inverse;
    grid_step_of(x, mantissa_bits, emin, emax, step, inverse);
    const float y = float_of(bits_of(x) & 0x7FFFFFFFu) * inverse;
    const float magic = 12582912.0f;
    const float nearest = (y + magic) - magic;
    const std::int32_t over = static_cast<std::int32_t>(bits_of(nearest)) > static_cast<std::int32_t>(bits_of(y));
    const float down = nearest - static_cast<float>(over);
    const float fraction = y - down;
    const float u = static_cast<float>(static_cast<std::int32_t>(random >> 8)) * 0x1.0p-24f;
    const std::int32_t up = static_cast<std::int32_t>(bits_of(u)) < static_cast<std::int32_t>(bits_of(fraction));
    float r = (down + static_cast<float>(up)) * step;
    r = r > max_finite ? beyond : r;
    return float_of((bits_of(r) & 0x7FFFFFFFu) | (bits_of(x) & 0x80000000u));
}

// x rounded stochastically to format fmt with the 32 random bits `random`
// (mantissa::round_stochastic, Overflow::saturate when `saturate`, else Overflow::to_inf).
MANTISSA_HD float round_stochastic_value(int fmt, float x, std::uint32_t random, bool saturate = false) {
    const float inf = float_of(0x7F800000u), nan = float_of(0x7FC00000u);
    switch (fmt) {
        case fmt_bf16: return stochastic_on_bits(x, random, 16, saturate ? 0x7F7F0000u : 0x7F800000u);
        case fmt_tf32: return stochastic_on_bits(x, random, 13, saturate ? 0x7F7FE000u : 0x7F800000u);
        case fmt_fp16: return stochastic_on_grid(x, random, 10, -14, 15, 65504.0f, saturate ? 65504.0f : inf);
        case fmt_e4m3: return stochastic_on_grid(x, random, 3, -6, 8, 448.0f, saturate ? 448.0f : nan);
        case fmt_e5m2: return stochastic_on_grid(x, random, 2, -14, 15, 57344.0f, saturate ? 57344.0f : inf);
        default: return x;
    }
}

// Stores x rounded stochastically to fmt at p[i] and returns the value stored (as store_rounded).
MANTISSA_HD float store_stochastic(void* p, int fmt, std::int64_t i, float x, std::uint32_t random) {
    return store_rounded(p, fmt, i, round_stochastic_value(fmt, x, random));
}

}  // namespace mantissa::cuda
