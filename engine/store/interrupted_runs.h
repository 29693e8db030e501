// Runs left `running` by a process that no longer exists: found on every writable open and marked
// `interrupted`, with a run_interrupted event. Readers, which never write, ask effective_status().
#pragma once

#include <cstdint>
#include <string>

#include "store/process_identity.h"
#include "store/run_store.h"

namespace mantissa::store {

class Connection;

// Marks every dead `running` run interrupted (one transaction; safe when several processes open
// the store at once: a run is marked, and its event added, by exactly one of them). Returns how
// many runs it marked.
int mark_interrupted_runs(Connection& db);

// The status a reader should show: `running` becomes `interrupted` when its recorder is gone.
RunStatus effective_status(RunStatus stored, const ProcessIdentity& recorder);

}  // namespace mantissa::store
