// The engine suite's threads table: how a step scales with the CPU backend's threads, on the
// models whose steps are big enough to share (docs/benchmarks.md, "Limits").
#pragma once

#include <vector>

#include "bench/bench.h"
#include "bench/peak_rate.h"
#include "data/dataset.h"

namespace mantissa::bench {

// `images`: the 784-feature data the MLPs and the CNN train on. The GPT loads its own corpus
// (reference_gpt_experiment) and is left out, with a note, when it cannot.
Table threads_table(const BenchOptions& o, const Dataset& images, const PeakRates& peaks);

// The thread counts timed: 1, 2, 4, ... below the hardware threads, then all of them.
std::vector<int> thread_counts();

}  // namespace mantissa::bench
