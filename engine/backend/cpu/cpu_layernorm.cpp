// CpuBackend: layer normalisation over the last dimension, PyTorch's LayerNorm(dim) with its
// elementwise affine, forward and backward (docs/numerics.md, "Transformer ops").
//
// As the batch norm (cpu_batchnorm.cpp) but per row of N = dim values: each sum is taken in
// double and rounded to FP32 once, the per-element arithmetic is FP32:
//   forward   μ = fp32(Σx / N), σ² = fp32(Σ(x − μ_d)² / N) (biased), invstd = fp32(1/√(σ²_d + ε))
//             y = rnd_y( ((x − μ)·invstd)·γ + β )
//   backward  x̂ = (x − μ)·invstd (the saved μ and invstd), g = dy·γ
//             dx = rnd_dx( invstd·(g − fp32(Σg / N) − x̂·fp32(Σg·x̂ / N)) )
//             dγ = fp32(Σ_rows dy·x̂), dβ = fp32(Σ_rows dy)   (per column, rows in order, double)
// The saved statistics and the parameters' gradients are written rounded to their tensors'
// formats. With gradient tracing on, dx's shadow is the same backward of dy's shadow (it is
// linear in dy), or, where dy has none, dx before its rounding, kept row by row where that
// rounding may flush (cpu_unrounded_pieces.h).
//
// Threads (cpu_parallel.h, a thread per 2^16 values): the forward and dx share rows out, each row
// computed as on one thread (the smallest variance gathered as a minimum, which any order gives);
// dγ and dβ share columns out, each column summed over the rows in row order. So the bits do not
// depend on the thread count. Training thread only.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "backend/cpu/cpu_unrounded_pieces.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {

// The row sums are each a chain of dependent double adds in column order, a few cycles an element
// on one row; kLanes rows at a time, each row in its own vector lane and still in column order,
// keep the same bits and let the adds overlap. The block's values are first laid out column by
// column (value j of row k at j·kLanes + k), so the lanes are contiguous.
constexpr std::int64_t kLanes = 8;

// A block of `count` <= kLanes rows of n values at src (rows `stride` apart) laid out at dst as
// above, the missing rows as zeros.
MANTISSA_HOT void interleave_rows(const float* src, std::int64_t stride, std::int64_t count, std::int64_t n, float* dst) {
    for (std::int64_t k = 0; k < count; ++k)
        for (std::int64_t j = 0; j < n; ++j) dst[j * kLanes + k] = src[k * stride + j];
    for (std::int64_t k = count; k < kLanes; ++k)
        for (std::int64_t j = 0; j < n; ++j) dst[j * kLanes + k] = 0.0f;
}

// Each lane's mean and biased variance in double: Σx / N, then Σ(x − mean)² / N, in column order.
MANTISSA_HOT void lane_moments(const float* __restrict t, std::int64_t n, double* __restrict mean,
                               double* __restrict var) {
    double sum[kLanes] = {};
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < kLanes; ++k) sum[k] += static_cast<double>(t[j * kLanes + k]);
    for (std::int64_t k = 0; k < kLanes; ++k) mean[k] = sum[k] / static_cast<double>(n);
    double squares[kLanes] = {};
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < kLanes; ++k) {
            const double d = static_cast<double>(t[j * kLanes + k]) - mean[k];
            squares[k] += d * d;
        }
    for (std::int64_t k = 0; k < kLanes; ++k) var[k] = squares[k] / static_cast<double>(n);
}

// Each lane's Σg and Σg·x̂ in double, in column order.
MANTISSA_HOT void lane_gradient_sums(const float* __restrict g, const float* __restrict xhat, std::int64_t n,
                                     double* __restrict sum_g, double* __restrict sum_g_xhat) {
    double s[kLanes] = {}, sx[kLanes] = {};
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < kLanes; ++k) {
            const double gk = static_cast<double>(g[j * kLanes + k]);
            s[k] += gk;
            sx[k] += gk * static_cast<double>(xhat[j * kLanes + k]);
        }
    for (std::int64_t k = 0; k < kLanes; ++k) {
        sum_g[k] = s[k];
        sum_g_xhat[k] = sx[k];
    }
}

// y = ((x − mean)·invstd)·γ + β over a row.
MANTISSA_HOT void normalize_row(const float* __restrict x, const float* __restrict gamma, const float* __restrict beta,
                                float* __restrict y, std::int64_t n, float mean, float invstd) {
    for (std::int64_t j = 0; j < n; ++j) y[j] = ((x[j] - mean) * invstd) * gamma[j] + beta[j];
}

