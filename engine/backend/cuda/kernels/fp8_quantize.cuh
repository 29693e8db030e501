// fp8_quantize: the scaled, saturating cast of an FP8 layer's operand (Transformer Engine's
// delayed scaling): q = saturate_cast<e4m3 or e5m2>(x x scale), with the tensor's amax (the
// largest |x| before scaling) recorded on the device in the same pass: the maximum of the
// magnitudes' bit patterns, which orders non-negative floats and lets a NaN win (a NaN amax keeps
// the scale), as the CPU does. The scale is read from the device, so no host round trip.
// With a key (the device word of a stochastic rounding pass: a gradient rounded stochastically),
// x x scale is rounded stochastically, saturating, as the CPU's scale_round_array_stochastic.
// transpose_u8 makes the K-major copies cuBLASLt's FP8 kernels need for the backward matmuls
// (FP8 GEMMs accept only the "TN" layout).
// The reference: quantize_scaled in cpu_linear.cpp.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

// ---- kernels

__global__ void quantize_fp8_kernel(const void* src, int src_fmt, std::int64_t n, const float* scale_ptr,
                                    std::uint8_t* dst, bool e4m3, std::uint32_t* amax_bits, const std::uint64_t* key) {
    const float scale = *scale_ptr;
    const std::uint64_t k = key ? *key : 0;
    const int fmt = e4m3 ? fmt_e4m3 : fmt_e5m2;
    std::uint32_t amax = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float v = load_value(src, src_fmt, i);
        amax = max(amax, bits_of(v) & 0x7fffffffu);
        const float scaled = key ? v * scale : apply_multiplier(v, scale);
        const float q = key ? round_stochastic_value(fmt, scaled, stochastic_bits(k, i), true) : scaled;
        dst[i] = static_cast<std::uint8_t>(encode_fp8(q, true, e4m3));
    }
    if (!amax_bits) return;
    amax = block_max(amax);
    if (threadIdx.x == 0 && amax) atomicMax(amax_bits, amax);
}

constexpr int transpose_tile = 32;
constexpr int transpose_rows = 8;

__global__ void transpose_u8_kernel(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst) {
    __shared__ std::uint8_t tile[transpose_tile][transpose_tile + 1];
    const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * transpose_tile;
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * transpose_tile;
    for (int j = threadIdx.y; j < transpose_tile; j += transpose_rows) {
        const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < transpose_tile; j += transpose_rows) {
        const std::int64_t c = c0 + j, r = r0 + threadIdx.x;  // dst row c, column r
        if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][j];
    }
}

// ---- launchers

void launch_quantize_fp8(const void* src, int src_fmt, std::int64_t n, const float* scale, std::uint8_t* dst, bool e4m3,
                         std::uint32_t* amax_bits, cudaStream_t stream, const std::uint64_t* key) {
    if (n <= 0) return;
    quantize_fp8_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(src, src_fmt, n, scale, dst, e4m3, amax_bits,
                                                                      key);
    check_launch("quantize_fp8");
}

void launch_transpose_u8(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                         cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const std::int64_t by = (rows + transpose_tile - 1) / transpose_tile;
    if (by > 65535) throw Error("transpose_u8: " + std::to_string(rows) + " rows exceed the grid's limit.");
    const dim3 grid(static_cast<unsigned>((cols + transpose_tile - 1) / transpose_tile), static_cast<unsigned>(by));
    transpose_u8_kernel<<<grid, dim3(transpose_tile, transpose_rows), 0, stream>>>(src, rows, cols, dst);
    check_launch("transpose_u8");
}

}  // namespace mantissa::cuda
