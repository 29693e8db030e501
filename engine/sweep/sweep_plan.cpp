// Sweeps: recipes, the grid and the plan (sweep_plan.h).
#include "sweep/sweep_plan.h"

#include <algorithm>

#include "error.h"
#include "printable_text.h"

namespace mantissa {

namespace {

using json = nlohmann::json;

constexpr std::int64_t max_runs = 10000;

std::vector<std::string> split_values(const std::string& text) {
    // A JSON array lists the values whole (values that hold commas: [[512,256],[1024]]).
    if (!text.empty() && text.front() == '[') {
        const json j = json::parse(text, nullptr, false);
        if (!j.is_discarded() && j.is_array()) {
            std::vector<std::string> out;
            for (const json& v : j) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
            return out;
        }
    }
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

const std::vector<Recipe>& standard_recipes() {
    static const std::vector<Recipe> recipes = {
        {"fp32", "FP32 throughout: the reference",
         {"precision.autocast=off", "precision.loss_scaling.mode=off", "precision.master_weights=true"}, "", false},
        {"tf32", "TF32 matmuls (FP32 range, 10-bit mantissa operands), FP32 elsewhere",
         {"precision.autocast=off", "precision.loss_scaling.mode=off", "precision.master_weights=true"}, "tf32", false},
        {"bf16", "BF16 autocast with FP32 master weights; no loss scaling (BF16 has FP32's range)",
         {"precision.autocast=bf16", "precision.loss_scaling.mode=off", "precision.master_weights=true"}, "", false},
        {"fp16", "FP16 autocast with dynamic loss scaling and FP32 master weights",
         {"precision.autocast=fp16", "precision.loss_scaling.mode=dynamic", "precision.master_weights=true"}, "", false},
        {"fp16-noscale", "FP16 autocast with FP32 master weights and no loss scaling: what underflow costs",
         {"precision.autocast=fp16", "precision.loss_scaling.mode=off", "precision.master_weights=true"}, "", false},
        {"fp8", "FP8 hybrid (E4M3 forward, E5M2 gradients) with delayed scaling on every matmul layer but the "
                "output, BF16 autocast around them",
         {"precision.autocast=bf16", "precision.loss_scaling.mode=off", "precision.master_weights=true",
          "precision.fp8.scaling=delayed"},
         "fp8-e4m3", true},
    };
    return recipes;
}

std::optional<Recipe> find_recipe(const std::string& name) {
    for (const Recipe& r : standard_recipes())
        if (r.name == name) return r;
    return std::nullopt;
}

std::string recipe_names() {
    const auto& all = standard_recipes();
    std::string s;
    for (std::size_t i = 0; i < all.size(); ++i)
        s += (i == 0 ? "" : i + 1 == all.size() ? " and " : ", ") + all[i].name;
    return s;
}

GridAxis parse_grid_axis(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw Error("--grid " + shortened_text(text) + ": write KEY=V1,V2,..., e.g. train.lr=1e-3,3e-3.");
    GridAxis axis{text.substr(0, eq), split_values(text.substr(eq + 1))};
    for (const std::string& v : axis.values)
        if (v.empty())
            throw Error("--grid " + shortened_text(text) + ": a value is empty; write KEY=V1,V2,... with no empty value.");
    return axis;
}

json sweep_spec_to_json(const SweepSpec& spec) {
    json grid = json::array();
    for (const GridAxis& a : spec.grid) grid.push_back({{"key", a.key}, {"values", a.values}});
    json j = {{"base", experiment_to_json(spec.base)}, {"recipes", spec.recipes}, {"grid", grid}, {"repeat", spec.repeat}};
    if (spec.seeds_from_run) j["seeds"] = "from_run";
    return j;
}

SweepSpec sweep_spec_from_json(const json& j) {
    auto fail = [](const std::string& what) -> SweepSpec {
        throw Error("The sweep's stored definition " + what + "; the store was edited by hand, or made by a newer Mantissa.");
    };
    if (!j.is_object() || !j.contains("base") || !j.contains("recipes") || !j.contains("grid") || !j.contains("repeat"))
        return fail("lacks one of base, recipes, grid and repeat");
    SweepSpec s;
    s.base = experiment_from_json(j.at("base"));
    const json& recipes = j.at("recipes");
    if (!recipes.is_array()) return fail("has recipes that are not a list");
    for (const json& r : recipes) {
        if (!r.is_string() || !find_recipe(r.get<std::string>())) return fail("names a recipe this Mantissa lacks");
        s.recipes.push_back(r.get<std::string>());
    }
    const json& grid = j.at("grid");
    if (!grid.is_array()) return fail("has a grid that is not a list");
    for (const json& a : grid) {
        if (!a.is_object() || !a.contains("key") || !a.at("key").is_string() || !a.contains("values") ||
            !a.at("values").is_array() || a.at("values").empty())
            return fail("has a grid axis without a key and values");
        GridAxis axis{a.at("key").get<std::string>(), {}};
        for (const json& v : a.at("values")) {
            if (!v.is_string()) return fail("has a grid value that is not text");
            axis.values.push_back(v.get<std::string>());
        }
        s.grid.push_back(std::move(axis));
    }
    if (!j.at("repeat").is_number_integer() || j.at("repeat").get<int>() < 1) return fail("has a repeat below 1");
    s.repeat = j.at("repeat").get<int>();
    s.seeds_from_run = j.contains("seeds");
    if (s.seeds_from_run && j.at("seeds") != "from_run") return fail("counts its seeds in a way this Mantissa lacks");
    return s;
}

namespace {

// The first entry of `items` that an earlier one repeats, or null.
const std::string* first_repeat(const std::vector<std::string>& items) {
    for (auto it = items.begin(); it != items.end(); ++it)
        if (std::find(items.begin(), it, *it) != it) return &*it;
    return nullptr;
}

}  // namespace

void check_new_sweep(const SweepSpec& spec) {
    if (const std::string* r = first_repeat(spec.recipes))
        throw Error("--recipes names " + *r + " twice; name each recipe once.");
    std::vector<std::string> keys;
    for (const GridAxis& axis : spec.grid) {
        keys.push_back(axis.key);
        if (first_repeat(keys))
            throw Error("--grid " + axis.key + " is given twice; give all its values in one --grid " + axis.key +
                        "=V1,V2,...");
        if (const std::string* v = first_repeat(axis.values))
            throw Error("--grid " + axis.key + " lists the value " + *v + " twice; list each value once.");
        if (axis.key == "train.seed" && spec.repeat > 1)
            throw Error("--repeat " + std::to_string(spec.repeat) +
                        " with a --grid train.seed axis would run some seeds twice; list every seed on the axis instead.");
    }
}

std::vector<PlannedRun> plan_sweep(const SweepSpec& spec, const std::string& sweep_name, const LayerNames& layers) {
    if (spec.repeat < 1) throw Error("--repeat must be at least 1.");
    std::vector<std::optional<Recipe>> recipes;
    for (const std::string& name : spec.recipes) {
        const auto r = find_recipe(name);
        if (!r) throw Error("There is no recipe \"" + name + "\"; the recipes are " + recipe_names() + " (or standard: all of them).");
        recipes.push_back(r);
    }
    if (recipes.empty()) recipes.push_back(std::nullopt);
    std::int64_t points = 1;
    for (const GridAxis& a : spec.grid) {
        if (a.values.empty()) throw Error("--grid " + a.key + ": no values.");
        points *= static_cast<std::int64_t>(a.values.size());
        if (points > max_runs) break;
    }
    const std::int64_t total = static_cast<std::int64_t>(recipes.size()) * points * spec.repeat;
    if (points > max_runs || total > max_runs)
        throw Error("The sweep would have more than " + std::to_string(max_runs) + " runs; use fewer values, recipes or repeats.");

    std::vector<PlannedRun> plan;
    for (const auto& recipe : recipes) {
        for (std::int64_t p = 0; p < points; ++p) {
            // The point's value on each axis: the last axis varies fastest.
            std::vector<std::pair<std::string, std::string>> point(spec.grid.size());
            std::int64_t rest = p;
            for (std::size_t a = spec.grid.size(); a-- > 0;) {
                const auto n = static_cast<std::int64_t>(spec.grid[a].values.size());
                point[a] = {spec.grid[a].key, spec.grid[a].values[static_cast<std::size_t>(rest % n)]};
                rest /= n;
            }
            for (int r = 0; r < spec.repeat; ++r) {
                PlannedRun run;
                run.index = static_cast<std::int64_t>(plan.size());
                run.recipe = recipe ? recipe->name : "";
                run.point = point;
                run.repeat = r;
                std::string label = recipe ? recipe->name : "";
                for (const auto& [key, value] : point) label += (label.empty() ? "" : " · ") + key + "=" + value;
                Experiment e = spec.base;
                std::string setting;
                try {
                    if (recipe) {
                        setting = "precision.layers={}";
                        apply_setting(e, setting);
                        for (const std::string& s : recipe->settings) apply_setting(e, setting = s);
                    }
                    for (const auto& [key, value] : point) apply_setting(e, setting = key + "=" + value);
                    if (recipe && !recipe->layers.empty()) {
                        std::vector<std::string> names = layers(e);
                        if (recipe->except_output && !names.empty()) names.pop_back();
                        for (const std::string& n : names) apply_setting(e, setting = "precision.layers." + n + "=" + recipe->layers);
                    }
                } catch (const Error& err) {
                    // The setting once: apply_setting's sentence names its key already, or the
                    // whole setting after "--set ", an option this sweep was not given.
                    std::string why = err.what();
                    if (why.starts_with("--set ")) why.erase(0, 6);
                    const std::string key = setting.substr(0, setting.find('='));
                    const bool named = why.starts_with(setting) || why.starts_with(key + ":") || why.starts_with(key + ".");
                    throw Error("Run " + std::to_string(run.index) + " of the sweep (" +
                                shortened_text(label.empty() ? "run " + std::to_string(run.index) : label) +
                                "): " + (named ? std::string() : shortened_text(setting) + ": ") + why);
                }
                // The repeats count from the run's own seed: the base's, or the grid's where an
                // axis sets train.seed.
                e.train.seed = (spec.seeds_from_run ? e.train.seed : spec.base.train.seed) + static_cast<std::uint64_t>(r);
                if (spec.repeat > 1) label += (label.empty() ? "" : " · ") + std::string("seed ") + std::to_string(e.train.seed);
                run.label = label.empty() ? "run " + std::to_string(run.index) : label;
                e.name = sweep_name + " · " + run.label;
                run.experiment = std::move(e);
                plan.push_back(std::move(run));
            }
        }
    }
    return plan;
}

}  // namespace mantissa
