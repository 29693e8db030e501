// The DDL of each schema version and the migrations between them. Version 1 is frozen: a new
// store is created as version 1 and migrated forward, exactly as an old file is, so the migration
// code runs on every new store and the column order never depends on a file's history.
#include "store/schema.h"

#include <array>

#include "store/sqlite_db.h"

namespace mantissa::store {

namespace {

// Schema version 1 (Mantissa 0.0). Never edit: old files were created by it.
const char* const schema_v1 = R"sql(
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid          TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    finished_at   TEXT,
    status        TEXT NOT NULL
                  CHECK (status IN ('running', 'completed', 'stopped', 'failed', 'interrupted')),
    error         TEXT NOT NULL DEFAULT '',
    backend       TEXT NOT NULL DEFAULT '',
    device        TEXT NOT NULL DEFAULT '',
    config_json   TEXT NOT NULL DEFAULT '{}',
    notes         TEXT NOT NULL DEFAULT '',
    app_version   TEXT NOT NULL DEFAULT '',
    host          TEXT NOT NULL DEFAULT '',
    pid           INTEGER NOT NULL DEFAULT 0,
    process_start INTEGER NOT NULL DEFAULT 0,
    boot_id       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_status ON runs(status);

CREATE TABLE steps (
    run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step                INTEGER NOT NULL,
    epoch               INTEGER NOT NULL,
    time_s              REAL,
    loss                REAL,
    loss_scale          REAL,
    overflow            INTEGER NOT NULL,
    skipped             INTEGER NOT NULL,
    grad_norm           REAL,
    learning_rate       REAL,
    samples_per_s       REAL,
    step_time_ms        REAL,
    mem_parameters      INTEGER NOT NULL,
    mem_master_weights  INTEGER NOT NULL,
    mem_gradients       INTEGER NOT NULL,
    mem_optimizer_state INTEGER NOT NULL,
    mem_activations     INTEGER NOT NULL,
    mem_workspace       INTEGER NOT NULL,
    device_mem_in_use   INTEGER NOT NULL,
    device_mem_total    INTEGER NOT NULL,
    memory_modelled     INTEGER NOT NULL,
    PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE layer_steps (
    run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step              INTEGER NOT NULL,
    layer             INTEGER NOT NULL,
    name              TEXT NOT NULL,
    precision         TEXT NOT NULL,
    grad_amax         REAL,
    grad_elements     INTEGER NOT NULL,
    frac_zero         REAL,
    frac_subnormal    REAL,
    frac_nonfinite    REAL,
    frac_underflow    REAL,
    frac_lost_updates REAL,
    PRIMARY KEY (run_id, step, layer)
) WITHOUT ROWID;

CREATE TABLE evals (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step     INTEGER NOT NULL,
    split    TEXT NOT NULL,
    loss     REAL,
    accuracy REAL
);
CREATE INDEX evals_by_run ON evals(run_id, step);

CREATE TABLE events (
    id        INTEGER PRIMARY KEY,
    run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step      INTEGER NOT NULL,
    time_s    REAL,
    kind      TEXT NOT NULL,
    message   TEXT NOT NULL,
    data_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_run ON events(run_id, step);
)sql";

// Version 1 -> 2: tags on runs, a cached step count for fast listing, the layers' gradient
// exponent histograms, and an index for "the last test evaluation".
const char* const migration_1_to_2 = R"sql(
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN step_count INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET step_count = (SELECT count(*) FROM steps WHERE steps.run_id = runs.id);
ALTER TABLE layer_steps ADD COLUMN grad_exponents BLOB;
CREATE INDEX evals_by_split ON evals(run_id, split, step);
)sql";

// Version 2 -> 3: FP8 layers' delayed scaling, per scaled tensor (x, W, dy): the scale after the
// step's update and the step's amax. NULL for other layers, for rows recorded before version 3,
// and where the backend's pipeline ran ahead of the step's report (docs/schema.md).
const char* const migration_2_to_3 = R"sql(
ALTER TABLE layer_steps ADD COLUMN fp8_scale_input REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_scale_weight REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_scale_grad_output REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_input REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_weight REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_grad_output REAL;
)sql";

// Version 3 -> 4: the run's layers with parameters, as the network was built (config/layer_info.h):
// kind and the shape of one sample in and out (channels x height x width; a flat layer is
// features x 1 x 1). Written with the run's row; runs recorded before version 4 have none.
const char* const migration_3_to_4 = R"sql(
CREATE TABLE layers (
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    layer           INTEGER NOT NULL,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    in_channels     INTEGER NOT NULL,
    in_height       INTEGER NOT NULL,
    in_width        INTEGER NOT NULL,
    out_channels    INTEGER NOT NULL,
    out_height      INTEGER NOT NULL,
    out_width       INTEGER NOT NULL,
    parameters      INTEGER NOT NULL,
    takes_precision INTEGER NOT NULL,
    PRIMARY KEY (run_id, layer)
) WITHOUT ROWID;
)sql";

