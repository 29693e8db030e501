// Optimizer: SGD or AdamW over a Network's parameters, with FP32 state tensors on the backend
// (category optimizer_state). It looks the parameters up in the Network at every step, since a
// live precision change may re-declare them. Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/network.h"
#include "train/experiment.h"

namespace mantissa {

class Optimizer {
public:
    Optimizer(Backend& backend, Network& network, const TrainSpec& spec);
    ~Optimizer();

    // One step over every layer's weight and bias at learning rate lr; returns, per layer, what
    // happened to the weight's updates (non-zero, lost to rounding): a reference to a member,
    // valid until the next step (no allocation on the steady-state step).
    const std::vector<UpdateCounts>& step(double lr);
    std::int64_t steps_taken() const { return m_steps; }
    OptimizerKind kind() const { return m_spec.optimizer; }
    // The state tensors of a layer's weight (0) or bias (1): for tests and checks.
    const Tensor* state(int layer, int param, int which) const;

private:
    struct ParamState {
        std::unique_ptr<Tensor> s1, s2;
    };
    Backend& m_backend;
    Network& m_network;
    TrainSpec m_spec;
    std::vector<ParamState> m_state;  // 2 per layer: weight, bias
    std::vector<UpdateCounts> m_counts;  // the last step's, one per layer
    std::int64_t m_steps = 0;
};

}  // namespace mantissa
