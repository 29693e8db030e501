// The `store` suite: what the run store ingests, next to raw SQLite in the same rounds, and what
// recording costs real training.
//
// Ingest: each round inserts N steps rows with raw SQLite (a table as wide as `steps`) and
// through a Recorder (timed from start_run() to the end of finish(): everything committed), then
// N/2 steps with three layer rows each, raw (the store's schema) and through a Recorder; rounds
// repeat, interleaved. Training: the reference experiment on the CPU, a block of steps with no
// sink and a block feeding a Recorder as Session does (start_run .. finish included), alternating;
// the slowdown is the median of the per-round ratios. Aims on 2 cores: steps only >= 500k rows/s,
// three layer rows >= 100k steps/s, real training slowdown <= 2%.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "bench/bench.h"
#include "bench/reference_data.h"
#include "bench/stats.h"
#include "bench/store_rows.h"
#include "error.h"
#include "store/run_store.h"
#include "train/trainer.h"

namespace mantissa::bench {

namespace {

// Rows through a Recorder as fast as it takes them; seconds from start_run() to finish()'s end.
double recorder_ingest(const std::string& path, std::int64_t steps, int layers) {
    std::filesystem::remove(path);
    RunStore store(path);
    std::vector<std::vector<LayerStepRecord>> layer_rows;  // made before timing: not the store's cost
    for (std::int64_t i = 0; i < 64; ++i) layer_rows.push_back(make_layers(i, layers));
    const auto t0 = Clock::now();
    auto rec = store.start_run({"bench", "cpu", "bench", "{}"});
    for (std::int64_t i = 0; i < steps; ++i) {
        auto& rows = layer_rows[static_cast<std::size_t>(i % 64)];
        for (auto& l : rows) l.step = i;
        rec->on_step(make_step(i), rows);
    }
    rec->finish(RunStatus::completed);
    const double s = seconds_since(t0);
    if (!rec->error().empty()) throw Error("recording failed: " + rec->error());
    if (store.run(rec->run_id()).steps != steps) throw Error("the Recorder stored fewer steps than it was given");
    return s;
}

// Forwards to the Recorder and counts the time the training thread spends inside on_step.
struct TimedSink : TelemetrySink {
    TelemetrySink* inner = nullptr;
    double seconds = 0;
    std::int64_t calls = 0;
    void on_step(const StepRecord& s, const std::vector<LayerStepRecord>& l) override {
        const auto t0 = Clock::now();
        inner->on_step(s, l);
        seconds += seconds_since(t0);
        ++calls;
    }
    void on_eval(const EvalRecord& e) override { inner->on_eval(e); }
    void on_event(const Event& e) override { inner->on_event(e); }
};

}  // namespace

SuiteResult run_store_suite(const BenchOptions& o) {
    const auto t0 = Clock::now();
    SuiteResult r;
    r.name = "store";
    r.title = "run store ingest vs raw SQLite, and what recording costs training";
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("mantissa-bench-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(dir);
    struct Cleanup {
        std::string dir;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } cleanup{dir};

    const int rounds = o.blocks_or(5, 3);
    const std::int64_t n = o.quick ? 20000 : 100000, layer_n = n / 2;
    o.say("store: ingest, " + std::to_string(rounds) + " rounds");
    const auto ingest = time_interleaved({[&] { raw_steps(dir + "/raw.sqlite", n); },
                                          [&] { recorder_ingest(dir + "/rec.sqlite", n, 0); },
                                          [&] { raw_layer_steps(dir + "/raw3.sqlite", layer_n, 3); },
                                          [&] { recorder_ingest(dir + "/rec3.sqlite", layer_n, 3); }},
                                         1, rounds);
    Table t;
    t.name = "ingest";
    t.title = "Rows ingested (median of " + std::to_string(rounds) +
              " interleaved rounds; vs raw = steps/s ratio to the raw row above it, same rounds)";
    t.columns = {{"what", "what"},
                 {"rows", "rows"},
                 {"rows_per_s", "rows/s", "rows/s", 0},
                 {"steps_per_s", "steps/s", "steps/s", 0},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"vs_raw", "vs raw", "ratio", 2, "x"}};
    struct Row {
        const char* what;
        std::size_t index, base;
        std::int64_t steps;
        int per_step;
    };
    const Row rows[] = {{"raw SQLite, steps-wide table, 10k rows/txn", 0, 0, n, 1},
                        {"Recorder, steps only", 1, 0, n, 1},
                        {"raw SQLite, store schema, steps + 3 layer rows", 2, 2, layer_n, 4},
                        {"Recorder, steps + 3 layer rows (histograms)", 3, 2, layer_n, 4}};
    for (const Row& row : rows) {
        const Summary s = summarize(ingest[row.index]);
        t.rows.push_back({{"what", row.what},
                          {"rows", row.steps * row.per_step},
                          {"rows_per_s", static_cast<double>(row.steps * row.per_step) / s.median},
                          {"steps_per_s", static_cast<double>(row.steps) / s.median},
                          {"spread_pct", s.spread_pct()},
                          {"vs_raw", median(ratios(ingest[row.base], ingest[row.index]))}});
    }
    const double steps_only = t.rows[1]["rows_per_s"].get<double>(), three = t.rows[3]["steps_per_s"].get<double>();
    r.tables.push_back(std::move(t));

    // Real training, recording off vs on.
    o.say("store: training with recording off vs on");
    const Dataset data = reference_data(8192, 1000);
    Experiment e = reference_experiment();
    Trainer off(e, data, make_backend("cpu")), on(e, data, make_backend("cpu"));
    const int steps = o.quick ? 20 : 150;
    RunStore store(dir + "/training.sqlite");
    TimedSink timed;
    const auto training = time_interleaved(
        {[&] {
             for (int i = 0; i < steps; ++i) off.step();
         },
         [&] {
             auto rec = store.start_run({"bench-recording", "cpu", on.backend().device_name(), "{}"});
             timed.inner = rec.get();
             for (int i = 0; i < steps; ++i) {
                 const StepReport& rep = on.step();
                 timed.on_step(rep.step, rep.layers);
                 for (const auto& ev : rep.events) timed.on_event(ev);
             }
             rec->finish(RunStatus::completed);
         }},
        1, rounds);
    const Summary off_s = summarize(training[0]), on_s = summarize(training[1]);
    const double slowdown = median(ratios(training[1], training[0])) - 1.0;
    const double step_ms = 1e3 * off_s.median / steps;
    Table c;
    c.name = "recording";
    c.title = "Training with recording off vs on (" + data.name + ", 784-256-128-10, batch 128, 3 layer rows a step; " +
              std::to_string(rounds) + " rounds x " + std::to_string(steps) + " steps, interleaved)";
    c.columns = {{"mode", "recording"},
                 {"ms_per_step", "ms/step", "ms", 3},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"slowdown_pct", "slowdown", "%", 2, "%"},
                 {"on_step_us", "in on_step us", "us", 2}};
    c.rows.push_back({{"mode", "off"}, {"ms_per_step", step_ms}, {"spread_pct", off_s.spread_pct()}});
    c.rows.push_back({{"mode", "on"},
                      {"ms_per_step", 1e3 * on_s.median / steps},
                      {"spread_pct", on_s.spread_pct()},
                      {"slowdown_pct", 100 * slowdown},
                      {"on_step_us", timed.calls ? 1e6 * timed.seconds / static_cast<double>(timed.calls) : 0.0}});
    c.notes.push_back("slowdown = median of per-round (on / off) - 1; 'in on_step' = the training thread's time "
                      "inside the Recorder per step (the writer thread runs beside it)");
    r.tables.push_back(std::move(c));
    r.notes.push_back(std::string("SQLite ") + sqlite_version() + ", WAL, synchronous=NORMAL; files in " +
                      std::filesystem::temp_directory_path().string());
    r.notes.push_back(std::string("aims: steps only >= 500,000 rows/s [") + (steps_only >= 500000 ? "met" : "NOT MET") +
                      "]; 3 layer rows >= 100,000 steps/s [" + (three >= 100000 ? "met" : "NOT MET") +
                      "]; training slowdown <= 2% [" + (slowdown <= 0.02 ? "met" : "NOT MET") + "]");
    r.seconds = seconds_since(t0);
    return r;
}

}  // namespace mantissa::bench
