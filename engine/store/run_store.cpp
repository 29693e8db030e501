// RunStore: opening (store_open.cpp), reading and editing runs. Recording lives in recorder.cpp,
// exports in export_table.cpp. Every method runs on the thread that made the store, over its one
// connection; readers see the last committed batch of a run being recorded (WAL).
#include "store/run_store.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include <pwd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "store/block_scale_codec.h"
#include "store/checkpoint_rows.h"
#include "store/export_table.h"
#include "store/histogram_codec.h"
#include "store/interrupted_runs.h"
#include "store/recorder_impl.h"
#include "store/run_text.h"
#include "store/schema.h"
#include "store/store_import.h"
#include "store/store_open.h"
#include "store/store_util.h"
#include "store/sweep_rows.h"
#include "config/json_text.h"
#include "config/throughput.h"

namespace mantissa {

std::string default_store_path() {
    // The XDG base directory rules: XDG_DATA_HOME only when absolute (a relative one is ignored,
    // it would move with the working folder), else ~/.local/share, the home from HOME or, where
    // that is unset, the password database.
    const char* xdg = std::getenv("XDG_DATA_HOME");
    std::string base;
    if (xdg && xdg[0] == '/') {
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        if (!home || !*home) {
            const passwd* user = getpwuid(getuid());
            home = user && user->pw_dir && *user->pw_dir ? user->pw_dir : ".";
        }
        base = std::string(home) + "/.local/share";
    }
    return base + "/mantissa/runs.sqlite";
}


using store::Statement;

const char* run_status_name(RunStatus s) {
    switch (s) {
        case RunStatus::running: return "running";
        case RunStatus::completed: return "completed";
        case RunStatus::stopped: return "stopped";
        case RunStatus::failed: return "failed";
        case RunStatus::interrupted: return "interrupted";
    }
    return "running";
}

struct RunStore::Impl {
    std::string path;
    store::OpenedStore opened;
    store::Connection& db() { return opened.connection; }
    std::string quoted_path() const { return "'" + path + "'"; }

