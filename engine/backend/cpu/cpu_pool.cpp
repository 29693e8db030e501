// CpuBackend: max, average and global average pools, forward and backward (docs/numerics.md,
// "Convolutional ops"). Images are one sample per row, NCHW flattened.
//
// max:     an exact selection: y = the window's maximum, rounded to y's format (a no-op when y's
//          format holds x's). Padding never wins. Ties go to the first position of the window in
//          row-major order (PyTorch's rule); a NaN is the maximum of its window (the first NaN).
//          The backward finds each maximum again from x by the same rule (window_argmax) and
//          adds dy there in FP32 (windows overlap when stride < kernel). Kernel 2, stride 2,
//          padding 0 (the reference CNN's pools) has a branchless path that vectorises: the
//          same selection (cpu_pool_kernels.h; tests hold it to the general path bit for bit).
//          A selection needs no rounding when y's format holds x's (dx's holds dy's, windows
//          not overlapping): that pass is skipped.
// relu+max: a ReLU and the max pool after it, on the ReLU's input z (Backend::maxpool2d_relu_*):
//          forward y = relu(max window of z), the ReLU's rule (cpu_relu.h) applied to the
//          pool's outputs, which is the pool of relu(z): a positive maximum or a NaN is
//          kept (the same first position among equals: relu changes neither), a window of
//          values <= 0 gives +0 either way. Backward: a window's dy is routed to its maximum in
//          z only where that maximum passes the ReLU, m > 0 or a NaN (relu_gradient's test),
//          +0 elsewhere; there it is the maximum the pool finds in relu(z). Every other position
//          gets +0 from the pool, which the ReLU passes or zeroes alike, and every window that
//          routes to a position has that position's value as its maximum: the two passes'
//          result in one, without reading or writing relu(z).
// average: y = (Σ window, in FP32 from +0 in row-major order) / k², the padding counting as
//          zeros (PyTorch's count_include_pad); the backward adds dy / k² (FP32) to every
//          position of the window.
// global:  y = (Σ_p x, in FP32) / spatial; dx = dy / spatial.
// Every output rounded to its tensor's format once, after the FP32 arithmetic. With gradient
// tracing on, the backward also carries dy's FP32 shadow to dx's (CpuBackend::trace_backward):
// each backward is linear in dy, so the shadow is the same op applied to the shadow; where dy
// has none, dx before its rounding, kept sample by sample where that rounding may flush
// (cpu_unrounded_pieces.h), and none at all when dx is not rounded.
// Samples are independent: a pass over more than 2^16 values shares whole samples out over the
// backend's threads (cpu_parallel.h), each sample's arithmetic and rounding as on one thread, so
// the bits do not depend on the count. Training thread only.
#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "backend/cpu/cpu_pool_kernels.h"
#include "backend/cpu/cpu_relu.h"
#include "backend/cpu/cpu_unrounded_pieces.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {


// The window of output (oy, ox) clipped to the image: rows [y0, y1), columns [x0, x1).
struct Window {
    std::int64_t y0, y1, x0, x1;
};

Window window_of(const Pool2dGeometry& p, std::int64_t oy, std::int64_t ox) {
    const std::int64_t ys = oy * p.stride - p.padding, xs = ox * p.stride - p.padding;
    return {std::max<std::int64_t>(ys, 0), std::min(ys + p.kernel, p.in_h), std::max<std::int64_t>(xs, 0),
            std::min(xs + p.kernel, p.in_w)};
}

// Index into the channel's plane of the window's maximum: the first in row-major order among
// equals, the first NaN if any. A window is never empty (padding <= kernel / 2).
std::int64_t window_argmax(const float* plane, std::int64_t width, const Window& w) {
    std::int64_t best = w.y0 * width + w.x0;
    float m = plane[best];
    for (std::int64_t iy = w.y0; iy < w.y1; ++iy) {
        for (std::int64_t ix = w.x0; ix < w.x1; ++ix) {
            const float v = plane[iy * width + ix];
            if (m != m) return best;  // a NaN wins and stays
            if (v > m || v != v) {
                m = v;
                best = iy * width + ix;
            }
        }
    }
    return best;
}

