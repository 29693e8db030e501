// Passive OpenMP waits for both faces of Mantissa (mantissa-cli and mantissa): the first thing
// each main() does.
//
// The CPU backend's oneDNN runs on OpenMP (libgomp), whose workers spin after each parallel
// region, waiting for the next, unless OMP_WAIT_POLICY=passive. Spinning workers take the cores
// that the training thread's batch prefetcher (engine/data/train_batches.h), the recorder's
// writer and the GUI need, and on a machine with fewer free cores than threads a step then costs
// many times what it costs on one thread (engine/backend/cpu/cpu_matmul.h). libgomp reads the
// policy once, when it is loaded, before main() runs, so it cannot be changed from inside: when
// the variable is unset, it is set to passive and the program executes itself again, with the same
// arguments and the same process id (so signals, a parent's wait and the run store's record of the
// recording process still hold). A policy set by the person who started the program is kept. If the
// program cannot be executed again, it carries on as it was, with spinning workers.
//
// Passive, but not at once: a worker still spins GOMP_SPINCOUNT = 30000 rounds (about 0.3 ms by
// libgomp's own estimate) before it sleeps, unless the variable is set. A training step runs dozens
// of parallel regions back to back, and waking a sleeping worker for each costs more than the work
// of many: on 2 cores, 784-1024-1024-10 at batch 256 in fp32, 2 threads ran 1.66-1.69x one thread
// with no spin, 1.8-2.1x with 30000 and 1.9-2.2x spinning without end (interleaved runs; the
// spread is this shared machine's). 0.3 ms is short next to a step and to the GUI's frame.
//
// Header-only, plain C++ and POSIX (no Qt, nothing that must not run twice); Linux's /proc.
#pragma once

#include <climits>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace mantissa::app {

// Call first in main(), before anything starts a thread or writes output. Returns only when the
// policy is already set or the program could not be executed again.
inline void make_openmp_waits_passive(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || !argv || !argv[0]) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    if (!std::getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "30000", 1);
    // The file /proc/self/exe names: executing the link itself would rename the process "exe" in
    // ps, top and pgrep (the kernel names a process after the path it executes). The link when the
    // file is gone (replaced by a rebuild since this process started).
    static const char deleted[] = " (deleted)";
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    const auto length = static_cast<std::size_t>(n);
    const bool named = n > 0 && length < sizeof path - 1 &&
                       !(length >= sizeof deleted - 1 &&
                         std::memcmp(path + length - (sizeof deleted - 1), deleted, sizeof deleted - 1) == 0);
    if (named) {
        path[length] = '\0';
        execv(path, argv);
    }
    execv("/proc/self/exe", argv);
    // Neither could be executed: libgomp keeps the policy it read at load time; the variable now
    // set only passes passive waits on to the processes this one starts.
}

}  // namespace mantissa::app
