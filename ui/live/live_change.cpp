// planLiveChange: an assignment turned into live commands (see live_change.h).
#include "live/live_change.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "error.h"

namespace mantissa::ui {

namespace {
LayerPrecision settingOf(const Experiment& e, const std::string& layer) {
    const auto it = e.precision.layers.find(layer);
    return it == e.precision.layers.end() ? LayerPrecision::automatic : it->second;
}

bool sameScaling(const LossScalingSpec& a, const LossScalingSpec& b) {
    return a.mode == b.mode && a.init_scale == b.init_scale && a.growth_factor == b.growth_factor &&
           a.backoff_factor == b.backoff_factor && a.growth_interval == b.growth_interval &&
           a.min_scale == b.min_scale && a.max_scale == b.max_scale;
}

void requireLayer(const std::vector<std::string>& layers, const std::string& name, const std::string& assignment) {
    if (std::find(layers.begin(), layers.end(), name) == layers.end())
        throw Error(assignment + ": the running model has no layer \"" + name + "\".");
}
}  // namespace

LiveChange planLiveChange(const Experiment& current, const std::vector<std::string>& layers,
                          const std::string& assignment) {
    LiveChange change{current, {}, {}};
    const std::string inject = "inject=";
    if (assignment.rfind(inject, 0) == 0) {
        const std::string layer = assignment.substr(inject.size());
        requireLayer(layers, layer, assignment);
        change.commands.push_back(command::InjectNonFinite{layer, std::numeric_limits<float>::infinity()});
        return change;
    }
    apply_setting(change.after, assignment);
    const Experiment& after = change.after;
    // Only these settings have commands; anything else (the dataset, the model, FP8's history...)
    // would need a new run.
    Experiment rest = after;
    rest.precision.layers = current.precision.layers;
    rest.precision.autocast = current.precision.autocast;
    rest.precision.master_weights = current.precision.master_weights;
    rest.precision.loss_scaling = current.precision.loss_scaling;
    rest.precision.fp8.scaling = current.precision.fp8.scaling;
    rest.train.lr = current.train.lr;
    if (experiment_to_json(rest) != experiment_to_json(current))
        throw Error(assignment + ": only precision.layers, autocast, master_weights, loss_scaling, fp8.scaling "
                                 "and train.lr can change during a run; the rest needs a new run.");

    std::map<std::string, LayerPrecision> named = current.precision.layers;
    named.insert(after.precision.layers.begin(), after.precision.layers.end());
    for (const auto& entry : named) {
        const std::string& name = entry.first;
        if (settingOf(current, name) == settingOf(after, name)) continue;
        requireLayer(layers, name, assignment);
        change.layers.emplace_back(name, settingOf(after, name));
    }
    const PrecisionSpec& a = after.precision;
    const PrecisionSpec& b = current.precision;
    if (a.autocast != b.autocast) change.commands.push_back(command::SetAutocast{a.autocast});
    if (a.master_weights != b.master_weights) change.commands.push_back(command::SetMasterWeights{a.master_weights});
    if (a.fp8.scaling != b.fp8.scaling) change.commands.push_back(command::SetFp8Scaling{a.fp8.scaling});
    if (!sameScaling(a.loss_scaling, b.loss_scaling)) change.commands.push_back(command::SetLossScaling{a.loss_scaling});
    if (after.train.lr != current.train.lr) change.commands.push_back(command::SetLearningRate{after.train.lr});
    return change;  // empty when the value was already in effect
}

}  // namespace mantissa::ui
