// What every kernel file shares: launch sizes, grid-stride loops, warp and block reductions, and
// the launch check that turns a failed launch into a mantissa::Error. Included only by the .cu
// files (kernels_*.cu).
//
// Conventions of the kernel files (llm.c style): one operation per file, opening with what it is
// and why; a "---- kernels" section, then a "---- launchers" section whose functions are
// declared in launchers.h. Element counts and indices are int64; tensors are row-major.
// Kernels are compiled with --fmad=false: every a*b+c is two roundings, as in the CPU reference,
// so elementwise results are bit-identical to it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernels/convert.cuh"
#include "error.h"

namespace mantissa::cuda {

constexpr int block_size = 256;

// Blocks for n elements at one element per thread, at most `cap` (grid-stride loops do the rest).
inline unsigned grid_for(std::int64_t n, std::int64_t cap = std::int64_t{1} << 20) {
    std::int64_t blocks = (n + block_size - 1) / block_size;
    if (blocks < 1) blocks = 1;
    if (blocks > cap) blocks = cap;
    return static_cast<unsigned>(blocks);
}

inline void check_launch(const char* kernel) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        throw Error(std::string("CUDA kernel ") + kernel + " could not be launched: " + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ").");
}

#define MANTISSA_GRID_STRIDE(i, n)                                                                   \
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// The FP8 dequantisation factor *dq_a × *dq_b of a matmul's FP32 result (a null pointer: 1), read
// from the device where the scale inverses live.
__device__ __forceinline__ float dequant_factor(const float* dq_a, const float* dq_b) {
    const float a = dq_a ? *dq_a : 1.0f;
    const float b = dq_b ? *dq_b : 1.0f;
    return a * b;
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ std::uint32_t warp_max(std::uint32_t v) {
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide sum into thread 0's return value (other threads get partial sums). blockDim.x must
// be a multiple of 32, at most 1024.
template <typename T>
__device__ T block_sum(T v) {
    __shared__ T partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // partial may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < warps ? partial[threadIdx.x] : T(0);
    if (warp == 0) v = warp_sum(v);
    return v;
}

__device__ __forceinline__ std::uint32_t block_max(std::uint32_t v) {
    __shared__ std::uint32_t partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < warps ? partial[threadIdx.x] : 0u;
    if (warp == 0) v = warp_max(v);
    return v;
}

}  // namespace mantissa::cuda
