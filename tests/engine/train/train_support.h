// Helpers shared by the train suites: small in-memory datasets whose gradients are as small or
// as large as a lesson needs, a quick experiment on the CPU backend, and a thread-safe sink that
// keeps everything a session reports.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "data/dataset.h"
#include "model/init.h"
#include "config/experiment.h"
#include "config/telemetry.h"

namespace mantissa::test {

// Regression: x uniform in [-1, 1]^features, each target = target_scale · sin(a·x + c) with a
// fixed random a, c per output. A small target_scale makes every gradient small.
inline Dataset regression_set(std::int64_t train_rows, std::int64_t test_rows, int features,
                              int outputs, float target_scale, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> a(static_cast<std::size_t>(features * outputs)), c(static_cast<std::size_t>(outputs));
    for (auto& v : a) v = 2.0f * rng.uniform() - 1.0f;
    for (auto& v : c) v = 2.0f * rng.uniform() - 1.0f;
    auto fill = [&](Split& s, std::int64_t rows) {
        s.rows = rows;
        s.x.resize(static_cast<std::size_t>(rows * features));
        s.targets.resize(static_cast<std::size_t>(rows * outputs));
        for (auto& v : s.x) v = 2.0f * rng.uniform() - 1.0f;
        for (std::int64_t r = 0; r < rows; ++r) {
            for (int o = 0; o < outputs; ++o) {
                double z = c[static_cast<std::size_t>(o)];
                for (int k = 0; k < features; ++k)
                    z += 2.0 * a[static_cast<std::size_t>(o * features + k)] * s.x[static_cast<std::size_t>(r * features + k)];
                s.targets[static_cast<std::size_t>(r * outputs + o)] = static_cast<float>(target_scale * std::sin(z));
            }
        }
    };
    Dataset d;
    d.name = "test-regression";
    d.features = features;
    d.shape = {features, 1, 1};
    d.classes = 0;
    d.outputs = outputs;
    fill(d.train, train_rows);
    fill(d.test, test_rows);
    return d;
}

inline Dataset blobs_set(std::int64_t samples, int classes, std::uint64_t seed) {
    DatasetSpec spec;
    spec.kind = "blobs";
    spec.samples = samples;
    spec.classes = classes;
    spec.noise = 0.3;
    return load_dataset(spec, seed);
}

inline Experiment quick_experiment(std::int64_t steps, std::vector<int> hidden = {32, 32}) {
    Experiment e;
    e.name = "test";
    e.backend = "cpu";
    e.model.hidden = std::move(hidden);
    e.train.batch_size = 64;
    e.train.steps = steps;
    e.train.eval_every = 0;
    e.precision.autocast = Autocast::off;
    e.precision.loss_scaling.mode = LossScalingMode::off;
    return e;
}

// Keeps every record; safe to read from the test thread after Session::wait().
class CollectingSink : public TelemetrySink {
public:
    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) override {
        std::lock_guard lock(mutex);
        steps.push_back(step);
        layer_records.insert(layer_records.end(), layers.begin(), layers.end());
    }
    void on_eval(const EvalRecord& eval) override {
        std::lock_guard lock(mutex);
        evals.push_back(eval);
    }
    void on_event(const Event& event) override {
        std::lock_guard lock(mutex);
        events.push_back(event);
    }
    std::vector<Event> events_of(EventKind kind) {
        std::lock_guard lock(mutex);
        std::vector<Event> out;
        for (const auto& e : events)
            if (e.kind == kind) out.push_back(e);
        return out;
    }
    std::mutex mutex;
    std::vector<StepRecord> steps;
    std::vector<LayerStepRecord> layer_records;
    std::vector<EvalRecord> evals;
    std::vector<Event> events;
};

}  // namespace mantissa::test
