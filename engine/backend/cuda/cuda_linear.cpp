// CudaBackend: linear layers, forward and backward, with docs/numerics.md's rounding points, on cuBLASLt;
// and what the backend supports (op_support.h).
//
// Row-major tensors seen as column-major matrices (cuBLAS's convention):
//   forward   yᵀ(out, batch)  = W(out, in)      · xᵀ(in, batch)     "TN": A = W (T), B = x (N)
//   dX        dxᵀ(in, batch)  = Wᵀ(in, out)     · dyᵀ(out, batch)   "NN" (FP8: A = Wqᵀ copy, "TN")
//   dW        dWᵀ(in, out)    = xᵀ(in, batch)   · dy(batch, out)    "NT" (FP8: xqᵀ, dyqᵀ copies, "TN")
// FP8 GEMMs accept only "TN", hence the transposed byte copies (transpose_u8) in the backward,
// and sizes (in, out, batch) that are multiples of 16. Other sizes multiply the same quantised
// operands as bf16 (every e4m3 and e5m2 value is a bf16 value, the products are exact either way:
// the CPU backend does the same), so an FP8 layer of 10 outputs or an odd last batch still runs.
//
// Two output paths, chosen per call:
//   fused    cuBLASLt writes the output in its own type, adding the bias in its epilogue and, for
//            FP8, applying the dequantisation through its scale pointers (read on the device);
//   general  cuBLASLt writes FP32 into the workspace and linear_epilogue's kernels dequantise,
//            add the bias and round exactly as the CPU does, measuring the weight gradient's
//            rounding when asked. Taken for outputs in tf32/fp8 formats, for a bias whose storage
//            differs from the output's, for statistics, and whenever cuBLASLt has no fused
//            algorithm.
// Both differ from the CPU only in the FP32 accumulation order.
// Block-scaled (MX, NVFP4): each matmul's two operands rounded along its own reduction dimension
// by kernels/block_operand.cuh into bf16 values (the CPU's values bit for bit: block_round.cuh),
// multiplied by a bf16 GEMM with FP32 accumulation, NVFP4's two tensor-scale factors applied by
// the epilogue as FP8's dequantisation (read on the device); dB from the unquantised dy.
// FP16 accumulation (LinearTensors::fp16_accumulation): cuBLASLt's CUBLAS_COMPUTE_16F into fp16,
// copied exactly into FP32 for the epilogue kernels (the general path); the CPU emulates the same
// sums in order, the tensor cores add in their own order and width, so the two agree in
// distribution, not bit for bit (docs/numerics.md, "FP16 accumulation").
// FP8 recipes: current scaling takes each tensor's scale from its own amax on the device
// (current_fp8_scale) before the quantisation above; rowwise scaling quantises each operand with a
// scale per run along the same axes as the block formats, decoded in FP32 (kernels/fp8_current.cuh),
// into an FP32 GEMM; power-of-two scales in every recipe (kernels/fp8_scale_rule.cuh).
// The reference: CpuBackend::linear_forward_impl / linear_backward_impl (cpu/cpu_linear.cpp). The
// arguments are checked before either runs (backend_checks.cpp).
#include <algorithm>

#include "backend/bias_grad_order.h"
#include "backend/cuda/block_operand_args.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/fp8_scale_rule.cuh"
#include "backend/cuda/matmul_types.h"
#include "backend/cuda/op_support.h"
#include "error.h"

