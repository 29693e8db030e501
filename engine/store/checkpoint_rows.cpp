// The `checkpoints` table's paths, writing, reading and truncating; see checkpoint_rows.h.
#include "store/checkpoint_rows.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "store/interrupted_runs.h"
#include "store/process_identity.h"
#include "store/run_text.h"
#include "store/store_util.h"

namespace mantissa {

namespace fs = std::filesystem;

std::string checkpoint_folder(const std::string& store_path, const std::string& run_uuid) {
    std::string name = fs::path(store_path).filename().string();
    const std::string suffix = ".sqlite";
    if (name.size() > suffix.size() && name.ends_with(suffix)) name.resize(name.size() - suffix.size());
    return (fs::path(store::store_folder(store_path)) / (name + ".checkpoints") / run_uuid).string();
}

namespace store {

namespace {

fs::path absolute_normal(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::absolute(path, ec);
    return (ec ? fs::path(path) : p).lexically_normal();
}

bool plain_uuid(const std::string& uuid) {
    return !uuid.empty() && std::all_of(uuid.begin(), uuid.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
    });
}

}  // namespace

std::string store_folder(const std::string& store_path) {
    return absolute_normal(store_path).parent_path().string();
}

std::string stored_checkpoint_file(const std::string& store_path, const std::string& file) {
    const fs::path f = absolute_normal(file);
    const fs::path relative = f.lexically_relative(store_folder(store_path));
    if (relative.empty() || relative == "." || *relative.begin() == "..") return f.string();
    return relative.string();
}

std::string resolved_checkpoint_file(const std::string& store_path, const std::string& stored) {
    const fs::path p(stored);
    if (p.is_absolute()) return stored;
    return (fs::path(store_folder(store_path)) / p).lexically_normal().string();
}

bool owns_checkpoint_file(const std::string& store_path, const std::string& file) {
    const fs::path root = fs::path(checkpoint_folder(store_path, "run")).parent_path();
    const fs::path relative = fs::path(file).lexically_normal().lexically_relative(root);
    return !relative.empty() && relative != "." && *relative.begin() != "..";
}

void unlink_files(const std::vector<std::string>& files) noexcept {
    for (const std::string& f : files) {
        std::error_code ec;
        fs::remove(f, ec);  // gone already, or not ours to remove: passed over
    }
}

void remove_checkpoint_folder(const std::string& store_path, const std::string& run_uuid) noexcept {
    if (!plain_uuid(run_uuid)) return;
    try {
        std::error_code ec;
        fs::remove_all(checkpoint_folder(store_path, run_uuid), ec);
    } catch (...) {
        // Files left behind take space; the run's rows are gone all the same.
    }
}

std::vector<CheckpointRow> read_checkpoints(Connection& db, const std::string& store_path, std::int64_t run_id) {
    Statement q(db,
                "SELECT id, run_id, step, file, bytes, time_s, created_at, events_before, evals_before "
                "FROM checkpoints WHERE run_id = ? ORDER BY step");
    q.bind(1, run_id);
    std::vector<CheckpointRow> out;
    while (q.step()) {
        CheckpointRow c;
        c.id = q.column_int(0);
        c.run_id = q.column_int(1);
        c.step = q.column_int(2);
        c.file = resolved_checkpoint_file(store_path, q.column_text(3));
        c.bytes = q.column_int(4);
        if (!q.column_is_null(5)) c.time_s = q.column_double(5);
        c.created_at = q.column_text(6);
        c.events_before = q.column_int(7);
        c.evals_before = q.column_int(8);
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<std::string> checkpoint_files(Connection& db, const std::string& store_path, std::int64_t run_id) {
    std::vector<std::string> files;
    for (const CheckpointRow& c : read_checkpoints(db, store_path, run_id)) files.push_back(c.file);
    return files;
}

// ---- the recorder's writer thread

CheckpointWriter::CheckpointWriter(Connection& db, const std::string& store_path, std::int64_t run_id)
    : m_store_path(absolute_normal(store_path).string()),  // the process's folder may change while it records
      m_run_id(run_id),
      m_last_event(db, "SELECT coalesce(max(id), 0) FROM events WHERE run_id = ?"),
      m_last_eval(db, "SELECT coalesce(max(id), 0) FROM evals WHERE run_id = ?"),
      m_file_at(db, "SELECT file FROM checkpoints WHERE run_id = ? AND step = ?"),
      m_upsert(db,
               "INSERT INTO checkpoints(run_id, step, file, bytes, time_s, created_at, events_before, evals_before) "
               "VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, step) DO UPDATE SET file = excluded.file, "
               "bytes = excluded.bytes, time_s = excluded.time_s, created_at = excluded.created_at, "
               "events_before = excluded.events_before, evals_before = excluded.evals_before"),
      m_beyond_keep(db, "SELECT id, file FROM checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT -1 OFFSET ?"),
      m_delete(db, "DELETE FROM checkpoints WHERE id = ?"),
      m_named(db, "SELECT count(*) FROM checkpoints WHERE run_id = ? AND file = ?") {}

std::int64_t CheckpointWriter::last_event_id() {
    m_last_event.reset();
    m_last_event.bind(1, m_run_id);
    m_last_event.step();
    const std::int64_t id = m_last_event.column_int(0);
    m_last_event.reset();
    return id;
}

std::int64_t CheckpointWriter::last_eval_id() {
    m_last_eval.reset();
    m_last_eval.bind(1, m_run_id);
    m_last_eval.step();
    const std::int64_t id = m_last_eval.column_int(0);
    m_last_eval.reset();
    return id;
}

void CheckpointWriter::release(const std::string& stored, std::vector<std::string>& unlink_after_commit) {
    m_named.reset();
    m_named.bind(1, m_run_id).bind(2, stored);
    m_named.step();
    const bool still_named = m_named.column_int(0) > 0;
    m_named.reset();
    const std::string file = resolved_checkpoint_file(m_store_path, stored);
    if (!still_named && owns_checkpoint_file(m_store_path, file)) unlink_after_commit.push_back(file);
}

void CheckpointWriter::write(const CheckpointRecord& c, std::int64_t events_before, std::int64_t evals_before,
                             const std::string& created_at, std::vector<std::string>& unlink_after_commit) {
    const std::string file = stored_checkpoint_file(m_store_path, c.file);
    std::string replaced;  // the file of the row this one replaces, when another
    m_file_at.reset();
    m_file_at.bind(1, m_run_id).bind(2, c.step);
    if (m_file_at.step() && m_file_at.column_text(0) != file) replaced = m_file_at.column_text(0);
    m_file_at.reset();

    m_upsert.bind(1, m_run_id).bind(2, c.step).bind(3, file).bind(4, c.bytes).bind(5, c.time_s);
    m_upsert.bind(6, created_at).bind(7, events_before).bind(8, evals_before);
    m_upsert.run();
    if (!replaced.empty()) release(replaced, unlink_after_commit);

    if (c.keep <= 0) return;
    std::vector<std::pair<std::int64_t, std::string>> pruned;
    m_beyond_keep.reset();
    m_beyond_keep.bind(1, m_run_id).bind(2, static_cast<std::int64_t>(c.keep));
    while (m_beyond_keep.step()) pruned.emplace_back(m_beyond_keep.column_int(0), m_beyond_keep.column_text(1));
    m_beyond_keep.reset();
    for (const auto& [id, stored] : pruned) {
        m_delete.bind(1, id);
        m_delete.run();
    }
    for (const auto& [id, stored] : pruned) release(stored, unlink_after_commit);
}

// ---- continue_run

std::vector<std::string> truncate_to_checkpoint(Connection& db, const std::string& store_path, std::int64_t run_id,
                                                std::int64_t step) {
    Transaction transaction(db);  // immediate: the checks and the deletes see one state of the file
    std::string label = "Run " + std::to_string(run_id);
    {
        Statement q(db, "SELECT name, status, host, pid, process_start, boot_id FROM runs WHERE id = ?");
        q.bind(1, run_id);
        if (!q.step())
            throw Error("There is no run " + std::to_string(run_id) + " in '" + store_path +
                        "' ('mantissa-cli runs' lists them).");
        label += " (" + printable_text(q.column_text(0)) + ")";
        const ProcessIdentity recorder{q.column_text(2), q.column_int(3), q.column_int(4), q.column_text(5)};
        if (parse_run_status(q.column_text(1)) == RunStatus::running &&
            effective_status(RunStatus::running, recorder) == RunStatus::running)
            throw Error(label + " is still being recorded by process " + std::to_string(recorder.pid) + " on " +
                        printable_text(recorder.host) + "; stop it before continuing it from a checkpoint.");
    }
    const std::vector<CheckpointRow> rows = read_checkpoints(db, store_path, run_id);
    const auto at = std::find_if(rows.begin(), rows.end(), [&](const CheckpointRow& c) { return c.step == step; });
    if (at == rows.end()) {
        std::string steps;
        for (std::size_t i = 0; i < rows.size() && i < 10; ++i)
            steps += (i == 0 ? "" : i + 1 == rows.size() ? " and " : ", ") + std::to_string(rows[i].step);
        if (rows.size() > 10) steps += " and " + std::to_string(rows.size() - 10) + " more";
        throw Error(label + " has no checkpoint at step " + std::to_string(step) +
                    (rows.empty()
                         ? std::string(" (it has no checkpoints at all)")
                         : " (its checkpoints are at step" + std::string(rows.size() == 1 ? " " : "s ") + steps + ")") +
                    ".");
    }
    std::error_code ec;
    if (!fs::is_regular_file(at->file, ec))
        throw Error(label + " has a checkpoint at step " + std::to_string(step) + ", but its file '" + at->file +
                    "' is missing; continue it from another checkpoint.");

    for (const char* table : {"steps", "layer_steps", "op_steps", "what_if_steps", "block_scale_steps"}) {
        Statement d(db, std::string("DELETE FROM ") + table + " WHERE run_id = ? AND step >= ?");
        d.bind(1, run_id).bind(2, step);
        d.run();
    }
    for (auto [table, before] : {std::pair{"evals", at->evals_before}, std::pair{"events", at->events_before}}) {
        Statement d(db, std::string("DELETE FROM ") + table + " WHERE run_id = ? AND id > ?");
        d.bind(1, run_id).bind(2, before);
        d.run();
    }
    std::vector<std::string> later;
    for (auto c = at + 1; c != rows.end(); ++c)
        if (c->file != at->file && owns_checkpoint_file(store_path, c->file)) later.push_back(c->file);
    {
        Statement d(db, "DELETE FROM checkpoints WHERE run_id = ? AND step > ?");
        d.bind(1, run_id).bind(2, step);
        d.run();
    }
    const ProcessIdentity me = current_process();
    Statement u(db,
                "UPDATE runs SET status = 'running', finished_at = NULL, error = '', host = ?, pid = ?, "
                "process_start = ?, boot_id = ?, updated_at = ?, "
                "step_count = (SELECT count(*) FROM steps WHERE run_id = ?6) WHERE id = ?6");
    u.bind(1, me.host).bind(2, me.pid).bind(3, me.start_ticks).bind(4, me.boot_id).bind(5, iso8601_now());
    u.bind(6, run_id);
    u.run();
    transaction.commit();
    return later;
}

}  // namespace store

}  // namespace mantissa
