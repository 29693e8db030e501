// loss_scale: GradScaler's scale update on the device (torch's _amp_update_scale_), so the skip
// decision and the next scale never need the host inside a step: the fused check sets found_inf,
// the optimizers read it as their skip flag, and this one-thread kernel consumes it:
//   found inf:  scale = clamp(scale x backoff), tracker = 0, skipped
//   otherwise:  tracker + 1; on reaching the interval scale = clamp(scale x growth) if finite,
//               tracker = 0
// Products in double stored as FP32, inv_scale = float(1 / double(scale)): the same numbers as
// the host LossScaler (backend/loss_scaler.cpp), bit for bit. min/max clamp only in dynamic mode.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__device__ __forceinline__ float clamp_scale(float s, float min_scale, float max_scale) {
    if (min_scale > 0.0f && s < min_scale) s = min_scale;
    if (s > max_scale) s = max_scale;
    return s;
}

__global__ void loss_scale_update_kernel(ScalerState* st, int mode, double growth, double backoff, long long interval,
                                         float min_scale, float max_scale) {
    const int found = st->found_inf;
    st->found_inf = 0;
    if (mode == 0) {
        st->skipped = 0;
        return;
    }
    st->skipped = found;
    if (mode == 2) {
        if (found) {
            st->scale = clamp_scale(static_cast<float>(static_cast<double>(st->scale) * backoff), min_scale, max_scale);
            st->growth_tracker = 0;
        } else {
            const long long successful = st->growth_tracker + 1;
            if (successful >= interval) {
                const float grown = static_cast<float>(static_cast<double>(st->scale) * growth);
                if (isfinite(grown)) st->scale = clamp_scale(grown, min_scale, max_scale);
                st->growth_tracker = 0;
            } else {
                st->growth_tracker = successful;
            }
        }
    }
    st->inv_scale = static_cast<float>(1.0 / static_cast<double>(st->scale));
}

// ---- launchers

void launch_loss_scale_update(ScalerState* state, int mode, double growth, double backoff, long long interval,
                              float min_scale, float max_scale, cudaStream_t stream) {
    loss_scale_update_kernel<<<1, 1, 0, stream>>>(state, mode, growth, backoff, interval, min_scale, max_scale);
    check_launch("loss_scale_update");
}

}  // namespace mantissa::cuda
