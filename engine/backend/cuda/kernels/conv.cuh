// conv: the data movement and the epilogues around a convolution's matmuls (cuda_conv.cpp). A
// chunk of samples becomes a "rows" matrix, one row per output position of a sample, so the
// convolution is linear's matmul on it:
//   im2col       col(rows, C·k·k): row (n, oy, ox), column (c, ky, kx) = x[n, c, oy·s-p+ky, ox·s-p+kx],
//                0 in the padding, stored in the operand format (a rounding of x to it, or a copy)
//   nchw_rows    dy(n, Co, P) -> (n·P + p, Co), stored in the operand format
//   conv_output  y[n, co, p] = round(acc[n·P + p, co] × dequant + b[co]) (no bias: nothing added)
//   col2im       dx[n, c, iy, ix] = round(dequant × Σ over the (ky, kx) that read it of
//                dcol[(n, oy, ox), (c, ky, kx)]): one thread per input element, the offsets added
//                in FP32 in (ky, kx) order from +0, as the CPU's col2im adds them (atomic-free);
//                direct (1×1, stride 1, no padding) keeps the one value, as the CPU's matmul does
//   accumulate   a += b (FP32): dW over the chunks
//   conv_bias    db[co] = Σ_n (Σ_p dy[n, co, p]): each sample's sum over positions from +0 (one
//                thread per (n, co)), then the samples' sums in sample order: the CPU's order, so
//                bit-identical to it
// The reference: CpuBackend::conv2d_forward_impl / conv2d_backward_impl (cpu/cpu_conv.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

// ---- kernels

__global__ void im2col_kernel(ConvLaunch g, const void* x, int x_fmt, std::int64_t first, std::int64_t samples,
                              void* col, int col_fmt) {
    const std::int64_t patch = g.channels * g.kernel * g.kernel, positions = g.out_h * g.out_w;
    const std::int64_t in = g.channels * g.height * g.width;
    MANTISSA_GRID_STRIDE(i, samples * positions * patch) {
        const std::int64_t row = i / patch, k = i % patch;
        const std::int64_t n = row / positions, p = row % positions;
        const std::int64_t c = k / (g.kernel * g.kernel), ky = (k / g.kernel) % g.kernel, kx = k % g.kernel;
        const std::int64_t iy = (p / g.out_w) * g.stride - g.padding + ky;
        const std::int64_t ix = (p % g.out_w) * g.stride - g.padding + kx;
        float v = 0.0f;
        if (iy >= 0 && iy < g.height && ix >= 0 && ix < g.width)
            v = load_value(x, x_fmt, (first + n) * in + (c * g.height + iy) * g.width + ix);
        store_value(col, col_fmt, i, v, false);
    }
}

__global__ void nchw_rows_kernel(const void* src, int src_fmt, std::int64_t first, std::int64_t samples,
                                 std::int64_t channels, std::int64_t positions, void* dst, int dst_fmt) {
    MANTISSA_GRID_STRIDE(i, samples * positions * channels) {
        const std::int64_t row = i / channels, c = i % channels;
        const std::int64_t n = row / positions, p = row % positions;
        const float v = load_value(src, src_fmt, ((first + n) * channels + c) * positions + p);
        store_value(dst, dst_fmt, i, v, false);
    }
}

__global__ void conv_output_kernel(const float* acc, std::int64_t first, std::int64_t samples, std::int64_t channels,
                                   std::int64_t positions, const float* dq_a, const float* dq_b, const void* bias,
                                   int bias_fmt, void* y, int y_fmt) {
    const float dequant = dequant_factor(dq_a, dq_b);
    MANTISSA_GRID_STRIDE(i, samples * channels * positions) {
        const std::int64_t n = i / (channels * positions), c = (i / positions) % channels, p = i % positions;
        const float a = acc[(n * positions + p) * channels + c];
        // As the CPU: a × dequant + b with a bias (dequant 1 changes nothing), else a × dequant
        // only when dequant is not 1 (a -0 stays -0).
        const float v = bias ? a * dequant + load_value(bias, bias_fmt, c) : apply_multiplier(a, dequant);
        store_value(y, y_fmt, first * channels * positions + i, v, false);
    }
}

__global__ void col2im_kernel(ConvLaunch g, const float* dcol, std::int64_t first, std::int64_t samples,
                              const float* dq_a, const float* dq_b, void* dx, int dx_fmt, const std::uint64_t* key) {
    const float dequant = dequant_factor(dq_a, dq_b);
    const std::uint64_t k = key ? *key : 0;
    const std::int64_t patch = g.channels * g.kernel * g.kernel, positions = g.out_h * g.out_w;
    const std::int64_t plane = g.height * g.width, in = g.channels * plane;
    const bool direct = g.kernel == 1 && g.stride == 1 && g.padding == 0;
    MANTISSA_GRID_STRIDE(i, samples * in) {
        const std::int64_t n = i / in, c = (i % in) / plane, iy = (i % plane) / g.width, ix = i % g.width;
        const float* rows = dcol + n * positions * patch;
        float sum;
        if (direct) {
            sum = rows[(iy * g.out_w + ix) * patch + c];
        } else {
            sum = 0.0f;
            for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
                const std::int64_t ty = iy + g.padding - ky;
                if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.out_h) continue;
                const std::int64_t oy = ty / g.stride;
                for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
                    const std::int64_t tx = ix + g.padding - kx;
                    if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.out_w) continue;
                    const std::int64_t ox = tx / g.stride;
                    sum += rows[(oy * g.out_w + ox) * patch + (c * g.kernel + ky) * g.kernel + kx];
                }
            }
        }
        // Stochastically: value j of the whole dx takes stochastic_bits(key, j), as the CPU rounds
        // the tensor in one pass with one key.
        const std::int64_t j = first * in + i;
        if (key)
            store_stochastic(dx, dx_fmt, j, apply_multiplier(sum, dequant), stochastic_bits(k, static_cast<std::uint64_t>(j)));
        else
            store_value(dx, dx_fmt, j, apply_multiplier(sum, dequant), false);
    }
}

