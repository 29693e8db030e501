// CpuBackend: batch normalisation over (batch, spatial) per channel, PyTorch's BatchNorm2d (and
// BatchNorm1d with spatial = 1), forward and backward (docs/numerics.md, "Convolutional ops").
//
// Statistics are FP32 values (autocast keeps norms in FP32): each per-channel sum (Σx, Σ(x-μ)²,
// Σdy, Σdy·x̂) is taken in double over M = batch·spatial values and rounded to FP32 once; the
// per-element arithmetic is FP32:
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
// (the backward is linear in dy). Training thread only.
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {

CpuTensor& cpu(Tensor& t) { return static_cast<CpuTensor&>(t); }
const CpuTensor& cpu(const Tensor& t) { return static_cast<const CpuTensor&>(t); }

void round_output(Format format, float* data, std::int64_t n) {
    if (format != Format::fp32) round_array(format, data, static_cast<std::size_t>(n));
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
    ChannelSums s;
    for (std::int64_t n = 0; n < batch; ++n) {
        const float* xc = plane(x, bn, n, c);
        const float* dyc = plane(dy, bn, n, c);
        for (std::int64_t p = 0; p < bn.spatial; ++p) {
            const float xhat = (xc[p] - mean) * invstd;
            s.dy += static_cast<double>(dyc[p]);
            s.dy_xhat += static_cast<double>(dyc[p]) * static_cast<double>(xhat);
        }
    }
    const double count = static_cast<double>(batch * bn.spatial);
    const float mean_dy = static_cast<float>(s.dy / count);
    const float mean_dy_xhat = static_cast<float>(s.dy_xhat / count);
    const float k = gamma * invstd;
    for (std::int64_t n = 0; n < batch; ++n) {
        const float* xc = plane(x, bn, n, c);
        const float* dyc = plane(dy, bn, n, c);
        float* dxc = plane(dx, bn, n, c);
        for (std::int64_t p = 0; p < bn.spatial; ++p) {
            const float xhat = (xc[p] - mean) * invstd;
            dxc[p] = k * (dyc[p] - mean_dy - xhat * mean_dy_xhat);
        }
    }
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
    for (std::int64_t c = 0; c < bn.channels; ++c) {
        float mean, invstd;
        if (training) {
            double sum = 0;
            for (std::int64_t n = 0; n < batch; ++n) {
                const float* xc = plane(x, bn, n, c);
                for (std::int64_t p = 0; p < bn.spatial; ++p) sum += static_cast<double>(xc[p]);
            }
            const double mean_d = sum / count;
            double squares = 0;
            for (std::int64_t n = 0; n < batch; ++n) {
                const float* xc = plane(x, bn, n, c);
                for (std::int64_t p = 0; p < bn.spatial; ++p) {
                    const double d = static_cast<double>(xc[p]) - mean_d;
                    squares += d * d;
                }
            }
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
            const float* xc = plane(x, bn, n, c);
            float* yc = plane(y, bn, n, c);
            for (std::int64_t p = 0; p < bn.spatial; ++p) yc[p] = ((xc[p] - mean) * invstd) * g + b;
        }
    }
    round_output(y_out.format(), y, batch * bn.channels * bn.spatial);
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
    float* sdx = trace_backward(dy_in, dx_out, n, &sdy);
    float* dx = cpu(dx_out).data();
    for (std::int64_t c = 0; c < bn.channels; ++c) {
        const ChannelSums s = channel_backward(bn, c, x, dy, dx, batch, mean[c], invstd[c], gamma[c]);
        grad_beta[c] = static_cast<float>(s.dy);
        grad_gamma[c] = static_cast<float>(s.dy_xhat);
        if (sdx && sdy) channel_backward(bn, c, x, sdy, sdx, batch, mean[c], invstd[c], gamma[c]);
    }
    if (sdx && !sdy) std::memcpy(sdx, dx, static_cast<std::size_t>(n) * sizeof(float));
    round_output(dx_out.format(), dx, n);
    round_output(bn.grad_weight->format(), grad_gamma, bn.channels);
    round_output(bn.grad_bias->format(), grad_beta, bn.channels);
}

}  // namespace mantissa
