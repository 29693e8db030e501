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
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_batchnorm_kernels.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "backend/cpu/cpu_unrounded_pieces.h"
#include "numeric/convert.h"

namespace mantissa {

namespace cpu_detail {

double BatchNormLanes::total() const {
    double a[batchnorm_lanes];
    for (int i = 0; i < batchnorm_lanes; ++i) a[i] = v[i];
    for (int width = batchnorm_lanes / 2; width >= 1; width /= 2)
        for (int i = 0; i < width; ++i) a[i] += a[i + width];
    return a[0];
}

void batchnorm_add_sum_plain(const float* x, std::int64_t n, BatchNormLanes& s) {
    constexpr int lanes = batchnorm_lanes;
    double a[lanes];
    for (int j = 0; j < lanes; ++j) a[j] = s.v[j];
    std::int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (int j = 0; j < lanes; ++j) a[j] += static_cast<double>(x[i + j]);
    for (int j = 0; i + j < n; ++j) a[j] += static_cast<double>(x[i + j]);
    for (int j = 0; j < lanes; ++j) s.v[j] = a[j];
}

void batchnorm_add_squares_plain(const float* x, std::int64_t n, double mean, BatchNormLanes& s) {
    constexpr int lanes = batchnorm_lanes;
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

void batchnorm_add_grad_sums_plain(const float* x, const float* dy, std::int64_t n, float mean, float invstd,
                                   BatchNormLanes& sdy, BatchNormLanes& sdyx) {
    constexpr int lanes = batchnorm_lanes;
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

#if defined(__x86_64__) && defined(__GNUC__)
#define MANTISSA_BATCHNORM_AVX2 1

namespace {

// The 16 lanes in four registers, lanes 4k .. 4k+3 in r[k]: value i of a group of 16 meets
// lane i, as in the plain loops, whose bodies the compiler left half scalar (a profile of the
// reference CNN put these sums at 16% of its bf16 step).
struct LaneRegisters {
    __m256d r[4];
};

[[gnu::target("avx2")]] inline LaneRegisters load_lanes(const BatchNormLanes& s) {
    return {{_mm256_loadu_pd(s.v), _mm256_loadu_pd(s.v + 4), _mm256_loadu_pd(s.v + 8), _mm256_loadu_pd(s.v + 12)}};
}

[[gnu::target("avx2")]] inline void store_lanes(const LaneRegisters& l, BatchNormLanes& s) {
    for (int k = 0; k < 4; ++k) _mm256_storeu_pd(s.v + 4 * k, l.r[k]);
}

// Eight floats widened to double: the first four and the last four.
[[gnu::target("avx2")]] inline __m256d low_half(__m256 v) {
    return _mm256_cvtps_pd(_mm256_castps256_ps128(v));
}
[[gnu::target("avx2")]] inline __m256d high_half(__m256 v) {
    return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

[[gnu::target("avx2")]] void add_sum_avx2(const float* x, std::int64_t n, BatchNormLanes& s) {
    LaneRegisters a = load_lanes(s);
    std::int64_t i = 0;
    for (; i + batchnorm_lanes <= n; i += batchnorm_lanes) {
        const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        a.r[0] = _mm256_add_pd(a.r[0], low_half(v0));
        a.r[1] = _mm256_add_pd(a.r[1], high_half(v0));
        a.r[2] = _mm256_add_pd(a.r[2], low_half(v1));
        a.r[3] = _mm256_add_pd(a.r[3], high_half(v1));
    }
    store_lanes(a, s);
    for (int j = 0; i + j < n; ++j) s.v[j] += static_cast<double>(x[i + j]);
}

[[gnu::target("avx2")]] inline __m256d add_square(__m256d acc, __m256d x, __m256d mean) {
    const __m256d d = _mm256_sub_pd(x, mean);
    return _mm256_add_pd(acc, _mm256_mul_pd(d, d));
}

[[gnu::target("avx2")]] void add_squares_avx2(const float* x, std::int64_t n, double mean, BatchNormLanes& s) {
    LaneRegisters a = load_lanes(s);
    const __m256d m = _mm256_set1_pd(mean);
    std::int64_t i = 0;
    for (; i + batchnorm_lanes <= n; i += batchnorm_lanes) {
        const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        a.r[0] = add_square(a.r[0], low_half(v0), m);
        a.r[1] = add_square(a.r[1], high_half(v0), m);
        a.r[2] = add_square(a.r[2], low_half(v1), m);
        a.r[3] = add_square(a.r[3], high_half(v1), m);
    }
    store_lanes(a, s);
    for (int j = 0; i + j < n; ++j) {
        const double d = static_cast<double>(x[i + j]) - mean;
        s.v[j] += d * d;
    }
}

[[gnu::target("avx2")]] void add_grad_sums_avx2(const float* x, const float* dy, std::int64_t n, float mean,
                                                float invstd, BatchNormLanes& sdy, BatchNormLanes& sdyx) {
    LaneRegisters a = load_lanes(sdy), b = load_lanes(sdyx);
    const __m256 m = _mm256_set1_ps(mean), k = _mm256_set1_ps(invstd);
    std::int64_t i = 0;
    for (; i + batchnorm_lanes <= n; i += batchnorm_lanes) {
        for (int h = 0; h < 2; ++h) {
            const __m256 g = _mm256_loadu_ps(dy + i + 8 * h);
            const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8 * h), m), k);
            const __m256d g0 = low_half(g), g1 = high_half(g);
            a.r[2 * h] = _mm256_add_pd(a.r[2 * h], g0);
            a.r[2 * h + 1] = _mm256_add_pd(a.r[2 * h + 1], g1);
            b.r[2 * h] = _mm256_add_pd(b.r[2 * h], _mm256_mul_pd(g0, low_half(xhat)));
            b.r[2 * h + 1] = _mm256_add_pd(b.r[2 * h + 1], _mm256_mul_pd(g1, high_half(xhat)));
        }
    }
    store_lanes(a, sdy);
    store_lanes(b, sdyx);
    for (int j = 0; i + j < n; ++j) {
        const float xhat = (x[i + j] - mean) * invstd;
        sdy.v[j] += static_cast<double>(dy[i + j]);
        sdyx.v[j] += static_cast<double>(dy[i + j]) * static_cast<double>(xhat);
    }
}

}  // namespace
#endif

void batchnorm_add_sum(const float* x, std::int64_t n, BatchNormLanes& s) {
#ifdef MANTISSA_BATCHNORM_AVX2
    if (cpu_has_avx2()) return add_sum_avx2(x, n, s);
#endif
    batchnorm_add_sum_plain(x, n, s);
}

void batchnorm_add_squares(const float* x, std::int64_t n, double mean, BatchNormLanes& s) {
#ifdef MANTISSA_BATCHNORM_AVX2
    if (cpu_has_avx2()) return add_squares_avx2(x, n, mean, s);
#endif
    batchnorm_add_squares_plain(x, n, mean, s);
}

void batchnorm_add_grad_sums(const float* x, const float* dy, std::int64_t n, float mean, float invstd,
                             BatchNormLanes& sdy, BatchNormLanes& sdyx) {
#ifdef MANTISSA_BATCHNORM_AVX2
    if (cpu_has_avx2()) return add_grad_sums_avx2(x, dy, n, mean, invstd, sdy, sdyx);
#endif
    batchnorm_add_grad_sums_plain(x, dy, n, mean, invstd, sdy, sdyx);
}

}  // namespace cpu_detail

namespace {

using cpu_detail::BatchNormLanes;

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

#ifdef MANTISSA_ROUND_LANES
// The same two passes with the rounding to the output's format in the registers before the store:
// the same products and sums, in the same order (no FMA), and round_output's bits, where the plain
// pass and round_output store the plane, read it back and store it again (those roundings and the
// may-flush test below were about 7% of the reference CNN's bf16 step: docs/benchmarks.md). The
// last n mod 8 values through masked loads and stores.
template <lanes::Method M>
MANTISSA_LANES_TARGET void normalize_lanes(const lanes::Rounding& rounding, const float* x, float* y, std::int64_t n,
                                           float mean, float invstd, float g, float b) {
    const lanes::Rounding r = rounding;
    const __m256 m = _mm256_set1_ps(mean), k = _mm256_set1_ps(invstd), gv = _mm256_set1_ps(g), bv = _mm256_set1_ps(b);
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), k), gv), bv);
        _mm256_storeu_ps(y + i, lanes::round8<M>(v, r));
    }
    if (i < n) {
        const __m256i tail = lanes::first_lanes(n - i);
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, tail), m), k), gv), bv);
        _mm256_maskstore_ps(y + i, tail, lanes::round8<M>(v, r));
    }
}

