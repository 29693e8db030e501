// The threads table (thread_scaling.h). For each case one Trainer per thread count, on a CPU
// backend made with that count (make_backend's cpu_threads, as an experiment's backend.threads),
// warmed up, then rounds of interleaved blocks, each thread count once per round, as the steps
// table does with precisions. Speed-up: the median of the
// per-round ratios of the one-thread block's time to this one's.
#include "bench/thread_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "bench/aims.h"
#include "bench/reference_data.h"
#include "bench/stats.h"
#include "bench/step_flops.h"
#include "error.h"
#include "train/trainer.h"

namespace mantissa::bench {

namespace {

struct Case {
    const char* model;
    Experiment (*make)();
    std::vector<int> hidden;  // MLPs only: model.hidden
    int batch;                // 0: the experiment's
    const char* precision;
    bool quick;  // also timed with --quick
    bool text;   // trains on the GPT's corpus
};

Experiment mlp_experiment() { return reference_experiment(); }

const Case cases[] = {
    {"784-256-128-10", mlp_experiment, {256, 128}, 128, "fp32", false, false},
    {"784-1024-1024-10", mlp_experiment, {1024, 1024}, 256, "fp32", true, false},
    {"784-1024-1024-10", mlp_experiment, {1024, 1024}, 256, "bf16", false, false},
    {"cnn 32-64, fc 128", reference_cnn_experiment, {}, 0, "fp32", false, false},
    {"gpt 4x128, T 128", reference_gpt_experiment, {}, 0, "fp32", false, true},
};

}  // namespace

std::vector<int> thread_counts() {
    const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    std::vector<int> counts;
    for (int t = 1; t < hardware; t *= 2) counts.push_back(t);
    counts.push_back(hardware);
    return counts;
}

Table threads_table(const BenchOptions& o, const Dataset& images, const PeakRates& peaks) {
    Table t;
    t.name = "threads";
    t.title = "Training step per CPU backend thread count (median of interleaved blocks; speed-up = median of "
              "per-round step-time ratios to one thread)";
    t.columns = {{"model", "model"},
                 {"batch", "batch"},
                 {"precision", "precision"},
                 {"threads", "threads"},
                 {"ms_per_step", "ms/step", "ms", 3},
                 {"samples_per_s", "samples/s", "samples/s", 0},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"speedup", "speed-up", "ratio", 2, "x"},
                 {"gflops", "GFLOP/s", "GFLOP/s", 1},
                 {"limit_pct", "% of limit", "%", 0, "%"},
                 {"blocks", "blocks x steps"}};
    const std::vector<int> counts = thread_counts();
    Dataset text;
    bool text_tried = false;
    double aim = std::nan("");
    for (const Case& c : cases) {
        if (o.quick && !c.quick) continue;
        Experiment e = c.make();
        if (!c.hidden.empty()) e.model.hidden = c.hidden;
        if (c.batch > 0) e.train.batch_size = c.batch;
        find_precision(c.precision)->apply(e);
        if (c.text && !text_tried) {
            text_tried = true;
            try {
                text = load_dataset(e.dataset, e.train.seed);
            } catch (const Error& err) {  // no corpus: the GPT is left out, not the table
                t.notes.push_back(std::string(c.model) + " left out: " + err.what());
            }
        }
        if (c.text && text.name.empty()) continue;
        o.say(std::string("engine: threads, ") + c.model + " " + c.precision);
        const Dataset& data = c.text ? text : images;
        std::vector<std::unique_ptr<Trainer>> trainers;
        try {
            for (int n : counts) {
                trainers.push_back(std::make_unique<Trainer>(e, data, make_backend("cpu", 0, n)));
            }
        } catch (const std::exception& err) {
            t.notes.push_back(std::string(c.model) + " " + c.precision + ": failed: " + err.what());
            continue;
        }
        // Blocks of about `target` seconds on one thread.
        double one_thread_s = 0;
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            for (int s = 0; s < 2; ++s) trainers[i]->step();
            const auto t0 = Clock::now();
            for (int s = 0; s < 2; ++s) trainers[i]->step();
            if (i == 0) one_thread_s = seconds_since(t0) / 2;
        }
        const double target = o.quick ? 0.1 : 0.3;
        const int steps = std::clamp(static_cast<int>(std::lround(target / std::max(one_thread_s, 1e-6))), 1, 200);
        const int rounds = o.blocks_or(7, 3);
        std::vector<std::function<void()>> blocks;
        for (auto& tr : trainers)
            blocks.push_back([&tr, steps] {
                for (int s = 0; s < steps; ++s) tr->advance();
                tr->flush();
            });
        const auto seconds = time_interleaved(blocks, 1, rounds);
        const StepFlops flops = step_flops(*trainers[0]);
        const int batch = e.train.batch_size;
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            const Summary sm = summarize(seconds[i]);
            const double step_s = sm.median / steps;
            const double speedup = median(ratios(seconds[0], seconds[i]));
            t.rows.push_back({{"model", c.model},
                              {"batch", batch},
                              {"precision", c.precision},
                              {"threads", counts[i]},
                              {"ms_per_step", 1e3 * step_s},
                              {"samples_per_s", batch / step_s},
                              {"spread_pct", sm.spread_pct()},
                              {"speedup", speedup},
                              {"gflops", number_or_null(achieved_gflops(flops, step_s))},
                              {"limit_pct", number_or_null(limit_pct(flops, step_s, peaks, counts[i]))},
                              {"limit", flops.basis()},
                              {"mflop_per_step", flops.total / 1e6},
                              {"blocks", std::to_string(rounds) + " x " + std::to_string(steps)}});
            if (counts[i] == 2 && std::string(c.model) == "784-1024-1024-10" && std::string(c.precision) == "fp32")
                aim = speedup;
        }
    }
    t.notes.push_back("% of limit: GFLOP/s over the limits table's one-thread peak x threads (its unit by the "
                      "steps table's rule)");
    if (std::any_of(t.rows.begin(), t.rows.end(), [](const nlohmann::json& r) { return r.value("model", "") == "gpt 4x128, T 128"; }))
        t.notes.push_back("gpt: a sample is a sequence of 128 tokens");
    t.notes.push_back(aim_note("2 threads >= 1.7x one thread on 784-1024-1024-10 batch 256 (fp32)",
                               std::isfinite(aim) ? aim_figure("%.2fx", aim, aim >= 1.7)
                                                  : "not measured (one hardware thread)"));
    if (o.quick) t.notes.push_back("--quick: only 784-1024-1024-10 fp32; the reference MLP, bf16, the CNN and the GPT are left out");
    return t;
}

}  // namespace mantissa::bench
