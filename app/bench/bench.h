// mantissa_bench: the performance suites behind `mantissa-cli bench` (and the thin bench_* wrappers).
// Each suite measures one area and returns a SuiteResult (report.h); nothing here prints, except
// progress lines through BenchOptions::progress. The library has no Qt: the `gui` suite runs the
// GUI executable (`mantissa --bench-gui --json`) as a separate process and reads its result.
//
// Threads: a suite runs on the calling thread (sessions it starts run their own). The CPU
// backend's thread count comes from MANTISSA_CPU_THREADS, which apply_threads() sets for this
// process and the processes it starts, so every backend, session and peer uses the same count
// (but the engine suite's threads table, which sets each of its trainers' count itself).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/report.h"

namespace mantissa::bench {

struct BenchOptions {
    bool quick = false;        // a short run (seconds per suite), for tests and a first look
    int threads = 0;           // 0: the CPU backend's default (all hardware threads)
    int blocks = 0;            // timed blocks per figure; 0: the suite's default (7, quick 3)
    int epochs = 0;            // peer: epochs trained before comparing test accuracy; 0: 3 (quick 1)
    int peer_steps = 0;        // peer: the language model's steps before comparing test loss; 0: 300 (quick 60)
    std::vector<std::string> precisions;   // engine: the precisions to time; empty: all
    std::string python = "/usr/bin/python3";       // peer: the interpreter that has PyTorch
    std::vector<std::string> peer_blas = {"system"};  // peer: "system" and/or "netlib" (see suite_peer.cpp)
    std::vector<std::string> peer_models;  // peer: any of "mlp", "cnn", "gpt"; empty: all three
    std::function<void(const std::string&)> progress;  // may be empty

    int blocks_or(int full, int quick_blocks) const { return blocks > 0 ? blocks : quick ? quick_blocks : full; }
    void say(const std::string& line) const {
        if (progress) progress(line);
    }
};

// The thread count the CPU backend will use with these options; sets MANTISSA_CPU_THREADS so
// that backends, sessions and child processes all use it. Call once, before any suite.
int apply_threads(const BenchOptions& options);

struct SuiteDef {
    std::string name;
    std::string summary;
    std::function<SuiteResult(const BenchOptions&)> run;
};
const std::vector<SuiteDef>& all_suites();   // engine, numeric, store, gui, peer (in run order)

SuiteResult run_engine_suite(const BenchOptions& options);
SuiteResult run_numeric_suite(const BenchOptions& options);
SuiteResult run_store_suite(const BenchOptions& options);
SuiteResult run_gui_suite(const BenchOptions& options);
SuiteResult run_peer_suite(const BenchOptions& options);

// The machine: CPU model, logical CPUs, oneDNN's ISA and version, OS, memory.
nlohmann::json machine_info();

// Where this executable lives, and the files the suites look for beside it (installed layout:
// bin/mantissa, share/mantissa/bench/torch_peer.py) or in the source tree. Empty when not found.
std::string executable_dir();
std::string find_gui_executable();
std::string find_peer_script();
bool gui_built();   // whether this build has the GUI (MANTISSA_GUI=ON)

}  // namespace mantissa::bench
