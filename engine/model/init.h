// Deterministic parameter initialisation, the same scheme as torch.nn.Linear's default:
// kaiming_uniform_(a = √5) for the weight, which is U(-1/√fan_in, 1/√fan_in), and the bias from
// the same bound. Values come from a seeded generator (SplitMix64 -> xoshiro256**) whose stream
// depends only on (seed, layer index), so a run is reproducible bit for bit on any machine.
#pragma once

#include <cstdint>
#include <vector>

namespace mantissa {

// xoshiro256** seeded through SplitMix64. uniform() is in [0, 1) with 24 random bits (exact in
// FP32).
class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    float uniform();

private:
    std::uint64_t m_s[4];
};

// `values` from N(0, std²) (Box-Muller on the stream of (seed, layer_index), as init_linear's):
// GPT-style initialisation of a weight or an embedding table.
void init_normal(std::uint64_t seed, int layer_index, double std, std::vector<float>& values);

// weight (out × in, row-major) and bias (out) of layer `layer_index` (0 = fc1).
void init_linear(std::uint64_t seed, int layer_index, int in, int out, std::vector<float>& weight,
                 std::vector<float>& bias);

}  // namespace mantissa
