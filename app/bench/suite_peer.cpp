// The `peer` suite: Mantissa next to PyTorch on the same reference models (the MLP, the CNN and the
// GPT language model), same batch, same threads, in one run.
//
// tests/bench/torch_peer.py (installed as share/mantissa/bench/torch_peer.py) runs under the
// interpreter that has Debian's python3-torch, in its --serve mode, one process per model: it
// loads the data, warms up, says which BLAS it uses, then times blocks of steps on command. Rounds
// interleave a block of Mantissa fp32, PyTorch fp32, Mantissa bf16 (autocast bf16) and PyTorch
// bf16 (torch.autocast on the CPU), each the same number of steps; the ratios are medians of
// per-round ratios. Then both train fresh models for the same epochs and report test accuracy
// (mlp, cnn), or for the same steps and report the test loss in nats per token (gpt: its schedule
// over those steps; the training windows are drawn by each side's own generator, so the two runs
// see different batches from the same distribution).
//
// BLAS: Debian's python3-torch multiplies through libblas.so.3, the reference netlib BLAS unless
// an OpenBLAS package provides that alternative. "system" runs PyTorch as installed; "netlib"
// forces the reference BLAS with LD_LIBRARY_PATH (what a machine without OpenBLAS gets). Both
// get OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to the thread count.
//
// Mantissa is timed twice in each round: as it trains by default, taking the per-layer statistics
// the window draws (every step for the MLP and the CNN, every 10 for the GPT, as their presets and
// the engine suite do), and with none (train.layer_stats_every 0: no exponent histograms, underflow
// counts, what-if or block-scale views), the work PyTorch's loop does. Both ratios are printed, each
// against the same aim: the first says what a person gets with the telemetry on, the second what
// the engine's training itself costs.
//
// Both sides' throughput is also held against the machine (docs/benchmarks.md, "Limits"): the
// model's matmul FLOPs per step (the same for both: model/matmul_flops.h) over the step time, as a
// share of the peak measured at the start of the suite × the threads, the peak by the rule of the
// engine suite's steps table for Mantissa's precision in that row (PyTorch's bf16 autocast row is
// held to the same limit as Mantissa's bf16).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "bench/aims.h"
#include "bench/bench.h"
#include "bench/child_process.h"
#include "bench/peak_rate.h"
#include "bench/reference_data.h"
#include "bench/stats.h"
#include "bench/step_flops.h"
#include "error.h"
#include "train/trainer.h"

