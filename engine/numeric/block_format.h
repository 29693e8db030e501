// Block-scaled formats: OCP Microscaling (MX) v1.0's MXFP8/MXFP6/MXFP4 and NVIDIA's NVFP4. A block
// of consecutive values shares one scale; each value keeps only a small element code. The rules
// (scale choice, rounding, saturation, NaN, padding) are written out in docs/numerics.md,
// "Block-scaled formats"; this header states the API's units and invariants.
//
// Blocks run along the array as given: values [0, B), [B, 2B), ... with B = block_size (32 for MX,
// 16 for NVFP4). Callers lay the array out so that this is the contiguous reduction dimension.
// A last partial block behaves exactly as if padded with zeros to B values (as both reference
// implementations pad), which is the same as taking its amax over the values present; the padding
// is not stored.
//
// MX (OCP MX v1.0, section 6.3): scale = 2^(floor(log2(amax)) - emax_elem), the exponent clamped
// to E8M0's [-127, 127]; amax = 0 gives the smallest scale, 2^-127. Each element = value / scale,
// rounded to nearest even into the element format, clamped to ±max_finite. A block holding a NaN
// or an infinity gets the NaN scale 0xFF and every value of it decodes as NaN.
//
// NVFP4 (NVIDIA Transformer Engine's reference recipe): an FP32 tensor scale
// S = (448 * 6) / amax_tensor (1 when amax_tensor is 0; at most FLT_MAX), and per block of 16 an
// E4M3 scale s = E4M3(amax_block * (S * (1/6))), all products in FP32. Each element =
// clamp(value * min(1 / (s * (1/S)), FLT_MAX), ±6) rounded to nearest even in e2m1. A value decodes
// as element * (s * (1/S)). amax_tensor is taken over the finite values; a block holding a NaN or an
// infinity gets the E4M3 NaN scale 0x7F and decodes as NaN (a choice of ours: see docs/numerics.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "numeric/element_format.h"
#include "numeric/format.h"

namespace mantissa {

enum class BlockFormat : std::uint8_t { mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, nvfp4 };

inline constexpr std::array<BlockFormat, 6> all_block_formats = {
    BlockFormat::mxfp8_e4m3, BlockFormat::mxfp8_e5m2, BlockFormat::mxfp6_e3m2,
    BlockFormat::mxfp6_e2m3, BlockFormat::mxfp4,      BlockFormat::nvfp4};

enum class ScaleKind : std::uint8_t {
    e8m0,                      // MX: one power of two per block
    e4m3_with_tensor_scale,    // NVFP4: one E4M3 per block, and one FP32 scale per tensor
};

struct BlockFormatInfo {
    BlockFormat format;
    std::string_view name;  // as in experiment files and the CLI: "mxfp6-e3m2", "mxfp4", "nvfp4"
    ElementFormat element;
    int block_size;         // values sharing one scale: 32 (MX) or 16 (NVFP4)
    ScaleKind scale;
    double bits_per_value;  // element bits + 8 / block_size (the per-tensor FP32 scale not counted)
};

const BlockFormatInfo& block_format_info(BlockFormat format);
std::string_view block_format_name(BlockFormat format);
// Canonical names and the forms with underscores ("mxfp8_e4m3"), plus "mxfp8" (= e4m3) and
// "mxfp6" (= e3m2); case-insensitive. Empty when the name is unknown.
std::optional<BlockFormat> parse_block_format(std::string_view name);
std::string_view block_format_names_list();

// Counts over one call. `values` counts the values given (padding excluded).
struct BlockStats {
    std::size_t blocks = 0;
    std::size_t values = 0;
    std::size_t flushed_to_zero = 0;  // finite non-zero values that decode to ±0
    std::size_t saturated = 0;        // values whose scaled magnitude exceeded the element max (clamped)
    std::size_t nan_blocks = 0;       // blocks with the NaN scale (a NaN or inf in the input)

