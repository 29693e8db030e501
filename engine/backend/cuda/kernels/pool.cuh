// pool: max, average and global average pools, forward and backward, one thread per output
// element (forward) or per input element (backward: it gathers from the windows that hold it, so
// no atomics). Every sum is the CPU's, in its order, so the results are bit-identical to it:
//   max forward   the window's first maximum in row-major order (a NaN wins, padding never does),
//                 its value rounded to y's format
//   max backward  Σ of dy over the windows (in (oy, ox) order, from +0) whose maximum, found again
//                 from x by the same rule, is this element
//   avg forward   (Σ window in FP32 from +0, row-major) / k², padding counting as zeros
//   avg backward  Σ over the windows holding the element of fp32(dy / k²), in (oy, ox) order
//   global        y = (Σ_p x from +0) / spatial; dx = dy / spatial
// The reference: CpuBackend's maxpool2d / avgpool2d / global_avgpool (cpu/cpu_pool.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

struct PoolWindow {
    std::int64_t y0, y1, x0, x1;
};

__device__ __forceinline__ PoolWindow pool_window(const PoolLaunch& p, std::int64_t oy, std::int64_t ox) {
    const std::int64_t ys = oy * p.stride - p.padding, xs = ox * p.stride - p.padding;
    return {ys > 0 ? ys : 0, ys + p.kernel < p.height ? ys + p.kernel : p.height, xs > 0 ? xs : 0,
            xs + p.kernel < p.width ? xs + p.kernel : p.width};
}

// Index into the plane of the window's maximum (CpuBackend's window_argmax, same comparisons).
__device__ __forceinline__ std::int64_t pool_argmax(const void* x, int fmt, std::int64_t base, std::int64_t width,
                                                    const PoolWindow& w) {
    std::int64_t best = w.y0 * width + w.x0;
    float m = load_value(x, fmt, base + best);
    for (std::int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (std::int64_t ix = w.x0; ix < w.x1; ++ix) {
            const float v = load_value(x, fmt, base + iy * width + ix);
            if (m != m) return best;  // a NaN wins and stays
            if (v > m || v != v) {
                m = v;
                best = iy * width + ix;
            }
        }
    }
    return best;
}

// The outputs whose windows hold input row iy (or column): [lo, hi].
__device__ __forceinline__ void pool_outputs_of(std::int64_t i, std::int64_t kernel, std::int64_t stride,
                                                std::int64_t padding, std::int64_t outputs, std::int64_t& lo,
                                                std::int64_t& hi) {
    const std::int64_t t = i + padding;  // window o holds i when o·s <= t < o·s + k
    lo = t - kernel + 1 <= 0 ? 0 : (t - kernel + 1 + stride - 1) / stride;
    hi = t / stride;
    if (hi > outputs - 1) hi = outputs - 1;
}

__global__ void maxpool_forward_kernel(PoolLaunch p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t n) {
    const std::int64_t oh = p.out_h, ow = p.out_w, plane = p.height * p.width;
    MANTISSA_GRID_STRIDE(i, n) {
        const std::int64_t nc = i / (oh * ow), oy = (i / ow) % oh, ox = i % ow;
        const std::int64_t base = nc * plane;
        const std::int64_t best = pool_argmax(x, x_fmt, base, p.width, pool_window(p, oy, ox));
        store_value(y, y_fmt, i, load_value(x, x_fmt, base + best), false);
    }
}

__global__ void maxpool_backward_kernel(PoolLaunch p, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                                        int dx_fmt, std::int64_t n) {
    const std::int64_t oh = p.out_h, ow = p.out_w, plane = p.height * p.width;
    MANTISSA_GRID_STRIDE(i, n) {
        const std::int64_t nc = i / plane, iy = (i % plane) / p.width, ix = i % p.width;
        const std::int64_t base = nc * plane, self = iy * p.width + ix;
        std::int64_t y0, y1, x0, x1;
        pool_outputs_of(iy, p.kernel, p.stride, p.padding, oh, y0, y1);
        pool_outputs_of(ix, p.kernel, p.stride, p.padding, ow, x0, x1);
        float sum = 0.0f;
        for (std::int64_t oy = y0; oy <= y1; ++oy)
            for (std::int64_t ox = x0; ox <= x1; ++ox)
                if (pool_argmax(x, x_fmt, base, p.width, pool_window(p, oy, ox)) == self)
                    sum += load_value(dy, dy_fmt, nc * oh * ow + oy * ow + ox);
        store_value(dx, dx_fmt, i, sum, false);
    }
}

__global__ void avgpool_forward_kernel(PoolLaunch p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t n) {
    const std::int64_t oh = p.out_h, ow = p.out_w, plane = p.height * p.width;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
    MANTISSA_GRID_STRIDE(i, n) {
        const std::int64_t nc = i / (oh * ow), oy = (i / ow) % oh, ox = i % ow;
        const PoolWindow w = pool_window(p, oy, ox);
        float sum = 0.0f;
        for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
            for (std::int64_t ix = w.x0; ix < w.x1; ++ix) sum += load_value(x, x_fmt, nc * plane + iy * p.width + ix);
        store_value(y, y_fmt, i, sum / divisor, false);
    }
}

