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

// Marks the run `run_id` interrupted if it is still `running` in the file: finished_at becomes its
// updated_at, and a run_interrupted event naming `recorder` is added at its last recorded step,
// its message ending "it was marked interrupted " + `when` ("when the store was next opened").
// The caller holds a write transaction. False when the run was not running (another process
// marked it first).
bool mark_interrupted(Connection& db, std::int64_t run_id, const ProcessIdentity& recorder, const std::string& when);

// The status a reader should show: `running` becomes `interrupted` when its recorder is gone.
RunStatus effective_status(RunStatus stored, const ProcessIdentity& recorder);

}  // namespace mantissa::store
