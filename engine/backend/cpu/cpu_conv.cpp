// CpuBackend: 2-D convolutions, forward and backward, with linear's rounding points
// (docs/numerics.md, "Convolutional ops"), on oneDNN's own convolution primitive where it has a
// direct kernel for the shape and direction (onednn_conv.h: the same operands, FP32 sums in its
// order, the forward's epilogue below reading its blocked result), else by im2col and CpuMatmul's
// FP32-accumulating matmuls, as described here. Block-scaled and per-GEMM formats always take
// im2col: their operands are quantised in blocks along the lowered GEMMs' reductions.
//
// The batch is taken in chunks of whole samples (chunk_samples: the column matrix stays under
// 2^22 values), and each chunk is one matmul, so a small image is not one small matmul per
// sample. For a chunk of n samples (x_i: (C, H, W) and y_i: (Co, oh·ow), each one row of its
// tensor; P = oh·ow):
//   COL (C·k·k, n·P)  = im2col of the samples side by side: the operand values under each kernel
//                       offset, 0 in the padding (sample i in columns [i·P, (i+1)·P))
//   forward   Y        = W_op (Co, C·k·k) · COL (Co, n·P); y_i = Y's columns of sample i,
//                        × the FP8 dequantisation, + b_o per channel, rounded to y's format
//   dX        DCOL     = W_opᵀ · DY (C·k·k, n·P), DY = the chunk's dy_op channel-major
//                        (Co, n·P); dx_i = col2im(DCOL's columns of sample i), the offsets that
//                        land on one input position added in FP32 in (c, ky, kx) order
//   dW        dW       = Σ_chunks DY · COLᵀ: one matmul per chunk, the chunks' products added
//                        in FP32 in chunk order
//   dB        dB[c]    = Σ_n (Σ_p dy[n, c, p]): each sample's sum over positions from +0, then the
//                        samples' sums in sample order (FP8: of the unquantised dy, as linear)
// im2col copies operand values and col2im adds in FP32, so the products are exact (operands in
// the compute format) and every sum is in FP32: the rounding points are linear_forward's and
// linear_backward's, with dy cast to the gradient operand format (FP8: scaled, saturating e5m2)
// and dX, dW rounded to their formats once. A 1×1 kernel with stride 1 and no padding
// is im2col's plain copy. The FP8 scaling state and the weight copies are handled as linear's
// are (CpuBackend::quantized_weight, weight_operand), so the optimizer keeps them.
// A block-scaled convolution quantises each matmul's operands in blocks along its reduction, as
// the lowered GEMMs see them: the forward's W along its rows (the patch C·k·k) and each chunk's
// COL along its columns (the same patch, padding zeros included); dgrad's dy and W along the
// output channels (DY's columns and W's columns); wgrad's DY and COL of each chunk along their
// rows (samples × positions). Each value is decoded with its block's scale (round_block_operand);
// NVFP4's tensor scales, the whole x's and dy's, multiply the accumulator (docs/numerics.md).
//
// Scratch (kept between steps): COL (slot 7), a chunk's dW (slot 8), DCOL or the forward's Y
// (slot 9), DY (slot 3, linear's bias block: free during a convolution); oneDNN's primitives are
// cached per shape by CpuMatmul. The direct path's blocked buffers: slot 7, or slot 9 when dW
// takes im2col (which holds slot 7).
//
// The passes around the matmuls (im2col, DY's gather, col2im, the forward's epilogue and the
// rounding of x) share whole samples out over the backend's threads, dB its output channels and
// the sum of the chunks' dW its elements (cpu_parallel.h: a thread per 2^16 values): each value
// is computed as on one thread, each sum in its own order, so the bits do not depend on the
// count. Training thread only.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "backend/conv_chunks.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_block_parallel.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/onednn_conv.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "backend/cpu/cpu_flush_count.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/stats.h"