MANTISSA_LANES_TARGET inline __m256 input_grad_vector(__m256 x, __m256 dy, __m256 mean, __m256 invstd, __m256 k,
                                                      __m256 mean_dy, __m256 mean_dy_xhat) {
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(x, mean), invstd);
    return _mm256_mul_ps(k, _mm256_sub_ps(_mm256_sub_ps(dy, mean_dy), _mm256_mul_ps(xhat, mean_dy_xhat)));
}

// Check: also whether some value, before its rounding, is one that rounding_may_flush looks for
// (non-zero, magnitude bits below `below`), so that gradient tracing learns it in the same pass.
template <lanes::Method M, bool Check>
MANTISSA_LANES_TARGET bool input_grad_lanes(const lanes::Rounding& rounding, const float* x, const float* dy, float* dx,
                                            std::int64_t n, float mean, float invstd, float k, float mean_dy,
                                            float mean_dy_xhat, std::uint32_t below) {
    const lanes::Rounding r = rounding;
    const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(invstd), kv = _mm256_set1_ps(k),
                 mdy = _mm256_set1_ps(mean_dy), mdyx = _mm256_set1_ps(mean_dy_xhat);
    const __m256i below_v = _mm256_set1_epi32(static_cast<int>(below));
    __m256i seen = _mm256_setzero_si256();
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = input_grad_vector(_mm256_loadu_ps(x + i), _mm256_loadu_ps(dy + i), m, s, kv, mdy, mdyx);
        if constexpr (Check) seen = _mm256_or_si256(seen, lanes::nonzero_below(v, below_v));
        _mm256_storeu_ps(dx + i, lanes::round8<M>(v, r));
    }
    if (i < n) {
        const __m256i tail = lanes::first_lanes(n - i);
        const __m256 v = input_grad_vector(_mm256_maskload_ps(x + i, tail), _mm256_maskload_ps(dy + i, tail), m, s, kv,
                                           mdy, mdyx);
        if constexpr (Check) seen = _mm256_or_si256(seen, _mm256_and_si256(tail, lanes::nonzero_below(v, below_v)));
        _mm256_maskstore_ps(dx + i, tail, lanes::round8<M>(v, r));
    }
    return !_mm256_testz_si256(seen, seen);
}
#endif

