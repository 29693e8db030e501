// Session: a Trainer on its own thread, a control queue in front of it, sinks behind it.
//
// The training thread owns the Trainer (and through it the backend). Between steps it drains the
// queue: each command is applied and becomes an Event at the index of the next step. While paused
// it sleeps on the queue's condition variable. Evaluations run every eval_every steps and once at
// the end (also after a stop, so the summary has a test accuracy). Any exception on the thread
// ends the run as failed, with its message in the summary and a run_failed event.
#include "train/session.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <new>
#include <span>
#include <thread>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "data/dataset.h"
#include "train/checkpoint.h"
#include "train/text_sample.h"
#include "error.h"
#include "config/throughput.h"
#include "train/trainer.h"

namespace mantissa {

const char* session_state_name(SessionState s) {
    switch (s) {
    case SessionState::created: return "created";
    case SessionState::running: return "running";
    case SessionState::paused: return "paused";
    case SessionState::completed: return "completed";
    case SessionState::stopped: return "stopped";
    case SessionState::failed: return "failed";
    }
    return "created";
}

namespace {

namespace fs = std::filesystem;

// Why a run failed, as its summary and its run_failed event say it: the engine's own sentence, or
// for what the standard library throws without one (memory ran out: "std::bad_alloc"), a sentence.
std::string failure_text(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return "Not enough memory: an allocation failed while training; use a smaller model or train.batch_size, "
               "fewer threads (backend.threads), or free some memory.";
    return e.what();
}

std::string without_final_period(std::string s) {
    while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
    return s;
}

// Why a checkpoint could not be written into `folder`, for the end of one sentence: the folder and
// what stood in the way, never a library's raw message (std::filesystem's "filesystem error: ...").
std::string checkpoint_failure(const std::string& folder, const std::exception& e) {
    if (const auto* fe = dynamic_cast<const fs::filesystem_error*>(&e)) {
        // A part of the folder's path that is a file: the usual cause, named.
        std::error_code ec;
        for (fs::path p = folder; !p.empty(); p = p.parent_path()) {
            const fs::file_status st = fs::status(p, ec);
            if (fs::exists(st) && !fs::is_directory(st))
                return "the checkpoint folder " + folder + " cannot be made, because " + p.string() +
                       " is a file, not a folder";
            if (p == p.parent_path()) break;
        }
        std::string why = fe->code().message();  // "No space left on device", "Permission denied"
        if (!why.empty() && why.front() >= 'A' && why.front() <= 'Z' &&
            (why.size() < 2 || !(why[1] >= 'A' && why[1] <= 'Z')))
            why.front() = static_cast<char>(why.front() - 'A' + 'a');
        return "the checkpoint folder " + folder + " cannot be written: " + without_final_period(why);
    }
    if (dynamic_cast<const std::bad_alloc*>(&e)) return "there was not enough memory to copy the run's state out";
    return without_final_period(e.what());  // write_checkpoint's own sentence names the file
}

}  // namespace

struct Session::Impl {
    Experiment experiment;
    SessionOptions options;
    bool resumed = false;               // made with options.resume_from (then released)
    std::int64_t first_step = 0;        // the checkpoint's step when resumed
    std::int64_t last_eval = -1;        // the step of the last evaluation
    std::int64_t last_checkpoint = -1;  // the step of the last checkpoint written (or resumed from)
    std::int64_t failed_checkpoint = -1;  // the step of the last one that could not be written
    bool swept_partials = false;        // the folder's leftovers of a killed writer removed
    std::vector<LayerInfo> layers;
    std::vector<std::string> notices;
    std::string backend_name, device_name;
    std::int64_t total_steps = 0, steps_per_epoch = 0;
    std::unique_ptr<Trainer> trainer;            // training thread only, once started
    std::vector<std::shared_ptr<TelemetrySink>> sinks;

    std::mutex queue_mutex;
    std::condition_variable queue_cv;
    std::deque<Command> queue;

    mutable std::mutex summary_mutex;
    RunSummary summary;

    std::thread thread;
    std::mutex join_mutex;
    bool started = false;