__global__ void avgpool_backward_kernel(PoolLaunch p, const void* dy, int dy_fmt, void* dx, int dx_fmt, std::int64_t n) {
    const std::int64_t oh = p.out_h, ow = p.out_w, plane = p.height * p.width;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
    MANTISSA_GRID_STRIDE(i, n) {
        const std::int64_t nc = i / plane, iy = (i % plane) / p.width, ix = i % p.width;
        std::int64_t y0, y1, x0, x1;
        pool_outputs_of(iy, p.kernel, p.stride, p.padding, oh, y0, y1);
        pool_outputs_of(ix, p.kernel, p.stride, p.padding, ow, x0, x1);
        float sum = 0.0f;
        for (std::int64_t oy = y0; oy <= y1; ++oy)
            for (std::int64_t ox = x0; ox <= x1; ++ox) sum += load_value(dy, dy_fmt, nc * oh * ow + oy * ow + ox) / divisor;
        store_value(dx, dx_fmt, i, sum, false);
    }
}

__global__ void global_avgpool_forward_kernel(const void* x, int x_fmt, std::int64_t spatial, void* y, int y_fmt,
                                              std::int64_t n) {
    const float divisor = static_cast<float>(spatial);
    MANTISSA_GRID_STRIDE(i, n) {
        float sum = 0.0f;
        for (std::int64_t p = 0; p < spatial; ++p) sum += load_value(x, x_fmt, i * spatial + p);
        store_value(y, y_fmt, i, sum / divisor, false);
    }
}

__global__ void global_avgpool_backward_kernel(const void* dy, int dy_fmt, std::int64_t spatial, void* dx, int dx_fmt,
                                               std::int64_t n) {
    const float divisor = static_cast<float>(spatial);
    MANTISSA_GRID_STRIDE(i, n) { store_value(dx, dx_fmt, i, load_value(dy, dy_fmt, i / spatial) / divisor, false); }
}

// ---- launchers

void launch_maxpool_forward(const PoolLaunch& p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t batch,
                            cudaStream_t stream) {
    const std::int64_t n = batch * p.channels * p.out_h * p.out_w;
    if (n <= 0) return;
    maxpool_forward_kernel<<<grid_for(n), block_size, 0, stream>>>(p, x, x_fmt, y, y_fmt, n);
    check_launch("maxpool_forward");
}

void launch_maxpool_backward(const PoolLaunch& p, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                             int dx_fmt, std::int64_t batch, cudaStream_t stream) {
    const std::int64_t n = batch * p.channels * p.height * p.width;
    if (n <= 0) return;
    maxpool_backward_kernel<<<grid_for(n), block_size, 0, stream>>>(p, x, x_fmt, dy, dy_fmt, dx, dx_fmt, n);
    check_launch("maxpool_backward");
}

void launch_avgpool_forward(const PoolLaunch& p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t batch,
                            cudaStream_t stream) {
    const std::int64_t n = batch * p.channels * p.out_h * p.out_w;
    if (n <= 0) return;
    avgpool_forward_kernel<<<grid_for(n), block_size, 0, stream>>>(p, x, x_fmt, y, y_fmt, n);
    check_launch("avgpool_forward");
}

void launch_avgpool_backward(const PoolLaunch& p, const void* dy, int dy_fmt, void* dx, int dx_fmt, std::int64_t batch,
                             cudaStream_t stream) {
    const std::int64_t n = batch * p.channels * p.height * p.width;
    if (n <= 0) return;
    avgpool_backward_kernel<<<grid_for(n), block_size, 0, stream>>>(p, dy, dy_fmt, dx, dx_fmt, n);
    check_launch("avgpool_backward");
}

void launch_global_avgpool_forward(const void* x, int x_fmt, std::int64_t rows, std::int64_t spatial, void* y,
                                   int y_fmt, cudaStream_t stream) {
    if (rows <= 0) return;
    global_avgpool_forward_kernel<<<grid_for(rows), block_size, 0, stream>>>(x, x_fmt, spatial, y, y_fmt, rows);
    check_launch("global_avgpool_forward");
}

void launch_global_avgpool_backward(const void* dy, int dy_fmt, std::int64_t rows, std::int64_t spatial, void* dx,
                                    int dx_fmt, cudaStream_t stream) {
    const std::int64_t n = rows * spatial;
    if (n <= 0) return;
    global_avgpool_backward_kernel<<<grid_for(n), block_size, 0, stream>>>(dy, dy_fmt, spatial, dx, dx_fmt, n);
    check_launch("global_avgpool_backward");
}

}  // namespace mantissa::cuda
