// `mantissa-cli show`'s block-scale section: the last statistics step's block-scale views
// (config/telemetry.h, BlockScaleRecord) as one table, a line per matmul operand: its block
// format (starred when it is the one the layer runs), how many blocks were seen, the range and
// median of their scales' exponents, the blocks of zeros and of NaNs, and the distribution drawn
// as a bar per exponent. The figures are block_scale_histogram's (config/telemetry.h), as in the
// export.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "config/telemetry.h"

namespace mantissa::cli {

// Prints nothing when `step_rows` is empty. `step_rows`: one step's rows, in the store's order
// (RunStore::block_scale_steps: by layer, then operand).
void print_block_scales(const std::vector<BlockScaleRecord>& step_rows);

// {"step": N, "rows": [{"layer": "fc1", "operand": "x", "format": "mxfp4", "own": true, ...,
// "histogram": [{"exponent": -7, "blocks": 12}, ...]}]}: the figures without the map; null
// without rows.
nlohmann::ordered_json block_scales_json(const std::vector<BlockScaleRecord>& step_rows);

}  // namespace mantissa::cli
