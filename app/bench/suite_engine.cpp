// The `engine` suite: what a training step costs per precision and backend.
//
// For each model (the reference 784-256-128-10 at batch 128, then wider MLPs) and backend (the
// CPU; CUDA when the backend factory can make one), one Trainer per precision is built and
// warmed up; then rounds of timed blocks, every precision once per round (interleaved). A block
// is as many steps as take ~0.25 s (0.05 s with --quick), measured during the warm-up, issued as
// the Session issues them (Trainer::advance: on a GPU, pipelined and replayed as CUDA graphs). Printed:
// median step time and samples/s, the spread of the blocks, the step-time ratio to fp32 (median
// of the per-round ratios) and the process CPU time per step (steadier than the wall clock on a
// shared machine). A second table times oneDNN's matmul on the reference shapes, fp32 against
// bf16 with FP32 accumulation: the bf16 path is taken only where it is faster (cpu_matmul.h).
//
// Each step is also held against the machine (docs/benchmarks.md, "Limits"): the limits table
// measures the CPU's peak rates first (peak_rate.h), every row gives its matmul FLOPs per step
// (model/matmul_flops.h), the GFLOP/s they make and that as a share of the peak × threads, and
// the threads table (thread_scaling.h) times the bigger models at 1, 2, ... threads.
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "bench/aims.h"
#include "bench/bench.h"
#include "bench/peak_rate.h"
#include "bench/reference_data.h"
#include "bench/stats.h"
#include "bench/step_flops.h"
#include "bench/thread_scaling.h"
#include "train/trainer.h"

