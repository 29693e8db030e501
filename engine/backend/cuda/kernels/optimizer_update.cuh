// One parameter element of the optimizer kernels (optimizer.cuh): SGD's and AdamW's new FP32
// value, and its store in the parameter's format, rounded to nearest, stochastically
// (stochastic.cuh) or Kahan-compensated. Host and device alike (MANTISSA_HD, as convert.cuh), so
// that tests/engine/cuda_host runs these same functions on the CPU against CpuBackend's optimizers
// (cpu_optimizer.cpp), bit for bit: the kernels add only the grid-stride loop and the block sums
// of the counts. FP32 arithmetic in the
// CPU's order, no fused multiply-add (the kernels build with --fmad=false, the host tests with
// -ffp-contract=off), IEEE division and square root.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

// Whether an update changed the FP32 value (a NaN counts as a change), and whether its store then
// lost it (UpdateCounts::nonzero_updates and lost_updates).
struct UpdateOutcome {
    bool changed = false, lost = false;
};

MANTISSA_HD float ieee_sqrt(float x) {
#ifdef __CUDA_ARCH__
    return __fsqrt_rn(x);
#else
    return std::sqrt(x);
#endif
}

// AdamW's scalars of step t (from 1) as torch computes them: in double, applied as FP32
// (cpu_optimizer.cpp). On the host for an eager step, on the device from the device step counter
// for a captured one (optimizer.cuh, adamw_prepare_kernel).
MANTISSA_HD AdamWScalars adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                                       long long t) {
    const double bc1 = 1.0 - pow(beta1, static_cast<double>(t));
    const double bc2 = 1.0 - pow(beta2, static_cast<double>(t));
    AdamWScalars s{};
    s.decay = static_cast<float>(1.0 - lr * weight_decay);
    s.step_size = static_cast<float>(lr / bc1);
    s.bc2_sqrt = static_cast<float>(sqrt(bc2));
    s.w1 = static_cast<float>(1.0 - beta1);
    s.w2 = static_cast<float>(1.0 - beta2);
    s.beta2 = static_cast<float>(beta2);
    s.eps = static_cast<float>(eps);
    s.decays = weight_decay != 0.0 && lr != 0.0;
    return s;
}

// SGD (torch's): d = g + weight_decay·old (g where the decay is 0), through the momentum buffer when there is one (null:
// none; the first step starts it at d); the new value old - lr·d.
MANTISSA_HD float sgd_fresh(float old, float g, float* momentum_buf, const SgdScalars& s) {
    float d = g;
    if (s.weight_decay != 0.0f) d = d + s.weight_decay * old;
    if (momentum_buf) {
        *momentum_buf = s.first_step ? d : s.momentum * *momentum_buf + d;
        d = *momentum_buf;
    }
    return old + -s.lr * d;
}

// AdamW (torch's, decoupled weight decay): m and v updated in place, the new value returned.
MANTISSA_HD float adamw_fresh(float old, float g, float& m, float& v, const AdamWScalars& s) {
    const float decayed = s.decays ? old * s.decay : old;
    m = m + s.w1 * (g - m);
    v = v * s.beta2 + s.w2 * (g * g);
    const float denom = ieee_sqrt(v) / s.bc2_sqrt + s.eps;
    return decayed + -s.step_size * (m / denom);
}

// How the new values of a parameter are stored: to nearest; stochastically, element i with
// stochastic_bits(key, i) (one key per parameter per step, as the CPU draws them); or with Kahan's
// compensation comp (in the parameter's format).
struct WeightStore {
    void* comp = nullptr;
    bool stochastic = false;
    std::uint64_t key = 0;
};

// Stores `fresh`, element i's new FP32 value (its old value `old`), into p in format fmt as `how`
// says. To nearest or stochastically: lost when the stored value is the old one. With Kahan's
// compensation (docs/numerics.md, "Stochastic rounding and Kahan summation"): y = (fresh - old) +
// c, w' = rnd(old + y), c' = rnd(y - (w' - old)); lost only when neither the weight nor its
// compensation changed.
MANTISSA_HD UpdateOutcome store_update(void* p, const WeightStore& how, int fmt, std::int64_t i, float old,
                                       float fresh) {
    UpdateOutcome r;
    r.changed = fresh != old;
    void* comp = how.comp;
    if (!comp) {
        const float stored = how.stochastic ? store_stochastic(p, fmt, i, fresh, stochastic_bits(how.key, i))
                                            : store_rounded(p, fmt, i, fresh);
        r.lost = r.changed && stored == old;
        return r;
    }
    const float c = load_value(comp, fmt, i);
    const float y = (fresh - old) + c;
    const float stored = store_rounded(p, fmt, i, old + y);
    const float kept = store_rounded(comp, fmt, i, y - (stored - old));
    r.lost = r.changed && stored == old && kept == c;
    return r;
}

}  // namespace mantissa::cuda
