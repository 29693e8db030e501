// fp8_current: FP8 scales taken from the tensor being quantised instead of its history
// (precision.fp8.scaling current and rowwise), on the device so a captured step replays them.
//   current: the tensor's amax (the largest |x| bit pattern: a NaN or an infinity wins and keeps
//            the scale at 1), then its scale into the layer's state (Fp8StateLayout), which the
//            quantisation (fp8_quantize.cuh) and the backward's dequantisation read;
//   rowwise: one thread per run of K values along the reduction dimension (round_rowwise_run).
// The references: AmaxHistory::use_amax (backend/amax_history.cpp) and round_axiswise_fp8
// (numeric/block_round.cpp); fp8_scale_rule.cuh holds the arithmetic.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/fp8_scale_rule.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void amax_bits_kernel(const void* src, int src_fmt, std::int64_t n, std::uint32_t* amax_bits) {
    std::uint32_t amax = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        amax = max(amax, bits_of(load_value(src, src_fmt, i)) & 0x7FFFFFFFu);
    }
    amax = block_max(amax);
    if (threadIdx.x == 0 && amax) atomicMax(amax_bits, amax);
}

__global__ void fp8_current_scale_kernel(float* state, int role, float fp8_max, int margin, bool power_of_two) {
    using L = Fp8StateLayout;
    const auto* amax = reinterpret_cast<const std::uint32_t*>(state + L::current_amax);
    const float scale = fp8_scale_for(float_of(amax[role]), fp8_max, margin, power_of_two);
    state[L::scale + role] = scale > 0.0f ? scale : 1.0f;
    state[L::scale_inv + role] = 1.0f / state[L::scale + role];
}

__global__ void round_rowwise_kernel(RowwiseArgs a) {
    const std::uint64_t key = a.key ? *a.key : 0;
    std::uint32_t amax = 0;
    MANTISSA_GRID_STRIDE(r, a.runs()) {
        amax = max(amax, round_rowwise_run(a, r, key));
    }
    if (!a.amax) return;
    amax = block_max(amax);
    if (threadIdx.x == 0 && amax) atomicMax(a.amax, amax);
}

// ---- launchers

void launch_fp8_current_scale(const void* src, int src_fmt, std::int64_t n, float* state, int role, float fp8_max,
                              int margin, bool power_of_two, cudaStream_t stream) {
    auto* amax = reinterpret_cast<std::uint32_t*>(state + Fp8StateLayout::current_amax) + role;
    if (cudaMemsetAsync(amax, 0, sizeof(std::uint32_t), stream) != cudaSuccess)
        throw Error("fp8_current_scale: the amax word could not be cleared.");
    if (n > 0) {
        amax_bits_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(src, src_fmt, n, amax);
        check_launch("amax_bits");
    }
    fp8_current_scale_kernel<<<1, 1, 0, stream>>>(state, role, fp8_max, margin, power_of_two);
    check_launch("fp8_current_scale");
}

void launch_round_rowwise(const RowwiseArgs& args, cudaStream_t stream) {
    if (args.runs() <= 0) return;
    round_rowwise_kernel<<<grid_for(args.runs()), block_size, 0, stream>>>(args);
    check_launch("round_rowwise");
}

}  // namespace mantissa::cuda