namespace mantissa::bench {

namespace {

struct ModelCase {
    std::vector<int> hidden;
    int batch;
    bool quick;  // also timed with --quick
};

std::string model_name(const std::vector<int>& hidden) {
    std::string s = "784";
    for (int h : hidden) {
        s += '-';
        s += std::to_string(h);
    }
    s += "-10";
    return s;
}

Table step_table() {
    Table t;
    t.name = "steps";
    t.title = "Training step per precision (median of interleaved blocks; vs fp32 = step-time ratio, same rounds)";
    t.columns = {{"backend", "backend"},
                 {"model", "model"},
                 {"batch", "batch"},
                 {"precision", "precision"},
                 {"ms_per_step", "ms/step", "ms", 3},
                 {"samples_per_s", "samples/s", "samples/s", 0},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"vs_fp32", "vs fp32", "ratio", 2, "x"},
                 {"cpu_ms_per_step", "cpu ms/step", "ms", 3},
                 {"mflop_per_step", "MFLOP/step", "MFLOP", 1},
                 {"gflops", "GFLOP/s", "GFLOP/s", 1},
                 {"limit_pct", "% of limit", "%", 0, "%"},
                 {"limit", "limit"},
                 {"blocks", "blocks x steps"}};
    return t;
}

// Times every precision in `configs` on one model and backend; appends rows to `table`.
void time_model(const ModelCase& mc, const std::string& backend, const Dataset& data,
                const std::vector<const PrecisionConfig*>& configs, const BenchOptions& o, const PeakRates& peaks,
                Table& table) {
    std::vector<std::unique_ptr<Trainer>> trainers;
    for (const PrecisionConfig* c : configs) {
        Experiment e = reference_experiment();
        e.backend = backend;
        e.model.hidden = mc.hidden;
        e.train.batch_size = mc.batch;
        c->apply(e);
        trainers.push_back(std::make_unique<Trainer>(e, data, make_backend(backend)));
    }
    // Warm-up, and how many steps make a block of about `target` seconds (from the median step
    // time of the precisions: one slow moment of the machine must not shrink every block).
    const double target = o.quick ? 0.05 : 0.3;
    std::vector<double> step_s;
    for (auto& t : trainers) {
        for (int i = 0; i < 2; ++i) t->step();
        const auto t0 = Clock::now();
        for (int i = 0; i < 2; ++i) t->step();
        step_s.push_back(seconds_since(t0) / 2);
    }
    const int steps = std::clamp(static_cast<int>(std::lround(target / std::max(median(step_s), 1e-6))), 1, 100);
    const int rounds = o.blocks_or(7, 3);

    const std::size_t n = trainers.size();
    std::vector<std::vector<double>> cpu(n);
    std::vector<std::function<void()>> blocks;
    for (std::size_t i = 0; i < n; ++i)
        blocks.push_back([&, i] {
            const double c0 = process_cpu_s();
            // As Session drives it: issued ahead, results read as they come (a GPU overlaps the
            // host's next step with this one), every step's report in by the block's end.
            for (int s = 0; s < steps; ++s) trainers[i]->advance();
            trainers[i]->flush();
            cpu[i].push_back(process_cpu_s() - c0);
        });
    auto seconds = time_interleaved(blocks, 1, rounds);
    for (std::size_t i = 0; i < n; ++i) cpu[i].erase(cpu[i].begin());  // the warm-up round's

    std::size_t base = n, bf16 = n;
    for (std::size_t i = 0; i < n; ++i) {
        if (std::string(configs[i]->name) == "fp32") base = i;
        if (std::string(configs[i]->name) == "bf16") bf16 = i;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const Summary s = summarize(seconds[i]);
        const double ms = 1e3 * s.median / steps;
        const StepFlops flops = step_flops(*trainers[i]);
        const int threads = cpu_threads(*trainers[i]);  // 0 on CUDA: no limit
        nlohmann::json row = {{"backend", backend},
                              {"device", trainers[i]->backend().device_name()},
                              {"model", model_name(mc.hidden)},
                              {"batch", mc.batch},
                              {"precision", configs[i]->name},
                              {"ms_per_step", ms},
                              {"samples_per_s", mc.batch / (ms / 1e3)},
                              {"spread_pct", s.spread_pct()},
                              {"vs_fp32", base < n ? nlohmann::json(median(ratios(seconds[i], seconds[base])))
                                                   : nlohmann::json(nullptr)},
                              {"vs_bf16", bf16 < n ? nlohmann::json(median(ratios(seconds[i], seconds[bf16])))
                                                   : nlohmann::json(nullptr)},
                              {"cpu_ms_per_step", 1e3 * median(cpu[i]) / steps},
                              {"mflop_per_step", flops.total / 1e6},
                              {"gflops", number_or_null(achieved_gflops(flops, ms / 1e3))},
                              {"limit_pct", number_or_null(limit_pct(flops, ms / 1e3, peaks, threads))},
                              {"limit", threads > 0 ? nlohmann::json(flops.basis() + " x" + std::to_string(threads))
                                                    : nlohmann::json(nullptr)},
                              {"threads", threads > 0 ? nlohmann::json(threads) : nlohmann::json(nullptr)},
                              {"blocks", std::to_string(rounds) + " x " + std::to_string(steps)},
                              {"rounds", rounds},
                              {"steps_per_block", steps}};
        table.rows.push_back(std::move(row));
    }
}

// oneDNN's matmul on the reference shapes: fp32 against bf16 operands, interleaved.
Table matmul_table(const BenchOptions& o) {
    Table t;
    t.name = "matmul";
    // The training rows take a default CpuMatmul's path: the measured choice, unless
    // MANTISSA_CPU_BF16_MATMUL overrides it.
    const Bf16MatmulChoice& choice = CpuMatmul::measured_bf16_choice();
    const bool taken = CpuMatmul().bf16_enabled();
    t.title = std::string("oneDNN matmul on the reference shapes, ms per call (bf16 primitive for training: ") +
              (taken ? "yes" : "no") +
              (taken == choice.bf16 ? ", " + choice.why : std::string(", set by MANTISSA_CPU_BF16_MATMUL")) + ")";
    t.columns = {{"shape", "shape"},
                 {"fp32_ms", "fp32 ms", "ms", 4},
                 {"bf16_ms", "bf16 ms", "ms", 4},
                 {"bf16_vs_fp32", "bf16/fp32", "ratio", 2, "x"},
                 {"spread_pct", "spread", "%", 0, "%"}};
    struct Shape {
        const char* what;
        std::int64_t m, n, k;
        bool ta, tb;
    };
    const Shape shapes[] = {{"fc1 forward  128x784 . 784x256", 128, 256, 784, false, true},
                            {"fc1 dW       256x128 . 128x784", 256, 784, 128, true, false},
                            {"fc2 forward  128x256 . 256x128", 128, 128, 256, false, true}};
    CpuMatmul fp32, bf16;
    fp32.set_bf16_enabled(false);
    bf16.set_bf16_enabled(true);
    const int calls = o.quick ? 5 : 20;
    for (const Shape& s : shapes) {
        std::vector<float> a(static_cast<std::size_t>(s.m * s.k), 0.5f), b(static_cast<std::size_t>(s.k * s.n), 0.25f),
            c(static_cast<std::size_t>(s.m * s.n));
        auto block = [&](CpuMatmul& mm) {
            return [&] {
                for (int i = 0; i < calls; ++i) mm.multiply(a.data(), s.ta, b.data(), s.tb, c.data(), s.m, s.n, s.k, true);
            };
        };
        const auto sec = time_interleaved({block(fp32), block(bf16)}, 1, o.blocks_or(15, 3));
        const Summary f = summarize(sec[0]);
        // A CpuMatmul without a bf16 primitive on this CPU falls back to fp32 and says so.
        const bool has_bf16 = bf16.bf16_enabled();
        t.rows.push_back({{"shape", s.what},
                          {"fp32_ms", 1e3 * f.median / calls},
                          {"bf16_ms", has_bf16 ? nlohmann::json(1e3 * median(sec[1]) / calls) : nlohmann::json(nullptr)},
                          {"bf16_vs_fp32", has_bf16 ? nlohmann::json(median(ratios(sec[1], sec[0])))
                                                    : nlohmann::json(nullptr)},
                          {"spread_pct", f.spread_pct()}});
    }
    if (!bf16.bf16_enabled()) t.notes.push_back("bf16: n/a, this oneDNN has no bf16 matmul for this CPU");
    return t;
}

// The batch gathered one step ahead on a helper thread (TrainBatches) against gathered by the
// training thread at the start of each step: the fp32 reference, on the 8192-row subset the other
// rows use (25 MB, mostly in the L3 cache) and on the whole training split (188 MB: each row of a
// shuffled batch a trip to memory).
Table batch_table(const BenchOptions& o, const Dataset& subset) {
    Table t;
    t.name = "batches";
    t.title = "Gathering each step's batch: on a helper thread one step ahead vs on the training thread (fp32 reference, "
              "batch 128, interleaved blocks)";
    t.columns = {{"data", "data"},
                 {"gather", "gather"},
                 {"ms_per_step", "ms/step", "ms", 3},
                 {"samples_per_s", "samples/s", "samples/s", 0},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"vs_training_thread", "vs training thread", "ratio", 3, "x"}};
    if (std::thread::hardware_concurrency() < 2) {
        t.notes.push_back("not measured: this machine has one hardware thread, so batches are gathered on the training thread");
        return t;
    }
    const Dataset full = o.quick ? Dataset{} : reference_data(0, 1000);
    for (const Dataset* data : {&subset, &full}) {
        if (data->train.rows == 0) continue;
        std::vector<std::unique_ptr<Trainer>> trainers;
        for (bool prefetch : {false, true}) {
            TrainerOptions options;
            options.prefetch_batches = prefetch;
            trainers.push_back(std::make_unique<Trainer>(reference_experiment(), *data, make_backend("cpu"), options));
        }
        const int steps = o.quick ? 20 : 100;
        std::vector<std::function<void()>> blocks;
        for (auto& tr : trainers)
            blocks.push_back([&tr, steps] {
                for (int s = 0; s < steps; ++s) tr->advance();
                tr->flush();
            });
        const auto seconds = time_interleaved(blocks, 1, o.blocks_or(9, 3));
        const std::string what = std::to_string(data->train.rows) + " rows, " +
                                 std::to_string(data->train.x.size() * sizeof(float) >> 20) + " MiB";
        for (std::size_t i = 0; i < 2; ++i) {
            const Summary sm = summarize(seconds[i]);
            const double ms = 1e3 * sm.median / steps;
            t.rows.push_back({{"data", what},
                              {"gather", i == 0 ? "training thread" : "helper thread"},
                              {"ms_per_step", ms},
                              {"samples_per_s", 128 / (ms / 1e3)},
                              {"spread_pct", sm.spread_pct()},
                              {"vs_training_thread", median(ratios(seconds[0], seconds[i]))}});
        }
    }
    t.notes.push_back("vs training thread = median of the per-round step-time ratios (training thread / this), above 1 "
                      "is faster; the batches are the same either way");
    if (o.quick) t.notes.push_back("--quick: the whole 60000-row training split is left out");
    return t;
}

