// The run store's schema: its identity (application_id, user_version), the tables' columns as the
// code reads and writes them, and the forward migrations. docs/schema.md documents every table
// and column; change both together, and never change a released version's DDL: add a migration.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mantissa::store {

class Connection;

// PRAGMA application_id of every Mantissa store: 'MANT' in ASCII.
inline constexpr std::int64_t application_id = 0x4D414E54;
// PRAGMA user_version: the schema version this build writes (and the newest it reads).
inline constexpr int schema_version = 9;

// Creates the schema of the current version in an empty database and stamps application_id and
// user_version. The caller holds a write transaction. A new store is built as version 1 and then
// migrated, so new and migrated stores have the same columns in the same order.
void create_schema(Connection& db);

// Migrates from version `from` to `from + 1` and sets user_version. The caller holds a write
// transaction (one per migration) and has made the backup copy.
void migrate_schema(Connection& db, int from);

// The first column this build reads or writes that the store's tables lack, as "column tags of
// table runs"; empty when every one is there. A file that passes the header checks but fails this
// one was not written by Mantissa or is damaged.
std::string missing_column(Connection& db);

// How a column's value is read back and exported (CSV/JSON).
enum class ColumnKind : std::uint8_t {
    integer,
    real,     // NULL stands for NaN (SQLite stores a NaN as NULL)
    boolean,  // 0 or 1
    text,
    json_text,  // text holding a JSON value
    histogram,  // the grad_exponents blob (histogram_codec.h)
    // block_scale_steps.exponents (block_scale_codec.h): exported through the decoded record
    // (export_table.cpp), never as a column of its own.
    block_exponents,
};

struct ColumnSpec {
    const char* name;
    ColumnKind kind;
};

// The per-run tables, without their run_id column, in the order the code binds and reads them.
struct TableSpec {
    const char* name;
    std::span<const ColumnSpec> columns;
    const char* order_by;  // the natural order of a run's rows
};

const TableSpec& steps_table();
const TableSpec& layer_steps_table();
const TableSpec& evals_table();
const TableSpec& events_table();
const TableSpec& layers_table();    // v4: the run's layers, written with its row
const TableSpec& op_steps_table();  // v5: op statistics (attention logits, layer norm variances)
const TableSpec& what_if_steps_table();  // v6: what-if statistics (train.what_if)
const TableSpec& block_scale_steps_table();  // v7: block-scale views (train.block_scales)
const TableSpec& checkpoints_table();        // v8: checkpoint files (run_store.h, CheckpointRow)
// The nine above, in the order of their creation (the order an import copies a run's rows in:
// evals and events before the checkpoints that name their ids).
std::span<const TableSpec* const> all_run_tables();
// steps, layer_steps, evals, events, layers, op_steps, what_if_steps, block_scale_steps or
// checkpoints; nullptr for another name.
const TableSpec* find_run_table(std::string_view name);
inline constexpr const char* run_table_names =
    "steps, layer_steps, evals, events, layers, op_steps, what_if_steps, block_scale_steps, checkpoints";

// The tables a store of schema version `version` has: runs, steps, layer_steps, evals and events
// through version 3, layers too from version 4, op_steps from version 5, what_if_steps from 6,
// block_scale_steps from 7, checkpoints from 8 and sweeps from 9.
std::span<const char* const> store_tables(int version);

// "a, b, c" for a table's columns, and "INSERT INTO t(run_id, a, b, c) VALUES(?, ?, ?, ?)" with
// `rows` rows of parameters (row r's parameters start at r x (columns + 1) + 1).
std::string column_list(const TableSpec& table);
std::string insert_sql(const TableSpec& table, int rows = 1);

}  // namespace mantissa::store
