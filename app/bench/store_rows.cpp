// Synthetic rows and raw-SQLite baselines for the `store` suite: see store_rows.h.
#include "bench/store_rows.h"

#include <sqlite3.h>

#include <filesystem>

#include "bench/stats.h"
#include "error.h"
#include "store/run_store.h"

namespace mantissa::bench {

namespace {

class Db {
public:
    explicit Db(const std::string& path) {
        if (sqlite3_open(path.c_str(), &m_db) != SQLITE_OK) fail("open " + path);
    }
    ~Db() {
        for (auto* s : m_statements) sqlite3_finalize(s);
        sqlite3_close(m_db);
    }
    void exec(const std::string& sql) {
        if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql.substr(0, 40));
    }
    sqlite3_stmt* prepare(const char* sql) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(m_db, sql, -1, &s, nullptr) != SQLITE_OK) fail(sql);
        m_statements.push_back(s);
        return s;
    }
    void step(sqlite3_stmt* s) {
        if (sqlite3_step(s) != SQLITE_DONE) fail("insert");
        sqlite3_reset(s);
    }
    [[noreturn]] void fail(const std::string& what) {
        throw Error("raw SQLite baseline: " + what + ": " + sqlite3_errmsg(m_db));
    }

private:
    sqlite3* m_db = nullptr;
    std::vector<sqlite3_stmt*> m_statements;
};

void bind_step_row(sqlite3_stmt* st, const StepRecord& s) {
    const MemoryBreakdown& m = s.memory;
    sqlite3_bind_int64(st, 1, 1);
    sqlite3_bind_int64(st, 2, s.step);
    sqlite3_bind_int64(st, 3, s.epoch);
    sqlite3_bind_double(st, 4, s.time_s);
    sqlite3_bind_double(st, 5, s.loss);
    sqlite3_bind_double(st, 6, s.loss_scale);
    sqlite3_bind_int64(st, 7, s.overflow);
    sqlite3_bind_int64(st, 8, s.skipped);
    sqlite3_bind_double(st, 9, s.grad_norm);
    sqlite3_bind_double(st, 10, s.learning_rate);
    sqlite3_bind_double(st, 11, s.samples_per_s);
    sqlite3_bind_double(st, 12, s.step_time_ms);
    sqlite3_bind_int64(st, 13, m.parameters);
    sqlite3_bind_int64(st, 14, m.master_weights);
    sqlite3_bind_int64(st, 15, m.gradients);
    sqlite3_bind_int64(st, 16, m.optimizer_state);
    sqlite3_bind_int64(st, 17, m.activations);
    sqlite3_bind_int64(st, 18, m.workspace);
    sqlite3_bind_int64(st, 19, m.device_in_use);
    sqlite3_bind_int64(st, 20, m.device_total);
    sqlite3_bind_int64(st, 21, m.modelled);
}

}  // namespace

StepRecord make_step(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.epoch = static_cast<std::int32_t>(i / 469);
    s.time_s = 0.002 * static_cast<double>(i);
    s.loss = 2.3 / (1.0 + 0.001 * static_cast<double>(i));
    s.loss_scale = 65536;
    s.overflow = i % 1000 == 999;
    s.skipped = s.overflow;
    s.grad_norm = 0.5 + 1e-6 * static_cast<double>(i);
    s.learning_rate = 1e-3;
    s.samples_per_s = 64000;
    s.step_time_ms = 2.0;
    s.memory = {800000, 800000, 400000, 1600000, 131072, 65536, 0, 0, true};
    return s;
}

std::vector<LayerStepRecord> make_layers(std::int64_t step, int count) {
    std::vector<LayerStepRecord> v(static_cast<std::size_t>(count));
    for (int l = 0; l < count; ++l) {
        LayerStepRecord& r = v[static_cast<std::size_t>(l)];
        r.step = step;
        r.layer = l;
        r.name = "fc" + std::to_string(l + 1);
        r.precision = Format::fp16;
        r.grad_amax = 0.01;
        r.grad_elements = 200000;
        r.frac_zero = 0.01;
        r.frac_underflow = 0.002;
        for (int d = -14; d <= 14; ++d)  // ~30 binades, as a real gradient
            r.grad_exponents.counts[static_cast<std::size_t>(-20 + d - ExponentHistogram::min_exponent)] =
                static_cast<std::uint32_t>(200000 / (1 + d * d));
    }
    return v;
}

