// layernorm: PyTorch's LayerNorm(dim) with its elementwise affine, forward and backward, with the
// CPU's FP32 statistics (docs/numerics.md, "Transformer ops"): each row sum in double, rounded to
// FP32 once, the per-element arithmetic the CPU's FP32 expressions.
//   forward   one warp per row: μ = fp32(Σx / N), σ² = Σ(x − μ_d)² / N (biased),
//             invstd = fp32(1 / √(σ² + ε)), y = rnd_y(((x − μ)·invstd)·γ + β); saved μ, invstd;
//             the smallest FP32 variance (NaN rows aside) by an atomic minimum on its bits
//   backward  dγ = fp32(Σ_rows dy·x̂), dβ = fp32(Σ_rows dy) per column, deterministic in two
//             passes (no float atomics): layernorm_column_partial sums chunks of 64 rows
//             (layernorm_chunk_rows) in row order, in double, one thread per column;
//             layernorm_column_sums adds the chunks in order and rounds once. Then one warp per
//             row: dx = rnd_dx(invstd·(g − fp32(Σg / N) − x̂·fp32(Σg·x̂ / N))), g = dy·γ.
// The differences from the CPU: a row's double sums are added per lane and across the warp, and
// the columns' in chunks, so a sum can differ in its last double bits and, rarely, a statistic
// or a parameter gradient rounded from it by one FP32 ulp. dx may be dy or x: the column sums
// run first, and every lane reads the columns it writes.
// The reference: CpuBackend::layernorm_forward_impl / layernorm_backward_impl (cpu/cpu_layernorm.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

constexpr int layernorm_warps = block_size / 32;  // rows per block
// Rows per partial column sum: 64, more when the chunks would exceed a grid's 65535 in y.
inline std::int64_t layernorm_chunk_rows(std::int64_t rows) {
    const std::int64_t at_least = (rows + 32767) / 32768;
    return at_least > 64 ? at_least : 64;
}

__device__ __forceinline__ double warp_sum_all(double v) {
    return __shfl_sync(0xffffffffu, warp_sum(v), 0);  // warp_sum leaves the total in lane 0
}

__global__ void layernorm_forward_kernel(LayerNormLaunch l, const void* x, int x_fmt, void* y, int y_fmt,
                                         unsigned int* min_variance_bits) {
    const int lane = threadIdx.x & 31;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * layernorm_warps + (threadIdx.x >> 5);
    if (row >= l.rows) return;  // uniform per warp
    const std::int64_t n = l.dim, base = row * n;
    double sum = 0;
    for (std::int64_t j = lane; j < n; j += 32) sum += static_cast<double>(load_value(x, x_fmt, base + j));
    const double mean_d = warp_sum_all(sum) / static_cast<double>(n);
    double squares = 0;
    for (std::int64_t j = lane; j < n; j += 32) {
        const double d = static_cast<double>(load_value(x, x_fmt, base + j)) - mean_d;
        squares += d * d;
    }
    const double var = warp_sum_all(squares) / static_cast<double>(n);
    const float mean = static_cast<float>(mean_d);
    const float invstd = static_cast<float>(1.0 / sqrt(var + l.eps));
    if (lane == 0) {
        store_value(l.saved_mean, l.saved_mean_fmt, row, mean, false);
        store_value(l.saved_invstd, l.saved_invstd_fmt, row, invstd, false);
        const float variance = static_cast<float>(var);
        if (min_variance_bits && variance >= 0.0f) atomicMin(min_variance_bits, bits_of(variance));
    }
    for (std::int64_t j = lane; j < n; j += 32) {
        const float g = load_value(l.weight, l.weight_fmt, j), b = load_value(l.bias, l.bias_fmt, j);
        store_value(y, y_fmt, base + j, ((load_value(x, x_fmt, base + j) - mean) * invstd) * g + b, false);
    }
}

// partial[(2·chunk) · dim + j] = Σ dy, partial[(2·chunk + 1) · dim + j] = Σ dy·x̂ over the chunk's rows.
__global__ void layernorm_column_partial_kernel(LayerNormLaunch l, const void* x, int x_fmt, const void* dy,
                                                int dy_fmt, std::int64_t chunk_rows, double* partial) {
    const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j >= l.dim) return;
    const std::int64_t chunk = blockIdx.y, first = chunk * chunk_rows;
    const std::int64_t last = min(l.rows, first + chunk_rows);
    double s_dy = 0, s_dy_xhat = 0;
    for (std::int64_t r = first; r < last; ++r) {
        const float mean = load_value(l.saved_mean, l.saved_mean_fmt, r);
        const float invstd = load_value(l.saved_invstd, l.saved_invstd_fmt, r);
        const float xhat = (load_value(x, x_fmt, r * l.dim + j) - mean) * invstd;
        const double g = static_cast<double>(load_value(dy, dy_fmt, r * l.dim + j));
        s_dy += g;
        s_dy_xhat += g * static_cast<double>(xhat);
    }
    partial[(2 * chunk) * l.dim + j] = s_dy;
    partial[(2 * chunk + 1) * l.dim + j] = s_dy_xhat;
}

