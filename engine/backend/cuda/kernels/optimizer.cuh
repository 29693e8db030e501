// optimizer: fused SGD (momentum, weight decay) and AdamW (decoupled weight decay) over one
// parameter, torch's formulas, FP32 arithmetic and FP32 state. The new value is computed from the
// parameter as stored and written back rounded to the parameter's format, once: the FP32 master
// (master weights on) or the low-precision stored weights (off), to nearest or, with a
// compensation buffer, Kahan-compensated, or with a key stochastically (the element's arithmetic:
// optimizer_update.cuh; the key drawn on the device by draw_stochastic_key). Counted
// here: the updates that change the weight in FP32 (fp32(w + u) != w), and of those the ones lost
// to the stored precision (the weight, and its compensation if any, unchanged); an FP32 parameter
// loses none by construction, and an update too small to move an FP32 value is in neither count.
// The gradient is read with its pending unscale multiplier (see unscale_check.cuh).
// `skip` (a device flag, the fused check's found_inf) makes the whole kernel a no-op, so the skip
// decision never visits the host. sgd_prepare and adamw_prepare compute the scalars of a step
// from a device step counter and a device learning rate, for captured steps. Bit-identical to the
// CPU (same operations, --fmad=false, IEEE division and square root).
// The reference: CpuBackend::sgd_step / adamw_step (cpu_optimizer.cpp).
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/kernels/optimizer_update.cuh"

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

// The weight store of a kernel: Kahan's compensation, or the key the draw kernel left (null: none).
__device__ __forceinline__ WeightStore weight_store(void* comp, const std::uint64_t* key) {
    WeightStore how;
    how.comp = comp;
    how.stochastic = key != nullptr;
    how.key = key ? *key : 0;
    return how;
}

__global__ void sgd_kernel(void* p, void* comp, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                           float g_mul, const float* g_mul_dev, float* buf, std::int64_t n, SgdScalars s,
                           const SgdScalars* s_dev, unsigned long long* counts, const int* skip) {
    if (skip && *skip) return;
    if (s_dev) s = *s_dev;
    const float multiplier = g_mul_dev ? *g_mul_dev : g_mul;
    const WeightStore how = weight_store(comp, key);
    unsigned long long changed = 0, lost = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float old = load_value(p, p_fmt, i);
        const float gi = apply_multiplier(load_value(g, g_fmt, i), multiplier);
        const float fresh = sgd_fresh(old, gi, buf ? buf + i : nullptr, s);
        const UpdateOutcome r = store_update(p, how, p_fmt, i, old, fresh);
        changed += r.changed;
        lost += r.lost;
    }
    add_update_counts(changed, lost, counts);
}

__global__ void adamw_kernel(void* p, void* comp, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                             float g_mul, const float* g_mul_dev, float* m, float* v, std::int64_t n, AdamWScalars s,
                             const AdamWScalars* s_dev, unsigned long long* counts, const int* skip) {
    if (skip && *skip) return;
    if (s_dev) s = *s_dev;
    const float multiplier = g_mul_dev ? *g_mul_dev : g_mul;
    const WeightStore how = weight_store(comp, key);
    unsigned long long changed = 0, lost = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const float old = load_value(p, p_fmt, i);
        const float gi = apply_multiplier(load_value(g, g_fmt, i), multiplier);
        float mi = m[i], vi = v[i];
        const float fresh = adamw_fresh(old, gi, mi, vi, s);
        m[i] = mi;
        v[i] = vi;
        const UpdateOutcome r = store_update(p, how, p_fmt, i, old, fresh);
        changed += r.changed;
        lost += r.lost;
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
    *out = adamw_scalars(lr, beta1, beta2, eps, weight_decay, t);
}

// The key of the next rounding pass (stochastic.cuh), for the optimizer kernel launched next on
// the stream; words[0] counts the passes drawn. Nothing on a skipped step: the CPU draws no key
// for an update it does not make.
__global__ void draw_stochastic_key_kernel(std::uint64_t* words, std::uint64_t seed, const int* skip) {
    if (skip && *skip) return;
    words[1] = stochastic_key(seed, words[0]);
    words[0] = words[0] + 1;
}

// ---- launchers

void launch_draw_stochastic_key(std::uint64_t* words, std::uint64_t seed, const int* skip, cudaStream_t stream) {
    draw_stochastic_key_kernel<<<1, 1, 0, stream>>>(words, seed, skip);
    check_launch("draw_stochastic_key");
}

void launch_sgd(void* p, void* compensation, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                float g_mul, const float* g_mul_dev, float* buf, std::int64_t n, SgdScalars s,
                const SgdScalars* scalars_dev, unsigned long long* counts, const int* skip, cudaStream_t stream) {
    if (n <= 0) return;
    sgd_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(p, compensation, key, p_fmt, g, g_fmt, g_mul, g_mul_dev,
                                                             buf, n, s, scalars_dev, counts, skip);
    check_launch("sgd");
}

void launch_adamw(void* p, void* compensation, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                  float g_mul, const float* g_mul_dev, float* m, float* v, std::int64_t n, AdamWScalars s,
                  const AdamWScalars* scalars_dev, unsigned long long* counts, const int* skip, cudaStream_t stream) {
    if (n <= 0) return;
    adamw_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(p, compensation, key, p_fmt, g, g_fmt, g_mul,
                                                               g_mul_dev, m, v, n, s, scalars_dev, counts, skip);
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
