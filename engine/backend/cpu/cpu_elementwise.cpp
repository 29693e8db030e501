// CpuBackend: activations, losses and the elementwise add. Arithmetic in FP32 (the losses are on
// autocast's FP32 list); results rounded to the output tensor's format.
//
// gelu is the exact (erf) form, torch's default: gelu(z) = z·Φ(z), Φ(z) = ½(1 + erf(z/√2)),
// gelu'(z) = Φ(z) + z·φ(z), φ(z) = exp(-z²/2)/√(2π), with the engine's own erf and exp
// (numeric/elementary.h: vectorised, the same bits on every CPU). As torch does, the relu and tanh
// derivatives are taken from the stored output (relu: the gradient passes unless a <= 0, so it
// passes where a is NaN, as torch's threshold_backward does; tanh: 1 - a²).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/cpu_relu.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "numeric/convert.h"
#include "numeric/elementary.h"

namespace mantissa {

namespace {

MANTISSA_HOT void relu_forward(const float* __restrict z, float* __restrict a, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) a[i] = cpu_detail::relu_value(z[i]);
}

// dz = a <= 0 ? 0 : da (torch's threshold_backward): da passes where a > 0 or a is NaN, since
// relu_forward keeps a NaN input. da is read unconditionally, so the loop vectorises to plain
// loads, one ordered compare (vcmpleps) and a mask (vandnps), without masked loads.
MANTISSA_HOT void relu_backward(const float* __restrict a, const float* __restrict da, float* __restrict dz,
                                std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float g = da[i];
        dz[i] = cpu_detail::relu_gradient(a[i], g);
    }
}

constexpr float inv_sqrt2 = 0.70710678118654752440f;
constexpr float inv_sqrt_2pi = 0.39894228040143267794f;

// GELU a block of kGeluBlock values at a time. erf_poly computes both of its branches for every
// value (a vector cannot branch per lane) and the far one, a division, ten terms and an exp, is
// most of the cost; but it is needed only where |z/√2| reaches erf_near_zero_limit (|z| >= 1.27),
// and a trained network's pre-GELU values rarely do (the reference GPT: 0.2% of them, 3% of
// blocks of 16). A block whose values are all inside takes erf_near_zero alone, which is what
// erf_poly returns for each of them: the same bits. Any other block, a NaN in it included, takes
// erf_poly for every value, as before.
constexpr std::int64_t kGeluBlock = 16;

// Whether every value of the block lies where erf_poly is erf_near_zero (false for a NaN). In
// GCC's vector types (a plain loop with an early answer stays scalar): the largest |z/√2| as the
// bits of a non-negative float, whose order as integers is the order of the values, with a NaN
// above every one of them.
using BlockLanes = float __attribute__((vector_size(4 * kGeluBlock)));
using BlockBits = std::int32_t __attribute__((vector_size(4 * kGeluBlock)));
using HalfBits = std::int32_t __attribute__((vector_size(2 * kGeluBlock)));
using QuarterBits = std::int32_t __attribute__((vector_size(kGeluBlock)));

inline bool gelu_block_near_zero(const float* __restrict z) {
    BlockLanes v;
    std::memcpy(&v, z, sizeof v);
    const BlockLanes x = v * inv_sqrt2;
    const BlockBits magnitude = reinterpret_cast<BlockBits>(x) & 0x7fffffff;
    HalfBits lo, hi;
    std::memcpy(&lo, &magnitude, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&magnitude) + sizeof lo, sizeof hi);
    const HalfBits half = lo > hi ? lo : hi;
    QuarterBits qlo, qhi;
    std::memcpy(&qlo, &half, sizeof qlo);
    std::memcpy(&qhi, reinterpret_cast<const char*>(&half) + sizeof qlo, sizeof qhi);
    const QuarterBits quarter = qlo > qhi ? qlo : qhi;
    std::int32_t largest = quarter[0];
    for (int k = 1; k < 4; ++k) largest = quarter[k] > largest ? quarter[k] : largest;
    return largest < std::bit_cast<std::int32_t>(erf_near_zero_limit);
}

