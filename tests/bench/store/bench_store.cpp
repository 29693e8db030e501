// bench_store: the run store's ingest rates, measured in one run next to raw SQLite, and the cost
// of recording to a synthetic training loop and to real training (the reference experiment). Prints a table; never a pass/fail test.
//
//   bench_store [--steps N] [--dir DIR] [--no-training]
//
// Rows: (1) raw SQLite: a prepared INSERT into a table as wide as `steps` (same columns and
// primary key, no foreign key), 10k rows per transaction, same pragmas (WAL, synchronous=NORMAL);
// (2) a Recorder fed steps only, timed from start_run() to the end of finish() (everything
// committed); (3) the same with three layer rows (histogram included) per step; (4) a training
// loop of fixed work per step, recording off vs on (recording_cost.h).
// Aims on a 2-core machine: (2) >= 500k rows/s, (3) >= 100k steps/s, (4) <= 2% slowdown.
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "recording_cost.h"
#include "backend/backend.h"
#include "data/dataset.h"
#include "store/run_store.h"
#include "train/trainer.h"

using namespace mantissa;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// CPU time of the whole process (every thread): steadier than wall time on a shared machine.
double process_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Measurement {
    double wall_s = 0;
    double cpu_s = 0;
    std::int64_t rows = 0;
    std::int64_t steps = 0;
    double rows_per_s() const { return static_cast<double>(rows) / wall_s; }
    double steps_per_s() const { return static_cast<double>(steps) / wall_s; }
    double cpu_us_per_step() const { return 1e6 * cpu_s / static_cast<double>(steps); }
};

StepRecord make_step(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.epoch = static_cast<std::int32_t>(i / 469);
    s.time_s = 0.002 * static_cast<double>(i);
    s.loss = 2.3 / (1.0 + 0.001 * static_cast<double>(i));
    s.loss_scale = 65536;
    s.overflow = i % 1000 == 999;
    s.skipped = s.overflow;
    s.grad_norm = 0.5 + 1e-6 * static_cast<double>(i);
    s.learning_rate = 1e-3;
    s.samples_per_s = 64000;
    s.step_time_ms = 2.0;
    s.memory = {800000, 800000, 400000, 1600000, 131072, 65536, 0, 0, true};
    return s;
}

std::vector<LayerStepRecord> make_layers(std::int64_t step, int count) {
    std::vector<LayerStepRecord> v(static_cast<std::size_t>(count));
    for (int l = 0; l < count; ++l) {
        LayerStepRecord& r = v[static_cast<std::size_t>(l)];
        r.step = step;
        r.layer = l;
        r.name = "fc" + std::to_string(l + 1);
        r.precision = Format::fp16;
        r.grad_amax = 0.01;
        r.grad_elements = 200000;
        r.frac_zero = 0.01;
        r.frac_underflow = 0.002;
        for (int d = -14; d <= 14; ++d)  // ~30 binades, as a real gradient
            r.grad_exponents.counts[static_cast<std::size_t>(-20 + d - ExponentHistogram::min_exponent)] =
                static_cast<std::uint32_t>(200000 / (1 + d * d));
    }
    return v;
}

void check(int rc, sqlite3* db, const char* what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        std::fprintf(stderr, "bench_store: %s: %s\n", what, sqlite3_errmsg(db));
        std::exit(1);
    }
}

// Binds one StepRecord to the raw steps-table insert (the width the store's `steps` rows have).
void bind_step_row(sqlite3_stmt* st, const StepRecord& s) {
    const MemoryBreakdown& m = s.memory;
    sqlite3_bind_int64(st, 1, 1);
    sqlite3_bind_int64(st, 2, s.step);
    sqlite3_bind_int64(st, 3, s.epoch);
    sqlite3_bind_double(st, 4, s.time_s);
    sqlite3_bind_double(st, 5, s.loss);
    sqlite3_bind_double(st, 6, s.loss_scale);
    sqlite3_bind_int64(st, 7, s.overflow);
    sqlite3_bind_int64(st, 8, s.skipped);
    sqlite3_bind_double(st, 9, s.grad_norm);
    sqlite3_bind_double(st, 10, s.learning_rate);
    sqlite3_bind_double(st, 11, s.samples_per_s);
    sqlite3_bind_double(st, 12, s.step_time_ms);
    sqlite3_bind_int64(st, 13, m.parameters);
    sqlite3_bind_int64(st, 14, m.master_weights);
    sqlite3_bind_int64(st, 15, m.gradients);
    sqlite3_bind_int64(st, 16, m.optimizer_state);
    sqlite3_bind_int64(st, 17, m.activations);
    sqlite3_bind_int64(st, 18, m.workspace);
    sqlite3_bind_int64(st, 19, m.device_in_use);
    sqlite3_bind_int64(st, 20, m.device_total);
    sqlite3_bind_int64(st, 21, m.modelled);
}

