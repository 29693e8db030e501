// batched_matmul: what the CUDA backend's batched matmul needs beside cuBLASLt (the products
// themselves are strided-batched cuBLASLt calls, cuda_attention.cpp):
//   pack       an operand gathered through its strided view into a plain (batch, rows, cols) copy,
//              rounded to the compute format as it is copied (the CPU's pack)
//   epilogue   alpha at its point and the rounding to C's format, written through C's view:
//                accumulator  C = rnd_C(alpha·acc)      output  C = rnd_C(alpha·rnd_C(acc))
//              from the FP32 workspace, or in place on a C that cuBLASLt already wrote rounded
//   reference  the fallback when cuBLASLt has no algorithm: one thread per element of C, the
//              exact products summed in FP32 in l order, then the epilogue
// The reference: CpuBackend::batched_matmul_impl (cpu/cpu_attention.cpp) and its epilogue.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

// The element index of position p of the plain (batch, rows, cols) order in view v.
__device__ __forceinline__ std::int64_t view_index(const ViewLaunch& v, std::int64_t p) {
    const std::int64_t col = p % v.cols;
    const std::int64_t q = p / v.cols;
    const std::int64_t row = q % v.rows;
    const std::int64_t b = q / v.rows;
    return v.offset + (b / v.inner_count) * v.outer_stride + (b % v.inner_count) * v.inner_stride +
           row * v.row_stride + col * v.col_stride;
}

// Element (row, col) of matrix b of view v.
__device__ __forceinline__ std::int64_t view_at(const ViewLaunch& v, std::int64_t b, std::int64_t row,
                                                std::int64_t col) {
    return v.offset + (b / v.inner_count) * v.outer_stride + (b % v.inner_count) * v.inner_stride +
           row * v.row_stride + col * v.col_stride;
}

// alpha at its point, as the CPU's epilogue: rounded first (output point), scaled, rounded.
__device__ __forceinline__ float bmm_alpha(float v, float alpha, bool round_first, int c_fmt) {
    if (round_first && alpha != 1.0f) v = round_value(c_fmt, v, false);
    return v * alpha;  // rounded by the store
}

__global__ void batched_matmul_pack_kernel(const void* src, int src_fmt, ViewLaunch v, std::int64_t n, void* dst,
                                           int dst_fmt) {
    MANTISSA_GRID_STRIDE(p, n) { store_value(dst, dst_fmt, p, load_value(src, src_fmt, view_index(v, p)), false); }
}

__global__ void batched_matmul_epilogue_kernel(const float* acc, int in_place, float alpha, int round_first,
                                               ViewLaunch c, std::int64_t n, void* c_data, int c_fmt) {
    MANTISSA_GRID_STRIDE(p, n) {
        const std::int64_t at = view_index(c, p);
        float v;
        if (in_place) {
            v = load_value(c_data, c_fmt, at) * alpha;  // already rnd_C(acc)
        } else {
            v = bmm_alpha(acc ? acc[p] : 0.0f, alpha, round_first != 0, c_fmt);
        }
        store_value(c_data, c_fmt, at, v, false);
    }
}

__global__ void batched_matmul_reference_kernel(const void* a, int a_fmt, ViewLaunch av, const void* b, int b_fmt,
                                                ViewLaunch bv, std::int64_t k, int compute_fmt, float alpha,
                                                int round_first, void* c, int c_fmt, ViewLaunch cv, std::int64_t n) {
    MANTISSA_GRID_STRIDE(p, n) {
        const std::int64_t col = p % cv.cols;
        const std::int64_t q = p / cv.cols;
        const std::int64_t row = q % cv.rows;
        const std::int64_t m = q / cv.rows;
        float acc = 0.0f;
        for (std::int64_t l = 0; l < k; ++l) {
            const float x = round_value(compute_fmt, load_value(a, a_fmt, view_at(av, m, row, l)), false);
            const float y = round_value(compute_fmt, load_value(b, b_fmt, view_at(bv, m, l, col)), false);
            acc += x * y;  // --fmad=false: the product rounded (exact below FP32), then the sum
        }
        store_value(c, c_fmt, view_at(cv, m, row, col), bmm_alpha(acc, alpha, round_first != 0, c_fmt), false);
    }
}

// ---- launchers

void launch_batched_matmul_pack(const void* src, int src_fmt, const ViewLaunch& v, std::int64_t batch, void* dst,
                                int dst_fmt, cudaStream_t stream) {
    const std::int64_t n = batch * v.rows * v.cols;
    if (n <= 0) return;
    batched_matmul_pack_kernel<<<grid_for(n), block_size, 0, stream>>>(src, src_fmt, v, n, dst, dst_fmt);
    check_launch("batched_matmul_pack");
}

void launch_batched_matmul_epilogue(const float* acc, bool in_place, float alpha, bool round_first,
                                    const ViewLaunch& c, std::int64_t batch, void* c_data, int c_fmt,
                                    cudaStream_t stream) {
    const std::int64_t n = batch * c.rows * c.cols;
    if (n <= 0) return;
    batched_matmul_epilogue_kernel<<<grid_for(n), block_size, 0, stream>>>(acc, in_place ? 1 : 0, alpha,
                                                                           round_first ? 1 : 0, c, n, c_data, c_fmt);
    check_launch("batched_matmul_epilogue");
}

void launch_batched_matmul_reference(const void* a, int a_fmt, const ViewLaunch& av, const void* b, int b_fmt,
                                     const ViewLaunch& bv, std::int64_t k, int compute_fmt, float alpha,
                                     bool round_first, void* c, int c_fmt, const ViewLaunch& cv, std::int64_t batch,
                                     cudaStream_t stream) {
    const std::int64_t n = batch * cv.rows * cv.cols;
    if (n <= 0) return;
    batched_matmul_reference_kernel<<<grid_for(n), block_size, 0, stream>>>(
        a, a_fmt, av, b, b_fmt, bv, k, compute_fmt, alpha, round_first ? 1 : 0, c, c_fmt, cv, n);
    check_launch("batched_matmul_reference");
}

}  // namespace mantissa::cuda
