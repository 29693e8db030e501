// RunStore: every run in one SQLite file (a public format: docs/schema.md).
//
// Threads: a RunStore's reading and editing methods are for the thread that made it. A Recorder,
// made by start_run(), owns its own connection on its own writer thread; it is a TelemetrySink, so
// the training thread hands it rows and returns, and the writer commits a batch about every
// 100 ms. It never drops a row: when it falls a bound behind, the training thread waits and an
// event says so.
//
// A store opened read-only (asked for, or because the file or its folder is not writable) never
// writes: it does not mark dead runs `interrupted` in the file, but reports them so (status) all
// the same. The file format, its bad-file sentences and its migrations: docs/schema.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/layer_info.h"
#include "config/telemetry.h"

namespace mantissa {

enum class RunStatus : std::uint8_t { running, completed, stopped, failed, interrupted };
const char* run_status_name(RunStatus s);

// The store the GUI and the CLI share: $XDG_DATA_HOME/mantissa/runs.sqlite, or
// ~/.local/share/mantissa/runs.sqlite when XDG_DATA_HOME is unset or empty.
std::string default_store_path();

struct RunInfo {  // what a run is started with
    std::string name;
    std::string backend;  // "cpu", "cuda"
    std::string device;
    std::string config_json;  // the full experiment, as experiment_to_json prints it
    // The network's layers with parameters, in order (Session::layers()); written with the run's
    // row in one transaction (the `layers` table, schema version 4). Each needs a name and a kind,
    // and no negative size; in_features and out_features are not stored (the shapes' numel()).
    std::vector<LayerInfo> layers = {};
    // A branch (schema version 8): the run it starts from and the checkpoint step it starts at
    // (`runs.parent_uuid`, `runs.parent_step`). Both given, or neither (empty, nullopt: not a
    // branch); the parent may be a run of another store.
    std::string parent_uuid = {};
    std::optional<std::int64_t> parent_step = {};
    // A run of a sweep (schema version 9): the sweep's uuid and the run's place in its plan, from 0
    // (`runs.sweep_uuid`, `runs.sweep_index`). Both given, or neither (empty, nullopt: not in a
    // sweep); the sweep may be one of another store (a Slurm task's store names its main store's).
    std::string sweep_uuid = {};
    std::optional<std::int64_t> sweep_index = {};
};

struct RunRow {  // one line of `mantissa-cli runs`
    std::int64_t id = 0;
    std::string uuid;
    std::string name;
    std::string created_at;   // ISO 8601, UTC
    std::string finished_at;  // empty while running
    RunStatus status = RunStatus::running;
    std::string backend;
    std::string device;
    std::string config_json;
    std::string notes;
    std::string tags;  // comma-separated
    std::string app_version;
    std::int64_t steps = 0;  // rows in `steps`
    std::optional<double> final_loss;
    std::optional<double> test_accuracy;
    std::optional<double> test_loss;
    // Added with the run store (schema version 2):
    std::string error;       // why the run failed (status failed), else empty
    std::string updated_at;  // when the recorder last committed rows (ISO 8601, UTC)
    std::string host;        // the machine and process that recorded it
    std::int64_t pid = 0;
    // Added with checkpoints (schema version 8): for a branch, the run it started from and the
    // step of that run's checkpoint; empty and nullopt for a run that is not a branch.
    std::string parent_uuid;
    std::optional<std::int64_t> parent_step;
    // Added with sweeps (schema version 9): the run's sweep and its place in the sweep's plan;
    // empty and nullopt for a run outside a sweep.
    std::string sweep_uuid;
    std::optional<std::int64_t> sweep_index;
};

// What a sweep is created with (schema version 9; docs/schema.md, "sweeps").
struct SweepInfo {
    std::string name;
    std::string spec_json;  // the sweep's definition: JSON text the store keeps without reading it
    std::int64_t runs_planned = 0;
    std::string executor = "local";  // "local" or "slurm"
};

// One row of `sweeps`.
struct SweepRow {
    std::int64_t id = 0;
    std::string uuid, name, created_at, spec_json;  // created_at: ISO 8601, UTC
    std::int64_t runs_planned = 0;
    std::string executor, slurm_job, folder;  // slurm_job and folder empty when NULL
};

// What RunStore::import_store copied: runs added, runs it had already (by uuid), sweeps added.
struct ImportResult {
    std::int64_t runs_added = 0, runs_skipped = 0, sweeps_added = 0;
};

// One row of `checkpoints` (schema version 8): a checkpoint file of a run, written after `step`
// steps (the run continues with step `step`).
struct CheckpointRow {
    std::int64_t id = 0, run_id = 0, step = 0;
    std::string file;  // absolute (the store keeps it relative to its folder when it lies under it)
    std::int64_t bytes = 0;
    std::optional<double> time_s;  // the run's training time at the checkpoint
    std::string created_at;        // ISO 8601, UTC
    // The largest events.id and evals.id of the run when the row was written (0 when none): what
    // was handed over before the checkpoint.
    std::int64_t events_before = 0, evals_before = 0;
};

// Where the checkpoint files of the run `run_uuid` of the store `store_path` go:
// <the store's folder>/<its file name without ".sqlite">.checkpoints/<run_uuid>, as an absolute
// path ("/data/runs.checkpoints/3f2a..."). Only names it: the engine creates it when it writes.
std::string checkpoint_folder(const std::string& store_path, const std::string& run_uuid);

// Totals over a run's steps, for `mantissa-cli show` and the GUI's run summary.
struct RunTotals {
    std::int64_t steps = 0;
    std::int64_t overflow_steps = 0;
    std::int64_t skipped_steps = 0;
    std::optional<double> final_loss_scale;    // the last step's
    std::optional<double> elapsed_s;           // the last step's time_s: the run's training time
    // The rows the steps trained, each step's recovered exactly from its samples_per_s and
    // step_time_ms (config/throughput.h, step_rows), or the experiment's train.batch_size for a step
    // that was not timed. Empty when a step's rows cannot be known (no batch size either).
    std::optional<std::int64_t> samples;
    // samples/s (mean over the run): samples / elapsed_s (config/throughput.h, run_samples_per_s),
    // the figure the CLI's summary gives. Empty with no steps or no samples.
    std::optional<double> samples_per_s;
    std::int64_t peak_memory_bytes = 0;        // the largest MemoryBreakdown::total() of a step
    std::int64_t layer_rows = 0, evals = 0, events = 0;
    std::int64_t op_rows = 0;  // rows in op_steps (schema version 5; 0 for a model without such ops)
    std::int64_t what_if_rows = 0;  // rows in what_if_steps (schema version 6)
    std::int64_t block_scale_rows = 0;  // rows in block_scale_steps (schema version 7)
};

// How a Recorder batches and waits. The defaults are what training uses; tests shrink them.
struct RecorderOptions {
    std::size_t queue_bound_rows = 100000;  // queued rows (steps + layer rows + op rows + evals + events;
                                            // a block-scale row counts one per 64 exponents)
                                            // beyond which the training thread waits
    int commit_interval_ms = 100;           // the writer commits at least this often when rows wait
    std::int64_t max_page_count = 0;        // > 0: caps the file (PRAGMA max_page_count), which
                                            // makes writes fail as on a full disk: for tests
};

class Recorder;

// How a RunStore opens its file.
enum class StoreAccess : std::uint8_t {
    write,      // creates the store when absent and migrates an older file (with a backup copy)
    read,       // for commands that only read (runs, show, export): as write, but a missing store is
                // reported, not created (an older file is still migrated, with its backup copy, so
                // `runs` works after an upgrade)
    read_only,  // never writes
};

class RunStore {
public:
    // Opens (creating when absent, with its folder) and migrates the store; marks runs left
    // `running` by dead processes `interrupted`. read_only opens without writing (also the
    // fallback when the file or folder is not writable). Throws mantissa::Error with one sentence:
    // not a Mantissa store, corrupt, lacking a column, from a newer version, cannot be created.
    explicit RunStore(const std::string& path, bool read_only = false);
    RunStore(const std::string& path, StoreAccess access);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    const std::string& path() const;
    bool read_only() const;
    // When this open migrated an older file: the version it had (else 0) and the backup copy made
    // before migrating ("runs.sqlite.bak-v1").
    int migrated_from() const;
    const std::string& backup_path() const;