    void require_writable(const std::string& doing) const {
        if (opened.read_only)
            throw Error("Cannot " + doing + ": the run store " + quoted_path() +
                        " is open read-only (the file or its folder is not writable).");
    }
    [[noreturn]] void no_such_run(std::int64_t id) const {
        throw Error("There is no run " + std::to_string(id) + " in " + quoted_path() +
                    " ('mantissa-cli runs' lists them).");
    }
    [[noreturn]] void no_such_sweep(std::int64_t id) const {
        throw Error("There is no sweep " + std::to_string(id) + " in " + quoted_path() + ".");
    }
    bool exists(std::int64_t id) {
        Statement q(db(), "SELECT 1 FROM runs WHERE id = ?");
        q.bind(1, id);
        return q.step();
    }
    void require_run(std::int64_t id) {
        if (!exists(id)) no_such_run(id);
    }
    // A Recorder writing to run `id`, which the caller has just set running; when it cannot be
    // made (the file cannot be opened a second time), the run is marked failed and it throws.
    std::shared_ptr<Recorder> start_recorder(std::int64_t id, const RecorderOptions& options) {
        try {
            auto impl = std::make_unique<Recorder::Impl>(path, id, options);
            impl->start();
            return std::shared_ptr<Recorder>(new Recorder(std::move(impl)));
        } catch (const std::exception& e) {
            try {
                Statement q(db(), "UPDATE runs SET status = 'failed', error = ?, finished_at = ? WHERE id = ?");
                q.bind(1, e.what()).bind(2, store::iso8601_now()).bind(3, id);
                q.run();
            } catch (...) {
            }
            throw;
        }
    }
};

namespace {

const char* const run_select = R"sql(
SELECT r.id, r.uuid, r.name, r.created_at, r.finished_at, r.status, r.backend, r.device, r.config_json,
       r.notes, r.tags, r.app_version, r.step_count, r.error, r.updated_at, r.host, r.pid,
       r.process_start, r.boot_id,
       (SELECT s.loss FROM steps s WHERE s.run_id = r.id ORDER BY s.step DESC LIMIT 1),
       le.id, le.accuracy, le.loss, r.parent_uuid, r.parent_step, r.sweep_uuid, r.sweep_index
FROM runs r
LEFT JOIN evals le ON le.id = (SELECT e.id FROM evals e WHERE e.run_id = r.id AND e.split = 'test'
                               ORDER BY e.step DESC, e.id DESC LIMIT 1)
)sql";

// Stored JSON text (a run's experiment, a sweep's definition) is read back with json::parse by
// whoever holds the row, and its values recurse once per level when copied or written: text
// nested deeper than an experiment file may be (config/json_text.h, max_json_depth) can only come
// from a damaged or hostile file, and is refused here, as it is read, naming the row and the store.
void check_stored_json(const std::string& text, const std::string& what, const std::string& quoted_path) {
    if (!json_too_deep(text)) return;
    nlohmann::json parsed;
    const JsonProblem problem = parse_json(text, parsed);
    throw Error("The run store " + quoted_path + " is damaged: " + what + " is nested too deep to read (" +
                (problem.found ? problem.sentence : "more than " + std::to_string(max_json_depth) + " levels") + ").");
}

RunRow read_run_row(const Statement& q, bool read_only, const std::string& quoted_path) {
    RunRow r;
    r.id = q.column_int(0);
    r.uuid = q.column_text(1);
    r.name = q.column_text(2);
    r.created_at = q.column_text(3);
    r.finished_at = q.column_text(4);
    r.status = store::parse_run_status(q.column_text(5)).value_or(RunStatus::failed);
    r.backend = q.column_text(6);
    r.device = q.column_text(7);
    r.config_json = q.column_text(8);
    check_stored_json(r.config_json, "the experiment of run " + std::to_string(r.id) + " (runs.config_json)", quoted_path);
    r.notes = q.column_text(9);
    r.tags = q.column_text(10);
    r.app_version = q.column_text(11);
    r.steps = q.column_int(12);
    r.error = q.column_text(13);
    r.updated_at = q.column_text(14);
    r.host = q.column_text(15);
    r.pid = q.column_int(16);
    if (read_only && r.status == RunStatus::running) {
        store::ProcessIdentity who{r.host, r.pid, q.column_int(17), q.column_text(18)};
        r.status = store::effective_status(r.status, who);
    }
    if (r.steps > 0) r.final_loss = q.column_double(19);
    if (!q.column_is_null(20)) {
        r.test_accuracy = q.column_double(21);
        r.test_loss = q.column_double(22);
    }
    r.parent_uuid = q.column_text(23);
    if (!q.column_is_null(24)) r.parent_step = q.column_int(24);
    r.sweep_uuid = q.column_text(25);
    if (!q.column_is_null(26)) r.sweep_index = q.column_int(26);
    return r;
}

StepRecord read_step(const Statement& q) {
    StepRecord s;
    s.step = q.column_int(0);
    s.epoch = static_cast<std::int32_t>(q.column_int(1));
    s.time_s = q.column_double(2);
    s.loss = q.column_double(3);
    s.loss_scale = q.column_double(4);
    s.overflow = q.column_int(5) != 0;
    s.skipped = q.column_int(6) != 0;
    s.grad_norm = q.column_double(7);
    s.learning_rate = q.column_double(8);
    s.samples_per_s = q.column_double(9);
    s.step_time_ms = q.column_double(10);
    s.memory.parameters = q.column_int(11);
    s.memory.master_weights = q.column_int(12);
    s.memory.gradients = q.column_int(13);
    s.memory.optimizer_state = q.column_int(14);
    s.memory.activations = q.column_int(15);
    s.memory.workspace = q.column_int(16);
    s.memory.device_in_use = q.column_int(17);
    s.memory.device_total = q.column_int(18);
    s.memory.modelled = q.column_int(19) != 0;
    return s;
}

std::string select_sql(const store::TableSpec& t, const char* where) {
    return std::string("SELECT ") + store::column_list(t) + " FROM " + t.name + " WHERE " + where + " ORDER BY " +
           t.order_by;
}

// A layer list start_run() can record: names and kinds not empty, dimensions not negative. (Text
// is stored as given: readers escape it for a terminal, store/run_text.h printable_text.)
void check_layers(const std::vector<LayerInfo>& layers) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerInfo& l = layers[i];
        const bool shapes_ok = l.in_shape.channels >= 0 && l.in_shape.height >= 0 && l.in_shape.width >= 0 &&
                               l.out_shape.channels >= 0 && l.out_shape.height >= 0 && l.out_shape.width >= 0 &&
                               l.parameters >= 0;
        if (l.name.empty() || l.kind.empty() || !shapes_ok)
            throw Error("Cannot record layer " + std::to_string(i) + " ('" + store::printable_text(l.name) +
                        "', kind '" + store::printable_text(l.kind) +
                        "'): a layer needs a name, a kind and sizes that are not negative.");
    }
}