// What the what-if statistics and the block-scale views cost a statistics step (train.what_if,
// train.block_scales; docs/numerics.md): the reference MLP and CNN under BF16 autocast, statistics
// every step, without either, with the default six what-if formats, and with every layer's x, W
// and dy viewed in MXFP8 blocks, interleaved. The aim for the what-if: at most 10% more per step.
Table what_if_table(const BenchOptions& o, const Dataset& data) {
    Table t;
    t.name = "what_if";
    t.title = "What-if statistics and block-scale views: a statistics step without them, with the default six "
              "what-if formats, and with every layer viewed in MXFP8 blocks (bf16 autocast; median of interleaved blocks)";
    t.columns = {{"model", "model"},
                 {"what_if", "measured"},
                 {"ms_per_step", "ms/step", "ms", 3},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"cost_pct", "cost", "%", 1, "%"},
                 {"blocks", "blocks x steps"}};
    struct Case {
        const char* model;
        Experiment (*make)();
        bool quick;
    };
    const Case cases[] = {{"784-256-128-10", reference_experiment, true},
                          {"cnn 32-64, fc 128", reference_cnn_experiment, false}};
    const char* measured[] = {"none", "what-if: fp16, bf16, fp8-e4m3, mxfp8-e4m3, mxfp4, nvfp4",
                              "block scales: every layer in mxfp8-e4m3"};
    std::string aims;
    for (const Case& c : cases) {
        if (o.quick && !c.quick) continue;
        o.say(std::string("engine: what-if statistics and block-scale views, ") + c.model);
        std::vector<std::unique_ptr<Trainer>> trainers;
        for (int kind = 0; kind < 3; ++kind) {
            Experiment e = c.make();
            e.precision.autocast = Autocast::bf16;
            e.train.layer_stats_every = 1;
            if (kind != 1) e.train.what_if.formats.clear();
            e.train.block_scales.enabled = kind == 2;
            if (kind == 2) e.train.block_scales.format = BlockFormat::mxfp8_e4m3;
            trainers.push_back(std::make_unique<Trainer>(e, data, make_backend("cpu")));
        }
        std::vector<double> step_s;
        for (auto& tr : trainers) {
            for (int i = 0; i < 2; ++i) tr->step();
            const auto t0 = Clock::now();
            for (int i = 0; i < 2; ++i) tr->step();
            step_s.push_back(seconds_since(t0) / 2);
        }
        const double target = o.quick ? 0.1 : 0.4;
        const int steps = std::clamp(static_cast<int>(std::lround(target / std::max(median(step_s), 1e-6))), 1, 200);
        const int rounds = o.blocks_or(9, 5);
        std::vector<std::function<void()>> blocks;
        for (auto& tr : trainers)
            blocks.push_back([&tr, steps] {
                for (int s = 0; s < steps; ++s) tr->step();
            });
        const auto seconds = time_interleaved(blocks, 1, rounds);
        double what_if_cost = 0;
        for (std::size_t i = 0; i < trainers.size(); ++i) {
            const Summary sum = summarize(seconds[i]);
            const double cost = 100 * (median(ratios(seconds[i], seconds[0])) - 1);
            if (i == 1) what_if_cost = cost;
            t.rows.push_back({{"model", c.model},
                              {"what_if", measured[i]},
                              {"ms_per_step", 1e3 * sum.median / steps},
                              {"spread_pct", sum.spread_pct()},
                              {"cost_pct", i == 0 ? nlohmann::json(nullptr) : nlohmann::json(cost)},
                              {"blocks", std::to_string(rounds) + " x " + std::to_string(steps)}});
        }
        add_figure(aims, std::string(c.model) + " " + aim_figure("%+.1f%%", what_if_cost, what_if_cost <= 10));
    }
    t.notes.push_back("values measured per tensor: whole rows up to train.what_if.max_elements (" +
                      std::to_string(WhatIfSpec{}.max_elements) + ", the default); block scales: up to " +
                      std::to_string(BlockScaleSpec{}.max_blocks) + " blocks (train.block_scales.max_blocks)");
    t.notes.push_back(aim_note("the what-if statistics cost at most 10% of a statistics step", aims));
    if (o.quick) t.notes.push_back("--quick: the CNN is left out");
    return t;
}

}  // namespace