// gelu(z) and da·gelu'(z) from erf(z/√2), whichever form of erf gave it.
inline float gelu_value(float z, float erf_z) { return 0.5f * z * (1.0f + erf_z); }
inline float gelu_gradient(float z, float da, float erf_z) {
    const float cdf = 0.5f * (1.0f + erf_z);
    const float pdf = inv_sqrt_2pi * exp_poly(-0.5f * z * z);
    return da * (cdf + z * pdf);
}

MANTISSA_HOT_WIDE void gelu_forward(const float* __restrict z, float* __restrict a, std::int64_t n) {
    std::int64_t i = 0;
    for (; i + kGeluBlock <= n; i += kGeluBlock) {
        const float* zb = z + i;
        float* ab = a + i;
        if (gelu_block_near_zero(zb)) {
            for (std::int64_t j = 0; j < kGeluBlock; ++j) ab[j] = gelu_value(zb[j], erf_near_zero(zb[j] * inv_sqrt2));
        } else {
            for (std::int64_t j = 0; j < kGeluBlock; ++j) ab[j] = gelu_value(zb[j], erf_poly(zb[j] * inv_sqrt2));
        }
    }
    for (; i < n; ++i) a[i] = gelu_value(z[i], erf_poly(z[i] * inv_sqrt2));
}

// dz = da·gelu'(z); called again with da's shadow for a traced gradient's. Blocks as the forward's.
MANTISSA_HOT_WIDE void gelu_backward(const float* __restrict z, const float* __restrict da,
                                     float* __restrict dz, std::int64_t n) {
    std::int64_t i = 0;
    for (; i + kGeluBlock <= n; i += kGeluBlock) {
        const float* zb = z + i;
        if (gelu_block_near_zero(zb)) {
            for (std::int64_t j = 0; j < kGeluBlock; ++j)
                dz[i + j] = gelu_gradient(zb[j], da[i + j], erf_near_zero(zb[j] * inv_sqrt2));
        } else {
            for (std::int64_t j = 0; j < kGeluBlock; ++j)
                dz[i + j] = gelu_gradient(zb[j], da[i + j], erf_poly(zb[j] * inv_sqrt2));
        }
    }
    for (; i < n; ++i) dz[i] = gelu_gradient(z[i], da[i], erf_poly(z[i] * inv_sqrt2));
}

// Threads for an activation pass (cpu_parallel.h): relu runs at memory speed, a fraction of a
// nanosecond a value; gelu's vectorised polynomials a nanosecond or two; the C library's tanh
// tens.
std::int64_t activation_min_per_thread(Activation act) {
    switch (act) {
    case Activation::relu: return std::int64_t{1} << 16;
    case Activation::gelu: return std::int64_t{1} << 14;
    case Activation::tanh: break;
    }
    return std::int64_t{1} << 12;
}

}  // namespace

void CpuBackend::activation_forward_impl(Activation act, const Tensor& z_in, Tensor& a_out,
                                         std::int64_t batch) {
    const float* z = cpu(z_in).data();
    float* a = cpu(a_out).data();
    const std::int64_t n = batch * z_in.cols();
    const Format format = a_out.format();
    // relu passes z's values or zero: exact when a's format holds z's (bf16 autocast's case).
    const bool round = !(act == Activation::relu && format_contains(format, z_in.format()));
    // Each piece computed and rounded while it is in the L1 cache; every value is its own.
    cpu_detail::for_ranges(n, pass_threads(n, activation_min_per_thread(act)), 64,
                           [&](std::int64_t first, std::int64_t last, int) {
        cpu_detail::for_pieces(first, last, [&](std::int64_t begin, std::int64_t end) {
            switch (act) {
            case Activation::relu: relu_forward(z + begin, a + begin, end - begin); break;
            case Activation::gelu: gelu_forward(z + begin, a + begin, end - begin); break;
            case Activation::tanh:
                for (std::int64_t i = begin; i < end; ++i) a[i] = std::tanh(z[i]);
                break;
            }
            if (round) round_output(format, a + begin, end - begin);
        });
    });
}