namespace mantissa::cuda {

std::string CudaBackend::unsupported(BackendOp op, Format format) const {
    const bool matmul = op == BackendOp::linear || op == BackendOp::conv2d || op == BackendOp::bmm;
    // Block-scaled operands are multiplied as bf16 values.
    const bool blocks = op == BackendOp::block_scaled || op == BackendOp::block_scaled_conv;
    const Support support = matmul   ? matmul_support(format, m_cc)
                            : blocks ? matmul_support(Format::bf16, m_cc)
                                     : Support{true, {}};
    return cuda_op_unsupported(op, format, support, m_name);
}

void CudaBackend::check_matmul_format(Format compute, const std::string& layer) const {
    const Support s = matmul_support(compute, m_cc);
    if (!s.supported)
        throw Error("Layer " + layer + " cannot compute in " + std::string(format_name(compute)) + " on " + m_name +
                    ": " + s.reason + ". Choose another precision for it.");
}

void CudaBackend::run_matmul(const MatmulCall& call, const char* what) {
    if (!m_matmul->run(call, m_stream))
        throw Error(std::string("cuBLASLt has no algorithm for the ") + what + " matmul (" + std::to_string(call.m) +
                    " x " + std::to_string(call.n) + " x " + std::to_string(call.k) + ") on " + m_name + ".");
}

float* CudaBackend::product_in_fp32(MatmulCall call, std::int64_t n, bool fp16_accumulation, const char* what) {
    auto* acc = static_cast<float*>(scratch(slot_acc, static_cast<std::size_t>(n) * sizeof(float)));
    if (!fp16_accumulation) {
        call.d = acc;
        call.d_type = CUDA_R_32F;
        run_matmul(call, what);
        return acc;
    }
    // The FP16 sums are fp16 values: their FP32 copy is exact, and the epilogues take it as any
    // FP32 accumulator.
    call.compute = CUBLAS_COMPUTE_16F;
    call.d = scratch(slot_acc16, static_cast<std::size_t>(n) * 2);
    call.d_type = CUDA_R_16F;
    run_matmul(call, what);
    launch_cast(call.d, fmt_fp16, 1.0f, acc, fmt_fp32, n, false, m_stream);
    return acc;
}

const void* CudaBackend::as_bf16(const void* fp8_values, int fmt, std::int64_t n, Slot slot) {
    void* buf = scratch(slot, static_cast<std::size_t>(n) * 2);
    launch_cast(fp8_values, fmt, 1.0f, buf, fmt_bf16, n, false, m_stream);
    return buf;
}

const void* CudaBackend::transposed_fp8(const void* values, std::int64_t rows, std::int64_t cols) {
    auto* t = static_cast<std::uint8_t*>(scratch(slot_tw, static_cast<std::size_t>(rows * cols)));
    launch_transpose_u8(static_cast<const std::uint8_t*>(values), rows, cols, t, m_stream);
    return t;
}

const void* CudaBackend::operand(const CudaTensor& t, std::int64_t n, Format compute, Slot slot) {
    require_plain(t, "matmul");
    if (storage_type(t.format()) == operand_type(compute) && format_contains(compute, t.format())) return t.data();
    const Format target = compute == Format::tf32 ? Format::tf32 : compute;  // fp32 storage for tf32
    void* buf = scratch(slot, static_cast<std::size_t>(n) * static_cast<std::size_t>(format_bytes(target)));
    launch_cast(t.data(), code(t.format()), 1.0f, buf, code(target), n, false, m_stream);
    return buf;
}

void CudaBackend::linear_forward_impl(LinearTensors& l, const Tensor& x_in, Tensor& y_out, std::int64_t batch,
                                      bool record_amax) {
    activate();
    const CudaTensor& x = cuda(x_in);
    CudaTensor& y = cuda(y_out);
    CudaTensor& w = cuda(*l.weight);
    const std::int64_t in = w.cols(), out = w.rows();
    const bool fp8 = l.compute == Format::fp8_e4m3;
    const bool rowwise = fp8 && static_cast<CudaFp8State&>(*l.fp8).recipe().scaling == Fp8Scaling::rowwise;
    check_matmul_format(l.block ? Format::bf16 : rowwise ? Format::fp32 : l.compute, w.desc().name);
    require_plain(w, "linear_forward");
    require_plain(x, "linear_forward");
    y.m_multiplier = 1.0f;

    MatmulCall call;
    call.m = out;
    call.n = batch;
    call.k = in;
    call.trans_a = true;
    call.lda = in;
    call.trans_b = false;
    call.ldb = in;
    call.ldd = out;
    call.compute = compute_type(l.compute);
    const float* dq_a = nullptr;
    const float* dq_b = nullptr;
    bool fused_allowed = true;
    if (l.block) {  // both operands in blocks along K = in
        block_tensor_amax(*l.block, w, in * out, block_w);
        block_tensor_amax(*l.block, x, batch * in, block_x);
        const BlockOperand wo = block_operand(*l.block, w, out, in, 1, slot_w, block_w, nullptr);
        const BlockOperand xo = block_operand(*l.block, x, batch, in, 1, slot_x, block_x, nullptr);
        call.a = wo.values;
        call.b = xo.values;
        call.a_type = call.b_type = CUDA_R_16BF;
        dq_a = wo.factor;
        dq_b = xo.factor;
        fused_allowed = dq_a == nullptr;  // NVFP4's factors: the epilogue kernel applies them
    } else if (rowwise) {  // a scale per row of W and of x along K = in, decoded in FP32: no dequantisation
        auto& state = static_cast<CudaFp8State&>(*l.fp8);
        call.a = rowwise_operand(state, Format::fp8_e4m3, w, out, in, 1, slot_w,
                                 record_amax ? state.pending(Fp8Role::weight) : nullptr, nullptr);
        call.b = rowwise_operand(state, Format::fp8_e4m3, x, batch, in, 1, slot_x,
                                 record_amax ? state.pending(Fp8Role::input) : nullptr, nullptr);
        call.a_type = call.b_type = CUDA_R_32F;
    } else if (fp8) {
        auto& state = static_cast<CudaFp8State&>(*l.fp8);
        quantize_forward_fp8(state, w, *l.weight_compute, x, *l.saved_input, batch * in, record_amax);
        auto* wq = static_cast<std::uint8_t*>(cuda(*l.weight_compute).data());
        auto* xq = static_cast<std::uint8_t*>(cuda(*l.saved_input).data());
        call.a = wq;
        call.b = xq;
        call.a_type = call.b_type = CUDA_R_8F_E4M3;
        dq_a = state.scale_inv(Fp8Role::weight);
        dq_b = state.scale_inv(Fp8Role::input);
        if (!fp8_native_shape(in, out, batch)) {
            call.a = as_bf16(wq, fmt_e4m3, in * out, slot_w);
            call.b = as_bf16(xq, fmt_e4m3, batch * in, slot_x);
            call.a_type = call.b_type = CUDA_R_16BF;
            fused_allowed = false;  // the dequantisation happens in the epilogue kernel
        }
    } else {
        if (l.weight_compute) {
            cast(w, *l.weight_compute);
            call.a = operand(cuda(*l.weight_compute), in * out, l.compute, slot_w);
        } else {
            call.a = operand(w, in * out, l.compute, slot_w);
        }
        if (l.saved_input) {
            CudaTensor& s = cuda(*l.saved_input);
            launch_cast(x.data(), code(x.format()), 1.0f, s.data(), code(s.format()), batch * in, false, m_stream);
            s.m_multiplier = 1.0f;
            call.b = operand(s, batch * in, l.compute, slot_x);
        } else {
            call.b = operand(x, batch * in, l.compute, slot_x);
        }
        call.a_type = call.b_type = operand_type(l.compute);
    }

    const CudaTensor* bias = &cuda(*l.bias);
    if (l.bias_compute) {
        cast(*l.bias, *l.bias_compute);
        bias = &cuda(*l.bias_compute);
    }
    require_plain(*bias, "linear_forward");
    if (batch == 0) return;

    if (fused_allowed && !l.fp16_accumulation && fused_output_ok(call.a_type, y.format()) &&
        storage_type(bias->format()) == storage_type(y.format())) {
        MatmulCall fused = call;
        fused.d = y.data();
        fused.d_type = storage_type(y.format());
        fused.bias = bias->data();
        fused.a_scale = dq_a;
        fused.b_scale = dq_b;
        if (m_matmul->run(fused, m_stream)) {
            ++m_fused_matmuls;
            return;
        }
    }
    ++m_unfused_matmuls;
    const float* acc = product_in_fp32(call, batch * out, l.fp16_accumulation, "forward");
    launch_bias_round(acc, batch, out, dq_a, dq_b, bias->data(), code(bias->format()), y.data(), code(y.format()),
                      m_stream);
}

void CudaBackend::linear_backward_impl(LinearTensors& l, const Tensor& x_in, const Tensor& dy_in, Tensor* dx_out,
                                       std::int64_t batch, RoundingStats* weight_stats) {
    activate();
    const CudaTensor& x = cuda(x_in);
    const CudaTensor& dy = cuda(dy_in);
    CudaTensor& w = cuda(*l.weight);
    const std::int64_t in = w.cols(), out = w.rows();
    const bool fp8 = l.compute == Format::fp8_e4m3;
    const bool rowwise = fp8 && static_cast<CudaFp8State&>(*l.fp8).recipe().scaling == Fp8Scaling::rowwise;
    const bool per_gemm = l.dgrad || l.wgrad;
    if (!per_gemm) check_matmul_format(l.block ? Format::bf16 : rowwise ? Format::fp32 : l.compute, w.desc().name);
    require_plain(dy, "linear_backward");
    CudaTensor& gw = cuda(*l.grad_weight);
    CudaTensor& gb = cuda(*l.grad_bias);
    gw.m_multiplier = gb.m_multiplier = 1.0f;
    if (dx_out) cuda(*dx_out).m_multiplier = 1.0f;

    // Each backward matmul's operands: dgrad's (dX = dy·W: dy (batch, out), W (out, in)) and
    // wgrad's (dW = dyᵀ·x: dy (batch, out), x (batch, in)), with their types and dequantisation
    // factors (null: none). `native`: FP8 operands for cuBLASLt's FP8 kernels, which take only the
    // "TN" layout: W's, x's and dy's transposed byte copies are made below.
    BackwardGemm dgrad, wgrad;
    const void* bias_src = dy.data();      // what the bias gradient sums: the unquantised dy but for
    int bias_src_fmt = code(dy.format());  // a uniform tensor format (its operand values, below)
    const bool fp8_native = fp8 && !rowwise && fp8_native_shape(in, out, batch);
    // Stochastic gradients (LinearTensors::stochastic_gradients): dX and dW narrower than FP32 and
    // the FP8 or block-scaled dy operands are rounded with keys drawn on the device
    // (draw_stochastic_key), in the CPU backend's order, so both draw the same sequence; dB rounds
    // to nearest, as there.
    const bool stochastic = l.stochastic_gradients;
    auto dy_key = [&] { return stochastic ? draw_stochastic_key(nullptr) : nullptr; };
    if (per_gemm) {
        per_gemm_backward_operands(l, x, dy, w, batch, dx_out != nullptr, dgrad, wgrad);
    } else if (l.block) {
        // dgrad reduces over out (dy's rows, W's columns), wgrad over the batch (dy's and x's
        // columns), as the CPU's axes; dy's two roundings take their keys first, in the CPU's order.
        const BlockFormat f = *l.block;
        block_tensor_amax(f, dy, batch * out, block_dy);
        const BlockOperand g = block_operand(f, dy, batch, out, 1, slot_dy, block_dy, dy_key());
        const BlockOperand gt = block_operand(f, dy, 1, batch, out, slot_tdy, block_dy, dy_key());
        block_tensor_amax(f, x, batch * in, block_x);
        const BlockOperand xo = block_operand(f, x, 1, batch, in, slot_tx, block_x, nullptr);
        BlockOperand wo;
        if (dx_out) {
            block_tensor_amax(f, w, in * out, block_w);
            wo = block_operand(f, w, 1, out, in, slot_tw, block_w, nullptr);
        }
        dgrad = {g.values, wo.values, CUDA_R_16BF, CUDA_R_16BF, g.factor, wo.factor};
        wgrad = {gt.values, xo.values, CUDA_R_16BF, CUDA_R_16BF, gt.factor, xo.factor};
    } else if (rowwise) {
        // The same axes as the block formats, a scale per run, decoded in FP32 (an FP32 GEMM): dy in
        // e5m2 (stochastically, dgrad's key then wgrad's, as the CPU draws them), x and W in e4m3;
        // dgrad's dy records the step's gradient amax.
        auto& state = static_cast<CudaFp8State&>(*l.fp8);
        const float* g = rowwise_operand(state, Format::fp8_e5m2, dy, batch, out, 1, slot_dy,
                                         state.pending(Fp8Role::grad_output), dy_key());
        const float* gt = rowwise_operand(state, Format::fp8_e5m2, dy, 1, batch, out, slot_tdy, nullptr, dy_key());
        const float* xo = rowwise_operand(state, Format::fp8_e4m3, x, 1, batch, in, slot_tx, nullptr, nullptr);
        const float* wo =
            dx_out ? rowwise_operand(state, Format::fp8_e4m3, w, 1, out, in, slot_tw, nullptr, nullptr) : nullptr;
        dgrad = {g, wo, CUDA_R_32F, CUDA_R_32F};
        wgrad = {gt, xo, CUDA_R_32F, CUDA_R_32F};
    } else if (fp8) {
        auto& state = static_cast<CudaFp8State&>(*l.fp8);
        // A gradient rounded stochastically takes the pass's key first, as the CPU's
        // quantize_gradient_fp8 (its dX and dW take theirs after, in the order the CPU draws them).
        std::uint8_t* q = quantize_grad_fp8(state, dy, batch * out, dy_key());
        const float* dq_g = state.scale_inv(Fp8Role::grad_output);
        const void* x_op = cuda(*l.saved_input).data();
        const void* w_op = cuda(*l.weight_compute).data();
        // TE's fused bias gradient: of the unquantised dy.
        if (fp8_native) {
            dgrad = {q, w_op, CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, dq_g, state.scale_inv(Fp8Role::weight), true};
            wgrad = {q, x_op, CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, dq_g, state.scale_inv(Fp8Role::input), true};
        } else {  // the same values as bf16 operands, in the plain layouts below
            const void* g = as_bf16(q, fmt_e5m2, batch * out, slot_tdy);
            dgrad = {g,           as_bf16(w_op, fmt_e4m3, in * out, slot_tw),
                     CUDA_R_16BF, CUDA_R_16BF,
                     dq_g,        state.scale_inv(Fp8Role::weight)};
            wgrad = {g,           as_bf16(x_op, fmt_e4m3, batch * in, slot_tx),
                     CUDA_R_16BF, CUDA_R_16BF,
                     dq_g,        state.scale_inv(Fp8Role::input)};
        }
    } else {
        const void* g = operand(dy, batch * out, l.compute, slot_dy);
        const void* x_op = l.saved_input ? operand(cuda(*l.saved_input), batch * in, l.compute, slot_x)
                                         : operand(x, batch * in, l.compute, slot_x);
        const void* w_op = l.weight_compute ? operand(cuda(*l.weight_compute), in * out, l.compute, slot_w)
                                            : operand(w, in * out, l.compute, slot_w);
        const cudaDataType_t t = operand_type(l.compute);
        dgrad = {g, w_op, t, t};
        wgrad = {g, x_op, t, t};
        dgrad.compute = wgrad.compute = compute_type(l.compute);
        // g holds dy's values in the compute format's storage (dy itself when it already did).
        bias_src = g;
        bias_src_fmt = g == dy.data() ? code(dy.format()) : code(l.compute);
    }

    // A product into `dst` of `n` values: fused when possible (FP8's factors through cuBLASLt's
    // scale pointers where its FP8 kernels run, none otherwise), else FP32 workspace + scale_round
    // (rounding stochastically with the pass's key, when there is one).
    // A is the other operand (W, x), B is dy: the CPU's dX x (dq_g x dq_w), dW x (dq_g x dq_x).
    auto product = [&](MatmulCall call, const BackwardGemm& g, CudaTensor& dst, std::int64_t n,
                       unsigned long long* stats, const std::uint64_t* key, const char* what) {
        const float* scale_a = g.dq_other;
        const float* scale_b = g.dq_dy;
        const bool scaled = scale_a != nullptr || scale_b != nullptr;
        if (!stats && !key && !l.fp16_accumulation && (g.native || !scaled) &&
            fused_output_ok(call.a_type, dst.format())) {
            MatmulCall fused = call;
            fused.d = dst.data();
            fused.d_type = storage_type(dst.format());
            fused.a_scale = scale_a;
            fused.b_scale = scale_b;
            if (m_matmul->run(fused, m_stream)) {
                ++m_fused_matmuls;
                return;
            }
        }
        ++m_unfused_matmuls;
        const float* acc = product_in_fp32(call, n, l.fp16_accumulation, what);
        launch_scale_round(acc, n, scale_a, scale_b, dst.data(), code(dst.format()), stats, m_stream, key);
    };
    auto gradient_key = [&](const Tensor& g) {
        return stochastic && g.format() != Format::fp32 ? draw_stochastic_key(nullptr) : nullptr;
    };

    const std::uint64_t* dx_key = dx_out ? gradient_key(*dx_out) : nullptr;
    if (dx_out && batch > 0) {
        MatmulCall call;
        call.m = in;
        call.n = batch;
        call.k = out;
        call.compute = dgrad.compute;
        call.b = dgrad.dy;
        call.b_type = dgrad.dy_type;
        call.trans_b = false;
        call.ldb = out;
        call.ldd = in;
        call.a_type = dgrad.other_type;
        if (dgrad.native) {
            call.a = transposed_fp8(dgrad.other, out, in);
            call.trans_a = true;
            call.lda = out;
        } else {
            call.a = dgrad.other;
            call.trans_a = false;
            call.lda = in;
        }
        // CPU: dx x (dq_g x dq_w); the fused path multiplies by A's (W) and B's (dy) factors.
        product(call, dgrad, cuda(*dx_out), batch * in, nullptr, dx_key, "input-gradient");
    }

    unsigned long long* stats = weight_stats_counters(weight_stats, out * in);
    const std::uint64_t* dw_key = gradient_key(gw);
    if (batch > 0) {
        MatmulCall call;
        call.m = in;
        call.n = out;
        call.k = batch;
        call.compute = wgrad.compute;
        call.a_type = wgrad.other_type;
        call.b_type = wgrad.dy_type;
        call.ldd = in;
        if (wgrad.native) {
            auto* xt = static_cast<std::uint8_t*>(scratch(slot_tx, static_cast<std::size_t>(batch * in)));
            auto* dyt = static_cast<std::uint8_t*>(scratch(slot_tdy, static_cast<std::size_t>(batch * out)));
            launch_transpose_u8(static_cast<const std::uint8_t*>(wgrad.other), batch, in, xt, m_stream);
            launch_transpose_u8(static_cast<const std::uint8_t*>(wgrad.dy), batch, out, dyt, m_stream);
            call.a = xt;
            call.trans_a = true;
            call.lda = batch;
            call.b = dyt;
            call.trans_b = false;
            call.ldb = batch;
        } else {
            call.a = wgrad.other;
            call.trans_a = false;
            call.lda = in;
            call.b = wgrad.dy;
            call.trans_b = true;
            call.ldb = out;
        }
        // CPU: dW x (dq_g x dq_x); A is x, B is dy.
        product(call, wgrad, gw, out * in, stats, dw_key, "weight-gradient");
    } else {
        launch_fill_bits(gw.data(), format_bytes(gw.format()), 0, out * in, m_stream);  // an empty sum
    }
    const std::int64_t bias_blocks = bias_grad_blocks(batch);
    float* bias_partial = nullptr;  // the block sums: one block needs none
    if (bias_blocks > 1) {
        const auto bytes = static_cast<std::size_t>(bias_blocks * out) * sizeof(float);
        bias_partial = static_cast<float*>(scratch(slot_bias_blocks, bytes));
    }
    launch_bias_grad(bias_src, bias_src_fmt, batch, out, bias_partial, gb.data(), code(gb.format()), m_stream);

    collect_weight_stats(weight_stats, stats, out * in, batch == 0);
}

// ---- a precision per matmul

CudaBackend::BackwardFormats CudaBackend::backward_formats(Format compute, const std::optional<BlockFormat>& block,
                                                           const std::optional<ComputeFormat>& dgrad,
                                                           const std::optional<ComputeFormat>& wgrad,
                                                           const std::string& layer) const {
    const auto own_or_forward = [&](const std::optional<ComputeFormat>& own) {
        return own ? *own : block ? ComputeFormat(*block) : ComputeFormat(compute);
    };
    BackwardFormats f{own_or_forward(dgrad), own_or_forward(wgrad), !block && compute == Format::fp8_e4m3};
    check_matmul_format(f.dgrad.block ? Format::bf16 : f.dgrad.format, layer + " (dgrad)");
    check_matmul_format(f.wgrad.block ? Format::bf16 : f.wgrad.format, layer + " (wgrad)");
    return f;
}

void CudaBackend::per_gemm_backward_operands(const LinearTensors& l, const CudaTensor& x, const CudaTensor& dy,
                                             const CudaTensor& w, std::int64_t batch, bool need_w, BackwardGemm& dgrad,
                                             BackwardGemm& wgrad) {
    const std::int64_t in = w.cols(), out = w.rows();
    const std::int64_t n_dy = batch * out;
    const ComputeFormat e4m3(Format::fp8_e4m3);
    const BackwardFormats formats = backward_formats(l.compute, l.block, l.dgrad, l.wgrad, w.desc().name);
    const ComputeFormat &fd = formats.dgrad, &fw = formats.wgrad;
    const bool forward_fp8 = formats.forward_fp8;
    auto* state = static_cast<CudaFp8State*>(l.fp8);
    const bool native = fp8_native_shape(in, out, batch);  // cuBLASLt's FP8 kernels take these sizes
    const bool stochastic = l.stochastic_gradients;
    dgrad.compute = compute_type(fd.format);
    wgrad.compute = compute_type(fw.format);
    dgrad.native = fd == e4m3 && native;
    wgrad.native = fw == e4m3 && native;

    // dy scaled into e5m2 once, for whichever matmuls take it in FP8 (its key first).
    std::uint8_t* dy_fp8 = nullptr;
    if (fd == e4m3 || fw == e4m3)
        dy_fp8 = quantize_grad_fp8(*state, dy, n_dy, stochastic ? draw_stochastic_key(nullptr) : nullptr);
    // dy for one matmul: FP8 (above), blocks along its reduction (a key of its own), or rounded to
    // a tensor format.
    const auto dy_for = [&](const ComputeFormat& f, bool for_dgrad, BackwardGemm& g) {
        const Slot slot = for_dgrad ? slot_gemm_dy_dgrad : slot_gemm_dy_wgrad;
        if (f == e4m3) {
            g.dq_dy = state->scale_inv(Fp8Role::grad_output);
            g.dy = g.native ? static_cast<const void*>(dy_fp8) : as_bf16(dy_fp8, fmt_e5m2, n_dy, slot);
            g.dy_type = g.native ? CUDA_R_8F_E5M2 : CUDA_R_16BF;
        } else if (f.block) {
            block_tensor_amax(*f.block, dy, n_dy, block_dy);
            const std::uint64_t* key = stochastic ? draw_stochastic_key(nullptr) : nullptr;
            const BlockOperand o = for_dgrad ? block_operand(*f.block, dy, batch, out, 1, slot, block_dy, key)
                                             : block_operand(*f.block, dy, 1, batch, out, slot, block_dy, key);
            g.dy = o.values;
            g.dq_dy = o.factor;
            g.dy_type = CUDA_R_16BF;
        } else {
            g.dy = operand(dy, n_dy, f.format, slot);
            g.dy_type = operand_type(f.format);
        }
    };
    dy_for(fd, true, dgrad);
    dy_for(fw, false, wgrad);

    // An FP8 operand of the forward's (its quantised copy) or quantised here with its role's scale
    // (current scaling: from its own amax), its amax recorded, as the CPU does.
    const auto fp8_operand = [&](Fp8Role role, const CudaTensor& t, std::int64_t n, Tensor* forward_copy, Slot slot,
                                 Slot bf16_slot, BackwardGemm& g) {
        const void* q = forward_fp8 ? cuda(*forward_copy).data() : quantize_role_fp8(*state, role, t, n, slot);
        g.dq_other = state->scale_inv(role);
        g.other = g.native ? q : as_bf16(q, fmt_e4m3, n, bf16_slot);
        g.other_type = g.native ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    };
    // The other operand of one matmul (W for dgrad, x for wgrad, its `copy` the forward's cast of
    // it): FP8 (above), in blocks along the matmul's reduction, or rounded to a tensor format.
    const auto other_for = [&](const ComputeFormat& f, Fp8Role role, const CudaTensor& t, Tensor* copy,
                               std::int64_t rows, Slot slot, Slot bf16_slot, BlockState state, BackwardGemm& g) {
        const std::int64_t n = rows * in;
        if (f == e4m3) {
            fp8_operand(role, t, n, copy, slot, bf16_slot, g);
        } else if (f.block) {  // along the rows: W's columns (out), x's columns (the batch)
            block_tensor_amax(*f.block, t, n, state);
            const BlockOperand o = block_operand(*f.block, t, 1, rows, in, slot, state, nullptr);
            g.other = o.values;
            g.dq_other = o.factor;
            g.other_type = CUDA_R_16BF;
        } else {
            const bool own = copy && copy->format() == f.format;
            g.other = operand(own ? cuda(*copy) : t, n, f.format, slot);
            g.other_type = operand_type(f.format);
        }
    };
    if (need_w) other_for(fd, Fp8Role::weight, w, l.weight_compute, out, slot_gemm_w, slot_tw, block_w, dgrad);
    other_for(fw, Fp8Role::input, x, l.saved_input, batch, slot_gemm_x, slot_tx, block_x, wgrad);
}

// ---- block-scaled operands

void CudaBackend::block_tensor_amax(BlockFormat format, const CudaTensor& t, std::int64_t n, BlockState state) {
    if (format != BlockFormat::nvfp4) return;  // MX has no tensor scale
    require_plain(t, "block-scaled matmul");
    auto* words = static_cast<std::uint32_t*>(scratch(slot_block_state, block_states * 2 * sizeof(std::uint32_t)));
    launch_block_tensor_amax(t.data(), code(t.format()), n, words + 2 * state, m_stream);
}

CudaBackend::BlockOperand CudaBackend::block_operand(BlockFormat format, const CudaTensor& t, std::int64_t outer,
                                                     std::int64_t K, std::int64_t inner, Slot slot, BlockState state,
                                                     const std::uint64_t* key) {
    require_plain(t, "block-scaled matmul");
    return round_block_buffer(format, t.data(), code(t.format()),
                              scratch(slot, static_cast<std::size_t>(outer * K * inner) * 2), outer, K, inner, state,
                              key);
}

const std::uint64_t* CudaBackend::kept_key(const std::uint64_t* key) {
    auto* copy = static_cast<std::uint64_t*>(scratch(slot_kept_key, sizeof(std::uint64_t)));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(copy, key, sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, m_stream));
    return copy;
}

