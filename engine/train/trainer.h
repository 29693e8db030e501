// Trainer: one run, step by step, on the calling thread. It owns the model's Network on a
// backend, the optimizer, the batch order and the step pipeline (backend/step_pipeline.h), and
// turns each step's results into telemetry (StepRecord, LayerStepRecords, Events). Session runs it
// on a thread; tests drive it directly.
//
// A step: gather the batch -> forward -> loss × scale -> backward (weight gradients rounded to
// their format, measured on stats steps) -> [injected non-finite value] -> unscale + the one
// inf/NaN check over all gradients -> optimizer (unless skipped) -> loss scaler update -> FP8
// scales update. The pipeline runs it where the backend computes and keeps the loss scale and the
// skip there, so on a GPU the host issues step k+1 while step k runs and reads step k's results
// after (advance); on the CPU each step's results are ready at its end. Live settings change
// between steps, with no step in flight (flush first), through the set_* methods, each returning
// the Event that records it (at the index of the first step that runs under the new setting).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "data/dataset.h"
#include "data/train_batches.h"
#include "model/network.h"
#include "config/experiment.h"
#include "backend/loss_scaler.h"
#include "train/optimizer.h"
#include "train/block_scale_views.h"
#include "train/accumulation_error.h"
#include "train/what_if.h"
#include "weights/checkpoint_info.h"
#include "config/telemetry.h"

namespace mantissa {

struct StepReport {
    StepRecord step;
    std::int64_t samples = 0;             // rows in this step's batch
    std::vector<LayerStepRecord> layers;  // one per layer on stats steps, else empty
    std::vector<OpStepRecord> ops;        // accumulation errors (train.accumulation_error), then attention
                                          // logits and layer norm variances, as layers
    std::vector<WhatIfRecord> what_if;    // on stats steps of a run with train.what_if formats
    std::vector<BlockScaleRecord> block_scales;  // on stats steps, the block-scaled operands' scales
    std::vector<Event> events;            // overflow, scale_change, divergence, notices
};

struct TrainerOptions {
    // Run the backend's synchronous calls (SyncStepPipeline) even where it offers a pipeline of
    // its own: for comparisons and for finding where a deferred path goes wrong.
    bool synchronous = false;
    // Hold SyncStepPipeline's results back by this many steps, as a GPU's are held: the tests of
    // the pipelining use it. 0 in use.
    int sync_lag = 0;
    // A pipeline of the caller's making instead (tests of the Trainer's side of a failed
    // recording); called once, with the Trainer's backend and the experiment's loss scaling.
    std::function<std::unique_ptr<StepPipeline>(Backend&, const LossScalingSpec&)> make_pipeline;
    // Gather each step's batch during the step before, on a helper thread (TrainBatches), where
    // the machine has more than one hardware thread. The batches are the same either way.
    bool prefetch_batches = true;
};

// The host bytes a run takes on the CPU backend, which keeps every tensor as FP32 whatever its
// declared format: the tensors the Network declares for these formats at batch capacity `batch`
// (weights and biases, their cast copies, gradients, the input, each layer's z, activation, saved
// input, dz and dx) and the optimizer's FP32 state (Kahan's compensation of narrow weights with
// `rounding`). The data set and the backend's transient cast copies are not counted, so this is a
// lower bound on what the process needs.
std::int64_t cpu_training_bytes(const ModelDesc& desc, const std::vector<LayerFormats>& formats,
                                std::int64_t batch, const TrainSpec& train, const OpFormats& ops = {},
                                const RoundingSpec& rounding = {});


// Throws mantissa::Error when `bytes` (cpu_training_bytes) is more than `physical` bytes of
// memory: "model.hidden [65536, 65536] with batch 128 needs about 69 GB on the CPU backend, more
// than this machine's 23 GB."
void check_cpu_memory(const ModelSpec& model, std::int64_t batch, std::int64_t bytes, std::int64_t physical);

// The index of the layer `name` in desc.layers when precision.layers may name it; else throws
// mantissa::Error, `where` first: no such layer (the sentence lists them), or a layer that takes no
// precision setting (batchnorm2d).
int precision_layer(const ModelDesc& desc, const std::string& name, const std::string& where);

// The machine's physical memory in bytes (sysconf); 0 when unknown.
std::int64_t physical_memory_bytes();

class Trainer {
public:
    // Builds the model for `data` on `backend`. Throws mantissa::Error on a bad experiment (an
    // unknown layer in precision.layers, an unknown model kind, bad loss scaling values), and on
    // the CPU backend when the model needs more than the machine's memory (check_cpu_memory) or
    // its allocation fails (std::bad_alloc becomes an Error).
    Trainer(const Experiment& experiment, Dataset data, std::unique_ptr<Backend> backend,
            TrainerOptions options = {});
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    bool done() const { return m_step >= m_total_steps; }   // every step issued
    // Issues the next step and returns the reports of the steps that have completed: the same
    // step's on the CPU, the previous one's on a GPU, none while the pipeline fills. Throws
    // mantissa::Error when done(). The span is valid until the next advance, flush or step.
    std::span<const StepReport> advance();
    // Waits for every issued step and returns their reports.
    std::span<const StepReport> flush();
    // One step at a time (tests, examples): issues the next step, waits for it and returns its
    // report. Reports an earlier advance left in flight are dropped: flush those first.
    const StepReport& step();
    int in_flight() const;         // steps issued and not yet reported
    // The test split in batches, current settings, no FP8 amaxes. Needs no step in flight. Text:
    // the loss in nats per token over every test window, the accuracy of the next token.
    EvalRecord evaluate();

