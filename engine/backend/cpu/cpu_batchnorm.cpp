// CpuBackend: batch normalisation over (batch, spatial) per channel, PyTorch's BatchNorm2d (and
// BatchNorm1d with spatial = 1), forward and backward (docs/numerics.md, "Convolutional ops").
//
// Statistics are FP32 values (autocast keeps norms in FP32): each per-channel sum (Σx, Σ(x-μ)²,
// Σdy, Σdy·x̂) is taken in double over M = batch·spatial values and rounded to FP32 once; the
// per-element arithmetic is FP32. A double sum runs in 16 lanes (value i of a sample's plane
// into lane i mod 16, the lanes carried from sample to sample, added pairwise at the end): a
// fixed order, so the bits do not depend on the thread count, and the loops vectorise (the
// lanes' rounding errors are of double's size, far below the FP32 rounding that follows):
//   training forward  μ = fp32(Σx / M), σ²_b = Σ(x - μ_d)² / M (biased), invstd = fp32(1/√(σ²_b + ε))
//                     running_mean ← fp32((1-m)·running_mean + m·μ_d)
//                     running_var  ← fp32((1-m)·running_var + m·σ²_b·M/(M-1))   (unbiased, as PyTorch)
//   eval forward      μ = running_mean, invstd = fp32(1/√(running_var + ε))
//   y = rnd_y( ((x - μ)·invstd)·γ + β )
//   backward          x̂ = (x - μ)·invstd as the forward computed it, with the saved μ and invstd
//                     dβ = fp32(Σdy), dγ = fp32(Σdy·x̂)
//                     dx = rnd_dx( (γ·invstd)·(dy - fp32(dβ_d/M) - x̂·fp32(dγ_d/M)) )
// The statistics and gradients are written rounded to their tensors' formats (FP32 tensors keep
// them exactly). With gradient tracing on, dx's shadow is the same backward applied to dy's
// (the backward is linear in dy), or, where dy has none, dx before its rounding, kept plane by
// plane where that rounding may flush (cpu_unrounded_pieces.h). Training thread only.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "backend/cpu/cpu_unrounded_pieces.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {

constexpr int lanes = 16;

// Partial sums in double, value i of a plane into lane i mod 16.
struct Lanes {
    double v[lanes] = {};
    double total() const {  // pairwise, a fixed tree
        double a[lanes];
        for (int i = 0; i < lanes; ++i) a[i] = v[i];
        for (int width = lanes / 2; width >= 1; width /= 2)
            for (int i = 0; i < width; ++i) a[i] += a[i + width];
        return a[0];
    }
};

// Σ x and Σ (x - mean)² of one plane, added into the lanes.
MANTISSA_HOT void add_sum(const float* x, std::int64_t n, Lanes& s) {
    double a[lanes];
    for (int j = 0; j < lanes; ++j) a[j] = s.v[j];
    std::int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (int j = 0; j < lanes; ++j) a[j] += static_cast<double>(x[i + j]);
    for (int j = 0; i + j < n; ++j) a[j] += static_cast<double>(x[i + j]);
    for (int j = 0; j < lanes; ++j) s.v[j] = a[j];
}

MANTISSA_HOT void add_squares(const float* x, std::int64_t n, double mean, Lanes& s) {
    double a[lanes];
    for (int j = 0; j < lanes; ++j) a[j] = s.v[j];
    std::int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (int j = 0; j < lanes; ++j) {
            const double d = static_cast<double>(x[i + j]) - mean;
            a[j] += d * d;
        }
    for (int j = 0; i + j < n; ++j) {
        const double d = static_cast<double>(x[i + j]) - mean;
        a[j] += d * d;
    }
    for (int j = 0; j < lanes; ++j) s.v[j] = a[j];
}

