// StepPipeline: training steps whose host-visible results are read later, so that nothing inside a
// step waits for the device (no host synchronisation inside a step; docs/architecture.md, "One
// run, from file to chart" and "Threads and data flow").
//
// The Trainer composes every step the same way, whatever the backend:
//   begin(StepBegin)       the batch goes in (inputs, labels), with the learning rate and flags
//   the body               issued by the caller only when begin returns true:
//                          Network::forward_uploaded -> loss() -> Network::backward (with
//                          rounding_sink() on statistics steps) -> [an injected value] ->
//                          check() -> optimizer_step() per parameter -> Network::end_step
//   end()                  GradScaler's update; the step's results start their way to the host.
//                          true (rare): recording the body failed and nothing of it ran: the
//                          caller issues the body again, eagerly, and calls end() again
//   collect(StepResults&)  later: the oldest uncollected step's results, waiting for them
// GradScaler's state (scale, growth counter), the skip decision and the optimizer's step count
// live in the pipeline, where the step runs: on a GPU in device memory, so the host needs none of
// them to issue the next step. begin returns false when the pipeline replays a body it recorded
// from an earlier step of the same shape (a CUDA graph): the caller then issues nothing.
//
// SyncStepPipeline (sync_step_pipeline.h) is the reference and the CPU's: each call runs at once
// through the Backend's synchronous operations, with a LossScaler on the host. A backend with
// deferred execution returns its own from Backend::create_pipeline; both give the same results.
// Training thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/sampled_rows.h"
#include "config/experiment.h"

namespace mantissa {

struct StepBegin {
    std::int64_t step = 0;               // the step's index (reported back in StepResults)
    std::int64_t batch = 0;              // rows
    Tensor* input = nullptr;             // (capacity, features) fp32: the network's input tensor
    const float* x = nullptr;            // (batch, features) host rows, read before begin returns
    std::int64_t features = 0;
    const std::int32_t* labels = nullptr;  // classification: batch host labels (else null)
    const float* targets = nullptr;        // regression: batch × outputs host targets (else null)
    std::int64_t outputs = 0;
    int layers = 0;                      // the network's linear layers
    double lr = 0;                       // this step's learning rate (the schedule applied)
    bool stats = false;                  // per-layer statistics: rounding_sink, summaries, counts
    // What a recorded body depends on besides the values above: the Trainer bumps it at every
    // live change (formats re-declare tensors, new hyper-parameters). Steps that may not be
    // recorded or replayed (an injected value) set replayable false; they run eagerly and leave
    // any recording in place.
    std::uint64_t generation = 0;
    bool replayable = true;
    std::chrono::steady_clock::time_point started{};  // when the host began preparing the step
};

// The optimizer's hyper-parameters that stay fixed between live changes (the learning rate comes
// with each step, the step count from the pipeline).
struct OptimizerHyper {
    OptimizerKind kind = OptimizerKind::sgd;
    double momentum = 0, weight_decay = 0;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

struct StepResults {
    std::int64_t step = 0;
    LossResult loss;
    UnscaleResult check;                     // found_nonfinite decides `skipped` with the scaler
    std::vector<GradientSummary> summaries;  // one per gradient given to check (statistics steps)
    std::vector<RoundingStats> rounding;     // one per layer (statistics steps)
    std::vector<UpdateCounts> counts;        // per reported layer (optimizer_step's report_layer)
    float scale = 1;                         // the loss scale the step used
    float next_scale = 1;                    // after GradScaler's update
    std::int64_t growth_tracker = 0;         // after the update
    bool skipped = false;                    // the optimizer did not step
    std::int64_t optimizer_steps = 0;        // steps the optimizer has taken, this one included
    // The step's time as the backend measured it: SyncStepPipeline, the host's wall time from
    // StepBegin::started to end(); CudaStepPipeline, the GPU's time from the previous step's end
    // to this one's when they ran back to back (the steady rate, host time included), else from
    // this step's start to its end.
    double seconds = 0;
    bool replayed = false;                   // the body was a replay of a recorded one
    // A pipeline whose operands are read after the step (StepPipeline::samples_after_step): what
    // the step's sample_rows_later and fp8_scale_later copied out, at the offsets they returned.
    // Valid until the next begin.
    std::span<const float> samples;
};

// What a pipeline carries from one step to the next besides the tensors: the loss scaler's state
// and the optimizer's step count (AdamW's bias correction). A checkpoint keeps it.
struct PipelineState {
    float scale = 1;
    std::int64_t growth_tracker = 0;
    std::int64_t optimizer_steps = 0;
};

class StepPipeline {
public:
    virtual ~StepPipeline() = default;