    std::int64_t steps_taken() const { return m_step; }     // issued (reported: minus in_flight)
    std::int64_t total_steps() const { return m_total_steps; }
    std::int64_t steps_per_epoch() const { return m_steps_per_epoch; }
    // Training time in seconds since construction or restart_clock(), paused time excluded: the
    // clock stands still from pause_clock() to resume_clock() (a class listening to a teacher is
    // not training time, and runs are compared by it).
    double elapsed_s() const;
    void restart_clock();
    // The training time before this Trainer's clock started: a restored state's (restore), or 0
    // for a branch, which counts its own time from its first step.
    void set_time_before(double seconds) { m_time_before = seconds; }
    void pause_clock();
    void resume_clock();

    // ---- live control (between steps, none in flight: throws mantissa::Error otherwise)
    Event set_layer_precision(const std::string& layer, const LayerSetting& precision);
    Event set_autocast(Autocast autocast);
    // precision.ops.<op_class> ("softmax", "layernorm"): the op class's format for every op of it.
    Event set_op_precision(const std::string& op_class, OpPrecision precision);
    Event set_master_weights(bool enabled);
    Event set_fp8_scaling(Fp8Scaling scaling);
    // precision.rounding: stochastic gradients re-declare nothing (the layers' backward rounds
    // them); the weights' rounding is the optimizer's.
    Event set_rounding(const RoundingSpec& rounding);
    Event set_loss_scaling(const LossScalingSpec& spec);
    Event set_learning_rate(double lr);   // the base rate; the schedule applies on top
    Event inject_non_finite(const std::string& layer, float value);  // at the next step

