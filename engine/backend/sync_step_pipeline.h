// SyncStepPipeline: the StepPipeline every backend can run, and the reference for the others.
// Each call runs at once through the Backend's synchronous operations; GradScaler's state is a
// LossScaler on the host, and the skip is decided in check(), before the optimizer, as
// torch.amp.GradScaler.step does. A step's results are complete at end().
//
// `lag` holds results back: with lag 1, step k's results are collected only after step k+1 has
// been issued, as on a GPU whose steps overlap the host. The Trainer's tests use it to check that
// reports, events and live changes line up the same way whichever pipeline runs. Training thread
// only.
#pragma once

#include <deque>

#include "backend/step_pipeline.h"
#include "backend/loss_scaler.h"

namespace mantissa {

class SyncStepPipeline final : public StepPipeline {
public:
    SyncStepPipeline(Backend& backend, const LossScalingSpec& spec, int lag = 0);

    int depth() const override { return m_lag + 1; }
    int in_flight() const override { return static_cast<int>(m_done.size()) + (m_open ? 1 : 0); }
    void set_loss_scaling(const LossScalingSpec& spec) override { m_scaler.reconfigure(spec); }
    void restore(const PipelineState& state) override;
    void invalidate(const std::string& reason) override { (void)reason; }

    bool begin(const StepBegin& b) override;
    void loss(const Tensor& output, Tensor* grad) override;
    std::vector<RoundingStats>* rounding_sink() override { return &m_current.rounding; }
    void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) override;
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) override;
    bool end() override;
    bool collect(StepResults& out) override;
    std::string describe() const override { return "eager"; }

private:
    Backend& m_backend;
    LossScaler m_scaler;
    int m_lag;
    bool m_open = false;
    StepBegin m_begin;
    StepResults m_current;
    std::deque<StepResults> m_done;
    std::vector<StepResults> m_spare;  // collected results, reused (no allocation per step)
    std::int64_t m_optimizer_steps = 0;
};

}  // namespace mantissa
