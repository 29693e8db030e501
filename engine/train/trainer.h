// Trainer: one run, step by step, on the calling thread. It owns the model's Network on a
// backend, the optimizer, the loss scaler and the batch order, and turns each step into
// telemetry (StepRecord, LayerStepRecords, Events). Session runs it on a thread; tests drive it
// directly.
//
// A step: gather the batch -> forward -> loss × scale -> backward (weight gradients rounded to
// their format, measured on stats steps) -> [injected non-finite value] -> unscale + the one
// inf/NaN check over all gradients -> optimizer (unless skipped) -> loss scaler update -> FP8
// scales update. Live settings change between steps through the set_* methods, each returning
// the Event that records it (at the index of the first step that runs under the new setting).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "data/dataset.h"
#include "model/network.h"
#include "train/experiment.h"
#include "train/loss_scaler.h"
#include "train/optimizer.h"
#include "train/telemetry.h"

namespace mantissa {

struct StepReport {
    StepRecord step;
    std::int64_t samples = 0;             // rows in this step's batch
    std::vector<LayerStepRecord> layers;  // one per layer on stats steps, else empty
    std::vector<Event> events;            // overflow, scale_change, divergence, notices
};

class Trainer {
public:
    // Builds the model for `data` on `backend`. Throws mantissa::Error on a bad experiment (an
    // unknown layer in precision.layers, an unknown model kind, bad loss scaling values).
    Trainer(const Experiment& experiment, Dataset data, std::unique_ptr<Backend> backend);
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    bool done() const { return m_step >= m_total_steps; }
    const StepReport& step();      // runs the next step; throws mantissa::Error when done()
    EvalRecord evaluate();         // the test split in batches, current settings, no FP8 amaxes

    std::int64_t steps_taken() const { return m_step; }
    std::int64_t total_steps() const { return m_total_steps; }
    std::int64_t steps_per_epoch() const { return m_steps_per_epoch; }
    double elapsed_s() const;      // since construction or restart_clock()
    void restart_clock();

    // ---- live control (between steps)
    Event set_layer_precision(const std::string& layer, LayerPrecision precision);
    Event set_autocast(Autocast autocast);
    Event set_master_weights(bool enabled);
    Event set_loss_scaling(const LossScalingSpec& spec);
    Event set_learning_rate(double lr);   // the base rate; the schedule applies on top
    Event inject_non_finite(const std::string& layer, float value);  // at the next step

    // ---- state
    const Experiment& settings() const { return m_experiment; }  // with live changes applied
    const Dataset& dataset() const { return m_data; }
    Backend& backend() { return *m_backend; }
    Network& network() { return *m_network; }
    const Optimizer& optimizer() const { return *m_optimizer; }
    const LossScaler& scaler() const { return m_scaler; }
    LayerPrecision layer_setting(int layer) const;
    double current_lr() const;     // for the next step

private:
    std::vector<LayerFormats> resolve_formats() const;
    void apply_formats();
    Event make_setting_event(const std::string& key, const std::string& old_value,
                             const std::string& new_value, bool quote);
    int require_layer(const std::string& name) const;

    Experiment m_experiment;
    Dataset m_data;
    std::unique_ptr<Backend> m_backend;
    ModelDesc m_desc;
    std::unique_ptr<Network> m_network;
    std::unique_ptr<Optimizer> m_optimizer;
    LossScaler m_scaler;
    std::vector<LayerPrecision> m_layer_settings;

    std::int64_t m_step = 0, m_total_steps = 0, m_steps_per_epoch = 0;
    std::int64_t m_order_epoch = -1;
    std::vector<std::int64_t> m_order, m_test_order;
    std::vector<float> m_x, m_targets;
    std::vector<std::int32_t> m_y;
    std::vector<RoundingStats> m_rounding;
    std::vector<GradientSummary> m_summaries;
    std::vector<Tensor*> m_grads;
    std::vector<bool> m_want;
    std::vector<UpdateCounts> m_counts;
    int m_inject_layer = -1;
    float m_inject_value = 0;
    bool m_diverged = false;
    StepReport m_report;
    std::chrono::steady_clock::time_point m_start;
};

}  // namespace mantissa