namespace mantissa {

namespace {

// Slots 0 to 5 as cpu_linear.cpp uses them (3 holds DY here); 7 to 9 are the convolution's own.
enum Slot {
    slot_x = 0,
    slot_w = 1,
    slot_dy = 2,
    slot_dy_rows = 3,
    slot_reference = 5,
    slot_col = 7,
    slot_dw = 8,
    slot_dcol = 9,
    slot_dy_wgrad = 13,  // block formats (CpuBackend::block_backward_operands)
};

// Shapes of one sample.
struct ConvShape {
    std::int64_t channels, height, width, kernel, stride, padding;
    std::int64_t out_channels, out_h, out_w;
    std::int64_t in() const { return channels * height * width; }
    std::int64_t positions() const { return out_h * out_w; }
    std::int64_t patch() const { return channels * kernel * kernel; }
    std::int64_t out() const { return out_channels * positions(); }
};

// Samples per chunk: as many as keep the chunk's largest matrix (COL, DCOL, Y or DY) within
// conv_chunk_values (backend/conv_chunks.h, which a block-scaled weight gradient's blocks follow).
std::int64_t chunk_samples(const ConvShape& s, std::int64_t batch) {
    return conv_reference_chunk_samples(s.patch(), s.out_channels, s.positions(), batch);
}

ConvShape shape_of(const Conv2dGeometry& g) {
    return {g.in_channels, g.in_h, g.in_w, g.kernel, g.stride, g.padding, g.out_channels, g.out_h(), g.out_w()};
}

// The output columns [lo, hi) whose input column ox·stride - padding + kx lies in the image (the
// others read padding): the loops below copy or add those without a test per element.
struct Span {
    std::int64_t lo, hi;
};

Span valid_columns(const ConvShape& s, std::int64_t kx) {
    // ix = ox·stride - padding + kx in [0, width)  <=>  ox in [ceil((padding - kx) / stride),
    // floor((width - 1 + padding - kx) / stride)]
    const std::int64_t first = s.padding - kx;
    std::int64_t lo = first <= 0 ? 0 : (first + s.stride - 1) / s.stride;
    const std::int64_t last = s.width - 1 + s.padding - kx;
    std::int64_t hi = last < 0 ? 0 : last / s.stride + 1;
    lo = std::min(lo, s.out_w);
    hi = std::clamp(hi, lo, s.out_w);
    return {lo, hi};
}

// col(patch, positions) = the values of x (C, H, W) under each kernel offset, 0 in the padding;
// col's rows are `ld` apart (a chunk's samples side by side: ld = n·positions).
void im2col(const ConvShape& s, const float* x, float* col, std::int64_t ld) {
    for (std::int64_t c = 0; c < s.channels; ++c) {
        const float* xc = x + c * s.height * s.width;
        for (std::int64_t ky = 0; ky < s.kernel; ++ky) {
            for (std::int64_t kx = 0; kx < s.kernel; ++kx) {
                float* dst = col + ((c * s.kernel + ky) * s.kernel + kx) * ld;
                const Span span = valid_columns(s, kx);
                for (std::int64_t oy = 0; oy < s.out_h; ++oy) {
                    const std::int64_t iy = oy * s.stride - s.padding + ky;
                    float* row = dst + oy * s.out_w;
                    if (iy < 0 || iy >= s.height) {
                        std::fill_n(row, s.out_w, 0.0f);
                        continue;
                    }
                    std::fill_n(row, span.lo, 0.0f);
                    // input column of ox: at + ox·stride, inside the image for ox in the span
                    const std::int64_t at = kx - s.padding;
                    const float* src = xc + iy * s.width;
                    if (s.stride == 1) {
                        std::copy(src + (at + span.lo), src + (at + span.hi), row + span.lo);
                    } else {
                        for (std::int64_t ox = span.lo; ox < span.hi; ++ox) row[ox] = src[at + ox * s.stride];
                    }
                    std::fill(row + span.hi, row + s.out_w, 0.0f);
                }
            }
        }
    }
}

// dx (C, H, W) = Σ over the kernel offsets of dcol(patch, positions) at the positions im2col
// read them from, in FP32 (dx is overwritten); dcol's rows are `ld` apart. Each position's terms
// are added in (c, ky, kx) order from +0: the sums' bits do not depend on how the loops are cut.
void col2im(const ConvShape& s, const float* dcol, std::int64_t ld, float* dx) {
    std::fill_n(dx, s.in(), 0.0f);
    for (std::int64_t c = 0; c < s.channels; ++c) {
        float* dxc = dx + c * s.height * s.width;
        for (std::int64_t ky = 0; ky < s.kernel; ++ky) {
            for (std::int64_t kx = 0; kx < s.kernel; ++kx) {
                const float* src = dcol + ((c * s.kernel + ky) * s.kernel + kx) * ld;
                const Span span = valid_columns(s, kx);
                for (std::int64_t oy = 0; oy < s.out_h; ++oy) {
                    const std::int64_t iy = oy * s.stride - s.padding + ky;
                    if (iy < 0 || iy >= s.height) continue;
                    const std::int64_t at = kx - s.padding;
                    float* dst = dxc + iy * s.width;
                    const float* row = src + oy * s.out_w;
                    if (s.stride == 1) {
                        for (std::int64_t ox = span.lo; ox < span.hi; ++ox) dst[at + ox] += row[ox];
                    } else {
                        for (std::int64_t ox = span.lo; ox < span.hi; ++ox) dst[at + ox * s.stride] += row[ox];
                    }
                }
            }
        }
    }
}

// The scratch of one call, taken before the loops (no buffer moves during them), each sized
// for a chunk of `chunk` samples.
struct ConvScratch {
    std::int64_t chunk = 1;
    int max_threads = 1;       // the backend's threads, for the passes around the matmuls
    float* col = nullptr;      // COL (patch, chunk·positions)
    float* dy_rows = nullptr;  // DY (Co, chunk·positions)
    float* dw = nullptr;       // (Co, patch): a chunk's weight gradient
    float* dcol = nullptr;     // DCOL (patch, chunk·positions)
    // A block-scaled weight gradient: each chunk's DY and COL quantised along their rows (the
    // reduction over samples and positions), NVFP4 with the whole dy's and x's tensor scales.
    std::optional<BlockFormat> wgrad_block;
    float dy_scale = 1, x_scale = 1;
    // Stochastic gradients: DY's blocks are rounded stochastically, each chunk's with the key
    // stochastic_key(dy_key, its first sample).
    std::optional<std::uint64_t> dy_key;
};

// fn(i0, i1) over the samples [0, n) of a pass that touches `per_sample` values of each, cut
// into ranges of whole samples on up to max_threads threads (one per 2^16 values).
template <class Fn>
void for_samples(std::int64_t n, std::int64_t per_sample, int max_threads, Fn&& fn) {
    const int threads = cpu_detail::pass_threads(n * per_sample, cpu_detail::elementwise_min_per_thread, max_threads);
    cpu_detail::for_ranges(n, threads, 1, [&](std::int64_t i0, std::int64_t i1, int) { fn(i0, i1); });
}

// Samples per chunk of oneDNN's forward: its blocked result of a chunk within 512 KiB, so that
// the epilogue reads it back from the L2 cache rather than from memory (a whole batch's, 12.8 MB
// on the reference CNN's first layer, went out and came back); at least two per thread, so that
// every thread has a sample. Each output element is one thread's sum over the same kernel
// offsets and channels however many samples a call takes, so the chunks give the bits of one
// call (held by test_backend_cpu_conv and test_backend_cpu_threads_layers).
std::int64_t forward_chunk_samples(const ConvShape& s, std::int64_t batch, int threads) {
    constexpr std::int64_t budget = std::int64_t{1} << 17;  // floats
    const std::int64_t fit = budget / std::max<std::int64_t>(s.out(), 1);
    return std::clamp<std::int64_t>(std::max<std::int64_t>(fit, 2 * threads), 1, std::max<std::int64_t>(batch, 1));
}

OneDnnConvDims dims_of(const ConvShape& s, std::int64_t batch) {
    return {batch, s.channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.padding};
}

// oneDNN's convolution for `direction` (onednn_conv.h): on bf16 operands when `bf16` (the
// operands are bf16 values and the backend takes the bf16 matmul) and oneDNN has a bf16 kernel
// for the shape, else on FP32 ones; null when it has neither.
OneDnnConv* direct_conv(OneDnnConv::Direction direction, const OneDnnConvDims& dims, int threads, bool bf16) {
    if (bf16)
        if (OneDnnConv* conv = OneDnnConv::find(direction, dims, threads, ConvOperands::bf16)) return conv;
    return OneDnnConv::find(direction, dims, threads);
}

// A 64-byte aligned start in a scratch buffer of n + 16 floats (CpuBuffer places its arrays 16
// bytes past a 64-byte boundary; oneDNN's blocked kernels read whole cache lines).
float* aligned_start(float* raw) {
    const auto at = reinterpret_cast<std::uintptr_t>(raw);
    return raw + ((64 - at % 64) % 64) / sizeof(float);
}

// The forward's epilogue on one value: × dequant, + b_o (no bias: nothing is added, so a -0
// stays -0), as the im2col path computes it (a product and a sum, each rounded: no FMA).
enum class Epilogue { copy, scale, scale_add };

inline float epilogue(Epilogue e, float acc, float dequant, float bias) {
    return e == Epilogue::scale_add ? acc * dequant + bias : e == Epilogue::scale ? acc * dequant : acc;
}

#if defined(__SSE2__)
// Four lanes of four positions: rows[j·ld + q] = epilogue(src[q·block + j]), j, q < 4 (a 4×4
// transpose in registers, then the same product and sum as epilogue()).
inline void epilogue_4x4(Epilogue e, const float* src, std::int64_t block, float* rows, std::int64_t ld,
                         __m128 dequant, const float* bias) {
    __m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + block), r2 = _mm_loadu_ps(src + 2 * block),
           r3 = _mm_loadu_ps(src + 3 * block);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    __m128 r[4] = {r0, r1, r2, r3};
    for (int j = 0; j < 4; ++j) {
        if (e != Epilogue::copy) r[j] = _mm_mul_ps(r[j], dequant);
        if (e == Epilogue::scale_add) r[j] = _mm_add_ps(r[j], _mm_set1_ps(bias[j]));
        _mm_storeu_ps(rows + j * ld, r[j]);
    }
}
#endif

// y's samples [i0, i1) from the forward's result in `layout` (OneDnnConv::forward), through the
// epilogue, rounded to y's format while the sample's output is in the cache. A blocked sample is
// read in tiles of 64 positions (64 cache lines of a 16-channel block: in the L1 cache while each
// group of four channels is transposed out of them).
void blocked_epilogue_two_passes(const ConvShape& s, const float* blocked, BlockedLayout layout, float dequant,
                                 const float* b, float* y, Format y_format, std::int64_t i0, std::int64_t i1) {
    const std::int64_t positions = s.positions(), block = layout.block;
    const Epilogue e = b ? Epilogue::scale_add : dequant != 1.0f ? Epilogue::scale : Epilogue::copy;
    constexpr std::int64_t tile = 64;
    for (std::int64_t i = i0; i < i1; ++i) {
        float* yi = y + i * s.out();
        const float* sample = blocked + i * layout.padded_channels * positions;
        for (std::int64_t c0 = 0; c0 < s.out_channels; c0 += block) {
            const float* src_block = sample + c0 * positions;  // (positions, block)
            const std::int64_t lanes = std::min(block, s.out_channels - c0);
            for (std::int64_t p0 = 0; p0 < positions; p0 += tile) {
                const std::int64_t p1 = std::min(positions, p0 + tile);
                std::int64_t l = 0;
#if defined(__SSE2__)
                const __m128 dq = _mm_set1_ps(dequant);
                for (; block % 4 == 0 && l + 4 <= lanes; l += 4) {
                    const float* bias = b ? b + c0 + l : nullptr;
                    float* rows = yi + (c0 + l) * positions;
                    std::int64_t p = p0;
                    for (; p + 4 <= p1; p += 4) epilogue_4x4(e, src_block + p * block + l, block, rows + p, positions, dq, bias);
                    for (std::int64_t j = 0; j < 4; ++j)
                        for (std::int64_t q = p; q < p1; ++q)
                            rows[j * positions + q] = epilogue(e, src_block[q * block + l + j], dequant, bias ? bias[j] : 0.0f);
                }
#endif
                for (; l < lanes; ++l) {
                    const float* src = src_block + l;
                    float* row = yi + (c0 + l) * positions;
                    const float bias = b ? b[c0 + l] : 0.0f;
                    for (std::int64_t p = p0; p < p1; ++p) row[p] = epilogue(e, src[p * block], dequant, bias);
                }
            }
        }
        round_output(y_format, yi, s.out());
    }
}

#ifdef MANTISSA_ROUND_LANES
// The epilogue on eight values: the same product and sum as epilogue().
MANTISSA_LANES_TARGET inline __m256 epilogue8(Epilogue e, __m256 acc, __m256 dequant, float bias) {
    if (e != Epilogue::copy) acc = _mm256_mul_ps(acc, dequant);
    if (e == Epilogue::scale_add) acc = _mm256_add_ps(acc, _mm256_set1_ps(bias));
    return acc;
}

// Eight rows of eight floats transposed in registers: r[j][q] becomes r[q][j].
MANTISSA_LANES_TARGET inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {
        u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
}

// Positions q < count (count <= 8) of eight channels: rows[j·ld + q] = round(epilogue(src[q·block
// + j])), the transpose in registers and the rounding before the store.
template <lanes::Method M>
MANTISSA_LANES_TARGET inline void epilogue_8x8(Epilogue e, const float* src, std::int64_t block, std::int64_t count,
                                               float* rows, std::int64_t ld, __m256 dequant, const float* bias,
                                               const lanes::Rounding& r) {
    __m256 v[8];
    for (std::int64_t q = 0; q < 8; ++q) v[q] = q < count ? _mm256_loadu_ps(src + q * block) : _mm256_setzero_ps();
    transpose8(v);
    const __m256i tail = lanes::first_lanes(count);
    for (int j = 0; j < 8; ++j) {
        const __m256 out = lanes::round8<M>(epilogue8(e, v[j], dequant, bias ? bias[j] : 0.0f), r);
        if (count == 8) {
            _mm256_storeu_ps(rows + j * ld, out);
        } else {
            _mm256_maskstore_ps(rows + j * ld, tail, out);
        }
    }
}

// n values of a row rounded in place, for the channels the 8×8 tiles leave.
template <lanes::Method M>
MANTISSA_LANES_TARGET void round_row(float* row, std::int64_t n, const lanes::Rounding& r) {
    std::int64_t p = 0;
    for (; p + 8 <= n; p += 8) _mm256_storeu_ps(row + p, lanes::round8<M>(_mm256_loadu_ps(row + p), r));
    if (p < n) {
        const __m256i tail = lanes::first_lanes(n - p);
        _mm256_maskstore_ps(row + p, tail, lanes::round8<M>(_mm256_maskload_ps(row + p, tail), r));
    }
}

// blocked_epilogue_two_passes with eight channels at a time transposed in AVX2 registers and
// rounded there before the one store, where that pass stores each sample's output and reads it
// back to round it (its rounding was about 3% of the reference CNN's bf16 step:
// docs/benchmarks.md). The same values: each is epilogue() of its accumulator, rounded. The walk
// over samples, channel blocks and tiles is that function's, written out again: a lambda given
// the tile's work would not carry this function's AVX2 target.
template <lanes::Method M>
MANTISSA_LANES_TARGET void blocked_epilogue_lanes(const ConvShape& s, const float* blocked, BlockedLayout layout,
                                                  float dequant, const float* b, float* y, const lanes::Rounding& rounding,
                                                  std::int64_t i0, std::int64_t i1) {
    const lanes::Rounding r = rounding;
    const std::int64_t positions = s.positions(), block = layout.block;
    const Epilogue e = b ? Epilogue::scale_add : dequant != 1.0f ? Epilogue::scale : Epilogue::copy;
    const __m256 dq = _mm256_set1_ps(dequant);
    constexpr std::int64_t tile = 64;
    for (std::int64_t i = i0; i < i1; ++i) {
        float* yi = y + i * s.out();
        const float* sample = blocked + i * layout.padded_channels * positions;
        for (std::int64_t c0 = 0; c0 < s.out_channels; c0 += block) {
            const float* src_block = sample + c0 * positions;  // (positions, block)
            const std::int64_t lanes = std::min(block, s.out_channels - c0);
            for (std::int64_t p0 = 0; p0 < positions; p0 += tile) {
                const std::int64_t p1 = std::min(positions, p0 + tile);
                std::int64_t l = 0;
                for (; block % 8 == 0 && l + 8 <= lanes; l += 8) {
                    const float* bias = b ? b + c0 + l : nullptr;
                    float* rows = yi + (c0 + l) * positions;
                    for (std::int64_t p = p0; p < p1; p += 8)
                        epilogue_8x8<M>(e, src_block + p * block + l, block, std::min<std::int64_t>(8, p1 - p), rows + p,
                                        positions, dq, bias, r);
                }
                for (; l < lanes; ++l) {
                    const float* src = src_block + l;
                    float* row = yi + (c0 + l) * positions;
                    const float bias = b ? b[c0 + l] : 0.0f;
                    for (std::int64_t p = p0; p < p1; ++p) row[p] = epilogue(e, src[p * block], dequant, bias);
                    round_row<M>(row + p0, p1 - p0, r);
                }
            }
        }
    }
}

// The im2col path's rows of one sample: row[p] = round(epilogue(src[p])), one store.
template <lanes::Method M>
MANTISSA_LANES_TARGET void epilogue_row_lanes(Epilogue e, const float* src, float* row, std::int64_t n, float dequant,
                                              float bias, const lanes::Rounding& rounding) {
    const lanes::Rounding r = rounding;
    const __m256 dq = _mm256_set1_ps(dequant);
    std::int64_t p = 0;
    for (; p + 8 <= n; p += 8) _mm256_storeu_ps(row + p, lanes::round8<M>(epilogue8(e, _mm256_loadu_ps(src + p), dq, bias), r));
    if (p < n) {
        const __m256i tail = lanes::first_lanes(n - p);
        _mm256_maskstore_ps(row + p, tail, lanes::round8<M>(epilogue8(e, _mm256_maskload_ps(src + p, tail), dq, bias), r));
    }
}
#endif

void blocked_epilogue(const ConvShape& s, const float* blocked, BlockedLayout layout, float dequant, const float* b,
                      float* y, const RoundedStore& out, std::int64_t i0, std::int64_t i1) {
#ifdef MANTISSA_ROUND_LANES
    if (out.in_lanes)
        return lanes::with_method(out.rounding.method, [&](auto method) {
            blocked_epilogue_lanes<decltype(method)::value>(s, blocked, layout, dequant, b, y, out.rounding, i0, i1);
        });
#endif
    blocked_epilogue_two_passes(s, blocked, layout, dequant, b, y, out.format, i0, i1);
}

// Sample yi of the im2col path from its columns of the chunk's result (rows, leading dimension
// ld): × dequant, + b_o (no bias: nothing is added, a -0 stays -0), rounded while the sample's
// output is in the cache.
void im2col_epilogue(const ConvShape& s, const float* rows, std::int64_t ld, float dequant, const float* b, float* yi,
                     const RoundedStore& out) {
    const std::int64_t positions = s.positions();
    const Epilogue e = b ? Epilogue::scale_add : dequant != 1.0f ? Epilogue::scale : Epilogue::copy;
#ifdef MANTISSA_ROUND_LANES
    if (out.in_lanes)
        return lanes::with_method(out.rounding.method, [&](auto method) {
            for (std::int64_t c = 0; c < s.out_channels; ++c)
                epilogue_row_lanes<decltype(method)::value>(e, rows + c * ld, yi + c * positions, positions, dequant,
                                                            b ? b[c] : 0.0f, out.rounding);
        });
#endif
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
        const float* src = rows + c * ld;
        float* row = yi + c * positions;
        if (e == Epilogue::scale_add) {
            for (std::int64_t p = 0; p < positions; ++p) row[p] = src[p] * dequant + b[c];
        } else if (e == Epilogue::scale) {
            for (std::int64_t p = 0; p < positions; ++p) row[p] = src[p] * dequant;
        } else {
            std::copy_n(src, positions, row);
        }
    }
    round_output(out.format, yi, s.out());
}

