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
// auto = the autocast type (fp16 or bf16) for these linear layers, fp32 when autocast is off.
// Stored weights (what the optimizer updates): FP32 with master weights on; with master weights
// off, the layer's own format (fp16, bf16), FP32 for fp32/tf32 layers (TF32 is a compute mode of
// FP32 tensors), the output format for fp8 layers (FP8 weights are always a cast copy).
#pragma once

#include "numeric/format.h"
#include "config/experiment.h"

namespace mantissa {

struct LayerFormats {
    LayerPrecision setting = LayerPrecision::automatic;
    Format compute = Format::fp32;  // the precision in effect: fp32, tf32, fp16, bf16, fp8_e4m3
    Format output = Format::fp32;   // y = the layer's output, its activation, and every gradient
                                    // the layer writes (dX, dW, dB)
    Format weight_store = Format::fp32;  // weights and bias the optimizer updates
    bool weight_copy = false;       // the forward reads a cast copy of the weight (compute format)
    bool bias_copy = false;         // ... and of the bias (output format)
    bool fp8() const { return compute == Format::fp8_e4m3; }
    bool master() const { return weight_copy && weight_store == Format::fp32; }
    bool operator==(const LayerFormats&) const = default;
};

Format autocast_format(Autocast a);  // off: fp32
LayerFormats resolve_layer_formats(LayerPrecision setting, Autocast autocast, bool master_weights);

}  // namespace mantissa