// dx = Σ over the windows holding each position of dy / k² (FP32), overwritten.
void avgpool_spread(const Pool2dGeometry& p, const float* dy, float* dx, std::int64_t batch) {
    const std::int64_t plane = p.in_h * p.in_w, oh = p.out_h(), ow = p.out_w();
    const float divisor = static_cast<float>(p.kernel * p.kernel);
    std::fill_n(dx, batch * p.in_size(), 0.0f);
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < p.channels; ++c) {
            float* dxc = dx + n * p.in_size() + c * plane;
            const float* dyc = dy + n * p.out_size() + c * oh * ow;
            for (std::int64_t oy = 0; oy < oh; ++oy) {
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                    const Window w = window_of(p, oy, ox);
                    const float g = dyc[oy * ow + ox] / divisor;
                    for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
                        for (std::int64_t ix = w.x0; ix < w.x1; ++ix) dxc[iy * p.in_w + ix] += g;
                }
            }
        }
    }
}

// dx[n, c, p] = dy[n, c] / spatial (FP32).
void global_spread(std::int64_t channels, std::int64_t spatial, const float* dy, float* dx, std::int64_t batch) {
    const float divisor = static_cast<float>(spatial);
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < channels; ++c) {
            const float g = dy[n * channels + c] / divisor;
            std::fill_n(dx + (n * channels + c) * spatial, spatial, g);
        }
    }
}

// The window's running maximum m after the next value v in row-major order: v when it is
// greater, or a NaN while m is not; a NaN m stays. window_argmax's rule, without branches.
inline bool takes(float m, float v) { return (v > m) | ((v != v) & (m == m)); }  // no branches

// 2×2 windows, stride 2, no padding, one output row: the input rows r0 = 2·oy and r1 = r0 + 1,
// outputs [from, ow), the window's values in the order r0[2·ox], r0[2·ox + 1], r1[2·ox],
// r1[2·ox + 1]. The scalar form, for CPUs without AVX2.
inline void max_row_2x2(const float* r0, const float* r1, float* y, std::int64_t from, std::int64_t ow) {
    for (std::int64_t ox = from; ox < ow; ++ox) {
        float m = r0[2 * ox];
        const float b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
        m = takes(m, b) ? b : m;
        m = takes(m, c) ? c : m;
        m = takes(m, d) ? d : m;
        y[ox] = m;
    }
}

// d0, d1: dx's rows r0, r1; g: dy's row. dx = 0 + dy at each window's maximum (dx = +0 where
// dy = -0, as the general path's sum from +0), +0 at the other three positions. Relu: +0 also at
// the maximum when it is <= 0.
template <bool Relu>
inline void route_row_2x2(const float* r0, const float* r1, const float* g, float* d0, float* d1, std::int64_t from,
                          std::int64_t ow) {
    for (std::int64_t ox = from; ox < ow; ++ox) {
        const float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
        const bool tb = takes(a, b);
        const float mb = tb ? b : a;
        const bool tc = takes(mb, c);
        const float mc = tc ? c : mb;
        const bool td = takes(mc, d);
        const float routed = g[ox] + 0.0f;
        const float v = Relu ? cpu_detail::relu_gradient(td ? d : mc, routed) : routed;
        d0[2 * ox] = !(tb | tc | td) ? v : 0.0f;
        d0[2 * ox + 1] = (tb & !(tc | td)) ? v : 0.0f;
        d1[2 * ox] = (tc & !td) ? v : 0.0f;
        d1[2 * ox + 1] = td ? v : 0.0f;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MANTISSA_POOL_AVX2 1
// takes() on 8 lanes: v > m (false with a NaN), or v NaN while m is not.
__attribute__((target("avx2"))) inline __m256 takes8(__m256 m, __m256 v) {
    return _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ),
                        _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(m, m, _CMP_ORD_Q)));
}