// DY (Co, n·P) = the n samples' rows of dy (n, Co, P), channel-major.
void gather_channel_major(const ConvShape& s, const float* dy, std::int64_t n, float* rows, int max_threads) {
    const std::int64_t positions = s.positions(), ld = n * positions;
    for_samples(n, s.out(), max_threads, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t c = 0; c < s.out_channels; ++c)
                std::copy_n(dy + i * s.out() + c * positions, positions, rows + c * ld + i * positions);
    });
}

// COL for samples [first, first + n) of x.
void im2col_chunk(const ConvShape& s, const float* x, std::int64_t first, std::int64_t n, float* col,
                  int max_threads) {
    const std::int64_t ld = n * s.positions();
    for_samples(n, s.patch() * s.positions(), max_threads, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) im2col(s, x + (first + i) * s.in(), col + i * s.positions(), ld);
    });
}

// dx(batch, in) = the input gradient from dy(batch, out), in FP32, unscaled.
void input_gradient(CpuMatmul& mm, const ConvShape& s, const float* dy, const float* w, float* dx,
                    std::int64_t batch, bool bf16_ok, const ConvScratch& buf) {
    for (std::int64_t first = 0; first < batch; first += buf.chunk) {
        const std::int64_t n = std::min(buf.chunk, batch - first), ld = n * s.positions();
        gather_channel_major(s, dy + first * s.out(), n, buf.dy_rows, buf.max_threads);
        mm.multiply(w, true, buf.dy_rows, false, buf.dcol, s.patch(), ld, s.out_channels, bf16_ok);
        for_samples(n, s.patch() * s.positions(), buf.max_threads, [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t i = i0; i < i1; ++i)
                col2im(s, buf.dcol + i * s.positions(), ld, dx + (first + i) * s.in());
        });
    }
}

