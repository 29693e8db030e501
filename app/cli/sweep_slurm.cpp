// A sweep as a Slurm job array (sweep_slurm.h).
#include "cli/sweep_slurm.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
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
    std::string output;  // standard output
    std::string errors;  // standard error
};

// Runs argv[0] (found on the PATH) with its standard output and error captured apart: sbatch
// --parsable writes the job's id on one and its complaints on the other.
CommandResult run(const std::vector<std::string>& argv) {
    int out[2], err[2];
    if (::pipe(out) != 0) return {};
    if (::pipe(err) != 0) {
        ::close(out[0]);
        ::close(out[1]);
        return {};
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        return {};
    }
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(err[1], STDERR_FILENO);
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "%s: %s\n", argv[0].c_str(), std::strerror(errno));
        std::_Exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    CommandResult r;
    // Both pipes read as they fill, so a child that writes much to one never waits on the other.
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* into[2] = {&r.output, &r.errors};
    int open = 2;
    char buf[4096];
    while (open > 0) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                into[i]->append(buf, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    for (const pollfd& f : fds)
        if (f.fd >= 0) ::close(f.fd);
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

// The first line of `text` that says something, without its final period: what a program's
// complaint starts with, for the end of a sentence (sbatch repeats itself on the lines after).
std::string first_line(const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line = trimmed(text.substr(start, end - start));
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.erase(0, 1);
        while (!line.empty() && line.back() == '.') line.pop_back();
        if (!line.empty()) return line;
        start = end + 1;
    }
    return {};
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
    for (std::int64_t i : indices) {
        if (!array.empty()) array += ',';
        array += std::to_string(i);
    }
    const std::string cli = fs::read_symlink("/proc/self/exe").string();
    const std::string script = (fs::path(folder) / "sweep.sbatch").string();
    std::ofstream out(script);
    out << "#!/bin/bash\n"
        << "# Mantissa sweep " << sweep.uuid << " (\"" << sweep.name << "\"): task i trains run i of the plan\n"
        << "# into its own store; `mantissa-cli sweep collect` imports them (docs/sweeps.md).\n"
        << "#SBATCH --job-name=" << quoted("mantissa-" + sweep.name) << "\n"
        << "#SBATCH --array=" << array << "\n"
        << "#SBATCH --output=" << quoted((fs::path(folder) / "run-%a.log").string()) << "\n"
        // A task submitted again adds to its log: what the earlier attempt said stays above it.
        << "#SBATCH --open-mode=append\n";
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
    if (r.code == 127 || r.code == -1) {
        const std::string said = first_line(r.errors);
        throw Error("sbatch could not be run" + (said.empty() ? std::string() : " (" + said + ")") +
                    "; --slurm needs Slurm's client commands on this machine.");
    }
    if (r.code != 0) {
        const std::string said = first_line(r.errors.empty() ? r.output : r.errors);
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
