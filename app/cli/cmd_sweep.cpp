// `mantissa-cli sweep`: many runs of one experiment over recipes, a grid and seeds (docs/sweeps.md).
//   sweep [FILE] [--set K=V]... [--grid K=V1,V2]... [--recipes LIST|standard] [--repeat N]
//         [--jobs N] [--name NAME] [--dry-run]       plans the sweep, records it, runs it here
//   sweep run SWEEP [--jobs N]                       runs what is missing, failed or stopped
//   sweep show SWEEP [--json]                        the recipe table
//   sweep list                                       the store's sweeps
//   sweep ... --slurm [--partition P] [--time T] ...  the same runs as a Slurm job array
//   sweep status SWEEP / sweep collect SWEEP         a Slurm sweep's tasks; importing their stores
// Each run is its own `mantissa-cli train` process (a stopped or interrupted one continues with
// `mantissa-cli resume` from its checkpoint), up to --jobs at once, each with its share of the
// CPU's threads; they record into the one store, which several processes share. The runs' output
// goes to a log per run beside the store. Ctrl-C stops them all after their current step, each
// recorded `stopped`; running the sweep again continues it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_loader.h"
#include "cli/cli_common.h"
#include "cli/run_session.h"
#include "cli/sweep_slurm.h"
#include "cli/sweep_table.h"
#include "config/telemetry.h"
#include "error.h"
#include "model/model_plan.h"
#include "printable_text.h"
#include "store/run_store.h"
#include "store/run_text.h"
#include "store/store_files.h"
#include "sweep/gpu_slots.h"
#include "sweep/sweep_plan.h"
#include "train/start_check.h"

extern char** environ;

namespace mantissa::cli {
namespace {

namespace fs = std::filesystem;

std::string db_of(const Args& args) { return args.value("db").value_or(default_store_path()); }

// A recorded sweep's plan, from the definition the store keeps.
std::vector<PlannedRun> plan_of(const SweepRow& sweep) {
    return plan_sweep(sweep_spec_from_json(nlohmann::json::parse(sweep.spec_json, nullptr, false)), sweep.name,
                      matmul_layer_names);
}

// The folder of a sweep's run logs and experiment files, beside the store.
std::string sweep_folder(const std::string& db, const std::string& uuid) {
    const fs::path store = fs::absolute(db);
    return (store.parent_path() / (store.stem().string() + ".sweeps") / uuid).string();
}

// ---- local execution

struct Child {
    pid_t pid = -1;
    std::int64_t index = 0;
    std::int64_t recorded_before = -1;  // the index's latest run id when it started
    int gpu = -1;                       // the GPU it took (GpuSlots), -1 on the CPU
};

// The GPUs local runs share out (GpuSlots): asked of the CUDA module only when some run may use
// one, so a sweep on the CPU never loads it.
// The options that shape a Slurm submission (slurm_options): refused where a sweep runs here.
constexpr const char* slurm_submit_options[] = {"partition", "time", "gpus-per-task", "cpus-per-task", "sbatch-arg"};

int usable_gpus(const std::vector<PlannedRun>& plan) {
    const bool may_use = std::any_of(plan.begin(), plan.end(), [](const PlannedRun& p) {
        return p.experiment.backend == "cuda" || p.experiment.backend == "auto";
    });
    if (!may_use) return 0;
    const CudaReport& cuda = cuda_loader().report();
    return cuda.available() ? static_cast<int>(cuda.devices.size()) : 0;
}

// Starts this program with `args`, its output appended to `log`, in a process group of its own (so
// a Ctrl-C on the terminal reaches the sweep alone, which stops each run once).
pid_t spawn(const std::vector<std::string>& args, const std::string& log, int threads) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : stop_signals) sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string v = *e;
        if (!v.starts_with("MANTISSA_CPU_THREADS=") && !v.starts_with("OMP_NUM_THREADS=")) env.push_back(v);
    }
    env.push_back("MANTISSA_CPU_THREADS=" + std::to_string(threads));
    env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
    std::vector<char*> argv, envp;
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    argv.push_back(const_cast<char*>(self.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& v : env) envp.push_back(const_cast<char*>(v.c_str()));
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int err = posix_spawn(&pid, self.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (err != 0) throw Error("Cannot start a run of the sweep: " + std::string(std::strerror(err)) + ".");
    return pid;
}

// The last line of a run's log: why it failed, in its own words.
std::string last_line(const std::string& log) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) last = line;
    return last;
}

// A run that failed before it recorded anything (a model too large for the machine, a dataset
// missing): recorded failed with its own sentence, so the table, a re-run and the GUI know it.
void record_failed_start(RunStore& store, const SweepRow& sweep, const PlannedRun& p, const std::string& message) {
    RunInfo info{p.experiment.name, p.experiment.backend, "", experiment_to_json(p.experiment).dump(), {}};
    info.sweep_uuid = sweep.uuid;
    info.sweep_index = p.index;
    store.start_run(info)->finish(RunStatus::failed, message.empty() ? "the run exited before training" : message);
}

// What to do for each index: the latest run recorded for it decides.
enum class Todo : std::uint8_t { skip, train, resume };