// gw(Co, patch) = Σ_chunks DY · COLᵀ in FP32, unscaled (zero for an empty batch).
void weight_gradient(CpuMatmul& mm, const ConvShape& s, const float* dy, const float* x, float* gw,
                     std::int64_t batch, bool bf16_ok, const ConvScratch& buf) {
    const std::int64_t n_w = s.out_channels * s.patch();
    if (batch == 0) std::fill_n(gw, n_w, 0.0f);
    for (std::int64_t first = 0; first < batch; first += buf.chunk) {
        const std::int64_t n = std::min(buf.chunk, batch - first), ld = n * s.positions();
        gather_channel_major(s, dy + first * s.out(), n, buf.dy_rows, buf.max_threads);
        im2col_chunk(s, x, first, n, buf.col, buf.max_threads);
        if (buf.wgrad_block) {
            const auto rows = static_cast<std::size_t>(ld);
            std::optional<std::uint64_t> key;
            if (buf.dy_key) key = stochastic_key(*buf.dy_key, static_cast<std::uint64_t>(first));
            cpu_detail::round_block_operand_on(buf.max_threads, *buf.wgrad_block, buf.dy_rows, buf.dy_rows,
                                               static_cast<std::size_t>(s.out_channels), rows, 1, buf.dy_scale, key);
            cpu_detail::round_block_operand_on(buf.max_threads, *buf.wgrad_block, buf.col, buf.col,
                                               static_cast<std::size_t>(s.patch()), rows, 1, buf.x_scale);
        }
        float* target = first == 0 ? gw : buf.dw;
        mm.multiply(buf.dy_rows, false, buf.col, true, target, s.out_channels, s.patch(), ld, bf16_ok);
        if (first > 0) {
            const int threads = cpu_detail::pass_threads(n_w, cpu_detail::elementwise_min_per_thread, buf.max_threads);
            cpu_detail::for_ranges(n_w, threads, 64, [&](std::int64_t i0, std::int64_t i1, int) {
                for (std::int64_t i = i0; i < i1; ++i) gw[i] += buf.dw[i];
            });
        }
    }
}