CudaBackend::BlockOperand CudaBackend::round_block_buffer(BlockFormat format, const void* src, int src_fmt, void* dst,
                                                          std::int64_t outer, std::int64_t K, std::int64_t inner,
                                                          BlockState state, const std::uint64_t* key,
                                                          std::int64_t key_pass, bool k_major_index) {
    BlockOperandArgs a = block_operand_args(format);
    a.src = src;
    a.src_fmt = src_fmt;
    a.dst = static_cast<std::uint16_t*>(dst);
    a.outer = outer;
    a.K = K;
    a.inner = inner;
    a.key = key;
    a.key_pass = key_pass;
    a.k_major_index = k_major_index;
    BlockOperand o;
    o.values = a.dst;
    if (a.nvfp4) {
        // [amax bits, factor] per state; the amax taken by block_tensor_amax before this call.
        auto* words = static_cast<std::uint32_t*>(scratch(slot_block_state, block_states * 2 * sizeof(std::uint32_t)));
        a.tensor_amax = words + 2 * state;
        a.factor = reinterpret_cast<float*>(words + 2 * state + 1);
        o.factor = a.factor;
    }
    launch_round_block_operand(a, m_stream);
    return o;
}

// ---- FP8 operands with a scale per row (rowwise scaling)

const float* CudaBackend::rowwise_operand(const CudaFp8State& state, Format element, const CudaTensor& t,
                                          std::int64_t outer, std::int64_t K, std::int64_t inner, Slot slot,
                                          std::uint32_t* amax, const std::uint64_t* key) {
    require_plain(t, "rowwise FP8 matmul");
    const FormatInfo& f = format_info(element);
    RowwiseArgs a;
    a.src = t.data();
    a.src_fmt = code(t.format());
    a.dst = static_cast<float*>(scratch(slot, static_cast<std::size_t>(outer * K * inner) * sizeof(float)));
    a.outer = outer;
    a.K = K;
    a.inner = inner;
    a.grid = {f.mantissa_bits, f.min_exponent, f.max_exponent, f.max_finite};
    a.margin = state.recipe().margin;
    a.power_of_two = state.recipe().power_of_two;
    a.amax = amax;
    a.key = key;
    launch_round_rowwise(a, m_stream);
    return a.dst;
}