// The even and odd elements of 16 floats, in the output order 0 1 4 5 2 3 6 7 (permute4x64 by
// 0xD8 puts it right; that order is what unpacklo/unpackhi interleave back into 16 inputs).
__attribute__((target("avx2"))) inline void split8(const float* p, __m256& even, __m256& odd) {
    const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    odd = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}

// Eight windows: their inputs at r0 and r1 (16 floats each), their maxima to y (8 floats).
__attribute__((target("avx2"))) inline void max8_2x2(const float* r0, const float* r1, float* y) {
    __m256 a, b, c, d;
    split8(r0, a, b);
    split8(r1, c, d);
    __m256 m = _mm256_blendv_ps(a, b, takes8(a, b));
    m = _mm256_blendv_ps(m, c, takes8(m, c));
    m = _mm256_blendv_ps(m, d, takes8(m, d));
    _mm256_storeu_ps(y, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
}

// Eight windows' gradients: dy at g (8 floats), dx to d0 and d1 (16 floats each); Relu as
// route_row_2x2's.
template <bool Relu>
__attribute__((target("avx2"))) inline void route8_2x2(const float* r0, const float* r1, const float* g, float* d0,
                                                       float* d1) {
    __m256 a, b, c, d;
    split8(r0, a, b);
    split8(r1, c, d);
    const __m256 tb = takes8(a, b);
    const __m256 mb = _mm256_blendv_ps(a, b, tb);
    const __m256 tc = takes8(mb, c);
    const __m256 mc = _mm256_blendv_ps(mb, c, tc);
    const __m256 td = takes8(mc, d);
    const __m256 gv = _mm256_loadu_ps(g);
    __m256 v =
        _mm256_add_ps(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(gv), 0xD8)), _mm256_setzero_ps());
    if constexpr (Relu)  // kept where the maximum is not <= 0: above it, or a NaN
        v = _mm256_and_ps(v, _mm256_cmp_ps(_mm256_blendv_ps(mc, d, td), _mm256_setzero_ps(), _CMP_NLE_UQ));
    const __m256 later_cd = _mm256_or_ps(tc, td);
    const __m256 s0 = _mm256_andnot_ps(_mm256_or_ps(tb, later_cd), v);
    const __m256 s1 = _mm256_and_ps(_mm256_andnot_ps(later_cd, tb), v);
    const __m256 s2 = _mm256_and_ps(_mm256_andnot_ps(td, tc), v);
    const __m256 s3 = _mm256_and_ps(td, v);
    _mm256_storeu_ps(d0, _mm256_unpacklo_ps(s0, s1));
    _mm256_storeu_ps(d0 + 8, _mm256_unpackhi_ps(s0, s1));
    _mm256_storeu_ps(d1, _mm256_unpacklo_ps(s2, s3));
    _mm256_storeu_ps(d1 + 8, _mm256_unpackhi_ps(s2, s3));
}

// The first n of 16 floats, for masked loads and stores of a row's tail: lanes [0, n) of the
// first vector's mask and lanes [8, n) of the second's.
struct TailMasks {
    __m256i lo, hi;
};
__attribute__((target("avx2"))) inline TailMasks tail_masks(std::int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i count = _mm256_set1_epi32(static_cast<int>(n));
    return {_mm256_cmpgt_epi32(count, lane), _mm256_cmpgt_epi32(count, _mm256_add_epi32(lane, _mm256_set1_epi32(8)))};
}
// 16 floats at `to`: the first n from p, zeros after (masked loads read nothing past them).
__attribute__((target("avx2"))) inline void load_padded(const float* p, TailMasks m, float* to) {
    _mm256_storeu_ps(to, _mm256_maskload_ps(p, m.lo));
    _mm256_storeu_ps(to + 8, _mm256_maskload_ps(p + 8, m.hi));
}
__attribute__((target("avx2"))) inline void store_first(const float* from, TailMasks m, float* p) {
    _mm256_maskstore_ps(p, m.lo, _mm256_loadu_ps(from));
    _mm256_maskstore_ps(p + 8, m.hi, _mm256_loadu_ps(from + 8));
}