    // Starts recording a run (status running); the Recorder writes from its own thread.
    std::shared_ptr<Recorder> start_run(const RunInfo& info);
    std::shared_ptr<Recorder> start_run(const RunInfo& info, const RecorderOptions& options);
    // The same run, continued from its checkpoint at `step`: in one transaction, deletes what the
    // run recorded after that checkpoint (its rows of steps, layer_steps, op_steps, what_if_steps
    // and block_scale_steps at `step` or later, the evals and events after the checkpoint's
    // evals_before and events_before, its later checkpoints) and sets it running again, recorded by
    // this process; after the commit, unlinks the later checkpoints' files. The Recorder appends
    // from `step` on. Refuses with one sentence (Error): a read-only store, a run whose recording
    // process still lives, a run without a checkpoint at `step`.
    std::shared_ptr<Recorder> continue_run(std::int64_t run_id, std::int64_t step, const RecorderOptions& options = {});

    std::vector<RunRow> list_runs();
    RunRow run(std::int64_t id);
    // An id ("12") or a unique name prefix; throws naming the ambiguity or the absence.
    std::int64_t resolve(const std::string& id_or_prefix);

    std::vector<StepRecord> steps(std::int64_t run_id, std::int64_t from_step = 0);
    std::vector<LayerStepRecord> layer_steps(std::int64_t run_id, std::int64_t from_step = 0);
    std::vector<EvalRecord> evals(std::int64_t run_id);
    std::vector<Event> events(std::int64_t run_id);
    // For live following: only rows at or after from_step (events of one step may arrive in two
    // batches, so a follower re-reads its last step and keeps what it has not seen).
    std::vector<EvalRecord> evals(std::int64_t run_id, std::int64_t from_step);
    std::vector<Event> events(std::int64_t run_id, std::int64_t from_step);
    RunTotals totals(std::int64_t run_id);
    // The run's layers as start_run() recorded them, in order (in_features and out_features are
    // the shapes' numel()); empty for a run recorded before schema version 4, which kept none.
    std::vector<LayerInfo> layers(std::int64_t run_id);
    // The run's op statistics (OpStepRecord: attention logits' amax, layer norms' smallest
    // variance) at or after from_step, in step order and within a step in the order the session
    // reported them (the network's); a NaN reads back as NaN, an infinity as itself. Empty for a
    // run recorded before schema version 5 and for a model without such ops. store/op_summary.h
    // summarises them per op.
    std::vector<OpStepRecord> op_steps(std::int64_t run_id, std::int64_t from_step = 0);
    // The run's what-if statistics at or after from_step, by step, then layer, then format in the
    // order the run listed them; NULL SQNRs read back as NaN. Empty for a run recorded before
    // schema version 6 or without what-if formats.
    std::vector<WhatIfRecord> what_if_steps(std::int64_t run_id, std::int64_t from_step = 0);
    // The run's block-scale views at or after from_step, by step, then layer, then operand (x, W,
    // dy). Empty for a run recorded before schema version 7 or without views. A row that is not
    // sound (its exponents damaged or not the size its rows and blocks say, an operand or format
    // this build does not know) throws Error naming it (store/block_scale_codec.h).
    std::vector<BlockScaleRecord> block_scale_steps(std::int64_t run_id, std::int64_t from_step = 0);
    // The last step that has block-scale views; empty when none has. (A run's views are large:
    // `show` reads this step's alone.)
    std::optional<std::int64_t> last_block_scale_step(std::int64_t run_id);
    // The run's checkpoints, by step, each file an absolute path. Empty for a run without, and for
    // a run recorded before schema version 8.
    std::vector<CheckpointRow> checkpoints(std::int64_t run_id);

