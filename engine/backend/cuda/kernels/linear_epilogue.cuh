// linear_epilogue: what follows a linear layer's FP32 matmul when cuBLASLt cannot fuse it (or a
// bit-exact statistic is wanted): the FP8 dequantisation, the bias, the rounding to the output's
// format, the weight gradient's rounding statistics; and the bias gradient.
//   bias_round:  y = round(acc x dequant + b)      (acc + b when dequant is 1)
//   scale_round: d = round(acc x dequant), counting zeros before and zeros, subnormals and
//                non-finite values after (numeric/stats.h: round_array_with_stats); or
//                rounded stochastically with a pass's key (a layer's stochastic gradients)
//   bias_grad:   db[c] = Σ_rows dy[r][c] in bias_grad_order.h's blocks of rows, so the FP32 sum is
//                the CPU's exactly: one thread adds one column of one block of 256 rows in
//                order (a warp: 32 adjacent columns, so each row's loads coalesce), into a
//                workspace; a second kernel adds each column's block sums in order. Every
//                multiprocessor has blocks to add even when the layer is narrow.
// dequant = *dq_a x *dq_b is read from the device (the FP8 scale inverses live there).
// The reference: CpuBackend::linear_forward / linear_backward (cpu_linear.cpp).
#pragma once

#include <algorithm>

#include "backend/bias_grad_order.h"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

// ---- kernels

__global__ void bias_round_kernel(const float* acc, std::int64_t rows, std::int64_t cols, const float* dq_a,
                                  const float* dq_b, const void* bias, int bias_fmt, void* y, int y_fmt) {
    const float dequant = dequant_factor(dq_a, dq_b);
    MANTISSA_GRID_STRIDE(i, rows * cols) {
        const float b = load_value(bias, bias_fmt, i % cols);
        const float v = dequant != 1.0f ? acc[i] * dequant + b : acc[i] + b;
        store_value(y, y_fmt, i, v, false);
    }
}

__global__ void scale_round_kernel(const float* acc, std::int64_t n, const float* dq_a, const float* dq_b, void* dst,
                                   int dst_fmt, unsigned long long* stats, const std::uint64_t* key) {
    const float factor = dequant_factor(dq_a, dq_b);
    const std::uint64_t k = key ? *key : 0;
    const std::uint32_t min_normal = min_normal_bits(dst_fmt);
    unsigned long long zeros_before = 0, zeros = 0, subnormals = 0, nonfinite = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float v = apply_multiplier(acc[i], factor);
        const float r =
            key ? store_stochastic(dst, dst_fmt, i, v, stochastic_bits(k, i)) : store_rounded(dst, dst_fmt, i, v);
        if (stats) {
            const std::uint32_t before = bits_of(v) & 0x7fffffffu;
            const std::uint32_t after = bits_of(r) & 0x7fffffffu;
            zeros_before += before == 0;
            zeros += after == 0;
            subnormals += (after - 1u) < (min_normal - 1u);
            nonfinite += after >= 0x7f800000u;
        }
    }
    if (!stats) return;
    zeros_before = block_sum(zeros_before);
    zeros = block_sum(zeros);
    subnormals = block_sum(subnormals);
    nonfinite = block_sum(nonfinite);
    if (threadIdx.x == 0) {
        atomicAdd(stats + 0, zeros_before);
        atomicAdd(stats + 1, zeros);
        atomicAdd(stats + 2, subnormals);
        atomicAdd(stats + 3, nonfinite);
    }
}

constexpr int bias_grad_columns = 32;  // one warp's lanes: adjacent columns, so a row's loads coalesce
constexpr int bias_grad_warps = 8;     // one block of rows per warp
constexpr int bias_grad_rows = static_cast<int>(bias_grad_block_rows);
constexpr int bias_grad_unroll = 16;  // loads in flight per thread ahead of its chain of adds

// Adds rows [r0, r1) of column c in row order from +0, the loads issued a batch ahead.
template <int Fmt>
__device__ __forceinline__ float sum_rows(const void* dy, std::int64_t r0, std::int64_t r1, std::int64_t cols,
                                          std::int64_t c) {
    float sum = 0.0f;
    std::int64_t r = r0;
    for (; r + bias_grad_unroll <= r1; r += bias_grad_unroll) {
        float v[bias_grad_unroll];
#pragma unroll
        for (int j = 0; j < bias_grad_unroll; ++j) v[j] = load_value(dy, Fmt, (r + j) * cols + c);
#pragma unroll
        for (int j = 0; j < bias_grad_unroll; ++j) sum += v[j];
    }
    for (; r < r1; ++r) sum += load_value(dy, Fmt, r * cols + c);
    return sum;
}

