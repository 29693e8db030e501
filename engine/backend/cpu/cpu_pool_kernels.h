// The max pool's kernels of the CPU backend, declared apart so that tests can hold the fast path
// for 2×2 windows with stride 2 and no padding (the reference CNN's pools) against the general
// path bit for bit: both select the same element of every window (the first in row-major order
// among equals, the first NaN if any; docs/numerics.md, "Convolutional ops"), so their outputs
// and routed gradients are the same bits. Defined in cpu_pool.cpp. Training thread only.
#pragma once

#include <cstdint>

#include "backend/conv_ops.h"

namespace mantissa::cpu_detail {

// y(batch, out_size) = each window's maximum of x(batch, in_size), unrounded (FP32 values of x).
// maxpool_forward takes the fast path when the geometry allows it (maxpool_fast_path).
void maxpool_forward(const Pool2dGeometry& p, const float* x, float* y, std::int64_t batch);
void maxpool_forward_general(const Pool2dGeometry& p, const float* x, float* y, std::int64_t batch);

// dx(batch, in_size) = dy added in FP32 (from +0) at each window's maximum in x, overwritten.
// through_relu: only where that maximum is above 0 or a NaN (x a ReLU's output, dx its input's
// gradient: Backend::maxpool2d_relu_backward).
void maxpool_route(const Pool2dGeometry& p, const float* x, const float* dy, float* dx, std::int64_t batch,
                   bool through_relu = false);
void maxpool_route_general(const Pool2dGeometry& p, const float* x, const float* dy, float* dx,
                           std::int64_t batch, bool through_relu = false);

// Kernel 2, stride 2, padding 0 on an image of at least 2×2: whole windows that neither overlap
// nor reach into padding (a 1-pixel side would give clipped windows: the general path's).
inline bool maxpool_fast_path(const Pool2dGeometry& p) {
    return p.kernel == 2 && p.stride == 2 && p.padding == 0 && p.in_h >= 2 && p.in_w >= 2;
}

}  // namespace mantissa::cpu_detail