// (1) Raw SQLite, the baseline: rows/s.
Measurement raw_sqlite_steps(const std::string& path, std::int64_t rows, bool foreign_key) {
    std::filesystem::remove(path);
    sqlite3* db = nullptr;
    check(sqlite3_open(path.c_str(), &db), db, "open");
    check(sqlite3_exec(db,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                       "CREATE TABLE runs(id INTEGER PRIMARY KEY); INSERT INTO runs VALUES(1);",
                       nullptr, nullptr, nullptr),
          db, "pragmas");
    const std::string run_id =
        foreign_key ? "run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE" : "run_id INTEGER NOT NULL";
    check(sqlite3_exec(db,
                       ("CREATE TABLE steps (" + run_id +
                        ", step INTEGER NOT NULL, epoch INTEGER NOT NULL, "
                        "time_s REAL, loss REAL, loss_scale REAL, overflow INTEGER NOT NULL, skipped INTEGER NOT NULL, "
                        "grad_norm REAL, learning_rate REAL, samples_per_s REAL, step_time_ms REAL, "
                        "mem_parameters INTEGER NOT NULL, mem_master_weights INTEGER NOT NULL, "
                        "mem_gradients INTEGER NOT NULL, mem_optimizer_state INTEGER NOT NULL, "
                        "mem_activations INTEGER NOT NULL, mem_workspace INTEGER NOT NULL, "
                        "device_mem_in_use INTEGER NOT NULL, device_mem_total INTEGER NOT NULL, "
                        "memory_modelled INTEGER NOT NULL, PRIMARY KEY (run_id, step)) WITHOUT ROWID")
                           .c_str(),
                       nullptr, nullptr, nullptr),
          db, "create");
    sqlite3_stmt* st = nullptr;
    check(
        sqlite3_prepare_v2(db, "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, nullptr),
        db, "prepare");
    const auto t0 = clock_type::now();
    const double c0 = process_cpu_s();
    for (std::int64_t i = 0; i < rows; ++i) {
        if (i % 10000 == 0) check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, "begin");
        bind_step_row(st, make_step(i));
        check(sqlite3_step(st), db, "insert");
        sqlite3_reset(st);
        if (i % 10000 == 9999 || i == rows - 1)
            check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
    }
    const Measurement m{seconds_since(t0), process_cpu_s() - c0, rows, rows};
    sqlite3_finalize(st);
    sqlite3_close(db);
    return m;
}

