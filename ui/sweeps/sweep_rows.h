// A sweep's recipe table as data: one row per planned run with its recipe, its grid values and
// the latest run recorded for its index (status, final loss, test accuracy, and the run's totals:
// samples/s, peak memory, skipped steps), the same rows `mantissa-cli sweep show` prints
// (app/cli/sweep_table.cpp, docs/sweeps.md). The figures a scatter can put on an axis, which way
// each is better, and the Pareto front of any two of them, from the one definition of the front
// (engine/sweep/pareto.h).
//
// The rows come from the sweep's plan (engine/sweep/sweep_plan.h), re-made from the spec the store
// keeps, so a planned run that was never recorded is a row too ("not run"). The recipes that need
// the model's matmul layer names (tf32, fp8) get them from plan_model (engine/model/model_plan.h),
// which reads no data: the names depend on the model section, not on the dataset's widths. When the
// plan cannot be made (a spec from a newer Mantissa), the rows are the recorded runs alone, named
// by their run's name, and `planError` says why.
//
// Reading costs one query for the sweep's runs and one totals() per recorded run (each reads that
// run's steps), so it grows with the sweep's runs and their length; the view reads when a sweep is
// chosen and on Refresh, never per frame. GUI thread only (the store's connection is the GUI's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace mantissa::ui {

struct SweepTableRow {
    std::int64_t index = 0;           // the run's place in the plan
    std::string label;                // "bf16 · train.lr=0.003 · seed 2", as the CLI names it
    std::string recipe;               // empty when the sweep has none
    std::vector<std::string> values;  // one per SweepTable::keys
    std::uint64_t seed = 0;
    std::optional<RunRow> run;  // the latest run recorded for the index; none: not run
    RunTotals totals;           // the run's (zeros when not run)
    bool completed() const { return run && run->status == RunStatus::completed; }
};

struct SweepTable {
    SweepRow sweep;
    bool hasRecipes = false;
    std::vector<std::string> keys;    // the grid's keys whose value differs between runs, in axis order
    bool seedsVary = false;           // repeat > 1
    std::vector<SweepTableRow> rows;  // in plan order
    std::string planError;            // why the plan could not be made (rows: the recorded runs)
};

// Throws mantissa::Error from the store (no such sweep, a damaged file).
SweepTable readSweepTable(RunStore& store, std::int64_t sweepId);

// The figures of the recipe table a scatter can draw.
enum class SweepFigure { finalLoss, testAccuracy, samplesPerS, peakMemory, skippedSteps };
inline constexpr SweepFigure sweepFigures[] = {SweepFigure::finalLoss, SweepFigure::testAccuracy,
                                               SweepFigure::samplesPerS, SweepFigure::peakMemory,
                                               SweepFigure::skippedSteps};
// Accuracy and throughput are better higher; loss, memory and skipped steps lower.
bool higherIsBetter(SweepFigure f);
std::string figureName(SweepFigure f);  // "test accuracy", "peak memory", ...
// The row's figure for a scatter and a front: NaN unless the run completed and has the figure (a
// peak memory of 0 is none, as the CLI's table has it; an infinite loss stays, as there). Accuracy
// as a fraction, memory in bytes.
double figureValue(const SweepTableRow& row, SweepFigure f);

// The CLI's default front: test accuracy when any run has one, else final loss (a regression).
SweepFigure defaultYFigure(const SweepTable& table);
// pareto_front over the rows' figures: true for the rows on the front of y against x.
std::vector<bool> paretoRows(const SweepTable& table, SweepFigure x, SweepFigure y);

}  // namespace mantissa::ui