    // ---- training thread
    void emit(const Event& e) {
        for (auto& s : sinks) s->on_event(e);
    }
    Event event(EventKind kind, std::string message, nlohmann::json data = nlohmann::json::object()) {
        return {trainer->steps_taken(), trainer->elapsed_s(), kind, std::move(message), data.dump()};
    }
    void run(std::atomic<SessionState>& state);
    // Applies the queued commands; returns false when the run must stop. Blocks while paused.
    bool drain(std::atomic<SessionState>& state);
    void apply(const Command& c, std::atomic<SessionState>& state, bool& stop);
    void evaluate();
    // Writes a checkpoint of the state after the steps taken (none in flight), tells the sinks,
    // and keeps training when it cannot be written (a notice says why).
    void checkpoint();
    // Reports of completed steps to the sinks and the summary, in step order.
    void deliver(std::span<const StepReport> reports);
    std::int64_t samples = 0;  // training thread: the reported steps' rows

    // ---- training thread: pauses and pace
    void pause(std::atomic<SessionState>& state, bool logged);
    void resume(std::atomic<SessionState>& state);
    // Waits until the pace lets the next step begin; false when a command arrived meanwhile.
    bool wait_for_pace();
    std::int64_t pause_at = -1;     // a pending PauseAt's step, -1 when none
    bool pause_at_quiet = false;
    std::int64_t step_pause = -1;   // StepOnce: pause again before this step, -1 when none
    bool pause_logged = false;      // the pause in effect logged a `paused` event
    double pace = 0;                // steps per second, 0: as fast as possible
    std::chrono::steady_clock::time_point last_step_began{};
};

Session::Session(Experiment experiment, SessionOptions options) : m_impl(std::make_unique<Impl>()) {
    Impl& im = *m_impl;
    im.experiment = std::move(experiment);
    im.options = std::move(options);
    // Held only until restored (moving it out leaves options.resume_from empty): the file closes
    // with the constructor unless the caller holds it too.
    const std::shared_ptr<const Checkpoint> resume = std::move(im.options.resume_from);
    im.resumed = resume != nullptr;
    if (resume) im.experiment.model.init_from.clear();  // the weights come from the checkpoint
    Dataset data = load_dataset(im.experiment.dataset, im.experiment.train.seed);
    im.notices = data.notices;
    auto backend = make_backend(im.experiment.backend, im.experiment.device, im.experiment.threads);
    im.backend_name = backend->name();
    im.device_name = backend->device_name();
    // backend auto trains on the CPU when it finds no usable GPU: a GPU asked for by its index is
    // then not used, which the run says rather than pass over (GPU 0 is every run's default).
    if (im.experiment.backend == "auto" && im.backend_name == "cpu" && im.experiment.device != 0) {
        const std::string gpu = std::to_string(im.experiment.device);
        im.notices.push_back("backend.device " + gpu + " was ignored: GPU " + gpu +
                             " is not usable here (`mantissa-cli devices` says why), so this run (backend auto) "
                             "trains on the CPU.");
    }
    // MANTISSA_SYNC_STEPS=1: the backend's synchronous calls instead of its step pipeline (on a
    // GPU: no CUDA graphs, a host wait inside each step), to compare or to rule the pipeline out.
    TrainerOptions trainer_options;
    if (const char* env = std::getenv("MANTISSA_SYNC_STEPS")) trainer_options.synchronous = std::strcmp(env, "0") != 0;
    im.trainer = std::make_unique<Trainer>(im.experiment, std::move(data), std::move(backend), trainer_options);
    im.layers = im.trainer->network().desc().layers;
    im.total_steps = im.trainer->total_steps();
    im.steps_per_epoch = im.trainer->steps_per_epoch();
    im.summary.total_steps = im.total_steps;
    im.summary.test_loss = std::nan("");
    im.summary.test_accuracy = std::nan("");
    im.summary.final_loss = std::nan("");
    im.summary.final_loss_scale = im.trainer->scaler().scale();
    if (resume) {
        resume->restore(*im.trainer);
        im.device_name = im.trainer->backend().device_name();  // the matmul path may be the checkpoint's
        im.first_step = im.trainer->steps_taken();
        im.summary.steps = im.first_step;
        im.summary.final_loss_scale = im.trainer->scaler().scale();
        if (im.options.branch) {
            // A new run: its time, samples and counts are its own, from its first step (the steps
            // keep their indices, so charts line it up with its parent).
            im.trainer->set_time_before(0);
        } else {
            // The same run going on: its summary covers the whole of it.
            const CheckpointSummary& s = resume->info().summary;
            im.last_checkpoint = im.first_step;
            im.last_eval = s.last_eval_step;
            im.samples = s.samples;
            im.summary.samples = s.samples;
            im.summary.overflow_steps = s.overflow_steps;
            im.summary.skipped_steps = s.skipped_steps;
            im.summary.final_loss = s.final_loss;
            im.summary.test_loss = s.test_loss;
            im.summary.test_accuracy = s.test_accuracy;
        }
        im.summary.elapsed_s = im.trainer->elapsed_s();
    }
}

Session::~Session() {
    if (m_impl->started) {
        request_stop();
        wait();
    }
}

void Session::add_sink(std::shared_ptr<TelemetrySink> sink) {
    if (m_impl->started) throw Error("Session::add_sink must be called before start().");
    if (sink) m_impl->sinks.push_back(std::move(sink));
}

void Session::set_checkpoint_folder(std::string folder, std::string run_uuid) {
    if (m_impl->started) throw Error("Session::set_checkpoint_folder must be called before start().");
    m_impl->options.checkpoint_folder = std::move(folder);
    m_impl->options.run_uuid = std::move(run_uuid);
}

void Session::start() {
    if (m_impl->started) throw Error("The session has already been started.");
    m_impl->started = true;
    m_state = SessionState::running;
    {
        std::lock_guard lock(m_impl->summary_mutex);
        m_impl->summary.state = SessionState::running;
    }
    m_impl->thread = std::thread([this] { m_impl->run(m_state); });
}

void Session::post(Command command) {
    {
        std::lock_guard lock(m_impl->queue_mutex);
        m_impl->queue.push_back(std::move(command));
    }
    m_impl->queue_cv.notify_all();
}

void Session::wait() {
    std::lock_guard lock(m_impl->join_mutex);
    if (m_impl->thread.joinable()) m_impl->thread.join();
}

const Experiment& Session::experiment() const { return m_impl->experiment; }
const std::vector<LayerInfo>& Session::layers() const { return m_impl->layers; }
std::string Session::backend_name() const { return m_impl->backend_name; }
std::string Session::device_name() const { return m_impl->device_name; }
std::int64_t Session::total_steps() const { return m_impl->total_steps; }
std::int64_t Session::first_step() const { return m_impl->first_step; }
std::int64_t Session::steps_per_epoch() const { return m_impl->steps_per_epoch; }
std::vector<std::string> Session::notices() const { return m_impl->notices; }

RunSummary Session::summary() const {
    std::lock_guard lock(m_impl->summary_mutex);
    RunSummary s = m_impl->summary;
    s.state = m_state.load();
    return s;
}

// ---- the training thread

void Session::Impl::run(std::atomic<SessionState>& state) {
    bool stopped = false;
    try {
        trainer->restart_clock();
        const std::string where = " on " + backend_name + " (" + device_name + ").";
        nlohmann::json started = {{"backend", backend_name}, {"device", device_name}, {"total_steps", total_steps}};
        std::string sentence = "Run \"" + experiment.name + "\" started" + where;
        if (resumed) {
            started[options.branch ? "branched_from_step" : "resumed_from_step"] = first_step;
            sentence = options.branch ? "Run \"" + experiment.name + "\" branched from " +
                                            (options.parent_name.empty() ? "its parent" : options.parent_name) +
                                            " at step " + std::to_string(first_step) + where
                                      : "Run \"" + experiment.name + "\" resumed from its checkpoint at step " +
                                            std::to_string(first_step) + where;
        }
        emit(event(EventKind::run_started, sentence, started));
        for (const auto& n : notices) emit(event(EventKind::notice, n));

        const std::int64_t eval_every = experiment.train.eval_every;
        const std::int64_t checkpoint_every = experiment.train.checkpoint_every;
        while (!trainer->done()) {
            if (!drain(state)) {
                stopped = true;
                break;
            }
            deliver(trainer->advance());
            if (pace > 0) deliver(trainer->flush());  // a paced step shows as soon as it is taken
            if (eval_every > 0 && trainer->steps_taken() % eval_every == 0) {
                deliver(trainer->flush());
                evaluate();
            }
            if (checkpoint_every > 0 && trainer->steps_taken() % checkpoint_every == 0) {
                deliver(trainer->flush());
                checkpoint();
            }
        }
        deliver(trainer->flush());
        if (!stopped) {
            // A stop posted during the last step still counts as a stop.
            std::lock_guard lock(queue_mutex);
            for (const auto& c : queue) stopped = stopped || std::holds_alternative<command::Stop>(c);
        }
        if (last_eval != trainer->steps_taken() && trainer->steps_taken() > 0) evaluate();
        checkpoint();  // the run's end, or where it stopped (said nothing when already written)
        const SessionState final_state = stopped ? SessionState::stopped : SessionState::completed;
        {
            // elapsed_s stays the last step's time_s (set in deliver): the final evaluation and
            // checkpoint come after the last step, so the run's training time leaves them out
            // (config/throughput.h; the store's totals and `show` give the same).
            std::lock_guard lock(summary_mutex);
            summary.state = final_state;
        }
        const std::string steps = std::to_string(trainer->steps_taken());
        if (stopped)
            emit(event(EventKind::run_stopped, "Run stopped after " + steps + " steps.", {{"steps", trainer->steps_taken()}}));
        else
            emit(event(EventKind::run_finished, "Run finished after " + steps + " steps.", {{"steps", trainer->steps_taken()}}));
        state = final_state;
    } catch (const std::exception& e) {
        const std::string error = failure_text(e);
        {
            std::lock_guard lock(summary_mutex);
            summary.state = SessionState::failed;
            summary.error = error;
        }
        state = SessionState::failed;
        try {
            emit(event(EventKind::run_failed, "Run failed: " + error, {{"error", error}}));
        } catch (...) {
            // A sink that fails while reporting a failure has nothing left to report to.
        }
    }
}

void Session::Impl::deliver(std::span<const StepReport> reports) {
    for (const StepReport& r : reports) {
        for (const auto& e : r.events) emit(e);
        for (auto& s : sinks) s->on_step(r.step, r.layers);
        if (!r.ops.empty())
            for (auto& s : sinks) s->on_op_steps(r.ops);
        if (!r.what_if.empty())
            for (auto& s : sinks) s->on_what_if(r.what_if);
        if (!r.block_scales.empty())
            for (auto& s : sinks) s->on_block_scales(r.block_scales);
        samples += r.samples;
        std::lock_guard lock(summary_mutex);
        summary.steps = r.step.step + 1;
        summary.final_loss = r.step.loss;
        summary.overflow_steps += r.step.overflow;
        summary.skipped_steps += r.step.skipped;
        summary.final_loss_scale = trainer->scaler().scale();
        summary.samples = samples;
        summary.samples_per_s = run_samples_per_s(samples, r.step.time_s);
        // The run's clock at this step, not now: the samples/s beside it is over this time.
        summary.elapsed_s = r.step.time_s;
    }
}

namespace {

// Text on one line, as an event's message is: each line break becomes "⏎".
std::string one_line(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += "\u23ce";
        else if (c != '\r') out += c;
    }
    return out;
}

}  // namespace

