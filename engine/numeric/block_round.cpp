// round_blocks and round_blocks_along: the fake quantisation a block-scaled layer runs on every
// operand of its matmuls (block_format.h), written for speed. A block's parameters (the factor
// that scales its values into the element's range, the factor that decodes them, whether it is a
// NaN block) are computed once with quantise_block's FP32 operations; then each value is rounded
// to the element's grid with arithmetic the compiler vectorises: the grid step in the value's
// binade is a power of two, so q / step is exact and one round to the nearest even integer is the
// element's round to nearest even (subnormals included: below the smallest normal the step stays
// the subnormal step), then clamped to ±max (saturation, as encode_element's). The values and the
// counts are quantise_block's then dequantise_block's, bit for bit; the tests of
// tests/engine/numeric/test_block_formats.cpp hold them equal.
//
// Blocks along a strided dimension (round_blocks_along with inner > 1) are taken a whole tile at a
// time: the amaxes of the `inner` blocks that share rows k0..k0+B are gathered row by row, so every
// pass reads memory contiguously.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "numeric/block_format.h"

#include "error.h"
#include "numeric/element_format.h"
#include "numeric/grid_round.h"
#include "numeric/stats.h"
#include "numeric/stochastic_round.h"

namespace mantissa {

namespace {

using namespace grid_detail;

constexpr float fp32_max = std::numeric_limits<float>::max();

Grid grid_of(ElementFormat e) {
    const ElementFormatInfo& i = element_format_info(e);
    return {i.mantissa_bits, 1 - i.bias, i.emax, i.max_finite};
}

// The kernels, built three times and chosen when the program loads: AVX-512 with BW, VL and DQ
// (x86-64-v4: GCC's code for the sixteen-lane masks needs them; the avx512f target alone made it
// slower than AVX2), AVX2, baseline x86-64. The v4 target enables FMA, so this file is built with
// -ffp-contract=off (CMakeLists.txt): every clone rounds alike.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_BLOCK_HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MANTISSA_BLOCK_HOT
#endif

enum BlockKind : std::uint8_t { normal_block = 0, zero_scale_block = 1, nan_block = 2 };

// One block's parameters: values are encoded as round_to_grid(x · encode), decoded as that · decode.
struct BlockParams {
    float encode = 1, decode = 1;
    BlockKind kind = normal_block;
};

// 2^k for k in [-127, 127] (2^-127 is subnormal).
inline float pow2(int k) {
    return k >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23) : std::bit_cast<float>(0x00400000u);
}

// An MX block's parameters from its finite amax: the shared exponent floor(log2(amax)) - emax,
// clamped to E8M0's [-127, 127] (an amax of 0 or a subnormal one clamps to -127, as quantise_block's
// ilogb does), read from amax's exponent bits. Scaling by a power of two: x · encode is
// ldexp(x, -shared), bit for bit.
// no_clip_max > 0 (stochastic rounding): a block whose amax the rule would scale beyond the
// element's largest value takes the next power of two, so that no element is clipped.
inline void mx_params(float amax, int emax, BlockParams& p, float no_clip_max) {
    int e = static_cast<int>((std::bit_cast<std::uint32_t>(amax) >> 23) & 0xFFu) - 127 - emax;
    e += no_clip_max > 0 && amax * pow2(std::clamp(-e, -127, 127)) > no_clip_max;
    e = std::clamp(e, e8m0_min_exponent, e8m0_max_exponent);
    p.encode = pow2(-e);
    p.decode = pow2(e);
}

// An NVFP4 block's parameters from its finite amax, quantise_block's FP32 operations in its order;
// the E4M3 block scale rounded on the e4m3 grid (round_to_grid: RNE, saturating at 448, as
// encode_e4m3_scale for a finite value >= 0). Without `tensor_decode` the values decode with the
// E4M3 scale alone (round_block_operand: the tensor scale is the matmul's); the codes are the same.
inline void nvfp4_params(float amax, float tensor_scale, BlockParams& p, bool tensor_decode) {
    constexpr Grid e4m3{3, -6, 8, 448.0f};
    const float block_scale = std::min(amax * (tensor_scale * (1.0f / 6.0f)), fp32_max);
    const float decoded = round_to_grid(block_scale, e4m3);
    p.encode = std::min(1.0f / (decoded * (1.0f / tensor_scale)), fp32_max);
    p.decode = tensor_decode ? decoded * (1.0f / tensor_scale) : decoded;
    p.kind = decoded == 0 ? zero_scale_block : normal_block;
}

// quantise_block's choice of scale, from the block's finite amax (special: a NaN or inf in it);
// no_clip_max as mx_params's, tensor_decode as nvfp4_params's.
inline BlockParams params_of(bool nvfp4, int emax, float tensor_scale, float amax, bool special,
                             float no_clip_max = 0, bool tensor_decode = true) {
    BlockParams p;
    if (special) {
        p.kind = nan_block;
        p.encode = 0;  // every value decodes as NaN, whatever it is
        p.decode = std::numeric_limits<float>::quiet_NaN();
        return p;
    }
    if (nvfp4)
        nvfp4_params(amax, tensor_scale, p, tensor_decode);
    else
        mx_params(amax, emax, p, no_clip_max);
    return p;
}

// The counts of one pass: only what the value loops can add without branches.
struct Counts {
    std::size_t saturated = 0, flushed = 0;
};

// How a pass rounds its elements: to nearest even, or stochastically with the pass's key, value i
// of the tensor (in storage order) taking stochastic bits i (stochastic_round.h); and whether
// NVFP4's values decode with the tensor scale (round_blocks_along) or without it
// (round_block_operand).
struct ElementRounding {
    bool stochastic = false;
    std::uint64_t key = 0;
    bool tensor_decode = true;
    // Whether the saturation and flush counts are wanted: a matmul operand's quantiser
    // (round_block_operand) drops them, and its lanes then skip counting (a third of their work).
    bool counted = true;
    // The index of src[0] in the whole tensor, which stochastic rounding draws each value's bits
    // by: a part of a tensor rounded on its own (a thread's share) draws what the whole would.
    std::uint64_t first_index = 0;
};

// One element's result and counts, as quantise_block counts: saturated when |x · encode| exceeds
// the element max in a block with a live scale; flushed when a non-zero x decodes to ±0 (every
// value of a zero-scale block).
inline float finish_element(float x, float q, float r, float decode, bool live, bool zero_scale, const Grid& g,
                            std::uint32_t& saturated, std::uint32_t& flushed) {
    saturated += live & (std::fabs(q) > g.max_finite);
    flushed += (x != 0) & (zero_scale | (live & (r == 0)));
    return r * decode;
}

// One row of a tile rounded stochastically: y[j] = x[j] rounded with the parameters of its own
// block (encode[j], decode[j], kind[j]), x[0] being value `index` of the tensor. x == y is
// allowed. round_runs does the same inline; to nearest, round_span_nearest (below).
MANTISSA_BLOCK_HOT void round_span_stochastic(const float* x, float* y, std::size_t n, const float* encode,
                                              const float* decode, const std::uint8_t* kind, Grid g, Counts& counts,
                                              ElementRounding rounding, std::uint64_t index) {
    std::uint32_t saturated = 0, flushed = 0;
    for (std::size_t j = 0; j < n; ++j) {
        const float q = x[j] * encode[j];
        const float u = unit_of(random_bits(rounding.key, index + j));
        y[j] = finish_element(x[j], q, stochastic_to_grid(q, g, u, g.max_finite), decode[j], kind[j] == normal_block,
                              kind[j] == zero_scale_block, g, saturated, flushed);
    }
    counts.saturated += saturated;
    counts.flushed += flushed;
}

// |x| as bits: for values >= 0, the order of the bit patterns is the order of the values, and
// the finite ones are those at most FLT_MAX's; integer max reductions vectorise where float ones
// (with NaN's rules) do not.
// (Signed: GCC vectorises signed integer max reductions, not unsigned ones.)
constexpr std::int32_t fp32_max_bits = 0x7F7FFFFF;
inline std::int32_t magnitude_bits(float x) { return std::bit_cast<std::int32_t>(x) & 0x7FFFFFFF; }

// The largest |x| bits of n values: amax of the finite ones, largest of all (NaN and inf lie
// above FLT_MAX's). Inline, so that the kernels below run it in their own clones, per block,
// without a call.
inline void magnitude_maxima(const float* x, std::size_t n, std::int32_t& amax, std::int32_t& largest) {
    amax = largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t a = magnitude_bits(x[i]);
        largest = a > largest ? a : largest;
        const std::int32_t finite = a <= fp32_max_bits ? a : 0;
        amax = finite > amax ? finite : amax;
    }
}