// Version 4 -> 5: the statistics of ops without parameters of their own (config/telemetry.h,
// OpStepRecord), on the steps that measure per-layer statistics: an attention layer's largest
// |logit| (stat logit_amax), a layer norm's smallest row variance (stat min_variance). `op` is
// the op's place in its step's report (the network's order), so rows read back in that order and
// two ops of one name never collide; value is NULL for a NaN. Runs recorded before version 5, and
// models without such ops, have none.
const char* const migration_4_to_5 = R"sql(
CREATE TABLE op_steps (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step   INTEGER NOT NULL,
    op     INTEGER NOT NULL,
    name   TEXT NOT NULL,
    stat   TEXT NOT NULL,
    value  REAL,
    PRIMARY KEY (run_id, step, op)
) WITHOUT ROWID;
)sql";

// Version 5 -> 6: the what-if statistics (config/telemetry.h, WhatIfRecord; docs/numerics.md,
// "What-if statistics"): on the steps that measure per-layer statistics, one row per matmul layer
// and format asked about (train.what_if.formats, `format` its name), with what quantising the
// layer's input x, weight W and output gradient dy to that format does: the fractions of their
// finite non-zero values that underflow to zero and that saturate, the SQNR in dB (+inf exact,
// -inf when a value would overflow to infinity, NULL when there was no signal) and the values
// measured. `slot` is the format's place in the run's list, so a layer's rows read back in that
// order. Runs recorded before version 6, and runs without what-if formats, have none.
const char* const migration_5_to_6 = R"sql(
CREATE TABLE what_if_steps (
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step           INTEGER NOT NULL,
    layer          INTEGER NOT NULL,
    slot           INTEGER NOT NULL,
    format         TEXT NOT NULL,
    name           TEXT NOT NULL,
    x_underflow    REAL,
    x_saturation   REAL,
    x_sqnr_db      REAL,
    x_values       INTEGER NOT NULL,
    w_underflow    REAL,
    w_saturation   REAL,
    w_sqnr_db      REAL,
    w_values       INTEGER NOT NULL,
    dy_underflow   REAL,
    dy_saturation  REAL,
    dy_sqnr_db     REAL,
    dy_values      INTEGER NOT NULL,
    PRIMARY KEY (run_id, step, layer, slot)
) WITHOUT ROWID;
)sql";

// Version 6 -> 7: the block-scale views (config/telemetry.h, BlockScaleRecord; docs/numerics.md,
// "Block-scale views"): on the steps that measure per-layer statistics, one row per matmul layer
// and operand quantised in blocks (slot 0 x, 1 W, 2 dy; `operand` its name), in the block format
// `format` (the matmul's own when `own`, else train.block_scales.format). `exponents` holds the
// power of two of every block's scale, `rows` x `blocks_per_row` of them row-major, as int16
// little-endian compressed with zlib (block_scale_codec.h); `rows` of the tensor's `rows_total`
// rows along the reduction (length `row_length`) when the views keep a sample. A rowid table, not
// WITHOUT ROWID like the others: SQLite advises WITHOUT ROWID for rows well under a twentieth of a
// page, and these run to kilobytes. Runs recorded before version 7, and runs without views, have
// none.
const char* const migration_6_to_7 = R"sql(
CREATE TABLE block_scale_steps (
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step            INTEGER NOT NULL,
    layer           INTEGER NOT NULL,
    slot            INTEGER NOT NULL,
    name            TEXT NOT NULL,
    operand         TEXT NOT NULL,
    format          TEXT NOT NULL,
    own             INTEGER NOT NULL,
    rows_total      INTEGER NOT NULL,
    rows            INTEGER NOT NULL,
    row_length      INTEGER NOT NULL,
    blocks_per_row  INTEGER NOT NULL,
    exponents       BLOB NOT NULL,
    PRIMARY KEY (run_id, step, layer, slot)
);
)sql";