// db[c] = Σ_n Σ_p dy[n, c, p] (FP32, each sample's sum from +0, samples in order); the output
// channels shared out over the threads, each channel's sums in that order. Eight samples' sums
// run side by side, each still in position order: one sum alone is a chain of dependent adds,
// four cycles a value, which took a sixth of a CNN step's passes.
void bias_gradient(const ConvShape& s, const float* dy, float* db, std::int64_t batch, int max_threads) {
    constexpr std::int64_t side_by_side = 8;
    const std::int64_t positions = s.positions();
    const int threads = cpu_detail::pass_threads(batch * s.out(), cpu_detail::elementwise_min_per_thread, max_threads);
    cpu_detail::for_ranges(s.out_channels, threads, 1, [&](std::int64_t c0, std::int64_t c1, int) {
        for (std::int64_t c = c0; c < c1; ++c) {
            const float* plane = dy + c * positions;  // sample n's at plane + n · out
            float total = 0.0f;
            std::int64_t n = 0;
            for (; n + side_by_side <= batch; n += side_by_side) {
                float sums[side_by_side] = {};
                for (std::int64_t p = 0; p < positions; ++p)
                    for (std::int64_t j = 0; j < side_by_side; ++j) sums[j] += plane[(n + j) * s.out() + p];
                for (float sum : sums) total += sum;
            }
            for (; n < batch; ++n) {
                float sum = 0.0f;
                for (std::int64_t p = 0; p < positions; ++p) sum += plane[n * s.out() + p];
                total += sum;
            }
            db[c] = total;
        }
    });
}

}  // namespace