// Largest finite |x| of n values, and whether a NaN or an inf is among them.
MANTISSA_BLOCK_HOT float finite_amax(const float* x, std::size_t n, bool& special) {
    std::int32_t amax, largest;
    magnitude_maxima(x, n, amax, largest);
    special = largest > fp32_max_bits;
    return std::bit_cast<float>(amax);
}

// For a tile's rows: amax[i] = max(amax[i], |row[i]|) over finite values, special[i] |= not finite.
MANTISSA_BLOCK_HOT void column_amax(const float* row, std::int32_t* amax, std::uint8_t* special, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t a = magnitude_bits(row[i]);
        special[i] |= static_cast<std::uint8_t>(a > fp32_max_bits);
        const std::int32_t finite = a <= fp32_max_bits ? a : 0;
        amax[i] = finite > amax[i] ? finite : amax[i];
    }
}

float tensor_scale_of(BlockFormat f, const float* x, std::size_t n) {
    if (f != BlockFormat::nvfp4) return 1.0f;
    bool special = false;
    return nvfp4_tensor_scale(finite_amax(x, n, special));
}

// Sixteen lanes of GCC's vector types (one AVX-512 register; two AVX2 ones in that clone): the whole
// blocks' kernel below is written with them, so that the saturation and flush counts stay in
// vector lanes across blocks (the plain loops reduced them to scalars at the end of every block)
// and sixteen blocks' amaxes are reduced together (max_lanes16). Every block size is a multiple
// of 16.
using Floats16 = float __attribute__((vector_size(64)));
using Ints16 = std::int32_t __attribute__((vector_size(64)));

// The grid's constants in lanes, made once per call (kept in registers: loaded through a
// reference, they would be read again after every store the loop makes).
struct Grid16 {
    Ints16 lowest, highest;  // the clamp of the biased exponent
    Ints16 mantissa_bits;
    Floats16 max;
    explicit Grid16(const Grid& g)
        : lowest(Ints16{} + (g.emin + 127)), highest(Ints16{} + (g.emax + 127)),
          mantissa_bits(Ints16{} + g.mantissa_bits), max(Floats16{} + g.max_finite) {}
};