void Session::Impl::checkpoint() {
    const std::int64_t step = trainer->steps_taken();
    // A step whose checkpoint just failed is not tried again at once (the run's end right after a
    // checkpoint_every step): the next steps' is.
    if (options.checkpoint_folder.empty() || step == last_checkpoint || step == failed_checkpoint || step == 0) return;
    char name[64];
    std::snprintf(name, sizeof name, "step-%010lld.safetensors", static_cast<long long>(step));
    const std::string file = (std::filesystem::path(options.checkpoint_folder) / name).string();
    CheckpointSummary s;
    {
        std::lock_guard lock(summary_mutex);
        s.samples = samples;
        s.overflow_steps = summary.overflow_steps;
        s.skipped_steps = summary.skipped_steps;
        s.final_loss = summary.final_loss;
        s.test_loss = summary.test_loss;
        s.test_accuracy = summary.test_accuracy;
    }
    s.last_eval_step = last_eval;
    CheckpointRecord record;
    try {
        std::filesystem::create_directories(options.checkpoint_folder);
        if (!swept_partials) {
            // A process killed while writing leaves its temporary file (write_safetensors); the run's
            // folder is written by one process at a time, this one now, so any there is a leftover.
            swept_partials = true;
            for (const auto& entry : std::filesystem::directory_iterator(options.checkpoint_folder))
                if (entry.path().filename().string().find(".safetensors.partial-") != std::string::npos)
                    std::filesystem::remove(entry.path());
        }
        write_checkpoint(*trainer, file, options.run_uuid, s);
        record.bytes = static_cast<std::int64_t>(std::filesystem::file_size(file));
    } catch (const std::exception& e) {  // a full disk: the run goes on, said once per checkpoint
        emit(event(EventKind::notice,
                   "No checkpoint at step " + std::to_string(step) + ": " +
                       one_line(checkpoint_failure(options.checkpoint_folder, e)) + ".",
                   {{"checkpoint", "failed"}, {"step", step}, {"folder", options.checkpoint_folder}}));
        failed_checkpoint = step;
        return;
    }
    last_checkpoint = step;
    record.step = step;
    record.time_s = trainer->elapsed_s();
    record.file = file;
    record.keep = static_cast<int>(experiment.train.keep_checkpoints);
    emit(event(EventKind::checkpoint, "Checkpoint at step " + std::to_string(step) + " (" + format_byte_size(record.bytes) + ").",
               {{"step", step}, {"file", file}, {"bytes", record.bytes}}));
    for (auto& sink : sinks) sink->on_checkpoint(record);
}

