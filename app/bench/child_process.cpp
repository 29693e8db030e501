// ChildProcess: see child_process.h.
#include "bench/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "error.h"

extern char** environ;

namespace mantissa::bench {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env) {
    if (argv.empty()) throw Error("no program to start");
    // Everything the child needs is built before fork (only async-signal-safe calls after it).
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        const std::string entry(*e);
        bool replaced = false;
        for (const auto& [name, value] : env) replaced = replaced || entry.rfind(name + "=", 0) == 0;
        if (!replaced) env_strings.push_back(entry);
    }
    for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);

    char err_path[] = "/tmp/mantissa-bench-stderr-XXXXXX";
    m_err = mkstemp(err_path);
    if (m_err < 0) throw Error(std::string("cannot create a temporary file: ") + std::strerror(errno));
    unlink(err_path);
    int to_child[2], from_child[2], exec_error[2];
    if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC) || pipe2(exec_error, O_CLOEXEC))
        throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
    m_pid = fork();
    if (m_pid < 0) throw Error(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
    if (m_pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        dup2(m_err, 2);
        execve(args[0], args.data(), envp.data());
        const int e = errno;
        (void)!write(exec_error[1], &e, sizeof e);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    close(exec_error[1]);
    m_in = to_child[1];
    m_out = from_child[0];
    int e = 0;
    const auto n = read(exec_error[0], &e, sizeof e);
    close(exec_error[0]);
    if (n == static_cast<ssize_t>(sizeof e)) {
        waitpid(m_pid, nullptr, 0);
        m_pid = -1;
        throw Error("cannot start " + argv[0] + ": " + std::strerror(e));
    }
}

ChildProcess::~ChildProcess() {
    if (m_in >= 0) close(m_in);
    if (m_out >= 0) close(m_out);
    if (m_pid > 0 && m_status < 0) {
        kill(m_pid, SIGTERM);
        waitpid(m_pid, nullptr, 0);
    }
    if (m_err >= 0) close(m_err);
}

bool ChildProcess::write_line(const std::string& line) {
    const std::string data = line + "\n";
    std::size_t done = 0;
    signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill us
    while (done < data.size()) {
        const auto n = write(m_in, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

std::optional<std::string> ChildProcess::read_line() {
    for (;;) {
        const auto nl = m_buffer.find('\n');
        if (nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        if (m_eof) {
            if (m_buffer.empty()) return std::nullopt;
            return std::exchange(m_buffer, {});
        }
        char chunk[4096];
        const auto n = read(m_out, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) m_eof = true;
        else m_buffer.append(chunk, static_cast<std::size_t>(n));
    }
}

std::string ChildProcess::read_all() {
    std::string all;
    while (auto line = read_line()) all += *line + "\n";
    return all;
}

int ChildProcess::wait() {
    if (m_status >= 0) return m_status;
    if (m_in >= 0) {
        close(m_in);
        m_in = -1;
    }
    int status = 0;
    while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return m_status;
}

std::string ChildProcess::stderr_text() {
    std::string text;
    if (m_err < 0) return text;
    lseek(m_err, 0, SEEK_SET);
    char chunk[4096];
    ssize_t n;
    while ((n = read(m_err, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<std::size_t>(n));
    return text;
}

}  // namespace mantissa::bench