    // How many steps may be in flight: the Trainer collects step k - depth() + 1 after issuing
    // step k (1: every step's results are ready at its end).
    virtual int depth() const = 0;
    virtual int in_flight() const = 0;

    // Live changes, applied from the next begin on. set_loss_scaling follows
    // LossScaler::reconfigure. invalidate drops any recorded body (the reason is kept for the
    // telemetry).
    virtual void set_loss_scaling(const LossScalingSpec& spec) = 0;
    virtual void invalidate(const std::string& reason) = 0;
    // With no step in flight: the state a checkpoint kept (StepResults reports it after each step:
    // next_scale, growth_tracker, optimizer_steps), from the next begin on.
    virtual void restore(const PipelineState& state) = 0;

    // ---- one step
    virtual bool begin(const StepBegin& b) = 0;  // true: the caller issues the body
    // The loss of the network's output (classification when begin had labels) × the loss scale;
    // its gradient into `grad` (the last layer's dz).
    virtual void loss(const Tensor& output, Tensor* grad) = 0;
    // For Network::backward on statistics steps: one RoundingStats per layer, delivered in
    // StepResults::rounding (what a deferred backend writes there is filled in at collect).
    virtual std::vector<RoundingStats>* rounding_sink() = 0;
    // Unscale + the one inf/NaN check, with the pipeline's scale; decides the skip.
    virtual void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) = 0;
    // One parameter's update (nothing when the step is skipped). report_layer >= 0: its counts go
    // to StepResults::counts[report_layer].
    virtual void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) = 0;
    // True: issue the body again and call end() again (see above).
    [[nodiscard]] virtual bool end() = 0;
    // The body threw `what` part-way. True: the pipeline was recording it, abandoned the recording
    // (nothing of it ran) and turned recording off; the caller issues the body again, eagerly.
    // False: the error stands.
    virtual bool body_failed(const std::string& what) {
        (void)what;
        return false;
    }

    // The oldest uncollected step's results, waiting for the device; false when none is in flight.
    virtual bool collect(StepResults& out) = 0;

    // For the telemetry: how the bodies ran ("eager", "recorded", "replayed N", the last reason
    // a recording was dropped).
    virtual std::string describe() const = 0;
    // Why recording steps (CUDA graphs) is off for the rest of the run; empty while it is allowed,
    // and where there is nothing to record.
    virtual std::string recording_off() const { return {}; }
    // True when the body the last end() closed was recorded: later steps of its kind replay it
    // (begin returns false), and the statistics keep what they asked of it (train/pending_steps.h).
    virtual bool body_recorded() const { return false; }

    // ---- operands read when the step is collected
    // True when this pipeline's steps run ahead of the host, so that the statistics that read a
    // matmul's operands in the middle of a step (model/operand_observer.h) cannot read them there:
    // during the backward they ask for their values with the two calls below, which copy them out
    // as part of the step (recorded with it, and again at each replay), and they measure them
    // from StepResults::samples when the step is collected.
    virtual bool samples_after_step() const { return false; }
    // `rows` of t (SampledRows; t's first n values are its whole tensor) and t's magnitudes over
    // its first n values: the offset in StepResults::samples of two floats, amax and finite_amax
    // (Backend::RowSample's), followed by rows.values() values.
    virtual std::int64_t sample_rows_later(const Tensor& t, std::int64_t n, const SampledRows& rows);
    // The scale and its inverse that `state` gives `role` in this step (Fp8TensorSnapshot's scale
    // and scale_inv): the offset of the two floats in StepResults::samples.
    virtual std::int64_t fp8_scale_later(const Fp8State& state, Fp8Role role);
};

}  // namespace mantissa