// Version 7 -> 8: checkpoints and branches (config/telemetry.h, CheckpointRecord). `checkpoints`
// lists the checkpoint files of a run, one per step it was written at: `step` steps were taken and
// the run continues with step `step`; `file` is relative to the store's folder when the file lies
// under it (the store and its checkpoints move together), else absolute. events_before and
// evals_before are the largest events.id and evals.id of the run when the row was written (0 when
// none): the events and evaluations handed over before the checkpoint, which RunStore::continue_run
// keeps while it deletes everything after them. A rowid table: its id is the order of writing.
// `runs` gains parent_uuid and parent_step: a branch is a new run started from another run's
// checkpoint at parent_step; both are NULL for a run that is not a branch.
const char* const migration_7_to_8 = R"sql(
CREATE TABLE checkpoints (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step          INTEGER NOT NULL,
    file          TEXT NOT NULL,
    bytes         INTEGER NOT NULL,
    time_s        REAL,
    created_at    TEXT NOT NULL,
    events_before INTEGER NOT NULL,
    evals_before  INTEGER NOT NULL,
    UNIQUE (run_id, step)
);
ALTER TABLE runs ADD COLUMN parent_uuid TEXT;
ALTER TABLE runs ADD COLUMN parent_step INTEGER;
)sql";

// Version 8 -> 9: sweeps (run_store.h, SweepRow). A sweep is a set of runs planned from one
// definition, `spec_json`, which the store keeps as text without reading it; `runs_planned` is
// the size of its plan. `executor` is 'local' or 'slurm'; a Slurm sweep gains its job's id
// (`slurm_job`) when it is submitted and keeps `folder`, the shared folder where each task writes
// a store of its own that is imported later (RunStore::import_store). Runs name their sweep by
// uuid, not id, so a task's store can name a sweep it does not hold and an import needs no
// mapping; `sweep_index` is the run's place in the sweep's plan (from 0), several runs sharing one
// when an index was run again. Both are NULL for a run outside a sweep. The index serves
// RunStore::sweep_runs.
const char* const migration_8_to_9 = R"sql(
CREATE TABLE sweeps (
    id           INTEGER PRIMARY KEY,
    uuid         TEXT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    spec_json    TEXT NOT NULL,
    runs_planned INTEGER NOT NULL,
    executor     TEXT NOT NULL,
    slurm_job    TEXT,
    folder       TEXT
);
ALTER TABLE runs ADD COLUMN sweep_uuid TEXT;
ALTER TABLE runs ADD COLUMN sweep_index INTEGER;
CREATE INDEX runs_by_sweep ON runs(sweep_uuid, sweep_index);
)sql";

constexpr std::array steps_columns = {
    ColumnSpec{"step", ColumnKind::integer},
    ColumnSpec{"epoch", ColumnKind::integer},
    ColumnSpec{"time_s", ColumnKind::real},
    ColumnSpec{"loss", ColumnKind::real},
    ColumnSpec{"loss_scale", ColumnKind::real},
    ColumnSpec{"overflow", ColumnKind::boolean},
    ColumnSpec{"skipped", ColumnKind::boolean},
    ColumnSpec{"grad_norm", ColumnKind::real},
    ColumnSpec{"learning_rate", ColumnKind::real},
    ColumnSpec{"samples_per_s", ColumnKind::real},
    ColumnSpec{"step_time_ms", ColumnKind::real},
    ColumnSpec{"mem_parameters", ColumnKind::integer},
    ColumnSpec{"mem_master_weights", ColumnKind::integer},
    ColumnSpec{"mem_gradients", ColumnKind::integer},
    ColumnSpec{"mem_optimizer_state", ColumnKind::integer},
    ColumnSpec{"mem_activations", ColumnKind::integer},
    ColumnSpec{"mem_workspace", ColumnKind::integer},
    ColumnSpec{"device_mem_in_use", ColumnKind::integer},
    ColumnSpec{"device_mem_total", ColumnKind::integer},
    ColumnSpec{"memory_modelled", ColumnKind::boolean},
};

