// CpuBackend: linear layers, forward and backward, with docs/numerics.md's rounding points.
//
// forward:  x and W cast to the operand format (FP8: scaled by the delayed scale, saturating
//           e4m3), matmul with FP32 accumulation, × the FP8 dequantisation factor, + bias (in the
//           output's format), rounded to y's format.
// backward: dy cast to the gradient operand format (FP8: scaled, saturating e5m2), dX = dy·W and
//           dW = dyᵀ·x in FP32, × dequantisation, rounded to their formats (this is where
//           gradients underflow; the weight gradient's rounding is measured); dB = Σ_rows dy in
//           FP32 in blocks of rows (bias_grad_order.h; FP8: of the unquantised dy, as TE's fused
//           bias-gradient does), rounded.
// block-scaled (mxfp8 .. nvfp4): each matmul's two operands quantised along its own reduction
//           dimension (forward: x's rows and W's rows; dgrad: dy's rows and W's columns; wgrad:
//           dy's and x's columns) and decoded with their block scales, multiplied as bf16 values
//           with FP32 accumulation (cpu_matmul.h), × NVFP4's two tensor-scale inverses as FP8's
//           dequantisation; dB from the unquantised dy.
// FP8 rowwise: the same axes, a current scale per row (round_axiswise_fp8), decoded in FP32.
// Per GEMM (LinearTensors::dgrad, wgrad): each backward matmul's operands in its own format.
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <initializer_list>
#include <utility>

#include "backend/bias_grad_order.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_block_parallel.h"
#include "backend/cpu/cpu_flush_count.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "numeric/stochastic_round.h"
#include "backend/cpu/cpu_fp16_accumulate.h"