// round_to_grid on sixteen values, the same operations lane by lane (through references, and casts
// rather than std::bit_cast: a 64-byte vector passed or returned by value has an ABI of its own
// outside AVX-512 code).
inline void round_to_grid16(const Floats16& q, const Grid16& g, Floats16& rounded) {
    const Ints16 bits = reinterpret_cast<Ints16>(q);
    Ints16 e = (bits >> 23) & 0xFF;
    e = e < g.lowest ? g.lowest : e;
    e = e > g.highest ? g.highest : e;
    const Floats16 step = reinterpret_cast<Floats16>((e - g.mantissa_bits) << 23);
    const Floats16 inverse = reinterpret_cast<Floats16>((254 - e + g.mantissa_bits) << 23);
    const Floats16 y = q * inverse;
    Floats16 r = ((y + round_magic) - round_magic) * step;
    r = r > g.max ? g.max : r;  // false for NaN: it stays
    r = r < -g.max ? -g.max : r;
    rounded = reinterpret_cast<Floats16>((reinterpret_cast<Ints16>(r) & 0x7FFFFFFF) | (bits & std::int32_t(0x80000000u)));
}

// Sixteen values x rounded with their blocks' parameters in lanes into y, finish_element's
// operations lane by lane: y = round_to_grid(x · encode) · decode, and (Counted) the saturation
// and flush counts (kept as minus the counts: a true comparison is -1). x == y is allowed.
template <bool Counted>
inline void round_lanes16(const float* x, float* y, const Floats16& encode, const Floats16& decode, const Ints16& live,
                          const Ints16& zero_scale, const Grid16& g, Ints16& saturated, Ints16& flushed) {
    Floats16 v;
    std::memcpy(&v, x, sizeof v);
    const Floats16 q = v * encode;
    Floats16 r;
    round_to_grid16(q, g, r);
    const Floats16 out = r * decode;
    std::memcpy(y, &out, sizeof out);
    if constexpr (Counted) {
        const Ints16 abs_mask = Ints16{} + 0x7FFFFFFF;
        const Floats16 magnitude = reinterpret_cast<Floats16>(reinterpret_cast<Ints16>(q) & abs_mask);
        saturated += live & (magnitude > g.max);
        flushed += (v != 0) & (zero_scale | (live & (r == 0)));
    }
}

