// Importing another store's sweeps and runs; see store_import.h.
#include "store/store_import.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "store/checkpoint_rows.h"
#include "store/interrupted_runs.h"
#include "store/process_identity.h"
#include "store/schema.h"
#include "store/store_open.h"
#include "store/store_util.h"

namespace mantissa::store {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> columns_of(Connection& db, const std::string& table) {
    Statement q(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid");
    q.bind(1, table);
    std::vector<std::string> out;
    while (q.step()) out.push_back(q.column_text(0));
    return out;
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

std::string placeholders(std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
    return s;
}

// Old id -> new id of a run's evals or events, in increasing order of both (rows are copied in id
// order, and this store numbers them upwards).
using IdMap = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The new id of the last row whose old id is at most `before` (0 when none): what a checkpoint's
// events_before or evals_before becomes.
std::int64_t mapped_before(const IdMap& ids, std::int64_t before) {
    const auto it =
        std::upper_bound(ids.begin(), ids.end(), before,
                         [](std::int64_t v, const std::pair<std::int64_t, std::int64_t>& p) { return v < p.first; });
    return it == ids.begin() ? 0 : std::prev(it)->second;
}

// Binds a copied column itself and returns true, or returns false to copy it as it is:
// hook(insert, parameter, column name, the other store's row, its column).
using ColumnHook = std::function<bool(Statement&, int, const std::string&, const Statement&, int)>;

// The columns of `table` this store has and the other store has too, but `id` (which this store
// numbers) and run_id (which the copy binds, mapped), in this store's order.
std::vector<std::string> shared_columns(Connection& from, Connection& to, const std::string& table) {
    const std::vector<std::string> theirs = columns_of(from, table);
    const std::set<std::string> there(theirs.begin(), theirs.end());
    std::vector<std::string> out;
    for (const std::string& c : columns_of(to, table))
        if (c != "id" && c != "run_id" && there.count(c)) out.push_back(c);
    return out;
}

// A table's rows copied from the other store to this one. Every row is read as its id (NULL for a
// table without one) and then the shared columns.
class TableCopy {
public:
    // `where`: the other store's rows to copy (its parameter, when it has one, the run's old id);
    // `order`: the order to copy them in (by id where rows have one, so ids map in order).
    TableCopy(Connection& from, Connection& to, const std::string& table, const std::string& where,
              const std::string& order, bool per_run)
        : m_to(to),
          m_per_run(per_run),
          m_columns(shared_columns(from, to, table)),
          m_select(from, "SELECT " + std::string(has_column(from, table, "id") ? "id" : "NULL") +
                             (m_columns.empty() ? "" : ", ") + joined(m_columns) + " FROM " + table +
                             (where.empty() ? "" : " WHERE " + where) + " ORDER BY " + order),
          m_insert(to, "INSERT INTO " + table + "(" + (per_run ? std::string("run_id") : std::string()) +
                           (per_run && !m_columns.empty() ? ", " : "") + joined(m_columns) + ") VALUES(" +
                           placeholders(m_columns.size() + (per_run ? 1 : 0)) + ")") {}

    Statement& select() { return m_select; }

    // The column of a row read that holds `name` (1 and up), or -1 when it is not copied.
    int column(const std::string& name) const {
        const auto it = std::find(m_columns.begin(), m_columns.end(), name);
        return it == m_columns.end() ? -1 : static_cast<int>(it - m_columns.begin()) + 1;
    }

    // Inserts the row select() stands on (as a row of the run `run_id` for a per-run table);
    // returns its new rowid.
    std::int64_t insert_current(std::int64_t run_id, const ColumnHook& hook = {}) {
        int p = 1;
        if (m_per_run) m_insert.bind(p++, run_id);
        for (std::size_t i = 0; i < m_columns.size(); ++i, ++p) {
            const int col = static_cast<int>(i) + 1;
            if (!hook || !hook(m_insert, p, m_columns[i], m_select, col)) m_insert.bind_column(p, m_select, col);
        }
        m_insert.run();
        return m_to.last_insert_rowid();
    }

    // Copies every row of the run `old_run` as rows of `new_run`; with `ids`, records each row's
    // old and new id.
    void copy_run(std::int64_t old_run, std::int64_t new_run, IdMap* ids, const ColumnHook& hook = {}) {
        m_select.reset();
        m_select.bind(1, old_run);
        while (m_select.step()) {
            const std::int64_t id = insert_current(new_run, hook);
            if (ids && !m_select.column_is_null(0)) ids->emplace_back(m_select.column_int(0), id);
        }
        m_select.reset();
    }

private:
    static bool has_column(Connection& db, const std::string& table, const std::string& name) {
        const std::vector<std::string> all = columns_of(db, table);
        return std::find(all.begin(), all.end(), name) != all.end();
    }

    Connection& m_to;
    bool m_per_run;
    std::vector<std::string> m_columns;
    Statement m_select, m_insert;
};

// The column of `copy` that holds `name`; the other store's damage when its table lacks it (a
// file stamped as a store that Mantissa did not write, or damaged).
int required_column(const TableCopy& copy, const std::string& path, const std::string& table, const std::string& name) {
    const int c = copy.column(name);
    if (c < 0) {
        const std::string missing = "column " + name + " of table " + table;
        throw DamagedStoreError(
            path, missing + " is missing",
            "The run store '" + path + "' is missing " + missing + "; it was not written by Mantissa or is damaged.");
    }
    return c;
}

// What `e` puts in brackets when it says the store at `path` is damaged: a DamagedStoreError or
// SQLite's SQLITE_CORRUPT (sqlite_db.h) about that file; nullopt for any other error, and for
// damage of another file.
std::optional<std::string> damage_of(const Error& e, const std::string& path) {
    if (const auto* d = dynamic_cast<const DamagedStoreError*>(&e); d && d->path() == path) return d->reason();
    if (const auto* s = dynamic_cast<const SqliteError*>(&e); s && s->code() == SQLITE_CORRUPT && s->path() == path)
        return s->reason();
    return std::nullopt;
}

// The sentence for the other store found damaged, while opening or copying it. A damaged store's
// own sentence (damaged_store_sentence) speaks to the person recording to it: restore a backup or
// start a new store there. The other store is only read, never started or mended, so the advice
// is another copy of it to import from.
// A DamagedStoreError itself, so that one thrown while reopening the store (import_store's retry)
// passes through the outer catch with this sentence, not wrapped in a second one.
DamagedStoreError damaged_other_store(const std::string& path, const std::string& reason) {
    return DamagedStoreError(path, reason,
                             "Nothing was imported from '" + path + "': it is damaged (" + reason +
                                 ") and was left unchanged; import from a backup or another copy of it.");
}

bool has_uuid(Statement& q, const std::string& uuid) {
    q.reset();
    q.bind(1, uuid);
    const bool found = q.step();
    q.reset();
    return found;
}

// Thrown by copy_store, before it commits, when the other store was read as "immutable" and was
// written meanwhile: what was read may mix two states of it, so the copy is rolled back and made
// again through an ordinary read-only connection.
struct WrittenWhileRead {};

// The copy itself: one snapshot of the other store (a read transaction) copied in one write
// transaction of this one, which rolls back when anything throws.
ImportResult copy_store(OtherStore& other, const std::string& other_path, Connection& db,
                        const std::string& store_path) {
    Connection& from = other.connection;
    const auto tables = store_tables(other.version);
    auto has_table = [&](const char* name) {
        return std::any_of(tables.begin(), tables.end(), [&](const char* t) { return std::string_view(t) == name; });
    };
    Transaction reading(from, Transaction::Kind::deferred);
    Transaction writing(db);
    ImportResult result;

    if (has_table("sweeps")) {
        TableCopy sweeps(from, db, "sweeps", "", "id", false);
        Statement known(db, "SELECT 1 FROM sweeps WHERE uuid = ?");
        const int uuid = required_column(sweeps, other_path, "sweeps", "uuid");
        while (sweeps.select().step()) {
            if (has_uuid(known, sweeps.select().column_text(uuid))) continue;
            sweeps.insert_current(0);
            ++result.sweeps_added;
        }
    }

    // The per-run tables the other store has, in the order of their creation: evals and events
    // before the checkpoints that name their ids.
    std::vector<std::pair<const TableSpec*, TableCopy>> per_run;
    for (const TableSpec* t : all_run_tables()) {
        if (!has_table(t->name)) continue;
        const bool by_id = t == &evals_table() || t == &events_table() || t == &checkpoints_table();
        per_run.emplace_back(std::piecewise_construct, std::forward_as_tuple(t),
                             std::forward_as_tuple(from, db, t->name, "run_id = ?", by_id ? "id" : t->order_by, true));
    }
    // A checkpoint's file, named as this store names files (relative to its folder when the file
    // lies under it) from where it lies (resolved against the other store's folder); its
    // events_before and evals_before, the new ids of the same rows.
    IdMap eval_ids, event_ids;
    const ColumnHook checkpoint_columns = [&](Statement& q, int p, const std::string& column, const Statement& row,
                                              int col) {
        if (column == "file")
            q.bind(p, stored_checkpoint_file(store_path, resolved_checkpoint_file(other_path, row.column_text(col))));
        else if (column == "events_before")
            q.bind(p, mapped_before(event_ids, row.column_int(col)));
        else if (column == "evals_before")
            q.bind(p, mapped_before(eval_ids, row.column_int(col)));
        else
            return false;
        return true;
    };

    TableCopy runs(from, db, "runs", "", "id", false);
    auto runs_column = [&](const char* name) { return required_column(runs, other_path, "runs", name); };
    const int c_uuid = runs_column("uuid"), c_status = runs_column("status"), c_host = runs_column("host"),
              c_pid = runs_column("pid"), c_start = runs_column("process_start"), c_boot = runs_column("boot_id");
    Statement known(db, "SELECT 1 FROM runs WHERE uuid = ?");
    Statement count_steps(db,
                          "UPDATE runs SET step_count = (SELECT count(*) FROM steps WHERE run_id = ?1) WHERE id = ?1");
    const std::string when = "when it was imported from '" + other_path + "'";
    Statement& row = runs.select();
    while (row.step()) {
        if (has_uuid(known, row.column_text(c_uuid))) {
            ++result.runs_skipped;
            continue;
        }
        const std::int64_t old_id = row.column_int(0);
        const bool running = row.column_text(c_status) == run_status_name(RunStatus::running);
        const ProcessIdentity recorder{row.column_text(c_host), row.column_int(c_pid), row.column_int(c_start),
                                       row.column_text(c_boot)};
        const std::int64_t new_id = runs.insert_current(0);
        eval_ids.clear();
        event_ids.clear();
        for (auto& [spec, copy] : per_run) {
            IdMap* ids = spec == &evals_table() ? &eval_ids : spec == &events_table() ? &event_ids : nullptr;
            copy.copy_run(old_id, new_id, ids, spec == &checkpoints_table() ? checkpoint_columns : ColumnHook());
        }
        // A version-1 store keeps no count; the others keep this one.
        count_steps.bind(1, new_id);
        count_steps.run();
        // As the other store reports it: a run whose recorder is gone was interrupted.
        if (running && effective_status(RunStatus::running, recorder) == RunStatus::interrupted)
            mark_interrupted(db, new_id, recorder, when);
        ++result.runs_added;
    }
    if (other.written_since && other.written_since()) throw WrittenWhileRead{};
    writing.commit();
    return result;
}

}  // namespace

ImportResult import_store(Connection& db, const std::string& store_path, const std::string& other_path) {
    std::error_code ec;
    if (!other_path.empty() && fs::equivalent(other_path, store_path, ec))
        throw Error("Cannot import '" + other_path + "' into the run store '" + store_path +
                    "': they are the same file; give another store to import from.");
    // Two stores whose names differ only by ".sqlite" (runs and runs.sqlite) in one folder keep
    // their checkpoints in one folder: each would take the other's files for its own
    // (checkpoint_rows.h, owns_checkpoint_file), so such an import is refused.
    const std::string shared = fs::path(checkpoint_folder(store_path, "run")).parent_path().string();
    if (!other_path.empty() && shared == fs::path(checkpoint_folder(other_path, "run")).parent_path().string())
        throw Error("Cannot import '" + other_path + "' into the run store '" + store_path +
                    "': both keep their checkpoints in " + shared +
                    " (their names differ only by .sqlite); import into a store of another name.");
    // Refusing the other store as it is opened keeps the sentences of open_other_store (missing,
    // not a store, newer), but for damage, said as when it is found while copying.
    const auto open = [&](bool may_read_immutable) {
        try {
            return open_other_store(other_path, may_read_immutable);
        } catch (const Error& e) {
            if (const auto reason = damage_of(e, other_path)) throw damaged_other_store(other_path, *reason);
            throw;
        }
    };
    OtherStore other = open(true);
    try {
        try {
            return copy_store(other, other_path, db, store_path);
        } catch (const WrittenWhileRead&) {
            other = open(false);
            return copy_store(other, other_path, db, store_path);
        }
    } catch (const Error& e) {
        // The write transaction rolled back: say so, whichever store the sentence names. Damage of
        // this store keeps its own sentence, with the advice for a store one records to.
        if (const auto reason = damage_of(e, other_path)) throw damaged_other_store(other_path, *reason);
        throw Error("Nothing was imported from '" + other_path + "': " + continue_sentence(e.what()) + ".");
    }
}

}  // namespace mantissa::store
