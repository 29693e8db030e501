// CudaStepPipeline: the Trainer's steps on one GPU with no host wait inside them (docs/cuda.md),
// and the whole step replayed as a CUDA graph once its shape is stable.
//
// Per step, on the backend's one stream:
//   begin   the batch (x, labels or targets) and the learning rate go through this slot's pinned
//           buffer to fixed device buffers; a start event; then either the recorded graph is
//           launched, or the body is issued (eagerly, or under stream capture):
//   body    a prologue (zero the counters; the scaler's state as the step starts), the caller's
//           forward and backward, the async loss, the fused check that sets the device scaler's
//           found_inf, the optimizer (its scalars prepared on the device from the device step
//           counter and learning rate; every kernel a no-op when found_inf), GradScaler's update,
//           and an epilogue (the scaler after it, the step count) into one device block
//   end     that block goes to the slot's pinned buffer; an end event
//   collect waits for the oldest slot's end event and turns its block into StepResults.
// The host therefore issues step k+1 while the GPU runs step k (depth 2), and reads nothing from
// a step before its end event.
//
// Graphs: GraphPolicy (graph_policy.h) decides per step from a fingerprint of everything a
// recorded step bakes in: the Trainer's generation (bumped at every live change, which may
// re-declare tensors), the batch rows, the loss kind, the backend's scratch generation and this
// pipeline's buffers. Statistics steps and plain steps differ in what they launch, so each kind
// has its own policy and graph: a run with statistics every k steps replays both. A step with an
// injected value, and an epoch's partial last batch, run eagerly and leave the graphs in place.
// A capture that fails (at a call: body_failed; or at instantiation: end) turns graphs off for
// the run, with its reason in describe(), and the step is issued again eagerly.
//
// Operand samples (samples_after_step): the statistics that read a matmul's operands cannot read
// them mid-step here. During the body they ask for them (sample_rows_later, fp8_scale_later), and
// kernels/operand_sample.cuh gathers them on the device into sample chunks, laid out from offset 0
// in the order asked; being part of the body, the gathers are recorded with it and run again at
// each replay. At end() they come down with the step's block into the slot's pinned sample area,
// and the statistics measure them at collect (StepResults::samples). A request the last chunk has
// no room for gets a new chunk (new addresses: the buffer generation moves, so graphs are recorded
// again), and the chunks are merged into one after that step; a replay copies down what its
// recording wrote.
//
// After a pipelined step, narrow (fp16/bf16) gradients keep their loss-scaled bits with no host
// multiplier (the optimizer read them × the device's inv_scale): reading a gradient tensor then
// gives scaled values, where the synchronous calls leave a multiplier that unscales them. Nothing
// in the application reads gradients between steps; a test that does runs synchronously.
//
// Same results as SyncStepPipeline on the CPU in outcome, and as CudaBackend's synchronous calls
// bit for bit (the same kernels, with device-side scalars formed by the same FP32 and double
// operations); tests/gpu/test_gpu_training.cpp holds it to both. Training thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/graph_policy.h"
#include "backend/cuda/step_block_layout.h"
#include "backend/step_pipeline.h"
#include "config/experiment.h"

namespace mantissa::cuda {

class CudaStepPipeline final : public StepPipeline {
public:
    CudaStepPipeline(CudaBackend& backend, const LossScalingSpec& spec, int depth = 2);
    ~CudaStepPipeline() override;
    CudaStepPipeline(const CudaStepPipeline&) = delete;
    CudaStepPipeline& operator=(const CudaStepPipeline&) = delete;

    int depth() const override { return m_depth; }
    int in_flight() const override { return static_cast<int>(m_flight.size()); }
    void set_loss_scaling(const LossScalingSpec& spec) override;
    void restore(const PipelineState& state) override;
    void invalidate(const std::string& reason) override;

    bool begin(const StepBegin& b) override;
    void loss(const Tensor& output, Tensor* grad) override;
    std::vector<RoundingStats>* rounding_sink() override { return &m_rounding_sink; }
    void check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) override;
    void optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) override;
    bool end() override;
    bool body_failed(const std::string& what) override;
    bool collect(StepResults& out) override;
    std::string describe() const override;
    std::string recording_off() const override;
    bool body_recorded() const override { return m_recorded; }

    bool samples_after_step() const override { return true; }
    std::int64_t sample_rows_later(const Tensor& t, std::int64_t n, const SampledRows& rows) override;
    std::int64_t fp8_scale_later(const Fp8State& state, Fp8Role role) override;

