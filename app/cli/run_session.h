// The part of `mantissa-cli train` and `mantissa-cli resume` that drives a session to its end: the
// stopping signals (Ctrl-C, SIGTERM and SIGHUP stop after the current step; a second one leaves at
// once), the progress line on a terminal, the scheduled changes (--at), and the summary, as text or
// one JSON object; and the option both take for the CPU backend's threads. Main thread only; the
// session trains on its own thread.
#pragma once

#include <csignal>
#include <iterator>
#include <memory>
#include <optional>

#include "cli/cli_common.h"
#include "store/run_store.h"
#include "train/live_change.h"
#include "train/session.h"

namespace mantissa::cli {

inline constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

// Installs the stop handler for the stopping signals while it lives, and puts back what was
// there. A signal the caller ignores stays ignored (nohup's SIGHUP; SIGINT of a job a script put
// in the background): they asked for the run to outlive it.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    struct sigaction m_old[std::size(stop_signals)] {};
    bool m_installed[std::size(stop_signals)] {};
};

// The stopping signal received while a StopSignals lives (SIGINT, SIGTERM, SIGHUP), or 0 when none
// has come: for a command that drives other processes (`sweep`) and stops them itself.
int stop_signal_received();
// "Ctrl-C (SIGINT)", "SIGTERM", ...
const char* stop_signal_text(int sig);

// --threads N, when given: the value for backend.threads (0 auto, 1..1024; docs/experiment.md).
// Another number is a UsageError naming the option.
std::optional<int> threads_option(const Args& args);

// Where the run is recorded; both null with --no-record.
struct RunRecording {
    const RunStore* store = nullptr;
    std::shared_ptr<Recorder> recorder;
};

// Starts `session` (its recorder, if any, already added as a sink, under a live StopSignals) and
// trains it to its end while drawing progress and applying `schedule`; then finishes the
// recording with the run's status and prints the summary (`json`: one object). A checkpoint the
// session could not write is a warning on standard error as it happens, and a notice in the JSON.
// Returns the exit code: 0 completed or stopped, recorded in full with every checkpoint; 1 failed,
// its recording stopped early, or a checkpoint could not be written.
int run_to_end(Session& session, const Experiment& experiment, ChangeSchedule& schedule,
               const RunRecording& recording, bool json);

}  // namespace mantissa::cli
