// Summaries and flattening of a run's config_json (see config_summary.h).
#include "history/config_summary.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "model/model_desc.h"
#include "config/experiment.h"

namespace mantissa::ui {

namespace {

bool parseObject(const std::string& text, nlohmann::json& out) {
    try {
        out = nlohmann::json::parse(text);
        return out.is_object();
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

std::string numberText(double v) {
    nlohmann::json j = v;
    if (v == static_cast<double>(static_cast<long long>(v)) && std::abs(v) < 1e15) j = static_cast<long long>(v);
    return j.dump();
}

// A precision.layers entry as the experiment reader takes it (engine/config/experiment.cpp,
// read_precision): a precision name for the three matmuls, or an object of them where a missing
// matmul is auto and a missing accumulation FP32. Names are kept as written, so one this version
// does not know is still shown.
struct LayerEntry {
    std::string forward = "auto", dgrad = "auto", wgrad = "auto", accumulate = "fp32";
};

std::optional<LayerEntry> readLayerEntry(const nlohmann::json& v) {
    LayerEntry e;
    if (v.is_string()) {
        e.forward = e.dgrad = e.wgrad = v.get<std::string>();
        return e;
    }
    if (!v.is_object()) return std::nullopt;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it.value().is_string()) return std::nullopt;
        const std::string value = it.value().get<std::string>();
        if (it.key() == "forward")
            e.forward = value;
        else if (it.key() == "dgrad")
            e.dgrad = value;
        else if (it.key() == "wgrad")
            e.wgrad = value;
        else if (it.key() == "accumulate")
            e.accumulate = value;
        else
            return std::nullopt;  // a key this version does not know: shown as written
    }
    return e;
}

// The experiment's own text for an entry (layer_setting_text): "fp16", "fp16, accumulate fp16",
// "forward fp8-e4m3, dgrad fp8-e4m3, wgrad bf16".
std::string layerEntryText(const LayerEntry& e) {
    const bool alike = e.forward == e.dgrad && e.dgrad == e.wgrad;
    std::string text = alike ? e.forward : "forward " + e.forward + ", dgrad " + e.dgrad + ", wgrad " + e.wgrad;
    if (e.accumulate != "fp32") text += ", accumulate " + e.accumulate;
    return text;
}

// What the summary says of a layer after its name: how its entry differs from `autocastFormat`,
// the format an auto matmul runs in (model/layer_formats.cpp): "=fp32" when its three matmuls
// share another format, else " fwd fp8-e4m3, dgrad fp8-e4m3" for those that differ, then its
// accumulation when not FP32 (" acc fp16", "=fp16, acc fp16"). "" when nothing differs.
std::string layerDifference(const LayerEntry& e, const std::string& autocastFormat) {
    const auto resolved = [&](const std::string& p) { return p == "auto" ? autocastFormat : p; };
    const std::string forward = resolved(e.forward), dgrad = resolved(e.dgrad), wgrad = resolved(e.wgrad);
    std::string format;  // the three matmuls' format, where they share one that is not autocast's
    std::vector<std::string> details;
    if (forward == dgrad && dgrad == wgrad) {
        if (forward != autocastFormat) format = forward;
    } else {
        if (forward != autocastFormat) details.push_back("fwd " + forward);
        if (dgrad != autocastFormat) details.push_back("dgrad " + dgrad);
        if (wgrad != autocastFormat) details.push_back("wgrad " + wgrad);
    }
    if (e.accumulate != "fp32") details.push_back("acc " + e.accumulate);
    std::string out = format.empty() ? "" : "=" + format;
    for (std::size_t i = 0; i < details.size(); ++i) out += (i > 0 || !format.empty() ? ", " : " ") + details[i];
    return out;
}

// precision.layers entries are leaves, written as layerEntryText (see flattenConfig).
void flattenLayers(const nlohmann::json& layers, const std::string& prefix, std::map<std::string, std::string>& out) {
    for (auto it = layers.begin(); it != layers.end(); ++it) {
        const std::optional<LayerEntry> e = readLayerEntry(it.value());
        out[prefix + "." + it.key()] = e ? nlohmann::json(layerEntryText(*e)).dump() : it.value().dump();
    }
}

void flattenInto(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
    if (j.is_object() && prefix == "precision.layers") {
        flattenLayers(j, prefix, out);
        return;
    }
    if (j.is_object()) {  // an empty object adds no key: {"layers": {}} says what its absence says
        for (auto it = j.begin(); it != j.end(); ++it)
            flattenInto(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
        return;
    }
    // A whole number is written as one ("65536", not "65536.0"), as the panels and the CLI show it.
    out[prefix] = j.is_number_float() ? numberText(j.get<double>()) : j.dump();
}

// compareKeyLess's groups, in their order.
int keyGroup(const std::string& key) {
    static const char* const groups[] = {"precision", "model", "train", "dataset", "backend"};
    const std::string top = key.substr(0, key.find('.'));
    for (int i = 0; i < static_cast<int>(std::size(groups)); ++i)
        if (top == groups[i]) return i;
    return top == "lesson" ? static_cast<int>(std::size(groups)) + 1 : static_cast<int>(std::size(groups));
}

}  // namespace

std::string configSummary(const std::string& configJson) {
    nlohmann::json j;
    if (!parseObject(configJson, j)) return {};
    const nlohmann::json p = j.value("precision", nlohmann::json::object());
    if (!p.is_object()) return {};
    std::vector<std::string> parts;
    const std::string autocast = p.value("autocast", std::string("off"));
    parts.push_back(autocast == "off" ? "fp32" : autocast);
    const nlohmann::json ls = p.value("loss_scaling", nlohmann::json::object());
    const std::string mode = ls.is_object() ? ls.value("mode", std::string("dynamic")) : std::string("dynamic");
    if (mode == "off") parts.push_back("no scaling");
    else if (mode == "static" && ls.contains("init_scale") && ls["init_scale"].is_number())
        parts.push_back("static " + numberText(ls["init_scale"].get<double>()));
    else parts.push_back(mode);
    parts.push_back(p.value("master_weights", true) ? "master fp32" : "no master");
    const nlohmann::json layers = p.value("layers", nlohmann::json::object());
    if (layers.is_object() && !layers.empty()) {
        // In the model's order (fc1, fc2, …, fc10), then any name the model does not have.
        std::vector<std::string> order = layerNamesFromConfig(configJson);
        for (auto it = layers.begin(); it != layers.end(); ++it)
            if (std::find(order.begin(), order.end(), it.key()) == order.end()) order.push_back(it.key());
        // Layers that differ alike share one part ("fc1,fc2 acc fp16"), in the order of the first.
        const std::string autocastFormat = autocast == "off" ? "fp32" : autocast;
        std::vector<std::pair<std::string, std::string>> groups;  // names, difference
        for (const std::string& name : order) {
            const auto it = layers.find(name);
            if (it == layers.end()) continue;
            const std::optional<LayerEntry> e = readLayerEntry(*it);
            const std::string difference = e ? layerDifference(*e, autocastFormat) : "=" + it->dump();
            if (difference.empty()) continue;
            const auto same =
                std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.second == difference; });
            if (same == groups.end())
                groups.emplace_back(name, difference);
            else
                same->first += "," + name;
        }
        for (const auto& [names, difference] : groups) parts.push_back(names + difference);
    }
    const nlohmann::json ops = p.value("ops", nlohmann::json::object());
    if (ops.is_object())
        for (auto it = ops.begin(); it != ops.end(); ++it)
            if (it.value().is_string() && it.value().get<std::string>() != "auto")
                parts.push_back(it.key() + " " + it.value().get<std::string>());
    std::string out;
    for (const auto& part : parts) out += (out.empty() ? "" : " \u00b7 ") + part;
    return out;
}