// Σ dy and Σ dy·x̂ of one plane, x̂ = (x - mean)·invstd in FP32.
MANTISSA_HOT void add_grad_sums(const float* x, const float* dy, std::int64_t n, float mean, float invstd,
                                Lanes& sdy, Lanes& sdyx) {
    double a[lanes], b[lanes];
    for (int j = 0; j < lanes; ++j) a[j] = sdy.v[j], b[j] = sdyx.v[j];
    std::int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (int j = 0; j < lanes; ++j) {
            const float xhat = (x[i + j] - mean) * invstd;
            a[j] += static_cast<double>(dy[i + j]);
            b[j] += static_cast<double>(dy[i + j]) * static_cast<double>(xhat);
        }
    for (int j = 0; i + j < n; ++j) {
        const float xhat = (x[i + j] - mean) * invstd;
        a[j] += static_cast<double>(dy[i + j]);
        b[j] += static_cast<double>(dy[i + j]) * static_cast<double>(xhat);
    }
    for (int j = 0; j < lanes; ++j) sdy.v[j] = a[j], sdyx.v[j] = b[j];
}

// y = ((x - mean)·invstd)·g + b over one plane, FP32 (no contraction: the target has no FMA).
MANTISSA_HOT void normalize(const float* x, float* y, std::int64_t n, float mean, float invstd, float g, float b) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = ((x[i] - mean) * invstd) * g + b;
}

// dx = k·(dy - mean_dy - x̂·mean_dy_xhat) over one plane.
MANTISSA_HOT void input_grad(const float* x, const float* dy, float* dx, std::int64_t n, float mean, float invstd,
                             float k, float mean_dy, float mean_dy_xhat) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float xhat = (x[i] - mean) * invstd;
        dx[i] = k * (dy[i] - mean_dy - xhat * mean_dy_xhat);
    }
}

// Channels are independent: with more than one thread they are shared out (each channel's
// arithmetic, its sums and the rounding of its planes of y and dx are the same on any thread, so
// the bits do not depend on the count).
int threads_for(std::int64_t channels, std::int64_t values, int max_threads) {
    if (max_threads <= 1 || values < (std::int64_t{1} << 16)) return 1;
    return static_cast<int>(std::min<std::int64_t>(channels, max_threads));
}


// The values of channel c of sample n: spatial floats.
const float* plane(const float* t, const BatchNormTensors& bn, std::int64_t n, std::int64_t c) {
    return t + (n * bn.channels + c) * bn.spatial;
}
float* plane(float* t, const BatchNormTensors& bn, std::int64_t n, std::int64_t c) {
    return t + (n * bn.channels + c) * bn.spatial;
}

// dx for one channel from dy; the sums over dy in double. Returns Σdy and Σdy·x̂ (for the
// parameters' gradients).
struct ChannelSums {
    double dy = 0, dy_xhat = 0;
};

ChannelSums channel_backward(const BatchNormTensors& bn, std::int64_t c, const float* x, const float* dy, float* dx,
                             std::int64_t batch, float mean, float invstd, float gamma) {
    Lanes sdy, sdyx;
    for (std::int64_t n = 0; n < batch; ++n)
        add_grad_sums(plane(x, bn, n, c), plane(dy, bn, n, c), bn.spatial, mean, invstd, sdy, sdyx);
    ChannelSums s;
    s.dy = sdy.total();
    s.dy_xhat = sdyx.total();
    const double count = static_cast<double>(batch * bn.spatial);
    const float mean_dy = static_cast<float>(s.dy / count);
    const float mean_dy_xhat = static_cast<float>(s.dy_xhat / count);
    const float k = gamma * invstd;
    for (std::int64_t n = 0; n < batch; ++n)
        input_grad(plane(x, bn, n, c), plane(dy, bn, n, c), plane(dx, bn, n, c), bn.spatial, mean, invstd, k, mean_dy,
                   mean_dy_xhat);
    return s;
}

}  // namespace

