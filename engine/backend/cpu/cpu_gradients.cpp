// CpuBackend: the fused unscale + non-finite check over all gradients (one pass per tensor),
// with the per-tensor statistics (amax, exponent histogram) when asked. As torch's
// _amp_foreach_non_finite_check_and_unscale_, values are multiplied by inv_scale in FP32 and
// stay FP32. The pass is built for AVX2 and for baseline x86-64 (chosen at run time).
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "error.h"

namespace mantissa {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MANTISSA_HOT
#endif

// g *= inv_scale (in place, one pass); returns the sum of squares (double: tiny and huge gradients keep
// their contribution; four accumulators so the loop is not bound by the addition's latency) and
// sets *nonfinite when any value is inf/NaN.
MANTISSA_HOT double unscale_pass(float* __restrict g, std::int64_t n, float inv_scale, bool* nonfinite) {
    std::uint32_t bad = 0;
    double acc[4] = {0, 0, 0, 0};
    auto visit = [&](std::int64_t i, int lane) {
        const float v = g[i] * inv_scale;  // exact when inv_scale is 1
        g[i] = v;
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        bad |= static_cast<std::uint32_t>((bits & 0x7fffffffu) >= 0x7f800000u);
        const double d = v;
        acc[lane] += d * d;
    };
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) visit(i + k, k);
    for (; i < n; ++i) visit(i, 0);
    *nonfinite = bad != 0;
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

UnscaleResult CpuBackend::unscale_and_check(const std::vector<Tensor*>& grads, float inv_scale,
                                            const std::vector<bool>& want_summary,
                                            std::vector<GradientSummary>* summaries) {
    if (summaries) {
        if (want_summary.size() != grads.size())
            throw Error("unscale_and_check: want_summary must have one flag per gradient.");
        summaries->resize(grads.size());
    }
    UnscaleResult result;
    for (std::size_t t = 0; t < grads.size(); ++t) {
        float* g = static_cast<CpuTensor*>(grads[t])->data();
        const std::int64_t n = grads[t]->numel();
        bool nonfinite = false;
        result.sum_squares += unscale_pass(g, n, inv_scale, &nonfinite);
        if (nonfinite && !result.found_nonfinite) {
            result.found_nonfinite = true;
            result.first_nonfinite = static_cast<int>(t);
        }
        if (summaries && want_summary[t]) {
            GradientSummary& s = (*summaries)[t];
            s.amax = 0;
            s.nonfinite = 0;
            s.exponents.counts.fill(0);
            exponent_histogram(g, static_cast<std::size_t>(n), 1.0f, ExponentHistogram::min_exponent,
                               s.exponents.counts.data(), ExponentHistogram::bins, &s.amax,
                               &s.nonfinite);
        }
    }
    return result;
}

}  // namespace mantissa