#ifdef MANTISSA_ROUND_LANES
// normalize_row with y rounded in the registers before the store (cpu_rounded_store.h): the same
// products and sums (no FMA), round_output's bits, one pass over the row instead of two.
template <lanes::Method M>
MANTISSA_LANES_TARGET void normalize_row_lanes(const float* x, const float* gamma, const float* beta, float* y,
                                               std::int64_t n, float mean, float invstd, const lanes::Rounding& rounding) {
    const lanes::Rounding r = rounding;
    const __m256 m = _mm256_set1_ps(mean), k = _mm256_set1_ps(invstd);
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), m), k),
                                                     _mm256_loadu_ps(gamma + j)),
                                       _mm256_loadu_ps(beta + j));
        _mm256_storeu_ps(y + j, lanes::round8<M>(v, r));
    }
    if (j < n) {
        const __m256i tail = lanes::first_lanes(n - j);
        const __m256 v = _mm256_add_ps(
            _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, tail), m), k), _mm256_maskload_ps(gamma + j, tail)),
            _mm256_maskload_ps(beta + j, tail));
        _mm256_maskstore_ps(y + j, tail, lanes::round8<M>(v, r));
    }
}
#endif

// A row of y, rounded to y's format.
void normalize_row_rounded(const RoundedStore& out, const float* x, const float* gamma, const float* beta, float* y,
                           std::int64_t n, float mean, float invstd) {
#ifdef MANTISSA_ROUND_LANES
    if (out.in_lanes)
        return lanes::with_method(out.rounding.method, [&](auto method) {
            normalize_row_lanes<decltype(method)::value>(x, gamma, beta, y, n, mean, invstd, out.rounding);
        });
#endif
    normalize_row(x, gamma, beta, y, n, mean, invstd);
    round_output(out.format, y, n);
}

// dx of `count` <= kLanes rows from dy (unrounded); g and xhat hold 2·kLanes·n floats of scratch.
MANTISSA_HOT void rows_backward(const float* x, const float* dy, const float* gamma, float* dx, std::int64_t n,
                                std::int64_t count, const float* mean, const float* invstd, float* scratch) {
    float* g = scratch;
    float* xhat = scratch + kLanes * n;
    for (std::int64_t k = 0; k < count; ++k) {
        const float* xr = x + k * n;
        const float* dyr = dy + k * n;
        for (std::int64_t j = 0; j < n; ++j) {
            g[j * kLanes + k] = dyr[j] * gamma[j];
            xhat[j * kLanes + k] = (xr[j] - mean[k]) * invstd[k];
        }
    }
    for (std::int64_t k = count; k < kLanes; ++k)  // the missing rows' lanes
        for (std::int64_t j = 0; j < n; ++j) g[j * kLanes + k] = xhat[j * kLanes + k] = 0.0f;
    double sum_g[kLanes], sum_g_xhat[kLanes];
    lane_gradient_sums(g, xhat, n, sum_g, sum_g_xhat);
    for (std::int64_t k = 0; k < count; ++k) {
        const float mean_g = static_cast<float>(sum_g[k] / static_cast<double>(n));
        const float mean_g_xhat = static_cast<float>(sum_g_xhat[k] / static_cast<double>(n));
        const float* xr = x + k * n;
        const float* dyr = dy + k * n;
        float* dxr = dx + k * n;
        for (std::int64_t j = 0; j < n; ++j) {
            const float xh = (xr[j] - mean[k]) * invstd[k];
            const float gj = dyr[j] * gamma[j];
            dxr[j] = invstd[k] * (gj - mean_g - xh * mean_g_xhat);
        }
    }
}

// dγ and dβ of columns [j0, j0 + width): each column's Σ dy·x̂ and Σ dy over the rows in row
// order, in double, in this call's own sums, written to the gradients once at the end. Sums kept
// in one array for all the threads, written at every row, put two threads' columns in one cache
// line at each boundary between their ranges (and at the seam of the two arrays): the line went
// back and forth at every row, and the pass took about nine times as long on two threads as on
// one (18 times the CPU time). (This loop, over whole rows of the range, ran faster on one thread
// than the same sums in blocks of 64 or 256 columns on the stack, or built for AVX2.)
void column_gradient_sums(const float* x, const float* dy, const float* mean, const float* invstd, std::int64_t rows,
                          std::int64_t n, std::int64_t j0, std::int64_t width, float* grad_gamma, float* grad_beta) {
    std::vector<double> sums(static_cast<std::size_t>(2 * width), 0.0);
    double* sum_dy = sums.data();
    double* sum_dy_xhat = sum_dy + width;
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n + j0;
        const float* dyr = dy + r * n + j0;
        for (std::int64_t j = 0; j < width; ++j) {
            const float xhat = (xr[j] - mean[r]) * invstd[r];
            sum_dy[j] += static_cast<double>(dyr[j]);
            sum_dy_xhat[j] += static_cast<double>(dyr[j]) * static_cast<double>(xhat);
        }
    }
    for (std::int64_t j = 0; j < width; ++j) {
        grad_gamma[j0 + j] = static_cast<float>(sum_dy_xhat[j]);
        grad_beta[j0 + j] = static_cast<float>(sum_dy[j]);
    }
}

}  // namespace