Todo todo_for(const RunRow* latest, RunStore& store) {
    if (!latest) return Todo::train;
    switch (latest->status) {
    case RunStatus::completed:
    case RunStatus::running: return Todo::skip;
    case RunStatus::failed: return Todo::train;
    case RunStatus::stopped:
    case RunStatus::interrupted: return store.checkpoints(latest->id).empty() ? Todo::train : Todo::resume;
    }
    return Todo::train;
}

int execute_local(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan, int jobs) {
    const std::string db = store.path();
    const std::string folder = sweep_folder(db, sweep.uuid);
    fs::create_directories(folder);
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const int threads = std::max(1, static_cast<int>(hardware) / jobs);

    std::map<std::int64_t, RunRow> latest;
    for (RunRow& r : store.sweep_runs(sweep.id))
        if (r.sweep_index) latest[*r.sweep_index] = r;
    std::vector<std::pair<std::int64_t, Todo>> queue;
    for (const PlannedRun& p : plan) {
        const auto it = latest.find(p.index);
        const Todo t = todo_for(it == latest.end() ? nullptr : &it->second, store);
        if (t != Todo::skip) queue.push_back({p.index, t});
    }
    if (queue.empty()) {
        std::printf("Every run of sweep %lld is done or running elsewhere; nothing to run.\n", static_cast<long long>(sweep.id));
        return exit_ok;
    }
    const int gpu_count = usable_gpus(plan);
    GpuSlots gpus(gpu_count);
    const std::string gpu_text =
        gpu_count > 0 ? ", a GPU each of " + std::to_string(gpu_count) + " (shared when more runs than GPUs)" : "";
    std::printf("Sweep %lld (\"%s\"): %zu of %zu runs to go, %d at once, %d CPU thread%s each%s; logs in %s\n",
                static_cast<long long>(sweep.id), sweep.name.c_str(), queue.size(), plan.size(), jobs, threads,
                threads == 1 ? "" : "s", gpu_text.c_str(), folder.c_str());
    std::fflush(stdout);

    const bool draw = isatty(STDERR_FILENO) == 1;
    std::vector<Child> running;
    std::size_t next = 0;
    bool stopping = false;
    int failed = 0, drawn_lines = 0;
    auto last_draw = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    const auto started = std::chrono::steady_clock::now();
    while (next < queue.size() || !running.empty()) {
        if (!stopping && stop_signal_received()) {
            stopping = true;
            std::fprintf(stderr, "%s%s: stopping the sweep's runs after their current step\n", draw ? "\n" : "",
                         stop_signal_text(stop_signal_received()));
            drawn_lines = 0;
            for (const Child& c : running) ::kill(c.pid, SIGTERM);
        }
        while (!stopping && next < queue.size() && static_cast<int>(running.size()) < jobs) {
            const auto [index, todo] = queue[next++];
            const PlannedRun& p = plan.at(static_cast<std::size_t>(index));
            const std::string log = folder + "/run-" + std::to_string(index) + ".log";
            std::vector<std::string> args;
            int gpu = -1;
            if (todo == Todo::resume) {
                // Values as --NAME=VALUE: a name or path that looks like an option stays a value.
                args = {"resume", std::to_string(latest.at(index).id), "--db=" + db, "--json"};
                // It continues on the GPU it recorded: counted there.
                Experiment recorded = p.experiment;
                try {
                    recorded = experiment_from_json(nlohmann::json::parse(latest.at(index).config_json));
                } catch (const std::exception&) {  // its resume says what is wrong with it
                }
                gpu = gpus.take(recorded);
            } else {
                const std::string config = folder + "/run-" + std::to_string(index) + ".json";
                Experiment e = p.experiment;
                gpu = gpus.take(e);
                if (gpu >= 0) e.device = gpu;  // recorded with the run: where it ran
                save_experiment(e, config);
                args = {"train", "--config=" + config, "--name=" + p.experiment.name, "--db=" + db,
                        "--sweep=" + sweep.uuid, "--sweep-index=" + std::to_string(index), "--json"};
            }
            const auto known = latest.find(index);
            running.push_back({spawn(args, log, threads), index, known == latest.end() ? -1 : known->second.id, gpu});
            if (!draw) std::printf("  run %lld started: %s\n", static_cast<long long>(index), p.label.c_str());
        }
        for (auto it = running.begin(); it != running.end();) {
            int status = 0;
            const pid_t done = ::waitpid(it->pid, &status, WNOHANG);
            if (done != it->pid) {
                ++it;
                continue;
            }
            const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            const std::string log = folder + "/run-" + std::to_string(it->index) + ".log";
            if (!ok) {
                ++failed;
                std::int64_t newest = -1;
                for (const RunRow& r : store.sweep_runs(sweep.id))
                    if (r.sweep_index == it->index) newest = std::max(newest, r.id);
                if (newest == it->recorded_before)
                    record_failed_start(store, sweep, plan.at(static_cast<std::size_t>(it->index)), last_line(log));
            }
            if (!ok || !draw) {
                std::fprintf(draw ? stderr : stdout, "%s  run %lld %s%s%s\n", draw && drawn_lines ? "\n" : "",
                             static_cast<long long>(it->index), ok ? "finished" : "failed",
                             ok ? "" : ": ", ok ? "" : last_line(log).c_str());
                drawn_lines = 0;
            }
            gpus.give_back(it->gpu);
            it = running.erase(it);
        }
        if (draw && std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(500)) {
            last_draw = std::chrono::steady_clock::now();
            const std::vector<std::string> lines = progress_lines(store, sweep, plan);
            if (drawn_lines > 0) std::fprintf(stderr, "\033[%dA", drawn_lines);
            for (const std::string& l : lines) std::fprintf(stderr, "\r\033[K%s\n", l.c_str());
            drawn_lines = static_cast<int>(lines.size());
            std::fflush(stderr);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("\n");
    print_sweep_table(store, sweep, plan, std::cout);
    const std::string stopped =
        stopping ? " (stopped: `mantissa-cli sweep run " + std::to_string(sweep.id) + "` continues it)" : "";
    std::printf("\nWall time %.1f s for %zu run%s, %d at once%s.\n", wall, queue.size(), queue.size() == 1 ? "" : "s", jobs,
                stopped.c_str());
    return failed > 0 && !stopping ? exit_failed : exit_ok;
}

// ---- Slurm

SlurmOptions slurm_options(const Args& args) {
    SlurmOptions o;
    o.partition = args.value("partition").value_or("");
    o.time = args.value("time").value_or("");
    // sbatch's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or no limit.
    static const std::regex time_forms(R"(^(\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+|unlimited|infinite)$)",
                                       std::regex::icase);
    if (!o.time.empty() && !std::regex_match(o.time, time_forms))
        throw UsageError{"--time " + o.time + " is not a Slurm time limit: write minutes, HH:MM:SS or D-HH:MM:SS"};
    const long long gpus = args.integer("gpus-per-task").value_or(0), cpus = args.integer("cpus-per-task").value_or(0);
    if (gpus < 0 || gpus > 64) throw UsageError{"--gpus-per-task must be between 0 and 64"};
    if (args.has("cpus-per-task") && (cpus < 1 || cpus > 4096))
        throw UsageError{"--cpus-per-task must be between 1 and 4096 (a task needs a CPU), not " + std::to_string(cpus)};
    o.gpus_per_task = static_cast<int>(gpus);
    o.cpus_per_task = static_cast<int>(cpus);
    o.sbatch_args = args.values("sbatch-arg");
    return o;
}

// The runs of a Slurm sweep with a completed run: in the main store (collected) or a task's store.
std::map<std::int64_t, RunRow> recorded_runs(RunStore& store, const SweepRow& sweep, std::size_t runs) {
    std::map<std::int64_t, RunRow> latest;
    for (RunRow& r : store.sweep_runs(sweep.id))
        if (r.sweep_index) latest[*r.sweep_index] = r;
    for (std::size_t i = 0; i < runs && !sweep.folder.empty(); ++i) {
        const std::string file = task_store(sweep.folder, static_cast<std::int64_t>(i));
        if (latest.contains(static_cast<std::int64_t>(i)) || !fs::exists(file)) continue;
        try {
            RunStore task(file, StoreAccess::read_only);
            for (RunRow& r : task.list_runs())
                if (r.sweep_uuid == sweep.uuid && r.sweep_index) latest[*r.sweep_index] = r;
        } catch (const Error&) {
            // A task's store being created right now: not yet a run.
        }
    }
    return latest;
}

// What a submission writes into the sweep's folder (write_array_script) and the folders it makes on
// the way: when the submission fails, the files that were not there before it and those folders
// are removed again, and the files that were there (a resubmission's script and experiment files)
// are written back as they were, so a failed one leaves the folder as it found it and a retry adds
// nothing.
class SubmissionLeftovers {
public:
    SubmissionLeftovers(const std::string& folder, const std::vector<std::int64_t>& indices) {
        std::error_code ec;
        // The folders create_directories will make: the folder and its missing ancestors.
        for (fs::path p = fs::absolute(folder, ec); !p.empty() && !fs::exists(fs::symlink_status(p, ec));
             p = p.parent_path()) {
            m_new_folders.push_back(p);
            if (p == p.parent_path()) break;
        }
        std::vector<fs::path> files = {fs::path(folder) / "sweep.sbatch"};
        for (std::int64_t i : indices) files.push_back(fs::path(folder) / ("run-" + std::to_string(i) + ".json"));
        for (const fs::path& f : files) {
            if (!fs::exists(fs::symlink_status(f, ec))) {
                m_new_files.push_back(f);
                continue;
            }
            std::ifstream in(f, std::ios::binary);  // a script or an experiment file: small, never a store
            std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (in.bad()) throw Error("Cannot read " + f.string() + " before the resubmission replaces it.");
            m_old_files.push_back({f, std::move(bytes)});
        }
    }
    // Never throws: the failure being reported matters more than one that cleaning up meets.
    void remove() const noexcept {
        std::error_code ec;
        for (const fs::path& f : m_new_files) fs::remove(f, ec);
        for (const auto& [f, bytes] : m_old_files) {
            std::ofstream out(f, std::ios::binary | std::ios::trunc);
            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        }
        if (!m_new_folders.empty()) fs::remove_all(m_new_folders.front(), ec);  // made by this submission
        for (std::size_t i = 1; i < m_new_folders.size(); ++i) fs::remove(m_new_folders[i], ec);  // only if empty
    }

private:
    std::vector<fs::path> m_new_files;
    std::vector<std::pair<fs::path, std::string>> m_old_files;  // with the bytes they held
    std::vector<fs::path> m_new_folders;  // the deepest first
};

// The task stores a resubmission replaces (task_store), each with the files SQLite keeps beside it
// (-wal, -shm, -journal; store/store_files.h), moved aside under names of their own until sbatch
// has taken the new array: deleted once it has (accepted()), put back under their names when it
// has not (the destructor), so a refused resubmission leaves every task store as it was. A store
// whose runs could not be collected first (`kept`: damaged, or not a store) is never deleted: it
// stays aside, and accepted() names it. Renamed,
// never opened (docs/architecture.md, "The run store"). A task store's checkpoints folder
// (task-<i>.checkpoints, checkpoint_folder) is left where it is: a run collected into the main
// store keeps its checkpoints there, and a new run writes under a uuid of its own.
class ReplacedTaskStores {
public:
    ReplacedTaskStores(const std::string& folder, const std::vector<std::int64_t>& indices,
                       const std::set<std::int64_t>& kept) {
        const std::string tag = ".resubmitting-" + std::to_string(::getpid());
        for (std::int64_t i : indices) {
            const std::string store = task_store(folder, i);
            std::error_code ec;
            if (!fs::exists(fs::symlink_status(store, ec))) continue;
            std::string aside = store + tag;
            for (int n = 1; fs::exists(fs::symlink_status(aside, ec)) || side_file_present(aside); ++n)
                aside = store + tag + "-" + std::to_string(n);
            for (const std::string& suffix : file_suffixes()) {
                if (!fs::exists(fs::symlink_status(store + suffix, ec))) continue;
                fs::rename(store + suffix, aside + suffix, ec);
                if (ec) {
                    const std::string why = ec.message();
                    put_back();
                    throw Error("Cannot set the task store " + store + suffix + " aside while the sweep is submitted again: " +
                                why + "; nothing was submitted.");
                }
                m_moved.push_back({store + suffix, aside + suffix});
            }
            if (kept.contains(i)) m_kept.push_back(aside);
        }
    }
    ~ReplacedTaskStores() { put_back(); }
    ReplacedTaskStores(const ReplacedTaskStores&) = delete;
    ReplacedTaskStores& operator=(const ReplacedTaskStores&) = delete;

    // sbatch took the array: the old task stores go (a file that cannot be removed stays, aside),
    // but for the kept ones, whose names aside it returns.
    std::vector<std::string> accepted() noexcept {
        std::error_code ec;
        for (const auto& [store, aside] : m_moved) {
            const bool keep = std::any_of(m_kept.begin(), m_kept.end(),
                                          [&](const std::string& k) { return aside.starts_with(k); });
            if (!keep) fs::remove(aside, ec);
        }
        m_moved.clear();
        return std::exchange(m_kept, {});
    }

private:
    // "" (the store itself) and each side file's suffix.
    static std::vector<std::string> file_suffixes() {
        std::vector<std::string> s = {""};
        for (const char* suffix : store::side_file_suffixes) s.emplace_back(suffix);
        return s;
    }
    static bool side_file_present(const std::string& path) {
        std::error_code ec;
        for (const char* suffix : store::side_file_suffixes)
            if (fs::exists(fs::symlink_status(path + suffix, ec))) return true;
        return false;
    }
    void put_back() noexcept {
        std::error_code ec;
        for (auto it = m_moved.rbegin(); it != m_moved.rend(); ++it) fs::rename(it->second, it->first, ec);
        m_moved.clear();
    }

    std::vector<std::pair<std::string, std::string>> m_moved;  // (its name, the name aside)
    std::vector<std::string> m_kept;                            // the kept stores' names aside
};

// Submits `indices` of the sweep as a job array. When sbatch cannot take it, what this wrote is
// removed again (or written back as it was) and, for a sweep created for this submission
// (`new_sweep`), its row too: the store and the folder are as they were before the command. The
// task stores a resubmission replaces (`replaced`) go only once sbatch has taken the array.
int submit(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan, const std::vector<std::int64_t>& indices,
           const SlurmOptions& options, const std::string& folder, bool new_sweep, ReplacedTaskStores* replaced = nullptr) {
    const SubmissionLeftovers leftovers(folder, indices);
    std::string script, job;
    try {
        script = write_array_script(folder, sweep, plan, indices, options);
        job = submit_array(script);
    } catch (...) {
        leftovers.remove();
        if (new_sweep) {
            try {
                store.remove_sweep(sweep.id);
            } catch (const std::exception&) {  // the sentence of the failed submission is the one to give
            }
        }
        throw;
    }
    if (replaced)  // its tasks may start now: each writes a store of its own
        for (const std::string& kept : replaced->accepted())
            std::printf("Kept %s: the task store it replaced, whose runs could not be collected.\n", kept.c_str());
    store.set_sweep_slurm(sweep.id, job, folder);
    std::printf("Submitted sweep %lld (\"%s\") as Slurm job array %s: %zu task%s, script %s.\n"
                "`mantissa-cli sweep status %lld` follows the tasks; `mantissa-cli sweep collect %lld` imports their runs.\n",
                static_cast<long long>(sweep.id), sweep.name.c_str(), job.c_str(), indices.size(), indices.size() == 1 ? "" : "s",
                script.c_str(), static_cast<long long>(sweep.id), static_cast<long long>(sweep.id));
    return exit_ok;
}

// ---- commands

Experiment base_experiment(Args& args, std::optional<std::string> config) {
    Experiment e = config ? load_experiment(*config) : Experiment{};
    apply_settings(e, args.values("set"));
    if (auto backend = args.value("backend")) apply_setting(e, "backend.kind=" + *backend);
    if (auto steps = args.integer("steps")) {
        if (*steps <= 0) throw UsageError{"--steps must be a positive number of steps"};
        e.train.steps = *steps;
    }
    return e;
}

int jobs_of(const Args& args) {
    const long long jobs = args.integer("jobs").value_or(1);
    if (jobs < 1 || jobs > 256) throw UsageError{"--jobs must be between 1 and 256"};
    return static_cast<int>(jobs);
}

int new_sweep(Args& args) {
    args.allow_only({"config", "set", "grid", "recipes", "repeat", "steps", "backend", "jobs", "name", "db", "partition",
                     "time", "gpus-per-task", "cpus-per-task", "sbatch-arg", "folder", "slurm", "dry-run"},
                    "a new sweep");
    std::optional<std::string> config = args.value("config");
    for (const std::string& a : args.positional()) {
        if (config) throw UsageError{"unexpected argument '" + a + "': the experiment file is " + *config};
        config = a;
    }
    SweepSpec spec;
    spec.base = base_experiment(args, config);
    if (auto recipes = args.value("recipes")) {
        if (*recipes == "standard") {
            for (const Recipe& r : standard_recipes()) spec.recipes.push_back(r.name);
        } else {
            std::size_t start = 0;
            for (;;) {
                const std::size_t comma = recipes->find(',', start);
                spec.recipes.push_back(recipes->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        }
    }
    for (const std::string& g : args.values("grid")) spec.grid.push_back(parse_grid_axis(g));
    if (auto repeat = args.integer("repeat")) {
        if (*repeat < 1 || *repeat > 1000) throw UsageError{"--repeat must be between 1 and 1000"};
        spec.repeat = static_cast<int>(*repeat);
    }
    const std::string name = args.value("name").value_or(spec.base.name + " sweep");
    if (name.empty()) throw UsageError{"--name must not be empty: give the sweep a name, or leave --name out"};
    store::check_run_text(store::RunText::name, name);
    const int jobs = jobs_of(args);
    check_new_sweep(spec);
    const std::vector<PlannedRun> plan = plan_sweep(spec, name, matmul_layer_names);  // every setting checked here
    // Each run's experiment as the run will check it when it starts (train/start_check.h): a grid
    // value every run would refuse is refused here, before a sweep or a run is recorded.
    for (const PlannedRun& p : plan) {
        try {
            check_run_start(p.experiment);
        } catch (const Error& e) {
            throw Error("Run " + std::to_string(p.index) + " of the sweep (" + shortened_text(p.label) + ") cannot start: " +
                        e.what());
        }
    }

    // The Slurm options checked before anything is planned to run (a dry run too); each names
    // the mode it belongs to rather than being passed over.
    const bool slurm = args.has("slurm");
    if (!slurm) {
        std::vector<const char*> slurm_only(std::begin(slurm_submit_options), std::end(slurm_submit_options));
        slurm_only.push_back("folder");
        for (const char* o : slurm_only)
            if (args.has(o)) throw UsageError{std::string("--") + o + " is for a sweep on Slurm: add --slurm, or leave it out"};
    }
    if (slurm && args.has("jobs"))
        throw UsageError{"--jobs is for a sweep run on this machine; on Slurm each run is a task of its own (leave --jobs out)"};
    const SlurmOptions options = slurm ? slurm_options(args) : SlurmOptions{};

    if (args.has("dry-run")) {
        std::printf("Sweep \"%s\": %zu run%s\n", name.c_str(), plan.size(), plan.size() == 1 ? "" : "s");
        for (const PlannedRun& p : plan) std::printf("  %4lld  %s\n", static_cast<long long>(p.index), p.label.c_str());
        return exit_ok;
    }
    const std::string db = db_of(args);
    RunStore store(db);
    require_writable_store(store, db, "the sweep");
    const SweepRow sweep = store.create_sweep(
        {name, sweep_spec_to_json(spec).dump(), static_cast<std::int64_t>(plan.size()), slurm ? "slurm" : "local"});
    if (slurm) {
        std::vector<std::int64_t> all;
        for (const PlannedRun& p : plan) all.push_back(p.index);
        const std::string folder = args.value("folder") ? fs::absolute(*args.value("folder")).string() : sweep_folder(db, sweep.uuid);
        return submit(store, sweep, plan, all, options, folder, true);
    }
    const StopSignals signals;
    return execute_local(store, sweep, plan, jobs);
}

// The one sweep an action takes (args.positional()[1]): a missing one and an extra word are told apart.
const std::string& sweep_argument(const Args& args, const std::string& usage) {
    args.expect_words(2, "give the sweep, its id or the start of its name or uuid", usage);
    return args.positional()[1];
}

int run_again(Args& args) {
    args.allow_only({"db", "jobs", "partition", "time", "gpus-per-task", "cpus-per-task", "sbatch-arg"}, "sweep run");
    const std::string& which = sweep_argument(args, "mantissa-cli sweep run SWEEP");
    RunStore store(db_of(args));
    const SweepRow sweep = store.sweep(store.resolve_sweep(which));
    const std::vector<PlannedRun> plan = plan_of(sweep);
    // Where the sweep runs is its own: options for the other place would be ignored.
    if (sweep.executor == "slurm" && args.has("jobs"))
        throw UsageError{"--jobs is for a sweep run on this machine; sweep " + std::to_string(sweep.id) +
                         " runs on Slurm, whose array runs its tasks"};
    if (sweep.executor != "slurm")
        for (const char* o : slurm_submit_options)
            if (args.has(o))
                throw UsageError{std::string("--") + o + " is for a sweep on Slurm; sweep " + std::to_string(sweep.id) +
                                 " runs on this machine"};
    if (sweep.executor == "slurm") {
        const SlurmOptions options = slurm_options(args);  // checked before any task store is replaced
        // A sweep never submitted (one an older Mantissa kept after sbatch refused it) has no
        // folder yet: the default one, never the working directory.
        const std::string folder = sweep.folder.empty() ? sweep_folder(store.path(), sweep.uuid) : sweep.folder;
        // Submitted again: the tasks whose run is missing, failed or stopped (a task store is
        // replaced, once sbatch has taken the array: ReplacedTaskStores).
        const auto recorded = recorded_runs(store, sweep, plan.size());
        std::vector<std::int64_t> todo;
        for (const PlannedRun& p : plan) {
            const auto it = recorded.find(p.index);
            if (it == recorded.end() || (it->second.status != RunStatus::completed && it->second.status != RunStatus::running))
                todo.push_back(p.index);
        }
        if (todo.empty()) {
            std::printf("Every task of sweep %lld has a completed or running run; nothing to submit.\n", static_cast<long long>(sweep.id));
            return exit_ok;
        }
        // The runs of the task stores about to be replaced are collected first (as `sweep collect`
        // does), so a failed or stopped run nobody collected stays in the history; a store that
        // cannot be collected is kept aside, never deleted.
        std::set<std::int64_t> uncollected;
        for (std::int64_t i : todo) {
            const std::string file = task_store(folder, i);
            std::error_code ec;
            if (!fs::exists(fs::symlink_status(file, ec))) continue;
            try {
                store.import_store(file);
            } catch (const Error& e) {
                uncollected.insert(i);
                std::fprintf(stderr, "Task %lld's store cannot be collected (%s); it is kept aside.\n",
                             static_cast<long long>(i), e.what());
            }
        }
        ReplacedTaskStores replaced(folder, todo, uncollected);
        return submit(store, sweep, plan, todo, options, folder, false, &replaced);
    }
    const StopSignals signals;
    return execute_local(store, sweep, plan, jobs_of(args));
}

const char* status_text(const RunRow* r) { return r ? run_status_name(r->status) : "-"; }

int status(Args& args) {
    args.allow_only({"db"}, "sweep status");
    const std::string& which = sweep_argument(args, "mantissa-cli sweep status SWEEP");
    RunStore store(db_of(args), StoreAccess::read);
    const SweepRow sweep = store.sweep(store.resolve_sweep(which));
    const std::vector<PlannedRun> plan = plan_of(sweep);
    if (sweep.executor != "slurm") {
        for (const std::string& line : progress_lines(store, sweep, plan)) std::printf("%s\n", line.c_str());
        return exit_ok;
    }
    const auto states = array_task_states(sweep.slurm_job);
    const auto recorded = recorded_runs(store, sweep, plan.size());
    std::printf("Sweep %lld (\"%s\"): Slurm job %s, task stores in %s\n", static_cast<long long>(sweep.id), sweep.name.c_str(),
                sweep.slurm_job.empty() ? "(not submitted)" : sweep.slurm_job.c_str(), sweep.folder.c_str());
    std::printf("  %4s  %-40s  %-11s  %-11s  %6s  %10s\n", "#", "RECIPE", "SLURM", "RUN", "STEPS", "LOSS");
    for (const PlannedRun& p : plan) {
        const auto s = states.find(p.index);
        const auto r = recorded.find(p.index);
        const RunRow* run = r == recorded.end() ? nullptr : &r->second;
        char loss[32] = "-";
        if (run && run->final_loss) std::snprintf(loss, sizeof loss, "%.4f", *run->final_loss);
        std::printf("  %4lld  %-40.40s  %-11s  %-11s  %6s  %10s\n", static_cast<long long>(p.index), p.label.c_str(),
                    s == states.end() ? "-" : s->second.c_str(), status_text(run), run ? std::to_string(run->steps).c_str() : "-",
                    loss);
        if (run && run->status == RunStatus::failed && !run->error.empty()) std::printf("        %s\n", run->error.c_str());
    }
    return exit_ok;
}

int collect(Args& args) {
    args.allow_only({"db"}, "sweep collect");
    const std::string& which = sweep_argument(args, "mantissa-cli sweep collect SWEEP");
    RunStore store(db_of(args));
    const SweepRow sweep = store.sweep(store.resolve_sweep(which));
    if (sweep.executor != "slurm")
        throw Error("Sweep " + std::to_string(sweep.id) + " ran on this machine, into this store: there is nothing to collect.");
    if (sweep.folder.empty())  // never submitted: no task has a store (and none is looked for here)
        throw Error("Sweep " + std::to_string(sweep.id) + " was never submitted to Slurm: there is nothing to collect; "
                    "`mantissa-cli sweep run " + std::to_string(sweep.id) + "` submits it.");
    const std::vector<PlannedRun> plan = plan_of(sweep);
    ImportResult total;
    int stores = 0, training = 0;
    for (const PlannedRun& p : plan) {
        const std::string file = task_store(sweep.folder, p.index);
        if (!fs::exists(file)) continue;
        // A task still training is collected once it ends: an import never updates a run it has.
        bool running = false;
        try {
            RunStore task(file, StoreAccess::read_only);
            for (const RunRow& r : task.list_runs()) running = running || r.status == RunStatus::running;
        } catch (const Error&) {
            running = true;  // being created right now
        }
        if (running) {
            ++training;
            continue;
        }
        const ImportResult r = store.import_store(file);
        total.runs_added += r.runs_added;
        total.runs_skipped += r.runs_skipped;
        ++stores;
    }
    // A task Slurm saw fail before its run recorded anything: recorded failed here, in its words.
    const auto states = array_task_states(sweep.slurm_job);
    const auto recorded = recorded_runs(store, sweep, plan.size());
    for (const PlannedRun& p : plan) {
        const auto s = states.find(p.index);
        if (s == states.end() || recorded.contains(p.index)) continue;
        if (s->second == "FAILED" || s->second == "CANCELLED" || s->second == "TIMEOUT" || s->second == "OUT_OF_MEMORY" ||
            s->second == "NODE_FAIL") {
            const std::string line = last_line((fs::path(sweep.folder) / ("run-" + std::to_string(p.index) + ".log")).string());
            record_failed_start(store, sweep, p, "Slurm task " + s->second + (line.empty() ? "" : ": " + line));
        }
    }
    std::printf("Collected %lld new run%s from %d task store%s (%lld already here)", static_cast<long long>(total.runs_added),
                total.runs_added == 1 ? "" : "s", stores, stores == 1 ? "" : "s", static_cast<long long>(total.runs_skipped));
    if (training > 0) std::printf("; %d task%s still training, collected later", training, training == 1 ? "" : "s");
    std::printf(".\n\n");
    print_sweep_table(store, sweep, plan, std::cout);
    return exit_ok;
}

int show(Args& args) {
    args.allow_only({"db", "json"}, "sweep show");
    const std::string& which = sweep_argument(args, "mantissa-cli sweep show SWEEP");
    const std::string db = db_of(args);
    if (!store_file_present(db)) throw Error("There is no run store at " + db + " yet, so there are no sweeps.");
    RunStore store(db, StoreAccess::read);
    const SweepRow sweep = store.sweep(store.resolve_sweep(which));
    const std::vector<PlannedRun> plan = plan_of(sweep);
    if (args.has("json")) std::cout << sweep_table_json(store, sweep, plan).dump(2) << std::endl;
    else print_sweep_table(store, sweep, plan, std::cout);
    return exit_ok;
}

int list(Args& args) {
    args.allow_only({"db", "json"}, "sweep list");
    args.expect_words(1, "", "mantissa-cli sweep list (it takes no sweep)");
    const std::string db = db_of(args);
    const bool json = args.has("json");
    if (!store_file_present(db)) {  // as `runs` says it: nothing recorded yet is not a mistake
        if (json) std::cout << "[]" << std::endl;
        else std::printf("No sweeps yet (there is no run store at %s).\n", printable_text(db).c_str());
        return exit_ok;
    }
    RunStore store(db, StoreAccess::read);
    const auto sweeps = store.list_sweeps();
    const auto completed_runs = [&store](const SweepRow& s) {
        std::int64_t completed = 0;
        for (const RunRow& r : store.sweep_runs(s.id)) completed += r.status == RunStatus::completed;
        return completed;
    };
    if (json) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const SweepRow& s : sweeps)
            a.push_back({{"id", s.id}, {"uuid", s.uuid}, {"name", s.name}, {"executor", s.executor},
                         {"runs_planned", s.runs_planned}, {"runs_completed", completed_runs(s)}, {"created_at", s.created_at},
                         {"slurm_job", s.slurm_job.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.slurm_job)}});
        std::cout << a.dump(2) << std::endl;
        return exit_ok;
    }
    if (sweeps.empty()) {
        std::printf("No sweeps in %s.\n", db.c_str());
        return exit_ok;
    }
    std::printf("%4s  %-32s  %-8s  %5s  %9s  %s\n", "ID", "NAME", "WHERE", "RUNS", "COMPLETED", "CREATED (UTC)");
    for (const SweepRow& s : sweeps)
        std::printf("%4lld  %-32s  %-8s  %5lld  %9lld  %s\n", static_cast<long long>(s.id), s.name.c_str(), s.executor.c_str(),
                    static_cast<long long>(s.runs_planned), static_cast<long long>(completed_runs(s)), s.created_at.c_str());
    return exit_ok;
}

int run_sweep(Args& args) {
    args.option("config");
    args.option("set");
    args.option("grid");
    args.option("recipes");
    args.option("repeat");
    args.option("steps");
    args.option("backend");
    args.option("jobs");
    args.option("name");
    args.option("db");
    args.option("partition");
    args.option("time");
    args.option("gpus-per-task");
    args.option("cpus-per-task");
    args.option("sbatch-arg");
    args.option("folder");
    args.flag("slurm");
    args.flag("dry-run");
    args.flag("json");
    args.parse();
    const std::string action = args.positional().empty() ? "" : args.positional().front();
    if (action == "run") return run_again(args);
    if (action == "show") return show(args);
    if (action == "list") return list(args);
    if (action == "status") return status(args);
    if (action == "collect") return collect(args);
    return new_sweep(args);
}

}  // namespace

