// embedding: the lookup y[r] = rnd_y(W[ids[r]]) and its backward, deterministic without atomics.
//   forward   one thread per element of y: a copy, rounded when y's format is narrower than W's
//   backward  the host sorts the rows by id (stable) into segments, one per id named
//             (cuda_embedding.cpp uploads them with the ids); one thread per (segment, column)
//             sums its rows' dy in FP32 from +0 in ascending row order, as the CPU, and writes
//             rnd(S) or, accumulating, rnd(grad_weight + S): bit-identical to the CPU.
// The reference: CpuBackend::embedding_forward_impl / embedding_backward_impl (cpu/cpu_embedding.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void embedding_forward_kernel(const void* weight, int w_fmt, std::int64_t dim, const std::int32_t* ids,
                                         std::int64_t n, void* y, int y_fmt) {
    MANTISSA_GRID_STRIDE(i, n) {
        const std::int64_t r = i / dim, j = i % dim;
        store_value(y, y_fmt, i, load_value(weight, w_fmt, static_cast<std::int64_t>(ids[r]) * dim + j), false);
    }
}

// blockIdx.x: the segment; blockIdx.y · blockDim.x + threadIdx.x: the column.
__global__ void embedding_backward_kernel(const std::int64_t* rows_of, std::int64_t segments, const void* dy,
                                          int dy_fmt, std::int64_t dim, void* grad_weight, int gw_fmt,
                                          int accumulate) {
    const std::int64_t j = static_cast<std::int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
    if (j >= dim) return;
    const std::int64_t s = blockIdx.x;
    const std::int64_t first = rows_of[s], last = rows_of[s + 1];
    const std::int64_t id = rows_of[segments + 1 + s];
    const std::int64_t* order = rows_of + 2 * segments + 1;
    float sum = 0.0f;
    for (std::int64_t i = first; i < last; ++i) sum += load_value(dy, dy_fmt, order[i] * dim + j);
    const std::int64_t at = id * dim + j;
    if (accumulate) sum = load_value(grad_weight, gw_fmt, at) + sum;
    store_value(grad_weight, gw_fmt, at, sum, false);
}

// ---- launchers

void launch_embedding_forward(const void* weight, int w_fmt, std::int64_t dim, const std::int32_t* ids,
                              std::int64_t rows, void* y, int y_fmt, cudaStream_t stream) {
    const std::int64_t n = rows * dim;
    if (n <= 0) return;
    embedding_forward_kernel<<<grid_for(n), block_size, 0, stream>>>(weight, w_fmt, dim, ids, n, y, y_fmt);
    check_launch("embedding_forward");
}

void launch_embedding_backward(const std::int64_t* rows_of, std::int64_t segments, const void* dy, int dy_fmt,
                               std::int64_t dim, void* grad_weight, int gw_fmt, bool accumulate, cudaStream_t stream) {
    if (segments <= 0 || dim <= 0) return;
    const auto column_blocks = static_cast<unsigned>((dim + block_size - 1) / block_size);
    const dim3 grid(static_cast<unsigned>(segments), column_blocks);
    embedding_backward_kernel<<<grid, block_size, 0, stream>>>(rows_of, segments, dy, dy_fmt, dim, grad_weight, gw_fmt,
                                                               accumulate ? 1 : 0);
    check_launch("embedding_backward");
}

}  // namespace mantissa::cuda
