// softmax: the row-wise softmax of attention, forward and backward, one warp per row (rows are a
// sequence's length: tens to a few thousand values). FP32 throughout, as autocast's FP32 list:
//   forward   m = max_j x_j (NaN when a NaN is seen), e_j = exp(x_j − m), s = Σ e_j, y_j = e_j / s
//   backward  g_j = y_j·(dy_j − Σ_k dy_k·y_k), dx = rnd_dx(g), then rnd_dx(dx·scale) when scale ≠ 1
// Causal: row i of each (T × T) block sees columns 0..i; the others are never read and written
// +0. The only differences from the CPU: the row sums are taken per lane and then across the
// warp (not in column order), and expf may differ from the C library's exp in the last ulps.
// y may be x and dx may be y or dy: every lane reads the columns it writes, and a row's sums are
// complete before any of its values is written.
// The forward's statistics (largest finite |x|, count of inf/NaN over the unmasked entries) go to a
// small device struct through atomics (a maximum and a count: order-free, so deterministic).
// The reference: CpuBackend::softmax_forward_impl / softmax_backward_impl (cpu/cpu_attention.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

constexpr int softmax_warps = block_size / 32;  // rows per block

__device__ __forceinline__ float warp_max_float(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__global__ void softmax_forward_kernel(const void* x, int x_fmt, void* y, int y_fmt, std::int64_t rows,
                                       std::int64_t cols, int causal, SoftmaxStatsDevice* stats) {
    const int lane = threadIdx.x & 31;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * softmax_warps + (threadIdx.x >> 5);
    if (row >= rows) return;  // uniform per warp
    const std::int64_t seen = causal ? row % cols + 1 : cols;
    const std::int64_t base = row * cols;

    float m = -INFINITY, amax = 0.0f;
    bool nan = false;
    unsigned long long nonfinite = 0;
    for (std::int64_t j = lane; j < seen; j += 32) {
        const float v = load_value(x, x_fmt, base + j);
        if (isfinite(v)) {
            amax = fmaxf(amax, fabsf(v));
            m = fmaxf(m, v);
        } else {
            ++nonfinite;
            if (isnan(v)) nan = true;
            else if (v > m) m = v;
        }
    }
    m = warp_max_float(m);
    if (__any_sync(0xffffffffu, nan)) m = NAN;

    float sum = 0.0f;
    for (std::int64_t j = lane; j < seen; j += 32) sum += expf(load_value(x, x_fmt, base + j) - m);
    sum = warp_sum(sum);  // every lane holds the row's sum
    for (std::int64_t j = lane; j < seen; j += 32)
        store_value(y, y_fmt, base + j, expf(load_value(x, x_fmt, base + j) - m) / sum, false);
    for (std::int64_t j = seen + lane; j < cols; j += 32) store_value(y, y_fmt, base + j, 0.0f, false);

    if (stats) {
        amax = warp_max_float(amax);
        nonfinite = warp_sum(nonfinite);  // lane 0 holds the total
        if (lane == 0) {
            atomicMax(&stats->amax_bits, bits_of(amax));  // non-negative: the bit order is the value order
            if (nonfinite) atomicAdd(&stats->nonfinite, nonfinite);
        }
    }
}

__global__ void softmax_backward_kernel(const void* y, int y_fmt, const void* dy, int dy_fmt, void* dx, int dx_fmt,
                                        std::int64_t rows, std::int64_t cols, int causal, float scale) {
    const int lane = threadIdx.x & 31;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * softmax_warps + (threadIdx.x >> 5);
    if (row >= rows) return;
    const std::int64_t seen = causal ? row % cols + 1 : cols;
    const std::int64_t base = row * cols;

    float sum = 0.0f;
    for (std::int64_t j = lane; j < seen; j += 32)
        sum += load_value(dy, dy_fmt, base + j) * load_value(y, y_fmt, base + j);
    sum = warp_sum(sum);
    for (std::int64_t j = lane; j < seen; j += 32) {
        const float yj = load_value(y, y_fmt, base + j);
        float g = round_value(dx_fmt, yj * (load_value(dy, dy_fmt, base + j) - sum), false);
        if (scale != 1.0f) g *= scale;  // rounded again by the store
        store_value(dx, dx_fmt, base + j, g, false);
    }
    for (std::int64_t j = seen + lane; j < cols; j += 32) store_value(dx, dx_fmt, base + j, 0.0f, false);
}

// ---- launchers

void launch_softmax_forward(const void* x, int x_fmt, void* y, int y_fmt, std::int64_t rows, std::int64_t cols,
                            bool causal, SoftmaxStatsDevice* stats, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const auto blocks = static_cast<unsigned>((rows + softmax_warps - 1) / softmax_warps);
    softmax_forward_kernel<<<blocks, block_size, 0, stream>>>(x, x_fmt, y, y_fmt, rows, cols, causal ? 1 : 0, stats);
    check_launch("softmax_forward");
}

void launch_softmax_backward(const void* y, int y_fmt, const void* dy, int dy_fmt, void* dx, int dx_fmt,
                             std::int64_t rows, std::int64_t cols, bool causal, float scale, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const auto blocks = static_cast<unsigned>((rows + softmax_warps - 1) / softmax_warps);
    softmax_backward_kernel<<<blocks, block_size, 0, stream>>>(y, y_fmt, dy, dy_fmt, dx, dx_fmt, rows, cols,
                                                               causal ? 1 : 0, scale);
    check_launch("softmax_backward");
}

}  // namespace mantissa::cuda