// A row's last ow % 8 windows go through zero-padded copies, by the same lanes' arithmetic as
// the others (the padding lanes' results are dropped): 14x14 maps have 7 windows a row, so a
// scalar tail would be all of their work, and its data-dependent branches cost more than the rest
// of the pool. The copies are masked loads and stores: library memcpy calls of a few bytes a row
// took a tenth of the pool's time.
__attribute__((target("avx2"))) void maxpool_2x2_forward_avx2(const float* x, float* y, std::int64_t planes,
                                                              std::int64_t h, std::int64_t w) {
    const std::int64_t oh = h / 2, ow = w / 2;
    const std::int64_t tail = ow % 8, body = ow - tail;
    const TailMasks inputs = tail_masks(2 * tail), outputs = tail_masks(tail);
    alignas(32) float t0[16], t1[16], out[16] = {};
    for (std::int64_t i = 0; i < planes; ++i) {
        for (std::int64_t oy = 0; oy < oh; ++oy) {
            const float* r0 = x + i * h * w + 2 * oy * w;
            const float* r1 = r0 + w;
            float* yr = y + (i * oh + oy) * ow;
            for (std::int64_t ox = 0; ox < body; ox += 8) max8_2x2(r0 + 2 * ox, r1 + 2 * ox, yr + ox);
            if (tail == 0) continue;
            load_padded(r0 + 2 * body, inputs, t0);
            load_padded(r1 + 2 * body, inputs, t1);
            max8_2x2(t0, t1, out);
            store_first(out, outputs, yr + body);
        }
    }
}

template <bool Relu>
__attribute__((target("avx2"))) void maxpool_2x2_route_avx2(const float* x, const float* dy, float* dx,
                                                            std::int64_t planes, std::int64_t h, std::int64_t w) {
    const std::int64_t oh = h / 2, ow = w / 2;
    const std::int64_t tail = ow % 8, body = ow - tail;
    const TailMasks inputs = tail_masks(2 * tail), gradients = tail_masks(tail);
    alignas(32) float t0[16], t1[16], tg[16], o0[16], o1[16];
    for (std::int64_t i = 0; i < planes; ++i) {
        for (std::int64_t oy = 0; oy < oh; ++oy) {
            const float* r0 = x + i * h * w + 2 * oy * w;
            const float* r1 = r0 + w;
            float* d0 = dx + i * h * w + 2 * oy * w;
            float* d1 = d0 + w;
            const float* g = dy + (i * oh + oy) * ow;
            for (std::int64_t ox = 0; ox < body; ox += 8)
                route8_2x2<Relu>(r0 + 2 * ox, r1 + 2 * ox, g + ox, d0 + 2 * ox, d1 + 2 * ox);
            if (tail == 0) continue;
            load_padded(r0 + 2 * body, inputs, t0);
            load_padded(r1 + 2 * body, inputs, t1);
            load_padded(g + body, gradients, tg);
            route8_2x2<Relu>(t0, t1, tg, o0, o1);
            store_first(o0, inputs, d0 + 2 * body);
            store_first(o1, inputs, d1 + 2 * body);
        }
    }
}
#endif

// `planes` planes of (h, w) to (h / 2, w / 2).
void maxpool_2x2_forward(const float* x, float* y, std::int64_t planes, std::int64_t h, std::int64_t w) {
#ifdef MANTISSA_POOL_AVX2
    if (cpu_detail::cpu_has_avx2()) return maxpool_2x2_forward_avx2(x, y, planes, h, w);
#endif
    const std::int64_t oh = h / 2, ow = w / 2;
    for (std::int64_t i = 0; i < planes; ++i)
        for (std::int64_t oy = 0; oy < oh; ++oy) {
            const float* r0 = x + i * h * w + 2 * oy * w;
            max_row_2x2(r0, r0 + w, y + (i * oh + oy) * ow, 0, ow);
        }
}

