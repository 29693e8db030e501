// activation: relu, gelu (exact, erf form: torch's default) and tanh, forward and backward, in
// FP32 with the result rounded to the output's format. The reference: CpuBackend's
// activation_forward / activation_backward (cpu_elementwise.cpp), same expressions in the same
// order. As torch does, relu's and tanh's derivatives come from the stored output a, gelu's from
// the input z.
// relu is bit-identical to the CPU. When its input and output share a format (the usual case: an
// autocast activation), rounding the result changes nothing, so relu works on the stored bits,
// 16 bytes per load, with no decoding: forward keeps x when x > 0 or x is NaN, else writes +0;
// backward keeps the gradient's bits where a > 0 or a is NaN, else +0 (torch's threshold_backward:
// zero where a <= 0). The same values as the FP32 path.
// gelu and tanh call CUDA's erff/expf/tanhf, which may differ
// from the C library's by an ulp or two in FP32 (CUDA documents 2 ulp for each); after rounding
// to fp16/bf16/fp8 they almost always agree. The GPU suite bounds the difference.
#pragma once

#include <algorithm>
#include <cstdint>

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
            d = load_value(a, a_fmt, i) <= 0.0f ? 0.0f : g;  // passes where a > 0 or a is NaN
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

// ---- relu on stored bits (input and output in one format)

// A format's sign bit and the magnitudes that are NaN (e4m3: only S.1111.111).
template <int Fmt>
struct StoredBits;
template <>
struct StoredBits<fmt_fp32> {
    using T = std::uint32_t;
    static constexpr T sign = 0x80000000u;
    __device__ static bool nan(T mag) { return mag > 0x7f800000u; }
};
template <>
struct StoredBits<fmt_fp16> {
    using T = std::uint16_t;
    static constexpr T sign = 0x8000u;
    __device__ static bool nan(T mag) { return mag > 0x7c00u; }
};
template <>
struct StoredBits<fmt_bf16> {
    using T = std::uint16_t;
    static constexpr T sign = 0x8000u;
    __device__ static bool nan(T mag) { return mag > 0x7f80u; }
};
template <>
struct StoredBits<fmt_e4m3> {
    using T = std::uint8_t;
    static constexpr T sign = 0x80u;
    __device__ static bool nan(T mag) { return mag == 0x7fu; }
};
template <>
struct StoredBits<fmt_e5m2> {
    using T = std::uint8_t;
    static constexpr T sign = 0x80u;
    __device__ static bool nan(T mag) { return mag > 0x7cu; }
};

// Whether the stored value x is > 0 or NaN (either sign): not x <= 0.
template <int Fmt>
__device__ __forceinline__ bool positive_or_nan_bits(typename StoredBits<Fmt>::T x) {
    using B = StoredBits<Fmt>;
    const auto mag = static_cast<typename B::T>(x & ~B::sign);
    return B::nan(mag) || (!(x & B::sign) && mag != 0);
}

template <int Fmt>
__device__ __forceinline__ typename StoredBits<Fmt>::T relu_bits(typename StoredBits<Fmt>::T x) {
    return positive_or_nan_bits<Fmt>(x) ? x : typename StoredBits<Fmt>::T(0);  // x > 0 or NaN: x
}

template <int Fmt>
__device__ __forceinline__ typename StoredBits<Fmt>::T relu_grad_bits(typename StoredBits<Fmt>::T a,
                                                                      typename StoredBits<Fmt>::T g) {
    return positive_or_nan_bits<Fmt>(a) ? g : typename StoredBits<Fmt>::T(0);  // a > 0 or NaN: g
}

// 16-byte vectors of stored values, then the last few one by one. Backward when `a` is set.
template <int Fmt>
__global__ void relu_bits_kernel(const void* z_or_da, const void* a, void* out, std::int64_t n) {
    using T = typename StoredBits<Fmt>::T;
    constexpr int per = 16 / sizeof(T);
    const std::int64_t vectors = n / per;
    MANTISSA_GRID_STRIDE(v, vectors) {
        uint4 x = static_cast<const uint4*>(z_or_da)[v];
        T* e = reinterpret_cast<T*>(&x);
        if (a) {
            uint4 av = static_cast<const uint4*>(a)[v];
            const T* ae = reinterpret_cast<const T*>(&av);
#pragma unroll
            for (int k = 0; k < per; ++k) e[k] = relu_grad_bits<Fmt>(ae[k], e[k]);
        } else {
#pragma unroll
            for (int k = 0; k < per; ++k) e[k] = relu_bits<Fmt>(e[k]);
        }
        static_cast<uint4*>(out)[v] = x;
    }
    const std::int64_t i = vectors * per + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const T x = static_cast<const T*>(z_or_da)[i];
        static_cast<T*>(out)[i] = a ? relu_grad_bits<Fmt>(static_cast<const T*>(a)[i], x) : relu_bits<Fmt>(x);
    }
}

// Whether relu_bits_kernel can take these pointers (16-byte aligned), and its launch.
inline bool launch_relu_bits(int fmt, const void* z_or_da, const void* a, void* out, std::int64_t n, cudaStream_t stream) {
    const auto aligned = [](const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; };
    if (!aligned(z_or_da) || !aligned(out) || (a && !aligned(a))) return false;
    const int bytes = fmt == fmt_fp16 || fmt == fmt_bf16 ? 2 : (fmt == fmt_e4m3 || fmt == fmt_e5m2 ? 1 : 4);
    const unsigned grid = grid_for(std::max<std::int64_t>(n * bytes / 16, 1));
    switch (fmt) {
        case fmt_fp16: relu_bits_kernel<fmt_fp16><<<grid, block_size, 0, stream>>>(z_or_da, a, out, n); break;
        case fmt_bf16: relu_bits_kernel<fmt_bf16><<<grid, block_size, 0, stream>>>(z_or_da, a, out, n); break;
        case fmt_e4m3: relu_bits_kernel<fmt_e4m3><<<grid, block_size, 0, stream>>>(z_or_da, a, out, n); break;
        case fmt_e5m2: relu_bits_kernel<fmt_e5m2><<<grid, block_size, 0, stream>>>(z_or_da, a, out, n); break;
        default: relu_bits_kernel<fmt_fp32><<<grid, block_size, 0, stream>>>(z_or_da, a, out, n); break;  // fp32, tf32
    }
    return true;
}

// ---- launchers

void launch_activation_forward(int act, const void* z, int z_fmt, void* a, int a_fmt, std::int64_t n,
                               cudaStream_t stream) {
    if (n <= 0) return;
    if (act == 0 && z_fmt == a_fmt && launch_relu_bits(z_fmt, z, nullptr, a, n, stream)) {
        check_launch("relu_bits (forward)");
        return;
    }
    activation_forward_kernel<<<grid_for(n), block_size, 0, stream>>>(act, z, z_fmt, a, a_fmt, n);
    check_launch("activation_forward");
}

void launch_activation_backward(int act, const void* z, int z_fmt, const void* a, int a_fmt, const void* da, int da_fmt,
                                void* dz, int dz_fmt, std::int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    if (act == 0 && a_fmt == da_fmt && da_fmt == dz_fmt && launch_relu_bits(da_fmt, da, a, dz, n, stream)) {
        check_launch("relu_bits (backward)");
        return;
    }
    activation_backward_kernel<<<grid_for(n), block_size, 0, stream>>>(act, z, z_fmt, a, a_fmt, da, da_fmt, dz, dz_fmt,
                                                                       n);
    check_launch("activation_backward");
}

}  // namespace mantissa::cuda
