// fp8_scaling: the end of a step for one FP8 layer, on the device: each of its three tensors
// (input, weight, output gradient) pushes this step's amax into its history window and computes
// the next scale, scale = (fp8_max / amax) / 2^margin with amax the window's maximum (or its
// newest entry), kept when amax is 0 or not finite; rounded down to a power of two when the recipe
// asks (fp8_scale_rule.cuh). FP32 arithmetic, the CPU's AmaxHistory::update step for step
// (amax_history.cpp), so the scales are bit-identical. Three threads, one launch: it never leaves
// the device, so a captured step needs no host round trip. Without delayed scaling
// (precision.fp8.scaling none, current, rowwise) the window advances and the scales are left as
// they are (1 for none; current scaling sets its own before each quantisation).
// State layout: Fp8StateLayout (launchers.h).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/fp8_scale_rule.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void fp8_update_kernel(float* state, int history_len, int margin, int algo, bool scaled,
                                  bool power_of_two) {
    using L = Fp8StateLayout;
    const int role = threadIdx.x;  // 0 input, 1 weight, 2 grad_output
    int* ints = reinterpret_cast<int*>(state);
    const int newest = (ints[L::newest] + 1) % history_len;
    const int count = min(ints[L::count] + 1, history_len);
    __syncthreads();
    if (role == 0) {
        ints[L::newest] = newest;
        ints[L::count] = count;
    }
    if (role >= 3) return;
    auto* pending = reinterpret_cast<std::uint32_t*>(state + L::pending);
    float* window = state + L::window + role * history_len;
    window[newest] = float_of(pending[role]);
    pending[role] = 0;

    const float fp8_max = role == 2 ? 57344.0f : 448.0f;
    float amax = window[newest];
    if (algo == 0) {
        for (int i = 0; i < count; ++i) {
            const float v = window[i];
            if (isnan(v) || isnan(amax))
                amax = NAN;
            else
                amax = amax < v ? v : amax;
        }
    }
    const float scale = scaled ? fp8_scale_for(amax, fp8_max, margin, power_of_two) : 0.0f;
    if (scale > 0.0f) {  // else kept: an amax of 0 or not finite
        state[L::scale + role] = scale;
        state[L::scale_inv + role] = 1.0f / scale;
    }
}

// ---- launchers

void launch_fp8_update(float* state, int history_len, int margin, int algo, bool scaled, bool power_of_two,
                       cudaStream_t stream) {
    fp8_update_kernel<<<1, 32, 0, stream>>>(state, history_len, margin, algo, scaled, power_of_two);
    check_launch("fp8_update");
}

}  // namespace mantissa::cuda
