// optimizer: fused SGD (momentum, weight decay) and AdamW (decoupled weight decay) over one
// parameter, torch's formulas, FP32 arithmetic and FP32 state. The new value is computed from the
// parameter as stored and written back rounded to the parameter's format, once: the FP32 master
// (master weights on) or the low-precision stored weights (off). Counted here: the updates that
// change the weight in FP32 (fp32(w + u) != w), and of those the ones lost to the stored precision
// (the rounded value stored equals the old one); an FP32 parameter loses none by construction, and
// an update too small to move an FP32 value is in neither count. The gradient is read with its
// pending unscale multiplier (see unscale_check.cuh).
// `skip` (a device flag, the fused check's found_inf) makes the whole kernel a no-op, so the skip
// decision never visits the host. sgd_prepare and adamw_prepare compute the scalars of a step
// from a device step counter and a device learning rate, for captured steps. Bit-identical to the CPU (same operations, --fmad=false, IEEE
// division and square root).
// The reference: CpuBackend::sgd_step / adamw_step (cpu_optimizer.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

// counts[0] += updates that change the FP32 value, counts[1] += of those, lost to the stored format.
__device__ __forceinline__ void add_update_counts(unsigned long long changed, unsigned long long lost,
                                                  unsigned long long* counts) {
    changed = block_sum(changed);
    lost = block_sum(lost);
    if (threadIdx.x == 0 && counts) {
        if (changed) atomicAdd(counts + 0, changed);
        if (lost) atomicAdd(counts + 1, lost);
    }
}

__global__ void sgd_kernel(void* p, int p_fmt, const void* g, int g_fmt, float g_mul, const float* g_mul_dev,
                           float* buf, std::int64_t n, SgdScalars s, const SgdScalars* s_dev,
                           unsigned long long* counts, const int* skip) {
    if (skip && *skip) return;
    if (s_dev) s = *s_dev;
    const float multiplier = g_mul_dev ? *g_mul_dev : g_mul;
    unsigned long long changed = 0, lost = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float old = load_value(p, p_fmt, i);
        float d = apply_multiplier(load_value(g, g_fmt, i), multiplier);
        if (s.weight_decay != 0.0f) d = d + s.weight_decay * old;
        if (buf) {
            buf[i] = s.first_step ? d : s.momentum * buf[i] + d;
            d = buf[i];
        }
        const float fresh = old + -s.lr * d;
        const bool changes = fresh != old;  // the update survives in FP32 (a NaN counts as a change)
        const float stored = store_rounded(p, p_fmt, i, fresh);
        changed += changes;
        lost += changes && stored == old;
    }
    add_update_counts(changed, lost, counts);
}

__global__ void adamw_kernel(void* p, int p_fmt, const void* g, int g_fmt, float g_mul, const float* g_mul_dev,
                             float* m, float* v, std::int64_t n, AdamWScalars s, const AdamWScalars* s_dev,
                             unsigned long long* counts, const int* skip) {
    if (skip && *skip) return;
    if (s_dev) s = *s_dev;
    const float multiplier = g_mul_dev ? *g_mul_dev : g_mul;
    unsigned long long changed = 0, lost = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float old = load_value(p, p_fmt, i);
        const float gi = apply_multiplier(load_value(g, g_fmt, i), multiplier);
        const float decayed = s.decays ? old * s.decay : old;
        m[i] = m[i] + s.w1 * (gi - m[i]);
        v[i] = v[i] * s.beta2 + s.w2 * (gi * gi);
        const float denom = sqrtf(v[i]) / s.bc2_sqrt + s.eps;
        const float fresh = decayed + -s.step_size * (m[i] / denom);
        const bool changes = fresh != old;  // the update survives in FP32 (a NaN counts as a change)
        const float stored = store_rounded(p, p_fmt, i, fresh);
        changed += changes;
        lost += changes && stored == old;
    }
    add_update_counts(changed, lost, counts);
}

__global__ void sgd_prepare_kernel(SgdScalars* out, long long* step, const double* lr, double momentum,
                                   double weight_decay, const int* skip) {
    if (skip && *skip) return;
    SgdScalars s;
    s.lr = static_cast<float>(*lr);
    s.weight_decay = static_cast<float>(weight_decay);
    s.momentum = static_cast<float>(momentum);
    s.first_step = *step == 0 ? 1 : 0;
    *step = *step + 1;
    *out = s;
}

__global__ void adamw_prepare_kernel(AdamWScalars* out, long long* step, double lr, const double* lr_dev,
                                     double beta1, double beta2, double eps, double weight_decay, const int* skip) {
    if (skip && *skip) return;
    if (lr_dev) lr = *lr_dev;
    const long long t = *step + 1;
    *step = t;
    const double bc1 = 1.0 - pow(beta1, static_cast<double>(t));
    const double bc2 = 1.0 - pow(beta2, static_cast<double>(t));
    AdamWScalars s;
    s.decay = static_cast<float>(1.0 - lr * weight_decay);
    s.step_size = static_cast<float>(lr / bc1);
    s.bc2_sqrt = static_cast<float>(sqrt(bc2));
    s.w1 = static_cast<float>(1.0 - beta1);
    s.w2 = static_cast<float>(1.0 - beta2);
    s.beta2 = static_cast<float>(beta2);
    s.eps = static_cast<float>(eps);
    s.decays = weight_decay != 0.0 && lr != 0.0;
    *out = s;
}

// ---- launchers

void launch_sgd(void* p, int p_fmt, const void* g, int g_fmt, float g_mul, const float* g_mul_dev, float* buf,
                std::int64_t n, SgdScalars s, const SgdScalars* scalars_dev, unsigned long long* counts,
                const int* skip, cudaStream_t stream) {
    if (n <= 0) return;
    sgd_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(p, p_fmt, g, g_fmt, g_mul, g_mul_dev, buf, n, s,
                                                             scalars_dev, counts, skip);
    check_launch("sgd");
}

void launch_adamw(void* p, int p_fmt, const void* g, int g_fmt, float g_mul, const float* g_mul_dev, float* m, float* v,
                  std::int64_t n, AdamWScalars s, const AdamWScalars* scalars_dev, unsigned long long* counts,
                  const int* skip, cudaStream_t stream) {
    if (n <= 0) return;
    adamw_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(p, p_fmt, g, g_fmt, g_mul, g_mul_dev, m, v, n, s,
                                                               scalars_dev, counts, skip);
    check_launch("adamw");
}

void launch_sgd_prepare(SgdScalars* out, long long* step, const double* lr_dev, double momentum, double weight_decay,
                        const int* skip, cudaStream_t stream) {
    sgd_prepare_kernel<<<1, 1, 0, stream>>>(out, step, lr_dev, momentum, weight_decay, skip);
    check_launch("sgd_prepare");
}

void launch_adamw_prepare(AdamWScalars* out, long long* step, double lr, double beta1, double beta2, double eps,
                          double weight_decay, const int* skip, cudaStream_t stream, const double* lr_dev) {
    adamw_prepare_kernel<<<1, 1, 0, stream>>>(out, step, lr, lr_dev, beta1, beta2, eps, weight_decay, skip);
    check_launch("adamw_prepare");
}

}  // namespace mantissa::cuda
