// Which format each tensor of a linear layer has, from the layer's precision setting, autocast
// and master weights (docs/numerics.md). The single place that decides it: the Network
// declares its tensors with these formats and the backend rounds to them.
//
//   setting     compute    output/gradients      operand x, W     dy operand
//   fp32        fp32       fp32                  fp32             fp32
//   tf32        tf32       fp32                  tf32             tf32
//   fp16        fp16       fp16                  fp16             fp16
//   bf16        bf16       bf16                  bf16             bf16
//   fp8-e4m3    fp8_e4m3   autocast type (fp32   e4m3, scaled     e5m2, scaled
//                          when autocast is off)
//   mxfp8-e4m3  fp32 +     autocast type (fp32   blocks along K    blocks along K
//   ... nvfp4   block      when autocast is off)  (each GEMM's own) (each GEMM's own)
// auto = the autocast type (fp16 or bf16) for these linear layers, fp32 when autocast is off.
// A block-scaled setting (mxfp8-e4m3, mxfp8-e5m2, mxfp6-e3m2, mxfp6-e2m3, mxfp4, nvfp4) quantises
// both operands of each of the three matmuls (forward, dgrad, wgrad) in blocks along that matmul's
// reduction dimension, then multiplies the values they decode to in FP32: operand tensors are FP32,
// the quantised operands are transient (no weight copy, no saved input: backward quantises the
// stored weight and the layer's input again along its own reduction dimensions).
// Per GEMM (LayerSetting): the forward's setting gives every tensor format above; dgrad and wgrad
// only say what their matmuls' operands are rounded or quantised to (LayerFormats::dgrad, wgrad).
// Accumulation (LayerSetting::accumulate) says what the matmuls add their products in; it changes
// no tensor's format.
// Stored weights (what the optimizer updates): FP32 with master weights on; with master weights
// off, the layer's own format (fp16, bf16), FP32 for fp32/tf32 layers (TF32 is a compute mode of
// FP32 tensors), the output format for fp8 and block-scaled layers (FP8 and block-scaled weights
// are always quantised from the stored ones).
#pragma once

#include <optional>

#include "numeric/compute_format.h"
#include "numeric/format.h"
#include "config/experiment.h"

namespace mantissa {

struct LayerFormats {
    LayerSetting setting;  // as asked for: one precision, or one per matmul
    Format compute = Format::fp32;  // the precision in effect: fp32, tf32, fp16, bf16, fp8_e4m3
    Format output = Format::fp32;   // y = the layer's output, its activation, and every gradient
                                    // the layer writes (dX, dW, dB)
    Format weight_store = Format::fp32;  // weights and bias the optimizer updates
    bool weight_copy = false;       // the forward reads a cast copy of the weight (compute format)
    bool bias_copy = false;         // ... and of the bias (output format)
    std::optional<BlockFormat> block;  // a block-scaled setting (compute is then fp32)
    // The backward's two matmuls (a setting that names them apart): their formats, each a tensor
    // format or a block format; the same as the forward's otherwise. The output, gradient and
    // stored-weight formats are the forward setting's whatever these are.
    ComputeFormat dgrad, wgrad;
    // The matmuls add their products in FP16 (LayerSetting::accumulate; linear layers whose three
    // matmuls are fp16).
    bool fp16_accumulation = false;
    // The gradients the backward narrows are rounded stochastically (precision.rounding.gradients;
    // set by the trainer, not by the layer's own setting).
    bool stochastic_gradients = false;
    // Whether the three matmuls all take fp16 operands (what FP16 accumulation needs).
    bool all_fp16() const {
        const ComputeFormat fp16(Format::fp16);
        return compute_format() == fp16 && dgrad == fp16 && wgrad == fp16;
    }
    bool fp8() const { return compute == Format::fp8_e4m3; }
    // Whether the backward's matmuls differ from the forward's (the per-GEMM path of the backends).
    bool gemms_differ() const { return !(dgrad == compute_format() && wgrad == compute_format()); }
    // Whether any of the three matmuls is in per-tensor-scaled FP8: the layer keeps FP8 state.
    bool any_fp8() const {
        const ComputeFormat e4m3(Format::fp8_e4m3);
        return fp8() || dgrad == e4m3 || wgrad == e4m3;
    }
    // What the layer's matmuls run in: the block format, else compute.
    ComputeFormat compute_format() const { return block ? ComputeFormat(*block) : ComputeFormat(compute); }
    // Whether the FP32 weights are master weights: kept in FP32 beside what the matmuls read (a
    // cast copy, or a block-scaled layer's operands quantised on the fly), so they are counted as
    // master weights, not parameters. A TF32 or FP32 layer reads its FP32 weights themselves.
    bool master() const { return weight_store == Format::fp32 && (weight_copy || block.has_value()); }
    bool operator==(const LayerFormats&) const = default;
};

Format autocast_format(Autocast a);  // off: fp32
// The block format of a block-scaled setting (mxfp8-e4m3 .. nvfp4); empty for the others.
std::optional<BlockFormat> block_format_of(LayerPrecision setting);
LayerFormats resolve_layer_formats(const LayerSetting& setting, Autocast autocast, bool master_weights);

}  // namespace mantissa
