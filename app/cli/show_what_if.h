// `mantissa-cli show`'s what-if section: the last statistics step's what-if statistics
// (config/telemetry.h, WhatIfRecord) as two tables, layers and their operands down, formats across:
// the SQNR in dB, then the underflow and saturation percentages. The format a layer ran in at
// that step is starred: its column holds its own operands' numbers.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "config/telemetry.h"

namespace mantissa::cli {

// The rows of the run's last step that has any (rows in step order, as RunStore::what_if_steps).
std::vector<WhatIfRecord> last_what_if_step(const std::vector<WhatIfRecord>& rows);

// Prints nothing when `step_rows` is empty. `layers`: the step's layer rows (their precision).
void print_what_if(const std::vector<WhatIfRecord>& step_rows, const std::vector<LayerStepRecord>& layers);

// {"step": N, "rows": [{"layer": "fc1", "format": "mxfp4", "x": {...}, "w": {...}, "dy": {...}}]};
// null without rows. Non-finite SQNRs are the strings "inf", "-inf", "nan" (JSON has no such numbers).
nlohmann::ordered_json what_if_json(const std::vector<WhatIfRecord>& step_rows);

}  // namespace mantissa::cli
