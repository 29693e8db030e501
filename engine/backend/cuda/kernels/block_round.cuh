// A block-scaled matmul operand rounded on the device, host and device alike (MANTISSA_HD, as
// convert.cuh): the CPU's round_block_operand (numeric/block_round.cpp, docs/numerics.md,
// "Block-scaled formats in training") written for one thread per block. The operand is viewed as
// (outer, K, inner), row-major, with the blocks along K; each block's finite amax gives its scale
// (MX: the E8M0 power of two floor(log2(amax)) - emax, clamped; NVFP4: the E4M3 rounding of
// amax · S/6 with the tensor scale S), each value is rounded on the element's grid (to nearest
// even, or stochastically with the pass's key, the bits of value i in storage order) and decoded
// with its block's scale alone, in the CPU's FP32 operations, so the values are the CPU's bit for
// bit. They are written as bf16, which holds them exactly (at most 4 significant bits), except
// below 2^-133 (an element under an MX scale near 2^-127), where bf16 rounds what the CPU keeps in
// FP32: values no training run reaches. NVFP4's tensor scale is left to the matmul's accumulator
// (block_operand_factor: fp32(1 / S)), as on the CPU.
// tests/engine/cuda_host runs these functions on the CPU against round_block_operand, bit for bit.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

// An element format's grid (numeric/grid_round.h's Grid): m · 2^(e - mantissa_bits) for e in
// [emin, emax], |value| <= max_finite.
struct ElementGrid {
    int mantissa_bits = 3, emin = -6, emax = 8;
    float max_finite = 448.0f;
};

// One operand's rounding: src (outer, K, inner) in format src_fmt, dst the same shape in bf16.
struct BlockOperandArgs {
    const void* src = nullptr;
    int src_fmt = 0;
    std::uint16_t* dst = nullptr;
    std::int64_t outer = 0, K = 0, inner = 1;
    int block_size = 32;
    bool nvfp4 = false;
    ElementGrid grid;
    // NVFP4: the finite amax of the whole tensor as magnitude bits (launch_block_tensor_amax), from
    // which every block takes the tensor scale S; null for MX (S = 1).
    const std::uint32_t* tensor_amax = nullptr;
    // NVFP4: where the factor fp32(1 / S) is written (once, by block 0), for the matmul's epilogue.
    float* factor = nullptr;
    // Stochastic rounding: the pass's key (draw_stochastic_key's device word); null: to nearest.
    const std::uint64_t* key = nullptr;
    // A convolution's block-scaled weight gradient rounds its dy chunk by chunk as the CPU does:
    // each chunk with the key stochastic_key(*key, key_pass) (key_pass >= 0), and value (o, k, i)
    // taking the random bits of index (o·inner + i)·K + k, its index in the CPU's channel-major
    // layout of the chunk (k_major_index), where the device holds it row-major.
    std::int64_t key_pass = -1;
    bool k_major_index = false;

    MANTISSA_HD std::int64_t blocks_per_run() const { return (K + block_size - 1) / block_size; }
    MANTISSA_HD std::int64_t blocks() const { return outer * blocks_per_run() * inner; }
};

// 2^k for k in [-127, 127] (2^-127 is the subnormal 0x00400000).
MANTISSA_HD float block_pow2(int k) {
    return k >= -126 ? float_of(static_cast<std::uint32_t>(k + 127) << 23) : float_of(0x00400000u);
}

// q rounded to nearest even on the grid, saturating at ±max_finite (grid_round.h's round_to_grid).
MANTISSA_HD float round_to_element_grid(float q, const ElementGrid& g) {
    float step, inverse;
    grid_step_of(q, g.mantissa_bits, g.emin, g.emax, step, inverse);
    const float magic = 12582912.0f;
    float r = ((q * inverse + magic) - magic) * step;
    r = r > g.max_finite ? g.max_finite : r;
    r = r < -g.max_finite ? -g.max_finite : r;
    return float_of((bits_of(r) & 0x7FFFFFFFu) | (bits_of(q) & 0x80000000u));
}

// |x| as bits where x is finite, 0 for NaN and inf: the terms of NVFP4's tensor amax, whose order
// as unsigned integers is the magnitudes' (block_tensor_amax_kernel takes their maximum).
MANTISSA_HD std::uint32_t finite_magnitude_bits(float x) {
    const std::uint32_t m = bits_of(x) & 0x7FFFFFFFu;
    return m <= 0x7F7FFFFFu ? m : 0u;
}

// NVFP4's FP32 tensor scale from the tensor's finite amax (numeric::nvfp4_tensor_scale):
// min(448 · 6 / amax, FLT_MAX), 1 for an amax of 0 (or one the division takes to 0).
MANTISSA_HD float nvfp4_scale_of(float amax) {
    const float fp32_max = float_of(0x7F7FFFFFu);
    if (amax == 0.0f || !(amax <= fp32_max)) return 1.0f;
    float s = 2688.0f / amax;
    s = s > fp32_max ? fp32_max : s;
    return s == 0.0f ? 1.0f : s;
}

