// `mantissa-cli train`: one training run, headless. Loads the experiment (file + --set), records
// the run in the store, draws a progress line on a terminal, stops cleanly on Ctrl-C, SIGTERM (what
// kill, service managers and Slurm's scancel send) or SIGHUP (after the current step: the run is
// recorded `stopped`) and prints a summary, or one JSON object with --json. What the session has
// to say before training (a dataset that fell back to spirals) is a warning on stderr before the
// progress line, and the JSON's `notices`.
//
// The run's checkpoints (train.checkpoint_every, and one at its end) go to the folder beside the
// store (checkpoint_folder); `mantissa-cli resume` continues or branches from them. One that cannot
// be written is a warning as it happens and exit 1 once the run ends, as a recording cut short is:
// the run trained, but cannot be resumed from it (cli/run_session.h).
//
// Threads: the session trains on its own thread; this (main) thread drives it (cli/run_session.h).
#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/cli_common.h"
#include "cli/run_session.h"
#include "error.h"
#include "store/run_store.h"
#include "store/run_text.h"
#include "train/live_change.h"
#include "train/session.h"

namespace mantissa::cli {
namespace {

// A sweep's run is recorded where it belongs: in the store that holds the sweep, at a place of its
// plan whose latest run neither completed nor is running (one that failed or stopped is trained
// again, as `mantissa-cli sweep run` does), or in a store that holds no sweep at all, a Slurm
// task's, whose runs name the main store's sweep until they are imported (docs/schema.md,
// "sweeps"). Anything else would put a run in another's row of the recipe table.
void check_sweep_place(RunStore& store, const std::string& db, const std::string& uuid, std::int64_t index) {
    const std::vector<SweepRow> sweeps = store.list_sweeps();
    if (sweeps.empty()) return;
    const auto sweep = std::find_if(sweeps.begin(), sweeps.end(), [&](const SweepRow& s) { return s.uuid == uuid; });
    if (sweep == sweeps.end())
        throw UsageError{"--sweep " + uuid + " names no sweep of the run store " + db +
                         " (`mantissa-cli sweep list` shows its sweeps)"};
    const std::string which = "sweep " + std::to_string(sweep->id) + " (\"" + store::printable_text(sweep->name) + "\")";
    if (index >= sweep->runs_planned)
        throw UsageError{"--sweep-index " + std::to_string(index) + " is beyond " + which + ", whose " +
                         std::to_string(sweep->runs_planned) + " runs are numbered from 0 to " +
                         std::to_string(sweep->runs_planned - 1)};
    std::optional<RunRow> latest;  // sweep_runs: by place, then by id
    for (RunRow& r : store.sweep_runs(sweep->id))
        if (r.sweep_index == index) latest = std::move(r);
    if (latest && (latest->status == RunStatus::completed || latest->status == RunStatus::running))
        throw UsageError{"run " + std::to_string(index) + " of " + which + " is recorded already, as run " +
                         std::to_string(latest->id) + " (" + run_status_name(latest->status) +
                         "); `mantissa-cli sweep run` trains the places still to be done"};
}

int run_train(Args& args) {
    args.option("config");
    args.option("set");
    args.option("steps");
    args.option("backend");
    args.option("device");
    args.option("threads");
    args.option("db");
    args.option("name");
    args.option("sweep");        // a sweep's uuid and this run's index in it (cmd_sweep.cpp)
    args.option("sweep-index");
    args.option("at");
    args.flag("json");
    args.flag("no-record");
    args.parse();
    if (args.has("db") && args.has("no-record"))
        throw UsageError{"--db and --no-record contradict each other: give one of them"};
    // One bare argument is the experiment file, as the GUI takes it; a KEY=VALUE goes in --set.
    std::optional<std::string> config = args.value("config");
    for (const std::string& a : args.positional()) {
        if (a.find('=') != std::string::npos)
            throw UsageError{"unexpected argument '" + a + "' (settings go in --set KEY=VALUE)"};
        if (config) throw UsageError{"unexpected argument '" + a + "': the experiment file is " + *config};
        config = a;
    }

    Experiment experiment = config ? load_experiment(*config) : Experiment{};
    apply_settings(experiment, args.values("set"));
    // The same checks and sentences as the experiment file's keys, by way of their --set forms.
    if (auto backend = args.value("backend")) apply_setting(experiment, "backend.kind=" + *backend);
    if (auto device = args.value("device")) apply_setting(experiment, "backend.device=" + *device);
    if (auto threads = threads_option(args)) experiment.threads = *threads;
    // An option the chosen backend would ignore is a mistake to say, not to pass over.
    if (args.has("device") && experiment.backend == "cpu")
        throw UsageError{"--device picks a GPU, but this run's backend is cpu: leave --device out, or give --backend "
                         "cuda (or auto)"};
    if (args.has("threads") && experiment.backend == "cuda")
        throw UsageError{"--threads sets the CPU backend's threads, but this run's backend is cuda, which has no use "
                         "for them: leave --threads out, or give --backend cpu (or auto)"};
    if (auto steps = args.integer("steps")) {
        if (*steps <= 0) throw UsageError{"--steps must be a positive number of steps"};
        experiment.train.steps = *steps;
    }
    if (auto name = args.value("name")) {
        if (name->empty()) throw UsageError{"--name must not be empty: give the run a name, or leave --name out"};
        store::check_run_text(store::RunText::name, *name);  // before the data loads, not after
        experiment.name = *name;
    }
    const bool json = args.has("json");
    std::vector<ScheduledChange> at;
    for (const auto& text : args.values("at")) at.push_back(parse_scheduled_change(text, "--at"));
    at = check_scheduled_changes(experiment, std::move(at), "--at");

    // A sweep's run (started by `sweep`, cmd_sweep.cpp): both options, a uuid as the store makes them.
    if (args.has("sweep-index") && !args.has("sweep"))
        throw UsageError{"--sweep-index goes with --sweep UUID, the sweep the run belongs to"};
    if (auto sweep = args.value("sweep")) {
        const bool uuid = sweep->size() == 36 && std::all_of(sweep->begin(), sweep->end(), [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
        });
        if (!uuid) throw UsageError{"--sweep takes a sweep's uuid (36 characters of hex digits and dashes)"};
        const auto index = args.integer("sweep-index");
        if (!index) throw UsageError{"--sweep needs --sweep-index N, the run's place in the sweep"};
        if (*index < 0)
            throw UsageError{"--sweep-index is a run's place in its sweep, 0 or more, not " + std::to_string(*index)};
        if (args.has("no-record"))
            throw UsageError{"--sweep records the run as one of a sweep's, which --no-record would not: leave one out"};
    }
    Session session(experiment);  // loads the data and builds the model: bad input throws here
    check_scheduled_steps(at, session.total_steps(), "--at");  // its length is known now
    ChangeSchedule schedule(std::move(at), experiment);
    // Before anything else is drawn, where a person (or a log) cannot miss it.
    const std::vector<std::string> notices = session.notices();
    for (const auto& notice : notices) std::fprintf(stderr, "mantissa-cli train: warning: %s\n", notice.c_str());

    std::unique_ptr<RunStore> store;
    std::shared_ptr<Recorder> recorder;
    // From here a stopping signal ends the run as `stopped`, with its summary.
    const StopSignals signals;
    if (!args.has("no-record")) {
        const std::string db = args.value("db").value_or(default_store_path());
        store = std::make_unique<RunStore>(db);
        require_writable_store(*store, db, "the run", "give another --db FILE, or --no-record");
        RunInfo info{experiment.name, session.backend_name(), session.device_name(),
                     experiment_to_json(experiment).dump(), session.layers()};
        if (auto sweep = args.value("sweep")) {
            info.sweep_uuid = *sweep;
            info.sweep_index = *args.integer("sweep-index");  // checked above
            check_sweep_place(*store, db, info.sweep_uuid, *info.sweep_index);
        }
        recorder = store->start_run(info);
        session.add_sink(recorder);
        const std::string uuid = store->run(recorder->run_id()).uuid;
        session.set_checkpoint_folder(checkpoint_folder(store->path(), uuid), uuid);
    }
    return run_to_end(session, experiment, schedule, {store.get(), recorder}, json);
}

}  // namespace

MANTISSA_CLI_COMMAND({"train", "train an experiment headless and record the run",
                      "usage: mantissa-cli train [FILE | --config FILE] [--set KEY=VALUE]... [--steps N]\n"
                      "                          [--backend auto|cpu|cuda] [--device N] [--threads N]\n"
                      "                          [--at STEP:KEY=VALUE]...\n"
                      "                          [--name NAME] [--db FILE | --no-record] [--json]\n\n"
                      "Trains the experiment (the defaults of docs/experiment.md, or FILE) and records the run in\n"
                      "the store. A progress line is drawn on a terminal; Ctrl-C, SIGTERM or SIGHUP stops after\n"
                      "the current step (the run is recorded as stopped) and still prints the summary. What the\n"
                      "run must tell you first (a dataset not found, trained on spirals instead) is a warning on\n"
                      "standard error before training starts. The run's checkpoints (every train.checkpoint_every\n"
                      "steps, and one where it ends or stops) go to a folder beside the store; `mantissa-cli\n"
                      "resume` continues the run from them, or branches a new one.\n\n"
                      "  --config FILE     experiment file (JSON); also -c FILE, or FILE alone\n"
                      "  --set KEY=VALUE   change one setting by its dotted key, e.g. precision.autocast=bf16,\n"
                      "                    precision.layers.fc1=fp32, train.lr=0.01, model.hidden=[512,256];\n"
                      "                    repeatable, applied in order after the file\n"
                      "  --steps N         train N steps (sets train.steps, after every --set)\n"
                      "  --backend KIND    auto, cpu or cuda (sets backend.kind; `mantissa-cli devices` lists them)\n"
                      "  --device N        the GPU to use, by its index in `devices` (sets backend.device; not\n"
                      "                    with the cpu backend)\n"
                      "  --threads N       the CPU backend's threads, 1 to 1024, or 0 for auto: every hardware\n"
                      "                    thread, or MANTISSA_CPU_THREADS or OMP_NUM_THREADS when set (sets\n"
                      "                    backend.threads; not with the cuda backend); results depend on the count\n"
                      "  --at STEP:KEY=VALUE  change a setting during the run, at step STEP exactly, as the GUI's\n"
                      "                    controls do: precision.layers.fc2=fp32, precision.autocast=bf16,\n"
                      "                    precision.loss_scaling.mode=dynamic, precision.fp8.scaling=none,\n"
                      "                    train.lr=0.01, or inject=fc2 (an overflow); repeatable; a STEP the\n"
                      "                    run never reaches is refused before training\n"
                      "  --name NAME       the run's name (default: the experiment's)\n"
                      "  --db FILE         the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --no-record       do not record the run\n"
                      "  --sweep UUID --sweep-index N  record the run as run N of a sweep (mantissa-cli sweep\n"
                      "                    passes them to the runs it starts)\n"
                      "  --json            print one JSON object: status, steps (the step the run reached,\n"
                      "                    counted from its start: a branch's from its parent's), first_step\n"
                      "                    (0, or the checkpoint's step where a resume or branch began),\n"
                      "                    final_loss, test_accuracy, test_loss, overflow_steps, skipped_steps,\n"
                      "                    final_loss_scale, samples (the run's rows trained; a branch's own),\n"
                      "                    samples_per_s (mean over the run: samples / training time), elapsed_s,\n"
                      "                    backend, run_id, notices\n\n"
                      "Exit status: 0 the run completed (or was stopped, by Ctrl-C or a signal) and was recorded\n"
                      "in full with its checkpoints, 1 it failed, its recording stopped early, or a checkpoint\n"
                      "could not be written (a full disk, a file where the checkpoint folder goes: a warning says\n"
                      "why, and the JSON's notices), 2 bad usage or input, or the summary cannot be written.\n",
                      run_train});

}  // namespace mantissa::cli
