// GpuSlots (see gpu_slots.h).
#include "sweep/gpu_slots.h"

#include <algorithm>

namespace mantissa {

GpuSlots::GpuSlots(int gpus) : m_runs(static_cast<std::size_t>(std::max(0, gpus)), 0) {}

bool GpuSlots::runs_on_gpu(const Experiment& e) const {
    return !m_runs.empty() && (e.backend == "cuda" || e.backend == "auto");
}

int GpuSlots::take(const Experiment& e) {
    if (!runs_on_gpu(e)) return -1;
    // A GPU the experiment names (one this machine may not have: the run says so itself).
    if (e.device != 0) {
        if (e.device < static_cast<int>(m_runs.size())) ++m_runs[static_cast<std::size_t>(e.device)];
        return e.device;
    }
    const auto least = std::min_element(m_runs.begin(), m_runs.end());  // the first of the least used
    ++*least;
    return static_cast<int>(least - m_runs.begin());
}

void GpuSlots::give_back(int gpu) {
    if (gpu >= 0 && gpu < static_cast<int>(m_runs.size()) && m_runs[static_cast<std::size_t>(gpu)] > 0)
        --m_runs[static_cast<std::size_t>(gpu)];
}

}  // namespace mantissa