MANTISSA_CLI_COMMAND({"sweep", "run an experiment over recipes, a grid of settings and seeds; show the recipe table",
                      "usage: mantissa-cli sweep [FILE] [--set KEY=VALUE]... [--grid KEY=V1,V2,...]...\n"
                      "                          [--recipes NAME,...|standard] [--repeat N] [--steps N]\n"
                      "                          [--jobs N] [--name NAME] [--dry-run] [--db FILE]\n"
                      "       mantissa-cli sweep run SWEEP [--jobs N | Slurm options] [--db FILE]\n"
                      "       mantissa-cli sweep show SWEEP [--json] [--db FILE]\n"
                      "       mantissa-cli sweep list [--json] [--db FILE]\n"
                      "       mantissa-cli sweep [FILE] ... --slurm [--partition P] [--time T] [--cpus-per-task N]\n"
                      "                          [--gpus-per-task N] [--sbatch-arg ARG]... [--folder DIR]\n"
                      "       mantissa-cli sweep status SWEEP | sweep collect SWEEP [--db FILE]\n\n"
                      "Plans runs of the experiment (FILE, or the defaults, with --set applied): each recipe, times\n"
                      "each point of the grid (the product of the --grid axes), times --repeat seeds; records the\n"
                      "sweep in the store and runs them here, up to --jobs at once as separate processes, each with\n"
                      "its share of the CPU threads and, on the CUDA backend, a GPU of its own while there are\n"
                      "enough (docs/sweeps.md). A table on the terminal shows each run's state, step and loss;\n"
                      "Ctrl-C stops them all after their current step (each recorded `stopped`), and `sweep run`\n"
                      "continues the sweep: it runs what is missing or failed, and resumes what was stopped.\n\n"
                      "  --recipes LIST    standard recipes, comma-separated, or `standard` for all of them: fp32,\n"
                      "                    tf32, bf16, fp16 (dynamic loss scaling, master weights), fp16-noscale,\n"
                      "                    fp8 (hybrid, delayed scaling, every matmul layer but the output)\n"
                      "  --grid KEY=V1,V2  one axis of the grid, e.g. train.lr=1e-3,3e-3; repeatable\n"
                      "  --repeat N        N seeds per point: train.seed, train.seed + 1, ...\n"
                      "  --jobs N          runs at once (default 1)\n"
                      "  --dry-run         list the runs and record nothing\n"
                      "  --name NAME       the sweep's name (default: the experiment's name + \" sweep\")\n\n"
                      "With --slurm the runs go to a Slurm cluster as one job array (sbatch --array): task i trains\n"
                      "run i into a store of its own in --folder (default: beside the store; it must be shared\n"
                      "with the compute nodes). `sweep status` shows each task's Slurm state and run, `sweep\n"
                      "collect` imports the tasks' runs into this store, and `sweep run` submits again what is\n"
                      "missing or failed.\n\n"
                      "show prints the recipe table (recipe and the keys that vary, status, final loss, test\n"
                      "accuracy, samples/s, peak memory, skipped steps); list prints the sweeps (--json: an array\n"
                      "of {id, uuid, name, executor, runs_planned, runs_completed, created_at, slurm_job}). Each\n"
                      "action takes only its own options. docs/sweeps.md has the rest.\n\n"
                      "Exit status: 0 every run completed (or the sweep was stopped), 1 a run failed (its log's\n"
                      "last line is printed), 2 bad usage or input: a setting or recipe that does not exist, a\n"
                      "setting a run would refuse as it starts (a layer the model lacks: nothing is recorded),\n"
                      "or a Slurm submission sbatch refused (the sweep it recorded is removed again).\n",
                      run_sweep});

}  // namespace mantissa::cli
