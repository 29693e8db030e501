// batchnorm: PyTorch's BatchNorm2d (BatchNorm1d: spatial = 1), forward and backward, one block per
// channel. The per-channel sums are taken in double, as the CPU takes them, and rounded to FP32
// once; the per-element arithmetic is the CPU's FP32 expressions (docs/numerics.md, "Convolutional
// ops"). The one difference: the CPU adds a channel's values in order, the block adds per thread
// and then across the block (block_sum), so a double sum may differ in its last bits and, rarely,
// a statistic rounded from it by one FP32 ulp; the GPU suite bounds what that does to y and dx.
//   training   μ = fp32(Σx / M), σ²_b = Σ(x - μ_d)² / M, invstd = fp32(1 / √(σ²_b + ε)),
//              running stats updated in double with the unbiased variance, saved_mean/saved_invstd
//   evaluation μ = running_mean, invstd = fp32(1 / √(running_var + ε))
//   y = round(((x - μ)·invstd)·γ + β)
//   backward   dβ = fp32(Σdy), dγ = fp32(Σdy·x̂), dx = round((γ·invstd)·(dy - fp32(dβ_d/M) - x̂·fp32(dγ_d/M)))
// The reference: CpuBackend::batchnorm2d_forward_impl / batchnorm2d_backward_impl (cpu/cpu_batchnorm.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

constexpr int batchnorm_threads = 256;

// The element j of channel c's M = batch·spatial values.
__device__ __forceinline__ std::int64_t bn_index(const BatchNormLaunch& b, std::int64_t c, std::int64_t j) {
    return ((j / b.spatial) * b.channels + c) * b.spatial + j % b.spatial;
}

__global__ void __launch_bounds__(batchnorm_threads)
    batchnorm_forward_kernel(BatchNormLaunch b, const void* x, int x_fmt, void* y, int y_fmt, int training) {
    __shared__ float stats[2];  // mean, invstd
    const std::int64_t c = blockIdx.x, count = b.batch * b.spatial;
    if (training) {
        double sum = 0;
        for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x)
            sum += static_cast<double>(load_value(x, x_fmt, bn_index(b, c, j)));
        sum = block_sum(sum);
        __shared__ double mean_shared;
        if (threadIdx.x == 0) mean_shared = sum / static_cast<double>(count);
        __syncthreads();
        const double mean_d = mean_shared;
        double squares = 0;
        for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
            const double d = static_cast<double>(load_value(x, x_fmt, bn_index(b, c, j))) - mean_d;
            squares += d * d;
        }
        squares = block_sum(squares);
        if (threadIdx.x == 0) {
            const double var_biased = squares / static_cast<double>(count);
            const double var_unbiased = squares / static_cast<double>(count - 1);
            const float mean = static_cast<float>(mean_d);
            const float invstd = static_cast<float>(1.0 / sqrt(var_biased + b.eps));
            stats[0] = mean;
            stats[1] = invstd;
            store_value(b.saved_mean, b.saved_mean_fmt, c, mean, false);
            store_value(b.saved_invstd, b.saved_invstd_fmt, c, invstd, false);
            const double rm = static_cast<double>(load_value(b.running_mean, b.running_mean_fmt, c));
            const double rv = static_cast<double>(load_value(b.running_var, b.running_var_fmt, c));
            store_value(b.running_mean, b.running_mean_fmt, c,
                        static_cast<float>((1.0 - b.momentum) * rm + b.momentum * mean_d), false);
            store_value(b.running_var, b.running_var_fmt, c,
                        static_cast<float>((1.0 - b.momentum) * rv + b.momentum * var_unbiased), false);
        }
    } else if (threadIdx.x == 0) {
        stats[0] = load_value(b.running_mean, b.running_mean_fmt, c);
        const double rv = static_cast<double>(load_value(b.running_var, b.running_var_fmt, c));
        stats[1] = static_cast<float>(1.0 / sqrt(rv + b.eps));
    }
    __syncthreads();
    const float mean = stats[0], invstd = stats[1];
    const float g = load_value(b.weight, b.weight_fmt, c), beta = load_value(b.bias, b.bias_fmt, c);
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const std::int64_t i = bn_index(b, c, j);
        store_value(y, y_fmt, i, ((load_value(x, x_fmt, i) - mean) * invstd) * g + beta, false);
    }
}