void CpuBackend::conv2d_forward_impl(ConvTensors& conv, const Tensor& x_in, Tensor& y_out, std::int64_t batch,
                                     bool record_amax) {
    const ConvShape s = shape_of(conv.geometry);
    const CpuTensor& x = cpu(x_in);
    CpuTensor& w = cpu(*conv.weight);
    const std::int64_t in = s.in();

    const float* x_op;
    const float* w_op;
    float dequant = 1.0f;
    const bool fp8 = conv.compute == Format::fp8_e4m3;
    float x_block_scale = 1;
    if (conv.block) {  // blocks along the reduction, the patch: W's rows here, COL's columns below
        const Conv2dGeometry& g = conv.geometry;
        x_op = x.data();
        x_block_scale = block_tensor_scale(*conv.block, x.data(), static_cast<std::size_t>(batch * in));
        float dq_w = 1.0f;
        w_op = block_operand(*conv.block, w, {g.out_channels, g.patch(), 1}, slot_w, dq_w);
        dequant = block_operand_factor(*conv.block, x_block_scale) * dq_w;  // NVFP4's tensor scales
    } else if (fp8) {
        auto& state = static_cast<CpuFp8State&>(*conv.fp8);
        AmaxHistory& hx = state.history(Fp8Role::input);
        AmaxHistory& hw = state.history(Fp8Role::weight);
        CpuTensor& wc = cpu(*conv.weight_compute);
        const float amax_w = quantized_weight(w, wc, hw);
        float* xq = cpu(*conv.saved_input).data();
        if (hx.current()) hx.use_amax(amax_of(x.data(), batch * in));
        const float amax_x = scale_round_array(Format::fp8_e4m3, x.data(), xq, static_cast<std::size_t>(batch * in),
                                               hx.scale(), Overflow::saturate);
        if (record_amax) {
            hw.record(amax_w);
            hx.record(amax_x);
        }
        dequant = hx.scale_inv() * hw.scale_inv();
        x_op = xq;
        w_op = std::as_const(wc).data();
    } else {
        w_op = weight_operand(w, conv.weight_compute, conv.compute, slot_w);
        if (conv.saved_input) {
            float* saved = cpu(*conv.saved_input).data();
            const Format f = conv.saved_input->format();
            cpu_detail::for_ranges(batch * in, pass_threads(batch * in, cpu_detail::elementwise_min_per_thread), 64,
                                   [&](std::int64_t i0, std::int64_t i1, int) {
                                       round_array(f, x.data() + i0, saved + i0, static_cast<std::size_t>(i1 - i0));
                                   });
            x_op = saved;
        } else {
            x_op = operand(x, batch * in, conv.compute, slot_x);
        }
    }
    const bool bf16_ok = fp8 || conv.compute == Format::bf16 || conv.block.has_value();

    const float* b = nullptr;
    if (conv.bias && conv.bias_compute) {
        cast(*conv.bias, *conv.bias_compute);
        b = cpu(*conv.bias_compute).data();
    } else if (conv.bias) {
        b = cpu(*conv.bias).data();
    }

    float* y = cpu(y_out).data();
    const RoundedStore out(y_out.format(), rounds_in_lanes());
    const int max_threads = m_matmul.threads();
    // oneDNN's convolution where it has one for the shape (onednn_conv.h): the same operands, the
    // same epilogue. Block-scaled operands are quantised along the lowered GEMM's patch: im2col.
    // The batch in chunks whose blocked result is still in the L2 cache when the epilogue reads it.
    const std::int64_t direct_chunk = forward_chunk_samples(s, batch, max_threads);
    const std::int64_t last_chunk = batch % direct_chunk;
    const bool bf16_direct = bf16_ok && m_matmul.bf16_enabled();
    OneDnnConv* direct =
        conv.block ? nullptr
                   : direct_conv(OneDnnConv::Direction::forward, dims_of(s, direct_chunk), max_threads, bf16_direct);
    OneDnnConv* direct_last = direct && last_chunk > 0 ? direct_conv(OneDnnConv::Direction::forward,
                                                                     dims_of(s, last_chunk), max_threads, bf16_direct)
                                                       : direct;
    if (direct && direct_last) {
        float* workspace = aligned_start(
            scratch(slot_col, std::max(direct->workspace_floats(), direct_last->workspace_floats()) + 16));
        for (std::int64_t first = 0; first < batch; first += direct_chunk) {
            const std::int64_t n = std::min(direct_chunk, batch - first);
            OneDnnConv* chunk_conv = n == direct_chunk ? direct : direct_last;
            const float* blocked = chunk_conv->forward(x_op + first * in, w_op, workspace);
            for_samples(n, s.out(), max_threads, [&](std::int64_t i0, std::int64_t i1) {
                blocked_epilogue(s, blocked, chunk_conv->dst_layout(), dequant, b, y + first * s.out(), out, i0, i1);
            });
        }
        return;
    }
    const std::int64_t positions = s.positions(), chunk = chunk_samples(s, batch);
    float* col = scratch(slot_col, s.patch() * chunk * positions);
    float* rows = scratch(slot_dcol, s.out_channels * chunk * positions);
    for (std::int64_t first = 0; first < batch; first += chunk) {
        const std::int64_t n = std::min(chunk, batch - first), ld = n * positions;
        im2col_chunk(s, x_op, first, n, col, max_threads);
        if (conv.block)
            cpu_detail::round_block_operand_on(max_threads, *conv.block, col, col, 1, static_cast<std::size_t>(s.patch()),
                                               static_cast<std::size_t>(ld), x_block_scale);
        m_matmul.multiply(w_op, false, col, false, rows, s.out_channels, ld, s.patch(), bf16_ok);
        for_samples(n, s.out(), max_threads, [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t i = i0; i < i1; ++i)
                im2col_epilogue(s, rows + i * positions, ld, dequant, b, y + (first + i) * s.out(), out);
        });
    }
}

