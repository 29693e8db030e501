// Reads the current process's identity and judges another's liveness from /proc (Linux); where
// /proc is missing, falls back to kill(pid, 0).
#include "store/process_identity.h"

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace mantissa::store {

namespace {

std::string read_first_line(const std::string& file) {
    std::ifstream in(file);
    std::string line;
    if (in) std::getline(in, line);
    return line;
}

struct ProcStat {
    bool exists = false;
    char state = '?';
    std::int64_t start_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ...". comm may hold spaces and
// parentheses, so fields are counted after the last ')'.
ProcStat read_proc_stat(std::int64_t pid) {
    ProcStat s;
    std::string line = read_first_line("/proc/" + std::to_string(pid) + "/stat");
    auto close = line.rfind(')');
    if (close == std::string::npos) return s;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    for (int index = 3; rest >> field; ++index) {
        if (index == 3) s.state = field.empty() ? '?' : field[0];
        if (index == 22) {
            s.start_ticks = std::strtoll(field.c_str(), nullptr, 10);
            s.exists = true;
            break;
        }
    }
    return s;
}

bool have_proc() {
    return access("/proc/self/stat", R_OK) == 0;
}

}  // namespace

ProcessIdentity current_process() {
    ProcessIdentity id;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) id.host = host;
    id.pid = static_cast<std::int64_t>(getpid());
    id.start_ticks = read_proc_stat(id.pid).start_ticks;
    id.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
    return id;
}

Liveness process_liveness(const ProcessIdentity& recorder) {
    static const ProcessIdentity me = current_process();
    if (recorder.host != me.host) return Liveness::unknown;
    if (!recorder.boot_id.empty() && !me.boot_id.empty() && recorder.boot_id != me.boot_id) return Liveness::gone;
    if (recorder.pid <= 0) return Liveness::gone;
    if (have_proc()) {
        ProcStat s = read_proc_stat(recorder.pid);
        if (!s.exists) return Liveness::gone;
        if (s.state == 'Z' || s.state == 'X') return Liveness::gone;  // killed, not yet reaped
        if (recorder.start_ticks != 0 && s.start_ticks != recorder.start_ticks) return Liveness::gone;
        return Liveness::alive;
    }
    if (kill(static_cast<pid_t>(recorder.pid), 0) == 0 || errno == EPERM) return Liveness::alive;
    return Liveness::gone;
}

}  // namespace mantissa::store