// dx over `planes` planes; the row and column an odd size leaves outside every window are +0.
template <bool Relu>
void maxpool_2x2_route(const float* x, const float* dy, float* dx, std::int64_t planes, std::int64_t h,
                       std::int64_t w) {
    const std::int64_t oh = h / 2, ow = w / 2;
#ifdef MANTISSA_POOL_AVX2
    if (cpu_detail::cpu_has_avx2()) {
        maxpool_2x2_route_avx2<Relu>(x, dy, dx, planes, h, w);
    } else
#endif
    {
        for (std::int64_t i = 0; i < planes; ++i)
            for (std::int64_t oy = 0; oy < oh; ++oy) {
                const float* r0 = x + i * h * w + 2 * oy * w;
                float* d0 = dx + i * h * w + 2 * oy * w;
                route_row_2x2<Relu>(r0, r0 + w, dy + (i * oh + oy) * ow, d0, d0 + w, 0, ow);
            }
    }
    if (w % 2 == 0 && h % 2 == 0) return;
    for (std::int64_t i = 0; i < planes; ++i) {
        float* dxp = dx + i * h * w;
        if (w % 2)
            for (std::int64_t iy = 0; iy < 2 * oh; ++iy) dxp[iy * w + w - 1] = 0.0f;
        if (h % 2) std::fill_n(dxp + (h - 1) * w, w, 0.0f);
    }
}

}  // namespace

namespace cpu_detail {

void maxpool_forward_general(const Pool2dGeometry& p, const float* x, float* y, std::int64_t batch) {
    const std::int64_t plane = p.in_h * p.in_w, oh = p.out_h(), ow = p.out_w();
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < p.channels; ++c) {
            const float* xc = x + n * p.in_size() + c * plane;
            float* yc = y + n * p.out_size() + c * oh * ow;
            for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox)
                    yc[oy * ow + ox] = xc[window_argmax(xc, p.in_w, window_of(p, oy, ox))];
        }
    }
}

void maxpool_forward(const Pool2dGeometry& p, const float* x, float* y, std::int64_t batch) {
    if (maxpool_fast_path(p)) maxpool_2x2_forward(x, y, batch * p.channels, p.in_h, p.in_w);
    else maxpool_forward_general(p, x, y, batch);
}

void maxpool_route_general(const Pool2dGeometry& p, const float* x, const float* dy, float* dx,
                           std::int64_t batch, bool through_relu) {
    const std::int64_t plane = p.in_h * p.in_w, oh = p.out_h(), ow = p.out_w();
    std::fill_n(dx, batch * p.in_size(), 0.0f);
    for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < p.channels; ++c) {
            const float* xc = x + n * p.in_size() + c * plane;
            float* dxc = dx + n * p.in_size() + c * plane;
            const float* dyc = dy + n * p.out_size() + c * oh * ow;
            for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                    const std::int64_t at = window_argmax(xc, p.in_w, window_of(p, oy, ox));
                    const float g = dyc[oy * ow + ox];
                    dxc[at] += through_relu ? cpu_detail::relu_gradient(xc[at], g) : g;
                }
        }
    }
}

void maxpool_route(const Pool2dGeometry& p, const float* x, const float* dy, float* dx, std::int64_t batch,
                   bool through_relu) {
    if (!maxpool_fast_path(p)) maxpool_route_general(p, x, dy, dx, batch, through_relu);
    else if (through_relu) maxpool_2x2_route<true>(x, dy, dx, batch * p.channels, p.in_h, p.in_w);
    else maxpool_2x2_route<false>(x, dy, dx, batch * p.channels, p.in_h, p.in_w);
}

}  // namespace cpu_detail

