// The formats of the ops that have no precision setting of their own, by class, as autocast
// decides them (docs/numerics.md, "Autocast, op by op"). PyTorch's autocast sorts ops into lists:
// matmuls (linear, bmm) run in the autocast type; softmax and layer_norm are on the FP32 list,
// computed and written in FP32 whatever their input; the rest run in their input's format. A
// layer with a precision setting (linear, conv2d) has its LayerFormats (layer_formats.h); the
// classes here are the rest: the attention's two batched matmuls, its softmax, and layer norms.
//
// precision.ops overrides a class for every op of it (auto, fp32, fp16, bf16), which autocast
// itself never allows: it is how a class can see what FP32 softmax saves a transformer from.
#pragma once

#include <optional>
#include <string>

#include "config/experiment.h"
#include "numeric/format.h"

namespace mantissa {

// A class's format once resolved; nullopt: the op writes its input's format.
struct OpFormats {
    std::optional<Format> matmul;     // attention's Q·Kᵀ and P·V: the autocast type, else their inputs'
    std::optional<Format> softmax;    // auto: FP32 under autocast
    std::optional<Format> layernorm;  // auto: FP32 under autocast
    Autocast autocast = Autocast::off;  // for a matmul with no setting of its own (a tied head)
    bool operator==(const OpFormats&) const = default;
};

OpFormats resolve_op_formats(const OpPrecisions& ops, Autocast autocast);

// The format an op of a class writes for an input in `input`.
inline Format op_output_format(const std::optional<Format>& resolved, Format input) {
    return resolved ? *resolved : input;
}

// Whether an op of a class reads its input cast to the class's format first, as autocast casts an
// op's inputs to the type its list names (and the cast's backward casts the gradient back). FP32
// needs no cast: every format's values are FP32 values. A narrower class format does: an FP16
// softmax over BF16 scores sees +inf for a logit beyond 65504, a BF16 one over FP16 scores loses
// three bits of each.
inline bool op_casts_input(const std::optional<Format>& resolved, Format input) {
    return resolved && *resolved != Format::fp32 && *resolved != input;
}

// Why a class runs in the format it does, as the Layers view and `show` say it: "fp32, autocast's
// FP32 list", "bf16, autocast", "fp16, precision.ops.softmax", "its input's format".
std::string op_class_reason(OpPrecision setting, Autocast autocast, bool fp32_list, const char* key);

}  // namespace mantissa