// y's plane, rounded to y's format.
void normalize_rounded(const RoundedStore& out, const float* x, float* y, std::int64_t n, float mean, float invstd,
                       float g, float b) {
#ifdef MANTISSA_ROUND_LANES
    if (out.in_lanes)
        return lanes::with_method(out.rounding.method, [&](auto method) {
            normalize_lanes<decltype(method)::value>(out.rounding, x, y, n, mean, invstd, g, b);
        });
#endif
    normalize(x, y, n, mean, invstd, g, b);
    round_output(out.format, y, n);
}

// dx's plane, rounded to dx's format (out), or as computed (no out: a shadow). With an active
// `unrounded` (gradient tracing, dy without a shadow), plane `piece` of dx before its rounding is
// kept there when its rounding may flush (UnroundedPieces::before_rounding).
void input_grad_rounded(const RoundedStore* out, UnroundedPieces& unrounded, std::int64_t piece, const float* x,
                        const float* dy, float* dx, std::int64_t n, float mean, float invstd, float k, float mean_dy,
                        float mean_dy_xhat) {
#ifdef MANTISSA_ROUND_LANES
    if (out && out->in_lanes) {
        const bool check = unrounded.active();
        const bool may_flush = lanes::with_method(out->rounding.method, [&](auto method) {
            constexpr lanes::Method M = decltype(method)::value;
            return check ? input_grad_lanes<M, true>(out->rounding, x, dy, dx, n, mean, invstd, k, mean_dy,
                                                     mean_dy_xhat, unrounded.flush_below())
                         : input_grad_lanes<M, false>(out->rounding, x, dy, dx, n, mean, invstd, k, mean_dy,
                                                      mean_dy_xhat, 0);
        });
        // Rare (a bf16 gradient below 2^-133): the plane once more, unrounded, into the shadow.
        if (may_flush) input_grad(x, dy, unrounded.keep(piece), n, mean, invstd, k, mean_dy, mean_dy_xhat);
        return;
    }
#endif
    input_grad(x, dy, dx, n, mean, invstd, k, mean_dy, mean_dy_xhat);
    if (!out) return;
    unrounded.before_rounding(piece, dx);
    round_output(out->format, dx, n);
}