void CpuBackend::activation_backward_impl(Activation act, const Tensor& z_in, const Tensor& a_in,
                                          const Tensor& da_in, Tensor& dz_out, std::int64_t batch) {
    const float* z = cpu(z_in).data();
    const float* a = cpu(a_in).data();
    const float* da = cpu(da_in).data();
    float* dz = cpu(dz_out).data();
    const std::int64_t n = batch * z_in.cols();
    // relu's dz is da's value or zero: exact when dz's format holds da's.
    const bool round = !(act == Activation::relu && format_contains(dz_out.format(), da_in.format()));
    // Gradient tracing: the shadow of dz is the derivative times da's shadow (da's values
    // before their rounding), or times da when it has none; none is needed when da has none
    // and dz is not rounded.
    const float* sda = m_tracing ? unrounded(da_in) : nullptr;
    float* sdz = m_tracing && (sda || (round && dz_out.format() != Format::fp32)) ? shadow_for(dz_out, n) : nullptr;
    if (!sda) sda = da;
    auto write = [&](std::int64_t i, float d) {
        dz[i] = da[i] * d;
        if (sdz) sdz[i] = sda[i] * d;
    };
    const Format format = dz_out.format();
    cpu_detail::for_ranges(n, pass_threads(n, activation_min_per_thread(act)), 64,
                           [&](std::int64_t first, std::int64_t last, int) {
        cpu_detail::for_pieces(first, last, [&](std::int64_t begin, std::int64_t end) {
            const std::int64_t len = end - begin;
            switch (act) {
            case Activation::relu:
                relu_backward(a + begin, da + begin, dz + begin, len);
                if (sdz) relu_backward(a + begin, sda + begin, sdz + begin, len);
                break;
            case Activation::gelu:
                gelu_backward(z + begin, da + begin, dz + begin, len);
                if (sdz) gelu_backward(z + begin, sda + begin, sdz + begin, len);
                break;
            case Activation::tanh:
                for (std::int64_t i = begin; i < end; ++i) write(i, 1.0f - a[i] * a[i]);
                break;
            }
            if (round) round_output(format, dz + begin, len);
        });
    });
}

LossResult CpuBackend::softmax_cross_entropy_impl(const Tensor& logits_in, const std::int32_t* labels,
                                                  std::int64_t batch, float loss_scale,
                                                  Tensor* dlogits) {
    const std::int64_t classes = logits_in.cols();
    const float* logits = cpu(logits_in).data();
    float* d = dlogits ? cpu(*dlogits).data() : nullptr;
    LossResult result;
    if (batch == 0) return result;
    const float grad_factor = loss_scale / static_cast<float>(batch);
    // Rows to the threads, each row's loss term kept; the terms are then added in row order on this
    // thread, so the loss has the same bits on any thread count (cpu_parallel.h).
    m_loss_terms.resize(static_cast<std::size_t>(batch));
    float* terms = m_loss_terms.data();
    const int threads =
        std::min(cpu_detail::kMaxPassThreads, pass_threads(batch * classes, cpu_detail::elementwise_min_per_thread));
    std::array<std::int64_t, cpu_detail::kMaxPassThreads> correct{};
    cpu_detail::for_ranges(batch, threads, 1, [&](std::int64_t r0, std::int64_t r1, int range) {
        std::int64_t right = 0;
        for (std::int64_t r = r0; r < r1; ++r) {
            const float* l = logits + r * classes;
            const std::int32_t label = labels[r];  // in [0, classes): checked by the wrapper
            float m = -std::numeric_limits<float>::infinity();
            std::int64_t argmax = 0;
            for (std::int64_t c = 0; c < classes; ++c) {
                if (l[c] > m) {
                    m = l[c];
                    argmax = c;
                }
            }
            if (!std::isfinite(m)) m = 0.0f;  // all -inf or a NaN: let the NaN/inf propagate below
            float sum = 0.0f;
            for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(l[c] - m);
            const float log_sum = std::log(sum);
            terms[r] = log_sum - (l[label] - m);
            right += argmax == label;
            if (d) {
                float* dr = d + r * classes;
                for (std::int64_t c = 0; c < classes; ++c) {
                    const float p = std::exp(l[c] - m - log_sum);
                    dr[c] = (p - (c == label ? 1.0f : 0.0f)) * grad_factor;
                }
            }
        }
        correct[static_cast<std::size_t>(range)] = right;
    });
    double total = 0;
    for (std::int64_t r = 0; r < batch; ++r) total += static_cast<double>(terms[r]);
    for (int w = 0; w < threads; ++w) result.correct += correct[static_cast<std::size_t>(w)];
    if (d) {
        keep_unrounded(*dlogits, d, batch * classes);
        round_output(dlogits->format(), d, batch * classes);
    }
    result.loss = static_cast<double>(static_cast<float>(total / static_cast<double>(batch)));
    return result;
}