constexpr std::array layer_steps_columns = {
    ColumnSpec{"step", ColumnKind::integer},
    ColumnSpec{"layer", ColumnKind::integer},
    ColumnSpec{"name", ColumnKind::text},
    ColumnSpec{"precision", ColumnKind::text},
    ColumnSpec{"grad_amax", ColumnKind::real},
    ColumnSpec{"grad_elements", ColumnKind::integer},
    ColumnSpec{"frac_zero", ColumnKind::real},
    ColumnSpec{"frac_subnormal", ColumnKind::real},
    ColumnSpec{"frac_nonfinite", ColumnKind::real},
    ColumnSpec{"frac_underflow", ColumnKind::real},
    ColumnSpec{"frac_lost_updates", ColumnKind::real},
    ColumnSpec{"grad_exponents", ColumnKind::histogram},
    // v3: NULL for non-FP8 layers (a present scale marks an FP8 row; its amax NULL is a NaN).
    ColumnSpec{"fp8_scale_input", ColumnKind::real},
    ColumnSpec{"fp8_scale_weight", ColumnKind::real},
    ColumnSpec{"fp8_scale_grad_output", ColumnKind::real},
    ColumnSpec{"fp8_amax_input", ColumnKind::real},
    ColumnSpec{"fp8_amax_weight", ColumnKind::real},
    ColumnSpec{"fp8_amax_grad_output", ColumnKind::real},
};

constexpr std::array evals_columns = {
    ColumnSpec{"step", ColumnKind::integer},
    ColumnSpec{"split", ColumnKind::text},
    ColumnSpec{"loss", ColumnKind::real},
    ColumnSpec{"accuracy", ColumnKind::real},
};

constexpr std::array events_columns = {
    ColumnSpec{"step", ColumnKind::integer},        ColumnSpec{"time_s", ColumnKind::real},
    ColumnSpec{"kind", ColumnKind::text},           ColumnSpec{"message", ColumnKind::text},
    ColumnSpec{"data_json", ColumnKind::json_text},
};

constexpr std::array layers_columns = {
    ColumnSpec{"layer", ColumnKind::integer},        ColumnSpec{"name", ColumnKind::text},
    ColumnSpec{"kind", ColumnKind::text},            ColumnSpec{"in_channels", ColumnKind::integer},
    ColumnSpec{"in_height", ColumnKind::integer},    ColumnSpec{"in_width", ColumnKind::integer},
    ColumnSpec{"out_channels", ColumnKind::integer}, ColumnSpec{"out_height", ColumnKind::integer},
    ColumnSpec{"out_width", ColumnKind::integer},    ColumnSpec{"parameters", ColumnKind::integer},
    ColumnSpec{"takes_precision", ColumnKind::boolean},
};

constexpr std::array op_steps_columns = {
    ColumnSpec{"step", ColumnKind::integer}, ColumnSpec{"op", ColumnKind::integer},
    ColumnSpec{"name", ColumnKind::text},    ColumnSpec{"stat", ColumnKind::text},
    ColumnSpec{"value", ColumnKind::real},
};

constexpr std::array what_if_steps_columns = {
    ColumnSpec{"step", ColumnKind::integer},         ColumnSpec{"layer", ColumnKind::integer},
    ColumnSpec{"slot", ColumnKind::integer},         ColumnSpec{"format", ColumnKind::text},
    ColumnSpec{"name", ColumnKind::text},
    ColumnSpec{"x_underflow", ColumnKind::real},     ColumnSpec{"x_saturation", ColumnKind::real},
    ColumnSpec{"x_sqnr_db", ColumnKind::real},       ColumnSpec{"x_values", ColumnKind::integer},
    ColumnSpec{"w_underflow", ColumnKind::real},     ColumnSpec{"w_saturation", ColumnKind::real},
    ColumnSpec{"w_sqnr_db", ColumnKind::real},       ColumnSpec{"w_values", ColumnKind::integer},
    ColumnSpec{"dy_underflow", ColumnKind::real},    ColumnSpec{"dy_saturation", ColumnKind::real},
    ColumnSpec{"dy_sqnr_db", ColumnKind::real},      ColumnSpec{"dy_values", ColumnKind::integer},
};