// Channels are independent: with more than one thread each takes a contiguous share of them
// (each channel's arithmetic, its sums and the rounding of its planes of y and dx are the same on
// any thread, so the bits do not depend on the count).
int threads_for(std::int64_t channels, std::int64_t values, int max_threads) {
    if (max_threads <= 1 || values < (std::int64_t{1} << 16)) return 1;
    return static_cast<int>(std::min<std::int64_t>(channels, max_threads));
}

// Channels [begin, end): thread t's share of them.
struct ChannelRange {
    std::int64_t begin, end;
    std::int64_t size() const { return end - begin; }
};

ChannelRange share_of(std::int64_t channels, int threads, int t) {
    return {channels * t / threads, channels * (t + 1) / threads};
}

// The values of channel c of sample n: spatial floats.
const float* plane(const float* t, const BatchNormTensors& bn, std::int64_t n, std::int64_t c) {
    return t + (n * bn.channels + c) * bn.spatial;
}
float* plane(float* t, const BatchNormTensors& bn, std::int64_t n, std::int64_t c) {
    return t + (n * bn.channels + c) * bn.spatial;
}

// Every pass walks the planes of its channels in memory order, sample by sample, each channel's
// sums taking its planes in sample order: the order of a channel's own arithmetic is that of a
// pass channel by channel, so the bits are the same, but the reads stream through x and dy where
// channel by channel they would jump a sample's size from plane to plane (about twice as fast on
// the reference CNN's first batch norm, 12.8 MB of x: docs/benchmarks.md).
template <class PlaneOp>
void each_plane(const ChannelRange& r, std::int64_t batch, PlaneOp&& op) {
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t c = r.begin; c < r.end; ++c) op(n, c);
}

// dx for channels r from dy; the sums over dy in double. Writes Σdy and Σdy·x̂ (for the
// parameters' gradients) when sum_dy and sum_dy_xhat are given. Each plane of dx is rounded as
// `out` says (none: kept as computed), its unrounded values kept in `unrounded` as it says.
void channels_backward(const BatchNormTensors& bn, const ChannelRange& r, const float* x, const float* dy, float* dx,
                       std::int64_t batch, const float* mean, const float* invstd, const float* gamma, float* sum_dy,
                       float* sum_dy_xhat, const RoundedStore* out, UnroundedPieces& unrounded) {
    std::vector<BatchNormLanes> sdy(static_cast<std::size_t>(r.size())), sdyx(sdy.size());
    each_plane(r, batch, [&](std::int64_t n, std::int64_t c) {
        const std::size_t k = static_cast<std::size_t>(c - r.begin);
        cpu_detail::batchnorm_add_grad_sums(plane(x, bn, n, c), plane(dy, bn, n, c), bn.spatial, mean[c], invstd[c],
                                            sdy[k], sdyx[k]);
    });
    const double count = static_cast<double>(batch * bn.spatial);
    std::vector<float> mean_dy(sdy.size()), mean_dy_xhat(sdy.size());
    for (std::int64_t c = r.begin; c < r.end; ++c) {
        const std::size_t k = static_cast<std::size_t>(c - r.begin);
        const double total_dy = sdy[k].total(), total_dy_xhat = sdyx[k].total();
        mean_dy[k] = static_cast<float>(total_dy / count);
        mean_dy_xhat[k] = static_cast<float>(total_dy_xhat / count);
        if (sum_dy) sum_dy[c] = static_cast<float>(total_dy);
        if (sum_dy_xhat) sum_dy_xhat[c] = static_cast<float>(total_dy_xhat);
    }
    each_plane(r, batch, [&](std::int64_t n, std::int64_t c) {
        const std::size_t k = static_cast<std::size_t>(c - r.begin);
        input_grad_rounded(out, unrounded, n * bn.channels + c, plane(x, bn, n, c), plane(dy, bn, n, c),
                           plane(dx, bn, n, c), bn.spatial, mean[c], invstd[c], gamma[c] * invstd[c], mean_dy[k],
                           mean_dy_xhat[k]);
    });
}

}  // namespace