void Session::Impl::evaluate() {
    const EvalRecord e = trainer->evaluate();
    last_eval = trainer->steps_taken();
    for (auto& s : sinks) s->on_eval(e);
    // A language model also writes: its sample is an evaluation event, stored with the run.
    if (trainer->dataset().text) {
        const std::int64_t step = trainer->steps_taken();
        const TextSample sample = generate_text(trainer->network(), *trainer->dataset().text, kSampleTokens,
                                                kSamplePromptTokens, kSampleTemperature,
                                                experiment.train.seed * 1'000'003ull + static_cast<std::uint64_t>(step));
        char figures[128];
        std::snprintf(figures, sizeof figures, "%.4f nats/token (perplexity %.2f)", e.loss, std::exp(e.loss));
        emit(event(EventKind::evaluation,
                   "Test loss " + std::string(figures) + " at step " + std::to_string(step) + "; the model writes: " +
                       one_line(sample.prompt) + " \u2192 " + one_line(sample.continuation) +
                       (sample.stopped.empty() ? "" : " (" + sample.stopped + ")"),
                   {{"loss", e.loss},
                    {"perplexity", std::exp(e.loss)},
                    {"accuracy", e.accuracy},
                    {"prompt", sample.prompt},
                    {"sample", sample.continuation},
                    {"stopped", sample.stopped},
                    {"temperature", kSampleTemperature}}));
    }
    std::lock_guard lock(summary_mutex);
    summary.test_loss = e.loss;
    summary.test_accuracy = e.accuracy;
}