void CpuBackend::batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x_in, Tensor& y_out,
                                          std::int64_t batch, bool training) {
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    const float* gamma = cpu(*bn.weight).data();
    const float* beta = cpu(*bn.bias).data();
    float* running_mean = cpu(*bn.running_mean).data();
    float* running_var = cpu(*bn.running_var).data();
    float* saved_mean = training ? cpu(*bn.saved_mean).data() : nullptr;
    float* saved_invstd = training ? cpu(*bn.saved_invstd).data() : nullptr;
    const double count = static_cast<double>(batch * bn.spatial);
    const int threads = threads_for(bn.channels, batch * bn.channels * bn.spatial, m_matmul.threads());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t c = 0; c < bn.channels; ++c) {
        float mean, invstd;
        if (training) {
            Lanes sum;
            for (std::int64_t n = 0; n < batch; ++n) add_sum(plane(x, bn, n, c), bn.spatial, sum);
            const double mean_d = sum.total() / count;
            Lanes sq;
            for (std::int64_t n = 0; n < batch; ++n) add_squares(plane(x, bn, n, c), bn.spatial, mean_d, sq);
            const double squares = sq.total();
            const double var_biased = squares / count;
            const double var_unbiased = squares / (count - 1);  // count > 1: checked by the wrapper
            mean = static_cast<float>(mean_d);
            invstd = static_cast<float>(1.0 / std::sqrt(var_biased + bn.eps));
            saved_mean[c] = mean;
            saved_invstd[c] = invstd;
            running_mean[c] = static_cast<float>((1.0 - bn.momentum) * static_cast<double>(running_mean[c]) +
                                                 bn.momentum * mean_d);
            running_var[c] = static_cast<float>((1.0 - bn.momentum) * static_cast<double>(running_var[c]) +
                                                bn.momentum * var_unbiased);
        } else {
            mean = running_mean[c];
            invstd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + bn.eps));
        }
        const float g = gamma[c], b = beta[c];
        for (std::int64_t n = 0; n < batch; ++n) {
            normalize(plane(x, bn, n, c), plane(y, bn, n, c), bn.spatial, mean, invstd, g, b);
            round_output(y_out.format(), plane(y, bn, n, c), bn.spatial);
        }
    }
    if (training) {
        for (Tensor* t : {bn.running_mean, bn.running_var, bn.saved_mean, bn.saved_invstd})
            round_output(t->format(), cpu(*t).data(), bn.channels);
    }
}

void CpuBackend::batchnorm2d_backward_impl(BatchNormTensors& bn, const Tensor& x_in, const Tensor& dy_in,
                                           Tensor& dx_out, std::int64_t batch) {
    const float* x = cpu(x_in).data();
    const float* dy = cpu(dy_in).data();
    const float* gamma = cpu(*bn.weight).data();
    const float* mean = cpu(*bn.saved_mean).data();
    const float* invstd = cpu(*bn.saved_invstd).data();
    float* grad_gamma = cpu(*bn.grad_weight).data();
    float* grad_beta = cpu(*bn.grad_bias).data();
    const std::int64_t n = batch * bn.channels * bn.spatial;
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, n, true, &sdy);
    float* dx = cpu(dx_out).data();
    // No dy shadow: dx's is dx before its rounding, kept plane by plane where it may flush.
    UnroundedPieces unrounded_planes(sdx, sdy, dx_out.format(), batch * bn.channels, bn.spatial);
    const int threads = threads_for(bn.channels, n, m_matmul.threads());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t c = 0; c < bn.channels; ++c) {
        const ChannelSums s = channel_backward(bn, c, x, dy, dx, batch, mean[c], invstd[c], gamma[c]);
        grad_beta[c] = static_cast<float>(s.dy);
        grad_gamma[c] = static_cast<float>(s.dy_xhat);
        if (sdx && sdy) channel_backward(bn, c, x, sdy, sdx, batch, mean[c], invstd[c], gamma[c]);
        for (std::int64_t i = 0; i < batch; ++i) {
            unrounded_planes.before_rounding(i * bn.channels + c, plane(dx, bn, i, c));
            round_output(dx_out.format(), plane(dx, bn, i, c), bn.spatial);
        }
    }
    if (unrounded_planes.unneeded(dx)) drop_shadow(dx_out);
    round_output(bn.grad_weight->format(), grad_gamma, bn.channels);
    round_output(bn.grad_bias->format(), grad_beta, bn.channels);
}

}  // namespace mantissa
