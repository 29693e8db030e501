// op_table: each op's format from layer_formats.h and op_classes.h, with the rule that chose it.
#include "model/op_table.h"

#include "model/layer_formats.h"
#include "model/op_classes.h"

namespace mantissa {

namespace {

std::string name_of(Format f) { return std::string(format_name(f)); }

std::string format_text(const std::optional<Format>& f) { return f ? name_of(*f) : "input's format"; }

std::string layer_reason(const LayerSetting& setting, Autocast autocast, const std::string& name) {
    if (setting != LayerSetting{}) return "precision.layers." + name;
    return autocast == Autocast::off ? "autocast off" : "autocast";
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<OpRow> op_table(const std::vector<LayerInfo>& layers, const PrecisionSpec& p) {
    const OpFormats ops = resolve_op_formats(p.ops, p.autocast);
    std::vector<OpRow> rows;
    for (const LayerInfo& l : layers) {
        if (l.takes_precision) {
            const auto it = p.layers.find(l.name);
            const LayerSetting setting = it == p.layers.end() ? LayerSetting{} : it->second;
            const LayerFormats f = resolve_layer_formats(setting, p.autocast, p.master_weights);
            rows.push_back({l.name, l.kind, std::string(f.compute_format().name()), layer_reason(setting, p.autocast, l.name)});
        } else if (l.kind == "layernorm") {
            rows.push_back({l.name, l.kind, format_text(ops.layernorm),
                            op_class_reason(p.ops.layernorm, p.autocast, true, "layernorm")});
        } else if (l.kind == "embedding" || l.kind == "position_embedding") {
            rows.push_back({l.name, l.kind, "fp32", "on none of autocast's lists (the FP32 table)"});
        } else {
            rows.push_back({l.name, l.kind, "fp32", "keeps FP32 (statistics and parameters)"});
        }
        // An attention's qkv is followed by its three ops without parameters.
        if (l.kind == "linear" && ends_with(l.name, ".attn.qkv")) {
            const std::string attn = l.name.substr(0, l.name.size() - 4);
            const std::string matmul = ops.matmul ? name_of(*ops.matmul) : rows.back().format;
            const std::string matmul_reason = ops.matmul ? "autocast" : "autocast off: qkv's format";
            rows.push_back({attn + ".scores", "bmm", matmul, matmul_reason});
            rows.push_back({attn + ".softmax", "softmax", ops.softmax ? name_of(*ops.softmax) : matmul,
                            op_class_reason(p.ops.softmax, p.autocast, true, "softmax")});
            rows.push_back({attn + ".pv", "bmm", matmul, matmul_reason});
        }
    }
    return rows;
}

}  // namespace mantissa