    // Sweeps (schema version 9). create_sweep gives the sweep a new uuid and this moment as
    // created_at; it refuses, with one sentence, a read-only store, a name that fails
    // store/run_text.h's checks, a negative runs_planned and an executor other than "local" and
    // "slurm" (an empty spec_json is kept as "{}").
    SweepRow create_sweep(const SweepInfo& info);
    std::vector<SweepRow> list_sweeps();  // newest first (created_at, then id)
    SweepRow sweep(std::int64_t id);      // throws a sentence when there is no such sweep
    // An id ("3"), or the start of a sweep's name or uuid, as resolve() does for runs: throws
    // naming the ambiguity or the absence.
    std::int64_t resolve_sweep(const std::string& id_or_prefix);
    // A Slurm sweep once submitted: its job's id, and the shared folder its tasks' stores are
    // written to (kept absolute). An empty string stores NULL.
    void set_sweep_slurm(std::int64_t id, const std::string& job, const std::string& folder);
    // The runs naming the sweep's uuid, by sweep_index, then id (a run of an index run again
    // comes after the earlier one). Throws when there is no such sweep.
    std::vector<RunRow> sweep_runs(std::int64_t sweep_id);
    // Deletes the sweep's row only: its runs stay, still naming its uuid.
    void remove_sweep(std::int64_t id);

