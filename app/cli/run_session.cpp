// run_session.h: driving a session to its end, for `train` and `resume`.
#include "cli/run_session.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/cli_common.h"
#include "config/throughput.h"

namespace mantissa::cli {
namespace {

// The stopping signals, handled alike: the first asks for a stop after the current step, a second
// leaves at once (exit 128 + its number, as the shell reports a death by it).
std::atomic<int> g_interrupts{0};
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {  // the others are blocked while it runs (sa_mask)
    if (g_interrupts.load() >= 1) std::_Exit(128 + sig);
    g_signal.store(sig);
    g_interrupts.fetch_add(1);  // after g_signal: the main thread reads it once it sees this
}

const char* signal_text(int sig) {
    switch (sig) {
    case SIGINT: return "Ctrl-C (SIGINT)";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

// Keeps the latest step for the progress line; called on the training thread, returns at once.
class ProgressSink : public TelemetrySink {
public:
    struct Snapshot {
        StepRecord step;
        bool has_step = false;
        std::int64_t overflow_steps = 0;
        std::optional<EvalRecord> eval;
    };
    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>&) override {
        std::lock_guard lock(m_mutex);
        m_snapshot.step = step;
        m_snapshot.has_step = true;
        if (step.overflow) ++m_snapshot.overflow_steps;
    }
    void on_eval(const EvalRecord& eval) override {
        std::lock_guard lock(m_mutex);
        m_snapshot.eval = eval;
    }
    void on_event(const Event&) override {}
    Snapshot snapshot() const {
        std::lock_guard lock(m_mutex);
        return m_snapshot;
    }

private:
    mutable std::mutex m_mutex;
    Snapshot m_snapshot;
};

// The checkpoints the session could not write (its notice events marked {"checkpoint": "failed"},
// engine/train/session.cpp): called on the training thread, read by the main thread, which warns
// as they come. A run that lost a checkpoint can no longer be resumed from that step, or at all.
class CheckpointFailures : public TelemetrySink {
public:
    void on_step(const StepRecord&, const std::vector<LayerStepRecord>&) override {}
    void on_eval(const EvalRecord&) override {}
    void on_event(const Event& e) override {
        if (e.kind != EventKind::notice) return;
        const nlohmann::json data = nlohmann::json::parse(e.data_json, nullptr, false);
        if (!data.is_object() || data.value("checkpoint", "") != "failed") return;
        std::lock_guard lock(m_mutex);
        m_failures.push_back({e.step, e.message});
    }
    struct Failure {
        std::int64_t step;
        std::string message;
    };
    // The failures after the first `seen`.
    std::vector<Failure> since(std::size_t seen) const {
        std::lock_guard lock(m_mutex);
        if (seen >= m_failures.size()) return {};
        return {m_failures.begin() + static_cast<std::ptrdiff_t>(seen), m_failures.end()};
    }

private:
    mutable std::mutex m_mutex;
    std::vector<Failure> m_failures;
};

// Warns of each checkpoint failure once it comes, on standard error (each reason once: a run that
// checkpoints every few steps onto a full disk says so once, then how many in all at its end), and
// keeps the sentences for the JSON's notices.
class CheckpointWarnings {
public:
    explicit CheckpointWarnings(std::shared_ptr<CheckpointFailures> failures) : m_failures(std::move(failures)) {}
    // Returns whether it printed (the progress line then starts again on a line of its own).
    bool poll(bool drawing) {
        bool printed = false;
        for (const auto& f : m_failures->since(m_count)) {
            ++m_count;
            m_last_step = f.step;
            // The reason: the sentence after "No checkpoint at step N: ".
            const std::size_t colon = f.message.find(": ");
            const std::string reason = colon == std::string::npos ? f.message : f.message.substr(colon + 2);
            if (reason == m_reason) continue;
            m_reason = reason;
            std::fprintf(stderr, "%swarning: %s\n", drawing && !printed ? "\n" : "", f.message.c_str());
            m_notices.push_back(f.message);
            printed = true;
        }
        return printed;
    }
    // After the run: how many there were in all, when more than the warnings said.
    void finish() {
        if (m_count > m_notices.size()) {
            const std::string all = std::to_string(m_count) + " of the run's checkpoints could not be written, the last at step " +
                                    std::to_string(m_last_step) + ".";
            std::fprintf(stderr, "warning: %s\n", all.c_str());
            m_notices.push_back(all);
        }
    }
    bool any() const { return m_count > 0; }
    const std::vector<std::string>& notices() const { return m_notices; }

private:
    std::shared_ptr<CheckpointFailures> m_failures;
    std::size_t m_count = 0;
    std::int64_t m_last_step = 0;
    std::string m_reason;
    std::vector<std::string> m_notices;
};

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "--:--";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
    return buf;
}

// `samples_per_s`: the run's mean so far (config/throughput.h), as the summary will give it.
std::string progress_line(const ProgressSink::Snapshot& s, std::int64_t total_steps, std::int64_t steps_per_epoch,
                          double samples_per_s) {
    const StepRecord& r = s.step;
    const double done = static_cast<double>(r.step + 1);
    const double eta = r.time_s / done * (static_cast<double>(total_steps) - done);
    char buf[256];
    std::snprintf(buf, sizeof buf, "step %lld/%lld  epoch %d/%lld  loss %.4f  scale %g  %.0f samples/s  ETA %s",
                  static_cast<long long>(r.step + 1), static_cast<long long>(total_steps), r.epoch + 1,
                  static_cast<long long>((total_steps + steps_per_epoch - 1) / std::max<std::int64_t>(1, steps_per_epoch)),
                  r.loss, r.loss_scale, samples_per_s, format_duration(eta).c_str());
    return buf;
}

RunStatus run_status_of(SessionState s) {
    switch (s) {
    case SessionState::completed: return RunStatus::completed;
    case SessionState::failed: return RunStatus::failed;
    default: return RunStatus::stopped;
    }
}

nlohmann::ordered_json number_or_null(double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

int stop_signal_received() { return g_interrupts.load() > 0 ? g_signal.load() : 0; }

const char* stop_signal_text(int sig) { return signal_text(sig); }

std::optional<int> threads_option(const Args& args) {
    const auto threads = args.integer("threads");
    if (!threads) return std::nullopt;
    if (*threads < 0 || *threads > 1024)
        throw UsageError{"--threads takes a number from 1 to 1024, or 0 for auto (every hardware thread), not " +
                         std::to_string(*threads)};
    return static_cast<int>(*threads);
}

StopSignals::StopSignals() {
    g_interrupts = 0;
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : stop_signals) sigaddset(&sa.sa_mask, sig);
    for (std::size_t i = 0; i < std::size(stop_signals); ++i) {
        struct sigaction current {};
        sigaction(stop_signals[i], nullptr, &current);
        m_installed[i] = current.sa_handler != SIG_IGN;
        if (m_installed[i]) sigaction(stop_signals[i], &sa, &m_old[i]);
    }
}

StopSignals::~StopSignals() {
    for (std::size_t i = 0; i < std::size(stop_signals); ++i)
        if (m_installed[i]) sigaction(stop_signals[i], &m_old[i], nullptr);
}

int run_to_end(Session& session, const Experiment& experiment, ChangeSchedule& schedule,
               const RunRecording& recording, bool json) {
    auto progress = std::make_shared<ProgressSink>();
    session.add_sink(progress);
    auto checkpoint_failures = std::make_shared<CheckpointFailures>();
    session.add_sink(checkpoint_failures);
    CheckpointWarnings checkpoint_warnings(checkpoint_failures);

    const bool draw = isatty(STDERR_FILENO) == 1;
    schedule.arm(session);
    session.start();
    bool stop_posted = false;
    auto next_draw = std::chrono::steady_clock::now();
    while (true) {
        const SessionState st = session.state();
        if (st == SessionState::completed || st == SessionState::stopped || st == SessionState::failed) break;
        if (g_interrupts.load() > 0 && !stop_posted) {
            session.request_stop();
            stop_posted = true;
            const int sig = g_signal.load();
            std::fprintf(stderr, "%s%s: stopping after the current step (%s again to quit at once)\n", draw ? "\n" : "",
                         signal_text(sig), sig == SIGINT ? "Ctrl-C" : "the signal");
        }
        checkpoint_warnings.poll(draw);
        if (!stop_posted && schedule.poll(session)) continue;  // resumed at once, not after a nap
        if (draw && std::chrono::steady_clock::now() >= next_draw) {
            next_draw = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
            const auto snap = progress->snapshot();
            if (snap.has_step) {
                const std::string line = progress_line(snap, session.total_steps(), session.steps_per_epoch(),
                                                       session.summary().samples_per_s);
                std::fprintf(stderr, "\r%-100s", line.c_str());
                std::fflush(stderr);
            }
        }
        // A pause for a scheduled change lasts until the next look: look often while one may come.
        std::this_thread::sleep_for(std::chrono::milliseconds(schedule.done() ? 100 : 2));
    }
    session.wait();
    if (draw) std::fprintf(stderr, "\n");
    checkpoint_warnings.poll(false);
    checkpoint_warnings.finish();

    const RunSummary summary = session.summary();
    const std::shared_ptr<Recorder>& recorder = recording.recorder;
    std::int64_t run_id = 0;
    std::string record_error;
    if (recorder) {
        run_id = recorder->run_id();
        recorder->finish(run_status_of(summary.state), summary.error);
        record_error = recorder->error();
    }
    const char* status = run_status_name(run_status_of(summary.state));

    // What the session said before training, then what went wrong with its checkpoints.
    std::vector<std::string> notices = session.notices();
    notices.insert(notices.end(), checkpoint_warnings.notices().begin(), checkpoint_warnings.notices().end());

    if (json) {
        nlohmann::ordered_json out = {
            {"status", status},
            {"steps", summary.steps},
            {"first_step", session.first_step()},  // 0, or the checkpoint's step for a resume or branch
            {"final_loss", number_or_null(summary.final_loss)},
            {"test_accuracy", number_or_null(summary.test_accuracy)},
            {"test_loss", number_or_null(summary.test_loss)},
            {"overflow_steps", summary.overflow_steps},
            {"skipped_steps", summary.skipped_steps},
            {"final_loss_scale", summary.final_loss_scale},
            {"samples", summary.samples},
            {"samples_per_s", summary.samples_per_s},  // mean over the run (config/throughput.h)
            {"elapsed_s", summary.elapsed_s},
            {"backend", session.backend_name()},
            {"run_id", recorder ? nlohmann::ordered_json(run_id) : nlohmann::ordered_json(nullptr)},
            {"notices", notices},
        };
        if (!summary.error.empty()) out["error"] = summary.error;
        if (!record_error.empty()) out["record_error"] = record_error;
        std::cout << out.dump() << std::endl;
    } else {
        std::printf("%s: %s after %lld of %lld steps in %s (%s on %s)\n", experiment.name.c_str(), status,
                    static_cast<long long>(summary.steps), static_cast<long long>(summary.total_steps),
                    format_duration(summary.elapsed_s).c_str(), session.backend_name().c_str(),
                    session.device_name().c_str());
        std::printf("  throughput       %.0f %s\n", summary.samples_per_s, run_samples_per_s_label);
        std::printf("  final loss       %.4f\n", summary.final_loss);
        if (std::isfinite(summary.test_accuracy) && experiment.dataset.kind == "text")
            std::printf("  test             loss %.4f nats/token (perplexity %.2f), next-token accuracy %.2f%%\n",
                        summary.test_loss, std::exp(summary.test_loss), summary.test_accuracy * 100);
        else if (std::isfinite(summary.test_accuracy))
            std::printf("  test             accuracy %.2f%%, loss %.4f\n", summary.test_accuracy * 100, summary.test_loss);
        std::printf("  overflow steps   %lld (skipped %lld); final loss scale %g\n",
                    static_cast<long long>(summary.overflow_steps), static_cast<long long>(summary.skipped_steps),
                    summary.final_loss_scale);
        if (recorder) std::printf("  recorded as run %lld in %s\n", static_cast<long long>(run_id), recording.store->path().c_str());
        if (!summary.error.empty()) std::printf("  error: %s\n", summary.error.c_str());
    }
    if (!record_error.empty()) std::fprintf(stderr, "warning: recording stopped early: %s\n", record_error.c_str());
    // A run whose record is incomplete failed as far as a script is concerned, even if it trained;
    // so did one that lost a checkpoint (a warning said which): its weights at that step are gone,
    // and without the last one it cannot be resumed or its weights exported.
    return summary.state == SessionState::failed || !record_error.empty() || checkpoint_warnings.any() ? exit_failed
                                                                                                      : exit_ok;
}

}  // namespace mantissa::cli
