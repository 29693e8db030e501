// A sweep as a Slurm job array (sweep_slurm.h).
#include "cli/sweep_slurm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "error.h"

namespace mantissa::cli {
namespace {

namespace fs = std::filesystem;

// A word for the shell, in single quotes.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct CommandResult {
    int code = -1;       // the exit status; -1 when it could not run or was killed
    std::string output;  // standard output and error together
};

// Runs argv[0] (found on the PATH) with its output captured.
CommandResult run(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    const pid_t pid = ::fork();
    if (pid < 0) return {};
    if (pid == 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[0]);
        ::close(fds[1]);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "%s: %s\n", argv[0].c_str(), std::strerror(errno));
        std::_Exit(127);
    }
    ::close(fds[1]);
    CommandResult r;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0) r.output.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR) break;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

// sbatch's lines as one ("sbatch: error: A; sbatch: error: B"), for a sentence on one line.
std::string one_line(const std::string& text) {
    std::string out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line = trimmed(text.substr(start, end - start));
        while (!line.empty() && line.front() == ' ') line.erase(0, 1);
        if (!line.empty()) out += (out.empty() ? "" : "; ") + line;
        start = end + 1;
    }
    while (!out.empty() && out.back() == '.') out.pop_back();
    return out;
}

}  // namespace

std::string task_store(const std::string& folder, std::int64_t index) {
    return (fs::path(folder) / ("task-" + std::to_string(index) + ".sqlite")).string();
}

std::string write_array_script(const std::string& folder, const SweepRow& sweep, const std::vector<PlannedRun>& plan,
                               const std::vector<std::int64_t>& indices, const SlurmOptions& options) {
    fs::create_directories(folder);
    for (std::int64_t i : indices)
        save_experiment(plan.at(static_cast<std::size_t>(i)).experiment,
                        (fs::path(folder) / ("run-" + std::to_string(i) + ".json")).string());
    std::string array;
    for (std::int64_t i : indices) array += (array.empty() ? "" : ",") + std::to_string(i);
    const std::string cli = fs::read_symlink("/proc/self/exe").string();
    const std::string script = (fs::path(folder) / "sweep.sbatch").string();
    std::ofstream out(script);
    out << "#!/bin/bash\n"
        << "# Mantissa sweep " << sweep.uuid << " (\"" << sweep.name << "\"): task i trains run i of the plan\n"
        << "# into its own store; `mantissa-cli sweep collect` imports them (docs/sweeps.md).\n"
        << "#SBATCH --job-name=" << quoted("mantissa-" + sweep.name) << "\n"
        << "#SBATCH --array=" << array << "\n"
        << "#SBATCH --output=" << quoted((fs::path(folder) / "run-%a.log").string()) << "\n";
    if (!options.partition.empty()) out << "#SBATCH --partition=" << quoted(options.partition) << "\n";
    if (!options.time.empty()) out << "#SBATCH --time=" << quoted(options.time) << "\n";
    if (options.cpus_per_task > 0) out << "#SBATCH --cpus-per-task=" << options.cpus_per_task << "\n";
    if (options.gpus_per_task > 0) out << "#SBATCH --gpus-per-task=" << options.gpus_per_task << "\n";
    for (const std::string& a : options.sbatch_args) out << "#SBATCH " << a << "\n";
    out << "set -u\n"
        << "i=$SLURM_ARRAY_TASK_ID\n"
        << "export MANTISSA_CPU_THREADS=${SLURM_CPUS_PER_TASK:-1} OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\n"
        << "exec " << quoted(cli) << " train --config=" << quoted(folder) << "/run-$i.json --db=" << quoted(folder)
        << "/task-$i.sqlite --sweep=" << sweep.uuid << " --sweep-index=$i --json\n";
    out.close();
    if (!out) throw Error("Cannot write the sweep's job script " + script + ": " + std::strerror(errno) + ".");
    return script;
}

std::string submit_array(const std::string& script) {
    const CommandResult r = run({"sbatch", "--parsable", script});
    if (r.code == 127 || r.code == -1)
        throw Error("sbatch could not be run (" + trimmed(r.output) + "); --slurm needs Slurm's client commands on this machine.");
    if (r.code != 0) {
        const std::string said = one_line(trimmed(r.output));
        throw Error("sbatch refused the sweep's job array: " +
                    (said.empty() ? "it exited with status " + std::to_string(r.code) + " and said nothing" : said) + ".");
    }
    std::string job = trimmed(r.output);
    if (const std::size_t nl = job.rfind('\n'); nl != std::string::npos) job = job.substr(nl + 1);  // after any warning
    if (const std::size_t semi = job.find(';'); semi != std::string::npos) job = job.substr(0, semi);  // "id;cluster"
    return job;
}

std::map<std::int64_t, std::string> array_task_states(const std::string& job) {
    std::map<std::int64_t, std::string> states;
    const CommandResult r = run({"squeue", "--states=all", "--array", "--noheader", "--jobs", job, "--format=%i %T"});
    if (r.code != 0) return states;
    std::size_t start = 0;
    while (start < r.output.size()) {
        std::size_t end = r.output.find('\n', start);
        if (end == std::string::npos) end = r.output.size();
        const std::string line = r.output.substr(start, end - start);
        start = end + 1;
        const std::size_t underscore = line.find('_'), space = line.find(' ');
        if (underscore == std::string::npos || space == std::string::npos || space < underscore) continue;
        const std::string index = line.substr(underscore + 1, space - underscore - 1);
        if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;  // "[3-5]" pending
        states[std::stoll(index)] = trimmed(line.substr(space + 1));
    }
    return states;
}

}  // namespace mantissa::cli