void CpuBackend::conv2d_backward_impl(ConvTensors& conv, const Tensor& x_in, const Tensor& dy_in, Tensor* dx_out,
                                      std::int64_t batch, RoundingStats* weight_stats) {
    const ConvShape s = shape_of(conv.geometry);
    const CpuTensor& x = cpu(x_in);
    const CpuTensor& dy = cpu(dy_in);
    CpuTensor& w = cpu(*conv.weight);
    const std::int64_t in = s.in(), out = s.out();
    const StochasticGradients stochastic(*this, conv.stochastic_gradients);

    // Block formats: dgrad reduces over the output channels (dy's, W's rows); wgrad over the
    // samples and positions: its DY and COL are quantised chunk by chunk in weight_gradient (no
    // axes here: dy and x pass as they are).
    const Conv2dGeometry& g = conv.geometry;
    const BlockOperandAxes axes{.dy_dgrad = {batch, g.out_channels, s.positions()},
                                .w_dgrad = {1, g.out_channels, g.patch()},
                                .dy_wgrad = {},
                                .x_wgrad = {}};
    const ComputeFormat forward = conv.block ? ComputeFormat(*conv.block) : ComputeFormat(conv.compute);
    const bool per_gemm = conv.dgrad || conv.wgrad;
    const MatmulBackwardOperands o =
        per_gemm ? per_gemm_backward_operands({forward, conv.dgrad.value_or(forward), conv.wgrad.value_or(forward),
                                               conv.fp8, conv.weight_compute, conv.saved_input, axes, batch * out,
                                               batch * in},
                                              dy, x, w, dx_out != nullptr)
        : conv.block ? block_backward_operands(*conv.block, dy, x, w, axes, dx_out != nullptr)
                     : matmul_backward_operands(conv.compute, conv.fp8, dy, batch * out, x, batch * in, w,
                                                conv.weight_compute, conv.saved_input, dx_out != nullptr, slot_x,
                                                slot_w, slot_dy);
    const bool fp8 = conv.compute == Format::fp8_e4m3;
    const float *dy_op = o.dy, *x_op = o.x, *w_op = o.w, *dy_shadow = o.dy_shadow, *dy_reference = o.dy_reference;
    const float dq_g = o.dq_g, dq_x = o.dq_x, dq_w = o.dq_w, dq_g_wgrad = o.dq_g_wgrad;
    const bool bf16_ok = o.bf16_ok, flushed = o.flushed;
    ConvScratch buf;
    buf.chunk = chunk_samples(s, batch);
    buf.max_threads = m_matmul.threads();
    // oneDNN's convolutions (onednn_conv.h) for the directions it has in FP32, unless the operands
    // are block-scaled or each GEMM has its own format: those are quantised along the lowered GEMMs.
    // bf16 operands take its bf16 kernels where it has them (direct_conv); the references of the
    // gradient statistics are FP32. Their workspace takes a slot the im2col path of the other
    // direction leaves free.
    const bool direct_ok = !conv.block && !per_gemm;
    const OneDnnConvDims dims = dims_of(s, batch);
    using Direction = OneDnnConv::Direction;
    const bool dgrad_direct = direct_ok && dx_out && OneDnnConv::find(Direction::backward_data, dims, buf.max_threads);
    const bool wgrad_direct = direct_ok && OneDnnConv::find(Direction::backward_weights, dims, buf.max_threads);
    const std::int64_t chunk_positions = buf.chunk * s.positions();
    if (!wgrad_direct) buf.col = scratch(slot_col, s.patch() * chunk_positions);
    if (!(dgrad_direct && wgrad_direct)) buf.dy_rows = scratch(slot_dy_rows, s.out_channels * chunk_positions);
    if (dx_out && !dgrad_direct) buf.dcol = scratch(slot_dcol, s.patch() * chunk_positions);
    if (batch > buf.chunk && !wgrad_direct) buf.dw = scratch(slot_dw, s.out_channels * s.patch());
    const auto workspace = [&](Direction d, bool bf16) {
        OneDnnConv* direct = direct_conv(d, dims, buf.max_threads, bf16 && m_matmul.bf16_enabled());
        return std::pair{direct, aligned_start(scratch(wgrad_direct ? slot_col : slot_dcol, direct->workspace_floats() + 16))};
    };
    // dx = the input gradient of dy, FP32, unscaled; gw the weight gradient.
    const auto dgrad = [&](const float* dy_in, float* dx, bool bf16) {
        if (!dgrad_direct) return input_gradient(m_matmul, s, dy_in, w_op, dx, batch, bf16, buf);
        auto [direct, ws] = workspace(Direction::backward_data, bf16);
        direct->backward_data(dy_in, w_op, dx, ws);
    };
    const auto wgrad = [&](const float* dy_in, float* gw, bool bf16, const ConvScratch& scratch_of) {
        if (!wgrad_direct) return weight_gradient(m_matmul, s, dy_in, x_op, gw, batch, bf16, scratch_of);
        auto [direct, ws] = workspace(Direction::backward_weights, bf16);
        direct->backward_weights(dy_in, x_op, gw, ws);
    };
    const std::optional<BlockFormat> wgrad_block = per_gemm ? conv.wgrad.value_or(forward).block : conv.block;
    float dq = dq_g_wgrad * dq_x;  // what wgrad's accumulator is multiplied by
    if (wgrad_block) {
        buf.wgrad_block = wgrad_block;
        buf.dy_scale = block_tensor_scale(*wgrad_block, dy.data(), static_cast<std::size_t>(batch * out));
        buf.x_scale = block_tensor_scale(*wgrad_block, x.data(), static_cast<std::size_t>(batch * in));
        if (m_stochastic_gradients) buf.dy_key = next_stochastic_key();
        dq = block_operand_factor(*wgrad_block, buf.dy_scale) * block_operand_factor(*wgrad_block, buf.x_scale);
    }

    if (dx_out) {
        float* dx = cpu(*dx_out).data();
        dgrad(dy_op, dx, bf16_ok);
        finish_matmul_dgrad(*dx_out, dx, batch * in, dq_g * dq_w, dq_w, dy_shadow != nullptr, flushed,
                            [&](float* product) { dgrad(dy_reference, product, false); });
    }

    CpuTensor& gw = cpu(*conv.grad_weight);
    const std::int64_t n_w = s.out_channels * s.patch();
    wgrad(o.dy_wgrad, gw.data(), o.bf16_ok_wgrad, buf);
    // A block-scaled wgrad may flush in its DY and COL: counted against the reference, as a
    // flushed dy is.
    if (!weight_stats) {
        scale_round_gradient(gw.format(), gw.data(), n_w, dq);
    } else if (!flushed && !(m_tracing && wgrad_block)) {
        scale_in_place(gw.data(), n_w, dq);
        round_gradient_with_stats(gw.format(), gw.data(), n_w, *weight_stats, gradient_key(gw.format()), 0);
    } else {
        // Underflow is counted against the weight gradient computed in FP32 from dy_reference.
        scale_round_gradient(gw.format(), gw.data(), n_w, dq);
        RoundingStats counts;
        count_classes(gw.format(), gw.data(), static_cast<std::size_t>(n_w), counts);
        float* ref = scratch(slot_reference, n_w);
        ConvScratch unquantised = buf;
        unquantised.wgrad_block.reset();
        wgrad(dy_reference, ref, false, unquantised);
        counts.zeros_before = counts.zeros - cpu_detail::count_flushed_against_reference(ref, gw.data(), n_w);
        *weight_stats += counts;
    }

    if (conv.grad_bias) {
        float* db = cpu(*conv.grad_bias).data();
        bias_gradient(s, fp8 || conv.block || per_gemm ? dy.data() : dy_op, db, batch, buf.max_threads);
        round_output(conv.grad_bias->format(), db, s.out_channels);
    }
}

}  // namespace mantissa