bool Session::Impl::drain(std::atomic<SessionState>& state) {
    bool stop = false;
    for (;;) {
        std::deque<Command> batch;
        {
            std::unique_lock lock(queue_mutex);
            if (queue.empty() && state == SessionState::paused && !stop)
                queue_cv.wait(lock, [&] { return !queue.empty(); });
            batch.swap(queue);
        }
        // Commands apply between steps with none in flight: the steps already issued report
        // first, so every event keeps its place in step order.
        if (!batch.empty()) deliver(trainer->flush());
        for (const auto& c : batch) {
            apply(c, state, stop);
            if (stop) break;
        }
        if (stop) return false;
        const std::int64_t now_step = trainer->steps_taken();
        if (pause_at >= 0 && pause_at <= now_step && state != SessionState::paused) {
            pause_at = -1;
            deliver(trainer->flush());  // as for any command: the steps before it report first
            pause(state, !pause_at_quiet);
        }
        if (step_pause >= 0 && step_pause <= now_step && state != SessionState::paused) {
            deliver(trainer->flush());
            state = SessionState::paused;  // the pause StepOnce interrupted goes on, as it was logged
            trainer->pause_clock();
            step_pause = -1;
        }
        if (state == SessionState::paused) continue;
        if (pace > 0 && !wait_for_pace()) continue;  // a command came first: apply it, then wait again
        last_step_began = std::chrono::steady_clock::now();
        return true;
    }
}

