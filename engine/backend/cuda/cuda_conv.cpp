// CudaBackend: 2-D convolutions, forward and backward, with the CPU's rounding points
// (docs/numerics.md, "Convolutional ops"), as linear layers on a "rows" matrix, on cuBLASLt.
//
// The batch is taken in chunks of whole samples (conv_chunk_samples, op_support.h) so the column
// buffers stay bounded. A chunk of n samples, R = n·P rows (P = oh·ow, K = C·k·k):
//   col(R, K)   im2col of the operand values (x rounded to the compute format, or the FP8 saved
//               input), row (sample, oy, ox), column (c, ky, kx): linear's x with in = K
//   forward     acc(R, Co) = col · Wᵀ: linear's forward matmul ("TN"), FP32; conv_output adds the
//               bias after the dequantisation and rounds into y's NCHW rows
//   dX          dyr(R, Co) = dy's chunk as rows in the gradient operand format; dcol(R, K) =
//               dyr · W ("NN"; FP8: Wqᵀ copy, "TN"), FP32; col2im sums each input element's
//               offsets in FP32 in the CPU's order, dequantises once and rounds once
//   dW          dW(Co, K) = Σ_chunks dyrᵀ · col ("NT"; FP8: transposed copies, "TN"), the chunks'
//               FP32 products added in FP32, then dequantised and rounded once (with the
//               rounding statistics when asked)
//   dB          Σ_n (Σ_p dy) in the CPU's order (conv.cuh): bit-identical to it
// Every matmul writes FP32 into the workspace and the epilogue kernels round exactly as the CPU
// does (linear's "general" path); no cuBLASLt epilogue. FP8: the operands are quantised as
// linear's are (quantize_forward_fp8, quantize_grad_fp8: the same scales and amax records); when
// K, Co or a chunk's rows are not multiples of 16 the same quantised values multiply as bf16.
// Only the FP32 summation order of the matmuls (and of dW across chunks) differs from the CPU.
// Stochastic gradients: the FP8 dy, dX and dW rounded with device-drawn keys in the CPU's order.
// Block-scaled (MX, NVFP4): bf16 operands rounded in blocks on the CPU's axes (block_operand,
// round_block_buffer in cuda_linear.cpp): W's rows and the columns along the patch; dgrad's whole
// dy along the output channels and W's columns; wgrad's chunk rows along the samples × positions,
// the chunks the CPU's (backend/conv_chunks.h), since there its blocks restart.
// A precision per matmul (ConvTensors::dgrad, wgrad): each backward matmul's operands in its own
// format (per_gemm_conv_operands, in the CPU's order), each matmul making its own dy rows where
// they differ; the bias gradient of the unquantised dy, as the CPU.
// Training thread only; nothing waits for the stream except weight statistics outside a pipeline.
#include <algorithm>

#include "backend/conv_chunks.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/matmul_types.h"
#include "backend/cuda/op_support.h"
#include "error.h"

