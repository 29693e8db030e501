// Live changes and scheduled changes (see live_change.h).
#include "train/live_change.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/model_plan.h"

namespace mantissa {

namespace {
LayerSetting setting_of(const Experiment& e, const std::string& layer) {
    const auto it = e.precision.layers.find(layer);
    return it == e.precision.layers.end() ? LayerSetting{} : it->second;
}

bool same_scaling(const LossScalingSpec& a, const LossScalingSpec& b) {
    return a.mode == b.mode && a.init_scale == b.init_scale && a.growth_factor == b.growth_factor &&
           a.backoff_factor == b.backoff_factor && a.growth_interval == b.growth_interval &&
           a.min_scale == b.min_scale && a.max_scale == b.max_scale;
}

void require_layer(const std::vector<std::string>& layers, const std::string& name, const std::string& assignment) {
    if (layers.empty()) return;  // not known before the data is (check_scheduled_changes)
    if (std::find(layers.begin(), layers.end(), name) == layers.end())
        throw Error(assignment + ": the running model has no layer \"" + name + "\".");
}
}  // namespace

LiveChange plan_live_change(const Experiment& current, const std::vector<std::string>& layers,
                            const std::string& assignment) {
    LiveChange change{current, {}, {}};
    const std::string inject = "inject=";
    if (assignment.rfind(inject, 0) == 0) {
        const std::string layer = assignment.substr(inject.size());
        require_layer(layers, layer, assignment);
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
    rest.precision.ops = current.precision.ops;
    rest.precision.master_weights = current.precision.master_weights;
    rest.precision.loss_scaling = current.precision.loss_scaling;
    rest.precision.fp8.scaling = current.precision.fp8.scaling;
    rest.precision.rounding = current.precision.rounding;
    rest.train.lr = current.train.lr;
    if (experiment_to_json(rest) != experiment_to_json(current))
        throw Error(assignment + ": only precision.layers, autocast, ops, master_weights, loss_scaling, fp8.scaling, "
                                 "rounding and train.lr can change during a run; the rest needs a new run.");

    std::map<std::string, LayerSetting> named = current.precision.layers;
    named.insert(after.precision.layers.begin(), after.precision.layers.end());
    for (const auto& entry : named) {
        const std::string& name = entry.first;
        if (setting_of(current, name) == setting_of(after, name)) continue;
        require_layer(layers, name, assignment);
        change.layers.emplace_back(name, setting_of(after, name));
    }
    const PrecisionSpec& a = after.precision;
    const PrecisionSpec& b = current.precision;
    if (a.autocast != b.autocast) change.commands.push_back(command::SetAutocast{a.autocast});
    if (a.ops.softmax != b.ops.softmax) change.commands.push_back(command::SetOpPrecision{"softmax", a.ops.softmax});
    if (a.ops.layernorm != b.ops.layernorm)
        change.commands.push_back(command::SetOpPrecision{"layernorm", a.ops.layernorm});
    if (a.master_weights != b.master_weights) change.commands.push_back(command::SetMasterWeights{a.master_weights});
    if (a.fp8.scaling != b.fp8.scaling) change.commands.push_back(command::SetFp8Scaling{a.fp8.scaling});
    if (a.rounding != b.rounding) change.commands.push_back(command::SetRounding{a.rounding});
    if (!same_scaling(a.loss_scaling, b.loss_scaling)) change.commands.push_back(command::SetLossScaling{a.loss_scaling});
    if (after.train.lr != current.train.lr) change.commands.push_back(command::SetLearningRate{after.train.lr});
    return change;  // empty when the value was already in effect
}

std::vector<Command> live_change_commands(const LiveChange& change) {
    std::vector<Command> out;
    for (const auto& [layer, precision] : change.layers) out.push_back(command::SetLayerPrecision{layer, precision});
    out.insert(out.end(), change.commands.begin(), change.commands.end());
    return out;
}

ScheduledChange parse_scheduled_change(const std::string& text, const std::string& option) {
    const auto colon = text.find(':');
    const std::string step = text.substr(0, colon);
    const bool digits = !step.empty() && step.size() <= 15 &&
                        std::all_of(step.begin(), step.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::string rest = colon == std::string::npos ? std::string() : text.substr(colon + 1);
    const auto equals = rest.find('=');
    const std::string form = " (STEP:KEY=VALUE, e.g. 100:precision.layers.fc1=fp16)";
    // The part that is wrong, where it can be told apart, else the form.
    const auto all_digits = [](std::string_view t) {
        return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (colon != std::string::npos && step.starts_with('-') && all_digits(std::string_view(step).substr(1)))
        throw Error(option + " " + text + ": the step is negative; steps count from 0" + form + ".");
    if (colon != std::string::npos && all_digits(step) && !digits)
        throw Error(option + " " + text + ": the step has more than 15 digits, beyond any run" + form + ".");
    if (digits && equals != std::string::npos && equals > 0 && equals + 1 == rest.size())
        throw Error(option + " " + text + ": " + rest.substr(0, equals) + " is given no value" + form + ".");
    if (!digits || equals == std::string::npos || equals == 0 || equals + 1 == rest.size())
        throw Error(option + " takes STEP:KEY=VALUE (e.g. 100:precision.layers.fc1=fp16), not '" + text + "'.");
    return {std::stoll(step), rest};
}

std::vector<ScheduledChange> check_scheduled_changes(const Experiment& experiment,
                                                     std::vector<ScheduledChange> changes,
                                                     const std::string& option) {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const ScheduledChange& a, const ScheduledChange& b) { return a.step < b.step; });
    // The layers the model will have (model_plan.h); a model only its data can describe (an idx
    // folder's CNN) has none listed, and a layer named then is refused at its step instead.
    std::vector<std::string> layers;
    for (const PlannedLayer& l : plan_model(experiment).layers) layers.push_back(l.info.name);
    Experiment current = experiment;
    for (const ScheduledChange& c : changes) {
        try {
            current = plan_live_change(current, layers, c.assignment).after;
        } catch (const Error& e) {
            throw Error(option + " " + std::to_string(c.step) + ":" + c.assignment + " cannot apply: " + e.what());
        }
    }
    return changes;
}

void check_scheduled_steps(const std::vector<ScheduledChange>& changes, std::int64_t run_steps,
                           const std::string& option) {
    for (const ScheduledChange& c : changes) {
        if (c.step < run_steps) continue;
        const std::string steps = run_steps == 1 ? "step 0" : "steps 0 to " + std::to_string(run_steps - 1);
        throw Error(option + " " + std::to_string(c.step) + ":" + c.assignment + " is beyond the run: it takes " +
                    std::to_string(run_steps) + (run_steps == 1 ? " step" : " steps") + ", so step " +
                    std::to_string(c.step) + " never comes; give " + (run_steps == 1 ? "" : "one of ") + steps +
                    ", or train longer (--steps).");
    }
}

ChangeSchedule::ChangeSchedule(std::vector<ScheduledChange> checked, Experiment experiment)
    : m_changes(std::move(checked)), m_current(std::move(experiment)) {}

ChangeSchedule::ChangeSchedule(std::vector<ScheduledChange> checked, Apply apply)
    : m_changes(std::move(checked)), m_apply(std::move(apply)) {}

std::vector<Command> ChangeSchedule::first_commands() const {
    if (done()) return {};
    return {command::PauseAt{m_changes[m_next].step, true}};  // quiet: the means, not a person's pause
}

void ChangeSchedule::arm(Session& session) {
    for (Command& c : first_commands()) session.post(std::move(c));
}

bool ChangeSchedule::poll(Session& session) {
    if (done() || session.state() != SessionState::paused) return false;
    const std::int64_t step = m_changes[m_next].step;
    // A pause of ours has every step before it taken; an earlier one (not yet resumed) does not.
    if (session.summary().steps < step) return false;
    for (; !done() && m_changes[m_next].step == step; ++m_next) {
        const std::string& assignment = m_changes[m_next].assignment;
        if (m_apply) {
            m_apply(assignment);
            continue;
        }
        std::vector<std::string> layers;
        for (const LayerInfo& l : session.layers()) layers.push_back(l.name);
        const LiveChange change = plan_live_change(m_current, layers, assignment);
        for (Command& c : live_change_commands(change)) session.post(std::move(c));
        m_current = change.after;
    }
    arm(session);  // the next step's pause
    session.post(command::Resume{});
    return true;
}

}  // namespace mantissa