constexpr std::array block_scale_steps_columns = {
    ColumnSpec{"step", ColumnKind::integer},        ColumnSpec{"layer", ColumnKind::integer},
    ColumnSpec{"slot", ColumnKind::integer},        ColumnSpec{"name", ColumnKind::text},
    ColumnSpec{"operand", ColumnKind::text},        ColumnSpec{"format", ColumnKind::text},
    ColumnSpec{"own", ColumnKind::boolean},         ColumnSpec{"rows_total", ColumnKind::integer},
    ColumnSpec{"rows", ColumnKind::integer},        ColumnSpec{"row_length", ColumnKind::integer},
    ColumnSpec{"blocks_per_row", ColumnKind::integer},
    ColumnSpec{"exponents", ColumnKind::block_exponents},
};

// v8: a run's checkpoint files (file as stored: relative to the store's folder, or absolute).
constexpr std::array checkpoints_columns = {
    ColumnSpec{"step", ColumnKind::integer},         ColumnSpec{"file", ColumnKind::text},
    ColumnSpec{"bytes", ColumnKind::integer},        ColumnSpec{"time_s", ColumnKind::real},
    ColumnSpec{"created_at", ColumnKind::text},      ColumnSpec{"events_before", ColumnKind::integer},
    ColumnSpec{"evals_before", ColumnKind::integer},
};

// The columns of `runs` the code reads and writes (run_store.cpp, recorder.cpp, interrupted_runs.cpp).
constexpr std::array runs_columns = {
    "id",      "uuid",   "name",        "created_at",  "updated_at",  "finished_at", "status",      "error",
    "backend", "device", "config_json", "notes",       "app_version", "host",        "pid",         "process_start",
    "boot_id", "tags",   "step_count",  "parent_uuid", "parent_step", "sweep_uuid",  "sweep_index",
};

// v9: the columns of `sweeps` (sweep_rows.cpp).
constexpr std::array sweeps_columns = {
    "id", "uuid", "name", "created_at", "spec_json", "runs_planned", "executor", "slurm_job", "folder",
};

const TableSpec steps_spec{"steps", steps_columns, "step"};
const TableSpec layer_steps_spec{"layer_steps", layer_steps_columns, "step, layer"};
const TableSpec evals_spec{"evals", evals_columns, "step, id"};
const TableSpec events_spec{"events", events_columns, "id"};
const TableSpec layers_spec{"layers", layers_columns, "layer"};
const TableSpec op_steps_spec{"op_steps", op_steps_columns, "step, op"};
const TableSpec what_if_steps_spec{"what_if_steps", what_if_steps_columns, "step, layer, slot"};
const TableSpec block_scale_steps_spec{"block_scale_steps", block_scale_steps_columns, "step, layer, slot"};
const TableSpec checkpoints_spec{"checkpoints", checkpoints_columns, "step"};

// Every per-run table, in the order of their creation.
constexpr std::array<const TableSpec*, 9> run_tables = {
    &steps_spec,         &layer_steps_spec,       &evals_spec,      &events_spec, &layers_spec, &op_steps_spec,
    &what_if_steps_spec, &block_scale_steps_spec, &checkpoints_spec};

// The tables of each version: version 1's five, `layers` from version 4, `op_steps` from version 5,
// `what_if_steps` from version 6, `block_scale_steps` from version 7, `checkpoints` from version 8,
// `sweeps` from version 9.
constexpr std::array<const char*, 11> table_names = {
    "runs",     "steps",         "layer_steps",       "evals",       "events", "layers",
    "op_steps", "what_if_steps", "block_scale_steps", "checkpoints", "sweeps"};

}  // namespace