namespace mantissa::cuda {

namespace {

ConvLaunch launch_of(const Conv2dGeometry& g) {
    return {g.in_channels, g.in_h, g.in_w, g.kernel, g.stride, g.padding, g.out_h(), g.out_w()};
}

// The format code operand values are stored in for a compute format (tf32: its values in 4 bytes).
int operand_code(Format compute) {
    return code(compute);
}

std::size_t bytes_of(std::int64_t values, int fmt_code) {
    return static_cast<std::size_t>(values) * static_cast<std::size_t>(format_bytes(static_cast<Format>(fmt_code)));
}

// One call's sizes.
struct ConvSizes {
    std::int64_t positions, patch, out_channels, in, out, chunk;
};

// block_scaled: the CPU's chunks (backend/conv_chunks.h), which a block-scaled weight gradient's
// blocks follow; else this backend's larger ones.
ConvSizes sizes_of(const Conv2dGeometry& g, std::int64_t batch, bool block_scaled) {
    ConvSizes s{};
    s.positions = g.out_h() * g.out_w();
    s.patch = g.patch();
    s.out_channels = g.out_channels;
    s.in = g.in_size();
    s.out = g.out_size();
    s.chunk = block_scaled
                  ? conv_reference_chunk_samples(s.patch, s.out_channels, s.positions, batch)
                  : conv_chunk_samples(batch, s.positions, std::max(s.patch, s.out_channels), conv_column_values);
    return s;
}

}  // namespace

void CudaBackend::conv2d_forward_impl(ConvTensors& conv, const Tensor& x_in, Tensor& y_out, std::int64_t batch,
                                      bool record_amax) {
    activate();
    const CudaTensor& x = cuda(x_in);
    CudaTensor& y = cuda(y_out);
    CudaTensor& w = cuda(*conv.weight);
    const Conv2dGeometry& g = conv.geometry;
    const ConvSizes s = sizes_of(g, batch, conv.block.has_value());
    check_matmul_format(conv.block ? Format::bf16 : conv.compute, w.desc().name);
    require_plain(w, "conv2d_forward");
    require_plain(x, "conv2d_forward");
    written(y);
    const bool fp8 = conv.compute == Format::fp8_e4m3;

    // The operands: W in the compute format (or quantised), and where the columns come from.
    const void* w_op;
    const void* col_src;  // x's values in the operand format (col_src_fmt), or x itself
    int col_src_fmt, col_fmt;
    cudaDataType_t op_type;
    const float* dq_a = nullptr;
    const float* dq_b = nullptr;
    const bool native =
        fp8 && fp8_native_shape(s.patch, s.out_channels, s.chunk * s.positions) && (batch * s.positions) % 16 == 0;
    if (conv.block) {
        // W's rows and each chunk's columns in blocks along the patch (the CPU's axes), multiplied
        // as bf16 values; NVFP4's tensor scales from W's and the whole x's amaxes.
        block_tensor_amax(*conv.block, w, w.numel(), block_w);
        block_tensor_amax(*conv.block, x, batch * s.in, block_x);
        const BlockOperand wo = block_operand(*conv.block, w, s.out_channels, s.patch, 1, slot_w, block_w, nullptr);
        w_op = wo.values;
        dq_a = wo.factor;
        col_src = x.data();
        col_src_fmt = code(x.format());
        col_fmt = fmt_fp32;  // x's values, rounded in blocks chunk by chunk below
        op_type = CUDA_R_16BF;
    } else if (fp8) {
        auto& state = static_cast<CudaFp8State&>(*conv.fp8);
        quantize_forward_fp8(state, w, *conv.weight_compute, x, *conv.saved_input, batch * s.in, record_amax);
        w_op = cuda(*conv.weight_compute).data();
        col_src = cuda(*conv.saved_input).data();
        col_src_fmt = fmt_e4m3;
        dq_a = state.scale_inv(Fp8Role::weight);
        dq_b = state.scale_inv(Fp8Role::input);
        if (native) {
            col_fmt = fmt_e4m3;
            op_type = CUDA_R_8F_E4M3;
        } else {
            w_op = as_bf16(w_op, fmt_e4m3, w.numel(), slot_w);
            col_fmt = fmt_bf16;
            op_type = CUDA_R_16BF;
        }
    } else {
        if (conv.weight_compute) {
            cast(w, *conv.weight_compute);
            w_op = operand(cuda(*conv.weight_compute), w.numel(), conv.compute, slot_w);
        } else {
            w_op = operand(w, w.numel(), conv.compute, slot_w);
        }
        if (conv.saved_input) {
            CudaTensor& saved = cuda(*conv.saved_input);
            launch_cast(x.data(), code(x.format()), 1.0f, saved.data(), code(saved.format()), batch * s.in, false,
                        m_stream);
            written(saved);
            col_src = saved.data();
            col_src_fmt = code(saved.format());
        } else {
            col_src = x.data();
            col_src_fmt = code(x.format());
        }
        col_fmt = operand_code(conv.compute);  // im2col rounds to the operand format as it copies
        op_type = operand_type(conv.compute);
    }

    const CudaTensor* bias = conv.bias ? &cuda(*conv.bias) : nullptr;
    if (conv.bias && conv.bias_compute) {
        cast(*conv.bias, *conv.bias_compute);
        bias = &cuda(*conv.bias_compute);
    }
    if (bias) require_plain(*bias, "conv2d_forward");
    if (batch == 0) return;

    const ConvLaunch gl = launch_of(g);
    void* col = scratch(slot_conv_col, bytes_of(s.chunk * s.positions * s.patch, col_fmt));
    auto* acc = static_cast<float*>(
        scratch(slot_acc, static_cast<std::size_t>(s.chunk * s.positions * s.out_channels) * sizeof(float)));
    for (std::int64_t first = 0; first < batch; first += s.chunk) {
        const std::int64_t n = std::min(s.chunk, batch - first), rows = n * s.positions;
        launch_im2col(gl, col_src, col_src_fmt, first, n, col, col_fmt, m_stream);
        const void* col_op = col;
        if (conv.block) {
            void* q = scratch(slot_conv_col_q, static_cast<std::size_t>(rows * s.patch) * 2);
            const BlockOperand co =
                round_block_buffer(*conv.block, col, fmt_fp32, q, rows, s.patch, 1, block_x, nullptr);
            col_op = co.values;
            dq_b = co.factor;
        }
        MatmulCall call;  // accᵀ(Co, rows) = W(Co, K) · colᵀ(K, rows), column-major: linear's forward
        call.m = s.out_channels;
        call.n = rows;
        call.k = s.patch;
        call.a = w_op;
        call.a_type = op_type;
        call.trans_a = true;
        call.lda = s.patch;
        call.b = col_op;
        call.b_type = op_type;
        call.trans_b = false;
        call.ldb = s.patch;
        call.d = acc;
        call.d_type = CUDA_R_32F;
        call.ldd = s.out_channels;
        call.compute = compute_type(conv.compute);
        ++m_unfused_matmuls;
        run_matmul(call, "convolution");
        launch_conv_output(acc, first, n, s.out_channels, s.positions, dq_a, dq_b, bias ? bias->data() : nullptr,
                           bias ? code(bias->format()) : fmt_fp32, y.data(), code(y.format()), m_stream);
    }
}

void CudaBackend::conv2d_backward_impl(ConvTensors& conv, const Tensor& x_in, const Tensor& dy_in, Tensor* dx_out,
                                       std::int64_t batch, RoundingStats* weight_stats) {
    activate();
    const CudaTensor& x = cuda(x_in);
    const CudaTensor& dy = cuda(dy_in);
    CudaTensor& w = cuda(*conv.weight);
    const Conv2dGeometry& g = conv.geometry;
    const bool per_gemm = conv.dgrad || conv.wgrad;
    const ComputeFormat forward = conv.block ? ComputeFormat(*conv.block) : ComputeFormat(conv.compute);
    // A block-scaled weight gradient takes the CPU's chunks: its blocks restart at theirs.
    const bool wgrad_blocks = (per_gemm ? conv.wgrad.value_or(forward) : forward).block.has_value();
    const ConvSizes s = sizes_of(g, batch, wgrad_blocks);
    if (!per_gemm) check_matmul_format(conv.block ? Format::bf16 : conv.compute, w.desc().name);
    require_plain(dy, "conv2d_backward");
    CudaTensor& gw = cuda(*conv.grad_weight);
    written(gw);
    if (conv.grad_bias) written(*conv.grad_bias);
    if (dx_out) written(*dx_out);
    const bool native_shape =
        fp8_native_shape(s.patch, s.out_channels, s.chunk * s.positions) && (batch * s.positions) % 16 == 0;

    // Each matmul's operands (ConvGemm). The bias gradient sums the unquantised dy, rounded to
    // bias_round first (a tensor format's operand values, as the CPU sums them).
    ConvGemm dgrad, wgrad;
    int bias_round = fmt_fp32;
    // Stochastic gradients (ConvTensors::stochastic_gradients): the FP8 or block-scaled dy operands,
    // dX and dW take keys drawn on the device in the CPU's order (dy's, dX's, dW's), each for its
    // whole tensor (dX's chunks round their values by their indices in dx); dB rounds to nearest.
    const bool stochastic = conv.stochastic_gradients;
    auto gradient_key = [&](const Tensor& t) {
        return stochastic && t.format() != Format::fp32 ? draw_stochastic_key(nullptr) : nullptr;
    };
    // A block-scaled wgrad's key, stochastic_key(wgrad_key, first sample) for a chunk (kept_key:
    // the dX and dW draws come before the chunks use it).
    const std::uint64_t* wgrad_key = nullptr;
    if (per_gemm) {
        per_gemm_conv_operands(conv, x, dy, w, batch, native_shape, dx_out != nullptr, dgrad, wgrad, wgrad_key);
    } else if (conv.block) {
        // dgrad's whole dy in blocks along the output channels and W's columns; wgrad's chunk rows
        // and columns from the unquantised dy and x (the CPU's axes).
        const BlockFormat f = *conv.block;
        block_tensor_amax(f, dy, batch * s.out, block_dy);
        const std::uint64_t* dgrad_key = stochastic ? draw_stochastic_key(nullptr) : nullptr;
        const BlockOperand gq =
            block_operand(f, dy, batch, s.out_channels, s.positions, slot_conv_dy_q, block_dy, dgrad_key);
        if (stochastic) wgrad_key = kept_key(draw_stochastic_key(nullptr));
        dgrad.dy = gq.values;
        dgrad.dy_src_fmt = dgrad.dy_fmt = fmt_bf16;
        dgrad.dq_dy = gq.factor;
        block_tensor_amax(f, x, batch * s.in, block_x);
        if (dx_out) {
            block_tensor_amax(f, w, w.numel(), block_w);
            const BlockOperand wq = block_operand(f, w, 1, s.out_channels, s.patch, slot_w, block_w, nullptr);
            dgrad.other = wq.values;
            dgrad.dq_other = wq.factor;
        }
        dgrad.dy_type = dgrad.other_type = CUDA_R_16BF;
        wgrad.dy = dy.data();
        wgrad.dy_src_fmt = code(dy.format());
        wgrad.dy_fmt = fmt_fp32;
        wgrad.other = x.data();
        wgrad.other_fmt = code(x.format());
        wgrad.col_fmt = fmt_fp32;
        wgrad.dy_type = wgrad.other_type = CUDA_R_16BF;
        wgrad.block = f;
    } else if (conv.compute == Format::fp8_e4m3) {
        auto& state = static_cast<CudaFp8State&>(*conv.fp8);
        const bool native = native_shape;
        dgrad.dy = quantize_grad_fp8(state, dy, batch * s.out, stochastic ? draw_stochastic_key(nullptr) : nullptr);
        dgrad.dy_src_fmt = fmt_e5m2;
        dgrad.dy_fmt = native ? fmt_e5m2 : fmt_bf16;            // the same values as bf16 where the FP8 kernels
        dgrad.dy_type = native ? CUDA_R_8F_E5M2 : CUDA_R_16BF;  // do not take the shapes
        dgrad.dq_dy = state.scale_inv(Fp8Role::grad_output);
        dgrad.native = native;
        wgrad = dgrad;
        const void* wq = cuda(*conv.weight_compute).data();
        if (dx_out)
            dgrad.other =
                native ? transposed_fp8(wq, s.out_channels, s.patch) : as_bf16(wq, fmt_e4m3, w.numel(), slot_w);
        dgrad.other_type = native ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
        dgrad.dq_other = state.scale_inv(Fp8Role::weight);
        wgrad.other = cuda(*conv.saved_input).data();
        wgrad.other_fmt = fmt_e4m3;
        wgrad.col_fmt = native ? fmt_e4m3 : fmt_bf16;
        wgrad.other_type = dgrad.other_type;
        wgrad.dq_other = state.scale_inv(Fp8Role::input);
        // bias: of the unquantised dy (TE's fused bias gradient, as linear and the CPU)
    } else {
        dgrad.dy = dy.data();
        dgrad.dy_src_fmt = code(dy.format());
        dgrad.dy_fmt = operand_code(conv.compute);
        dgrad.dy_type = dgrad.other_type = operand_type(conv.compute);
        dgrad.compute = compute_type(conv.compute);
        wgrad = dgrad;
        if (dx_out)
            dgrad.other = conv.weight_compute ? operand(cuda(*conv.weight_compute), w.numel(), conv.compute, slot_w)
                                              : operand(w, w.numel(), conv.compute, slot_w);
        const CudaTensor& col_src = conv.saved_input ? cuda(*conv.saved_input) : x;
        require_plain(col_src, "conv2d_backward");
        wgrad.other = col_src.data();
        wgrad.other_fmt = code(col_src.format());
        wgrad.col_fmt = operand_code(conv.compute);  // im2col rounds to the operand format as it copies
        bias_round = operand_code(conv.compute);     // the CPU sums dy's operand values
    }
    const std::int64_t n_w = s.out_channels * s.patch;

    unsigned long long* stats = weight_stats_counters(weight_stats, n_w);
    const std::uint64_t* dx_key = dx_out ? gradient_key(*dx_out) : nullptr;
    if (batch > 0) {
        const ConvLaunch gl = launch_of(g);
        const std::int64_t max_rows = s.chunk * s.positions;
        // dgrad's dy rows; wgrad's are the same buffer where they are made alike.
        const bool shared_rows = dx_out && !wgrad.block && wgrad.dy == dgrad.dy &&
                                 wgrad.dy_src_fmt == dgrad.dy_src_fmt && wgrad.dy_fmt == dgrad.dy_fmt;
        void* dyr = dx_out ? scratch(slot_conv_dy, bytes_of(max_rows * s.out_channels, dgrad.dy_fmt)) : nullptr;
        void* dyr_w = shared_rows ? dyr : scratch(slot_conv_dy_rows, bytes_of(max_rows * s.out_channels, wgrad.dy_fmt));
        void* col = scratch(slot_conv_col, bytes_of(max_rows * s.patch, wgrad.col_fmt));
        auto* dw = static_cast<float*>(scratch(slot_conv_dw, static_cast<std::size_t>(n_w) * sizeof(float)));
        float* dw_part =
            s.chunk < batch
                ? static_cast<float*>(scratch(slot_conv_dw_part, static_cast<std::size_t>(n_w) * sizeof(float)))
                : nullptr;
        float* dcol =
            dx_out
                ? static_cast<float*>(scratch(slot_acc, static_cast<std::size_t>(max_rows * s.patch) * sizeof(float)))
                : nullptr;
        std::uint8_t* col_t = nullptr;
        std::uint8_t* dyr_t = nullptr;
        if (wgrad.native) {
            col_t = static_cast<std::uint8_t*>(scratch(slot_tx, static_cast<std::size_t>(max_rows * s.patch)));
            dyr_t = static_cast<std::uint8_t*>(scratch(slot_tdy, static_cast<std::size_t>(max_rows * s.out_channels)));
        }
        for (std::int64_t first = 0; first < batch; first += s.chunk) {
            const std::int64_t n = std::min(s.chunk, batch - first), rows = n * s.positions;

            if (dx_out) {  // dcolᵀ(K, rows) = Wᵀ(K, Co) · dyrᵀ(Co, rows): linear's dX
                launch_nchw_rows(dgrad.dy, dgrad.dy_src_fmt, first, n, s.out_channels, s.positions, dyr, dgrad.dy_fmt,
                                 m_stream);
                MatmulCall call;
                call.m = s.patch;
                call.n = rows;
                call.k = s.out_channels;
                call.compute = dgrad.compute;
                call.a = dgrad.other;
                call.a_type = dgrad.other_type;
                call.trans_a = dgrad.native;
                call.lda = dgrad.native ? s.out_channels : s.patch;
                call.b = dyr;
                call.b_type = dgrad.dy_type;
                call.trans_b = false;
                call.ldb = s.out_channels;
                call.d = dcol;
                call.d_type = CUDA_R_32F;
                call.ldd = s.patch;
                ++m_unfused_matmuls;
                run_matmul(call, "convolution input-gradient");
                // CPU: dx x (dq_g x dq_w), after col2im's sums.
                launch_col2im(gl, dcol, first, n, dgrad.dq_other, dgrad.dq_dy, cuda(*dx_out).data(),
                              code(dx_out->format()), m_stream, dx_key);
            }

            // dWᵀ(K, Co) = colᵀ(K, rows) · dyr(rows, Co): linear's dW.
            if (!shared_rows)
                launch_nchw_rows(wgrad.dy, wgrad.dy_src_fmt, first, n, s.out_channels, s.positions, dyr_w, wgrad.dy_fmt,
                                 m_stream);
            launch_im2col(gl, wgrad.other, wgrad.other_fmt, first, n, col, wgrad.col_fmt, m_stream);
            const void* wgrad_col = col;
            const void* wgrad_dy = dyr_w;
            if (wgrad.block) {  // the chunk's dy rows and columns in blocks along its rows
                const BlockOperand gq = round_block_buffer(
                    *wgrad.block, dyr_w, fmt_fp32,
                    scratch(slot_conv_dy_rows_q, static_cast<std::size_t>(rows * s.out_channels) * 2), 1, rows,
                    s.out_channels, block_dy, wgrad_key, first, true);
                const BlockOperand xq = round_block_buffer(
                    *wgrad.block, col, fmt_fp32, scratch(slot_conv_col_q, static_cast<std::size_t>(rows * s.patch) * 2),
                    1, rows, s.patch, block_x, nullptr);
                wgrad_col = xq.values;
                wgrad_dy = gq.values;
                wgrad.dq_other = xq.factor;
                wgrad.dq_dy = gq.factor;
            }
            MatmulCall call;
            call.m = s.patch;
            call.n = s.out_channels;
            call.k = rows;
            call.compute = wgrad.compute;
            call.a_type = wgrad.other_type;
            call.b_type = wgrad.dy_type;
            call.ldd = s.patch;
            if (wgrad.native) {
                launch_transpose_u8(static_cast<const std::uint8_t*>(col), rows, s.patch, col_t, m_stream);
                launch_transpose_u8(static_cast<const std::uint8_t*>(dyr_w), rows, s.out_channels, dyr_t, m_stream);
                call.a = col_t;
                call.trans_a = true;
                call.lda = rows;
                call.b = dyr_t;
                call.trans_b = false;
                call.ldb = rows;
            } else {
                call.a = wgrad_col;
                call.trans_a = false;
                call.lda = s.patch;
                call.b = wgrad_dy;
                call.trans_b = true;
                call.ldb = s.out_channels;
            }
            call.d = first == 0 ? dw : dw_part;
            call.d_type = CUDA_R_32F;
            ++m_unfused_matmuls;
            run_matmul(call, "convolution weight-gradient");
            if (first > 0) launch_accumulate(dw, dw_part, n_w, m_stream);
        }
        // CPU: dW x (dq_g x dq_x), rounded once (its key drawn after every chunk's dX is rounded:
        // the device keeps one key word).
        launch_scale_round(dw, n_w, wgrad.dq_other, wgrad.dq_dy, gw.data(), code(gw.format()), stats, m_stream,
                           gradient_key(gw));
    } else {
        gradient_key(gw);  // drawn all the same, as the CPU draws it for an empty batch
        launch_fill_bits(gw.data(), format_bytes(gw.format()), 0, n_w, m_stream);  // an empty sum
    }

    if (conv.grad_bias) {
        auto* partial = static_cast<float*>(
            scratch(slot_bias_blocks,
                    static_cast<std::size_t>(std::max<std::int64_t>(batch, 1) * s.out_channels) * sizeof(float)));
        launch_conv_bias_grad(dy.data(), code(dy.format()), bias_round, batch, s.out_channels, s.positions, partial,
                              cuda(*conv.grad_bias).data(), code(conv.grad_bias->format()), m_stream);
    }
    collect_weight_stats(weight_stats, stats, n_w, batch == 0);
}

// ---- a precision per matmul

void CudaBackend::per_gemm_conv_operands(const ConvTensors& conv, const CudaTensor& x, const CudaTensor& dy,
                                         const CudaTensor& w, std::int64_t batch, bool native_shape, bool need_w,
                                         ConvGemm& dgrad, ConvGemm& wgrad, const std::uint64_t*& wgrad_key) {
    const Conv2dGeometry& g = conv.geometry;
    const std::int64_t co = g.out_channels, patch = g.patch(), positions = g.out_h() * g.out_w();
    const std::int64_t n_dy = batch * g.out_size(), n_x = batch * g.in_size(), n_w = co * patch;
    const ComputeFormat e4m3(Format::fp8_e4m3);
    const BackwardFormats formats = backward_formats(conv.compute, conv.block, conv.dgrad, conv.wgrad, w.desc().name);
    const ComputeFormat &fd = formats.dgrad, &fw = formats.wgrad;
    const bool forward_fp8 = formats.forward_fp8;
    if ((fd == e4m3 || fw == e4m3) && !conv.fp8)
        throw Error("conv2d_backward: " + w.desc().name + " has an FP8 matmul but no FP8 scaling state.");
    auto* state = static_cast<CudaFp8State*>(conv.fp8);
    const bool stochastic = conv.stochastic_gradients;
    dgrad.native = fd == e4m3 && native_shape;
    wgrad.native = fw == e4m3 && native_shape;
    dgrad.compute = compute_type(fd.format);
    wgrad.compute = compute_type(fw.format);

    // dy scaled into e5m2 once, for whichever matmuls take it in FP8 (its key first).
    const std::uint8_t* dy_fp8 = nullptr;
    if (fd == e4m3 || fw == e4m3)
        dy_fp8 = quantize_grad_fp8(*state, dy, n_dy, stochastic ? draw_stochastic_key(nullptr) : nullptr);
    // dy for one matmul: FP8 (above; as bf16 where the FP8 kernels do not take the shapes), blocks
    // (dgrad: the whole dy along the channels; wgrad: each chunk's rows along the samples and
    // positions), or rounded to a tensor format as the rows are made.
    const auto dy_for = [&](const ComputeFormat& f, bool for_dgrad, ConvGemm& m) {
        if (f == e4m3) {
            m.dy = dy_fp8;
            m.dy_src_fmt = fmt_e5m2;
            m.dy_fmt = m.native ? fmt_e5m2 : fmt_bf16;
            m.dy_type = m.native ? CUDA_R_8F_E5M2 : CUDA_R_16BF;
            m.dq_dy = state->scale_inv(Fp8Role::grad_output);
        } else if (f.block) {
            block_tensor_amax(*f.block, dy, n_dy, block_dy);
            const std::uint64_t* key = stochastic ? draw_stochastic_key(nullptr) : nullptr;
            m.dy_type = CUDA_R_16BF;
            if (for_dgrad) {
                const BlockOperand q = block_operand(*f.block, dy, batch, co, positions, slot_conv_dy_q, block_dy, key);
                m.dy = q.values;
                m.dy_src_fmt = m.dy_fmt = fmt_bf16;
                m.dq_dy = q.factor;
            } else {
                if (key) wgrad_key = kept_key(key);
                m.dy = dy.data();
                m.dy_src_fmt = code(dy.format());
                m.dy_fmt = fmt_fp32;
                m.block = f.block;
            }
        } else {
            m.dy = dy.data();
            m.dy_src_fmt = code(dy.format());
            m.dy_fmt = operand_code(f.format);
            m.dy_type = operand_type(f.format);
        }
    };
    dy_for(fd, true, dgrad);
    dy_for(fw, false, wgrad);

    // An e4m3 copy of W or x: the forward's where it quantised them, else quantised here.
    const auto fp8_values = [&](Fp8Role role, const CudaTensor& t, std::int64_t n, Tensor* forward_copy, Slot slot) {
        return forward_fp8 ? cuda(*forward_copy).data()
                           : static_cast<const void*>(quantize_role_fp8(*state, role, t, n, slot));
    };
    if (need_w) {
        if (fd == e4m3) {
            const void* q = fp8_values(Fp8Role::weight, w, n_w, conv.weight_compute, slot_gemm_w);
            dgrad.other = dgrad.native ? transposed_fp8(q, co, patch) : as_bf16(q, fmt_e4m3, n_w, slot_w);
            dgrad.other_type = dgrad.native ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
            dgrad.dq_other = state->scale_inv(Fp8Role::weight);
        } else if (fd.block) {  // along W's columns (the output channels)
            block_tensor_amax(*fd.block, w, n_w, block_w);
            const BlockOperand q = block_operand(*fd.block, w, 1, co, patch, slot_w, block_w, nullptr);
            dgrad.other = q.values;
            dgrad.dq_other = q.factor;
            dgrad.other_type = CUDA_R_16BF;
        } else {
            const bool own = conv.weight_compute && conv.weight_compute->format() == fd.format;
            dgrad.other = operand(own ? cuda(*conv.weight_compute) : w, n_w, fd.format, slot_w);
            dgrad.other_type = operand_type(fd.format);
        }
    }
    if (fw == e4m3) {
        wgrad.other = fp8_values(Fp8Role::input, x, n_x, conv.saved_input, slot_gemm_x);
        wgrad.other_fmt = fmt_e4m3;
        wgrad.col_fmt = wgrad.native ? fmt_e4m3 : fmt_bf16;
        wgrad.other_type = wgrad.native ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
        wgrad.dq_other = state->scale_inv(Fp8Role::input);
    } else if (fw.block) {  // the chunks' columns from x, rounded in blocks chunk by chunk
        block_tensor_amax(*fw.block, x, n_x, block_x);
        wgrad.other = x.data();
        wgrad.other_fmt = code(x.format());
        wgrad.col_fmt = fmt_fp32;
        wgrad.other_type = CUDA_R_16BF;
    } else {
        const bool own = conv.saved_input && conv.saved_input->format() == fw.format;
        const CudaTensor& src = own ? cuda(*conv.saved_input) : x;
        require_plain(src, "conv2d_backward");
        wgrad.other = src.data();
        wgrad.other_fmt = code(src.format());
        wgrad.col_fmt = operand_code(fw.format);
        wgrad.other_type = operand_type(fw.format);
    }
}

}  // namespace mantissa::cuda
