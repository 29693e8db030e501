// Optimizer: SGD or AdamW over a Network's parameters, with FP32 state tensors on the backend
// (category optimizer_state). It looks the parameters up in the Network at every step, since a
// live precision change may re-declare them. Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/step_pipeline.h"
#include "model/network.h"
#include "config/experiment.h"

namespace mantissa {

// One state tensor of one parameter, as a checkpoint keeps it (engine/train/checkpoint.h).
struct OptimizerStateTensor {
    std::size_t parameter = 0;  // its place in Network::parameters()
    const char* name = "";      // PyTorch's name: "exp_avg", "exp_avg_sq", "momentum_buffer"; "kahan"
    Tensor* tensor = nullptr;
};

class Optimizer {
public:
    Optimizer(Backend& backend, Network& network, const TrainSpec& spec,
              WeightRounding rounding = WeightRounding::nearest);
    ~Optimizer();

    // One step over every parameter (Network::parameters(), in order) through a pipeline: the learning rate, the step
    // count and the skip are the pipeline's; what happened to each layer's weight updates
    // (changing the FP32 value, lost to the stored precision) comes back in its StepResults::counts.
    void step(StepPipeline& pipeline);
    // Steps taken, as the pipeline reported them (the Trainer records them at each report).
    std::int64_t steps_taken() const { return m_steps; }
    void record_steps_taken(std::int64_t steps) { m_steps = steps; }
    OptimizerHyper hyper() const;
    OptimizerKind kind() const { return m_spec.optimizer; }
    // How narrow stored weights take their updates (precision.rounding.weights); between steps.
    // Kahan's compensation buffers (category optimizer_state, each in its parameter's format) are
    // made at the next step for the parameters that are narrow then, and dropped at the next step
    // after the rounding changes or a parameter becomes FP32. Throws mantissa::Error when the
    // backend lacks it.
    void set_weight_rounding(WeightRounding rounding);
    WeightRounding weight_rounding() const { return m_rounding; }
    // Every state tensor the next step will use, the Kahan buffers it would make made now (at
    // zero) and those it would drop dropped: between steps, to save or restore them.
    std::vector<OptimizerStateTensor> state_tensors();
    // The Kahan compensation of a layer's parameter (0: weight, 1: bias), or null: for tests.
    const Tensor* compensation(int layer, int param) const;
    // The state tensors of a layer's parameter (0: its weight, 1: its bias): for tests and checks.
    const Tensor* state(int layer, int param, int which) const;

private:
    struct ParamState {
        std::unique_ptr<Tensor> s1, s2;
        std::unique_ptr<Tensor> compensation;  // Kahan, for a narrow parameter
    };
    // Makes or drops parameter i's compensation as the rounding and its format ask.
    void keep_compensation(std::size_t i, const Tensor& param);
    Backend& m_backend;
    Network& m_network;
    TrainSpec m_spec;
    std::vector<ParamState> m_state;  // one per Network::parameters() entry
    std::int64_t m_steps = 0;
    WeightRounding m_rounding = WeightRounding::nearest;
};

}  // namespace mantissa