namespace {

// fn(n0, n1) over the samples [0, batch) in ranges of whole samples, on `threads` threads.
template <class Fn>
void for_samples(std::int64_t batch, int threads, Fn&& fn) {
    cpu_detail::for_ranges(batch, threads, 1, [&](std::int64_t n0, std::int64_t n1, int) { fn(n0, n1); });
}

// A pool's backward, by ranges of whole samples: spread(g, d, n0, n1) writes samples [n0, n1) of
// d from those of g (d: in values a sample); with gradient tracing, the shadow is the same spread
// of dy's shadow, or dx before its rounding (`unrounded`, sample by sample where the rounding may
// flush); then dx's samples rounded to `format` when `round`.
template <class Spread>
void backward_by_samples(std::int64_t batch, int threads, std::int64_t in, const float* dy, const float* sdy,
                         float* dx, float* sdx, UnroundedPieces& unrounded, Format format, bool round,
                         Spread spread) {
    for_samples(batch, threads, [&](std::int64_t n0, std::int64_t n1) {
        const std::int64_t at = n0 * in, count = (n1 - n0) * in;
        spread(dy, dx, n0, n1);
        if (sdx && sdy) spread(sdy, sdx, n0, n1);
        if (unrounded.active())
            for (std::int64_t n = n0; n < n1; ++n) unrounded.before_rounding(n, dx + n * in);
        if (round) round_output(format, dx + at, count);
    });
}

}  // namespace

void CpuBackend::maxpool2d_forward_impl(const Pool2dGeometry& p, const Tensor& x_in, Tensor& y_out,
                                        std::int64_t batch) {
    maxpool_forward(p, x_in, y_out, batch, false);
}

void CpuBackend::maxpool2d_relu_forward_impl(const Pool2dGeometry& p, const Tensor& z_in, Tensor& y_out,
                                             std::int64_t batch) {
    maxpool_forward(p, z_in, y_out, batch, true);
}

void CpuBackend::maxpool_forward(const Pool2dGeometry& p, const Tensor& x_in, Tensor& y_out, std::int64_t batch,
                                 bool then_relu) {
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    // x's values are already in x's format: a selection (and the ReLU's) is exact when y's format
    // holds it.
    const bool round = !format_contains(y_out.format(), x_in.format());
    const std::int64_t in = p.in_size(), out = p.out_size();
    for_samples(batch, pass_threads(batch * in, cpu_detail::elementwise_min_per_thread),
                [&](std::int64_t n0, std::int64_t n1) {
                    float* yr = y + n0 * out;
                    const std::int64_t count = (n1 - n0) * out;
                    cpu_detail::maxpool_forward(p, x + n0 * in, yr, n1 - n0);
                    if (then_relu)
                        for (std::int64_t i = 0; i < count; ++i) yr[i] = cpu_detail::relu_value(yr[i]);
                    if (round) round_output(y_out.format(), yr, count);
                });
}

// y is not read: the maximum's position is found again from x.
void CpuBackend::maxpool2d_backward_impl(const Pool2dGeometry& p, const Tensor& x_in, const Tensor& /*y*/,
                                         const Tensor& dy_in, Tensor& dx_out, std::int64_t batch) {
    maxpool_backward(p, x_in, dy_in, dx_out, batch, false);
}

void CpuBackend::maxpool2d_relu_backward_impl(const Pool2dGeometry& p, const Tensor& x_in, const Tensor& /*y*/,
                                              const Tensor& dy_in, Tensor& dx_out, std::int64_t batch) {
    maxpool_backward(p, x_in, dy_in, dx_out, batch, true);
}

void CpuBackend::maxpool_backward(const Pool2dGeometry& p, const Tensor& x_in, const Tensor& dy_in, Tensor& dx_out,
                                  std::int64_t batch, bool through_relu) {
    const float* x = cpu(x_in).data();
    const std::int64_t in = p.in_size(), out = p.out_size(), n = batch * in;
    // Without overlapping windows each dx is +0 or 0 + dy: dy's value, exact in dy's format.
    const bool round = !(p.stride >= p.kernel && format_contains(dx_out.format(), dy_in.format()));
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, n, round, &sdy);
    float* dx = cpu(dx_out).data();
    UnroundedPieces unrounded(sdx, sdy, dx_out.format(), batch, in);
    backward_by_samples(batch, pass_threads(n, cpu_detail::elementwise_min_per_thread), in, cpu(dy_in).data(), sdy,
                        dx, sdx, unrounded, dx_out.format(), round,
                        [&](const float* g, float* d, std::int64_t n0, std::int64_t n1) {
                            cpu_detail::maxpool_route(p, x + n0 * in, g + n0 * out, d + n0 * in, n1 - n0,
                                                      through_relu);
                        });
    if (unrounded.unneeded(dx)) drop_shadow(dx_out);
}