__global__ void __launch_bounds__(batchnorm_threads)
    batchnorm_backward_kernel(BatchNormLaunch b, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                              int dx_fmt) {
    __shared__ float means[2];  // Σdy / M, Σdy·x̂ / M
    const std::int64_t c = blockIdx.x, count = b.batch * b.spatial;
    const float mean = load_value(b.saved_mean, b.saved_mean_fmt, c);
    const float invstd = load_value(b.saved_invstd, b.saved_invstd_fmt, c);
    double s_dy = 0, s_dy_xhat = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const std::int64_t i = bn_index(b, c, j);
        const float xhat = (load_value(x, x_fmt, i) - mean) * invstd;
        const double g = static_cast<double>(load_value(dy, dy_fmt, i));
        s_dy += g;
        s_dy_xhat += g * static_cast<double>(xhat);
    }
    s_dy = block_sum(s_dy);
    s_dy_xhat = block_sum(s_dy_xhat);
    if (threadIdx.x == 0) {
        means[0] = static_cast<float>(s_dy / static_cast<double>(count));
        means[1] = static_cast<float>(s_dy_xhat / static_cast<double>(count));
        store_value(b.grad_bias, b.grad_bias_fmt, c, static_cast<float>(s_dy), false);
        store_value(b.grad_weight, b.grad_weight_fmt, c, static_cast<float>(s_dy_xhat), false);
    }
    __syncthreads();
    const float mean_dy = means[0], mean_dy_xhat = means[1];
    const float k = load_value(b.weight, b.weight_fmt, c) * invstd;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const std::int64_t i = bn_index(b, c, j);
        const float xhat = (load_value(x, x_fmt, i) - mean) * invstd;
        store_value(dx, dx_fmt, i, k * (load_value(dy, dy_fmt, i) - mean_dy - xhat * mean_dy_xhat), false);
    }
}

// y = a + b in FP32, rounded to y's format; y may be a or b (each element read before it is written).
__global__ void add_kernel(const void* a, int a_fmt, const void* b, int b_fmt, void* y, int y_fmt, std::int64_t n) {
    MANTISSA_GRID_STRIDE(i, n) { store_value(y, y_fmt, i, load_value(a, a_fmt, i) + load_value(b, b_fmt, i), false); }
}

// ---- launchers

void launch_batchnorm_forward(const BatchNormLaunch& b, const void* x, int x_fmt, void* y, int y_fmt, bool training,
                              cudaStream_t stream) {
    if (b.channels <= 0) return;
    if (b.batch <= 0 && !training) return;
    batchnorm_forward_kernel<<<static_cast<unsigned>(b.channels), batchnorm_threads, 0, stream>>>(b, x, x_fmt, y, y_fmt,
                                                                                                 training ? 1 : 0);
    check_launch("batchnorm_forward");
}

void launch_batchnorm_backward(const BatchNormLaunch& b, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                               int dx_fmt, cudaStream_t stream) {
    if (b.channels <= 0) return;
    batchnorm_backward_kernel<<<static_cast<unsigned>(b.channels), batchnorm_threads, 0, stream>>>(b, x, x_fmt, dy,
                                                                                                  dy_fmt, dx, dx_fmt);
    check_launch("batchnorm_backward");
}

void launch_add(const void* a, int a_fmt, const void* b, int b_fmt, void* y, int y_fmt, std::int64_t n,
                cudaStream_t stream) {
    if (n <= 0) return;
    add_kernel<<<grid_for(n), block_size, 0, stream>>>(a, a_fmt, b, b_fmt, y, y_fmt, n);
    check_launch("add");
}

}  // namespace mantissa::cuda