void CpuBackend::batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x_in, Tensor& y_out, std::int64_t batch,
                                          bool training) {
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    const float* gamma = cpu(*bn.weight).data();
    const float* beta = cpu(*bn.bias).data();
    float* running_mean = cpu(*bn.running_mean).data();
    float* running_var = cpu(*bn.running_var).data();
    float* saved_mean = training ? cpu(*bn.saved_mean).data() : nullptr;
    float* saved_invstd = training ? cpu(*bn.saved_invstd).data() : nullptr;
    const double count = static_cast<double>(batch * bn.spatial);
    const RoundedStore out(y_out.format(), rounds_in_lanes());
    const int threads = threads_for(bn.channels, batch * bn.channels * bn.spatial, m_matmul.threads());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int t = 0; t < threads; ++t) {
        const ChannelRange r = share_of(bn.channels, threads, t);
        std::vector<float> mean(static_cast<std::size_t>(r.size())), invstd(mean.size());
        if (training) {
            std::vector<BatchNormLanes> sums(mean.size()), squares(mean.size());
            each_plane(r, batch, [&](std::int64_t n, std::int64_t c) {
                cpu_detail::batchnorm_add_sum(plane(x, bn, n, c), bn.spatial,
                                              sums[static_cast<std::size_t>(c - r.begin)]);
            });
            std::vector<double> mean_d(mean.size());
            for (std::size_t k = 0; k < mean.size(); ++k) mean_d[k] = sums[k].total() / count;
            each_plane(r, batch, [&](std::int64_t n, std::int64_t c) {
                const std::size_t k = static_cast<std::size_t>(c - r.begin);
                cpu_detail::batchnorm_add_squares(plane(x, bn, n, c), bn.spatial, mean_d[k], squares[k]);
            });
            for (std::int64_t c = r.begin; c < r.end; ++c) {
                const std::size_t k = static_cast<std::size_t>(c - r.begin);
                const double sum_squares = squares[k].total();
                const double var_biased = sum_squares / count;
                const double var_unbiased = sum_squares / (count - 1);  // count > 1: checked by the wrapper
                mean[k] = static_cast<float>(mean_d[k]);
                invstd[k] = static_cast<float>(1.0 / std::sqrt(var_biased + bn.eps));
                saved_mean[c] = mean[k];
                saved_invstd[c] = invstd[k];
                running_mean[c] = static_cast<float>((1.0 - bn.momentum) * static_cast<double>(running_mean[c]) +
                                                     bn.momentum * mean_d[k]);
                running_var[c] = static_cast<float>((1.0 - bn.momentum) * static_cast<double>(running_var[c]) +
                                                    bn.momentum * var_unbiased);
            }
        } else {
            for (std::int64_t c = r.begin; c < r.end; ++c) {
                const std::size_t k = static_cast<std::size_t>(c - r.begin);
                mean[k] = running_mean[c];
                invstd[k] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + bn.eps));
            }
        }
        each_plane(r, batch, [&](std::int64_t n, std::int64_t c) {
            const std::size_t k = static_cast<std::size_t>(c - r.begin);
            normalize_rounded(out, plane(x, bn, n, c), plane(y, bn, n, c), bn.spatial, mean[k], invstd[k], gamma[c],
                              beta[c]);
        });
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
    UnroundedPieces none(nullptr, nullptr, dx_out.format(), 0, 0);  // the shadow's own pass keeps nothing
    const RoundedStore out(dx_out.format(), rounds_in_lanes());
    const int threads = threads_for(bn.channels, n, m_matmul.threads());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int t = 0; t < threads; ++t) {
        const ChannelRange r = share_of(bn.channels, threads, t);
        if (sdx && sdy) channels_backward(bn, r, x, sdy, sdx, batch, mean, invstd, gamma, nullptr, nullptr, nullptr, none);
        channels_backward(bn, r, x, dy, dx, batch, mean, invstd, gamma, grad_beta, grad_gamma, &out, unrounded_planes);
    }
    if (unrounded_planes.unneeded(dx)) drop_shadow(dx_out);
    round_output(bn.grad_weight->format(), grad_gamma, bn.channels);
    round_output(bn.grad_bias->format(), grad_beta, bn.channels);
}

}  // namespace mantissa