double raw_steps(const std::string& path, std::int64_t rows) {
    std::filesystem::remove(path);
    Db db(path);
    db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    db.exec("CREATE TABLE steps (run_id INTEGER NOT NULL, step INTEGER NOT NULL, epoch INTEGER NOT NULL, "
            "time_s REAL, loss REAL, loss_scale REAL, overflow INTEGER NOT NULL, skipped INTEGER NOT NULL, "
            "grad_norm REAL, learning_rate REAL, samples_per_s REAL, step_time_ms REAL, "
            "mem_parameters INTEGER NOT NULL, mem_master_weights INTEGER NOT NULL, "
            "mem_gradients INTEGER NOT NULL, mem_optimizer_state INTEGER NOT NULL, "
            "mem_activations INTEGER NOT NULL, mem_workspace INTEGER NOT NULL, "
            "device_mem_in_use INTEGER NOT NULL, device_mem_total INTEGER NOT NULL, "
            "memory_modelled INTEGER NOT NULL, PRIMARY KEY (run_id, step)) WITHOUT ROWID");
    sqlite3_stmt* st = db.prepare("INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < rows; ++i) {
        if (i % 10000 == 0) db.exec("BEGIN");
        bind_step_row(st, make_step(i));
        db.step(st);
        if (i % 10000 == 9999 || i == rows - 1) db.exec("COMMIT");
    }
    return seconds_since(t0);
}

double raw_layer_steps(const std::string& path, std::int64_t steps, int layers) {
    std::filesystem::remove(path);
    { RunStore store(path); }  // the store's schema, nothing else
    Db db(path);
    db.exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;");
    db.exec("INSERT INTO runs(uuid, name, created_at, updated_at, status) VALUES('u', 'raw', '', '', 'running')");
    sqlite3_stmt* st = db.prepare("INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    sqlite3_stmt* lt = db.prepare("INSERT INTO layer_steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,NULL)");
    const auto rows = make_layers(0, layers);
    const std::vector<unsigned char> blob(45, 0x11);  // a typical encoded histogram (~30 binades)
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < steps; ++i) {
        if (i % 10000 == 0) db.exec("BEGIN");
        bind_step_row(st, make_step(i));
        db.step(st);
        for (const auto& l : rows) {
            sqlite3_bind_int64(lt, 1, 1);
            sqlite3_bind_int64(lt, 2, i);
            sqlite3_bind_int64(lt, 3, l.layer);
            sqlite3_bind_text(lt, 4, l.name.c_str(), static_cast<int>(l.name.size()), SQLITE_STATIC);
            sqlite3_bind_text(lt, 5, "fp16", 4, SQLITE_STATIC);
            sqlite3_bind_double(lt, 6, l.grad_amax);
            sqlite3_bind_int64(lt, 7, l.grad_elements);
            sqlite3_bind_double(lt, 8, l.frac_zero);
            sqlite3_bind_double(lt, 9, l.frac_subnormal);
            sqlite3_bind_double(lt, 10, l.frac_nonfinite);
            sqlite3_bind_double(lt, 11, l.frac_underflow);
            sqlite3_bind_double(lt, 12, l.frac_lost_updates);
            sqlite3_bind_blob(lt, 13, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
            db.step(lt);
        }
        if (i % 10000 == 9999 || i == steps - 1) db.exec("COMMIT");
    }
    return seconds_since(t0);
}

}  // namespace mantissa::bench

namespace mantissa::bench {
std::string sqlite_version() { return sqlite3_libversion(); }
}  // namespace mantissa::bench
