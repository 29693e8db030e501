// mse: mean squared error for regression heads. dy = (y - t) x (2 x loss_scale / n) rounded to
// dy's format (bit-identical to the CPU: the same FP32 operations per element), and the sum of
// the FP32 squares accumulated in double (block sums, then one atomicAdd per block: the order
// differs from the CPU's sequential sum, the loss after rounding to FP32 almost never does).
// The reference: CpuBackend::mse (cpu_elementwise.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void mse_kernel(const void* y, int fmt, const float* targets, std::int64_t n, float grad_factor, void* dy,
                           int dy_fmt, double* sum, const float* loss_scale_dev) {
    if (loss_scale_dev) grad_factor = 2.0f * *loss_scale_dev / static_cast<float>(n);  // as the host forms it
    double local = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float diff = load_value(y, fmt, i) - targets[i];
        local += static_cast<double>(diff * diff);
        if (dy) store_value(dy, dy_fmt, i, diff * grad_factor, false);
    }
    local = block_sum(local);
    if (threadIdx.x == 0) atomicAdd(sum, local);
}

// ---- launchers

void launch_mse(const void* y, int fmt, const float* targets, std::int64_t n, float grad_factor, void* dy, int dy_fmt,
                double* sum, cudaStream_t stream, const float* loss_scale_dev) {
    if (n <= 0) return;
    mse_kernel<<<grid_for(n, 4096), block_size, 0, stream>>>(y, fmt, targets, n, grad_factor, dy, dy_fmt, sum,
                                                             loss_scale_dev);
    check_launch("mse");
}

}  // namespace mantissa::cuda
