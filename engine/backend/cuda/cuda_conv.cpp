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
    const ConvSizes s = sizes_of(g, batch, conv.block.has_value());
    check_matmul_format(conv.block ? Format::bf16 : conv.compute, w.desc().name);
    require_plain(dy, "conv2d_backward");
    CudaTensor& gw = cuda(*conv.grad_weight);
    written(gw);
    if (conv.grad_bias) written(*conv.grad_bias);
    if (dx_out) written(*dx_out);
    const bool fp8 = conv.compute == Format::fp8_e4m3;
    const bool native =
        fp8 && fp8_native_shape(s.patch, s.out_channels, s.chunk * s.positions) && (batch * s.positions) % 16 == 0;

    const void* dy_src;  // what the chunks' dy rows are made from, and their format
    int dy_src_fmt;
    const void* col_src;  // what the columns are made from
    int col_src_fmt;
    const void* w_op = nullptr;  // (Co, K), or for native FP8 its transposed copy (K, Co)
    int dy_fmt, col_fmt;         // the operands' storage formats
    cudaDataType_t dy_type, xw_type;
    const float* dq_g = nullptr;
    const float* dq_x = nullptr;
    const float* dq_w = nullptr;
    const void* bias_src = dy.data();  // what the bias gradient sums, rounded to bias_round first
    int bias_round = fmt_fp32;
    // Stochastic gradients (ConvTensors::stochastic_gradients): the FP8 dy operand, dX and dW take
    // keys drawn on the device in the CPU's order (dy's, dX's, dW's), each for its whole tensor
    // (dX's chunks round their values by their indices in dx); dB rounds to nearest, as there.
    const bool stochastic = conv.stochastic_gradients;
    auto gradient_key = [&](const Tensor& t) {
        return stochastic && t.format() != Format::fp32 ? draw_stochastic_key(nullptr) : nullptr;
    };
    // Block-scaled (the CPU's axes): dgrad's dy in blocks along the output channels (the whole
    // NCHW dy, before the chunks) and W's columns; wgrad's dy rows and columns in blocks along a
    // chunk's rows (samples × positions), chunk by chunk, with the key stochastic_key(wgrad_key,
    // first sample) (kept_key: the dX and dW draws come before the chunks use it).
    const std::uint64_t* wgrad_key = nullptr;
    const float* dq_g_wgrad = nullptr;
    if (conv.block) {
        const BlockFormat f = *conv.block;
        block_tensor_amax(f, dy, batch * s.out, block_dy);
        const std::uint64_t* dgrad_key = stochastic ? draw_stochastic_key(nullptr) : nullptr;
        const BlockOperand gq =
            block_operand(f, dy, batch, s.out_channels, s.positions, slot_conv_dy_q, block_dy, dgrad_key);
        if (stochastic) wgrad_key = kept_key(draw_stochastic_key(nullptr));
        dy_src = gq.values;
        dy_src_fmt = fmt_bf16;
        dq_g = gq.factor;
        dq_g_wgrad = gq.factor;  // the same tensor scale (NVFP4), written again by each chunk
        block_tensor_amax(f, x, batch * s.in, block_x);
        col_src = x.data();
        col_src_fmt = code(x.format());
        if (dx_out) {
            block_tensor_amax(f, w, w.numel(), block_w);
            const BlockOperand wq = block_operand(f, w, 1, s.out_channels, s.patch, slot_w, block_w, nullptr);
            w_op = wq.values;
            dq_w = wq.factor;
        }
        dy_fmt = fmt_bf16;
        col_fmt = fmt_fp32;  // x's values, rounded in blocks chunk by chunk
        dy_type = xw_type = CUDA_R_16BF;
        // bias: of the unquantised dy (bias_src = dy), as the CPU
    } else if (fp8) {
        auto& state = static_cast<CudaFp8State&>(*conv.fp8);
        dy_src = quantize_grad_fp8(state, dy, batch * s.out, stochastic ? draw_stochastic_key(nullptr) : nullptr);
        dy_src_fmt = fmt_e5m2;
        dq_g = state.scale_inv(Fp8Role::grad_output);
        dq_x = state.scale_inv(Fp8Role::input);
        dq_w = state.scale_inv(Fp8Role::weight);
        col_src = cuda(*conv.saved_input).data();
        col_src_fmt = fmt_e4m3;
        const void* wq = cuda(*conv.weight_compute).data();
        if (native) {
            dy_fmt = fmt_e5m2;
            col_fmt = fmt_e4m3;
            dy_type = CUDA_R_8F_E5M2;
            xw_type = CUDA_R_8F_E4M3;
            if (dx_out) {
                auto* wt = static_cast<std::uint8_t*>(scratch(slot_tw, static_cast<std::size_t>(w.numel())));
                launch_transpose_u8(static_cast<const std::uint8_t*>(wq), s.out_channels, s.patch, wt, m_stream);
                w_op = wt;
            }
        } else {
            dy_fmt = col_fmt = fmt_bf16;
            dy_type = xw_type = CUDA_R_16BF;
            if (dx_out) w_op = as_bf16(wq, fmt_e4m3, w.numel(), slot_w);
        }
        // bias: of the unquantised dy (TE's fused bias gradient, as linear and the CPU)
    } else {
        dy_src = dy.data();
        dy_src_fmt = code(dy.format());
        if (conv.saved_input) {
            require_plain(*conv.saved_input, "conv2d_backward");
            col_src = cuda(*conv.saved_input).data();
            col_src_fmt = code(conv.saved_input->format());
        } else {
            require_plain(x, "conv2d_backward");
            col_src = x.data();
            col_src_fmt = code(x.format());
        }
        if (dx_out)
            w_op = conv.weight_compute ? operand(cuda(*conv.weight_compute), w.numel(), conv.compute, slot_w)
                                       : operand(w, w.numel(), conv.compute, slot_w);
        dy_fmt = col_fmt = operand_code(conv.compute);
        dy_type = xw_type = operand_type(conv.compute);
        bias_round = operand_code(conv.compute);  // the CPU sums dy's operand values
    }
    const cublasComputeType_t compute = compute_type(conv.compute);
    const std::int64_t n_w = s.out_channels * s.patch;

    unsigned long long* stats = weight_stats_counters(weight_stats, n_w);
    const std::uint64_t* dx_key = dx_out ? gradient_key(*dx_out) : nullptr;
    if (batch > 0) {
        const ConvLaunch gl = launch_of(g);
        const std::int64_t max_rows = s.chunk * s.positions;
        void* col = scratch(slot_conv_col, bytes_of(max_rows * s.patch, col_fmt));
        void* dyr = scratch(slot_conv_dy, bytes_of(max_rows * s.out_channels, dy_fmt));
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
        if (native) {
            col_t = static_cast<std::uint8_t*>(scratch(slot_tx, static_cast<std::size_t>(max_rows * s.patch)));
            dyr_t = static_cast<std::uint8_t*>(scratch(slot_tdy, static_cast<std::size_t>(max_rows * s.out_channels)));
        }
        for (std::int64_t first = 0; first < batch; first += s.chunk) {
            const std::int64_t n = std::min(s.chunk, batch - first), rows = n * s.positions;
            launch_nchw_rows(dy_src, dy_src_fmt, first, n, s.out_channels, s.positions, dyr, dy_fmt, m_stream);
            launch_im2col(gl, col_src, col_src_fmt, first, n, col, col_fmt, m_stream);

            if (dx_out) {  // dcolᵀ(K, rows) = Wᵀ(K, Co) · dyrᵀ(Co, rows): linear's dX
                MatmulCall call;
                call.m = s.patch;
                call.n = rows;
                call.k = s.out_channels;
                call.compute = compute;
                call.a = w_op;
                call.a_type = xw_type;
                call.trans_a = native;
                call.lda = native ? s.out_channels : s.patch;
                call.b = dyr;
                call.b_type = dy_type;
                call.trans_b = false;
                call.ldb = s.out_channels;
                call.d = dcol;
                call.d_type = CUDA_R_32F;
                call.ldd = s.patch;
                ++m_unfused_matmuls;
                run_matmul(call, "convolution input-gradient");
                // CPU: dx x (dq_g x dq_w), after col2im's sums.
                launch_col2im(gl, dcol, first, n, dq_w, dq_g, cuda(*dx_out).data(), code(dx_out->format()), m_stream,
                              dx_key);
            }

            // dWᵀ(K, Co) = colᵀ(K, rows) · dyr(rows, Co): linear's dW.
            const void* wgrad_col = col;
            const void* wgrad_dy = dyr;
            if (conv.block) {  // the chunk's columns and unquantised dy rows in blocks along its rows
                const BlockFormat f = *conv.block;
                auto* dy_rows = scratch(slot_conv_dy_rows, static_cast<std::size_t>(rows * s.out_channels) * 4);
                launch_nchw_rows(dy.data(), code(dy.format()), first, n, s.out_channels, s.positions, dy_rows, fmt_fp32,
                                 m_stream);
                const BlockOperand gq = round_block_buffer(
                    f, dy_rows, fmt_fp32,
                    scratch(slot_conv_dy_rows_q, static_cast<std::size_t>(rows * s.out_channels) * 2), 1, rows,
                    s.out_channels, block_dy, wgrad_key, first, true);
                const BlockOperand xq = round_block_buffer(
                    f, col, fmt_fp32, scratch(slot_conv_col_q, static_cast<std::size_t>(rows * s.patch) * 2), 1, rows,
                    s.patch, block_x, nullptr);
                wgrad_col = xq.values;
                wgrad_dy = gq.values;
                dq_x = xq.factor;
                dq_g_wgrad = gq.factor;
            }
            MatmulCall call;
            call.m = s.patch;
            call.n = s.out_channels;
            call.k = rows;
            call.compute = compute;
            call.a_type = xw_type;
            call.b_type = dy_type;
            call.ldd = s.patch;
            if (native) {
                launch_transpose_u8(static_cast<const std::uint8_t*>(col), rows, s.patch, col_t, m_stream);
                launch_transpose_u8(static_cast<const std::uint8_t*>(dyr), rows, s.out_channels, dyr_t, m_stream);
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
        launch_scale_round(dw, n_w, dq_x, conv.block ? dq_g_wgrad : dq_g, gw.data(), code(gw.format()), stats, m_stream,
                           gradient_key(gw));
    } else {
        gradient_key(gw);  // drawn all the same, as the CPU draws it for an empty batch
        launch_fill_bits(gw.data(), format_bytes(gw.format()), 0, n_w, m_stream);  // an empty sum
    }

    if (conv.grad_bias) {
        auto* partial = static_cast<float*>(
            scratch(slot_bias_blocks,
                    static_cast<std::size_t>(std::max<std::int64_t>(batch, 1) * s.out_channels) * sizeof(float)));
        launch_conv_bias_grad(bias_src, code(dy.format()), bias_round, batch, s.out_channels, s.positions, partial,
                              cuda(*conv.grad_bias).data(), code(conv.grad_bias->format()), m_stream);
    }
    collect_weight_stats(weight_stats, stats, n_w, batch == 0);
}

}  // namespace mantissa::cuda
