// Sweeps: one experiment expanded into runs over named recipes, a grid of settings and repeated
// seeds (docs/sweeps.md). The plan is a pure function of its spec, so a sweep re-planned from the
// spec its store keeps (the `sweeps` table) names the same runs in the same order, and running it
// again finds what is missing by index. Plain C++; the CLI executes plans (app/cli/cmd_sweep.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.h"

namespace mantissa {

// A named precision recipe: the settings (KEY=VALUE, as --set takes them) it applies to the base
// experiment, after clearing its per-layer precisions. `layers`: a precision every matmul layer
// also gets (all but the output layer with `except_output`); their names depend on the model, so
// the plan asks for them.
struct Recipe {
    std::string name;
    std::string description;
    std::vector<std::string> settings;
    std::string layers;  // "tf32", "fp8-e4m3"; empty: none
    bool except_output = false;
};

// What an engineer tries first: fp32, tf32, bf16 (autocast), fp16 (autocast, dynamic loss scaling,
// FP32 master weights), fp16-noscale (the same without loss scaling), fp8 (hybrid E4M3/E5M2 with
// delayed scaling on every matmul layer but the output, bf16 autocast around them).
const std::vector<Recipe>& standard_recipes();
// A standard recipe by name; empty when there is none.
std::optional<Recipe> find_recipe(const std::string& name);
// "fp32, tf32, bf16, fp16, fp16-noscale and fp8": for sentences that list them.
std::string recipe_names();

// One axis of the grid: a key and its values, "train.lr=1e-3,3e-3" (values are JSON or bare
// words, as --set takes them; a value holding a comma is written as a JSON array or string).
struct GridAxis {
    std::string key;
    std::vector<std::string> values;
    bool operator==(const GridAxis&) const = default;
};
// Parses KEY=V1,V2,...; throws mantissa::Error naming the text when it has no '=' or no value.
// The values are checked when the plan applies them.
GridAxis parse_grid_axis(const std::string& text);

struct SweepSpec {
    Experiment base;
    std::vector<std::string> recipes;  // names of standard recipes; empty: the base as it is
    std::vector<GridAxis> grid;        // the product of the axes
    int repeat = 1;                    // seeds per point: train.seed, train.seed + 1, ...
    // Where the repeats' seeds count from: the run's own train.seed, after its recipe and point
    // (a grid axis on train.seed sets it); false: the base's, as sweeps stored before this rule
    // were planned (their JSON has no "seeds" key), so re-planning them names the same runs.
    bool seeds_from_run = true;
};
nlohmann::json sweep_spec_to_json(const SweepSpec& spec);
// Throws mantissa::Error with a sentence naming the key when the JSON is not a spec.
SweepSpec sweep_spec_from_json(const nlohmann::json& j);

// The checks a new sweep passes before it is planned and stored (not applied to stored ones,
// which are re-planned as they were): a recipe named twice, a key on two axes, a value twice on
// one axis, or a train.seed axis with --repeat above 1 would only run an experiment again under
// another label. Throws mantissa::Error with one sentence.
void check_new_sweep(const SweepSpec& spec);

struct PlannedRun {
    std::int64_t index = 0;                                    // its place in the plan, from 0
    std::string recipe;                                        // empty when the sweep has none
    std::vector<std::pair<std::string, std::string>> point;    // the grid's key and value for this run
    int repeat = 0;                                            // 0 .. repeat - 1
    Experiment experiment;                                     // the base with all of it applied
    std::string label;                                         // "bf16 · train.lr=0.003 · seed 2"
};

// The matmul layers' names of a model (those precision.layers may name, in order): asked once per
// run that needs them (an fp8 recipe), since a grid over model.* changes them.
using LayerNames = std::function<std::vector<std::string>(const Experiment&)>;

// Recipes (outermost) × grid points (in axis order, the last axis fastest) × repeats (innermost).
// Each run: the recipe's settings, then the grid's, then the seed, each checked as --set checks
// it; throws mantissa::Error naming the run and the setting that is refused, before anything runs.
// Runs are named "<sweep name> · <label>". At most 10000 runs.
std::vector<PlannedRun> plan_sweep(const SweepSpec& spec, const std::string& sweep_name, const LayerNames& layers);

}  // namespace mantissa
