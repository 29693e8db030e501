// A child process with a pipe to its stdin and one from its stdout, its stderr kept in a
// temporary file (read after it ends, for the one line that says what went wrong). The `gui`
// suite reads the GUI's JSON through it; the `peer` suite talks to the PyTorch script line by
// line, so Mantissa's and PyTorch's timed blocks can interleave. POSIX only (fork/execve).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mantissa::bench {

class ChildProcess {
public:
    // Starts argv[0] (a path) with this process's environment plus `env` (NAME, VALUE), replacing
    // same-named entries. Throws mantissa::Error when it cannot be started.
    ChildProcess(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env);
    ~ChildProcess();  // closes the pipes; kills the child if it is still running, and reaps it
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    bool write_line(const std::string& line);   // false when the child closed its stdin
    std::optional<std::string> read_line();     // without the newline; nullopt at end of output
    std::string read_all();                     // the rest of stdout
    int wait();                                 // exit status; 128 + signal when killed
    std::string stderr_text();                  // what the child wrote to stderr (after wait())

private:
    int m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_buffer;
    bool m_eof = false;
    int m_status = -1;
};

}  // namespace mantissa::bench