private:
    struct Slot {
        void* pinned = nullptr;   // the block coming down, then the inputs going up
        std::size_t pinned_bytes = 0;
        void* samples = nullptr;  // the step's operand samples coming down (floats)
        std::size_t sample_bytes = 0;
        cudaEvent_t started = nullptr, finished = nullptr;
    };
    struct InFlight {
        int slot = 0;
        int previous_slot = -1;  // the step issued just before, when still in flight at begin
        std::int64_t step = 0, batch = 0, outputs = 0;
        bool classification = true, stats = false, replayed = false, scaling_off = false;
        std::vector<std::int64_t> elements;  // per layer, statistics steps
        std::int64_t samples = 0;            // floats in the slot's sample area
    };
    struct Graph {
        GraphPolicy policy{3};
        cudaGraphExec_t exec = nullptr;
    };
    // Device space for the operand samples of the body being issued, filled in order: a request
    // goes whole into the last chunk, or into a new one when it lacks room.
    struct SampleChunk {
        float* data = nullptr;
        std::int64_t capacity = 0, used = 0;  // floats
    };
    struct SampleCopy {  // a used part of a chunk, to come down at end()
        const float* data = nullptr;
        std::int64_t floats = 0;
    };

    void ensure_buffers(int layers, std::int64_t rows, std::int64_t outputs, std::int64_t input_bytes);
    void release_buffers();
    void drop_graphs();
    void prologue();
    void epilogue();
    const CudaBackend::CheckPlan& plan_for(const std::vector<Tensor*>& grads, const std::vector<bool>& want);
    void release_plans();
    float* sample_space(std::int64_t floats, std::int64_t& offset);
    void copy_samples_down(Slot& slot, const std::vector<SampleCopy>& parts);
    void merge_sample_chunks();
    unsigned char* block() const { return static_cast<unsigned char*>(m_block); }

    CudaBackend& m_backend;
    LossScalingSpec m_spec;
    int m_depth;
    ScalerState* m_scaler = nullptr;           // device
    long long* m_optimizer_steps = nullptr;    // device: steps the optimizer has taken
    double* m_lr = nullptr;                    // device: this step's learning rate
    SgdScalars* m_sgd = nullptr;               // device: prepared each step
    AdamWScalars* m_adamw = nullptr;           // device: prepared each step
    void* m_block = nullptr;                   // device: m_layout
    std::int32_t* m_labels = nullptr;          // device: (rows)
    float* m_targets = nullptr;                // device: (rows, outputs)
    StepBlockLayout m_layout;  // one step's device block and its pinned copy
    std::int64_t m_target_capacity = 0;
    std::uint64_t m_buffer_generation = 0;
    std::vector<Slot> m_slots;
    int m_next_slot = 0;
    std::deque<InFlight> m_flight;
    std::array<Graph, 2> m_graphs;             // [0] plain steps, [1] statistics steps
    std::vector<SampleChunk> m_sample_chunks;  // device
    std::int64_t m_sample_floats = 0;  // asked for by the body being issued: the next offset
    std::vector<SampleCopy> m_graph_samples[2];  // per graph: what its recorded body writes
    struct PlanEntry {
        std::uint64_t key = 0;
        CudaBackend::CheckPlan plan;
    };
    std::vector<PlanEntry> m_plans;

    // The step being issued.
    bool m_open = false, m_issue = false, m_capturing = false, m_prepared = false;
    bool m_recorded = false;  // the last end() closed a successful recording
    StepBegin m_begin;
    int m_graph = 0;
    InFlight m_current;
    std::vector<RoundingStats> m_rounding_sink;
    std::vector<std::int64_t> m_last_elements[2];  // per graph: what its issued steps recorded
    std::int64_t m_captures = 0, m_replays = 0, m_eager = 0;
    std::string m_graph_note;
};

}  // namespace mantissa::cuda
