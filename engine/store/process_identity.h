// Who is recording a run: enough to tell, later and from another process, whether that recorder
// still lives. A pid alone is not enough (pids are reused), so the runs row also keeps the
// process's start time (clock ticks after boot, field 22 of /proc/PID/stat), the kernel's boot id
// (a reboot ends every process) and the host name (a store on a shared folder may be written from
// another machine, whose processes this one cannot see).
#pragma once

#include <cstdint>
#include <string>

namespace mantissa::store {

struct ProcessIdentity {
    std::string host;
    std::int64_t pid = 0;
    std::int64_t start_ticks = 0;  // 0 when unknown
    std::string boot_id;           // empty when unknown
};

ProcessIdentity current_process();

enum class Liveness {
    alive,    // the same process still runs
    gone,     // it has ended (or the machine rebooted): its run was interrupted
    unknown,  // another host: cannot tell, so leave the run as it is
};
Liveness process_liveness(const ProcessIdentity& recorder);

}  // namespace mantissa::store