void CpuBackend::avgpool2d_forward_impl(const Pool2dGeometry& p, const Tensor& x_in, Tensor& y_out,
                                        std::int64_t batch) {
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    const std::int64_t plane = p.in_h * p.in_w, oh = p.out_h(), ow = p.out_w();
    const float divisor = static_cast<float>(p.kernel * p.kernel);
    for_samples(batch, pass_threads(batch * p.in_size(), cpu_detail::elementwise_min_per_thread),
                [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) {
            for (std::int64_t c = 0; c < p.channels; ++c) {
                const float* xc = x + n * p.in_size() + c * plane;
                float* yc = y + n * p.out_size() + c * oh * ow;
                for (std::int64_t oy = 0; oy < oh; ++oy) {
                    for (std::int64_t ox = 0; ox < ow; ++ox) {
                        const Window w = window_of(p, oy, ox);
                        float sum = 0.0f;
                        for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
                            for (std::int64_t ix = w.x0; ix < w.x1; ++ix) sum += xc[iy * p.in_w + ix];
                        yc[oy * ow + ox] = sum / divisor;
                    }
                }
            }
        }
        round_output(y_out.format(), y + n0 * p.out_size(), (n1 - n0) * p.out_size());
    });
}

void CpuBackend::avgpool2d_backward_impl(const Pool2dGeometry& p, const Tensor& dy_in, Tensor& dx_out,
                                         std::int64_t batch) {
    const std::int64_t in = p.in_size(), out = p.out_size(), n = batch * in;
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, n, true, &sdy);
    float* dx = cpu(dx_out).data();
    UnroundedPieces unrounded(sdx, sdy, dx_out.format(), batch, in);
    backward_by_samples(batch, pass_threads(n, cpu_detail::elementwise_min_per_thread), in, cpu(dy_in).data(), sdy,
                        dx, sdx, unrounded, dx_out.format(), true,
                        [&](const float* g, float* d, std::int64_t n0, std::int64_t n1) {
                            avgpool_spread(p, g + n0 * out, d + n0 * in, n1 - n0);
                        });
    if (unrounded.unneeded(dx)) drop_shadow(dx_out);
}

void CpuBackend::global_avgpool_forward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& x_in,
                                             Tensor& y_out, std::int64_t batch) {
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    const float divisor = static_cast<float>(spatial);
    for_samples(batch, pass_threads(batch * channels * spatial, cpu_detail::elementwise_min_per_thread),
                [&](std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n) {
            for (std::int64_t c = 0; c < channels; ++c) {
                const float* xc = x + (n * channels + c) * spatial;
                float sum = 0.0f;
                for (std::int64_t p = 0; p < spatial; ++p) sum += xc[p];
                y[n * channels + c] = sum / divisor;
            }
        }
        round_output(y_out.format(), y + n0 * channels, (n1 - n0) * channels);
    });
}

void CpuBackend::global_avgpool_backward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& dy_in,
                                              Tensor& dx_out, std::int64_t batch) {
    const std::int64_t in = channels * spatial, n = batch * in;
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, n, true, &sdy);
    float* dx = cpu(dx_out).data();
    UnroundedPieces unrounded(sdx, sdy, dx_out.format(), batch, in);
    backward_by_samples(batch, pass_threads(n, cpu_detail::elementwise_min_per_thread), in, cpu(dy_in).data(), sdy,
                        dx, sdx, unrounded, dx_out.format(), true,
                        [&](const float* g, float* d, std::int64_t n0, std::int64_t n1) {
                            global_spread(channels, spatial, g + n0 * channels, d + n0 * in, n1 - n0);
                        });
    if (unrounded.unneeded(dx)) drop_shadow(dx_out);
}

}  // namespace mantissa