namespace mantissa {

namespace {

enum Slot { slot_x = 0, slot_w = 1, slot_dy = 2, slot_bias_block = 3, slot_reference = 5, slot_dy_wgrad = 13 };

// dst = saturate_cast<format>(src * scale); returns amax(|src|). One pass (scale_round_array).
float quantize_scaled(const float* src, float* dst, std::int64_t n, float scale, Format format) {
    return scale_round_array(format, src, dst, static_cast<std::size_t>(n), scale, Overflow::saturate);
}

// y(rows, cols) = y * dequant + b (per column).
MANTISSA_HOT void add_bias(float* __restrict y, const float* __restrict b, std::int64_t rows,
                           std::int64_t cols, float dequant) {
    for (std::int64_t r = 0; r < rows; ++r) {
        float* row = y + r * cols;
        if (dequant != 1.0f)
            for (std::int64_t c = 0; c < cols; ++c) row[c] = row[c] * dequant + b[c];
        else
            for (std::int64_t c = 0; c < cols; ++c) row[c] += b[c];
    }
}

#ifdef MANTISSA_ROUND_LANES
// One row of add_bias with the rounding in the registers before the store: the same product and
// sum (no FMA), round_output's bits, one pass over the row instead of two.
template <lanes::Method M>
MANTISSA_LANES_TARGET inline __m256 bias_epilogue8(__m256 acc, __m256 bias, bool scaled, __m256 dequant,
                                                   const lanes::Rounding& r) {
    return lanes::round8<M>(_mm256_add_ps(scaled ? _mm256_mul_ps(acc, dequant) : acc, bias), r);
}

template <lanes::Method M>
MANTISSA_LANES_TARGET void add_bias_and_round_lanes(float* y, const float* b, std::int64_t rows, std::int64_t cols,
                                                    float dequant, const lanes::Rounding& rounding) {
    const lanes::Rounding r = rounding;
    const bool scaled = dequant != 1.0f;
    const __m256 dq = _mm256_set1_ps(dequant);
    for (std::int64_t row = 0; row < rows; ++row) {
        float* yr = y + row * cols;
        std::int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
            _mm256_storeu_ps(yr + c, bias_epilogue8<M>(_mm256_loadu_ps(yr + c), _mm256_loadu_ps(b + c), scaled, dq, r));
        if (c < cols) {
            const __m256i tail = lanes::first_lanes(cols - c);
            _mm256_maskstore_ps(yr + c, tail,
                                bias_epilogue8<M>(_mm256_maskload_ps(yr + c, tail), _mm256_maskload_ps(b + c, tail),
                                                  scaled, dq, r));
        }
    }
}
#endif

// y = round_format(y * dequant + b), a few rows at a time (the bias epilogue in one pass).
void add_bias_and_round(float* y, const float* b, std::int64_t rows, std::int64_t cols, float dequant,
                        const RoundedStore& out) {
#ifdef MANTISSA_ROUND_LANES
    if (out.in_lanes)
        return lanes::with_method(out.rounding.method, [&](auto method) {
            add_bias_and_round_lanes<decltype(method)::value>(y, b, rows, cols, dequant, out.rounding);
        });
#endif
    const Format format = out.format;
    const std::int64_t step = std::max<std::int64_t>(1, cpu_detail::kPieceValues / std::max<std::int64_t>(1, cols));
    for (std::int64_t r = 0; r < rows; r += step) {
        const std::int64_t len = std::min(step, rows - r);
        add_bias(y + r * cols, b, len, cols, dequant);
        round_output(format, y + r * cols, len * cols);
    }
}

// The block sums of bias_grad_order.h over dy (rows x cols), as work items: item i is the row
// block i / chunks and its columns from (i % chunks) · kBiasColumns, at most kBiasColumns of them,
// with chunks = ⌈cols / kBiasColumns⌉. For items [i0, i1): sums[k · cols + c] = Σ dy[r][c] over
// block k's rows, in row order from +0, the columns' sums kept in a local array and stored once
// (a sum stored at every row would put two threads' columns in one cache line).
constexpr std::int64_t kBiasColumns = 64;
MANTISSA_HOT void block_column_sums(const float* __restrict dy, float* __restrict sums, std::int64_t rows,
                                    std::int64_t cols, std::int64_t i0, std::int64_t i1) {
    const std::int64_t chunks = (cols + kBiasColumns - 1) / kBiasColumns;
    for (std::int64_t i = i0; i < i1; ++i) {
        const std::int64_t k = i / chunks, c0 = i % chunks * kBiasColumns;
        const std::int64_t width = std::min(kBiasColumns, cols - c0);
        float acc[kBiasColumns] = {};
        const std::int64_t r1 = std::min(rows, (k + 1) * bias_grad_block_rows);
        for (std::int64_t r = k * bias_grad_block_rows; r < r1; ++r) {
            const float* row = dy + r * cols + c0;
            for (std::int64_t c = 0; c < width; ++c) acc[c] += row[c];
        }
        for (std::int64_t c = 0; c < width; ++c) sums[k * cols + c0 + c] = acc[c];
    }
}

// db = the block sums added in block order (bias_grad_order.h).
MANTISSA_HOT void add_block_sums(const float* __restrict sums, float* __restrict db, std::int64_t blocks,
                                 std::int64_t cols) {
    for (std::int64_t c = 0; c < cols; ++c) db[c] = 0.0f;
    for (std::int64_t k = 0; k < blocks; ++k)
        for (std::int64_t c = 0; c < cols; ++c) db[c] += sums[k * cols + c];
}

}  // namespace

MANTISSA_HOT void scale_in_place(float* __restrict data, std::int64_t n, float factor) {
    if (factor == 1.0f) return;
    for (std::int64_t i = 0; i < n; ++i) data[i] *= factor;
}

void CpuBackend::linear_forward_impl(LinearTensors& l, const Tensor& x_in, Tensor& y_out,
                                     std::int64_t batch, bool record_amax) {
    const CpuTensor& x = cpu(x_in);
    CpuTensor& y = cpu(y_out);
    CpuTensor& w = cpu(*l.weight);
    const std::int64_t in = w.cols(), out = w.rows();

    const float* x_op;
    const float* w_op;
    float dequant = 1.0f;
    float dq_x = 1.0f, dq_w = 1.0f;  // FP8 per tensor: each operand's share of dequant
    const bool fp8 = l.compute == Format::fp8_e4m3;
    bool decoded_in_fp32 = false;  // operands that are FP8 values times an FP32 scale: no bf16 matmul
    if (l.block) {  // both operands in blocks along K = in; NVFP4's tensor scales on the accumulator
        x_op = block_operand(*l.block, x, {batch, in, 1}, slot_x, dq_x, false,
                             keep_exponents_of(x, *l.block, batch, in));
        w_op = block_operand(*l.block, w, {out, in, 1}, slot_w, dq_w, false,
                             keep_exponents_of(w, *l.block, out, in));
        dequant = dq_x * dq_w;
    } else if (fp8 && static_cast<CpuFp8State&>(*l.fp8).history(Fp8Role::input).rowwise()) {
        // A scale per row of x and of W along K = in, decoded in FP32 (dequant 1).
        auto& state = static_cast<CpuFp8State&>(*l.fp8);
        AmaxHistory& hx = state.history(Fp8Role::input);
        AmaxHistory& hw = state.history(Fp8Role::weight);
        float* xq = scratch(slot_x, batch * in);
        float* wq = scratch(slot_w, out * in);
        const float amax_x = round_axiswise_fp8(Format::fp8_e4m3, x.data(), xq, static_cast<std::size_t>(batch),
                                                static_cast<std::size_t>(in), 1, hx.margin(), hx.power_of_two());
        const float amax_w = round_axiswise_fp8(Format::fp8_e4m3, std::as_const(w).data(), wq, static_cast<std::size_t>(out),
                                                static_cast<std::size_t>(in), 1, hw.margin(), hw.power_of_two());
        if (record_amax) {
            hx.record(amax_x);
            hw.record(amax_w);
        }
        x_op = xq;
        w_op = wq;
        decoded_in_fp32 = true;
    } else if (fp8) {
        auto& state = static_cast<CpuFp8State&>(*l.fp8);
        AmaxHistory& hx = state.history(Fp8Role::input);
        AmaxHistory& hw = state.history(Fp8Role::weight);
        CpuTensor& wc = cpu(*l.weight_compute);
        const float amax_w = quantized_weight(w, wc, hw);
        const float* wq = std::as_const(wc).data();
        float* xq = cpu(*l.saved_input).data();
        if (hx.current()) hx.use_amax(amax_of(x.data(), batch * in));
        const float amax_x = quantize_scaled(x.data(), xq, batch * in, hx.scale(), Format::fp8_e4m3);
        if (record_amax) {
            hw.record(amax_w);
            hx.record(amax_x);
        }
        dq_x = hx.scale_inv();
        dq_w = hw.scale_inv();
        dequant = dq_x * dq_w;
        x_op = xq;
        w_op = wq;
    } else {
        w_op = weight_operand(w, l.weight_compute, l.compute, slot_w);
        if (l.saved_input) {
            x_op = rounded_into(x, batch * in, l.saved_input->format(), cpu(*l.saved_input).data());
        } else {
            x_op = operand(x, batch * in, l.compute, slot_x);
        }
    }

    tap_operand(*l.weight, &TappedOperands::x, &TappedOperands::x_factor, x_op, batch * in, dq_x);
    tap_operand(*l.weight, &TappedOperands::w, &TappedOperands::w_factor, w_op, out * in, dq_w);

    float* yd = y.data();
    // Block operands are bf16 values (an element times its block's scale) but near MX's smallest
    // scales, where CpuMatmul's check sends the call to FP32.
    const bool bf16_ok = (fp8 && !decoded_in_fp32) || l.compute == Format::bf16 || l.block.has_value();
    if (l.fp16_accumulation) {
        fp16_accumulate_multiply(x_op, false, w_op, true, yd, batch, out, in, m_fp16_pack);
    } else {
        // x's and W's bf16 copies, kept for the backward (wgrad reads x, dgrad W) where they are
        // tensors' own values (not a scratch buffer).
        KeptBf16Bits kept;
        if (bf16_ok) {
            kept.a = kept_bf16_bits({l.saved_input, &x_in}, x_op, batch * in);
            kept.b = kept_bf16_bits({l.weight_compute, l.weight}, w_op, out * in);
        }
        m_matmul.multiply(x_op, false, w_op, true, yd, batch, out, in, bf16_ok, false, kept);
    }

    const float* b;
    if (l.bias_compute) {
        cast(*l.bias, *l.bias_compute);
        b = cpu(*l.bias_compute).data();
    } else {
        b = cpu(*l.bias).data();
    }
    // The epilogue's rows shared out among the threads (cpu_parallel.h): each row is its own.
    const RoundedStore rounded(y.format(), rounds_in_lanes());
    const std::int64_t rows_per_thread =
        std::max<std::int64_t>(1, cpu_detail::elementwise_min_per_thread / std::max<std::int64_t>(1, out));
    cpu_detail::for_ranges(batch, pass_threads(batch, rows_per_thread), 1, [&](std::int64_t r0, std::int64_t r1, int) {
        add_bias_and_round(yd + r0 * out, b, r1 - r0, out, dequant, rounded);
    });
}

void CpuBackend::scale_round_gradient(Format format, float* data, std::int64_t n, float factor) {
    if (factor == 1.0f) return round_gradient(format, data, n);
    // The FP8 dequantisation and the store in one pass, piece by piece in the L1 cache; one key
    // for the whole tensor, each piece from its own first index.
    const bool stochastic = m_stochastic_gradients && format != Format::fp32;
    const std::uint64_t key = gradient_key(format);
    cpu_detail::for_ranges(n, pass_threads(n, cpu_detail::elementwise_min_per_thread), cpu_detail::kPieceValues,
                           [&](std::int64_t first, std::int64_t last, int) {
        cpu_detail::for_pieces(first, last, [&](std::int64_t start, std::int64_t end) {
            const std::int64_t len = end - start;
            scale_in_place(data + start, len, factor);
            if (stochastic)
                round_array_stochastic(format, data + start, data + start, static_cast<std::size_t>(len), key,
                                       static_cast<std::uint64_t>(start));
            else
                round_output(format, data + start, len);
        });
    });
}

CpuBackend::MatmulBackwardOperands CpuBackend::matmul_backward_operands(
    Format compute, Fp8State* fp8_state, const CpuTensor& dy, std::int64_t n_dy, const CpuTensor& x,
    std::int64_t n_x, CpuTensor& w, Tensor* weight_compute, Tensor* saved_input, bool need_w, int x_slot,
    int w_slot, int dy_slot) {
    MatmulBackwardOperands o;
    const bool fp8 = compute == Format::fp8_e4m3;
    if (fp8) {
        auto& state = static_cast<CpuFp8State&>(*fp8_state);
        AmaxHistory& hg = state.history(Fp8Role::grad_output);
        float* q = scratch(dy_slot, n_dy);
        if (hg.current()) hg.use_amax(amax_of(dy.data(), n_dy));
        hg.record(quantize_gradient_fp8(dy.data(), q, n_dy, hg.scale()));
        o.dq_g = hg.scale_inv();
        o.dq_x = state.history(Fp8Role::input).scale_inv();
        o.dq_w = state.history(Fp8Role::weight).scale_inv();
        o.dy = q;
        o.x = std::as_const(cpu(*saved_input)).data();
        o.w = std::as_const(cpu(*weight_compute)).data();
    } else {
        o.dy = operand(dy, n_dy, compute, dy_slot);
        // Read-only (the const data()): the forward's bf16 copies of x and W stay current.
        o.x = saved_input ? std::as_const(cpu(*saved_input)).data() : operand(x, n_x, compute, x_slot);
        o.w = weight_compute ? std::as_const(cpu(*weight_compute)).data()
              : need_w       ? operand(w, w.numel(), compute, w_slot)
                             : nullptr;
    }
    o.dy_wgrad = o.dy;
    o.bf16_ok = o.bf16_ok_wgrad = fp8 || compute == Format::bf16;
    o.dq_g_wgrad = o.dq_g;
    trace_dy(o, dy, n_dy);
    return o;
}

void CpuBackend::trace_dy(MatmulBackwardOperands& o, const CpuTensor& dy, std::int64_t n) {
    o.dy_shadow = m_tracing ? unrounded(dy) : nullptr;
    o.dy_reference = o.dy_shadow ? o.dy_shadow : dy.data();
    if (!m_tracing) return;
    // Operands that are the reference itself (dy exact in the operand format, no shadow) flush
    // nothing: no counting pass.
    if (o.dy == o.dy_reference && (o.dy_wgrad == o.dy || o.dy_wgrad == nullptr)) return;
    // Either matmul's dy operand may flush values the reference keeps.
    const auto count = static_cast<std::size_t>(n);
    const std::int64_t zeros = count_zeros(o.dy_reference, count);
    o.flushed = count_zeros(o.dy, count) != zeros || (o.dy_wgrad != o.dy && count_zeros(o.dy_wgrad, count) != zeros);
}

const float* CpuBackend::block_operand(BlockFormat format, const CpuTensor& t, BlockAxes a, int slot, float& factor,
                                       bool gradient, std::int16_t* kept) {
    factor = 1.0f;
    const float* src = t.data();
    if (a.K == 0) return src;  // quantised later by the caller (a convolution's wgrad chunks)
    float* buf = scratch(slot, a.size());
    const auto outer = static_cast<std::size_t>(a.outer), K = static_cast<std::size_t>(a.K),
               inner = static_cast<std::size_t>(a.inner);
    const float tensor_scale = block_tensor_scale_of(format, t, a.size());
    std::optional<std::uint64_t> key;
    if (gradient && m_stochastic_gradients) key = next_stochastic_key();
    // While keep_operand_magnitudes asks (x in a statistics step's forward, for the what-if), the
    // tensor's amax comes from the quantiser's own block amaxes; W's the optimizer kept, and
    // NVFP4's tensor scale above keeps what it measured.
    const bool measure = m_keep_magnitudes && !kept_magnitude(t, a.size());
    float largest = 0.0f;
    factor = cpu_detail::round_block_operand_on(m_matmul.threads(), format, src, buf, outer, K, inner, tensor_scale,
                                                key, kept, measure ? &largest : nullptr);
    if (measure) keep_magnitude(t, a.size(), largest);
    return buf;
}

float CpuBackend::block_tensor_scale_of(BlockFormat format, const CpuTensor& t, std::int64_t n) {
    if (format != BlockFormat::nvfp4) return 1.0f;
    for (const TensorScale& m : m_tensor_scales)
        if (m.tensor == &t && m.stamp == t.stamp() && m.n == n) return m.scale;
    // nvfp4_tensor_scale of the finite amax, as block_tensor_scale takes it; on a statistics step
    // with what-if formats the amax comes from, or goes to, keep_operand_magnitudes' entries
    // (the optimizer measured W; the what-if needs x's).
    const std::optional<float> kept = kept_magnitude(t, n);
    const float amax = kept ? *kept : amax_of(t.data(), n);
    if (!kept && m_keep_magnitudes) keep_magnitude(t, n, amax);
    const float scale = nvfp4_tensor_scale(cpu_detail::finite_max_abs(t.data(), n, amax));
    TensorScale& slot = m_tensor_scales[m_next_tensor_scale];
    m_next_tensor_scale = (m_next_tensor_scale + 1) % m_tensor_scales.size();
    slot = {&t, t.stamp(), n, scale};
    return scale;
}

CpuBackend::MatmulBackwardOperands CpuBackend::block_backward_operands(BlockFormat format, const CpuTensor& dy,
                                                                       const CpuTensor& x, const CpuTensor& w,
                                                                       const BlockOperandAxes& axes, bool need_w) {
    MatmulBackwardOperands o;
    o.dy = block_operand(format, dy, axes.dy_dgrad, slot_dy, o.dq_g, true);
    o.dy_wgrad = block_operand(format, dy, axes.dy_wgrad, slot_dy_wgrad, o.dq_g_wgrad, true);
    o.x = block_operand(format, x, axes.x_wgrad, slot_x, o.dq_x);
    o.w = need_w ? block_operand(format, w, axes.w_dgrad, slot_w, o.dq_w) : nullptr;
    o.bf16_ok = o.bf16_ok_wgrad = true;
    trace_dy(o, dy, axes.dy_dgrad.size());
    return o;
}

CpuBackend::MatmulBackwardOperands CpuBackend::rowwise_backward_operands(CpuFp8State& state, const CpuTensor& dy,
                                                                         const CpuTensor& x, const CpuTensor& w,
                                                                         const BlockOperandAxes& axes, bool need_w) {
    // Each operand with a scale per row along its matmul's reduction: dy in e5m2 (stochastically
    // while the layer asks), W and x in e4m3.
    auto quantise = [&](Format element, const float* src, BlockAxes a, int slot, AmaxHistory& h) {
        float* q = scratch(slot, a.size());
        const auto outer = static_cast<std::size_t>(a.outer), K = static_cast<std::size_t>(a.K),
                   inner = static_cast<std::size_t>(a.inner);
        const float amax =
            element == Format::fp8_e5m2 && m_stochastic_gradients
                ? round_axiswise_fp8_stochastic(element, src, q, outer, K, inner, h.margin(), h.power_of_two(),
                                                next_stochastic_key())
                : round_axiswise_fp8(element, src, q, outer, K, inner, h.margin(), h.power_of_two());
        return std::pair<const float*, float>(q, amax);
    };
    AmaxHistory& hg = state.history(Fp8Role::grad_output);
    MatmulBackwardOperands o;
    const auto [dy_d, amax_dy] = quantise(Format::fp8_e5m2, dy.data(), axes.dy_dgrad, slot_dy, hg);
    hg.record(amax_dy);
    o.dy = dy_d;
    o.dy_wgrad = quantise(Format::fp8_e5m2, dy.data(), axes.dy_wgrad, slot_dy_wgrad, hg).first;
    o.x = quantise(Format::fp8_e4m3, x.data(), axes.x_wgrad, slot_x, state.history(Fp8Role::input)).first;
    if (need_w) o.w = quantise(Format::fp8_e4m3, w.data(), axes.w_dgrad, slot_w, state.history(Fp8Role::weight)).first;
    trace_dy(o, dy, axes.dy_dgrad.size());
    return o;
}

CpuBackend::MatmulBackwardOperands CpuBackend::per_gemm_backward_operands(const PerGemmBackward& g,
                                                                          const CpuTensor& dy, const CpuTensor& x,
                                                                          CpuTensor& w, bool need_w) {
    const ComputeFormat e4m3(Format::fp8_e4m3);
    const bool forward_fp8 = g.forward == e4m3;
    const std::int64_t n_dy = g.n_dy, n_x = g.n_x;  // (a convolution's wgrad axes are empty)
    auto* state = static_cast<CpuFp8State*>(g.fp8);
    MatmulBackwardOperands o;

    // dy scaled into e5m2 once, for whichever matmuls take it in FP8 (in dgrad's slot when dgrad
    // does, else in wgrad's: a dgrad in another format rounds dy into its own).
    const float* dy_fp8 = nullptr;
    float dq_dy_fp8 = 1.0f;
    if (g.dgrad == e4m3 || g.wgrad == e4m3) {
        AmaxHistory& hg = state->history(Fp8Role::grad_output);
        float* q = scratch(g.dgrad == e4m3 ? slot_dy : slot_dy_wgrad, n_dy);
        if (hg.current()) hg.use_amax(amax_of(dy.data(), n_dy));
        hg.record(quantize_gradient_fp8(dy.data(), q, n_dy, hg.scale()));
        dy_fp8 = q;
        dq_dy_fp8 = hg.scale_inv();
    }
    // dy for one matmul: FP8 (above), blocks along `axes`, or rounded to a tensor format.
    auto dy_for = [&](const ComputeFormat& f, BlockAxes axes, int slot, float& dq) -> const float* {
        if (f == e4m3) {
            dq = dq_dy_fp8;
            return dy_fp8;
        }
        if (f.block) return block_operand(*f.block, dy, axes, slot, dq, true);
        return operand(dy, n_dy, f.format, slot);
    };
    o.dy = dy_for(g.dgrad, g.axes.dy_dgrad, slot_dy, o.dq_g);
    o.dy_wgrad = dy_for(g.wgrad, g.axes.dy_wgrad, slot_dy_wgrad, o.dq_g_wgrad);

    // W for dgrad.
    if (need_w) {
        if (g.dgrad == e4m3) {
            AmaxHistory& hw = state->history(Fp8Role::weight);
            if (forward_fp8) {
                o.w = std::as_const(cpu(*g.weight_compute)).data();  // quantised by the forward
            } else {
                float* q = scratch(slot_w, w.numel());
                if (hw.current()) hw.use_amax(amax_of(std::as_const(w).data(), w.numel()));
                hw.record(scale_round_array(Format::fp8_e4m3, std::as_const(w).data(), q,
                                            static_cast<std::size_t>(w.numel()), hw.scale(), Overflow::saturate));
                o.w = q;
            }
            o.dq_w = hw.scale_inv();
        } else if (g.dgrad.block) {
            o.w = block_operand(*g.dgrad.block, w, g.axes.w_dgrad, slot_w, o.dq_w);
        } else if (g.weight_compute && g.weight_compute->format() == g.dgrad.format) {
            o.w = weight_operand(w, g.weight_compute, g.dgrad.format, slot_w);
        } else {
            o.w = operand(w, w.numel(), g.dgrad.format, slot_w);
        }
    }
    // x for wgrad.
    if (g.wgrad == e4m3) {
        AmaxHistory& hx = state->history(Fp8Role::input);
        if (forward_fp8) {
            o.x = std::as_const(cpu(*g.saved_input)).data();  // quantised by the forward
        } else {
            float* q = scratch(slot_x, n_x);
            if (hx.current()) hx.use_amax(amax_of(x.data(), n_x));
            hx.record(scale_round_array(Format::fp8_e4m3, x.data(), q, static_cast<std::size_t>(n_x), hx.scale(),
                                        Overflow::saturate));
            o.x = q;
        }
        o.dq_x = hx.scale_inv();
    } else if (g.wgrad.block) {
        o.x = block_operand(*g.wgrad.block, x, g.axes.x_wgrad, slot_x, o.dq_x);
    } else if (g.saved_input && g.saved_input->format() == g.wgrad.format) {
        o.x = std::as_const(cpu(*g.saved_input)).data();
    } else {
        o.x = operand(x, n_x, g.wgrad.format, slot_x);
    }

    const auto bf16_values = [&](const ComputeFormat& f) {
        return f == e4m3 || f == ComputeFormat(Format::bf16) || f.block.has_value();
    };
    o.bf16_ok = bf16_values(g.dgrad);
    o.bf16_ok_wgrad = bf16_values(g.wgrad);
    trace_dy(o, dy, n_dy);
    return o;
}

void CpuBackend::linear_backward_impl(LinearTensors& l, const Tensor& x_in, const Tensor& dy_in,
                                      Tensor* dx_out, std::int64_t batch, RoundingStats* weight_stats) {
    const CpuTensor& x = cpu(x_in);
    const CpuTensor& dy = cpu(dy_in);
    CpuTensor& w = cpu(*l.weight);
    const std::int64_t in = w.cols(), out = w.rows();
    const StochasticGradients stochastic(*this, l.stochastic_gradients);
    // C = op(A)·op(B): the layer's accumulation (FP16 emulated, or oneDNN's FP32).
    // B's bf16 copy (dgrad's W, wgrad's x) is the forward's where it kept one.
    auto multiply = [&](const float* a, bool ta, const float* b, bool tb, float* c, std::int64_t m, std::int64_t n,
                        std::int64_t k, bool bf16, bool a_unchanged, std::initializer_list<const Tensor*> b_owners) {
        if (l.fp16_accumulation) {
            fp16_accumulate_multiply(a, ta, b, tb, c, m, n, k, m_fp16_pack);
            return;
        }
        const KeptBf16Bits kept{.b = bf16 ? kept_bf16_bits(b_owners, b, k * n) : nullptr};
        m_matmul.multiply(a, ta, b, tb, c, m, n, k, bf16, a_unchanged, kept);
    };

    // The weight operand serves dx only (the first layer has none: no rounding pass for it).
    // Block formats: dgrad reduces over out (dy's rows, W's columns), wgrad over the batch (the
    // columns of dy and x).
    const BlockOperandAxes axes{.dy_dgrad = {batch, out, 1},
                                .w_dgrad = {1, out, in},
                                .dy_wgrad = {1, batch, out},
                                .x_wgrad = {1, batch, in}};
    const ComputeFormat forward = l.block ? ComputeFormat(*l.block) : ComputeFormat(l.compute);
    const bool rowwise = l.fp8 && static_cast<CpuFp8State&>(*l.fp8).history(Fp8Role::grad_output).rowwise();
    const MatmulBackwardOperands o =
        l.dgrad || l.wgrad
            ? per_gemm_backward_operands({forward, l.dgrad.value_or(forward), l.wgrad.value_or(forward), l.fp8,
                                          l.weight_compute, l.saved_input, axes, batch * out, batch * in},
                                         dy, x, w, dx_out != nullptr)
        : rowwise ? rowwise_backward_operands(static_cast<CpuFp8State&>(*l.fp8), dy, x, w, axes, dx_out != nullptr)
        : l.block ? block_backward_operands(*l.block, dy, x, w, axes, dx_out != nullptr)
                  : matmul_backward_operands(l.compute, l.fp8, dy, batch * out, x, batch * in, w, l.weight_compute,
                                             l.saved_input, dx_out != nullptr, slot_x, slot_w, slot_dy);
    tap_operand(*l.weight, &TappedOperands::dy, &TappedOperands::dy_factor, o.dy, batch * out, o.dq_g);
    const float *dy_op = o.dy, *dy_wgrad = o.dy_wgrad, *x_op = o.x, *w_op = o.w, *dy_shadow = o.dy_shadow, *dy_reference = o.dy_reference;
    const float dq_g = o.dq_g, dq_x = o.dq_x, dq_w = o.dq_w, dq_g_wgrad = o.dq_g_wgrad;
    const bool bf16_ok = o.bf16_ok, flushed = o.flushed;

    if (dx_out) {
        float* dx = cpu(*dx_out).data();
        multiply(dy_op, false, w_op, false, dx, batch, in, out, bf16_ok, false, {l.weight_compute, l.weight});
        finish_matmul_dgrad(*dx_out, dx, batch * in, dq_g * dq_w, dq_w, dy_shadow != nullptr, flushed,
                            [&](float* product) {
                                m_matmul.multiply(dy_reference, false, w_op, false, product, batch, in, out, false);
                            });
    }

    CpuTensor& gw = cpu(*l.grad_weight);
    // Right after dgrad (nothing writes the operands in between): where wgrad's dy is dgrad's,
    // dgrad's bf16 copy of it serves again. Without a dgrad, the previous product was another
    // layer's, whose A may sit in the same scratch with other values.
    multiply(dy_wgrad, true, x_op, false, gw.data(), out, in, batch, o.bf16_ok_wgrad, dx_out != nullptr,
             {l.saved_input, &x_in});
    if (!weight_stats) {
        scale_round_gradient(gw.format(), gw.data(), out * in, dq_g_wgrad * dq_x);
    } else {
        // Underflow is counted against the weight gradient computed in FP32 from dy_reference.
        const std::size_t n_w = static_cast<std::size_t>(out * in);
        const float dq = dq_g_wgrad * dq_x;
        if (!flushed) {
            // The dequantisation, the rounding and its counts block by block (the counts add up;
            // a stochastic rounding takes one key for the tensor, as unblocked).
            // Shared out in ranges of whole pieces (cpu_parallel.h), each range counting apart.
            const std::uint64_t key = gradient_key(gw.format());
            const std::int64_t n = out * in;
            const int threads = std::min(cpu_detail::kMaxPassThreads, pass_threads(n, cpu_detail::elementwise_min_per_thread));
            std::array<RoundingStats, cpu_detail::kMaxPassThreads> counts{};
            cpu_detail::for_ranges(n, threads, cpu_detail::kPieceValues,
                                   [&](std::int64_t first, std::int64_t last, int worker) {
                cpu_detail::for_pieces(first, last, [&](std::int64_t start, std::int64_t end) {
                    scale_in_place(gw.data() + start, end - start, dq);
                    round_gradient_with_stats(gw.format(), gw.data() + start, end - start,
                                              counts[static_cast<std::size_t>(worker)], key, start);
                });
            });
            for (int w = 0; w < threads; ++w) *weight_stats += counts[static_cast<std::size_t>(w)];
        } else {
            scale_round_gradient(gw.format(), gw.data(), out * in, dq);
            RoundingStats s;
            count_classes(gw.format(), gw.data(), n_w, s);
            // The zeros of gw whose reference is not zero: proven without the reference where
            // possible (cpu_flush_count.h), else from the reference matmul; the same count.
            std::int64_t flushed = cpu_detail::count_flushed_weight_gradient(
                dy_reference, x_op, gw.data(), batch, out, in, m_flush_scratch, m_matmul.threads());
            if (flushed < 0) {
                float* ref = scratch(slot_reference, out * in);
                m_matmul.multiply(dy_reference, true, x_op, false, ref, out, in, batch, false);
                flushed = cpu_detail::count_flushed_against_reference(ref, gw.data(),
                                                                      static_cast<std::int64_t>(n_w));
            }
            s.zeros_before = s.zeros - flushed;
            *weight_stats += s;
        }
    }

    CpuTensor& gb = cpu(*l.grad_bias);
    float* db = gb.data();
    // FP8, block formats and per GEMM: of the unquantised dy, as the convolution's dB. The blocks'
    // sums go to the threads in pieces of whole blocks, or of a block's columns where the blocks
    // are fewer than the threads, then are added in block order here: the same bits on any
    // thread count.
    const float* dy_bias = l.compute == Format::fp8_e4m3 || l.block || l.dgrad || l.wgrad ? dy.data() : dy_op;
    const std::int64_t blocks = bias_grad_blocks(batch);
    const std::int64_t items = blocks * ((out + kBiasColumns - 1) / kBiasColumns);
    float* block_sums = scratch(slot_bias_block, blocks * out);
    cpu_detail::for_ranges(items, pass_threads(batch * out, cpu_detail::elementwise_min_per_thread), 1,
                           [&](std::int64_t i0, std::int64_t i1, int) {
                               block_column_sums(dy_bias, block_sums, batch, out, i0, i1);
                           });
    add_block_sums(block_sums, db, blocks, out);
    round_output(gb.format(), db, out);
}

}  // namespace mantissa