    // Copies into this store, in one transaction, every sweep and every run of the store at
    // `other_path` whose uuid this store does not have, with all of each run's rows (run ids
    // mapped; a checkpoint's file resolved against the other store's folder, so it still names
    // the file where it lies, and stored as this store stores files); runs it has already are
    // counted as skipped, so importing a store twice adds nothing. The other store is opened
    // read-only and never written: an older version is read as it is, without migrating it. A run
    // still `running` there is imported as its store reports it: `interrupted` (with its
    // run_interrupted event) when its recording process is gone. Refuses with one sentence, this
    // store unchanged: a read-only store, the store itself, another store that cannot be read
    // (missing, not a run store, from a newer version, damaged).
    ImportResult import_store(const std::string& other_path);

    // Editing (a read-only store throws). remove() deletes the run and all its rows, and after that
    // commits its checkpoint files and folder (checkpoint_folder); it refuses a run whose recording
    // process still lives (stop it first). Checkpoint files another store owns (an imported run's,
    // a copied store's: store/checkpoint_rows.h, owns_checkpoint_file) are left where they are and
    // returned. Names, notes and tags (and a new
    // run's name) must pass store/run_text.h's checks (UTF-8, no control characters, a length).
    std::vector<std::string> remove(std::int64_t run_id);
    void rename(std::int64_t run_id, const std::string& name);
    void set_notes(std::int64_t run_id, const std::string& notes);
    void set_tags(std::int64_t run_id, const std::string& tags);

    // CSV or JSON of one table of a run (the code behind `mantissa-cli export` and the GUI).
    enum class ExportFormat { csv, json };
    std::string export_table(std::int64_t run_id, const std::string& table, ExportFormat format);
    // The same, streamed (a large run need not fit in a string). Tables: steps, layer_steps,
    // evals, events, layers, op_steps, what_if_steps, block_scale_steps (a row per view: its
    // distribution and its exponents as text, not the blob), checkpoints (the file as stored).
    // CSV: a header row, RFC 4180 quoting, CRLF line ends. JSON: an array of objects, one per
    // line. docs/schema.md, "Exports", gives the value formats.
    void export_table(std::int64_t run_id, const std::string& table, ExportFormat format, std::ostream& out);
    static std::optional<ExportFormat> parse_export_format(const std::string& name);  // "csv", "json"

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// Thread use: the on_* methods from the training thread (one producer at a time); finish() and
// error() from any thread. Rows handed in after finish() are ignored, and so are rows
// after a write error (error() then says why recording stopped).
class Recorder : public TelemetrySink {
public:
    ~Recorder() override;  // finishes as `stopped` if finish() was not called
    std::int64_t run_id() const;
    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) override;
    void on_eval(const EvalRecord& eval) override;
    void on_event(const Event& event) override;
    // Queued like a step's layer rows (the same bound and wait); each row's `op` column is its
    // place in `ops`.
    void on_op_steps(const std::vector<OpStepRecord>& ops) override;
    // Queued like op rows: one row per (layer, format).
    void on_what_if(const std::vector<WhatIfRecord>& rows) override;
    // Queued like op rows: one row per (layer, operand), weighed against the bound by its size
    // (RecorderOptions), its exponents compressed by the writer. Throws Error, queueing none of
    // `rows`, when a record's exponents are not rows x blocks_per_row or its rows exceed rows_total.
    void on_block_scales(const std::vector<BlockScaleRecord>& rows) override;
    // Queued in order with the other rows (it counts one against the bound). The writer inserts
    // the `checkpoints` row in the transaction that commits the rows handed over before it, so its
    // events_before and evals_before cover exactly those; a row of the same step is replaced. With
    // keep > 0 the same transaction deletes the run's older rows beyond the newest `keep` (by
    // step), and only after it commits are their files unlinked: no row ever names a file that
    // was deleted.
    void on_checkpoint(const CheckpointRecord& checkpoint) override;
    // Flushes every queued row, sets the final status (and the error, for failed), joins the writer.
    void finish(RunStatus status, const std::string& error = {});
    // Non-empty when the writer hit an error (disk full): recording stopped, data so far kept.
    std::string error() const;

private:
    friend class RunStore;
    struct Impl;
    explicit Recorder(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa
