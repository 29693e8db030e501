// resolve_op_formats: autocast's lists, and the precision.ops overrides on top.
#include "model/op_classes.h"

#include "model/layer_formats.h"

namespace mantissa {

namespace {

std::optional<Format> fp32_list_op(OpPrecision setting, Autocast autocast) {
    switch (setting) {
    case OpPrecision::fp32: return Format::fp32;
    case OpPrecision::fp16: return Format::fp16;
    case OpPrecision::bf16: return Format::bf16;
    case OpPrecision::automatic: break;
    }
    if (autocast != Autocast::off) return Format::fp32;  // autocast's FP32 list
    return std::nullopt;
}

}  // namespace

OpFormats resolve_op_formats(const OpPrecisions& ops, Autocast autocast) {
    OpFormats f;
    f.autocast = autocast;
    if (autocast != Autocast::off) f.matmul = autocast_format(autocast);
    f.softmax = fp32_list_op(ops.softmax, autocast);
    f.layernorm = fp32_list_op(ops.layernorm, autocast);
    return f;
}

std::string op_class_reason(OpPrecision setting, Autocast autocast, bool fp32_list, const char* key) {
    if (setting != OpPrecision::automatic) return std::string("precision.ops.") + key;
    if (autocast == Autocast::off) return "autocast off";
    return fp32_list ? "autocast's FP32 list" : "autocast";
}

}  // namespace mantissa
