// CpuBackend's share of cpu_parallel.h: how many threads a pass takes, and the parallel amax.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_parallel.h"

namespace mantissa {

int CpuBackend::pass_threads(std::int64_t n, std::int64_t min_per_thread) const {
    return cpu_detail::pass_threads(n, min_per_thread, m_matmul.threads());
}

float CpuBackend::amax_of(const float* data, std::int64_t n) const {
    return cpu_detail::max_abs_on(m_matmul.threads(), data, n);
}

}  // namespace mantissa
