// Session: one training run on its own thread, steered by commands and observed through sinks.
//
// Threads: the constructor, start(), post(), request_stop(), wait() and the accessors may be called
// from any thread (the GUI's, the CLI's). Only the training thread touches the backend and the
// model. Commands go through a control queue and are applied between steps; each applied command
// becomes an Event at that step. Telemetry goes out through TelemetrySinks, called on the training
// thread; they must copy and return.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "config/experiment.h"
#include "config/telemetry.h"
#include "model/model_desc.h"

namespace mantissa {

class Checkpoint;  // train/checkpoint.h

namespace command {
// A pause logs a `paused` event and the Resume that ends it a `resumed` one, unless the pause was
// quiet (PauseAt's, StepOnce's): then neither is logged.
struct Pause {};
struct Resume {};
struct Stop {};
struct SetLayerPrecision { std::string layer; LayerSetting precision; };
struct SetAutocast { Autocast autocast; };
// precision.ops.<op_class>: "softmax" or "layernorm" (model/op_classes.h).
struct SetOpPrecision { std::string op_class; OpPrecision precision; };
struct SetMasterWeights { bool enabled; };
struct SetFp8Scaling { Fp8Scaling scaling; };
struct SetRounding { RoundingSpec rounding; };
struct SetLossScaling { LossScalingSpec spec; };
struct SetLearningRate { double lr; };
// Puts `value` (inf or NaN) into the named layer's weight gradient at the next step, for
// demonstrations: the step overflows and, with loss scaling, is skipped.
struct InjectNonFinite { std::string layer; float value; };
// Pauses before step `step` (0-based: once `step` steps are taken), as a Pause arriving exactly
// then would, on a run of any speed, so a script can act at an exact step (mantissa --screenshot
// --at). Post it before start() or before the run reaches the step; a step already passed pauses
// before the next one. A later PauseAt replaces a pending one. quiet: a script's pause (mantissa-cli's
// --at, the screenshot job), the means of making a change at an exact step rather than something a
// person did, so it logs no paused/resumed events.
struct PauseAt { std::int64_t step; bool quiet = false; };
// Paces the run for a class to follow: at most `steps_per_s` steps a second; 0 (or less) runs as
// fast as the machine goes. The wait between paced steps is left out of the run's time, as a pause
// is, so time_s and samples/s still say how fast the machine trains. Logs no event: the pace
// changes when the steps happen, never what they compute.
struct SetPace { double steps_per_s; };
// While paused: takes one step and pauses again before the next (a single-step button). Logs no
// paused/resumed events; ignored while running.
struct StepOnce {};
}  // namespace command

using Command = std::variant<command::Pause, command::Resume, command::Stop,
                             command::SetLayerPrecision, command::SetAutocast, command::SetOpPrecision,
                             command::SetMasterWeights, command::SetFp8Scaling, command::SetRounding,
                             command::SetLossScaling,
                             command::SetLearningRate, command::InjectNonFinite, command::PauseAt,
                             command::SetPace, command::StepOnce>;

enum class SessionState : std::uint8_t { created, running, paused, completed, stopped, failed };
const char* session_state_name(SessionState s);

struct RunSummary {
    SessionState state = SessionState::created;
    std::int64_t steps = 0;             // steps taken
    std::int64_t total_steps = 0;       // the budget
    double final_loss = 0;              // last step's training loss
    double test_loss = 0;               // last evaluation (NaN when none)
    double test_accuracy = 0;
    std::int64_t overflow_steps = 0;
    std::int64_t skipped_steps = 0;
    double final_loss_scale = 1;
    std::int64_t samples = 0;           // rows trained, over the steps taken
    double samples_per_s = 0;           // samples/s (mean over the run): samples / the last step's
                                        // time_s (config/throughput.h, run_samples_per_s)
    double elapsed_s = 0;               // training time so far: the last step's time_s (pauses and
                                        // paced waits left out, evaluations between steps in, the
                                        // final evaluation and checkpoint after the last step out;
                                        // config/throughput.h), the store's totals.elapsed_s
    std::string error;                  // when failed
};

// Where a session writes its checkpoints, and where it starts from.
struct SessionOptions {
    // The folder for the run's checkpoints (engine/train/checkpoint.h), made when the first is
    // written: every train.checkpoint_every steps and when the run ends or is stopped (not when
    // it fails). Empty: none are written.
    std::string checkpoint_folder;
    std::string run_uuid;  // written into each checkpoint
    // A checkpoint to start from instead of step 0, opened and checked by the caller (who reads
    // its experiment and its run first), so a resume opens and checks the file once: the Session
    // restores from this opened file and does not open the path again. The experiment given with
    // it must be the checkpoint's own (Checkpoint::info().experiment) for a continuation, or a copy
    // with changes for a branch; its model.init_from is not read (the weights come from the
    // checkpoint). Released once restored, which closes the file unless the caller holds it too.
    std::shared_ptr<const Checkpoint> resume_from;
    // With resume_from: a new run branched from the checkpoint's (its run_started event says so)
    // rather than the same run continued.
    bool branch = false;
    std::string parent_name;  // for the branch's run_started sentence: the parent run, as a person knows it
};

class Session {
public:
    // Loads the dataset and builds the model and the backend (and restores options.resume_from);
    // throws mantissa::Error on bad input (a missing dataset file, an unknown layer name in
    // precision.layers, no such backend, a checkpoint that does not fit the model).
    explicit Session(Experiment experiment, SessionOptions options = {});
    ~Session();  // stops and joins the training thread
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Must be called before start(). Sinks are called on the training thread.
    void add_sink(std::shared_ptr<TelemetrySink> sink);
    // Before start(): where the checkpoints go and the run they belong to (SessionOptions), once
    // the run is recorded and its uuid known.
    void set_checkpoint_folder(std::string folder, std::string run_uuid);

    void start();                       // spawns the training thread
    void post(Command command);         // thread-safe; applied before the next step
    void request_stop() { post(command::Stop{}); }
    void wait();                        // joins the training thread

    SessionState state() const { return m_state.load(); }
    const Experiment& experiment() const;     // as started (live changes are events)
    const std::vector<LayerInfo>& layers() const;
    std::string backend_name() const;         // "cpu"
    std::string device_name() const;          // "AMD EPYC (2 threads, AVX2, bf16 matmul: ...)"
    std::int64_t total_steps() const;
    std::int64_t first_step() const;          // 0, or the step a resumed session starts from
    std::int64_t steps_per_epoch() const;
    std::vector<std::string> notices() const; // e.g. why the dataset fell back to spirals
    RunSummary summary() const;               // complete after wait(); a snapshot before

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::atomic<SessionState> m_state{SessionState::created};
};

}  // namespace mantissa
