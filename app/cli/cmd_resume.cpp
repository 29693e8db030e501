// `mantissa-cli resume RUN [--step S] [--as-new --set KEY=VALUE ...]`: a stopped, interrupted or
// failed run continues from its latest checkpoint, recorded as the same run (the steps after the
// checkpoint are recorded again, and come out bit for bit as they first did on the CPU backend);
// or, with --as-new, a new run starts from any of its checkpoints with changed settings, recording
// its parent and the step (a branch). The checkpoint file is opened and checked whole once, before
// anything is written to the store, and the Session restores from that opened file.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/run_session.h"
#include "config/experiment.h"
#include "error.h"
#include "store/run_store.h"
#include "store/run_text.h"
#include "train/checkpoint.h"
#include "train/live_change.h"
#include "train/session.h"

namespace mantissa::cli {
namespace {

std::string run_label(const RunRow& r) { return "run " + std::to_string(r.id) + " (\"" + r.name + "\")"; }

std::string steps_text(const std::vector<CheckpointRow>& checkpoints) {
    std::string s;
    for (std::size_t i = 0; i < checkpoints.size(); ++i)
        s += (i == 0 ? "" : i + 1 == checkpoints.size() ? " and " : ", ") + std::to_string(checkpoints[i].step);
    return s;
}

// The checkpoint at --step S, else the latest.
const CheckpointRow& pick_checkpoint(const RunRow& run, const std::vector<CheckpointRow>& checkpoints,
                                     std::optional<long long> step) {
    if (checkpoints.empty() && run.status == RunStatus::running)
        throw Error(run_label(run) + " is still being recorded by process " + std::to_string(run.pid) + " on " +
                    run.host + " and has no checkpoint yet; wait for its first one (train.checkpoint_every) or its end.");
    if (checkpoints.empty())
        throw Error(run_label(run) + " has no checkpoints to resume from: it was stopped before its first one, "
                                     "or recorded before Mantissa kept them (train.checkpoint_every).");
    if (!step) return checkpoints.back();
    for (const CheckpointRow& c : checkpoints)
        if (c.step == *step) return c;
    throw Error(run_label(run) + " has no checkpoint at step " + std::to_string(*step) + "; it has checkpoints at steps " +
                steps_text(checkpoints) + ".");
}

// A branch continues the checkpoint's weights and optimizer state: settings that would need
// other tensors (the model's, another optimizer's) are refused here, naming the setting, rather
// than by the checkpoint's loader naming a tensor.
void refuse_another_model(const Experiment& checkpoint, const Experiment& branch) {
    const nlohmann::json before = experiment_to_json(checkpoint), after = experiment_to_json(branch);
    // The keys that shape the checkpoint's model kind's tensors (the activation and init_from do
    // not; a key another kind reads is not this model's).
    const std::string& kind = checkpoint.model.kind;
    const std::vector<std::string> shaping =
        kind == "gpt"      ? std::vector<std::string>{"kind", "layers", "heads", "dim", "context", "mlp_ratio", "tie_embeddings"}
        : kind == "layers" ? std::vector<std::string>{"kind", "layers"}
        : kind == "mlp"    ? std::vector<std::string>{"kind", "hidden"}
                           : std::vector<std::string>{"kind", "channels", "blocks", "hidden"};  // cnn, resnet
    for (const std::string& key : shaping)
        if (const nlohmann::json& value = before.at("model").at(key); after.at("model").at(key) != value)
            throw Error("A branch continues the checkpoint's weights, so it keeps its model: model." + key + " cannot " +
                        "change (" + value.dump() + " in the checkpoint); start a new run with 'mantissa-cli train' instead.");
    const nlohmann::json& optimizer = before.at("train").at("optimizer");
    if (after.at("train").at("optimizer") != optimizer)
        throw Error("A branch continues the checkpoint's optimizer state, so it keeps its optimizer: train.optimizer "
                    "cannot change (" + optimizer.dump() + " in the checkpoint); start a new run with 'mantissa-cli train' instead.");
}

int run_resume(Args& args) {
    args.option("step");
    args.option("set");
    args.option("steps");
    args.option("name");
    args.option("db");
    args.option("at");
    args.option("threads");
    args.flag("as-new");
    args.flag("json");
    args.parse();
    args.expect_words(1, "give the run to resume, its id or the start of its name", "mantissa-cli resume RUN");
    const bool branch = args.has("as-new");
    const std::optional<int> threads = threads_option(args);
    if (!branch)
        for (const char* option : {"set", "steps", "name", "at"})
            if (args.has(option))
                throw UsageError{std::string("--") + option +
                                 " changes the run, which only a branch may: add --as-new to start a new run from the "
                                 "checkpoint, or leave it out to continue this one as it was"};

    const std::string db = args.value("db").value_or(default_store_path());
    if (!store_file_present(db)) throw Error("There is no run store at " + db + " yet, so there is no run to resume.");
    RunStore store(db);
    require_writable_store(store, db, "a resumed run");
    const RunRow run = store.run(store.resolve(args.positional().front()));
    const std::vector<CheckpointRow> checkpoints = store.checkpoints(run.id);
    const CheckpointRow& from = pick_checkpoint(run, checkpoints, args.integer("step"));

    if (!branch) {
        if (run.status == RunStatus::completed)
            throw Error(run_label(run) + " completed its steps, so nothing is left to continue; to train it further, "
                                         "branch it: --as-new --set train.steps=N.");
        if (from.step != checkpoints.back().step)
            throw Error(run_label(run) + " has checkpoints after step " + std::to_string(from.step) + " (the latest is at step " +
                        std::to_string(checkpoints.back().step) +
                        "); a run continues from its latest checkpoint, so branch from step " + std::to_string(from.step) +
                        " with --as-new, or leave --step out.");
    }

    std::error_code missing;
    if (!std::filesystem::exists(from.file, missing) && !missing) {  // gone (an unreadable one is the reader's to say)
        std::vector<CheckpointRow> others;
        for (const CheckpointRow& c : checkpoints)
            if (c.step != from.step && std::filesystem::exists(c.file, missing)) others.push_back(c);
        throw Error(run_label(run) + "'s checkpoint at step " + std::to_string(from.step) + " is missing (" + from.file +
                    ")" +
                    (others.empty() ? std::string("; the run has no other checkpoint to continue from.")
                                    : "; branch from another with --as-new --step N (its other checkpoints are at step" +
                                          std::string(others.size() == 1 ? " " : "s ") + steps_text(others) + ")."));
    }
    // Opened and checked whole (header, metadata, every tensor's checksum) here, once: the Session
    // restores from this opened file.
    auto checkpoint = std::make_shared<const Checkpoint>(from.file);
    if (!checkpoint->info().run_uuid.empty() && checkpoint->info().run_uuid != run.uuid)
        throw Error(from.file + " is a checkpoint of another run (" + checkpoint->info().run_uuid + "), not of " +
                    run_label(run) + "; the store's checkpoint folder was changed by hand.");
    Experiment experiment = checkpoint->info().experiment;
    // The speed of the steps, not what they compute (but for the order of sums): a run continued
    // as it was may take it too.
    if (threads) experiment.threads = *threads;
    std::vector<ScheduledChange> at;
    if (branch) {
        apply_settings(experiment, args.values("set"));
        refuse_another_model(checkpoint->info().experiment, experiment);
        if (auto steps = args.integer("steps")) {
            if (*steps <= 0) throw UsageError{"--steps must be a positive number of steps"};
            experiment.train.steps = *steps;
        }
        experiment.name = run.name + " @" + std::to_string(from.step);
        if (auto name = args.value("name")) {
            if (name->empty()) throw UsageError{"--name must not be empty: give the run a name, or leave --name out"};
            store::check_run_text(store::RunText::name, *name);
            experiment.name = *name;
        }
        for (const auto& text : args.values("at")) at.push_back(parse_scheduled_change(text, "--at"));
        at = check_scheduled_changes(experiment, std::move(at), "--at");
    }

    SessionOptions options;
    options.resume_from = std::move(checkpoint);  // the Session releases it once restored
    options.branch = branch;
    options.parent_name = run_label(run);
    Session session(experiment, options);  // builds the model and restores the checkpoint: bad input throws here
    // A run continued from a checkpoint at its last step took all its steps but died before it
    // recorded its end: continuing records that end (the final evaluation where it is missing).
    // A branch that would take no step is a mistake.
    const bool at_end = session.first_step() >= session.total_steps();
    if (branch && at_end)
        throw Error("The checkpoint is at step " + std::to_string(session.first_step()) + ", the end of the branch's " +
                    std::to_string(session.total_steps()) + " steps; give the branch more with --set train.steps=N.");
    for (const ScheduledChange& c : at)
        if (c.step < session.first_step())
            throw UsageError{"--at " + std::to_string(c.step) + ": the branch starts at step " +
                             std::to_string(session.first_step()) + ", after it"};
    check_scheduled_steps(at, session.total_steps(), "--at");
    ChangeSchedule schedule(std::move(at), experiment);
    for (const auto& notice : session.notices()) std::fprintf(stderr, "mantissa-cli resume: warning: %s\n", notice.c_str());

    const StopSignals signals;
    std::shared_ptr<Recorder> recorder;
    std::string uuid = run.uuid;
    if (branch) {
        RunInfo info{experiment.name, session.backend_name(), session.device_name(),
                     experiment_to_json(experiment).dump(), session.layers()};
        info.parent_uuid = run.uuid;
        info.parent_step = from.step;
        recorder = store.start_run(info);
        uuid = store.run(recorder->run_id()).uuid;
    } else {
        recorder = store.continue_run(run.id, from.step);
    }
    session.add_sink(recorder);
    session.set_checkpoint_folder(checkpoint_folder(store.path(), uuid), uuid);
    if (!args.has("json") && branch)
        std::printf("Branching run %lld from step %lld as run %lld.\n", static_cast<long long>(run.id),
                    static_cast<long long>(from.step), static_cast<long long>(recorder->run_id()));
    else if (!args.has("json") && at_end)
        std::printf("Run %lld had taken all its %lld steps when it ended (%s); recording its end.\n",
                    static_cast<long long>(run.id), static_cast<long long>(from.step), run_status_name(run.status));
    else if (!args.has("json"))
        std::printf("Resuming run %lld from step %lld.\n", static_cast<long long>(run.id), static_cast<long long>(from.step));
    std::fflush(stdout);
    return run_to_end(session, experiment, schedule, {&store, recorder}, args.has("json"));
}

}  // namespace

MANTISSA_CLI_COMMAND({"resume", "continue a stopped or interrupted run, or branch a new one, from a checkpoint",
                      "usage: mantissa-cli resume RUN [--step S] [--threads N] [--db FILE] [--json]\n"
                      "       mantissa-cli resume RUN --as-new [--step S] [--set KEY=VALUE]... [--steps N]\n"
                      "                           [--at STEP:KEY=VALUE]... [--name NAME] [--threads N]\n"
                      "                           [--db FILE] [--json]\n\n"
                      "Continues RUN (an id or the start of a name) from its latest checkpoint, as the same run:\n"
                      "the steps it recorded after that checkpoint are recorded again, and on the CPU backend (with\n"
                      "the same threads) they come out bit for bit as they did (same losses, scales and weights).\n"
                      "A run that is stopped, interrupted (its process died) or failed can be continued; a completed\n"
                      "one cannot. One whose latest checkpoint is at its last step is recorded as completed.\n\n"
                      "With --as-new, a new run starts from the checkpoint at step S (default: the latest) with the\n"
                      "settings changed as --set says, recorded with RUN as its parent; `mantissa-cli show` and the\n"
                      "GUI's history show the family, and the GUI's compare view marks step S, where the branch\n"
                      "left its parent.\n\n"
                      "  --step S          the checkpoint to start from (`mantissa-cli show RUN` lists them)\n"
                      "  --as-new          branch a new run instead of continuing this one\n"
                      "  --set KEY=VALUE   with --as-new: change a setting, e.g. precision.autocast=fp16\n"
                      "  --steps N         with --as-new: the branch's length in steps, counted from step 0\n"
                      "  --at STEP:KEY=VALUE  with --as-new: change a setting at step STEP, as in `train`\n"
                      "  --name NAME       with --as-new: the new run's name (default: RUN's name @S)\n"
                      "  --threads N       the CPU backend's threads, 1 to 1024, or 0 for auto (every hardware\n"
                      "                    thread); default: the run's backend.threads. Continued steps come out\n"
                      "                    bit for bit only on the thread count they first had; a branch records\n"
                      "                    it as its backend.threads\n"
                      "  --db FILE         the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --json            print one JSON object, as `train --json` does\n\n"
                      "Exit status: 0 the run completed or was stopped and was recorded in full with its\n"
                      "checkpoints, 1 it failed, its recording stopped early, or a checkpoint could not be written\n"
                      "(a warning says why), 2 bad usage or input: no such run or checkpoint, a damaged\n"
                      "checkpoint, a run still running.\n",
                      run_resume});

}  // namespace mantissa::cli