// ---- what linear and conv2d share

void CudaBackend::current_fp8_scale(CudaFp8State& state, Fp8Role role, const CudaTensor& t, std::int64_t n) {
    const Fp8Recipe& r = state.recipe();
    if (r.scaling != Fp8Scaling::current) return;
    launch_fp8_current_scale(t.data(), code(t.format()), n, state.device_state(), static_cast<int>(role),
                             role == Fp8Role::grad_output ? 57344.0f : 448.0f, r.margin, r.power_of_two, m_stream);
}

void CudaBackend::quantize_forward_fp8(CudaFp8State& state, const CudaTensor& w, Tensor& wq, const CudaTensor& x,
                                       Tensor& xq, std::int64_t n_x, bool record_amax) {
    current_fp8_scale(state, Fp8Role::weight, w, w.numel());
    current_fp8_scale(state, Fp8Role::input, x, n_x);
    launch_quantize_fp8(w.data(), code(w.format()), w.numel(), state.scale(Fp8Role::weight),
                        static_cast<std::uint8_t*>(cuda(wq).data()), true,
                        record_amax ? state.pending(Fp8Role::weight) : nullptr, m_stream);
    launch_quantize_fp8(x.data(), code(x.format()), n_x, state.scale(Fp8Role::input),
                        static_cast<std::uint8_t*>(cuda(xq).data()), true,
                        record_amax ? state.pending(Fp8Role::input) : nullptr, m_stream);
    written(wq);
    written(xq);
}

