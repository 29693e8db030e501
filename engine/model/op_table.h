// Autocast, op by op: the format each op of a model runs in and why, as the Layers view and
// `mantissa-cli show` list them ("blocks.0.attn.softmax  fp32  autocast's FP32 list";
// "blocks.0.attn.qkv  bf16  autocast"). One row per layer with parameters (linear and conv2d
// from their LayerFormats, the others by their op class), and for each attention layer its three
// ops without parameters (scores = Q·Kᵀ/√d, softmax, P·V) after its qkv projection. Made from the
// layers' names and kinds and the precision section alone, so a stored run is described the same
// way as a running one.
#pragma once

#include <string>
#include <vector>

#include "config/experiment.h"
#include "config/layer_info.h"
#include "numeric/format.h"

namespace mantissa {

struct OpRow {
    std::string name;     // "blocks.0.attn.qkv", "blocks.0.attn.softmax"
    std::string op;       // "linear", "layernorm", "bmm", "softmax", "embedding"
    std::string format;   // "bf16", "fp32", "input's format"
    std::string reason;   // "autocast", "autocast's FP32 list", "precision.ops.softmax", ...
};

std::vector<OpRow> op_table(const std::vector<LayerInfo>& layers, const PrecisionSpec& precision);

}  // namespace mantissa
