// The `sweeps` table's rows; see sweep_rows.h.
#include "store/sweep_rows.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>
#include <utility>

#include "store/run_text.h"
#include "store/store_util.h"

namespace mantissa::store {

namespace {

const char* const sweep_select =
    "SELECT id, uuid, name, created_at, spec_json, runs_planned, executor, slurm_job, folder FROM sweeps";

SweepRow read_sweep_row(const Statement& q) {
    SweepRow s;
    s.id = q.column_int(0);
    s.uuid = q.column_text(1);
    s.name = q.column_text(2);
    s.created_at = q.column_text(3);
    s.spec_json = q.column_text(4);
    s.runs_planned = q.column_int(5);
    s.executor = q.column_text(6);
    s.slurm_job = q.column_text(7);  // NULL -> ""
    s.folder = q.column_text(8);
    return s;
}

bool all_digits(const std::string& s) {
    return !s.empty() && s.size() < 19 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

void bind_or_null(Statement& q, int index, const std::string& text) {
    if (text.empty())
        q.bind_null(index);
    else
        q.bind(index, text);
}

}  // namespace

SweepRow insert_sweep(Connection& db, const SweepInfo& info) {
    check_run_text(RunText::sweep_name, info.name);
    if (info.runs_planned < 0)
        throw Error("Cannot create the sweep '" + printable_text(info.name) + "' with " +
                    std::to_string(info.runs_planned) + " runs planned: a sweep plans 0 runs or more.");
    if (info.executor != "local" && info.executor != "slurm")
        throw Error("Cannot create the sweep '" + printable_text(info.name) + "' with the executor '" +
                    printable_text(info.executor) + "': a sweep runs on 'local' or 'slurm'.");
    SweepRow row;
    row.uuid = new_uuid();
    row.name = info.name.empty() ? "sweep" : info.name;
    row.created_at = iso8601_now();
    row.spec_json = info.spec_json.empty() ? "{}" : info.spec_json;
    row.runs_planned = info.runs_planned;
    row.executor = info.executor;
    Statement q(db,
                "INSERT INTO sweeps(uuid, name, created_at, spec_json, runs_planned, executor) "
                "VALUES(?, ?, ?, ?, ?, ?)");
    q.bind(1, row.uuid).bind(2, row.name).bind(3, row.created_at).bind(4, row.spec_json);
    q.bind(5, row.runs_planned).bind(6, row.executor);
    q.run();
    row.id = db.last_insert_rowid();
    return row;
}

std::vector<SweepRow> read_sweeps(Connection& db) {
    Statement q(db, std::string(sweep_select) + " ORDER BY created_at DESC, id DESC");
    std::vector<SweepRow> out;
    while (q.step()) out.push_back(read_sweep_row(q));
    return out;
}

std::optional<SweepRow> read_sweep(Connection& db, std::int64_t id) {
    Statement q(db, std::string(sweep_select) + " WHERE id = ?");
    q.bind(1, id);
    if (!q.step()) return std::nullopt;
    return read_sweep_row(q);
}

std::int64_t resolve_sweep(Connection& db, const std::string& store_path, const std::string& id_or_prefix) {
    if (id_or_prefix.empty()) throw Error("No sweep was given: give its id or the start of its name or uuid.");
    if (all_digits(id_or_prefix) && read_sweep(db, std::stoll(id_or_prefix))) return std::stoll(id_or_prefix);
    Statement q(db,
                "SELECT id, name FROM sweeps WHERE substr(name, 1, length(?1)) = ?1 "
                "OR substr(uuid, 1, length(?1)) = ?1 ORDER BY id");
    q.bind(1, id_or_prefix);
    std::vector<std::pair<std::int64_t, std::string>> matches;
    while (q.step()) matches.emplace_back(q.column_int(0), q.column_text(1));
    if (matches.size() == 1) return matches[0].first;
    if (matches.empty())
        throw Error("No sweep in '" + store_path + "' has the id or a name or uuid starting with '" +
                    printable_text(id_or_prefix) + "'.");
    std::vector<std::int64_t> exact;
    for (const auto& [id, name] : matches)
        if (name == id_or_prefix) exact.push_back(id);
    if (exact.size() == 1) return exact[0];
    std::string list;
    for (std::size_t i = 0; i < matches.size() && i < 10; ++i)
        list += (i ? ", " : "") + std::to_string(matches[i].first) + " (" + printable_text(matches[i].second) + ")";
    if (matches.size() > 10) list += " and " + std::to_string(matches.size() - 10) + " more";
    throw Error("'" + printable_text(id_or_prefix) + "' matches " + std::to_string(matches.size()) +
                " sweeps: " + list + "; give the id or more of the name.");
}

bool update_sweep_slurm(Connection& db, std::int64_t id, const std::string& job, const std::string& folder) {
    std::string absolute;
    if (!folder.empty()) {
        // Kept absolute: the folder is read later, from another working directory.
        std::error_code ec;
        const std::filesystem::path p = std::filesystem::absolute(folder, ec);
        absolute = (ec ? std::filesystem::path(folder) : p).lexically_normal().string();
    }
    Statement q(db, "UPDATE sweeps SET slurm_job = ?, folder = ? WHERE id = ?");
    bind_or_null(q, 1, job);
    bind_or_null(q, 2, absolute);
    q.bind(3, id);
    q.run();
    return db.changes() > 0;
}

bool delete_sweep(Connection& db, std::int64_t id) {
    Statement q(db, "DELETE FROM sweeps WHERE id = ?");
    q.bind(1, id);
    q.run();
    return db.changes() > 0;
}

void check_sweep_columns(const std::string& sweep_uuid, const std::optional<std::int64_t>& sweep_index) {
    if (sweep_uuid.empty() != !sweep_index || (sweep_index && *sweep_index < 0))
        throw Error("Cannot record the run as run " +
                    (sweep_index ? std::to_string(*sweep_index) : std::string("(none)")) + " of the sweep '" +
                    printable_text(sweep_uuid) +
                    "': a run of a sweep names the sweep's uuid and an index that is not negative, and a run "
                    "outside a sweep names neither.");
}

}  // namespace mantissa::store
