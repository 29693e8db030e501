// The `sweeps` table (schema version 9; docs/schema.md, "sweeps"): creating, reading, resolving,
// updating and deleting a sweep's row, and the check on a run's sweep columns. A sweep's runs
// name it by uuid (runs.sweep_uuid), never by id: a Slurm task's store names a sweep of the main
// store, and an import copies runs and sweeps without mapping anything between them. So deleting
// a sweep's row leaves its runs as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "store/sqlite_db.h"

namespace mantissa::store {

// Throws one sentence when `info` may not be stored (store/run_text.h's checks on the name, a
// negative runs_planned, an executor other than local and slurm); else inserts the row with a new
// uuid and returns it.
SweepRow insert_sweep(Connection& db, const SweepInfo& info);

std::vector<SweepRow> read_sweeps(Connection& db);  // newest first
std::optional<SweepRow> read_sweep(Connection& db, std::int64_t id);

// RunStore::resolve_sweep: an id, else the one sweep whose name or uuid starts with the text (a
// name equal to it wins among several); one sentence naming `store_path` otherwise.
std::int64_t resolve_sweep(Connection& db, const std::string& store_path, const std::string& id_or_prefix);

// False when there is no sweep `id`.
bool update_sweep_slurm(Connection& db, std::int64_t id, const std::string& job, const std::string& folder);
bool delete_sweep(Connection& db, std::int64_t id);

// start_run's check of RunInfo's sweep columns: both or neither, the index not negative.
void check_sweep_columns(const std::string& sweep_uuid, const std::optional<std::int64_t>& sweep_index);

}  // namespace mantissa::store
