// CpuBackend: the fused unscale + non-finite check over all gradients, with the per-tensor
// statistics (amax, exponent histogram) when asked, in one pass over memory: each tensor is
// walked in blocks of 2048 values, unscaled and checked, then tallied while the block is in the L1
// cache. As torch's _amp_foreach_non_finite_check_and_unscale_, values are multiplied by inv_scale
// in FP32 and stay FP32; when inv_scale is 1 the values are not rewritten (x·1 == x).
//
// The sum of squares is accumulated in double in four lanes, lane k taking the elements whose
// index is k mod 4 and the last n mod 4 elements of a tensor going to lane 0, then summed as
// (l0 + l1) + (l2 + l3): the AVX2 kernel keeps the four lanes in one register and adds in exactly
// that order, so its result is bit-identical to the scalar loop (the baseline x86-64 path).
// Tensors are shared out whole among the threads, never split (cpu_parallel.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MANTISSA_X86 1
#endif

namespace mantissa {

namespace {

// A thread per 2^16 gradient values (tens of microseconds of work), at most one per tensor.
constexpr std::int64_t unscale_min_per_thread = std::int64_t{1} << 16;

// The running state of one tensor's pass.
struct Lanes {
    double acc[4] = {0, 0, 0, 0};
    std::uint32_t bad = 0;  // non-zero when an inf/NaN was seen
};

// g[0..n) *= inv_scale (not written when inv_scale is 1); n is a multiple of 4 except in a
// tensor's last block, whose remainder goes to lane 0.
void unscale_scalar(float* g, std::int64_t n, float inv_scale, Lanes& s) {
    auto visit = [&](std::int64_t i, int lane) {
        const float v = g[i] * inv_scale;  // exact when inv_scale is 1
        if (inv_scale != 1.0f) g[i] = v;
        std::uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        s.bad |= static_cast<std::uint32_t>((bits & 0x7fffffffu) >= 0x7f800000u);
        const double d = v;
        s.acc[lane] += d * d;
    };
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) visit(i + k, k);
    for (; i < n; ++i) visit(i, 0);
}

#ifdef MANTISSA_X86
// The same in AVX2 (no FMA: d·d is rounded before the addition, as in the scalar loop).
__attribute__((target("avx2"))) void unscale_avx2(float* g, std::int64_t n, float inv_scale, Lanes& s) {
    __m256d acc = _mm256_loadu_pd(s.acc);
    __m256i bad = _mm256_setzero_si256();
    const __m256 scale = _mm256_set1_ps(inv_scale);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i max_finite = _mm256_set1_epi32(0x7f7fffff);
    const bool rescale = inv_scale != 1.0f;
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(g + i);
        if (rescale) {
            v = _mm256_mul_ps(v, scale);
            _mm256_storeu_ps(g + i, v);
        }
        const __m256i mag = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(mag, max_finite));
        const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        acc = _mm256_add_pd(acc, _mm256_mul_pd(lo, lo));
        acc = _mm256_add_pd(acc, _mm256_mul_pd(hi, hi));
    }
    _mm256_storeu_pd(s.acc, acc);
    s.bad |= static_cast<std::uint32_t>(!_mm256_testz_si256(bad, bad));
    unscale_scalar(g + i, n - i, inv_scale, s);  // i is a multiple of 4: the lanes line up
}

#endif

void unscale_block(float* g, std::int64_t n, float inv_scale, Lanes& s) {
#ifdef MANTISSA_X86
    if (cpu_detail::cpu_has_avx2()) {
        unscale_avx2(g, n, inv_scale, s);
        return;
    }
#endif
    unscale_scalar(g, n, inv_scale, s);
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
    // The tensors go to the threads whole (cpu_parallel.h): each tensor's sum keeps its order, and
    // the sums are added in tensor order below, so the result is the same on any thread count.
    std::int64_t total = 0;
    for (const Tensor* g : grads) total += g->numel();
    const int threads = std::min<int>(pass_threads(total, unscale_min_per_thread), static_cast<int>(grads.size()));
    if (m_tallies.size() < static_cast<std::size_t>(threads)) m_tallies.resize(static_cast<std::size_t>(threads));
    m_unscale_passes.resize(grads.size());
    cpu_detail::for_items(static_cast<std::int64_t>(grads.size()), threads, [&](std::int64_t t, int worker) {
        float* g = static_cast<CpuTensor*>(grads[static_cast<std::size_t>(t)])->data();
        const std::int64_t n = grads[static_cast<std::size_t>(t)]->numel();
        const bool summarise = summaries && want_summary[static_cast<std::size_t>(t)];
        ExponentTally& tally = m_tallies[static_cast<std::size_t>(worker)];
        if (summarise) tally.reset();
        Lanes lanes;
        cpu_detail::for_pieces(0, n, [&](std::int64_t start, std::int64_t end) {
            unscale_block(g + start, end - start, inv_scale, lanes);
            if (summarise) tally.add(g + start, static_cast<std::size_t>(end - start));
        });
        m_unscale_passes[static_cast<std::size_t>(t)] = {(lanes.acc[0] + lanes.acc[1]) + (lanes.acc[2] + lanes.acc[3]),
                                                         lanes.bad != 0};
        if (summarise) {
            GradientSummary& s = (*summaries)[static_cast<std::size_t>(t)];
            s.amax = 0;
            s.nonfinite = 0;
            s.exponents.counts.fill(0);
            tally.finish(ExponentHistogram::min_exponent, s.exponents.counts.data(), ExponentHistogram::bins, &s.amax,
                         &s.nonfinite);
        }
    });
    UnscaleResult result;
    for (std::size_t t = 0; t < grads.size(); ++t) {
        result.sum_squares += m_unscale_passes[t].sum_squares;
        if (m_unscale_passes[t].nonfinite && !result.found_nonfinite) {
            result.found_nonfinite = true;
            result.first_nonfinite = static_cast<int>(t);
        }
    }
    return result;
}

}  // namespace mantissa