void CpuBackend::layernorm_forward_impl(LayerNormTensors& ln, const Tensor& x_in, Tensor& y_out, std::int64_t rows,
                                        LayerNormStats* stats) {
    const std::int64_t n = ln.dim;
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    const float* gamma = cpu(*ln.weight).data();
    const float* beta = cpu(*ln.bias).data();
    float* saved_mean = cpu(*ln.saved_mean).data();
    float* saved_invstd = cpu(*ln.saved_invstd).data();
    const RoundedStore out(y_out.format(), rounds_in_lanes());
    // Each range's smallest variance (a NaN row is no smallest; variances are never -0).
    const int threads =
        std::min(cpu_detail::kMaxPassThreads, pass_threads(rows * n, cpu_detail::elementwise_min_per_thread));
    std::array<float, cpu_detail::kMaxPassThreads> min_variance;
    min_variance.fill(std::numeric_limits<float>::infinity());
    cpu_detail::for_ranges(rows, threads, 1, [&](std::int64_t r0, std::int64_t r1, int range) {
        float smallest = std::numeric_limits<float>::infinity();
        std::vector<float> block(static_cast<std::size_t>(kLanes * n));
        for (std::int64_t b = r0; b < r1; b += kLanes) {
            const std::int64_t count = std::min(kLanes, r1 - b);
            interleave_rows(x + b * n, n, count, n, block.data());
            double means[kLanes], vars[kLanes];
            lane_moments(block.data(), n, means, vars);
            for (std::int64_t k = 0; k < count; ++k) {
                const std::int64_t r = b + k;
                const float* xr = x + r * n;
                float* yr = y + r * n;
                const float mean = static_cast<float>(means[k]);
                const float invstd = static_cast<float>(1.0 / std::sqrt(vars[k] + ln.eps));
                const float variance = static_cast<float>(vars[k]);
                if (variance < smallest) smallest = variance;
                saved_mean[r] = mean;
                saved_invstd[r] = invstd;
                normalize_row_rounded(out, xr, gamma, beta, yr, n, mean, invstd);
            }
        }
        min_variance[static_cast<std::size_t>(range)] = smallest;
    });
    round_output(ln.saved_mean->format(), saved_mean, rows);
    round_output(ln.saved_invstd->format(), saved_invstd, rows);
    if (stats) stats->min_variance = *std::min_element(min_variance.begin(), min_variance.begin() + threads);
}

void CpuBackend::layernorm_backward_impl(LayerNormTensors& ln, const Tensor& x_in, const Tensor& dy_in,
                                         Tensor& dx_out, std::int64_t rows) {
    const std::int64_t n = ln.dim;
    const float* x = cpu(x_in).data();
    const float* dy = cpu(dy_in).data();
    const float* gamma = cpu(*ln.weight).data();
    const float* mean = cpu(*ln.saved_mean).data();
    const float* invstd = cpu(*ln.saved_invstd).data();
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, rows * n, true, &sdy);
    float* dx = cpu(dx_out).data();

    // The parameters' gradients first: dx may be dy or x. Columns to the threads in blocks of 16,
    // each column summed over the rows in order.
    const int threads = pass_threads(rows * n, cpu_detail::elementwise_min_per_thread);
    float* grad_gamma = cpu(*ln.grad_weight).data();
    float* grad_beta = cpu(*ln.grad_bias).data();
    cpu_detail::for_ranges(n, threads, 16, [&](std::int64_t j0, std::int64_t j1, int) {
        column_gradient_sums(x, dy, mean, invstd, rows, n, j0, j1 - j0, grad_gamma, grad_beta);
    });

    // No dy shadow: dx's is dx before its rounding, kept row by row where it may flush.
    UnroundedPieces unrounded_rows(sdx, sdy, dx_out.format(), rows, n);
    cpu_detail::for_ranges(rows, threads, 1, [&](std::int64_t r0, std::int64_t r1, int) {
        std::vector<float> scratch(static_cast<std::size_t>(2 * kLanes * n));
        for (std::int64_t b = r0; b < r1; b += kLanes) {
            const std::int64_t count = std::min(kLanes, r1 - b), at = b * n;
            if (sdx && sdy)
                rows_backward(x + at, sdy + at, gamma, sdx + at, n, count, mean + b, invstd + b, scratch.data());
            rows_backward(x + at, dy + at, gamma, dx + at, n, count, mean + b, invstd + b, scratch.data());
            for (std::int64_t r = b; r < b + count; ++r) {
                unrounded_rows.before_rounding(r, dx + r * n);
                round_output(dx_out.format(), dx + r * n, n);
            }
        }
    });
    if (unrounded_rows.unneeded(dx)) drop_shadow(dx_out);
    round_output(ln.grad_weight->format(), grad_gamma, n);
    round_output(ln.grad_bias->format(), grad_beta, n);
}

}  // namespace mantissa