// A block's parameters (block_round.cpp's BlockParams): values are rounded as q = x · encode and
// decoded as rounded(q) · decode. A block holding a NaN or an infinity encodes with 0 and decodes
// as NaN, so every value of it is NaN.
struct BlockParameters {
    float encode = 1.0f, decode = 1.0f;
};

// From the block's finite amax (`special`: a NaN or an inf among its values). MX: the shared
// exponent floor(log2(amax)) - emax from amax's exponent bits, clamped to E8M0's [-127, 127]; when
// rounding stochastically, a block whose amax the rule would scale beyond the element's largest
// value takes the next power of two (no element is clipped). NVFP4: the E4M3 block scale
// E4M3(min(amax · (S · (1/6)), FLT_MAX)), encode min(1 / (scale · (1 / S)), FLT_MAX), decoded with
// the E4M3 scale alone.
MANTISSA_HD BlockParameters block_parameters(bool nvfp4, const ElementGrid& g, float tensor_scale, float amax,
                                             bool special, bool stochastic) {
    BlockParameters p;
    if (special) {
        p.encode = 0.0f;
        p.decode = float_of(0x7FC00000u);
        return p;
    }
    const float fp32_max = float_of(0x7F7FFFFFu);
    if (nvfp4) {
        const ElementGrid e4m3{3, -6, 8, 448.0f};
        float block_scale = amax * (tensor_scale * (1.0f / 6.0f));
        block_scale = block_scale > fp32_max ? fp32_max : block_scale;
        const float decoded = round_to_element_grid(block_scale, e4m3);
        const float encode = 1.0f / (decoded * (1.0f / tensor_scale));
        p.encode = encode > fp32_max ? fp32_max : encode;
        p.decode = decoded;
        return p;
    }
    int e = static_cast<int>((bits_of(amax) >> 23) & 0xFFu) - 127 - g.emax;
    if (stochastic) {
        const int up = -e < -127 ? -127 : -e > 127 ? 127 : -e;
        e += amax * block_pow2(up) > g.max_finite;
    }
    e = e < -127 ? -127 : e > 127 ? 127 : e;
    p.encode = block_pow2(-e);
    p.decode = block_pow2(e);
    return p;
}

// Block b's place (blocks numbered as BlockOperandArgs::blocks counts them: inner fastest, then the
// block along K, then outer): its run (o, i), its first k and how many values it holds.
struct BlockPlace {
    std::int64_t o, i, first_k, count;
};
MANTISSA_HD BlockPlace block_place(const BlockOperandArgs& a, std::int64_t b) {
    const std::int64_t per_run = a.blocks_per_run();
    BlockPlace p;
    p.i = b % a.inner;
    p.o = b / (a.inner * per_run);
    p.first_k = ((b / a.inner) % per_run) * a.block_size;
    p.count = a.K - p.first_k < a.block_size ? a.K - p.first_k : a.block_size;
    return p;
}

// The key a pass rounds with, from its device word (BlockOperandArgs::key_pass).
MANTISSA_HD std::uint64_t block_pass_key(const BlockOperandArgs& a, std::uint64_t word) {
    return a.key_pass >= 0 ? stochastic_key(word, static_cast<std::uint64_t>(a.key_pass)) : word;
}

// Block b of the operand rounded into dst: its amax, its parameters, its values (value j of the
// tensor in storage order takes stochastic_bits(key, j) when rounding stochastically).
// tensor_scale: NVFP4's S (1 for MX).
MANTISSA_HD void round_operand_block(const BlockOperandArgs& a, std::int64_t b, float tensor_scale, std::uint64_t key) {
    const BlockPlace place = block_place(a, b);
    const std::int64_t count = place.count;
    const std::int64_t first = (place.o * a.K + place.first_k) * a.inner + place.i;
    // The random bits' index of the block's first value, and its step along k.
    const std::int64_t random_first = a.k_major_index ? (place.o * a.inner + place.i) * a.K + place.first_k : first;
    const std::int64_t random_step = a.k_major_index ? 1 : a.inner;
    std::uint32_t amax = 0, largest = 0;
    for (std::int64_t k = 0; k < count; ++k) {
        const float v = load_value(a.src, a.src_fmt, first + k * a.inner);
        const std::uint32_t m = bits_of(v) & 0x7FFFFFFFu, finite = finite_magnitude_bits(v);
        largest = m > largest ? m : largest;
        amax = finite > amax ? finite : amax;
    }
    const bool stochastic = a.key != nullptr;
    const BlockParameters p =
        block_parameters(a.nvfp4, a.grid, tensor_scale, float_of(amax), largest > 0x7F7FFFFFu, stochastic);
    const ElementGrid& g = a.grid;
    for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t j = first + k * a.inner;
        const float q = load_value(a.src, a.src_fmt, j) * p.encode;
        const auto random = static_cast<std::uint64_t>(random_first + k * random_step);
        const float r = stochastic ? stochastic_on_grid(q, stochastic_bits(key, random), g.mantissa_bits, g.emin,
                                                        g.emax, g.max_finite, g.max_finite)
                                   : round_to_element_grid(q, g);
        a.dst[j] = static_cast<std::uint16_t>(encode_bf16(r * p.decode, false));
    }
}

}  // namespace mantissa::cuda