const TableSpec& steps_table() {
    return steps_spec;
}
const TableSpec& layer_steps_table() {
    return layer_steps_spec;
}
const TableSpec& evals_table() {
    return evals_spec;
}
const TableSpec& events_table() {
    return events_spec;
}

const TableSpec& layers_table() {
    return layers_spec;
}

const TableSpec& op_steps_table() {
    return op_steps_spec;
}

const TableSpec& what_if_steps_table() {
    return what_if_steps_spec;
}

const TableSpec& block_scale_steps_table() {
    return block_scale_steps_spec;
}

const TableSpec& checkpoints_table() {
    return checkpoints_spec;
}

std::span<const TableSpec* const> all_run_tables() {
    return run_tables;
}

const TableSpec* find_run_table(std::string_view name) {
    for (const TableSpec* t : run_tables)
        if (name == t->name) return t;
    return nullptr;
}

std::span<const char* const> store_tables(int version) {
    return std::span(table_names)
        .first(version >= 9   ? 11
               : version >= 8 ? 10
               : version >= 7 ? 9
               : version >= 6 ? 8
               : version >= 5 ? 7
               : version >= 4 ? 6
                              : 5);
}

std::string missing_column(Connection& db) {
    Statement q(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2");
    auto has = [&](const char* table, const char* column) {
        q.bind(1, table).bind(2, column);
        q.step();
        const bool found = q.column_int(0) > 0;
        q.reset();
        return found;
    };
    auto missing = [](const char* table, const char* column) {
        return std::string("column ") + column + " of table " + table;
    };
    for (const char* c : runs_columns)
        if (!has("runs", c)) return missing("runs", c);
    for (const TableSpec* t : run_tables) {
        if (!has(t->name, "run_id")) return missing(t->name, "run_id");
        for (const auto& c : t->columns)
            if (!has(t->name, c.name)) return missing(t->name, c.name);
    }
    for (const char* table : {"evals", "events", "checkpoints"})
        if (!has(table, "id")) return missing(table, "id");
    for (const char* c : sweeps_columns)
        if (!has("sweeps", c)) return missing("sweeps", c);
    return {};
}

std::string column_list(const TableSpec& table) {
    std::string s;
    for (const auto& c : table.columns) {
        if (!s.empty()) s += ", ";
        s += c.name;
    }
    return s;
}

std::string insert_sql(const TableSpec& table, int rows) {
    std::string row = "(?";
    for (std::size_t i = 0; i < table.columns.size(); ++i) row += ", ?";
    row += ")";
    std::string sql = std::string("INSERT INTO ") + table.name + "(run_id, " + column_list(table) + ") VALUES" + row;
    for (int r = 1; r < rows; ++r) sql += "," + row;
    return sql;
}

void create_schema(Connection& db) {
    db.exec(schema_v1, "creating the tables");
    db.exec("PRAGMA application_id = " + std::to_string(application_id), "stamping the application id");
    db.exec("PRAGMA user_version = 1", "setting the schema version");
    for (int v = 1; v < schema_version; ++v) migrate_schema(db, v);
}

void migrate_schema(Connection& db, int from) {
    switch (from) {
        case 1: db.exec(migration_1_to_2, "migrating the schema from version 1 to 2"); break;
        case 2: db.exec(migration_2_to_3, "migrating the schema from version 2 to 3"); break;
        case 3: db.exec(migration_3_to_4, "migrating the schema from version 3 to 4"); break;
        case 4: db.exec(migration_4_to_5, "migrating the schema from version 4 to 5"); break;
        case 5: db.exec(migration_5_to_6, "migrating the schema from version 5 to 6"); break;
        case 6: db.exec(migration_6_to_7, "migrating the schema from version 6 to 7"); break;
        case 7: db.exec(migration_7_to_8, "migrating the schema from version 7 to 8"); break;
        case 8: db.exec(migration_8_to_9, "migrating the schema from version 8 to 9"); break;
        default: throw Error("No migration from run store schema version " + std::to_string(from) + " in this build.");
    }
    db.exec("PRAGMA user_version = " + std::to_string(from + 1), "setting the schema version");
}

}  // namespace mantissa::store
