// GpuSlots: which GPU each run of a local sweep takes (`mantissa-cli sweep --jobs N`, docs/sweeps.md).
// A run on the CUDA backend (backend.kind cuda, or auto on a machine with a usable GPU) that leaves
// backend.device at 0 gets a GPU of its own while the machine has one free, and otherwise the GPU
// the fewest running runs share, the lowest index first; a run that names its GPU keeps it and counts
// on it. The CPU's threads are shared out apart (each job's share). Pure bookkeeping: the CLI asks
// the CUDA module how many GPUs there are.
#pragma once

#include <vector>

#include "config/experiment.h"

namespace mantissa {

class GpuSlots {
public:
    explicit GpuSlots(int gpus);  // the machine's usable GPUs (0: none, every run takes none)

    // Whether `e` runs on a GPU here: backend cuda, or auto with a GPU present.
    bool runs_on_gpu(const Experiment& e) const;
    // The GPU a run starting now takes (-1: none, a run on the CPU), counted until give_back.
    int take(const Experiment& e);
    void give_back(int gpu);
    int in_use(int gpu) const { return m_runs.at(static_cast<std::size_t>(gpu)); }

private:
    std::vector<int> m_runs;  // running runs per GPU
};

}  // namespace mantissa