std::uint8_t* CudaBackend::quantize_grad_fp8(CudaFp8State& state, const CudaTensor& dy, std::int64_t n,
                                             const std::uint64_t* key) {
    auto* q = static_cast<std::uint8_t*>(scratch(slot_dy, static_cast<std::size_t>(n)));
    current_fp8_scale(state, Fp8Role::grad_output, dy, n);
    launch_quantize_fp8(dy.data(), code(dy.format()), n, state.scale(Fp8Role::grad_output), q, false,
                        state.pending(Fp8Role::grad_output), m_stream, key);
    return q;
}

std::uint8_t* CudaBackend::quantize_role_fp8(CudaFp8State& state, Fp8Role role, const CudaTensor& t, std::int64_t n,
                                             Slot slot) {
    auto* q = static_cast<std::uint8_t*>(scratch(slot, static_cast<std::size_t>(n)));
    current_fp8_scale(state, role, t, n);
    launch_quantize_fp8(t.data(), code(t.format()), n, state.scale(role), q, true, state.pending(role), m_stream);
    return q;
}

unsigned long long* CudaBackend::weight_stats_counters(RoundingStats* weight_stats, std::int64_t elements) {
    unsigned long long* stats = nullptr;
    if (unsigned long long* deferred = deferred_rounding(weight_stats)) {
        // A pipelined statistics step: the counts stay on the device until collected.
        stats = deferred;
        weight_stats->elements += elements;
    } else if (weight_stats) {
        stats = static_cast<unsigned long long*>(scratch(slot_results, 4 * sizeof(unsigned long long)));
    }
    if (stats) MANTISSA_CUDA_CHECK(cudaMemsetAsync(stats, 0, 4 * sizeof(unsigned long long), m_stream));
    return stats;
}

void CudaBackend::collect_weight_stats(RoundingStats* weight_stats, const unsigned long long* stats,
                                       std::int64_t elements, bool empty) {
    if (!weight_stats || deferred_rounding(weight_stats)) return;
    auto* host = static_cast<unsigned long long*>(host_scratch(4 * sizeof(unsigned long long)));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, stats, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    RoundingStats r;
    r.elements = elements;
    r.zeros_before = static_cast<std::int64_t>(host[0]);
    r.zeros = static_cast<std::int64_t>(host[1]);
    r.subnormals = static_cast<std::int64_t>(host[2]);
    r.nonfinite = static_cast<std::int64_t>(host[3]);
    if (empty) {
        r.zeros_before = r.zeros = elements;
        r.subnormals = r.nonfinite = 0;
    }
    // (field by field: RoundingStats::operator+= lives in mantissa_core, outside the module)
    weight_stats->elements += r.elements;
    weight_stats->zeros_before += r.zeros_before;
    weight_stats->zeros += r.zeros;
    weight_stats->subnormals += r.subnormals;
    weight_stats->nonfinite += r.nonfinite;
}

}  // namespace mantissa::cuda
