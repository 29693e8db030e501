// The recipe table of a sweep, from the store: one row per planned run (the latest run recorded for
// its index), with its recipe and the grid's values, status, steps, final loss, test accuracy,
// samples/s, peak memory and skipped steps, and a mark on the Pareto front of test accuracy (final
// loss for regression) against peak memory (engine/sweep/pareto.h). `mantissa-cli sweep show` and
// the progress lines of a running sweep.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "sweep/sweep_plan.h"

namespace mantissa::cli {

void print_sweep_table(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan, std::ostream& out);
nlohmann::ordered_json sweep_table_json(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan);
// One short line per run: index, label, state, step of total, loss.
std::vector<std::string> progress_lines(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan);

}  // namespace mantissa::cli
