// Shared by the CPU backend's thread suites (test_cpu_threads, test_cpu_threads_layers): a backend
// made for a given thread count, and whether two runs' values are the same bits.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace backend_test {

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A CPU backend on `threads` threads (the count is read when it is made).
inline std::unique_ptr<mantissa::CpuBackend> backend_with(int threads) {
    setenv("MANTISSA_CPU_THREADS", std::to_string(threads).c_str(), 1);
    auto b = std::make_unique<mantissa::CpuBackend>();
    unsetenv("MANTISSA_CPU_THREADS");
    return b;
}

}  // namespace backend_test