__global__ void accumulate_kernel(float* a, const float* b, std::int64_t n) {
    MANTISSA_GRID_STRIDE(i, n) { a[i] += b[i]; }
}

// partial[n·channels + c] = Σ_p dy[n, c, p] rounded to round_fmt first (the operand's values).
__global__ void conv_bias_samples_kernel(const void* dy, int dy_fmt, int round_fmt, std::int64_t batch,
                                         std::int64_t channels, std::int64_t positions, float* partial) {
    MANTISSA_GRID_STRIDE(i, batch * channels) {
        const std::int64_t base = i * positions;
        float sum = 0.0f;
        for (std::int64_t p = 0; p < positions; ++p) sum += round_value(round_fmt, load_value(dy, dy_fmt, base + p), false);
        partial[i] = sum;
    }
}

__global__ void conv_bias_combine_kernel(const float* partial, std::int64_t batch, std::int64_t channels, void* db,
                                         int db_fmt) {
    MANTISSA_GRID_STRIDE(c, channels) {
        float sum = 0.0f;
        for (std::int64_t n = 0; n < batch; ++n) sum += partial[n * channels + c];
        store_value(db, db_fmt, c, sum, false);
    }
}

// ---- launchers

void launch_im2col(const ConvLaunch& g, const void* x, int x_fmt, std::int64_t first, std::int64_t samples, void* col,
                   int col_fmt, cudaStream_t stream) {
    const std::int64_t n = samples * g.out_h * g.out_w * g.channels * g.kernel * g.kernel;
    if (n <= 0) return;
    im2col_kernel<<<grid_for(n), block_size, 0, stream>>>(g, x, x_fmt, first, samples, col, col_fmt);
    check_launch("im2col");
}

void launch_nchw_rows(const void* src, int src_fmt, std::int64_t first, std::int64_t samples, std::int64_t channels,
                      std::int64_t positions, void* dst, int dst_fmt, cudaStream_t stream) {
    const std::int64_t n = samples * channels * positions;
    if (n <= 0) return;
    nchw_rows_kernel<<<grid_for(n), block_size, 0, stream>>>(src, src_fmt, first, samples, channels, positions, dst,
                                                             dst_fmt);
    check_launch("nchw_rows");
}

void launch_conv_output(const float* acc, std::int64_t first, std::int64_t samples, std::int64_t channels,
                        std::int64_t positions, const float* dq_a, const float* dq_b, const void* bias, int bias_fmt,
                        void* y, int y_fmt, cudaStream_t stream) {
    const std::int64_t n = samples * channels * positions;
    if (n <= 0) return;
    conv_output_kernel<<<grid_for(n), block_size, 0, stream>>>(acc, first, samples, channels, positions, dq_a, dq_b,
                                                               bias, bias_fmt, y, y_fmt);
    check_launch("conv_output");
}

void launch_col2im(const ConvLaunch& g, const float* dcol, std::int64_t first, std::int64_t samples, const float* dq_a,
                   const float* dq_b, void* dx, int dx_fmt, cudaStream_t stream, const std::uint64_t* key) {
    const std::int64_t n = samples * g.channels * g.height * g.width;
    if (n <= 0) return;
    col2im_kernel<<<grid_for(n), block_size, 0, stream>>>(g, dcol, first, samples, dq_a, dq_b, dx, dx_fmt, key);
    check_launch("col2im");
}

void launch_accumulate(float* a, const float* b, std::int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    accumulate_kernel<<<grid_for(n), block_size, 0, stream>>>(a, b, n);
    check_launch("accumulate");
}

void launch_conv_bias_grad(const void* dy, int dy_fmt, int round_fmt, std::int64_t batch, std::int64_t channels,
                           std::int64_t positions, float* partial, void* db, int db_fmt, cudaStream_t stream) {
    if (channels <= 0) return;
    if (batch > 0) {
        conv_bias_samples_kernel<<<grid_for(batch * channels), block_size, 0, stream>>>(dy, dy_fmt, round_fmt, batch,
                                                                                        channels, positions, partial);
        check_launch("conv_bias_samples");
    }
    conv_bias_combine_kernel<<<grid_for(channels), block_size, 0, stream>>>(partial, batch, channels, db, db_fmt);
    check_launch("conv_bias_combine");
}

}  // namespace mantissa::cuda
