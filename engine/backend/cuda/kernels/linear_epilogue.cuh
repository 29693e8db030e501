// linear_epilogue: what follows a linear layer's FP32 matmul when cuBLASLt cannot fuse it (or a
// bit-exact statistic is wanted): the FP8 dequantisation, the bias, the rounding to the output's
// format, the weight gradient's rounding statistics; and the bias gradient.
//   bias_round:  y = round(acc x dequant + b)      (acc + b when dequant is 1)
//   scale_round: d = round(acc x dequant), counting zeros before and zeros, subnormals and
//                non-finite values after (numeric/stats.h: round_array_with_stats)
//   bias_grad:   db[c] = Σ_rows dy[r][c], each column's rows added in order by one thread, so the
//                FP32 sum is the CPU's exactly. The chain of adds is short (a few cycles each);
//                what costs is the loads' latency, so a block of 8 warps keeps the loads of the
//                next tile of 256 rows x 32 columns in flight (32 per thread, in registers)
//                while its first warp adds the current tile, in shared memory, down its columns.
// dequant = *dq_a x *dq_b is read from the device (the FP8 scale inverses live there).
// The reference: CpuBackend::linear_forward / linear_backward (cpu_linear.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__device__ __forceinline__ float dequant_factor(const float* dq_a, const float* dq_b) {
    const float a = dq_a ? *dq_a : 1.0f;
    const float b = dq_b ? *dq_b : 1.0f;
    return a * b;
}

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
                                   int dst_fmt, unsigned long long* stats) {
    const float factor = dequant_factor(dq_a, dq_b);
    const std::uint32_t min_normal = min_normal_bits(dst_fmt);
    unsigned long long zeros_before = 0, zeros = 0, subnormals = 0, nonfinite = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float v = apply_multiplier(acc[i], factor);
        const float r = store_rounded(dst, dst_fmt, i, v);
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

constexpr int bias_grad_columns = 32;     // one warp's lanes: a tile's width
constexpr int bias_grad_warps = 8;        // all load; the first also adds
constexpr int bias_grad_rows_per_warp = 32;
constexpr int bias_grad_tile_rows = bias_grad_warps * bias_grad_rows_per_warp;  // 32 KiB of FP32

template <int Fmt>
__global__ void __launch_bounds__(bias_grad_columns* bias_grad_warps)
    bias_grad_kernel(const void* dy, std::int64_t rows, std::int64_t cols, void* db, int db_fmt) {
    // One tile in shared memory, the next one in registers: while the first warp adds tile t
    // down its columns, every warp's loads of tile t + 1 are in flight.
    __shared__ float tile[bias_grad_tile_rows][bias_grad_columns];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * bias_grad_columns + lane;
    const bool column = c < cols;
    const std::int64_t tiles = (rows + bias_grad_tile_rows - 1) / bias_grad_tile_rows;
    float next[bias_grad_rows_per_warp];
    auto fetch = [&](std::int64_t t) {
        const std::int64_t r0 = t * bias_grad_tile_rows + warp * bias_grad_rows_per_warp;
#pragma unroll
        for (int j = 0; j < bias_grad_rows_per_warp; ++j) {
            const std::int64_t r = r0 + j;
            next[j] = (column && r < rows) ? load_value(dy, Fmt, r * cols + c) : 0.0f;
        }
    };
    float sum = 0.0f;
    if (tiles > 0) fetch(0);
    for (std::int64_t t = 0; t < tiles; ++t) {
#pragma unroll
        for (int j = 0; j < bias_grad_rows_per_warp; ++j) tile[warp * bias_grad_rows_per_warp + j][lane] = next[j];
        __syncthreads();
        if (t + 1 < tiles) fetch(t + 1);
        if (warp == 0) {
            const std::int64_t left = rows - t * bias_grad_tile_rows;
            const int n = left < bias_grad_tile_rows ? static_cast<int>(left) : bias_grad_tile_rows;
            for (int k = 0; k < n; ++k) sum += tile[k][lane];  // in row order: the CPU's sum
        }
        __syncthreads();  // the tile is added before it is overwritten
    }
    if (warp == 0 && column) store_value(db, db_fmt, c, sum, false);
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
                        unsigned long long* stats, cudaStream_t stream) {
    if (n <= 0) return;
    scale_round_kernel<<<grid_for(n, stats ? 4096 : (std::int64_t{1} << 20)), block_size, 0, stream>>>(
        acc, n, dq_a, dq_b, dst, dst_fmt, stats);
    check_launch("scale_round");
}

void launch_bias_grad(const void* dy, int dy_fmt, std::int64_t rows, std::int64_t cols, void* db, int db_fmt,
                      cudaStream_t stream) {
    if (cols <= 0) return;
    const auto blocks = static_cast<unsigned>((cols + bias_grad_columns - 1) / bias_grad_columns);
    const dim3 threads(bias_grad_columns, bias_grad_warps);
    switch (dy_fmt) {  // the storage type as a constant: no per-element switch in the loads
        case fmt_fp16: bias_grad_kernel<fmt_fp16><<<blocks, threads, 0, stream>>>(dy, rows, cols, db, db_fmt); break;
        case fmt_bf16: bias_grad_kernel<fmt_bf16><<<blocks, threads, 0, stream>>>(dy, rows, cols, db, db_fmt); break;
        case fmt_e4m3: bias_grad_kernel<fmt_e4m3><<<blocks, threads, 0, stream>>>(dy, rows, cols, db, db_fmt); break;
        case fmt_e5m2: bias_grad_kernel<fmt_e5m2><<<blocks, threads, 0, stream>>>(dy, rows, cols, db, db_fmt); break;
        default: bias_grad_kernel<fmt_fp32><<<blocks, threads, 0, stream>>>(dy, rows, cols, db, db_fmt); break;
    }
    check_launch("bias_grad");
}

}  // namespace mantissa::cuda
