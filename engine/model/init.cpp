// torch.nn.Linear's default initialisation from a seeded xoshiro256** stream.
#include "model/init.h"

#include <cmath>

namespace mantissa {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : m_s) s = splitmix64(x);
}

std::uint64_t Rng::next() {
    const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    const std::uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

float Rng::uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

void init_normal(std::uint64_t seed, int layer_index, double std, std::vector<float>& values) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(layer_index) + 1);
    constexpr double two_pi = 6.283185307179586;
    for (std::size_t i = 0; i < values.size(); i += 2) {
        // u1 in (0, 1]: log never sees 0.
        const double u1 = 1.0 - static_cast<double>(rng.uniform()), u2 = rng.uniform();
        const double r = std * std::sqrt(-2.0 * std::log(u1));
        values[i] = static_cast<float>(r * std::cos(two_pi * u2));
        if (i + 1 < values.size()) values[i + 1] = static_cast<float>(r * std::sin(two_pi * u2));
    }
}

void init_linear(std::uint64_t seed, int layer_index, int in, int out, std::vector<float>& weight,
                 std::vector<float>& bias) {
    // One stream per layer: mixing the layer index into the seed keeps layers independent of
    // each other's sizes.
    Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(layer_index) + 1);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    weight.resize(static_cast<std::size_t>(in) * static_cast<std::size_t>(out));
    bias.resize(static_cast<std::size_t>(out));
    for (auto& w : weight) w = static_cast<float>(-bound + 2.0 * bound * rng.uniform());
    for (auto& b : bias) b = static_cast<float>(-bound + 2.0 * bound * rng.uniform());
}

}  // namespace mantissa