namespace mantissa::bench {

namespace {

constexpr const char* netlib_dirs = "/usr/lib/x86_64-linux-gnu/blas:/usr/lib/x86_64-linux-gnu/lapack";

nlohmann::json read_reply(ChildProcess& peer) {
    const auto line = peer.read_line();
    if (!line) throw Error("the PyTorch script stopped answering");
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error("the PyTorch script answered '" + *line + "'");
    if (j.contains("error")) throw Error("the PyTorch script: " + j["error"].get<std::string>());
    return j;
}

// The last non-empty line of a child's stderr: what it said went wrong.
std::string last_line(const std::string& text) {
    std::string last, line;
    for (char ch : text + "\n") {
        if (ch == '\n') {
            if (!line.empty()) last = line;
            line.clear();
        } else {
            line += ch;
        }
    }
    return last;
}

// A model both sides build the same way, and the speed this suite aims for against PyTorch
// (docs/benchmarks.md).
struct PeerModel {
    const char* name;            // torch_peer.py's --model
    Experiment (*experiment)();  // reference_data.h
    double fp32_aim, bf16_aim;   // Mantissa samples/s over PyTorch's
    bool language_model;         // gpt: samples are sequences; compared by test loss, not accuracy
};

const PeerModel peer_models[] = {
    {"mlp", reference_experiment, 3.0, 2.0, false},
    {"cnn", reference_cnn_experiment, 1.5, 1.5, false},
    {"gpt", reference_gpt_experiment, 1.2, 1.2, true},
};

// The language model's test loss may differ from PyTorch's by this fraction (docs/benchmarks.md).
constexpr double kLossAim = 0.02;
constexpr const char* kLossAimText = "within 2%";

Experiment peer_experiment(const PeerModel& model, const char* mode, bool statistics = true) {
    Experiment e = model.experiment();
    find_precision(mode)->apply(e);
    if (!statistics) e.train.layer_stats_every = 0;  // the Trainer's "never" (trainer.cpp)
    return e;
}

std::string times(double aim) {
    std::string s = std::to_string(aim);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s + "x";
}

}  // namespace

SuiteResult run_peer_suite(const BenchOptions& o) {
    const auto t0 = Clock::now();
    SuiteResult r;
    r.name = "peer";
    r.title = "Mantissa vs PyTorch (CPU, eager) on the reference models";
    const std::string script = find_peer_script();
    if (script.empty()) {
        r.skipped = true;
        r.notes.push_back("skipped: tests/bench/torch_peer.py was not found (beside the executable in "
                          "../share/mantissa/bench/, or in the source tree); set MANTISSA_PEER_SCRIPT");
        return r;
    }
    const int threads = CpuMatmul::default_threads()  /* as apply_threads() set it */;
    const int rounds = o.blocks_or(7, 3);
    const int epochs = o.epochs > 0 ? o.epochs : o.quick ? 1 : 3;
    // The language model's fixed-step loss run, and its warmup: the preset's 100 steps of 600,
    // scaled down with a shorter run (the same on both sides).
    const int lm_steps = o.peer_steps > 0 ? o.peer_steps : o.quick ? 60 : 300;
    const int lm_warmup = std::min(100, lm_steps / 6);
    const std::string t = std::to_string(threads);

    Table speed;
    speed.name = "throughput";
    speed.title = "Samples/s, " + t + " thread(s) (median of " + std::to_string(rounds) +
                  " interleaved rounds; ratio = median of per-round Mantissa/PyTorch)";
    speed.columns = {{"model", "model"},
                     {"batch", "batch"},
                     {"blas", "PyTorch BLAS"},
                     {"mode", "mode"},
                     {"mantissa_samples_per_s", "Mantissa", "samples/s", 0},
                     {"mantissa_spread_pct", "spread", "%", 0, "%"},
                     {"pytorch_samples_per_s", "PyTorch", "samples/s", 0},
                     {"pytorch_spread_pct", "spread", "%", 0, "%"},
                     {"ratio", "Mantissa/PyTorch", "ratio", 2, "x"},
                     {"aim", "aim"},
                     {"bare_samples_per_s", "no statistics", "samples/s", 0},
                     {"bare_spread_pct", "spread", "%", 0, "%"},
                     {"bare_ratio", "no statistics/PyTorch", "ratio", 2, "x"},
                     {"bare_aim", "aim"},
                     {"mantissa_gflops", "Mantissa GFLOP/s", "GFLOP/s", 1},
                     {"mantissa_limit_pct", "% of limit", "%", 0, "%"},
                     {"pytorch_gflops", "PyTorch GFLOP/s", "GFLOP/s", 1},
                     {"pytorch_limit_pct", "% of limit", "%", 0, "%"}};
    Table accuracy;
    accuracy.name = "accuracy";
    accuracy.title = "Test accuracy after " + std::to_string(epochs) + " epoch(s), fresh models";
    accuracy.columns = {{"model", "model"},
                        {"engine", "engine"},
                        {"mode", "mode"},
                        {"epochs", "epochs"},
                        {"test_accuracy_pct", "test accuracy", "%", 2, "%"},
                        {"seconds", "train s", "s", 1}};

    Table losses;
    losses.name = "loss";
    losses.title = "Language model: test loss after " + std::to_string(lm_steps) +
                   " steps (cosine schedule over them, " + std::to_string(lm_warmup) +
                   " warmup steps), fresh models, over the whole test part";
    losses.columns = {{"model", "model"},
                      {"engine", "engine"},
                      {"mode", "mode"},
                      {"steps", "steps"},
                      {"test_loss", "test loss", "nats/token", 4},
                      {"perplexity", "perplexity", "", 2},
                      {"loss_vs_pytorch_pct", "vs PyTorch", "%", 2, "%"},
                      {"aim", "aim"},
                      {"seconds", "train s", "s", 1}};

    Table limits;  // the peaks, measured once PyTorch is known to be there
    PeakRates peaks;
    bool limits_measured = false;
    Dataset full, subset;  // loaded once PyTorch is known to be there
    Dataset text;          // the language model's corpus, likewise
    const char* modes[] = {"fp32", "bf16"};
    bool stopped = false;  // PyTorch could not be started: the rest is skipped too

    for (const PeerModel& model : peer_models) {
        if (stopped) break;
        if (!o.peer_models.empty() &&
            std::find(o.peer_models.begin(), o.peer_models.end(), model.name) == o.peer_models.end())
            continue;
        bool accuracy_done = false;
        const Experiment reference = model.experiment();
        const int batch = reference.train.batch_size;
        for (const std::string& blas : o.peer_blas) {
            std::vector<std::pair<std::string, std::string>> env = {{"OMP_NUM_THREADS", t}, {"OPENBLAS_NUM_THREADS", t}};
            if (blas == "netlib") {
                const char* old = std::getenv("LD_LIBRARY_PATH");
                env.push_back({"LD_LIBRARY_PATH", std::string(netlib_dirs) + (old && *old ? std::string(":") + old : "")});
            }
            o.say(std::string("peer: starting PyTorch, ") + model.name + " (" + blas + " BLAS)");
            std::unique_ptr<ChildProcess> peer;
            nlohmann::json ready;
            try {
                peer = std::make_unique<ChildProcess>(
                    std::vector<std::string>{o.python, script, "--serve", "--model", model.name, "--threads", t,
                                             "--batch", std::to_string(batch)},
                    env);
                const auto line = peer->read_line();
                ready = line ? nlohmann::json::parse(*line, nullptr, false) : nlohmann::json();
            } catch (const Error& e) {
                r.notes.push_back("skipped: " + std::string(e.what()));
                stopped = true;
                break;
            }
            if (!ready.is_object() || !ready.value("ready", false)) {
                const int code = peer->wait();
                const std::string why = last_line(peer->stderr_text());
                if (code == 3) {
                    r.notes.push_back("skipped: PyTorch is not installed for " + o.python + " (apt-get install python3-torch)");
                } else {
                    r.notes.push_back("skipped: the PyTorch script failed (exit " + std::to_string(code) + ")" +
                                      (why.empty() ? "" : ": " + why));
                }
                stopped = true;
                break;
            }
            if (model.language_model && text.name.empty()) {
                try {
                    text = load_dataset(reference.dataset, reference.train.seed);
                } catch (const Error& e) {  // no corpus: this model is left out, not the suite
                    r.notes.push_back(std::string(model.name) + " left out: " + e.what());
                    peer->write_line("quit");
                    peer->wait();
                    break;
                }
            } else if (!model.language_model && full.train.rows == 0) {
                full = reference_data(0, 0);
                subset = full;
                subset.train.rows = std::min<std::int64_t>(subset.train.rows, 8192);
                subset.train.x.resize(static_cast<std::size_t>(subset.train.rows * subset.features));
                subset.train.y.resize(static_cast<std::size_t>(subset.train.rows));
            }
            const nlohmann::json info = ready.value("blas", nlohmann::json::object());
            const std::string kind = info.value("kind", "unknown");
            if (!accuracy_done) {  // said once per BLAS, not per model
                std::string mapped;
                for (const auto& m : info.value("mapped", nlohmann::json::array()))
                    mapped += (mapped.empty() ? "" : ", ") + m.get<std::string>();
                const std::string note = "PyTorch " + ready.value("torch_version", "?") + " (" + blas +
                                         "): torch.__config__ BLAS_INFO=" + info.value("blas_info", "?") +
                                         "; BLAS in use: " + kind + " [" + mapped + "]";
                if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
                if (info.contains("libblas_so_3_alternative")) {
                    const std::string alt = "libblas.so.3 alternative: " +
                                            info["libblas_so_3_alternative"].get<std::string>() +
                                            (blas == "netlib" ? " (overridden by LD_LIBRARY_PATH for this row)" : "");
                    if (std::find(r.notes.begin(), r.notes.end(), alt) == r.notes.end()) r.notes.push_back(alt);
                }
            }

            if (model.language_model && ready.contains("corpus")) {
                const nlohmann::json c = ready["corpus"];
                const std::string note = "gpt corpus as PyTorch built it: " +
                                         std::to_string(c.value("tokens", 0)) + " tokens (" +
                                         std::to_string(c.value("train_tokens", 0)) + " train, " +
                                         std::to_string(c.value("test_tokens", 0)) + " test, " +
                                         std::to_string(c.value("test_samples", 0)) + " test windows), vocabulary " +
                                         std::to_string(c.value("vocab_size", 0)) + " ids";
                if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
            }

            // One model that fails (PyTorch stops answering, runs out of memory, answers nonsense)
            // is left out with its sentence; the rows measured so far and the other models stay.
            try {
                // Mantissa's trainers, warmed up; a block is the same number of steps on both sides.
                const Dataset& data = model.language_model ? text : subset;
                // ours[m]: with the statistics; bare[m]: without (the file's opening comment).
                std::vector<std::unique_ptr<Trainer>> ours, bare;
                for (const char* m : modes) {
                    ours.push_back(std::make_unique<Trainer>(peer_experiment(model, m), data, make_backend("cpu")));
                    bare.push_back(std::make_unique<Trainer>(peer_experiment(model, m, false), data, make_backend("cpu")));
                }
                for (auto& tr : bare)
                    for (int i = 0; i < 3; ++i) tr->step();
                double slowest = 0;
                for (auto& tr : ours) {
                    for (int i = 0; i < 3; ++i) tr->step();
                    const auto s0 = Clock::now();
                    for (int i = 0; i < 3; ++i) tr->step();
                    slowest = std::max(slowest, seconds_since(s0) / 3);
                }
                const double block_s = o.quick ? 0.05 : 0.25;
                const int steps = std::clamp(static_cast<int>(std::lround(block_s / std::max(slowest, 1e-6))), 5, 200);
                o.say(std::string("peer: ") + model.name + ", " + std::to_string(rounds) + " rounds of " +
                      std::to_string(steps) + " steps (" + blas + ")");
                StepFlops flops[2];
                for (int m = 0; m < 2; ++m) flops[m] = step_flops(*ours[static_cast<std::size_t>(m)]);
                if (!limits_measured) {  // once PyTorch is known to be there, before the first timed block
                    o.say("peer: peak rates");
                    std::vector<int> counts = {1};
                    if (threads != 1) counts.push_back(threads);
                    limits = limits_table(counts, o.quick, peaks);
                    limits_measured = true;
                }
                std::vector<std::vector<double>> mine(2), mine_bare(2), theirs(2);
                for (int round = -1; round < rounds; ++round) {
                    for (int m = 0; m < 2; ++m) {
                        const auto mi = static_cast<std::size_t>(m);
                        const auto s0 = Clock::now();
                        for (int i = 0; i < steps; ++i) ours[mi]->step();
                        const double ms = seconds_since(s0);
                        const auto b0 = Clock::now();
                        for (int i = 0; i < steps; ++i) bare[mi]->step();
                        const double bs = seconds_since(b0);
                        peer->write_line(std::string("block ") + modes[m] + " " + std::to_string(steps));
                        const double ts = read_reply(*peer).at("seconds").get<double>();
                        if (round >= 0) {
                            mine[mi].push_back(ms);
                            mine_bare[mi].push_back(bs);
                            theirs[mi].push_back(ts);
                        }
                    }
                }
                for (int m = 0; m < 2; ++m) {
                    const auto& a = mine[static_cast<std::size_t>(m)];
                    const auto& b = theirs[static_cast<std::size_t>(m)];
                    const auto& c = mine_bare[static_cast<std::size_t>(m)];
                    const Summary sa = summarize(a), sb = summarize(b), sc = summarize(c);
                    const double ratio = median(ratios(b, a));  // their time / our time = our samples/s / theirs
                    const double bare_ratio = median(ratios(b, c));
                    const double aim = m == 0 ? model.fp32_aim : model.bf16_aim;
                    const double samples = static_cast<double>(batch) * steps;
                    const StepFlops& f = flops[m];
                    const double ours_s = sa.median / steps, theirs_s = sb.median / steps;
                    speed.rows.push_back({{"model", model.name},
                                          {"batch", batch},
                                          {"blas", kind},
                                          {"mode", m == 0 ? "fp32 vs fp32" : "bf16 vs bf16 autocast"},
                                          {"mantissa_samples_per_s", samples / sa.median},
                                          {"mantissa_spread_pct", sa.spread_pct()},
                                          {"pytorch_samples_per_s", samples / sb.median},
                                          {"pytorch_spread_pct", sb.spread_pct()},
                                          {"ratio", ratio},
                                          {"aim", ">= " + times(aim) + " " + verdict(ratio >= aim)},
                                          {"bare_samples_per_s", samples / sc.median},
                                          {"bare_spread_pct", sc.spread_pct()},
                                          {"bare_ratio", bare_ratio},
                                          {"bare_aim", ">= " + times(aim) + " " + verdict(bare_ratio >= aim)},
                                          {"mantissa_gflops", number_or_null(achieved_gflops(f, ours_s))},
                                          {"mantissa_limit_pct", number_or_null(limit_pct(f, ours_s, peaks, threads))},
                                          {"pytorch_gflops", number_or_null(achieved_gflops(f, theirs_s))},
                                          {"pytorch_limit_pct", number_or_null(limit_pct(f, theirs_s, peaks, threads))},
                                          {"mflop_per_step", f.total / 1e6},
                                          {"limit", f.basis() + " x" + std::to_string(threads)},
                                          {"threads", threads},
                                          {"steps_per_block", steps}});
                }
                ours.clear();
                bare.clear();

                if (!accuracy_done && model.language_model) {
                    for (const char* m : modes) {
                        if (o.quick && std::string(m) != "fp32") {
                            const std::string why = "--quick: bf16 loss left out";
                            if (std::find(losses.notes.begin(), losses.notes.end(), why) == losses.notes.end())
                                losses.notes.push_back(why);
                            continue;
                        }
                        o.say(std::string("peer: ") + model.name + ", " + std::to_string(lm_steps) + " steps " + m +
                              ", Mantissa and PyTorch");
                        Experiment e = peer_experiment(model, m);
                        e.train.steps = lm_steps;
                        e.train.warmup_steps = lm_warmup;
                        const auto s0 = Clock::now();
                        Trainer trainer(e, text, make_backend("cpu"));
                        while (!trainer.done()) trainer.step();
                        const EvalRecord ev = trainer.evaluate();  // loss: nats per token
                        const double ours_s = seconds_since(s0);
                        peer->write_line(std::string("loss ") + m + " " + std::to_string(lm_steps) + " " +
                                         std::to_string(lm_warmup));
                        const nlohmann::json a = read_reply(*peer);
                        const double theirs = a.at("test_loss").get<double>();
                        const double diff = ev.loss / theirs - 1;
                        losses.rows.push_back({{"model", model.name},
                                               {"engine", "Mantissa"},
                                               {"mode", m},
                                               {"steps", lm_steps},
                                               {"test_loss", number_or_null(ev.loss)},
                                               {"perplexity", number_or_null(std::exp(ev.loss))},
                                               {"loss_vs_pytorch_pct", number_or_null(100 * diff)},
                                               {"aim", std::string(kLossAimText) + " " +
                                                           verdict(std::abs(diff) <= kLossAim)},
                                               {"seconds", ours_s}});
                        losses.rows.push_back({{"model", model.name},
                                               {"engine", "PyTorch"},
                                               {"mode", m == std::string("bf16") ? "bf16 autocast" : m},
                                               {"steps", lm_steps},
                                               {"test_loss", theirs},
                                               {"perplexity", a.at("perplexity").get<double>()},
                                               {"seconds", a.at("seconds").get<double>()}});
                    }
                    accuracy_done = true;
                }
                if (!accuracy_done) {
                    for (const char* m : modes) {
                        if (o.quick && std::string(m) != "fp32") {
                            const std::string why =
                                "--quick: bf16 accuracy left out (PyTorch's bf16 autocast is slow on CPUs without "
                                "native bf16)";
                            if (std::find(accuracy.notes.begin(), accuracy.notes.end(), why) == accuracy.notes.end())
                                accuracy.notes.push_back(why);
                            continue;
                        }
                        o.say(std::string("peer: ") + model.name + ", " + std::to_string(epochs) + " epoch(s) " + m +
                              ", Mantissa and PyTorch");
                        Experiment e = peer_experiment(model, m);
                        e.train.steps = 0;
                        e.train.epochs = epochs;
                        const auto s0 = Clock::now();
                        Trainer trainer(e, full, make_backend("cpu"));
                        while (!trainer.done()) trainer.step();
                        const EvalRecord ev = trainer.evaluate();
                        accuracy.rows.push_back({{"model", model.name},
                                                 {"engine", "Mantissa"},
                                                 {"mode", m},
                                                 {"epochs", epochs},
                                                 {"test_accuracy_pct", 100 * ev.accuracy},
                                                 {"seconds", seconds_since(s0)}});
                        peer->write_line(std::string("accuracy ") + m + " " + std::to_string(epochs));
                        const nlohmann::json a = read_reply(*peer);
                        accuracy.rows.push_back({{"model", model.name},
                                                 {"engine", "PyTorch"},
                                                 {"mode", m == std::string("bf16") ? "bf16 autocast" : m},
                                                 {"epochs", epochs},
                                                 {"test_accuracy_pct", 100 * a.at("test_accuracy").get<double>()},
                                                 {"seconds", a.at("seconds").get<double>()}});
                    }
                    accuracy_done = true;
                }
                peer->write_line("quit");
                peer->wait();
            } catch (const Error& e) {
                peer->write_line("quit");
                const int code = peer->wait();
                const std::string why = last_line(peer->stderr_text());
                r.notes.push_back(std::string(model.name) + " (" + blas + " BLAS) left out: " + e.what() +
                                  " (exit " + std::to_string(code) + ")" + (why.empty() ? "" : ": " + why));
            }
        }
    }
    r.skipped = speed.rows.empty() && stopped;
    if (!speed.rows.empty()) {
        std::string aims;
        bool lm = false;
        for (const PeerModel& m : peer_models)
            aims += std::string(aims.empty() ? "" : "; ") + m.name + ": fp32 >= " + times(m.fp32_aim) +
                    " PyTorch fp32, bf16 >= " + times(m.bf16_aim) + " PyTorch bf16 autocast";
        for (const auto& row : speed.rows) lm = lm || row.value("model", "") == "gpt";
        speed.notes.push_back("aims (docs/benchmarks.md): " + aims);
        speed.notes.push_back("Mantissa: as it trains by default, with the per-layer statistics the window draws (mlp, "
                              "cnn: every step; gpt: every 10); no statistics: train.layer_stats_every 0, the work "
                              "PyTorch's loop does; both timed in the same rounds, each ratio held to the same aim; "
                              "GFLOP/s and % of limit: the first");
        if (lm)
            speed.notes.push_back("gpt: a sample is a sequence of 128 tokens (tokens/s = 128 x samples/s); "
                                  "mlp, cnn: one image");
        speed.notes.push_back("GFLOP/s: the model's matmul FLOPs per step (forward, input gradient but for the first "
                              "layer, weight gradient), the same for both sides, over the median step time; % of limit: "
                              "over the limits table's one-thread peak x " + t +
                              " thread(s), FP32 FMA for fp32, BF16 for the bf16 matmuls oneDNN runs on bf16 operands "
                              "(the engine suite's rule, the same limit for PyTorch's row)");
        if (limits_measured) r.tables.push_back(std::move(limits));
        r.tables.push_back(std::move(speed));
    }
    if (!accuracy.rows.empty()) r.tables.push_back(std::move(accuracy));
    if (!losses.rows.empty()) {
        losses.notes.push_back("vs PyTorch = Mantissa's test loss / PyTorch's - 1; aim: " + std::string(kLossAimText) +
                               " (docs/benchmarks.md); each side draws its own training windows");
        r.tables.push_back(std::move(losses));
    }
    std::string loaded;
    for (const Dataset* d : {&full, &text})
        if (!d->name.empty()) loaded += (loaded.empty() ? "" : ", ") + d->name;
    r.notes.push_back("data: " + (loaded.empty() ? std::string("not loaded") : loaded) + "; script: " + script +
                      "; python: " + o.python);
    r.seconds = seconds_since(t0);
    return r;
}

}  // namespace mantissa::bench