bool Session::Impl::wait_for_pace() {
    const auto due = last_step_began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(1.0 / pace));
    if (std::chrono::steady_clock::now() >= due) return true;
    trainer->pause_clock();  // a class waiting between steps is not training time
    bool arrived = false;
    {
        std::unique_lock lock(queue_mutex);
        arrived = queue_cv.wait_until(lock, due, [&] { return !queue.empty(); });
    }
    trainer->resume_clock();
    return !arrived;
}

void Session::Impl::pause(std::atomic<SessionState>& state, bool logged) {
    if (state == SessionState::paused) return;
    state = SessionState::paused;
    trainer->pause_clock();
    pause_logged = logged;
    step_pause = -1;
    if (logged) emit(event(EventKind::paused, "Paused before step " + std::to_string(trainer->steps_taken()) + "."));
}

void Session::Impl::resume(std::atomic<SessionState>& state) {
    if (state != SessionState::paused) return;
    state = SessionState::running;
    trainer->resume_clock();
    if (pause_logged) emit(event(EventKind::resumed, "Resumed at step " + std::to_string(trainer->steps_taken()) + "."));
    pause_logged = false;
}

void Session::Impl::apply(const Command& c, std::atomic<SessionState>& state, bool& stop) {
    using namespace command;
    std::visit(
        [&](const auto& cmd) {
            using T = std::decay_t<decltype(cmd)>;
            if constexpr (std::is_same_v<T, Pause>) {
                if (state != SessionState::paused) {
                    pause(state, true);
                } else if (!pause_logged) {
                    // A person pauses a run a script had paused: from now on it is their pause,
                    // logged with its resume.
                    pause_logged = true;
                    emit(event(EventKind::paused, "Paused before step " + std::to_string(trainer->steps_taken()) + "."));
                }
            } else if constexpr (std::is_same_v<T, Resume>) {
                step_pause = -1;
                resume(state);
            } else if constexpr (std::is_same_v<T, Stop>) {
                stop = true;
            } else if constexpr (std::is_same_v<T, PauseAt>) {
                pause_at = cmd.step;
                pause_at_quiet = cmd.quiet;
            } else if constexpr (std::is_same_v<T, SetPace>) {
                pace = std::isfinite(cmd.steps_per_s) && cmd.steps_per_s > 0 ? cmd.steps_per_s : 0;
            } else if constexpr (std::is_same_v<T, StepOnce>) {
                if (state == SessionState::paused) {
                    state = SessionState::running;  // quietly: the pause goes on after the step
                    trainer->resume_clock();
                    step_pause = trainer->steps_taken() + 1;
                }
            } else {
                // A setting the run cannot take (an unknown layer, a bad value) is reported and
                // the run goes on: a person typed it, the training is not at fault.
                try {
                    if constexpr (std::is_same_v<T, SetLayerPrecision>)
                        emit(trainer->set_layer_precision(cmd.layer, cmd.precision));
                    else if constexpr (std::is_same_v<T, SetAutocast>)
                        emit(trainer->set_autocast(cmd.autocast));
                    else if constexpr (std::is_same_v<T, SetOpPrecision>)
                        emit(trainer->set_op_precision(cmd.op_class, cmd.precision));
                    else if constexpr (std::is_same_v<T, SetMasterWeights>)
                        emit(trainer->set_master_weights(cmd.enabled));
                    else if constexpr (std::is_same_v<T, SetFp8Scaling>)
                        emit(trainer->set_fp8_scaling(cmd.scaling));
                    else if constexpr (std::is_same_v<T, SetRounding>)
                        emit(trainer->set_rounding(cmd.rounding));
                    else if constexpr (std::is_same_v<T, SetLossScaling>)
                        emit(trainer->set_loss_scaling(cmd.spec));
                    else if constexpr (std::is_same_v<T, SetLearningRate>)
                        emit(trainer->set_learning_rate(cmd.lr));
                    else if constexpr (std::is_same_v<T, InjectNonFinite>)
                        emit(trainer->inject_non_finite(cmd.layer, cmd.value));
                } catch (const Error& e) {
                    emit(event(EventKind::notice, std::string("Command refused: ") + e.what(),
                               {{"refused", true}, {"error", e.what()}}));
                }
            }
        },
        c);
}

}  // namespace mantissa
