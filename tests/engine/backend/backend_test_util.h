// Shared by the engine/backend suites: a tensor's values read back, and reproducible normal
// random values.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace backend_test {

inline std::vector<float> read(mantissa::Backend& b, const mantissa::Tensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    b.download(t, v.data(), t.numel());
    return v;
}

// n values of normal(0, scale), the same for the same seed.
inline std::vector<float> random_values(std::size_t n, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

}  // namespace backend_test