__global__ void layernorm_column_sums_kernel(LayerNormLaunch l, const double* partial, std::int64_t chunks) {
    const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j >= l.dim) return;
    double s_dy = 0, s_dy_xhat = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
        s_dy += partial[(2 * c) * l.dim + j];
        s_dy_xhat += partial[(2 * c + 1) * l.dim + j];
    }
    store_value(l.grad_bias, l.grad_bias_fmt, j, static_cast<float>(s_dy), false);
    store_value(l.grad_weight, l.grad_weight_fmt, j, static_cast<float>(s_dy_xhat), false);
}

__global__ void layernorm_backward_kernel(LayerNormLaunch l, const void* x, int x_fmt, const void* dy, int dy_fmt,
                                          void* dx, int dx_fmt) {
    const int lane = threadIdx.x & 31;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * layernorm_warps + (threadIdx.x >> 5);
    if (row >= l.rows) return;
    const std::int64_t n = l.dim, base = row * n;
    const float mean = load_value(l.saved_mean, l.saved_mean_fmt, row);
    const float invstd = load_value(l.saved_invstd, l.saved_invstd_fmt, row);
    double sum_g = 0, sum_g_xhat = 0;
    for (std::int64_t j = lane; j < n; j += 32) {
        const float xhat = (load_value(x, x_fmt, base + j) - mean) * invstd;
        const float g = load_value(dy, dy_fmt, base + j) * load_value(l.weight, l.weight_fmt, j);
        sum_g += static_cast<double>(g);
        sum_g_xhat += static_cast<double>(g) * static_cast<double>(xhat);
    }
    const float mean_g = static_cast<float>(warp_sum_all(sum_g) / static_cast<double>(n));
    const float mean_g_xhat = static_cast<float>(warp_sum_all(sum_g_xhat) / static_cast<double>(n));
    for (std::int64_t j = lane; j < n; j += 32) {
        const float xhat = (load_value(x, x_fmt, base + j) - mean) * invstd;
        const float g = load_value(dy, dy_fmt, base + j) * load_value(l.weight, l.weight_fmt, j);
        store_value(dx, dx_fmt, base + j, invstd * (g - mean_g - xhat * mean_g_xhat), false);
    }
}

// ---- launchers

std::int64_t layernorm_partial_doubles(std::int64_t rows, std::int64_t dim) {
    const std::int64_t chunk_rows = layernorm_chunk_rows(rows);
    return 2 * ((rows + chunk_rows - 1) / chunk_rows) * dim;
}

void launch_layernorm_forward(const LayerNormLaunch& l, const void* x, int x_fmt, void* y, int y_fmt,
                              unsigned int* min_variance_bits, cudaStream_t stream) {
    if (l.rows <= 0 || l.dim <= 0) return;
    const auto blocks = static_cast<unsigned>((l.rows + layernorm_warps - 1) / layernorm_warps);
    layernorm_forward_kernel<<<blocks, block_size, 0, stream>>>(l, x, x_fmt, y, y_fmt, min_variance_bits);
    check_launch("layernorm_forward");
}

void launch_layernorm_backward(const LayerNormLaunch& l, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                               int dx_fmt, double* partial, cudaStream_t stream) {
    if (l.dim <= 0) return;
    const auto column_blocks = static_cast<unsigned>((l.dim + block_size - 1) / block_size);
    const std::int64_t chunk_rows = layernorm_chunk_rows(l.rows);
    const std::int64_t chunks = (l.rows + chunk_rows - 1) / chunk_rows;
    if (chunks > 0) {
        const dim3 grid(column_blocks, static_cast<unsigned>(chunks));
        layernorm_column_partial_kernel<<<grid, block_size, 0, stream>>>(l, x, x_fmt, dy, dy_fmt, chunk_rows,
                                                                         partial);
        check_launch("layernorm_column_partial");
    }
    layernorm_column_sums_kernel<<<column_blocks, block_size, 0, stream>>>(l, partial, chunks);  // 0 rows: zeros
    check_launch("layernorm_column_sums");
    if (l.rows <= 0) return;
    const auto blocks = static_cast<unsigned>((l.rows + layernorm_warps - 1) / layernorm_warps);
    layernorm_backward_kernel<<<blocks, block_size, 0, stream>>>(l, x, x_fmt, dy, dy_fmt, dx, dx_fmt);
    check_launch("layernorm_backward");
}

}  // namespace mantissa::cuda
