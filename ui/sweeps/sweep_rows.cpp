// A sweep's recipe table as data (see sweep_rows.h).
#include "sweeps/sweep_rows.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "model/model_plan.h"
#include "sweep/pareto.h"
#include "sweep/sweep_plan.h"

namespace mantissa::ui {
namespace {

// "spirals-recipes · bf16" -> "bf16": a run's name without its sweep's, for rows without a plan.
std::string labelOf(const RunRow& run, const std::string& sweepName) {
    const std::string prefix = sweepName + " · ";
    return run.name.rfind(prefix, 0) == 0 ? run.name.substr(prefix.size()) : run.name;
}

}  // namespace

SweepTable readSweepTable(RunStore& store, std::int64_t sweepId) {
    SweepTable table;
    table.sweep = store.sweep(sweepId);
    std::map<std::int64_t, RunRow> latest;  // sweep_runs orders a re-run of an index after the earlier one
    for (RunRow& r : store.sweep_runs(sweepId))
        if (r.sweep_index) latest[*r.sweep_index] = std::move(r);

    std::vector<PlannedRun> plan;
    try {
        const nlohmann::json spec = nlohmann::json::parse(table.sweep.spec_json);
        plan = plan_sweep(sweep_spec_from_json(spec), table.sweep.name, matmul_layer_names);
    } catch (const std::exception& e) {
        table.planError = e.what();
        plan.clear();
    }

    if (!table.planError.empty()) {
        for (auto& [index, run] : latest) {
            SweepTableRow row;
            row.index = index;
            row.label = labelOf(run, table.sweep.name);
            row.totals = store.totals(run.id);
            row.run = run;
            table.rows.push_back(std::move(row));
        }
        return table;
    }

    for (const PlannedRun& p : plan) {
        SweepTableRow row;
        row.index = p.index;
        row.label = p.label;
        row.recipe = p.recipe;
        row.seed = p.experiment.train.seed;
        if (const auto it = latest.find(p.index); it != latest.end()) {
            row.run = it->second;
            row.totals = store.totals(it->second.id);
        }
        table.hasRecipes = table.hasRecipes || !p.recipe.empty();
        table.seedsVary = table.seedsVary || p.repeat > 0;
        table.rows.push_back(std::move(row));
    }
    // The grid's keys, in axis order, whose value is not the same in every run.
    if (!plan.empty()) {
        const auto& first = plan.front().point;
        for (std::size_t k = 0; k < first.size(); ++k) {
            bool varies = false;
            for (const PlannedRun& p : plan)
                varies = varies || k >= p.point.size() || p.point[k].second != first[k].second;
            if (!varies) continue;
            table.keys.push_back(first[k].first);
            for (std::size_t i = 0; i < plan.size(); ++i)
                table.rows[i].values.push_back(k < plan[i].point.size() ? plan[i].point[k].second : std::string());
        }
    }
    return table;
}

bool higherIsBetter(SweepFigure f) {
    return f == SweepFigure::testAccuracy || f == SweepFigure::samplesPerS;
}

std::string figureName(SweepFigure f) {
    switch (f) {
        case SweepFigure::finalLoss: return "final loss";
        case SweepFigure::testAccuracy: return "test accuracy";
        case SweepFigure::samplesPerS: return "samples/s";
        case SweepFigure::peakMemory: return "peak memory";
        case SweepFigure::skippedSteps: return "skipped steps";
    }
    return {};
}

double figureValue(const SweepTableRow& row, SweepFigure f) {
    const double none = std::nan("");
    if (!row.completed()) return none;
    // NaN for a missing figure; an infinite loss stays, as the CLI's front takes it.
    const auto value = [&](const std::optional<double>& v) { return v ? *v : none; };
    switch (f) {
        case SweepFigure::finalLoss: return value(row.run->final_loss);
        case SweepFigure::testAccuracy: return value(row.run->test_accuracy);
        case SweepFigure::samplesPerS: return value(row.totals.samples_per_s);
        case SweepFigure::peakMemory:
            return row.totals.peak_memory_bytes > 0 ? static_cast<double>(row.totals.peak_memory_bytes) : none;
        case SweepFigure::skippedSteps: return static_cast<double>(row.totals.skipped_steps);
    }
    return none;
}

SweepFigure defaultYFigure(const SweepTable& table) {
    for (const SweepTableRow& r : table.rows)
        if (r.run && r.run->test_accuracy && !std::isnan(*r.run->test_accuracy)) return SweepFigure::testAccuracy;
    return SweepFigure::finalLoss;
}

std::vector<bool> paretoRows(const SweepTable& table, SweepFigure x, SweepFigure y) {
    std::vector<ParetoPoint> points;
    points.reserve(table.rows.size());
    for (const SweepTableRow& r : table.rows) points.push_back({figureValue(r, x), figureValue(r, y)});
    return pareto_front(points, higherIsBetter(x), higherIsBetter(y));
}

}  // namespace mantissa::ui