LossResult CpuBackend::mse_impl(const Tensor& y_in, const float* targets, std::int64_t batch,
                                float loss_scale, Tensor* dy) {
    const std::int64_t n = batch * y_in.cols();
    const float* y = cpu(y_in).data();
    float* d = dy ? cpu(*dy).data() : nullptr;
    LossResult result;
    if (n == 0) return result;
    const float grad_factor = 2.0f * loss_scale / static_cast<float>(n);
    double total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const float diff = y[i] - targets[i];
        total += static_cast<double>(diff * diff);
        if (d) d[i] = diff * grad_factor;
    }
    if (d) {
        keep_unrounded(*dy, d, n);
        round_output(dy->format(), d, n);
    }
    result.loss = static_cast<double>(static_cast<float>(total / static_cast<double>(n)));
    return result;
}

// ---- add

namespace {

MANTISSA_HOT void add_arrays(const float* __restrict a, const float* __restrict b, float* __restrict y,
                             std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

#ifdef MANTISSA_ROUND_LANES
// y = round(a + b) with the rounding in the registers before the store (cpu_rounded_store.h);
// y may be a or b: each vector is read before it is written.
template <lanes::Method M>
MANTISSA_LANES_TARGET void add_arrays_lanes(const float* a, const float* b, float* y, std::int64_t n,
                                            const lanes::Rounding& rounding) {
    const lanes::Rounding r = rounding;
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, lanes::round8<M>(_mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)), r));
    if (i < n) {
        const __m256i tail = lanes::first_lanes(n - i);
        _mm256_maskstore_ps(y + i, tail,
                            lanes::round8<M>(_mm256_add_ps(_mm256_maskload_ps(a + i, tail), _mm256_maskload_ps(b + i, tail)), r));
    }
}
#endif

}  // namespace

void CpuBackend::add_impl(const Tensor& a_in, const Tensor& b_in, Tensor& y_out, std::int64_t batch) {
    const std::int64_t n = batch * y_out.cols();
    // y may be a or b (an in-place residual): read both before the write, element by element.
    const float* a = cpu(a_in).data();
    const float* b = cpu(b_in).data();
    float* y = cpu(y_out).data();
    // Elementwise: ranges on the backend's threads, each added and rounded as on one.
    const bool in_place = y == a || y == b;
    const RoundedStore out(y_out.format(), rounds_in_lanes());
    cpu_detail::for_ranges(n, pass_threads(n, cpu_detail::elementwise_min_per_thread), 64,
                           [&](std::int64_t first, std::int64_t last, int) {
#ifdef MANTISSA_ROUND_LANES
        if (out.in_lanes)
            return lanes::with_method(out.rounding.method, [&](auto method) {
                add_arrays_lanes<decltype(method)::value>(a + first, b + first, y + first, last - first, out.rounding);
            });
#endif
        cpu_detail::for_pieces(first, last, [&](std::int64_t begin, std::int64_t end) {
            if (in_place) {
                for (std::int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
            } else {
                add_arrays(a + begin, b + begin, y + begin, end - begin);
            }
            round_output(y_out.format(), y + begin, end - begin);
        });
    });
}

}  // namespace mantissa
