// The `checkpoints` table (schema version 8; docs/schema.md, "checkpoints"): how a checkpoint's
// file is stored (relative to the store's folder when it lies under it, so a store moved with its
// folder keeps its checkpoints; else absolute), the writer's side (CheckpointWriter, on a
// Recorder's writer thread), reading a run's rows, truncating a run back to one of them
// (RunStore::continue_run), and unlinking files.
//
// The rule every writer here keeps: a file is unlinked only after the transaction that deleted
// the last row naming it has committed. A kill at any moment may leave a file no row names (space
// lost, nothing wrong), never a row naming a file that is gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "store/sqlite_db.h"

namespace mantissa::store {

// The store's folder, absolute and normalised ("/data" for "runs.sqlite" run in /data).
std::string store_folder(const std::string& store_path);
// A checkpoint file as the table stores it: relative to the store's folder when it lies under it
// ("runs.checkpoints/<uuid>/step-500.safetensors"), else absolute.
std::string stored_checkpoint_file(const std::string& store_path, const std::string& file);
// The file of a stored row, absolute.
std::string resolved_checkpoint_file(const std::string& store_path, const std::string& stored);

// Whether `file` (absolute) lies in the folder where this store writes its checkpoints
// (<store folder>/<name>.checkpoints, checkpoint_folder): the only files the store ever unlinks.
// The rows of a run imported from another store, or of a store copied beside the one it came
// from, name that store's files, which that store keeps: removing or pruning such a row leaves its
// file alone.
bool owns_checkpoint_file(const std::string& store_path, const std::string& file);

// Unlinks each file (absolute paths, each one the store owns); a file that is already gone, or
// cannot be removed, is passed over. For after a commit.
void unlink_files(const std::vector<std::string>& files) noexcept;

// Removes checkpoint_folder(store_path, run_uuid) with whatever is in it. Does nothing for a uuid
// that is not plain hex and dashes (a store edited by hand must not name a folder above it).
void remove_checkpoint_folder(const std::string& store_path, const std::string& run_uuid) noexcept;

// The run's checkpoint rows by step, files resolved.
std::vector<CheckpointRow> read_checkpoints(Connection& db, const std::string& store_path, std::int64_t run_id);

// The files the run's rows name, resolved: for remove(), read before its delete.
std::vector<std::string> checkpoint_files(Connection& db, const std::string& store_path, std::int64_t run_id);

// A Recorder's writing of checkpoint rows, on its writer thread inside the batch's transaction.
class CheckpointWriter {
public:
    CheckpointWriter(Connection& db, const std::string& store_path, std::int64_t run_id);

    // The largest events.id and evals.id of the run now (0 when none).
    std::int64_t last_event_id();
    std::int64_t last_eval_id();

    // Inserts (or replaces) the row of `c.step`, then with c.keep > 0 deletes the run's rows
    // beyond the newest `keep`. Adds to `unlink_after_commit` the files no row names any more (a
    // replaced row's other file, the pruned rows' files) that the store owns
    // (owns_checkpoint_file): the caller unlinks them once its
    // transaction has committed, and forgets them when it rolls back.
    void write(const CheckpointRecord& c, std::int64_t events_before, std::int64_t evals_before,
               const std::string& created_at, std::vector<std::string>& unlink_after_commit);

private:
    // Adds `stored` (resolved) when no row of the run names it any more and the store owns it.
    void release(const std::string& stored, std::vector<std::string>& unlink_after_commit);

    std::string m_store_path;
    std::int64_t m_run_id;
    Statement m_last_event, m_last_eval, m_file_at, m_upsert, m_beyond_keep, m_delete, m_named;
};

// RunStore::continue_run's transaction on `db` (which must be writable): checks that the run is
// not being recorded by a living process and has a checkpoint at `step` whose file exists
// (throwing one sentence otherwise), deletes what was recorded after that checkpoint, and sets the
// run running again as recorded by this process. Returns the files of the deleted later
// checkpoints that the store owns, for the caller to unlink now that the transaction has committed.
std::vector<std::string> truncate_to_checkpoint(Connection& db, const std::string& store_path, std::int64_t run_id,
                                                std::int64_t step);

}  // namespace mantissa::store
