// Shared by the run-history suites: a store made in a temp dir with real runs trained by the engine
// (spirals, a few dozen steps, different precision settings) and synthetic runs fed to a Recorder
// (exact values, any status), and helpers to wait for a recorder's commits.
#pragma once

#include <QTest>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "config/experiment.h"
#include "train/session.h"

namespace history_test {

using namespace mantissa;

inline Experiment spirals(const std::string& name, std::int64_t steps = 40) {
    Experiment e;
    e.name = name;
    e.dataset.kind = "spirals";
    e.dataset.samples = 600;
    e.model.hidden = {32, 32};
    e.train.batch_size = 32;
    e.train.steps = steps;
    e.train.eval_every = 20;
    e.backend = "cpu";
    return e;
}

// Trains `e` to the end, recording it in the store at `path`; returns the run id.
inline std::int64_t trainRun(const std::string& path, const Experiment& e, const std::string& tags = {},
                             const std::string& notes = {}) {
    RunStore store(path);
    Session session(e);
    auto recorder = store.start_run(
        {e.name, session.backend_name(), session.device_name(), experiment_to_json(e).dump(), session.layers()});
    session.add_sink(recorder);
    session.start();
    session.wait();
    const auto state = session.summary().state;
    recorder->finish(state == SessionState::completed ? RunStatus::completed
                     : state == SessionState::failed  ? RunStatus::failed
                                                      : RunStatus::stopped,
                     session.summary().error);
    const std::int64_t id = recorder->run_id();
    if (!tags.empty()) store.set_tags(id, tags);
    if (!notes.empty()) store.set_notes(id, notes);
    return id;
}

inline StepRecord syntheticStep(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.time_s = 0.05 * static_cast<double>(i + 1);
    s.loss = 2.0 / static_cast<double>(i + 1) + 0.01 * static_cast<double>(i % 3);
    s.loss_scale = std::ldexp(1.0, 16 - static_cast<int>(i / 10));
    s.overflow = i % 10 == 9;
    s.skipped = s.overflow;
    s.grad_norm = 0.5;
    s.learning_rate = 1e-3;
    s.samples_per_s = 1000.0 + static_cast<double>(i);
    s.step_time_ms = 4.0;
    s.memory.parameters = 4000;
    s.memory.gradients = 4000;
    return s;
}

inline std::vector<LayerStepRecord> syntheticLayers(std::int64_t i, int count = 3) {
    std::vector<LayerStepRecord> v;
    for (int l = 0; l < count; ++l) {
        LayerStepRecord r;
        r.step = i;
        r.layer = l;
        r.name = "fc" + std::to_string(l + 1);
        r.precision = Format::fp16;
        r.grad_amax = 0.1;
        r.grad_elements = 100;
        r.frac_underflow = 0.01 * static_cast<double>(l + 1) + 0.001 * static_cast<double>(i % 5);
        v.push_back(r);
    }
    return v;
}

// Feeds steps [from, to) with their layer rows, an evaluation every 10 steps and a setting change
// at step 5.
inline void feed(Recorder& r, std::int64_t from, std::int64_t to) {
    for (std::int64_t i = from; i < to; ++i) {
        r.on_step(syntheticStep(i), syntheticLayers(i));
        if (i == 5)
            r.on_event({i, 0.3, EventKind::setting_change, "fc1 set to fp16",
                        R"({"key": "precision.layers.fc1", "old": "auto", "new": "fp16"})"});
        if (i % 10 == 9) r.on_eval({i, "test", 1.0 / static_cast<double>(i + 1), 0.5 + 0.004 * static_cast<double>(i)});
    }
}

inline std::string syntheticConfig(const std::string& name) {
    Experiment e = spirals(name);
    e.precision.autocast = Autocast::fp16;
    return experiment_to_json(e).dump();
}

// A run of `steps` synthetic steps, finished with `status` (running: left open; the Recorder is
// returned so the caller can go on feeding it).
inline std::shared_ptr<Recorder> syntheticRun(RunStore& store, const std::string& name, std::int64_t steps, RunStatus status,
                                              const std::string& config = {}) {
    RecorderOptions fast;
    fast.commit_interval_ms = 5;
    auto r = store.start_run({name, "cpu", "synthetic", config.empty() ? syntheticConfig(name) : config}, fast);
    r->on_event({0, 0, EventKind::run_started, "run started", "{}"});
    feed(*r, 0, steps);
    if (status != RunStatus::running) {
        r->finish(status, status == RunStatus::failed ? "the loss became NaN" : "");
        return nullptr;
    }
    return r;
}

}  // namespace history_test
