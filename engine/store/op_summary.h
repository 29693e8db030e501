// A run's op statistics (RunStore::op_steps) summarised per op: the last value and the extreme
// over the run, for `mantissa-cli show` and the GUI's run summary. The extreme is the side a
// narrow format fails on: the largest attention logit (FP16 overflows past 65504), the smallest
// layer norm variance (a division by a variance that rounded to zero). Plain values, no store.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "config/telemetry.h"

namespace mantissa {

struct OpStatSummary {
    std::string name;                // the op's layer: "blocks.0.attn"
    std::string stat;                // "logit_amax", "min_variance"
    std::int64_t steps = 0;          // rows: the steps that measured it
    std::int64_t last_step = 0;      // the latest of them
    double last = 0;                 // its value there, NaN and inf as measured
    // max (logit_amax) or min (min_variance) over the values that are not NaN, inf included, and
    // the first step that reached it; NaN (and step 0) when every value was NaN.
    double extreme = std::numeric_limits<double>::quiet_NaN();
    std::int64_t extreme_step = 0;
    std::int64_t nan_steps = 0;      // values that were NaN (stored as NULL)
};

// True when a larger value of `stat` is the worse one ("logit_amax"), false for "min_variance";
// a stat this build does not know is summarised by its largest value.
bool op_stat_larger_is_worse(std::string_view stat);

// One summary per (name, stat), in the order each first appears in `rows` (RunStore::op_steps'
// order: step, then the network's). Rows need not be sorted by step: the last is the latest step.
std::vector<OpStatSummary> summarize_op_steps(const std::vector<OpStepRecord>& rows);

}  // namespace mantissa