    BlockStats& operator+=(const BlockStats& o);
};

// A quantised array. Element codes are one per byte, right-aligned as encode_element() gives them
// (not packed two or four to a byte). Invariant: scales.size() == ceil(elements.size() / block_size).
struct BlockQuantised {
    BlockFormat format = BlockFormat::mxfp8_e4m3;
    std::vector<std::uint8_t> elements;  // one code per value
    std::vector<std::uint8_t> scales;    // one code per block: E8M0 (MX) or E4M3 (NVFP4)
    float tensor_scale = 1;              // NVFP4's FP32 encode scale S (values are multiplied by it); 1 for MX
};

// Quantises x[0, n) (out is overwritten; its vectors are reused). x may hold any fp32 value.
BlockStats quantise_blocks(BlockFormat format, const float* x, std::size_t n, BlockQuantised& out);

// dst[0, q.elements.size()) = the values q holds. Throws mantissa::Error when q breaks its invariant.
void dequantise_blocks(const BlockQuantised& q, float* dst);

// dst[i] = dequantise(quantise(src))[i] for i in [0, n), bit for bit, in one pass without keeping
// the codes: the fake quantisation training applies. src == dst is allowed; otherwise the arrays
// must not overlap.
BlockStats round_blocks(BlockFormat format, const float* src, float* dst, std::size_t n);

// round_blocks over a tensor viewed as (outer, K, inner), row-major, with the blocks along K: for
// each (o, i), the K values src[(o·K + k)·inner + i] are rounded as round_blocks rounds one array
// of K values (a last partial block of each run of K as if zero-padded). This is how a matmul
// operand is quantised along its reduction dimension whatever its layout: the rows of x (outer =
// rows, inner = 1), the columns of W (outer = 1, K = rows, inner = cols), the channels of an
// NCHW image (outer = N, K = C, inner = H·W). NVFP4's tensor scale is taken over the whole
// tensor. src == dst is allowed; otherwise the arrays must not overlap.
BlockStats round_blocks_along(BlockFormat format, const float* src, float* dst, std::size_t outer,
                              std::size_t K, std::size_t inner);
// The same for a piece of a larger tensor (a convolution's im2col chunk), with NVFP4's tensor
// scale given: block_tensor_scale of the whole tensor (ignored by MX).
BlockStats round_blocks_along(BlockFormat format, const float* src, float* dst, std::size_t outer,
                              std::size_t K, std::size_t inner, float tensor_scale);
// The tensor scale round_blocks takes for x[0, n): nvfp4_tensor_scale of its finite amax for
// NVFP4, 1 for MX.
float block_tensor_scale(BlockFormat format, const float* x, std::size_t n);

// A matmul operand as a GEMM with block scales reads it (docs/numerics.md, "Block-scaled formats in
// training"): the codes of round_blocks_along (or of round_blocks_along_stochastic, with a key),
// each value decoded with its block's scale alone. For MX that is round_blocks_along's value; for
// NVFP4 an element times its E4M3 block scale, exact in FP32 and in bf16 (at most 6 significant
// bits, magnitudes 2^-10 to 2688), the tensor scale left out. Returns the factor the matmul applies
// to its FP32 accumulator, as a GPU's block-scaled GEMM applies its alpha: block_operand_factor.
// `exponents` (rows along K, inner == 1): when not null, each block's block_decode_exponents value
// with this tensor_scale, out[o · ceil(K / block) + b], found by the rounding's own pass (the
// block-scale views read them: no second pass over the operand). With a stochastic key, an MX
// block's exponent is the scale the stochastic rounding took (the next power of two where the
// rule's would clip the amax), as the views show it.
// `largest`: when not null, the largest |src| value as the largest magnitude bit pattern orders it
// (NaN above inf above every finite value: numeric/stats.h's max_abs), from the blocks' own amaxes
// where the rounding reads every block whole (to nearest along rows), else from a pass of its own.
// `first_index`: the index of src[0] in the tensor it is a part of (whole blocks of it: rows, or
// rows of blocks), by which stochastic rounding draws each value's bits, so that the parts of a
// tensor rounded apart (by threads) give what the whole rounded at once gives.
float round_block_operand(BlockFormat format, const float* src, float* dst, std::size_t outer, std::size_t K,
                          std::size_t inner, float tensor_scale, std::optional<std::uint64_t> stochastic_key = {},
                          std::int16_t* exponents = nullptr, float* largest = nullptr,
                          std::uint64_t first_index = 0);
// fp32(1 / tensor_scale) for NVFP4 (the factor its decoding leaves to the accumulator), 1 for MX.
float block_operand_factor(BlockFormat format, float tensor_scale);

// floor(log2) of the factor each block's values are decoded with (MX: its E8M0 exponent; NVFP4: its
// E4M3 scale over tensor_scale), for `rows` rows of K values cut into blocks from the start of each
// row (a last partial block as if zero-padded): out[row · ceil(K / block) + b]. A block whose scale
// decodes every value to zero (all zeros; an NVFP4 scale that rounded to zero) gets
// block_exponent_zero, one holding a NaN or an infinity block_exponent_nan. The scales are found as
// round_blocks finds them, so they are quantise_block's (block_scale_code, block_decode_factor);
// with `stochastic`, as round_blocks_along_stochastic finds them (an MX block the rule would clip
// takes the next power of two).
inline constexpr std::int16_t block_exponent_zero = -32768;
inline constexpr std::int16_t block_exponent_nan = 32767;
void block_decode_exponents(BlockFormat format, float tensor_scale, const float* x, std::size_t rows, std::size_t K,
                            std::int16_t* out, bool stochastic = false);

// FP8 with a scale per row along the reduction dimension (torchao's rowwise scaling): over the
// (outer, K, inner) view of round_blocks_along, each run of K values gets its own FP32 scale
// s = (fp8_max / amax_run) / 2^margin (rounded down to a power of two when power_of_two; 1 when the
// run's amax is 0 or not finite), each value becomes rnd_fp8^sat(x · s) · fp32(1 / s). element:
// fp8-e4m3 or fp8-e5m2. Returns the tensor's amax, the largest |x| (NaN when any x is not finite).
float round_axiswise_fp8(Format element, const float* src, float* dst, std::size_t outer, std::size_t K,
                         std::size_t inner, int margin, bool power_of_two);
// The same with each x · s rounded stochastically (stochastic_round.h; value i of the tensor, in
// its storage order, takes stochastic_bits(key, i)); the scales are the same.
float round_axiswise_fp8_stochastic(Format element, const float* src, float* dst, std::size_t outer, std::size_t K,
                                    std::size_t inner, int margin, bool power_of_two, std::uint64_t key);

// ---- one block at a time (what the calls above run per block; describe_block uses them too)

// The FP32 tensor scale NVFP4 derives from a tensor's amax (of its finite values):
// min(448 * 6 / amax, FLT_MAX), or 1 when amax is 0 or infinite. 1 for MX formats.
float nvfp4_tensor_scale(float amax);

// The scale code a block of finite values whose largest magnitude is `amax` gets: quantise_block's
// choice, without encoding the elements (the block-scale views read it).
std::uint8_t block_scale_code(BlockFormat format, float tensor_scale, float amax);

// Quantises one block of `count` values (1 <= count <= block_size, else mantissa::Error; fewer behaves as
// zero padding) into codes[0, count) and returns its scale code. tensor_scale is nvfp4_tensor_scale
// of the whole tensor (ignored by MX). Adds the block to *stats when stats is not null.
std::uint8_t quantise_block(BlockFormat format, float tensor_scale, const float* x, std::size_t count,
                            std::uint8_t* codes, BlockStats* stats = nullptr);

// The factor a block's elements are multiplied by when decoded: MX 2^(code - 127); NVFP4
// fp32(E4M3(code) * fp32(1 / tensor_scale)). NaN for a NaN scale code.
float block_decode_factor(BlockFormat format, std::uint8_t scale_code, float tensor_scale);

// dst[0, count) = decode_element(codes[i]) * block_decode_factor(...), in FP32; NaN for a NaN scale.
void dequantise_block(BlockFormat format, float tensor_scale, std::uint8_t scale_code,
                      const std::uint8_t* codes, std::size_t count, float* dst);

}  // namespace mantissa