    // ---- state
    const Experiment& settings() const { return m_experiment; }  // with live changes applied
    const Dataset& dataset() const { return m_data; }
    Backend& backend() { return *m_backend; }
    Network& network() { return *m_network; }
    const Optimizer& optimizer() const { return *m_optimizer; }
    Optimizer& optimizer() { return *m_optimizer; }
    // Between steps (none in flight: throws mantissa::Error otherwise). restore() is for a Trainer
    // built from the settings the state was taken under (settings()), before its first step; the
    // tensors are the caller's to restore (engine/train/checkpoint.h).
    TrainerState state() const;
    void restore(const TrainerState& state);
    // The loss scaler as of the last reported step (the pipeline's own runs where the steps run).
    const LossScaler& scaler() const { return m_scaler; }
    std::string pipeline_description() const;  // "eager", "graph replayed 120 times", ...
    LayerSetting layer_setting(int layer) const;
    double current_lr() const;     // for the next step

private:
    // What the report of a step in flight needs from the moment it was issued.
    struct Issued {
        std::int64_t step = 0, epoch = 0, samples = 0;
        double lr = 0;
        bool stats = false;
        std::vector<ComputeFormat> precisions;  // per layer
        std::vector<WhatIfRecord> what_if;      // measured by the step's backward
        std::vector<BlockScaleRecord> block_scales;  // viewed by the step's backward
        std::vector<OpStepRecord> accumulation;      // measured by the step's backward
    };
    void issue();
    void issue_body_of_step(std::int64_t count, bool stats);
    void report_one();
    // Reports steps until at most `left_in_flight` remain in flight: this call's reports.
    std::span<const StepReport> report_until(int left_in_flight);
    void require_idle(const char* what) const;
    std::vector<LayerFormats> resolve_formats() const;
    OpFormats op_formats() const;
    void apply_formats(const std::vector<LayerSetting>& old_settings, const PrecisionSpec& old_precision);
    Event make_setting_event(const std::string& key, const std::string& old_value,
                             const std::string& new_value, bool quote);
    int require_layer(const std::string& name) const;
    // Where layer `layer`'s weight (or other) gradient stands in the list the step checked.
    std::size_t checked_index(int layer, bool weight) const;

    Experiment m_experiment;
    Dataset m_data;
    std::unique_ptr<Backend> m_backend;
    ModelDesc m_desc;
    std::unique_ptr<Network> m_network;
    std::unique_ptr<Optimizer> m_optimizer;
    std::unique_ptr<StepPipeline> m_pipeline;
    LossScaler m_scaler;
    std::uint64_t m_generation = 0;  // bumped at every live change (StepBegin::generation)
    std::vector<LayerSetting> m_layer_settings;

    std::int64_t m_step = 0, m_total_steps = 0, m_steps_per_epoch = 0;
    std::unique_ptr<TrainBatches> m_batches;  // refers to m_data, so declared after it
    BatchBuffers m_batch;                     // this step's rows (the pipeline copies them in begin)
    std::vector<std::int64_t> m_test_order;
    std::vector<float> m_x, m_targets;        // evaluation's batch
    std::vector<std::int32_t> m_y, m_ids;
    std::vector<Tensor*> m_grads;
    std::vector<bool> m_want;
    std::vector<std::size_t> m_checked;  // for each checked gradient, its index in Network::parameters()
    int m_inject_layer = -1;
    float m_inject_value = 0;
    bool m_diverged = false;
    bool m_scale_collapsed = false;  // the loss scale is below FP32's normal range (said once)
    bool m_told_replay = false, m_told_recording_off = false;  // each notice once a run
    std::unique_ptr<WhatIfStatistics> m_what_if;  // null: train.what_if lists no format
    std::string m_what_if_refused;                // the backend's sentence, said at the first step
    std::unique_ptr<BlockScaleViews> m_block_scales;  // null: train.block_scales is off
    std::string m_block_scales_refused;           // as m_what_if_refused
    std::unique_ptr<AccumulationErrorStatistics> m_accumulation;  // null: train.accumulation_error is off
    std::string m_accumulation_refused;           // as m_what_if_refused
    OperandObservers m_observers;                 // the three above, as the network's one observer
    std::deque<Issued> m_issued;
    std::vector<Issued> m_issued_spare;
    StepResults m_results;
    std::vector<StepReport> m_reports;  // reused: m_report_count of them are this call's
    std::size_t m_report_count = 0;
    std::chrono::steady_clock::time_point m_start;     // moved forward by each pause's length
    double m_time_before = 0;  // training time of the run before this Trainer (a restored state's)
    std::optional<std::chrono::steady_clock::time_point> m_paused_at;
};

}  // namespace mantissa
