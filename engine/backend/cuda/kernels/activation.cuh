// activation: relu, gelu (exact, erf form: torch's default) and tanh, forward and backward, in
// FP32 with the result rounded to the output's format. The reference: CpuBackend's
// activation_forward / activation_backward (cpu_elementwise.cpp), same expressions in the same
// order. As torch does, relu's and tanh's derivatives come from the stored output a, gelu's from
// the input z.
// relu is bit-identical to the CPU. gelu and tanh call CUDA's erff/expf/tanhf, which may differ
// from the C library's by an ulp or two in FP32 (CUDA documents 2 ulp for each); after rounding
// to fp16/bf16/fp8 they almost always agree. The GPU suite bounds the difference.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

namespace activation_constants {
constexpr float inv_sqrt2 = 0.70710678118654752440f;
constexpr float inv_sqrt_2pi = 0.39894228040143267794f;
}  // namespace activation_constants

// ---- kernels

__global__ void activation_forward_kernel(int act, const void* z, int z_fmt, void* a, int a_fmt, std::int64_t n) {
    using namespace activation_constants;
    MANTISSA_GRID_STRIDE(i, n) {
        const float x = load_value(z, z_fmt, i);
        float y;
        if (act == 0)
            y = x > 0.0f ? x : (x != x ? x : 0.0f);
        else if (act == 1)
            y = 0.5f * x * (1.0f + erff(x * inv_sqrt2));
        else
            y = tanhf(x);
        store_value(a, a_fmt, i, y, false);
    }
}

__global__ void activation_backward_kernel(int act, const void* z, int z_fmt, const void* a, int a_fmt, const void* da,
                                           int da_fmt, void* dz, int dz_fmt, std::int64_t n) {
    using namespace activation_constants;
    MANTISSA_GRID_STRIDE(i, n) {
        const float g = load_value(da, da_fmt, i);
        float d;
        if (act == 0) {
            d = load_value(a, a_fmt, i) > 0.0f ? g : 0.0f;
        } else if (act == 1) {
            const float x = load_value(z, z_fmt, i);
            const float cdf = 0.5f * (1.0f + erff(x * inv_sqrt2));
            const float pdf = inv_sqrt_2pi * expf(-0.5f * x * x);
            d = g * (cdf + x * pdf);
        } else {
            const float y = load_value(a, a_fmt, i);
            d = g * (1.0f - y * y);
        }
        store_value(dz, dz_fmt, i, d, false);
    }
}

// ---- launchers

void launch_activation_forward(int act, const void* z, int z_fmt, void* a, int a_fmt, std::int64_t n,
                               cudaStream_t stream) {
    if (n <= 0) return;
    activation_forward_kernel<<<grid_for(n), block_size, 0, stream>>>(act, z, z_fmt, a, a_fmt, n);
    check_launch("activation_forward");
}

void launch_activation_backward(int act, const void* z, int z_fmt, const void* a, int a_fmt, const void* da, int da_fmt,
                                void* dz, int dz_fmt, std::int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    activation_backward_kernel<<<grid_for(n), block_size, 0, stream>>>(act, z, z_fmt, a, a_fmt, da, da_fmt, dz, dz_fmt,
                                                                       n);
    check_launch("activation_backward");
}

}  // namespace mantissa::cuda
