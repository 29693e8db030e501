// cast: dst = src rounded to dst's format: the upload of host data (src is an FP32 staging
// buffer), the download (dst is FP32), Backend::cast and Backend::convert. One generic kernel
// that switches on the two formats per element (the switch is uniform across the grid, so it
// costs nothing next to the memory traffic) instead of 36 template instances: compile time on
// small machines matters more here than the last few percent.
// The reference: mantissa::round_array (numeric/convert.h), bit for bit (see convert.cuh).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void cast_kernel(const void* src, int src_fmt, float src_multiplier, void* dst, int dst_fmt, std::int64_t n,
                            bool saturate) {
    MANTISSA_GRID_STRIDE(i, n) {
        const float v = apply_multiplier(load_value(src, src_fmt, i), src_multiplier);
        store_value(dst, dst_fmt, i, v, saturate);
    }
}

__global__ void fill_bits_kernel(void* dst, int bytes_per_value, std::uint32_t bits, std::int64_t n) {
    MANTISSA_GRID_STRIDE(i, n) {
        if (bytes_per_value == 4)
            static_cast<std::uint32_t*>(dst)[i] = bits;
        else if (bytes_per_value == 2)
            static_cast<std::uint16_t*>(dst)[i] = static_cast<std::uint16_t>(bits);
        else
            static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(bits);
    }
}

// ---- launchers

void launch_cast(const void* src, int src_fmt, float src_multiplier, void* dst, int dst_fmt, std::int64_t n,
                 bool saturate, cudaStream_t stream) {
    if (n <= 0) return;
    cast_kernel<<<grid_for(n), block_size, 0, stream>>>(src, src_fmt, src_multiplier, dst, dst_fmt, n, saturate);
    check_launch("cast");
}

void launch_fill_bits(void* dst, int bytes_per_value, std::uint32_t bits, std::int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    fill_bits_kernel<<<grid_for(n), block_size, 0, stream>>>(dst, bytes_per_value, bits, n);
    check_launch("fill");
}

}  // namespace mantissa::cuda