std::vector<std::string> layerNamesFromConfig(const std::string& configJson) {
    nlohmann::json j;
    if (!parseObject(configJson, j)) return {};
    try {
        // The engine names the layers; their names do not depend on the data's widths.
        const ModelDesc desc = describe_model(experiment_from_json(j).model, 1, 1, false);
        std::vector<std::string> names;
        for (const auto& layer : desc.layers) names.push_back(layer.name);
        return names;
    } catch (const std::exception&) {
        return {};  // a config this version cannot read: the recorded rows name the layers
    }
}

std::map<std::string, std::string> flattenConfig(const std::string& configJson) {
    nlohmann::json j;
    std::map<std::string, std::string> out;
    if (!parseObject(configJson, j)) return out;
    flattenInto(j, {}, out);
    return out;
}

std::vector<std::string> differingKeys(const std::vector<std::map<std::string, std::string>>& configs) {
    if (configs.empty()) return {};
    std::set<std::string> keys;
    for (const auto& c : configs)
        for (const auto& [k, v] : c) keys.insert(k);
    std::vector<std::string> out;
    for (const auto& k : keys) {
        bool differs = false;
        const auto first = configs.front().find(k);
        for (const auto& c : configs) {
            const auto it = c.find(k);
            if ((it == c.end()) != (first == configs.front().end()) ||
                (it != c.end() && first != configs.front().end() && it->second != first->second)) {
                differs = true;
                break;
            }
        }
        if (differs) out.push_back(k);
    }
    std::stable_sort(out.begin(), out.end(), compareKeyLess);
    return out;
}

bool compareKeyLess(const std::string& a, const std::string& b) {
    const int ga = keyGroup(a), gb = keyGroup(b);
    return ga != gb ? ga < gb : a < b;
}

}  // namespace mantissa::ui
