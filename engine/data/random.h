// Seeded random numbers for engine/data, identical on every platform and standard library.
// std::mt19937_64's output is fixed by the C++ standard, but the std distributions
// (uniform_int_distribution, normal_distribution) are implementation-defined, so they are written
// here from raw bits: a uniform double from the top 53 bits, an unbiased bounded integer by
// rejection, and Box-Muller normals. Internal to engine/data; one Rng per use, never shared
// between threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

namespace mantissa::data {

// SplitMix64's finaliser: a bijective mix used to derive independent seeds from (seed, stream).
inline std::uint64_t mix64(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// A seed for one purpose ("stream") of one run seed, so that e.g. the split and the epoch order
// never draw the same numbers.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
    return mix64(mix64(seed) ^ mix64(stream + 0x5851F42D4C957F2DULL));
}

class Rng {
public:
    explicit Rng(std::uint64_t seed) : m_engine(seed) {}

    std::uint64_t bits() { return m_engine(); }

    // Uniform in [0, 1), 53 random bits.
    double uniform() { return static_cast<double>(m_engine() >> 11) * 0x1.0p-53; }

    // Uniform in [lo, hi).
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

    // Uniform integer in [0, n), n > 0, without modulo bias.
    std::uint64_t below(std::uint64_t n) {
        const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // multiple of n
        std::uint64_t r = m_engine();
        while (r >= limit) r = m_engine();
        return r % n;
    }

    // Standard normal by Box-Muller; the second value of each pair is kept for the next call.
    double normal() {
        if (m_has_spare) {
            m_has_spare = false;
            return m_spare;
        }
        const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
        const double u2 = uniform();
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = 2.0 * std::numbers::pi * u2;
        m_spare = radius * std::sin(angle);
        m_has_spare = true;
        return radius * std::cos(angle);
    }

private:
    std::mt19937_64 m_engine;
    double m_spare = 0.0;
    bool m_has_spare = false;
};

// Fisher-Yates: a uniformly random permutation of `values` in place.
template <typename T>
void shuffle(std::vector<T>& values, Rng& rng) {
    for (std::size_t i = values.size(); i > 1; --i) {
        const std::size_t j = static_cast<std::size_t>(rng.below(i));
        std::swap(values[i - 1], values[j]);
    }
}

}  // namespace mantissa::data