// Lane i of out = the largest lane of v[i], for sixteen vectors at once: a reduction tree whose
// four levels each halve the lanes a vector keeps per block and double the blocks it holds, in
// order: 15 maxes and 30 two-source shuffles for sixteen blocks, where two four-shuffle reductions
// a block (its finite amax and its largest magnitude) took 128 of each.
inline void max_lanes16(const Ints16 (&v)[16], Ints16& out) {
    Ints16 eight[8], four[4], two[2];
    for (int k = 0; k < 8; ++k) {  // blocks 2k, 2k+1: eight lanes each
        const Ints16 lo = __builtin_shufflevector(v[2 * k], v[2 * k + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                                                  21, 22, 23);
        const Ints16 hi = __builtin_shufflevector(v[2 * k], v[2 * k + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26,
                                                  27, 28, 29, 30, 31);
        eight[k] = lo > hi ? lo : hi;
    }
    for (int k = 0; k < 4; ++k) {  // blocks 4k .. 4k+3: four lanes each
        const Ints16 lo = __builtin_shufflevector(eight[2 * k], eight[2 * k + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17,
                                                  18, 19, 24, 25, 26, 27);
        const Ints16 hi = __builtin_shufflevector(eight[2 * k], eight[2 * k + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21,
                                                  22, 23, 28, 29, 30, 31);
        four[k] = lo > hi ? lo : hi;
    }
    for (int k = 0; k < 2; ++k) {  // blocks 8k .. 8k+7: two lanes each
        const Ints16 lo = __builtin_shufflevector(four[2 * k], four[2 * k + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20,
                                                  21, 24, 25, 28, 29);
        const Ints16 hi = __builtin_shufflevector(four[2 * k], four[2 * k + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22,
                                                  23, 26, 27, 30, 31);
        two[k] = lo > hi ? lo : hi;
    }
    const Ints16 lo = __builtin_shufflevector(two[0], two[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const Ints16 hi = __builtin_shufflevector(two[0], two[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    out = lo > hi ? lo : hi;
}

// params_of for sixteen blocks at once, lane by lane the same operations (nearest rounding: no
// clip bound), from each block's finite amax (bits) and whether it holds a NaN or an infinity
// (`special`, all ones where it does; such a block's amax lane may hold anything, its parameters
// being NaN's). Lanes: live (normal_block) and zero_scale as all ones.
struct Params16 {
    Floats16 encode, decode;
    Ints16 live, zero_scale;
};
inline void params16(bool nvfp4, int emax, float tensor_scale, bool tensor_decode, const Ints16& amax_bits,
                     const Ints16& special, Params16& p) {
    const Floats16 nan = Floats16{} + std::numeric_limits<float>::quiet_NaN();
    Ints16 live = ~special, zero_scale{};
    if (nvfp4) {
        const Grid16 e4m3(Grid{3, -6, 8, 448.0f});
        const Floats16 amax = reinterpret_cast<Floats16>(amax_bits);
        const float inverse = 1.0f / tensor_scale;
        Floats16 block_scale = amax * (tensor_scale * (1.0f / 6.0f));
        block_scale = block_scale > fp32_max ? Floats16{} + fp32_max : block_scale;
        Floats16 decoded;
        round_to_grid16(block_scale, e4m3, decoded);
        Floats16 encode = 1.0f / (decoded * inverse);
        encode = encode > fp32_max ? Floats16{} + fp32_max : encode;
        const Floats16 decode = tensor_decode ? decoded * inverse : decoded;
        zero_scale = live & (decoded == 0);
        live &= ~zero_scale;
        p.encode = reinterpret_cast<Floats16>(reinterpret_cast<Ints16>(encode) & ~special);  // 0 in a NaN block
        p.decode = special ? nan : decode;
    } else {
        Ints16 e = ((amax_bits >> 23) & 0xFF) - (127 + emax);
        e = e < e8m0_min_exponent ? Ints16{} + e8m0_min_exponent : e;
        e = e > e8m0_max_exponent ? Ints16{} + e8m0_max_exponent : e;
        // pow2's 2^k, 2^-127 the subnormal 0x00400000 (k >= -127 here).
        const Ints16 subnormal = Ints16{} + 0x00400000, up = -e;
        const Ints16 encode = up >= -126 ? (up + 127) << 23 : subnormal;
        const Ints16 decode = e >= -126 ? (e + 127) << 23 : subnormal;
        p.encode = reinterpret_cast<Floats16>(encode & ~special);
        p.decode = special ? nan : reinterpret_cast<Floats16>(decode);
    }
    p.live = live;
    p.zero_scale = zero_scale;
}

// The exponent a block's decode factor has, or the sentinel of a zero or a NaN block.
inline std::int16_t block_exponent_of(float decode, bool special) {
    if (special) return block_exponent_nan;
    return decode == 0 ? block_exponent_zero : static_cast<std::int16_t>(exponent_of(decode));
}

// `count` consecutive whole blocks of B values (B a multiple of 16), rounded to nearest even as
// round_runs rounds each: its amax, params_of, then finish_element on every value, lane by lane.
// Sixteen blocks at a time: their amaxes first, then their parameters in lanes (params16), then
// their values; so that no block waits on its scalar parameters (NVFP4's a division each).
// exponents: when not null, exponents[b] = block b's block_decode_exponents value, from the
// parameters found here (decode_exponents' rule: MX's all-zero block is a zero block; NVFP4's
// factor counts the tensor scale even where the values are decoded without it).
// largest: when not null, raised to the largest magnitude bit pattern of the blocks (the blocks'
// own, one more max per sixteen blocks). counted: false leaves the saturation and flush counts
// out (stats gets 0 for them).
MANTISSA_BLOCK_HOT void round_whole_blocks(const float* src, float* dst, std::size_t count, std::size_t B, bool nvfp4,
                                           int emax, float tensor_scale, const Grid grid, BlockStats& stats,
                                           bool tensor_decode, bool counted, std::int16_t* exponents = nullptr,
                                           std::int32_t* largest_bits = nullptr) {
    const Grid16 g(grid);
    const Ints16 abs_mask = Ints16{} + 0x7FFFFFFF;
    Ints16 saturated{}, flushed{}, nan_blocks{};  // minus the counts (a true comparison is -1)
    Ints16 tensor_largest{};
    alignas(64) std::int32_t amaxes[16], specials[16];
    alignas(64) float encodes[16], decodes[16];
    alignas(64) std::int32_t lives[16], zero_scales[16];
    Ints16 largest[16];
    for (std::size_t b0 = 0; b0 < count; b0 += 16) {
        const std::size_t n = std::min<std::size_t>(16, count - b0);
        // Each block's largest magnitude bit pattern (inf and NaN above every finite one), the
        // sixteen reduced together; the lanes past n stay 0.
        // (Each lane starts from the block's first sixteen values: zeroing the sixteen vectors
        // first cost a string store per group.)
        for (std::size_t i = 0; i < 16; ++i) {
            if (i >= n) {
                largest[i] = Ints16{};
                continue;
            }
            const float* x = src + (b0 + i) * B;
            Ints16 m;
            std::memcpy(&m, x, sizeof m);
            m &= abs_mask;
            for (std::size_t j = 16; j < B; j += 16) {
                Ints16 a;
                std::memcpy(&a, x + j, sizeof a);
                a &= abs_mask;
                m = a > m ? a : m;
            }
            largest[i] = m;
        }
        // A block with an inf or a NaN keeps that as its "amax": params16 gives it NaN's
        // parameters whatever its finite values are.
        Ints16 amax_bits;
        max_lanes16(largest, amax_bits);
        tensor_largest = amax_bits > tensor_largest ? amax_bits : tensor_largest;
        const Ints16 special = amax_bits > fp32_max_bits;
        std::memcpy(amaxes, &amax_bits, sizeof amaxes);
        std::memcpy(specials, &special, sizeof specials);
        Params16 p;
        params16(nvfp4, emax, tensor_scale, tensor_decode, amax_bits, special, p);
        nan_blocks += special;  // the lanes past n have amax 0: never special
        std::memcpy(encodes, &p.encode, sizeof encodes);
        std::memcpy(decodes, &p.decode, sizeof decodes);
        std::memcpy(lives, &p.live, sizeof lives);
        std::memcpy(zero_scales, &p.zero_scale, sizeof zero_scales);
        if (exponents != nullptr) {
            // decode_exponents' factor: NVFP4's E4M3 scale times fp32(1 / tensor_scale), as params16
            // forms it with the tensor scale; MX's 2^e, zero for a block of zeros.
            const float to_tensor = nvfp4 && !tensor_decode ? 1.0f / tensor_scale : 1.0f;
            for (std::size_t i = 0; i < n; ++i) {
                const float decode = nvfp4 ? decodes[i] * to_tensor : amaxes[i] == 0 ? 0.0f : decodes[i];
                exponents[b0 + i] = block_exponent_of(decode, specials[i] != 0);
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            const float* x = src + (b0 + i) * B;
            float* y = dst + (b0 + i) * B;
            const Ints16 live = Ints16{} + lives[i], zero_scale = Ints16{} + zero_scales[i];
            const Floats16 encode = Floats16{} + encodes[i], decode = Floats16{} + decodes[i];
            if (counted)
                for (std::size_t j = 0; j < B; j += 16)
                    round_lanes16<true>(x + j, y + j, encode, decode, live, zero_scale, g, saturated, flushed);
            else
                for (std::size_t j = 0; j < B; j += 16)
                    round_lanes16<false>(x + j, y + j, encode, decode, live, zero_scale, g, saturated, flushed);
        }
    }
    std::int64_t s = 0, f = 0, nb = 0;
    for (int k = 0; k < 16; ++k) s -= saturated[k], f -= flushed[k], nb -= nan_blocks[k];
    if (largest_bits != nullptr)
        for (int k = 0; k < 16; ++k) *largest_bits = std::max(*largest_bits, tensor_largest[k]);
    stats.blocks += count;
    stats.nan_blocks += static_cast<std::size_t>(nb);
    stats.saturated += static_cast<std::size_t>(s);
    stats.flushed_to_zero += static_cast<std::size_t>(f);
}

// One row of a tile rounded to nearest, sixteen values at a time in lanes as round_whole_blocks
// rounds them (a plain loop over the kinds, vectorised by the compiler, spent much of its time
// widening the byte-wide kinds into its counts), each value with its own column's parameters;
// live and zero_scale are all ones where the column's block is normal / has a zero scale.
// x == y is allowed. counted: false leaves the lanes' counts out (the tail's are cheap).
MANTISSA_BLOCK_HOT void round_span_nearest(const float* x, float* y, std::size_t n, const float* encode,
                                           const float* decode, const std::int32_t* live,
                                           const std::int32_t* zero_scale, const Grid grid, Counts& counts,
                                           bool counted) {
    const Grid16 g(grid);
    Ints16 saturated{}, flushed{};  // minus the counts (a true comparison is -1)
    std::size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        Floats16 e, d;
        Ints16 lv, zs;
        std::memcpy(&e, encode + j, sizeof e);
        std::memcpy(&d, decode + j, sizeof d);
        std::memcpy(&lv, live + j, sizeof lv);
        std::memcpy(&zs, zero_scale + j, sizeof zs);
        if (counted)  // the same branch every time: predicted
            round_lanes16<true>(x + j, y + j, e, d, lv, zs, g, saturated, flushed);
        else
            round_lanes16<false>(x + j, y + j, e, d, lv, zs, g, saturated, flushed);
    }
    std::uint32_t tail_saturated = 0, tail_flushed = 0;
    for (; j < n; ++j) {
        const float q = x[j] * encode[j];
        y[j] = finish_element(x[j], q, round_to_grid(q, grid), decode[j], live[j] != 0, zero_scale[j] != 0, grid,
                              tail_saturated, tail_flushed);
    }
    std::int64_t s = tail_saturated, f = tail_flushed;
    for (int k = 0; k < 16; ++k) s -= saturated[k], f -= flushed[k];
    counts.saturated += static_cast<std::size_t>(s);
    counts.flushed += static_cast<std::size_t>(f);
}

// Contiguous runs of K values, `runs` of them, blocks along each run: a block's amax, its
// parameters and its values in one function, so that nothing is called per block. Rounded to
// nearest, the blocks go to round_whole_blocks (the runs one after another when K is a multiple of
// B: then every block is whole); stochastically, each block here. largest_bits: as
// round_whole_blocks raises it, to nearest only.
MANTISSA_BLOCK_HOT void round_runs(BlockFormat f, float tensor_scale, const float* src, float* dst, std::size_t runs,
                                   std::size_t K, BlockStats& stats, ElementRounding rounding,
                                   std::int16_t* exponents = nullptr, std::int32_t* largest_bits = nullptr) {
    const BlockFormatInfo& info = block_format_info(f);
    const ElementFormatInfo& el = element_format_info(info.element);
    const Grid g = grid_of(info.element);
    const auto B = static_cast<std::size_t>(info.block_size);
    const bool nvfp4 = f == BlockFormat::nvfp4;
    std::uint32_t saturated = 0, flushed = 0;
    stats.values += runs * K;
    // To nearest: round_whole_blocks (every block size, 16 and 32, is a multiple of its lanes and
    // fits `padded`); stochastically, block by block below.
    if (!rounding.stochastic) {
        const bool td = rounding.tensor_decode, counted = rounding.counted;
        if (K % B == 0)
            return round_whole_blocks(src, dst, runs * K / B, B, nvfp4, el.emax, tensor_scale, g, stats, td, counted,
                                      exponents, largest_bits);
        const std::size_t whole = K / B * B, tail = K - whole, per_run = K / B + 1;
        if (whole > 0)
            for (std::size_t r = 0; r < runs; ++r)
                round_whole_blocks(src + r * K, dst + r * K, K / B, B, nvfp4, el.emax, tensor_scale, g, stats, td,
                                   counted, exponents != nullptr ? exponents + r * per_run : nullptr, largest_bits);
        // Each run's last partial block, padded with zeros as the quantiser pads it (the padding
        // changes no amax and adds to no count), 64 runs' blocks to a call: a convolution's patch
        // of 9 or a last layer's 10 outputs is a partial block in every run.
        constexpr std::size_t batch = 64;
        alignas(32) float padded[batch * 32];
        std::int16_t tail_exponents[batch];
        for (std::size_t r0 = 0; r0 < runs; r0 += batch) {
            const std::size_t n = std::min(batch, runs - r0);
            std::fill(padded, padded + n * B, 0.0f);
            for (std::size_t i = 0; i < n; ++i) std::memcpy(padded + i * B, src + (r0 + i) * K + whole, tail * sizeof(float));
            round_whole_blocks(padded, padded, n, B, nvfp4, el.emax, tensor_scale, g, stats, td, counted,
                               exponents != nullptr ? tail_exponents : nullptr, largest_bits);
            for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + (r0 + i) * K + whole, padded + i * B, tail * sizeof(float));
            if (exponents != nullptr)
                for (std::size_t i = 0; i < n; ++i) exponents[(r0 + i) * per_run + K / B] = tail_exponents[i];
        }
        return;
    }
    for (std::size_t r = 0; r < runs; ++r) {
        for (std::size_t first = 0; first < K; first += B) {
            const std::size_t count = std::min(B, K - first);
            const float* x = src + r * K + first;
            float* y = dst + r * K + first;
            std::int32_t amax_bits, largest;
            magnitude_maxima(x, count, amax_bits, largest);
            const float amax = std::bit_cast<float>(amax_bits);
            const bool special = largest > fp32_max_bits;
            const BlockParams p =
                params_of(nvfp4, el.emax, tensor_scale, amax, special, g.max_finite, rounding.tensor_decode);
            ++stats.blocks;
            stats.nan_blocks += p.kind == nan_block;
            const bool live = p.kind == normal_block, zero_scale = p.kind == zero_scale_block;
            const std::uint64_t index = rounding.first_index + r * K + first;
            for (std::size_t j = 0; j < count; ++j) {
                const float q = x[j] * p.encode;
                const float u = unit_of(random_bits(rounding.key, index + j));
                y[j] = finish_element(x[j], q, stochastic_to_grid(q, g, u, g.max_finite), p.decode, live, zero_scale,
                                      g, saturated, flushed);
            }
        }
    }
    stats.saturated += saturated;
    stats.flushed_to_zero += flushed;
}

// The parameters of a tile's n blocks from their amaxes; returns the NaN blocks.
MANTISSA_BLOCK_HOT std::size_t tile_params(bool nvfp4, int emax, float tensor_scale, const std::int32_t* amax,
                                           const std::uint8_t* special, float* encode, float* decode,
                                           std::uint8_t* kind, std::size_t n, float no_clip_max,
                                           bool tensor_decode) {
    std::size_t nan_blocks = 0, i = 0;
    // Sixteen columns at a time in lanes (params16, nearest rounding alone), as the rows take them:
    // one at a time, NVFP4's E4M3 rounding and division per block cost more than the tile's values.
    if (no_clip_max == 0) {
        alignas(64) std::int32_t specials[16], zero_scales[16];
        for (; i + 16 <= n; i += 16) {
            for (std::size_t j = 0; j < 16; ++j) specials[j] = special[i + j] != 0 ? -1 : 0;
            Ints16 amax_bits, specials16;
            std::memcpy(&amax_bits, amax + i, sizeof amax_bits);
            std::memcpy(&specials16, specials, sizeof specials16);
            Params16 p;
            params16(nvfp4, emax, tensor_scale, tensor_decode, amax_bits, specials16, p);
            std::memcpy(encode + i, &p.encode, sizeof p.encode);
            std::memcpy(decode + i, &p.decode, sizeof p.decode);
            std::memcpy(zero_scales, &p.zero_scale, sizeof zero_scales);
            for (std::size_t j = 0; j < 16; ++j) {
                kind[i + j] = specials[j] ? nan_block : zero_scales[j] ? zero_scale_block : normal_block;
                nan_blocks += specials[j] != 0;
            }
        }
    }
    for (; i < n; ++i) {
        const BlockParams p = params_of(nvfp4, emax, tensor_scale, std::bit_cast<float>(amax[i]), special[i] != 0,
                                        no_clip_max, tensor_decode);
        encode[i] = p.encode, decode[i] = p.decode, kind[i] = p.kind;
        nan_blocks += p.kind == nan_block;
    }
    return nan_blocks;
}

// (outer, K, inner) with inner > 1: for each o, tiles of B rows of `inner` values.
void round_tiles(BlockFormat f, float tensor_scale, const float* src, float* dst, std::size_t outer, std::size_t K,
                 std::size_t inner, BlockStats& stats, ElementRounding rounding) {
    const BlockFormatInfo& info = block_format_info(f);
    const ElementFormatInfo& el = element_format_info(info.element);
    const Grid g = grid_of(info.element);
    const auto B = static_cast<std::size_t>(info.block_size);
    thread_local std::vector<std::int32_t> amax;  // magnitude_bits
    thread_local std::vector<float> encode, decode;
    thread_local std::vector<std::uint8_t> special, kind;
    thread_local std::vector<std::int32_t> live, zero_scale;  // nearest rounding's masks of `kind`
    amax.resize(inner);
    live.resize(inner);
    zero_scale.resize(inner);
    encode.resize(inner);
    decode.resize(inner);
    special.resize(inner);
    kind.resize(inner);
    Counts c;
    for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t first = 0; first < K; first += B) {
            const std::size_t count = std::min(B, K - first);
            const std::size_t base = (o * K + first) * inner;
            std::fill(amax.begin(), amax.end(), 0);
            std::fill(special.begin(), special.end(), std::uint8_t{0});
            for (std::size_t k = 0; k < count; ++k) column_amax(src + base + k * inner, amax.data(), special.data(), inner);
            stats.nan_blocks += tile_params(f == BlockFormat::nvfp4, el.emax, tensor_scale, amax.data(), special.data(),
                                            encode.data(), decode.data(), kind.data(), inner,
                                            rounding.stochastic ? g.max_finite : 0.0f, rounding.tensor_decode);
            stats.blocks += inner;
            // The whole tile is read (amaxes) before any of it is written: src == dst is safe.
            if (rounding.stochastic) {
                for (std::size_t k = 0; k < count; ++k)
                    round_span_stochastic(src + base + k * inner, dst + base + k * inner, inner, encode.data(),
                                          decode.data(), kind.data(), g, c, rounding,
                                          rounding.first_index + base + k * inner);
                continue;
            }
            for (std::size_t i = 0; i < inner; ++i) {
                live[i] = kind[i] == normal_block ? -1 : 0;
                zero_scale[i] = kind[i] == zero_scale_block ? -1 : 0;
            }
            for (std::size_t k = 0; k < count; ++k)
                round_span_nearest(src + base + k * inner, dst + base + k * inner, inner, encode.data(), decode.data(),
                                   live.data(), zero_scale.data(), g, c, rounding.counted);
        }
    }
    stats.values += outer * K * inner;
    stats.saturated += c.saturated;
    stats.flushed_to_zero += c.flushed;
}

}  // namespace

BlockStats round_blocks(BlockFormat format, const float* src, float* dst, std::size_t n) {
    BlockStats stats;
    round_runs(format, tensor_scale_of(format, src, n), src, dst, 1, n, stats, {});
    return stats;
}

BlockStats round_blocks_along(BlockFormat format, const float* src, float* dst, std::size_t outer,
                              std::size_t K, std::size_t inner) {
    return round_blocks_along(format, src, dst, outer, K, inner, tensor_scale_of(format, src, outer * K * inner));
}

float block_tensor_scale(BlockFormat format, const float* x, std::size_t n) { return tensor_scale_of(format, x, n); }

namespace {

// Each block's amax as round_runs finds it, then its parameters (params_of): the decode factor's
// exponent, without a library call per block (the views ask for thousands of blocks a tensor).
// NVFP4's parameters are worked out sixteen blocks at a time in lanes (params16, as the rounding
// takes them): one at a time, each block's E4M3 rounding and division made most of a view's cost.
MANTISSA_BLOCK_HOT void decode_exponents(BlockFormat f, float tensor_scale, const float* src, std::size_t rows,
                                         std::size_t K, std::int16_t* out, bool stochastic) {
    const BlockFormatInfo& info = block_format_info(f);
    const int emax = element_format_info(info.element).emax;
    const float no_clip_max = stochastic ? grid_of(info.element).max_finite : 0.0f;  // as round_runs
    const auto B = static_cast<std::size_t>(info.block_size);
    const bool nvfp4 = f == BlockFormat::nvfp4;
    if (nvfp4) {
        alignas(64) std::int32_t amaxes[16], specials[16];
        alignas(64) float decodes[16];
        std::size_t pending = 0;
        const auto emit = [&] {
            for (std::size_t i = pending; i < 16; ++i) amaxes[i] = specials[i] = 0;
            Ints16 amax_bits, special;
            std::memcpy(&amax_bits, amaxes, sizeof amax_bits);
            std::memcpy(&special, specials, sizeof special);
            Params16 p;
            params16(true, emax, tensor_scale, true, amax_bits, special, p);
            std::memcpy(decodes, &p.decode, sizeof decodes);
            for (std::size_t i = 0; i < pending; ++i) *out++ = block_exponent_of(decodes[i], specials[i] != 0);
            pending = 0;
        };
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t first = 0; first < K; first += B) {
                std::int32_t amax_bits, largest;
                magnitude_maxima(src + r * K + first, std::min(B, K - first), amax_bits, largest);
                amaxes[pending] = amax_bits;
                specials[pending] = largest > fp32_max_bits ? -1 : 0;
                if (++pending == 16) emit();
            }
        if (pending > 0) emit();
        return;
    }
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t first = 0; first < K; first += B) {
            const std::size_t count = std::min(B, K - first);
            const float* x = src + r * K + first;
            std::int32_t amax_bits, largest;
            magnitude_maxima(x, count, amax_bits, largest);
            const bool special = largest > fp32_max_bits;
            const float decode = special || amax_bits == 0
                                     ? 0.0f
                                     : params_of(false, emax, tensor_scale, std::bit_cast<float>(amax_bits), false,
                                                 no_clip_max)
                                           .decode;
            *out++ = block_exponent_of(decode, special);
        }
    }
}

}  // namespace

void block_decode_exponents(BlockFormat format, float tensor_scale, const float* x, std::size_t rows, std::size_t K,
                            std::int16_t* out, bool stochastic) {
    decode_exponents(format, tensor_scale, x, rows, K, out, stochastic);
}

namespace {

BlockStats round_along(BlockFormat format, const float* src, float* dst, std::size_t outer, std::size_t K,
                       std::size_t inner, float tensor_scale, ElementRounding rounding) {
    BlockStats stats;
    if (inner == 1)
        round_runs(format, tensor_scale, src, dst, outer, K, stats, rounding);
    else
        round_tiles(format, tensor_scale, src, dst, outer, K, inner, stats, rounding);
    return stats;
}

}  // namespace

BlockStats round_blocks_along(BlockFormat format, const float* src, float* dst, std::size_t outer,
                              std::size_t K, std::size_t inner, float tensor_scale) {
    return round_along(format, src, dst, outer, K, inner, tensor_scale, {});
}

BlockStats round_blocks_along_stochastic(BlockFormat format, const float* src, float* dst, std::size_t outer,
                                         std::size_t K, std::size_t inner, float tensor_scale, std::uint64_t key) {
    return round_along(format, src, dst, outer, K, inner, tensor_scale, {true, key});
}

float block_operand_factor(BlockFormat format, float tensor_scale) {
    return format == BlockFormat::nvfp4 ? 1.0f / tensor_scale : 1.0f;
}

float round_block_operand(BlockFormat format, const float* src, float* dst, std::size_t outer, std::size_t K,
                          std::size_t inner, float tensor_scale, std::optional<std::uint64_t> stochastic_key,
                          std::int16_t* exponents, float* largest, std::uint64_t first_index) {
    // The counts are dropped: the lanes skip them.
    const ElementRounding rounding{stochastic_key.has_value(), stochastic_key.value_or(0), false, false, first_index};
    if (exponents != nullptr && inner != 1)
        throw Error("round_block_operand: block exponents are kept only along rows (inner 1)");
    std::int32_t largest_bits = 0;
    if (inner == 1 && !rounding.stochastic) {
        // Every block whole in one pass: the exponents and the largest magnitude from it.
        BlockStats stats;
        round_runs(format, tensor_scale, src, dst, outer, K, stats, rounding, exponents,
                   largest != nullptr ? &largest_bits : nullptr);
    } else {
        // Passes of their own, taken before the rounding (src may be dst): the largest magnitude,
        // and the stochastic blocks' exponents (those blocks are rounded one at a time).
        if (largest != nullptr) {
            std::int32_t finite_bits = 0;
            magnitude_maxima(src, outer * K * inner, finite_bits, largest_bits);
        }
        if (exponents != nullptr) decode_exponents(format, tensor_scale, src, outer, K, exponents, true);
        round_along(format, src, dst, outer, K, inner, tensor_scale, rounding);
    }
    if (largest != nullptr) *largest = std::bit_cast<float>(largest_bits);
    return block_operand_factor(format, tensor_scale);
}

namespace {

// The per-run scale of round_axiswise_fp8, from the run's amax (magnitude bits).
float axiswise_scale(std::int32_t amax_bits, float fp8_max, int margin, bool power_of_two) {
    const float amax = std::bit_cast<float>(amax_bits);
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
    float s = (fp8_max / amax) / std::ldexp(1.0f, margin);
    if (!std::isfinite(s) || !(s > 0.0f)) return 1.0f;
    if (power_of_two) s = std::ldexp(1.0f, std::ilogb(s));
    return s;
}

// A tile row's values: y = round_to_grid(x · s) · inv, s and inv per value (per column); rounded
// stochastically (saturating) when `rounding` says, x[0] being value `index` of the tensor.
MANTISSA_BLOCK_HOT void scale_round_span(const float* x, float* y, std::size_t n, const float* s, const float* inv,
                                         Grid g, ElementRounding rounding, std::uint64_t index) {
    if (!rounding.stochastic) {
        for (std::size_t j = 0; j < n; ++j) y[j] = round_to_grid(x[j] * s[j], g) * inv[j];
    } else {
        for (std::size_t j = 0; j < n; ++j)
            y[j] = stochastic_to_grid(x[j] * s[j], g, unit_of(random_bits(rounding.key, index + j)), g.max_finite) *
                   inv[j];
    }
}

// A contiguous run's values, one scale for all of them.
MANTISSA_BLOCK_HOT void scale_round_run(const float* x, float* y, std::size_t n, float s, float inv, Grid g,
                                        ElementRounding rounding, std::uint64_t index) {
    if (!rounding.stochastic) {
        for (std::size_t j = 0; j < n; ++j) y[j] = round_to_grid(x[j] * s, g) * inv;
    } else {
        for (std::size_t j = 0; j < n; ++j)
            y[j] = stochastic_to_grid(x[j] * s, g, unit_of(random_bits(rounding.key, index + j)), g.max_finite) * inv;
    }
}

}  // namespace

namespace {

float round_axiswise(Format element, const float* src, float* dst, std::size_t outer, std::size_t K,
                     std::size_t inner, int margin, bool power_of_two, ElementRounding rounding) {
    const FormatInfo& f = format_info(element);
    const Grid g{f.mantissa_bits, f.min_exponent, f.max_exponent, f.max_finite};
    thread_local std::vector<std::int32_t> amax;
    thread_local std::vector<std::uint8_t> special;
    thread_local std::vector<float> scale, inverse;
    amax.resize(inner);
    special.resize(inner);
    scale.resize(inner);
    inverse.resize(inner);
    std::int32_t tensor_amax = 0;
    constexpr std::int32_t nan_bits = 0x7FC00000;  // a NaN or an inf in the tensor: its amax is NaN
    for (std::size_t o = 0; o < outer; ++o) {
        const float* x = src + o * K * inner;
        float* y = dst + o * K * inner;
        if (inner == 1) {  // one run of K contiguous values: one scale
            bool nonfinite = false;
            const std::int32_t a = std::bit_cast<std::int32_t>(finite_amax(x, K, nonfinite));
            tensor_amax = std::max({tensor_amax, a, nonfinite ? nan_bits : 0});
            const float s = axiswise_scale(a, f.max_finite, margin, power_of_two);
            scale_round_run(x, y, K, s, 1.0f / s, g, rounding, o * K);
            continue;
        }
        std::fill(amax.begin(), amax.end(), 0);
        std::fill(special.begin(), special.end(), std::uint8_t{0});
        for (std::size_t k = 0; k < K; ++k) column_amax(x + k * inner, amax.data(), special.data(), inner);
        for (std::size_t i = 0; i < inner; ++i) {
            tensor_amax = std::max({tensor_amax, amax[i], special[i] ? nan_bits : 0});
            scale[i] = axiswise_scale(amax[i], f.max_finite, margin, power_of_two);
            inverse[i] = 1.0f / scale[i];
        }
        for (std::size_t k = 0; k < K; ++k)
            scale_round_span(x + k * inner, y + k * inner, inner, scale.data(), inverse.data(), g, rounding,
                             (o * K + k) * inner);
    }
    return std::bit_cast<float>(tensor_amax);
}

}  // namespace

float round_axiswise_fp8(Format element, const float* src, float* dst, std::size_t outer, std::size_t K,
                         std::size_t inner, int margin, bool power_of_two) {
    return round_axiswise(element, src, dst, outer, K, inner, margin, power_of_two, {});
}

float round_axiswise_fp8_stochastic(Format element, const float* src, float* dst, std::size_t outer, std::size_t K,
                                    std::size_t inner, int margin, bool power_of_two, std::uint64_t key) {
    return round_axiswise(element, src, dst, outer, K, inner, margin, power_of_two, {true, key});
}

}  // namespace mantissa