// (1b) Raw SQLite with the store's own schema: steps plus three layer rows (blob included) per
// step, 10k steps per transaction: the baseline for (3). Returns steps/s.
Measurement raw_sqlite_layer_steps(const std::string& path, std::int64_t steps, int layers) {
    std::filesystem::remove(path);
    { RunStore store(path); }  // the store's schema, nothing else
    sqlite3* db = nullptr;
    check(sqlite3_open(path.c_str(), &db), db, "open");
    check(sqlite3_exec(
              db,
              "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;"
              "INSERT INTO runs(uuid, name, created_at, updated_at, status) VALUES('u', 'raw', '', '', 'running')",
              nullptr, nullptr, nullptr),
          db, "setup");
    sqlite3_stmt* st = nullptr;
    sqlite3_stmt* lt = nullptr;
    check(
        sqlite3_prepare_v2(db, "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, nullptr),
        db, "prepare");
    check(sqlite3_prepare_v2(db, "INSERT INTO layer_steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &lt, nullptr), db,
          "prepare");
    auto rows = make_layers(0, layers);
    // A typical encoded histogram: ~30 binades (what the recorder writes for these rows).
    std::vector<unsigned char> blob(45, 0x11);
    const auto t0 = clock_type::now();
    const double c0 = process_cpu_s();
    for (std::int64_t i = 0; i < steps; ++i) {
        if (i % 10000 == 0) check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, "begin");
        bind_step_row(st, make_step(i));
        check(sqlite3_step(st), db, "insert");
        sqlite3_reset(st);
        for (const auto& l : rows) {
            sqlite3_bind_int64(lt, 1, 1);
            sqlite3_bind_int64(lt, 2, i);
            sqlite3_bind_int64(lt, 3, l.layer);
            sqlite3_bind_text(lt, 4, l.name.c_str(), static_cast<int>(l.name.size()), SQLITE_STATIC);
            sqlite3_bind_text(lt, 5, "fp16", 4, SQLITE_STATIC);
            sqlite3_bind_double(lt, 6, l.grad_amax);
            sqlite3_bind_int64(lt, 7, l.grad_elements);
            sqlite3_bind_double(lt, 8, l.frac_zero);
            sqlite3_bind_double(lt, 9, l.frac_subnormal);
            sqlite3_bind_double(lt, 10, l.frac_nonfinite);
            sqlite3_bind_double(lt, 11, l.frac_underflow);
            sqlite3_bind_double(lt, 12, l.frac_lost_updates);
            sqlite3_bind_blob(lt, 13, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
            check(sqlite3_step(lt), db, "insert layer");
            sqlite3_reset(lt);
        }
        if (i % 10000 == 9999 || i == steps - 1)
            check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
    }
    const Measurement m{seconds_since(t0), process_cpu_s() - c0, steps * (1 + layers), steps};
    sqlite3_finalize(st);
    sqlite3_finalize(lt);
    sqlite3_close(db);
    return m;
}

struct IngestResult : Measurement {  // wall: start_run() to the end of finish()
    double producer_seconds = 0;     // the feeding loop (the training thread's share, waits included)
    std::string error;
};

// (2), (3): a Recorder fed as fast as it takes rows.
IngestResult recorder_ingest(const std::string& path, std::int64_t steps, int layers) {
    std::filesystem::remove(path);
    RunStore store(path);
    std::vector<std::vector<LayerStepRecord>> layer_rows;  // made before timing: not the store's cost
    for (std::int64_t i = 0; i < 64; ++i) layer_rows.push_back(make_layers(i, layers));
    IngestResult r;
    const auto t0 = clock_type::now();
    const double c0 = process_cpu_s();
    auto rec = store.start_run({"bench", "cpu", "bench", "{}"});
    for (std::int64_t i = 0; i < steps; ++i) {
        auto& rows = layer_rows[static_cast<std::size_t>(i % 64)];
        for (auto& l : rows) l.step = i;
        rec->on_step(make_step(i), rows);
    }
    r.producer_seconds = seconds_since(t0);
    rec->finish(RunStatus::completed);
    r.wall_s = seconds_since(t0);
    r.cpu_s = process_cpu_s() - c0;
    r.rows = steps * (1 + layers);
    r.steps = steps;
    r.error = rec->error();
    const RunRow row = store.run(rec->run_id());
    if (row.steps != steps) r.error += " (only " + std::to_string(row.steps) + " steps stored)";
    return r;
}

// (4) A stand-in for training until the Session is plugged in: fixed arithmetic per step (a
// 3-layer MLP's worth of multiply-adds for a small batch), then one step's telemetry.
void synthetic_training(TelemetrySink* sink, int steps, int work) {
    static std::vector<float> a(4096, 0.5f), b(4096, 0.25f);
    volatile float keep = 0;
    const auto layers = make_layers(0, 3);
    auto rows = layers;
    for (int i = 0; i < steps; ++i) {
        float acc = 0;
        for (int w = 0; w < work; ++w)
            for (std::size_t k = 0; k < a.size(); ++k) acc += a[k] * b[(k + static_cast<std::size_t>(w)) & 4095];
        keep = keep + acc;
        if (sink) {
            for (auto& l : rows) l.step = i;
            sink->on_step(make_step(i), rows);
            if (i % 200 == 199) sink->on_eval({i, "test", 0.3, 0.9});
        }
    }
}

std::string with_commas(double v) {
    std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::int64_t steps = 1000000;
    std::string dir = std::filesystem::temp_directory_path() / "mantissa-bench-store";
    bool training = true;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--no-training") == 0) training = false;
        if (i + 1 >= argc) break;
        if (std::strcmp(argv[i], "--steps") == 0)
            steps = std::atoll(argv[++i]);
        else if (std::strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
    }
    std::filesystem::create_directories(dir);
    const std::int64_t layer_steps = steps / 2;

    std::printf("bench_store: SQLite %s, WAL, synchronous=NORMAL; %u hardware threads; files in %s\n\n",
                sqlite3_libversion(), std::thread::hardware_concurrency(), dir.c_str());

    const Measurement raw = raw_sqlite_steps(dir + "/raw.sqlite", steps, false);
    const Measurement raw_fk = raw_sqlite_steps(dir + "/raw-fk.sqlite", steps, true);
    const Measurement raw_layers = raw_sqlite_layer_steps(dir + "/raw-layers.sqlite", layer_steps, 3);
    const IngestResult only = recorder_ingest(dir + "/steps.sqlite", steps, 0);
    const IngestResult three = recorder_ingest(dir + "/layers.sqlite", layer_steps, 3);

    std::printf("%-46s %9s %8s %11s %11s %8s %11s\n", "what", "rows", "time", "rows/s", "steps/s", "vs raw",
                "cpu us/step");
    auto row = [](const char* what, const Measurement& m, const Measurement& base) {
        std::printf("%-46s %9lld %7.2fs %11s %11s %8.2f %11.2f\n", what, static_cast<long long>(m.rows), m.wall_s,
                    with_commas(m.rows_per_s()).c_str(), with_commas(m.steps_per_s()).c_str(),
                    m.steps_per_s() / base.steps_per_s(), m.cpu_us_per_step());
    };
    row("raw SQLite, steps-wide table, 10k rows/txn", raw, raw);
    row("  the same with a checked foreign key to runs", raw_fk, raw);
    row("Recorder, steps only", only, raw);
    row("raw SQLite, store schema, steps + 3 layer rows", raw_layers, raw_layers);
    row("Recorder, steps + 3 layer rows (histograms)", three, raw_layers);
    std::printf("\n(\"vs raw\" compares steps/s with the raw row above it; cpu us/step counts every thread.)\n");
    std::printf("training thread's share (its feeding loop, waits for the writer included): %.2fs and %.2fs\n",
                only.producer_seconds, three.producer_seconds);
    const double only_rows = only.rows_per_s(), three_steps = three.steps_per_s();
    for (const auto* r : {&only, &three})
        if (!r->error.empty()) std::printf("RECORDING ERROR: %s\n", r->error.c_str());

    // (4) Recording cost on a training-like loop: ~1 ms of work per step. Also the time the
    // training thread spends inside the recorder's calls, which is what recording costs it when
    // the writer keeps up (the writer itself runs on another core).
    bench::RecordingCost cost;
    if (training) {
        const int train_steps = 3000, work = 120;
        cost = bench::measure_recording_cost([&](TelemetrySink* sink) { synthetic_training(sink, train_steps, work); },
                                             dir, 3);
        std::printf(
            "synthetic training, %d steps of %.2f ms + 3 layer rows each: off %.3fs, on %.3fs, slowdown %+.2f%%\n",
            train_steps, 1000.0 * cost.without_s / train_steps, cost.without_s, cost.with_s, 100.0 * cost.slowdown());
        struct TimedSink : TelemetrySink {
            TelemetrySink* inner = nullptr;
            double seconds = 0;
            std::int64_t calls = 0;
            void on_step(const StepRecord& s, const std::vector<LayerStepRecord>& l) override {
                const auto t0 = clock_type::now();
                inner->on_step(s, l);
                seconds += seconds_since(t0);
                ++calls;
            }
            void on_eval(const EvalRecord& e) override { inner->on_eval(e); }
            void on_event(const Event& e) override { inner->on_event(e); }
        };
        std::filesystem::remove(dir + "/timed.sqlite");
        RunStore store(dir + "/timed.sqlite");
        auto rec = store.start_run({"timed", "cpu", "bench", "{}"});
        TimedSink timed;
        timed.inner = rec.get();
        synthetic_training(&timed, train_steps, work);
        rec->finish(RunStatus::completed);
        const double per_call_us = 1e6 * timed.seconds / static_cast<double>(timed.calls);
        std::printf("training thread inside on_step (3 layer rows): %.2f us a step = %.3f%% of a %.2f ms step\n",
                    per_call_us, 100.0 * per_call_us * 1e-3 / (1000.0 * cost.without_s / train_steps),
                    1000.0 * cost.without_s / train_steps);
    }
    // (5) The same on real training: the reference experiment (784-256-128-10, batch 128, every
    // layer's row each step) on the CPU backend, a Trainer feeding the Recorder as Session does.
    bench::RecordingCost real;
    bool real_measured = false;
    if (training) {
        Experiment e;
        e.train.steps = 400;
        e.train.eval_every = 0;
        e.backend = "cpu";
        const Dataset data = load_dataset(e.dataset, e.train.seed);
        real = bench::measure_recording_cost(
            [&](TelemetrySink* sink) {
                Trainer t(e, data, make_backend("cpu"));
                while (!t.done()) {
                    const StepReport& r = t.step();
                    if (sink) {
                        sink->on_step(r.step, r.layers);
                        for (const auto& ev : r.events) sink->on_event(ev);
                    }
                }
            },
            dir, 3);
        real_measured = true;
        std::printf("real training (%s, %lld steps of %.2f ms, 3 layer rows each): off %.3fs, on %.3fs, slowdown %+.2f%%\n",
                    data.name.c_str(), static_cast<long long>(e.train.steps), 1000.0 * real.without_s / 400,
                    real.without_s, real.with_s, 100.0 * real.slowdown());
    }
    std::printf(
        "\naims: steps only >= 500,000 rows/s [%s]; 3 layer rows >= 100,000 steps/s [%s]; real training slowdown <= 2%% [%s]\n",
        only_rows >= 500000 ? "met" : "NOT MET", three_steps >= 100000 ? "met" : "NOT MET",
        !real_measured            ? "not measured"
        : real.slowdown() <= 0.02 ? "met"
                                  : "NOT MET");
    std::filesystem::remove_all(dir);
    return 0;
}