SuiteResult run_engine_suite(const BenchOptions& o) {
    const auto t0 = Clock::now();
    SuiteResult r;
    r.name = "engine";
    r.title = "samples/s and step time per precision and backend";
    std::vector<const PrecisionConfig*> configs;
    if (o.precisions.empty())
        for (const auto& c : precision_configs()) configs.push_back(&c);
    for (const auto& name : o.precisions)
        if (const PrecisionConfig* c = find_precision(name)) configs.push_back(c);

    o.say("engine: peak rates");
    PeakRates peaks;
    std::vector<int> limit_threads = thread_counts();
    if (const int used = CpuMatmul::default_threads();  // as apply_threads() set it
        std::find(limit_threads.begin(), limit_threads.end(), used) == limit_threads.end()) {
        limit_threads.push_back(used);
        std::sort(limit_threads.begin(), limit_threads.end());
    }
    r.tables.push_back(limits_table(limit_threads, o.quick, peaks));

    const Dataset data = reference_data(8192, 1000);
    r.notes.push_back("data: " + data.name + " (first 8192 training rows); relu, AdamW lr 1e-3; per-layer statistics "
                      "every step (as the GUI records)");
    std::string precisions;
    for (const auto* c : configs) precisions += std::string(precisions.empty() ? "" : "; ") + c->name + ": " + c->description;
    r.notes.push_back("precisions: " + precisions);

    std::vector<std::string> backends = {"cpu"};
    for (const auto& a : backend_availability()) {
        if (a.name == "cpu") continue;
        if (a.available) backends.push_back(a.name);
        else r.notes.push_back(a.name + ": not measured: " + a.reason);
    }
    const std::vector<ModelCase> models = {
        {{256, 128}, 128, true}, {{1024, 1024}, 128, false}, {{1024, 1024}, 256, false}, {{4096}, 256, false}};
    Table steps = step_table();
    std::vector<const PrecisionConfig*> wide_configs;  // the wider MLPs: without the reference-only ones
    for (const auto* c : configs)
        if (!c->reference_only) wide_configs.push_back(c);
    for (const std::string& backend : backends) {
        for (const ModelCase& mc : models) {
            if (o.quick && !mc.quick) continue;
            o.say("engine: " + backend + " " + model_name(mc.hidden) + " batch " + std::to_string(mc.batch));
            try {
                // The reference MLP is the one --quick keeps.
                time_model(mc, backend, data, mc.quick ? configs : wide_configs, o, peaks, steps);
            } catch (const std::exception& e) {
                steps.notes.push_back(backend + " " + model_name(mc.hidden) + ": failed: " + e.what());
            }
        }
    }
    if (o.quick) steps.notes.push_back("--quick: the wider MLPs (784-1024-1024-10, 784-4096-10) are left out");
    for (const auto* c : configs)
        if (c->reference_only)
            steps.notes.push_back(std::string(c->name) + ": on the reference MLP only (a single-threaded emulation)");
    // The emulation aims, each a bound on a step-time ratio of the reference MLP's CPU rows: fp16
    // and fp8 at most 1.3x the fp32 step, mxfp4 and nvfp4 at most 1.5x the bf16 step (vs_bf16 is in
    // the JSON, the median of the per-round ratios as vs fp32).
    const auto ratio_aim = [&](std::initializer_list<std::string_view> precisions, const char* ratio, double bound,
                               const char* what) {
        std::string figures;
        for (const auto& row : steps.rows) {
            const std::string p = row.value("precision", "");
            if (row.value("backend", "") != "cpu" || row.value("model", "") != "784-256-128-10" ||
                std::find(precisions.begin(), precisions.end(), p) == precisions.end() || !row[ratio].is_number())
                continue;
            const double v = row[ratio].get<double>();
            add_figure(figures, p + " " + aim_figure("%.2fx", v, v <= bound));
        }
        if (!figures.empty()) steps.notes.push_back(aim_note(what, figures));
    };
    ratio_aim({"fp16", "fp8-e4m3"}, "vs_fp32", 1.3, "emulated fp16 and fp8 <= 1.3x the fp32 step time (reference, cpu)");
    ratio_aim({"mxfp4", "nvfp4"}, "vs_bf16", 1.5, "emulated mxfp4 and nvfp4 <= 1.5x the bf16 step time (reference, cpu)");
    steps.notes.push_back(
        "MFLOP/step: the step's matmuls (forward, input gradient but for the first layer, weight gradient; 2 FLOPs "
        "per multiply-add); GFLOP/s = that / the median step time; % of limit = GFLOP/s over the limit: the limits "
        "table's one-thread peak x the threads the CPU backend uses, FP32 FMA (\"fma\") where oneDNN multiplies in "
        "FP32 (fp32, tf32, fp16), BF16 (\"bf16\": AMX where present, else the AVX-512 dot product) where it takes "
        "the bf16 primitive (bf16, fp8-e4m3 and block-format operands, attention's bf16 products; bf16 path on); a "
        "step "
        "with both (\"mixed\") is held to each part at its own peak; cuda: no limit");

    o.say("engine: threads");
    Table threads = threads_table(o, data, peaks);
    // Whether the limit × threads can be reached at all: the FMA loop's own scaling in this run.
    const Table& limits = r.tables.front();
    double fma_one = 0, fma_all = 0;
    int all = 1;
    for (const auto& row : limits.rows) {
        if (row.value("unit", "").rfind("FP32 FMA", 0) != 0 || !row.value("gflops", nlohmann::json()).is_number()) continue;
        const int n = row["threads"].get<int>();
        if (n == 1) fma_one = row["gflops"].get<double>();
        if (n > all) all = n, fma_all = row["gflops"].get<double>();
    }
    if (fma_one > 0 && fma_all > 0) {
        char buf[320];
        std::snprintf(buf, sizeof buf,
                      "the FP32 FMA loop on %d threads ran %.2fx its one-thread rate in this run (limits table); "
                      "below %dx the threads shared FMA units (SMT siblings, or cores busy with other work), and "
                      "the limit x threads is more than this machine gave",
                      all, fma_all / fma_one, all);
        threads.notes.push_back(buf);
    }
    // The aim for the matmuls: the fp32 reference step at 75% of the FMA peak on one thread, from
    // the steps table when it ran on one thread, else from the threads table.
    double reference_pct = std::nan("");
    for (const Table* t : {&steps, &threads})
        for (const auto& row : t->rows)
            if (!std::isfinite(reference_pct) && row.value("model", "") == "784-256-128-10" &&
                row.value("precision", "") == "fp32" && row.value("backend", "cpu") == "cpu" &&
                row.value("threads", nlohmann::json()) == 1 && row.value("limit_pct", nlohmann::json()).is_number())
                reference_pct = row["limit_pct"].get<double>();
    steps.notes.push_back(aim_note("reference fp32 step >= 75% of the FMA limit on one thread",
                                   std::isfinite(reference_pct)
                                       ? aim_figure("%.0f%%", reference_pct, reference_pct >= 75)
                                       : "not measured (run without --quick, or with --threads 1)"));
    r.tables.push_back(std::move(steps));
    r.tables.push_back(std::move(threads));
    r.tables.push_back(what_if_table(o, data));
    o.say("engine: batch gathering");
    r.tables.push_back(batch_table(o, data));
    o.say("engine: oneDNN matmul");
    r.tables.push_back(matmul_table(o));
    r.seconds = seconds_since(t0);
    return r;
}

}  // namespace mantissa::bench