// A stored shape's numel(), or 0 when the file holds a negative size or one whose product does
// not fit (a file edited by hand, or damaged): reading it must not overflow.
std::int64_t stored_numel(const SampleShape& s) {
    std::int64_t n = 0;
    if (s.channels < 0 || s.height < 0 || s.width < 0 || __builtin_mul_overflow(s.channels, s.height, &n) ||
        __builtin_mul_overflow(n, s.width, &n))
        return 0;
    return n;
}

bool all_digits(const std::string& s) {
    return !s.empty() && s.size() < 19 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

// ---- opening

RunStore::RunStore(const std::string& path, bool read_only)
    : RunStore(path, read_only ? StoreAccess::read_only : StoreAccess::write) {}

RunStore::RunStore(const std::string& path, StoreAccess access)
    : m_impl(std::make_unique<Impl>(Impl{path, store::open_store(path, access)})) {
    if (!m_impl->opened.read_only) store::mark_interrupted_runs(m_impl->db());
}

RunStore::~RunStore() = default;

const std::string& RunStore::path() const {
    return m_impl->path;
}
bool RunStore::read_only() const {
    return m_impl->opened.read_only;
}
int RunStore::migrated_from() const {
    return m_impl->opened.migrated_from;
}
const std::string& RunStore::backup_path() const {
    return m_impl->opened.backup_path;
}

// ---- recording

std::shared_ptr<Recorder> RunStore::start_run(const RunInfo& info) {
    return start_run(info, RecorderOptions{});
}

std::shared_ptr<Recorder> RunStore::start_run(const RunInfo& info, const RecorderOptions& options) {
    m_impl->require_writable("record a run");
    store::check_run_text(store::RunText::name, info.name);
    check_layers(info.layers);
    if (info.parent_uuid.empty() != !info.parent_step || (info.parent_step && *info.parent_step < 0))
        throw Error("Cannot record the branch '" + store::printable_text(info.parent_uuid) + "' at step " +
                    (info.parent_step ? std::to_string(*info.parent_step) : std::string("(none)")) +
                    ": a branch names its parent run's uuid and a step that is not negative, and a run that is "
                    "not a branch names neither.");
    store::check_sweep_columns(info.sweep_uuid, info.sweep_index);
    const store::ProcessIdentity me = store::current_process();
    const std::string now = store::iso8601_now();
    std::int64_t id = 0;
    {
        // The run's row and its layers in one transaction: a reader never sees a run without
        // the layers it was recorded with.
        store::Transaction transaction(m_impl->db());
        Statement q(m_impl->db(),
                    "INSERT INTO runs(uuid, name, created_at, updated_at, status, backend, device, config_json, "
                    "app_version, host, pid, process_start, boot_id, parent_uuid, parent_step, sweep_uuid, "
                    "sweep_index) VALUES(?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        const std::string uuid = store::new_uuid();
        q.bind(1, std::string_view(uuid))
            .bind(2, info.name.empty() ? std::string_view("run") : std::string_view(info.name));
        q.bind(3, now).bind(4, now).bind(5, info.backend);
        q.bind(6, info.device);
        q.bind(7, info.config_json.empty() ? std::string_view("{}") : std::string_view(info.config_json));
        q.bind(8, MANTISSA_VERSION).bind(9, me.host).bind(10, me.pid);
        q.bind(11, me.start_ticks).bind(12, me.boot_id);
        if (info.parent_step) {
            q.bind(13, info.parent_uuid).bind(14, *info.parent_step);
        } else {
            q.bind_null(13).bind_null(14);
        }
        if (info.sweep_index) {
            q.bind(15, info.sweep_uuid).bind(16, *info.sweep_index);
        } else {
            q.bind_null(15).bind_null(16);
        }
        q.run();
        id = m_impl->db().last_insert_rowid();
        Statement l(m_impl->db(), store::insert_sql(store::layers_table()));
        for (std::size_t i = 0; i < info.layers.size(); ++i) {
            const LayerInfo& layer = info.layers[i];
            l.bind(1, id).bind(2, static_cast<std::int64_t>(i)).bind(3, layer.name).bind(4, layer.kind);
            l.bind(5, layer.in_shape.channels).bind(6, layer.in_shape.height).bind(7, layer.in_shape.width);
            l.bind(8, layer.out_shape.channels).bind(9, layer.out_shape.height).bind(10, layer.out_shape.width);
            l.bind(11, layer.parameters).bind(12, layer.takes_precision);
            l.run();
        }
        transaction.commit();
    }
    return m_impl->start_recorder(id, options);
}

std::shared_ptr<Recorder> RunStore::continue_run(std::int64_t run_id, std::int64_t step,
                                                 const RecorderOptions& options) {
    m_impl->require_writable("continue run " + std::to_string(run_id));
    m_impl->require_run(run_id);
    // The later checkpoints' files go only once the rows naming them are gone for good.
    store::unlink_files(store::truncate_to_checkpoint(m_impl->db(), m_impl->path, run_id, step));
    return m_impl->start_recorder(run_id, options);
}

// ---- reading

std::vector<RunRow> RunStore::list_runs() {
    std::vector<RunRow> rows;
    Statement q(m_impl->db(), std::string(run_select) + " ORDER BY r.id");
    while (q.step()) rows.push_back(read_run_row(q, read_only(), m_impl->quoted_path()));
    return rows;
}

RunRow RunStore::run(std::int64_t id) {
    Statement q(m_impl->db(), std::string(run_select) + " WHERE r.id = ?");
    q.bind(1, id);
    if (!q.step()) m_impl->no_such_run(id);
    return read_run_row(q, read_only(), m_impl->quoted_path());
}

std::int64_t RunStore::resolve(const std::string& id_or_prefix) {
    if (id_or_prefix.empty()) throw Error("No run was given: give its id or the start of its name.");
    if (all_digits(id_or_prefix)) {
        std::int64_t id = std::stoll(id_or_prefix);
        if (m_impl->exists(id)) return id;
    }
    Statement q(m_impl->db(), "SELECT id, name FROM runs WHERE substr(name, 1, length(?1)) = ?1 ORDER BY id");
    q.bind(1, id_or_prefix);
    std::vector<std::pair<std::int64_t, std::string>> matches;
    while (q.step()) matches.emplace_back(q.column_int(0), q.column_text(1));
    if (matches.size() == 1) return matches[0].first;
    if (matches.empty())
        throw Error("No run in " + m_impl->quoted_path() + " has the id or a name starting with '" + id_or_prefix +
                    "' ('mantissa-cli runs' lists them).");
    std::vector<std::int64_t> exact;
    for (const auto& [id, name] : matches)
        if (name == id_or_prefix) exact.push_back(id);
    if (exact.size() == 1) return exact[0];
    std::string list;
    for (std::size_t i = 0; i < matches.size() && i < 10; ++i)
        list += (i ? ", " : "") + std::to_string(matches[i].first) + " (" + matches[i].second + ")";
    if (matches.size() > 10) list += " and " + std::to_string(matches.size() - 10) + " more";
    throw Error("'" + id_or_prefix + "' matches " + std::to_string(matches.size()) + " runs: " + list +
                "; give the id or more of the name.");
}

std::vector<StepRecord> RunStore::steps(std::int64_t run_id, std::int64_t from_step) {
    Statement q(m_impl->db(), select_sql(store::steps_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    std::vector<StepRecord> out;
    while (q.step()) out.push_back(read_step(q));
    return out;
}

std::vector<LayerStepRecord> RunStore::layer_steps(std::int64_t run_id, std::int64_t from_step) {
    Statement q(m_impl->db(), select_sql(store::layer_steps_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    std::vector<LayerStepRecord> out;
    while (q.step()) {
        LayerStepRecord l;
        l.step = q.column_int(0);
        l.layer = static_cast<std::int32_t>(q.column_int(1));
        l.name = q.column_text(2);
        l.precision = parse_compute_format(q.column_text(3)).value_or(ComputeFormat(Format::fp32));
        l.grad_amax = q.column_double(4);
        l.grad_elements = q.column_int(5);
        l.frac_zero = q.column_double(6);
        l.frac_subnormal = q.column_double(7);
        l.frac_nonfinite = q.column_double(8);
        l.frac_underflow = q.column_double(9);
        l.frac_lost_updates = q.column_double(10);
        if (!store::decode_histogram(q.column_blob(11), l.grad_exponents))
            throw Error("The run store " + m_impl->quoted_path() + " is damaged: the gradient histogram of run " +
                        std::to_string(run_id) + ", step " + std::to_string(l.step) + ", layer " +
                        std::to_string(l.layer) + " cannot be decoded.");
        // v3's FP8 columns: a row whose x scale is NULL has none (another layer, an older row, a
        // step whose scaling was not known); within an FP8 row NULL is a NaN (a NaN amax).
        if (!q.column_is_null(12)) {
            Fp8LayerScaling f;
            f.input = {q.column_double(12), q.column_double(15)};
            f.weight = {q.column_double(13), q.column_double(16)};
            f.grad_output = {q.column_double(14), q.column_double(17)};
            l.fp8 = f;
        }
        out.push_back(std::move(l));
    }
    return out;
}

std::vector<EvalRecord> RunStore::evals(std::int64_t run_id) {
    return evals(run_id, 0);
}

std::vector<EvalRecord> RunStore::evals(std::int64_t run_id, std::int64_t from_step) {
    Statement q(m_impl->db(), select_sql(store::evals_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    std::vector<EvalRecord> out;
    while (q.step()) {
        EvalRecord e;
        e.step = q.column_int(0);
        e.split = q.column_text(1);
        e.loss = q.column_double(2);
        e.accuracy = q.column_double(3);
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<Event> RunStore::events(std::int64_t run_id) {
    return events(run_id, 0);
}

std::vector<Event> RunStore::events(std::int64_t run_id, std::int64_t from_step) {
    Statement q(m_impl->db(), select_sql(store::events_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    std::vector<Event> out;
    while (q.step()) {
        Event e;
        e.step = q.column_int(0);
        e.time_s = q.column_double(1);
        e.kind = store::parse_event_kind(q.column_text(2)).value_or(EventKind::notice);
        e.message = q.column_text(3);
        e.data_json = q.column_text(4);
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<LayerInfo> RunStore::layers(std::int64_t run_id) {
    Statement q(m_impl->db(), select_sql(store::layers_table(), "run_id = ?"));
    q.bind(1, run_id);
    std::vector<LayerInfo> out;
    while (q.step()) {
        LayerInfo l;
        l.name = q.column_text(1);
        l.kind = q.column_text(2);
        l.in_shape = {q.column_int(3), q.column_int(4), q.column_int(5)};
        l.out_shape = {q.column_int(6), q.column_int(7), q.column_int(8)};
        l.in_features = stored_numel(l.in_shape);
        l.out_features = stored_numel(l.out_shape);
        l.parameters = q.column_int(9);
        l.takes_precision = q.column_int(10) != 0;
        out.push_back(std::move(l));
    }
    return out;
}

std::vector<OpStepRecord> RunStore::op_steps(std::int64_t run_id, std::int64_t from_step) {
    Statement q(m_impl->db(), select_sql(store::op_steps_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    std::vector<OpStepRecord> out;
    while (q.step()) {
        OpStepRecord o;
        o.step = q.column_int(0);
        o.name = q.column_text(2);
        o.stat = q.column_text(3);
        o.value = q.column_double(4);  // NULL -> NaN
        out.push_back(std::move(o));
    }
    return out;
}

std::vector<WhatIfRecord> RunStore::what_if_steps(std::int64_t run_id, std::int64_t from_step) {
    std::vector<WhatIfRecord> out;
    Statement q(m_impl->db(), select_sql(store::what_if_steps_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    while (q.step()) {
        WhatIfRecord w;
        w.step = q.column_int(0);
        w.layer = static_cast<std::int32_t>(q.column_int(1));
        const std::optional<ComputeFormat> format = parse_compute_format(q.column_text(3));
        if (!format) continue;  // a name a later build wrote: not one this build can show
        w.format = *format;
        w.name = q.column_text(4);
        int c = 5;
        for (QuantisationStats* s : {&w.input, &w.weight, &w.grad_output}) {
            s->underflow = q.column_double(c);  // NULL -> NaN
            s->saturation = q.column_double(c + 1);
            s->sqnr_db = q.column_double(c + 2);
            s->values = q.column_int(c + 3);
            c += 4;
        }
        out.push_back(std::move(w));
    }
    return out;
}

std::vector<BlockScaleRecord> RunStore::block_scale_steps(std::int64_t run_id, std::int64_t from_step) {
    std::vector<BlockScaleRecord> out;
    Statement q(m_impl->db(), select_sql(store::block_scale_steps_table(), "run_id = ? AND step >= ?"));
    q.bind(1, run_id).bind(2, from_step);
    while (q.step()) out.push_back(store::read_block_scale_row(q, run_id));
    return out;
}

std::vector<CheckpointRow> RunStore::checkpoints(std::int64_t run_id) {
    return store::read_checkpoints(m_impl->db(), m_impl->path, run_id);
}

std::optional<std::int64_t> RunStore::last_block_scale_step(std::int64_t run_id) {
    Statement q(m_impl->db(), "SELECT max(step) FROM block_scale_steps WHERE run_id = ?");
    q.bind(1, run_id);
    if (!q.step() || q.column_is_null(0)) return std::nullopt;
    return q.column_int(0);
}

namespace {

// The rows a run's steps trained (RunTotals::samples): each step's from its own two figures, a
// step that was not timed counting the experiment's batch size. Empty when neither says.
std::optional<std::int64_t> samples_trained(store::Connection& db, std::int64_t run_id) {
    std::optional<std::int64_t> batch_size;  // read only when a step needs it
    bool batch_read = false;
    std::int64_t samples = 0;
    Statement q(db, "SELECT samples_per_s, step_time_ms FROM steps WHERE run_id = ?");
    q.bind(1, run_id);
    while (q.step()) {
        const double rate = q.column_is_null(0) ? 0.0 : q.column_double(0);
        const double ms = q.column_is_null(1) ? 0.0 : q.column_double(1);
        if (const auto rows = step_rows(rate, ms)) {
            samples += *rows;
            continue;
        }
        if (!batch_read) {
            batch_read = true;
            Statement c(db, "SELECT config_json FROM runs WHERE id = ?");
            c.bind(1, run_id);
            if (c.step() && !json_too_deep(c.column_text(0))) {  // too deep: refused as its row is read
                const auto config = nlohmann::json::parse(c.column_text(0), nullptr, false);
                if (config.is_object() && config.contains("train") && config["train"].is_object()) {
                    const auto& b = config["train"].value("batch_size", nlohmann::json());
                    if (b.is_number_integer() && b.get<std::int64_t>() > 0) batch_size = b.get<std::int64_t>();
                }
            }
        }
        if (!batch_size) return std::nullopt;
        samples += *batch_size;
    }
    return samples;
}

}  // namespace

RunTotals RunStore::totals(std::int64_t run_id) {
    m_impl->require_run(run_id);
    RunTotals t;
    auto& db = m_impl->db();
    {
        Statement q(db,
                    "SELECT count(*), total(overflow), total(skipped), "
                    "max(mem_parameters + mem_master_weights + mem_gradients + mem_optimizer_state + "
                    "mem_activations + mem_workspace) FROM steps WHERE run_id = ?");
        q.bind(1, run_id);
        q.step();
        t.steps = q.column_int(0);
        t.overflow_steps = q.column_int(1);
        t.skipped_steps = q.column_int(2);
        t.peak_memory_bytes = q.column_int(3);
    }
    {
        Statement q(db, "SELECT loss_scale, time_s FROM steps WHERE run_id = ? ORDER BY step DESC LIMIT 1");
        q.bind(1, run_id);
        if (q.step()) {
            t.final_loss_scale = q.column_double(0);
            t.elapsed_s = q.column_double(1);
        }
    }
    if (const auto samples = samples_trained(db, run_id); samples && t.elapsed_s) {
        t.samples = samples;
        t.samples_per_s = run_samples_per_s(*samples, *t.elapsed_s);
    }
    for (auto [table, field] :
         {std::pair{"layer_steps", &t.layer_rows}, std::pair{"evals", &t.evals}, std::pair{"events", &t.events},
          std::pair{"op_steps", &t.op_rows}, std::pair{"what_if_steps", &t.what_if_rows},
          std::pair{"block_scale_steps", &t.block_scale_rows}}) {
        Statement q(db, std::string("SELECT count(*) FROM ") + table + " WHERE run_id = ?");
        q.bind(1, run_id);
        q.step();
        *field = q.column_int(0);
    }
    return t;
}

// ---- editing

std::vector<std::string> RunStore::remove(std::int64_t run_id) {
    m_impl->require_writable("remove run " + std::to_string(run_id));
    RunRow r = run(run_id);
    if (r.status == RunStatus::running)
        throw Error("Run " + std::to_string(run_id) + " (" + r.name + ") is still being recorded by process " +
                    std::to_string(r.pid) + " on " + r.host + "; stop it before removing it.");
    std::vector<std::string> owned, left;
    for (std::string& f : store::checkpoint_files(m_impl->db(), m_impl->path, run_id))
        (store::owns_checkpoint_file(m_impl->path, f) ? owned : left).push_back(std::move(f));
    Statement q(m_impl->db(), "DELETE FROM runs WHERE id = ?");
    q.bind(1, run_id);
    q.run();
    // After the delete has committed (it is its own transaction): no row names these any more.
    store::unlink_files(owned);
    store::remove_checkpoint_folder(m_impl->path, r.uuid);
    return left;
}

void RunStore::rename(std::int64_t run_id, const std::string& name) {
    m_impl->require_writable("rename run " + std::to_string(run_id));
    if (name.empty()) throw Error("A run's name cannot be empty.");
    store::check_run_text(store::RunText::name, name);
    Statement q(m_impl->db(), "UPDATE runs SET name = ? WHERE id = ?");
    q.bind(1, name).bind(2, run_id);
    q.run();
    if (m_impl->db().changes() == 0) m_impl->no_such_run(run_id);
}

void RunStore::set_notes(std::int64_t run_id, const std::string& notes) {
    m_impl->require_writable("change the notes of run " + std::to_string(run_id));
    store::check_run_text(store::RunText::notes, notes);
    Statement q(m_impl->db(), "UPDATE runs SET notes = ? WHERE id = ?");
    q.bind(1, notes).bind(2, run_id);
    q.run();
    if (m_impl->db().changes() == 0) m_impl->no_such_run(run_id);
}

void RunStore::set_tags(std::int64_t run_id, const std::string& tags) {
    m_impl->require_writable("change the tags of run " + std::to_string(run_id));
    const std::string normal = store::normalize_tags(tags);
    store::check_run_text(store::RunText::tags, normal);
    Statement q(m_impl->db(), "UPDATE runs SET tags = ? WHERE id = ?");
    q.bind(1, normal).bind(2, run_id);
    q.run();
    if (m_impl->db().changes() == 0) m_impl->no_such_run(run_id);
}

// ---- sweeps

SweepRow RunStore::create_sweep(const SweepInfo& info) {
    m_impl->require_writable("create a sweep");
    return store::insert_sweep(m_impl->db(), info);
}

std::vector<SweepRow> RunStore::list_sweeps() {
    std::vector<SweepRow> rows = store::read_sweeps(m_impl->db());
    for (const SweepRow& s : rows)
        check_stored_json(s.spec_json, "the definition of sweep " + std::to_string(s.id) + " (sweeps.spec_json)",
                          m_impl->quoted_path());
    return rows;
}

SweepRow RunStore::sweep(std::int64_t id) {
    auto row = store::read_sweep(m_impl->db(), id);
    if (!row) m_impl->no_such_sweep(id);
    check_stored_json(row->spec_json, "the definition of sweep " + std::to_string(id) + " (sweeps.spec_json)",
                      m_impl->quoted_path());
    return *row;
}

std::int64_t RunStore::resolve_sweep(const std::string& id_or_prefix) {
    return store::resolve_sweep(m_impl->db(), m_impl->path, id_or_prefix);
}

void RunStore::set_sweep_slurm(std::int64_t id, const std::string& job, const std::string& folder) {
    m_impl->require_writable("record the Slurm job of sweep " + std::to_string(id));
    if (!store::update_sweep_slurm(m_impl->db(), id, job, folder)) m_impl->no_such_sweep(id);
}

std::vector<RunRow> RunStore::sweep_runs(std::int64_t sweep_id) {
    const SweepRow s = sweep(sweep_id);
    Statement q(m_impl->db(), std::string(run_select) + " WHERE r.sweep_uuid = ? ORDER BY r.sweep_index, r.id");
    q.bind(1, s.uuid);
    std::vector<RunRow> rows;
    while (q.step()) rows.push_back(read_run_row(q, read_only(), m_impl->quoted_path()));
    return rows;
}

void RunStore::remove_sweep(std::int64_t id) {
    m_impl->require_writable("remove sweep " + std::to_string(id));
    if (!store::delete_sweep(m_impl->db(), id)) m_impl->no_such_sweep(id);
}

// ---- importing

ImportResult RunStore::import_store(const std::string& other_path) {
    m_impl->require_writable("import another store");
    return store::import_store(m_impl->db(), m_impl->path, other_path);
}

// ---- exporting

std::optional<RunStore::ExportFormat> RunStore::parse_export_format(const std::string& name) {
    if (name == "csv") return ExportFormat::csv;
    if (name == "json") return ExportFormat::json;
    return std::nullopt;
}

void RunStore::export_table(std::int64_t run_id, const std::string& table, ExportFormat format, std::ostream& out) {
    const store::TableSpec* spec = store::find_run_table(table);
    if (!spec)
        throw Error("There is no table '" + table + "' to export; the tables are " + store::run_table_names + ".");
    m_impl->require_run(run_id);
    store::write_table_export(m_impl->db(), run_id, *spec, format == ExportFormat::json, out);
}

std::string RunStore::export_table(std::int64_t run_id, const std::string& table, ExportFormat format) {
    std::ostringstream out;
    export_table(run_id, table, format, out);
    return out.str();
}

}  // namespace mantissa