// S_k[c]: each thread one column of one block of rows. With a single block of rows S_0 is the
// sum and goes straight to db (0 + S_0 is S_0: a sum that starts at +0 is never -0).
template <int Fmt>
__global__ void __launch_bounds__(bias_grad_columns* bias_grad_warps)
    bias_grad_blocks_kernel(const void* dy, std::int64_t rows, std::int64_t cols, float* partial, void* db,
                            int db_fmt) {
    const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * bias_grad_columns + threadIdx.x;
    if (c >= cols) return;
    const std::int64_t blocks = (rows + bias_grad_rows - 1) / bias_grad_rows;
    for (std::int64_t k = static_cast<std::int64_t>(blockIdx.y) * bias_grad_warps + threadIdx.y; k < blocks;
         k += static_cast<std::int64_t>(gridDim.y) * bias_grad_warps) {
        const std::int64_t r0 = k * bias_grad_rows;
        const std::int64_t r1 = r0 + bias_grad_rows < rows ? r0 + bias_grad_rows : rows;
        const float sum = sum_rows<Fmt>(dy, r0, r1, cols, c);
        if (partial)
            partial[k * cols + c] = sum;
        else
            store_value(db, db_fmt, c, sum, false);
    }
}

// db[c] = the block sums of column c added in block order from +0, rounded to db's format.
__global__ void bias_grad_combine_kernel(const float* partial, std::int64_t blocks, std::int64_t cols, void* db,
                                         int db_fmt) {
    MANTISSA_GRID_STRIDE(c, cols) {
        store_value(db, db_fmt, c, sum_rows<fmt_fp32>(partial, 0, blocks, cols, c), false);
    }
}

// ---- launchers

void launch_bias_round(const float* acc, std::int64_t rows, std::int64_t cols, const float* dq_a, const float* dq_b,
                       const void* bias, int bias_fmt, void* y, int y_fmt, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    bias_round_kernel<<<grid_for(rows * cols), block_size, 0, stream>>>(acc, rows, cols, dq_a, dq_b, bias, bias_fmt, y,
                                                                        y_fmt);
    check_launch("bias_round");
}

void launch_scale_round(const float* acc, std::int64_t n, const float* dq_a, const float* dq_b, void* dst, int dst_fmt,
                        unsigned long long* stats, cudaStream_t stream, const std::uint64_t* key) {
    if (n <= 0) return;
    scale_round_kernel<<<grid_for(n, stats ? 4096 : (std::int64_t{1} << 20)), block_size, 0, stream>>>(
        acc, n, dq_a, dq_b, dst, dst_fmt, stats, key);
    check_launch("scale_round");
}

template <int Fmt>
void launch_bias_grad_blocks(dim3 grid, const void* dy, std::int64_t rows, std::int64_t cols, float* partial, void* db,
                             int db_fmt, cudaStream_t stream) {
    const dim3 threads(bias_grad_columns, bias_grad_warps);
    bias_grad_blocks_kernel<Fmt><<<grid, threads, 0, stream>>>(dy, rows, cols, partial, db, db_fmt);
}

void launch_bias_grad(const void* dy, int dy_fmt, std::int64_t rows, std::int64_t cols, float* partial, void* db,
                      int db_fmt, cudaStream_t stream) {
    if (cols <= 0) return;
    const std::int64_t blocks = bias_grad_blocks(rows < 0 ? 0 : rows);
    if (blocks > 1 && !partial)
        throw Error("CUDA bias gradient: " + std::to_string(rows) + " rows need a workspace for their block sums.");
    if (blocks > 0) {
        float* to = blocks > 1 ? partial : nullptr;
        const auto row_groups = static_cast<unsigned>(
            std::min<std::int64_t>((blocks + bias_grad_warps - 1) / bias_grad_warps, 65535));
        const dim3 grid(static_cast<unsigned>((cols + bias_grad_columns - 1) / bias_grad_columns), row_groups);
        switch (dy_fmt) {  // the storage type as a constant: no per-element switch in the loads
            case fmt_fp16: launch_bias_grad_blocks<fmt_fp16>(grid, dy, rows, cols, to, db, db_fmt, stream); break;
            case fmt_bf16: launch_bias_grad_blocks<fmt_bf16>(grid, dy, rows, cols, to, db, db_fmt, stream); break;
            case fmt_e4m3: launch_bias_grad_blocks<fmt_e4m3>(grid, dy, rows, cols, to, db, db_fmt, stream); break;
            case fmt_e5m2: launch_bias_grad_blocks<fmt_e5m2>(grid, dy, rows, cols, to, db, db_fmt, stream); break;
            default: launch_bias_grad_blocks<fmt_fp32>(grid, dy, rows, cols, to, db, db_fmt, stream); break;
        }
        check_launch("bias_grad_blocks");
    }
    if (blocks != 1) {  // no rows: the empty sum, +0
        bias_grad_combine_kernel<<<grid_for(cols), block_size, 0, stream>>>(partial, blocks, cols, db, db_fmt);
        check_launch("bias_grad_combine");
    }
}

}  // namespace mantissa::cuda
