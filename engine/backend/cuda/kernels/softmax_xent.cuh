// softmax_xent: softmax cross-entropy, one warp per row (classification heads are narrow: tens to
// a few thousand classes). Per row: the maximum and the first index holding it (argmax, as the
// CPU's sequential scan finds it: NaN never wins, all -inf gives 0), the loss
// log Σ exp(l - m) - (l[label] - m), and the gradient (softmax - onehot) x loss_scale / batch
// rounded to dlogits' format. FP32 throughout (autocast keeps losses in FP32).
// The per-row losses go to a buffer and the host sums them in double in row order, as the CPU
// does; they differ from the CPU's only by expf/logf ulps and the order of the 32 lanes' sum.
// The reference: CpuBackend::softmax_cross_entropy (cpu_elementwise.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void softmax_xent_kernel(const void* logits, int fmt, std::int64_t batch, std::int64_t classes,
                                    const std::int32_t* labels, float grad_factor, const float* loss_scale_dev,
                                    void* dlogits, int d_fmt, float* row_loss, std::int32_t* row_correct) {
    const int lane = threadIdx.x & 31;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= batch) return;  // uniform per warp
    const std::int64_t base = row * classes;

    float m = -INFINITY;
    std::int64_t arg = 0;
    for (std::int64_t c = lane; c < classes; c += 32) {
        const float v = load_value(logits, fmt, base + c);
        if (v > m) {
            m = v;
            arg = c;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, o);
        const std::int64_t oa = __shfl_xor_sync(0xffffffffu, arg, o);
        if (om > m || (om == m && oa < arg)) {
            m = om;
            arg = oa;
        }
    }
    if (!isfinite(m)) m = 0.0f;  // all -inf, or +inf: let the inf/NaN propagate below

    float sum = 0.0f;
    for (std::int64_t c = lane; c < classes; c += 32) sum += expf(load_value(logits, fmt, base + c) - m);
    sum = warp_sum(sum);
    const float log_sum = logf(sum);
    const std::int32_t label = labels[row];
    if (lane == 0) {
        row_loss[row] = log_sum - (load_value(logits, fmt, base + label) - m);
        row_correct[row] = arg == label ? 1 : 0;
    }
    if (!dlogits) return;
    const float factor = loss_scale_dev ? *loss_scale_dev / static_cast<float>(batch) : grad_factor;
    for (std::int64_t c = lane; c < classes; c += 32) {
        const float p = expf(load_value(logits, fmt, base + c) - m - log_sum);
        store_value(dlogits, d_fmt, base + c, (p - (c == label ? 1.0f : 0.0f)) * factor, false);
    }
}

// ---- launchers

void launch_softmax_cross_entropy(const void* logits, int fmt, std::int64_t batch, std::int64_t classes,
                                  const std::int32_t* labels, float grad_factor, const float* loss_scale_dev,
                                  void* dlogits, int d_fmt, float* row_loss, std::int32_t* row_correct,
                                  cudaStream_t stream) {
    if (batch <= 0) return;
    const int rows_per_block = block_size / 32;
    const auto blocks = static_cast<unsigned>((batch + rows_per_block - 1) / rows_per_block);
    softmax_xent_kernel<<<blocks, block_size, 0, stream>>>(logits, fmt, batch, classes, labels, grad_factor,
                                                           loss_scale_dev, dlogits, d_fmt, row_loss, row_correct);
    check_launch("softmax_cross_entropy");
}

}  // namespace mantissa::cuda
