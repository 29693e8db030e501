// Synthetic telemetry rows shaped like a real run's (for the `store` suite's ingest rates), and
// the raw-SQLite baselines that insert rows of the same width with no Recorder in between.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::bench {

StepRecord make_step(std::int64_t i);
std::vector<LayerStepRecord> make_layers(std::int64_t step, int count);

// Raw SQLite, prepared INSERTs, 10k steps per transaction, WAL and synchronous=NORMAL as the store.
// raw_steps: into a table as wide as the store's `steps` (same columns and primary key).
// raw_layer_steps: into a fresh file with the store's own schema, steps plus `layers` layer rows
// each (a typical encoded histogram blob). Both return the wall seconds; throw mantissa::Error.
double raw_steps(const std::string& path, std::int64_t rows);
double raw_layer_steps(const std::string& path, std::int64_t steps, int layers);

std::string sqlite_version();  // the linked SQLite, "3.40.1"

}  // namespace mantissa::bench
