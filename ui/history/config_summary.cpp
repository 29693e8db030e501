// Summaries and flattening of a run's config_json (see config_summary.h).
#include "history/config_summary.h"

#include <cmath>
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

void flattenInto(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
    if (j.is_object()) {  // an empty object adds no key: {"layers": {}} says what its absence says
        for (auto it = j.begin(); it != j.end(); ++it)
            flattenInto(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
        return;
    }
    out[prefix] = j.dump();
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
    if (layers.is_object())
        for (auto it = layers.begin(); it != layers.end(); ++it)
            if (it.value().is_string() && it.value().get<std::string>() != "auto")
                parts.push_back(it.key() + "=" + it.value().get<std::string>());
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
    return out;
}

}  // namespace mantissa::ui
