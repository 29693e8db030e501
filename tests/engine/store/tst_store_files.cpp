// Files the store meets: a new one (with its folders), version-1 to -4 stores to migrate
// (built here by hand, as Mantissa 0.0 to 0.2 and the builds after it wrote them), one from a newer version (refused, left
// byte-identical), another program's SQLite database, files that are not SQLite, damaged files,
// read-only files and folders (read through the fallback), and paths that cannot be created. Each
// bad case must give one clear sentence, never a crash.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

// Schema version 1, as Mantissa 0.0 created it (kept here, apart from the store's own copy, so a
// change to the store's v1 DDL cannot hide a migration bug).
const char* const v1_schema = R"sql(
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, finished_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'stopped', 'failed', 'interrupted')),
  error TEXT NOT NULL DEFAULT '', backend TEXT NOT NULL DEFAULT '', device TEXT NOT NULL DEFAULT '',
  config_json TEXT NOT NULL DEFAULT '{}', notes TEXT NOT NULL DEFAULT '', app_version TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '', pid INTEGER NOT NULL DEFAULT 0, process_start INTEGER NOT NULL DEFAULT 0,
  boot_id TEXT NOT NULL DEFAULT '');
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE steps (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL,
  epoch INTEGER NOT NULL, time_s REAL, loss REAL, loss_scale REAL, overflow INTEGER NOT NULL,
  skipped INTEGER NOT NULL, grad_norm REAL, learning_rate REAL, samples_per_s REAL, step_time_ms REAL,
  mem_parameters INTEGER NOT NULL, mem_master_weights INTEGER NOT NULL, mem_gradients INTEGER NOT NULL,
  mem_optimizer_state INTEGER NOT NULL, mem_activations INTEGER NOT NULL, mem_workspace INTEGER NOT NULL,
  device_mem_in_use INTEGER NOT NULL, device_mem_total INTEGER NOT NULL, memory_modelled INTEGER NOT NULL,
  PRIMARY KEY (run_id, step)) WITHOUT ROWID;
CREATE TABLE layer_steps (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, layer INTEGER NOT NULL, name TEXT NOT NULL, precision TEXT NOT NULL, grad_amax REAL,
  grad_elements INTEGER NOT NULL, frac_zero REAL, frac_subnormal REAL, frac_nonfinite REAL,
  frac_underflow REAL, frac_lost_updates REAL, PRIMARY KEY (run_id, step, layer)) WITHOUT ROWID;
CREATE TABLE evals (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, split TEXT NOT NULL, loss REAL, accuracy REAL);
CREATE INDEX evals_by_run ON evals(run_id, step);
CREATE TABLE events (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, time_s REAL, kind TEXT NOT NULL, message TEXT NOT NULL,
  data_json TEXT NOT NULL DEFAULT '{}');
CREATE INDEX events_by_run ON events(run_id, step);
PRAGMA application_id = 1296125524;
PRAGMA user_version = 1;
)sql";

void make_v1_store(const QString& path, int steps) {
    RawDb raw(path);
    QCOMPARE(raw.exec("PRAGMA journal_mode = WAL"), QString());
    QCOMPARE(raw.exec(v1_schema), QString());
    QCOMPARE(raw.exec("INSERT INTO runs(uuid, name, created_at, updated_at, finished_at, status, backend, "
                      "config_json, app_version) VALUES('00000000-0000-4000-8000-000000000001', 'old-run', "
                      "'2025-01-02T03:04:05.000Z', '2025-01-02T03:05:00.000Z', '2025-01-02T03:05:00.000Z', "
                      "'completed', 'cpu', '{\"old\":true}', '0.0.9')"),
             QString());
    QString sql = "BEGIN;";
    for (int i = 0; i < steps; ++i) {
        StepRecord s = make_step(i);
        sql += QString(
                   "INSERT INTO steps VALUES(1, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
                   "%15, %16, %17, %18, %19, %20);")
                   .arg(s.step)
                   .arg(s.epoch)
                   .arg(s.time_s, 0, 'g', 17)
                   .arg(s.loss, 0, 'g', 17)
                   .arg(s.loss_scale, 0, 'g', 17)
                   .arg(int(s.overflow))
                   .arg(int(s.skipped))
                   .arg(std::isinf(s.grad_norm) ? QString("9e999") : QString::number(s.grad_norm, 'g', 17))
                   .arg(s.learning_rate, 0, 'g', 17)
                   .arg(s.samples_per_s, 0, 'g', 17)
                   .arg(s.step_time_ms, 0, 'g', 17)
                   .arg(s.memory.parameters)
                   .arg(s.memory.master_weights)
                   .arg(s.memory.gradients)
                   .arg(s.memory.optimizer_state)
                   .arg(s.memory.activations)
                   .arg(s.memory.workspace)
                   .arg(s.memory.device_in_use)
                   .arg(s.memory.device_total)
                   .arg(int(s.memory.modelled));
        sql +=
            QString("INSERT INTO layer_steps VALUES(1, %1, 0, 'fc1', 'fp16', 0.5, 100, 0.1, 0.2, 0, 0.3, 0.4);").arg(i);
    }
    sql += "INSERT INTO evals(run_id, step, split, loss, accuracy) VALUES(1, 5, 'test', 0.7, 0.6);";
    sql += "INSERT INTO events(run_id, step, time_s, kind, message) VALUES(1, 0, 0, 'run_started', 'Started.');";
    sql += "COMMIT;";
    QCOMPARE(raw.exec(sql), QString());
}

// Schema version 1 -> 2, as Mantissa 0.1 migrated it (kept here, apart from the store's own copy).
const char* const v1_to_v2 = R"sql(
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN step_count INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET step_count = (SELECT count(*) FROM steps WHERE steps.run_id = runs.id);
ALTER TABLE layer_steps ADD COLUMN grad_exponents BLOB;
CREATE INDEX evals_by_split ON evals(run_id, split, step);
PRAGMA user_version = 2;
)sql";

// A version-2 store as Mantissa 0.1 left it: the v1 rows, migrated, and one fp8-e4m3 layer row
// per step beside the fp16 one (v2 had nowhere to keep its scaling), with a histogram blob.
void make_v2_store(const QString& path, int steps) {
    make_v1_store(path, steps);
    RawDb raw(path);
    QCOMPARE(raw.exec(v1_to_v2), QString());
    QString sql = "BEGIN;";
    for (int i = 0; i < steps; ++i)
        sql += QString("INSERT INTO layer_steps VALUES(1, %1, 1, 'fc2', 'fp8-e4m3', 0.25, 50, 0, 0, 0, 0.5, 0, "
                       "x'01290303C80101');")
                   .arg(i);
    sql += "COMMIT;";
    QCOMPARE(raw.exec(sql), QString());
}

// Schema version 2 -> 3, as Mantissa 0.2 migrated it (kept here, apart from the store's own copy).
const char* const v2_to_v3 = R"sql(
ALTER TABLE layer_steps ADD COLUMN fp8_scale_input REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_scale_weight REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_scale_grad_output REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_input REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_weight REAL;
ALTER TABLE layer_steps ADD COLUMN fp8_amax_grad_output REAL;
PRAGMA user_version = 3;
)sql";

// A version-3 store as Mantissa 0.2 left it: the v2 store, migrated, its FP8 rows given their
// scaling (x scale 2^k at step k, amax 0.5), and a note and tags on the run. No `layers` table.
void make_v3_store(const QString& path, int steps) {
    make_v2_store(path, steps);
    RawDb raw(path);
    QCOMPARE(raw.exec(v2_to_v3), QString());
    QCOMPARE(raw.exec("UPDATE layer_steps SET fp8_scale_input = 1 << step, fp8_scale_weight = 2, "
                      "fp8_scale_grad_output = 4, fp8_amax_input = 0.5, fp8_amax_weight = 0.25, "
                      "fp8_amax_grad_output = 0.125 WHERE precision = 'fp8-e4m3';"
                      "UPDATE runs SET notes = 'kept across the migration', tags = 'v3,old' WHERE id = 1"),
             QString());
}

// Schema version 3 -> 4, as the builds after 0.2.0 migrated it (kept here, apart from the store's
// own copy).
const char* const v3_to_v4 = R"sql(
CREATE TABLE layers (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, layer INTEGER NOT NULL,
  name TEXT NOT NULL, kind TEXT NOT NULL, in_channels INTEGER NOT NULL, in_height INTEGER NOT NULL,
  in_width INTEGER NOT NULL, out_channels INTEGER NOT NULL, out_height INTEGER NOT NULL,
  out_width INTEGER NOT NULL, parameters INTEGER NOT NULL, takes_precision INTEGER NOT NULL,
  PRIMARY KEY (run_id, layer)) WITHOUT ROWID;
PRAGMA user_version = 4;
)sql";

// A version-4 store: the v3 store, migrated, and its run's two layers. No `op_steps` table.
void make_v4_store(const QString& path, int steps) {
    make_v3_store(path, steps);
    RawDb raw(path);
    QCOMPARE(raw.exec(v3_to_v4), QString());
    QCOMPARE(raw.exec("INSERT INTO layers VALUES(1, 0, 'fc1', 'linear', 784, 1, 1, 100, 1, 1, 78500, 1);"
                      "INSERT INTO layers VALUES(1, 1, 'fc2', 'linear', 100, 1, 1, 10, 1, 1, 1010, 1);"),
             QString());
}

// Opens the store and reads everything in it, as a user browsing it would.
void open_and_read_everything(const QString& path, bool read_only = false) {
    RunStore store(path.toStdString(), read_only);
    for (const RunRow& r : store.list_runs()) {
        store.steps(r.id);
        store.layer_steps(r.id);
        store.op_steps(r.id);
        store.evals(r.id);
        store.events(r.id);
        store.export_table(r.id, "steps", RunStore::ExportFormat::csv);
    }
}

void record_small_run(const QString& path, int steps = 50, int layers = 2) {
    RunStore store(path.toStdString());
    auto rec = store.start_run({"small", "cpu", "test", "{}"});
    for (int i = 0; i < steps; ++i) {
        rec->on_step(make_step(i), make_layers(i, layers));
        rec->on_op_steps(make_ops(i, 1));
    }
    rec->on_eval({steps - 1, "test", 0.5, 0.9});
    rec->finish(RunStatus::completed);
}

void write_file(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}

}  // namespace

class StoreFiles : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_counter = 0;
    // A fresh path for each case (data-driven rows included).
    QString fresh(const QString& name) { return m_dir.filePath(QString("%1-%2").arg(++m_counter).arg(name)); }

private slots:
    // The default store follows the XDG base directory rules: XDG_DATA_HOME when absolute, else
    // HOME's .local/share (a relative XDG_DATA_HOME is ignored), else the password database's home.
    void defaultStorePathFollowsTheXdgRules() {
        const QByteArray xdg = qgetenv("XDG_DATA_HOME"), home = qgetenv("HOME");
        const bool had_xdg = qEnvironmentVariableIsSet("XDG_DATA_HOME"), had_home = qEnvironmentVariableIsSet("HOME");
        qputenv("XDG_DATA_HOME", "/data/x");
        qputenv("HOME", "/home/someone");
        const std::string absolute = default_store_path();
        qputenv("XDG_DATA_HOME", "relative/x");
        const std::string relative = default_store_path();
        qunsetenv("XDG_DATA_HOME");
        qunsetenv("HOME");
        const std::string no_home = default_store_path();
        had_xdg ? qputenv("XDG_DATA_HOME", xdg) : qunsetenv("XDG_DATA_HOME");
        had_home ? qputenv("HOME", home) : qunsetenv("HOME");
        QCOMPARE(absolute, std::string("/data/x/mantissa/runs.sqlite"));
        QCOMPARE(relative, std::string("/home/someone/.local/share/mantissa/runs.sqlite"));
        const passwd* user = getpwuid(getuid());
        QCOMPARE(no_home, std::string(user && user->pw_dir && *user->pw_dir ? user->pw_dir : ".") +
                              "/.local/share/mantissa/runs.sqlite");
    }

    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // The default store's missing folders are made (docs/schema.md); any other path must name a
    // folder that exists: a mistyped --db creates no folders anywhere, and no file.
    void createsTheFileAndItsFolders() {
        const QString elsewhere = m_dir.filePath("missing/deeper/runs.sqlite");
        const QString error = error_of([&] { RunStore store(elsewhere.toStdString()); });
        QVERIFY2(error == "Cannot create the run store '" + elsewhere + "': its folder '" + m_dir.filePath("missing/deeper") +
                              "' does not exist; create the folder first, or choose a file in a folder that exists.",
                 qPrintable(error));
        QVERIFY(!QFileInfo::exists(m_dir.filePath("missing")));

        const QByteArray xdg = qgetenv("XDG_DATA_HOME");
        const bool had_xdg = qEnvironmentVariableIsSet("XDG_DATA_HOME");
        qputenv("XDG_DATA_HOME", m_dir.filePath("new/deeper").toUtf8());
        const QString path = QString::fromStdString(default_store_path());
        QCOMPARE(path, m_dir.filePath("new/deeper/mantissa/runs.sqlite"));
        {
            RunStore store(path.toStdString());
            QVERIFY(!store.read_only());
            QCOMPARE(store.migrated_from(), 0);
            QVERIFY(store.list_runs().empty());
        }
        had_xdg ? qputenv("XDG_DATA_HOME", xdg) : qunsetenv("XDG_DATA_HOME");
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA application_id"), 0x4D414E54LL);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("PRAGMA journal_mode"), QString("wal"));
        QCOMPARE(raw.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
                             "('runs', 'steps', 'layer_steps', 'evals', 'events', 'layers', 'op_steps')"),
                 7LL);
        // v4's layers table, as docs/schema.md gives it: its columns in order, keyed by run and layer.
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('layers') "
                          "ORDER BY cid)"),
                 QString("run_id,layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                         "parameters,takes_precision"));
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('layers') "
                          "WHERE pk > 0 ORDER BY pk)"),
                 QString("run_id,layer"));
        QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_list WHERE name = 'layers' AND wr = 1"), 1LL);
        QCOMPARE(raw.text("SELECT \"table\" || ' ' || on_delete FROM pragma_foreign_key_list('layers')"),
                 QString("runs CASCADE"));
        // v5's op_steps, likewise: keyed by run, step and the op's place in the step.
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('op_steps') "
                          "ORDER BY cid)"),
                 QString("run_id,step,op,name,stat,value"));
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('op_steps') "
                          "WHERE pk > 0 ORDER BY pk)"),
                 QString("run_id,step,op"));
        QCOMPARE(raw.text("SELECT type FROM pragma_table_info('op_steps') WHERE name = 'value'"), QString("REAL"));
        QCOMPARE(raw.integer("SELECT \"notnull\" FROM pragma_table_info('op_steps') WHERE name = 'value'"), 0LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_list WHERE name = 'op_steps' AND wr = 1"), 1LL);
        QCOMPARE(raw.text("SELECT \"table\" || ' ' || on_delete FROM pragma_foreign_key_list('op_steps')"),
                 QString("runs CASCADE"));
        // v7's block_scale_steps: keyed by run, step, layer and operand slot; a rowid table (its
        // rows hold blobs of kilobytes), the exponents a BLOB that may not be NULL.
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM "
                          "pragma_table_info('block_scale_steps') ORDER BY cid)"),
                 QString("run_id,step,layer,slot,name,operand,format,own,rows_total,rows,row_length,blocks_per_row,"
                         "exponents"));
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM "
                          "pragma_table_info('block_scale_steps') WHERE pk > 0 ORDER BY pk)"),
                 QString("run_id,step,layer,slot"));
        QCOMPARE(raw.text("SELECT type FROM pragma_table_info('block_scale_steps') WHERE name = 'exponents'"),
                 QString("BLOB"));
        QCOMPARE(raw.integer("SELECT \"notnull\" FROM pragma_table_info('block_scale_steps') WHERE name = 'exponents'"),
                 1LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_list WHERE name = 'block_scale_steps' AND wr = 0"),
                 1LL);
        QCOMPARE(raw.text("SELECT \"table\" || ' ' || on_delete FROM pragma_foreign_key_list('block_scale_steps')"),
                 QString("runs CASCADE"));
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
    }

    // A reading open (runs, show, export) never makes a store, not even of an empty file or an
    // empty database: it says so and leaves the file as it was, with nothing beside it.
    void readingOpenLeavesAnEmptyFileAlone() {
        const QString path = fresh("empty-read.sqlite");
        write_file(path, {});
        const QString empty_db = fresh("empty-db.sqlite");
        QCOMPARE(RawDb(empty_db).exec("PRAGMA user_version = 0"), QString());  // a database with no tables
        const QByteArray empty_db_bytes = file_sha256(empty_db);
        for (const QString& p : {path, empty_db}) {
            const QString error = error_of([&] { RunStore store(p.toStdString(), StoreAccess::read); });
            QVERIFY2(error.startsWith("The file '" + p + "' is an empty database, not yet a run store"), qPrintable(error));
            QVERIFY2(!error.contains('\n') && error.endsWith('.'), qPrintable(error));
            QVERIFY(!QFileInfo::exists(p + "-wal") && !QFileInfo::exists(p + "-shm") &&
                    !QFileInfo::exists(p + "-journal"));
        }
        QCOMPARE(QFileInfo(path).size(), 0);
        QCOMPARE(file_sha256(empty_db), empty_db_bytes);
    }

    // A b-tree page whose cell pointers are garbage (the array overwritten in place, its cell count
    // intact): SQLite walks such a page as if it held fewer rows unless it checks the pointers
    // when it loads the page. Each leaf page garbled in turn, reading everything either fails with
    // the store's sentence or gives every row, never part of them without a word.
    void garbledCellPointersAreDamageNotFewerRows() {
        const QString good = fresh("garble-good.sqlite");
        record_small_run(good, 400, 2);
        const auto everything = [](const QString& path) {
            RunStore store(path.toStdString(), true);
            QString text;
            for (const RunRow& r : store.list_runs())
                text += QString("%1 %2 %3 %4 %5\n")
                            .arg(store.steps(r.id).size())
                            .arg(store.layer_steps(r.id).size())
                            .arg(store.op_steps(r.id).size())
                            .arg(store.evals(r.id).size())
                            .arg(store.events(r.id).size()) +
                        QString::fromStdString(store.export_table(r.id, "steps", RunStore::ExportFormat::csv));
            return text;
        };
        const QString want = everything(good);
        // Every row of each table through SQLite alone, as it reads without checking a page's
        // cells: the row count, or -1 when SQLite reported an error. A page whose damage this
        // reads as fewer rows without an error is the damage this test is about.
        const auto plain_counts = [](const QString& path) {
            QList<int> counts;
            sqlite3* db = nullptr;
            sqlite3_open_v2(("file:" + path + "?immutable=1").toUtf8().constData(), &db,
                            SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
            for (const char* table : {"steps", "layer_steps", "op_steps", "evals", "events"}) {
                // By run, as the store reads them (a search of the key, not a scan).
                const std::string sql = std::string("SELECT * FROM ") + table + " WHERE run_id = 1";
                sqlite3_stmt* s = nullptr;
                int n = 0, rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
                while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
                    ++n;
                    rc = SQLITE_OK;
                }
                counts << (rc == SQLITE_DONE ? n : -1);
                sqlite3_finalize(s);
            }
            sqlite3_close(db);
            return counts;
        };
        const QList<int> all_rows = plain_counts(good);
        QFile f(good);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        f.close();
        const int page = (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
        QVERIFY(page >= 512 && bytes.size() % page == 0);
        int garbled = 0, refused = 0, unnoticed_by_sqlite = 0;
        for (qsizetype at = page; at < bytes.size(); at += page) {  // page 1 holds the schema
            const char type = bytes[at];
            if (type != 0x0D && type != 0x0A) continue;  // a table's or an index's leaf page
            QByteArray b = bytes;
            for (int i = 8; i < 808 && i + 4 <= page; i += 4) b.replace(at + i, 4, QByteArray("\xDE\xAD\xBE\xEF", 4));
            const QString path = fresh("garbled.sqlite");
            write_file(path, b);
            ++garbled;
            const QList<int> counts = plain_counts(path);
            for (int i = 0; i < counts.size(); ++i)
                if (counts[i] >= 0 && counts[i] < all_rows[i]) ++unnoticed_by_sqlite;
            QString got;
            const QString error = error_of([&] { got = everything(path); });
            if (error.isEmpty()) {
                QVERIFY2(got == want,
                         qPrintable(QString("page %1 garbled was read as other rows, without a word").arg(at / page + 1)));
                continue;
            }
            ++refused;
            QVERIFY2(error.startsWith("The run store '" + path + "' is damaged"), qPrintable(error));
            QVERIFY2(!error.contains('\n'), qPrintable(error));
        }
        QVERIFY(garbled >= 5);
        QVERIFY(refused >= 1);
        QVERIFY2(unnoticed_by_sqlite >= 1, "no garbled page would have been read as fewer rows");
    }

    void emptyFileBecomesAStore() {
        const QString path = fresh("empty.sqlite");
        write_file(path, {});
        RunStore store(path.toStdString());
        QVERIFY(store.list_runs().empty());
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
    }

    void migratesVersion1WithABackup() {
        const QString path = fresh("v1.sqlite");
        make_v1_store(path, 40);
        const QByteArray before = file_sha256(path);
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 1);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v1");
            auto runs = store.list_runs();
            QCOMPARE(runs.size(), std::size_t(1));
            QCOMPARE(runs[0].name, std::string("old-run"));
            QCOMPARE(runs[0].steps, std::int64_t(40));  // the cached count, filled by the migration
            QCOMPARE(runs[0].tags, std::string());
            QCOMPARE(runs[0].test_accuracy.value(), 0.6);
            QCOMPARE(runs[0].final_loss.value(), make_step(39).loss);
            auto steps = store.steps(1);
            QCOMPARE(steps.size(), std::size_t(40));
            for (int i = 0; i < 40; ++i) {
                QString d = diff(steps[static_cast<std::size_t>(i)], make_step(i));
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
            auto layers = store.layer_steps(1);
            QCOMPARE(layers.size(), std::size_t(40));
            QCOMPARE(layers[3].precision, ComputeFormat(Format::fp16));
            for (auto c : layers[3].grad_exponents.counts) QCOMPARE(c, 0u);  // v1 had no histograms
            // The migrated store records like a new one.
            store.set_tags(1, "old");
            auto rec = store.start_run({"after-migration", "cpu", "", "{}"});
            rec->on_step(make_step(0), make_layers(0, 2));
            rec->finish(RunStatus::completed);
            QCOMPARE(store.layer_steps(rec->run_id()).size(), std::size_t(2));
        }
        {
            RawDb raw(path, true);
            QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
            QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
            QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_info('layer_steps') WHERE name = 'grad_exponents'"),
                     1LL);
            QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_info('layer_steps') WHERE name LIKE 'fp8_%'"), 6LL);
        }
        {
            RawDb backup(path + ".bak-v1", true);
            QCOMPARE(backup.integer("PRAGMA user_version"), 1LL);
            QCOMPARE(backup.integer("PRAGMA application_id"), 0x4D414E54LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM steps"), 40LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'tags'"), 0LL);
        }
        QVERIFY(file_sha256(path) != before);
        RunStore again(path.toStdString());
        QCOMPARE(again.migrated_from(), 0);
        QVERIFY(again.backup_path().empty());
    }

    // Version 2 -> 3 adds layer_steps' six fp8_* columns: old rows read them as absent (NULL),
    // new rows of a migrated store record them.
    void migratesVersion2WithABackup() {
        const QString path = fresh("v2.sqlite");
        make_v2_store(path, 12);
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 2);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v2");
            auto runs = store.list_runs();
            QCOMPARE(runs.size(), std::size_t(1));
            QCOMPARE(runs[0].steps, std::int64_t(12));
            auto layers = store.layer_steps(1);
            QCOMPARE(layers.size(), std::size_t(24));
            QCOMPARE(layers[1].name, std::string("fc2"));
            QCOMPARE(layers[1].precision, ComputeFormat(Format::fp8_e4m3));
            QCOMPARE(layers[1].grad_exponents.counts[static_cast<std::size_t>(-20 - ExponentHistogram::min_exponent)],
                     200u);
            for (const auto& l : layers) QVERIFY2(!l.fp8.has_value(), "a v2 row has no FP8 scaling");
            // The migrated store records the new columns.
            auto rec = store.start_run({"after-migration", "cpu", "", "{}"});
            auto fresh_layers = make_layers(4, 2);  // layer 0 is fp8-e4m3 at step 4
            QVERIFY(fresh_layers[0].fp8.has_value());
            rec->on_step(make_step(4), fresh_layers);
            rec->finish(RunStatus::completed);
            auto got = store.layer_steps(rec->run_id());
            QCOMPARE(got.size(), std::size_t(2));
            for (std::size_t i = 0; i < 2; ++i) {
                const QString d = diff(got[i], fresh_layers[i]);
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
            const std::string csv = store.export_table(1, "layer_steps", RunStore::ExportFormat::csv);
            QVERIFY(csv.find("fp8_amax_grad_output\r\n") != std::string::npos);
            QVERIFY(csv.find(",fp8-e4m3,0.25,50,0,0,0,0.5,0,-21:3 -20:200 -19:1,,,,,,\r\n") != std::string::npos);
        }
        {
            RawDb raw(path, true);
            QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
            QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
            QCOMPARE(raw.integer("SELECT count(*) FROM layer_steps WHERE run_id = 1 AND (fp8_scale_input IS NOT NULL "
                                 "OR fp8_scale_weight IS NOT NULL OR fp8_scale_grad_output IS NOT NULL OR "
                                 "fp8_amax_input IS NOT NULL OR fp8_amax_weight IS NOT NULL OR "
                                 "fp8_amax_grad_output IS NOT NULL)"),
                     0LL);
            QCOMPARE(raw.integer("SELECT count(*) FROM layer_steps WHERE run_id = 2 AND fp8_scale_input IS NOT NULL"),
                     1LL);
        }
        {
            RawDb backup(path + ".bak-v2", true);
            QCOMPARE(backup.integer("PRAGMA user_version"), 2LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM layer_steps"), 24LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM pragma_table_info('layer_steps') WHERE name LIKE 'fp8_%'"),
                     0LL);
        }
        RunStore again(path.toStdString());
        QCOMPARE(again.migrated_from(), 0);
    }

    // Version 3 -> 4 adds the `layers` table: a v3 run keeps every row and has no layers (readers
    // say so), new runs record theirs; the backup is the v3 file as it was.
    void migratesVersion3WithABackup() {
        const QString path = fresh("v3.sqlite");
        make_v3_store(path, 12);
        const QByteArray before = file_sha256(path);
        std::int64_t fresh_run = 0;
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 3);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v3");
            auto runs = store.list_runs();
            QCOMPARE(runs.size(), std::size_t(1));
            QCOMPARE(runs[0].name, std::string("old-run"));
            QCOMPARE(runs[0].status, RunStatus::completed);
            QCOMPARE(runs[0].steps, std::int64_t(12));
            QCOMPARE(runs[0].notes, std::string("kept across the migration"));
            QCOMPARE(runs[0].tags, std::string("v3,old"));
            QCOMPARE(runs[0].config_json, std::string("{\"old\":true}"));
            QCOMPARE(runs[0].test_accuracy.value(), 0.6);
            auto steps = store.steps(1);
            QCOMPARE(steps.size(), std::size_t(12));
            for (int i = 0; i < 12; ++i) {
                const QString d = diff(steps[static_cast<std::size_t>(i)], make_step(i));
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
            auto layer_rows = store.layer_steps(1);
            QCOMPARE(layer_rows.size(), std::size_t(24));
            QCOMPARE(layer_rows[7].name, std::string("fc2"));  // step 3, the FP8 layer
            QVERIFY(layer_rows[7].fp8.has_value());
            QCOMPARE(layer_rows[7].fp8->input.scale, 8.0);
            QCOMPARE(layer_rows[7].fp8->grad_output.amax, 0.125);
            QVERIFY(!layer_rows[6].fp8.has_value());
            QCOMPARE(store.evals(1).size(), std::size_t(1));
            QCOMPARE(store.events(1).size(), std::size_t(1));
            // No layers were recorded before version 4: every reader gets none.
            QVERIFY(store.layers(1).empty());
            QCOMPARE(store.export_table(1, "layers", RunStore::ExportFormat::json), std::string("[]\n"));
            // The migrated store records a run's layers.
            RunInfo info{"after-migration", "cpu", "", "{}", make_layer_infos()};
            auto rec = store.start_run(info);
            rec->on_step(make_step(0), make_layers(0, 2));
            rec->finish(RunStatus::completed);
            fresh_run = rec->run_id();
            const auto got = store.layers(fresh_run);
            QCOMPARE(got.size(), info.layers.size());
            for (std::size_t l = 0; l < got.size(); ++l) {
                const QString d = diff(got[l], info.layers[l]);
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
        }
        {
            RawDb raw(path, true);
            QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
            QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
            QCOMPARE(raw.integer("SELECT count(*) FROM layers WHERE run_id = 1"), 0LL);
            QCOMPARE(raw.integer(QString("SELECT count(*) FROM layers WHERE run_id = %1").arg(fresh_run)), 4LL);
            QCOMPARE(raw.integer("SELECT count(*) FROM layer_steps WHERE run_id = 1 AND fp8_scale_input IS NOT NULL"),
                     12LL);
        }
        {
            RawDb backup(path + ".bak-v3", true);
            QCOMPARE(backup.integer("PRAGMA user_version"), 3LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'layers'"), 0LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM layer_steps"), 24LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM runs"), 1LL);
        }
        QVERIFY(file_sha256(path) != before);
        RunStore again(path.toStdString());
        QCOMPARE(again.migrated_from(), 0);
        QVERIFY(again.backup_path().empty());
    }

    // Version 4 -> 5 adds the `op_steps` table: a v4 run keeps every row (its layers too) and
    // has no op rows, new runs record theirs; the backup is the v4 file as it was.
    void migratesVersion4WithABackup() {
        const QString path = fresh("v4.sqlite");
        make_v4_store(path, 12);
        const QByteArray before = file_sha256(path);
        std::int64_t fresh_run = 0;
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 4);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v4");
            auto runs = store.list_runs();
            QCOMPARE(runs.size(), std::size_t(1));
            QCOMPARE(runs[0].name, std::string("old-run"));
            QCOMPARE(runs[0].steps, std::int64_t(12));
            QCOMPARE(runs[0].notes, std::string("kept across the migration"));
            QCOMPARE(store.steps(1).size(), std::size_t(12));
            QCOMPARE(store.layer_steps(1).size(), std::size_t(24));
            const auto layers = store.layers(1);
            QCOMPARE(layers.size(), std::size_t(2));
            QCOMPARE(layers[1].name, std::string("fc2"));
            QCOMPARE(layers[1].parameters, std::int64_t(1010));
            // No op rows were recorded before version 5: every reader gets none.
            QVERIFY(store.op_steps(1).empty());
            QCOMPARE(store.totals(1).op_rows, std::int64_t(0));
            QCOMPARE(store.export_table(1, "op_steps", RunStore::ExportFormat::json), std::string("[]\n"));
            QCOMPARE(store.export_table(1, "op_steps", RunStore::ExportFormat::csv),
                     std::string("step,op,name,stat,value\r\n"));
            // The migrated store records a run's op rows.
            auto rec = store.start_run({"after-migration", "cpu", "", "{}", make_layer_infos()});
            for (int i = 0; i < 4; ++i) {
                rec->on_step(make_step(i), make_layers(i, 2));
                rec->on_op_steps(make_ops(i, 2));
            }
            rec->finish(RunStatus::completed);
            fresh_run = rec->run_id();
            const auto got = store.op_steps(fresh_run);
            QCOMPARE(got.size(), 4 * make_ops(0, 2).size());
            for (std::size_t i = 0; i < got.size(); ++i) {
                const QString d = diff(got[i], make_ops(static_cast<std::int64_t>(i / 7), 2)[i % 7]);
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
        }
        {
            RawDb raw(path, true);
            QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
            QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
            QCOMPARE(raw.integer("SELECT count(*) FROM op_steps WHERE run_id = 1"), 0LL);
            QCOMPARE(raw.integer(QString("SELECT count(*) FROM op_steps WHERE run_id = %1").arg(fresh_run)), 28LL);
            QCOMPARE(raw.integer("SELECT count(*) FROM op_steps WHERE value IS NULL"), 1LL);  // step 3's NaN logit
            QCOMPARE(raw.integer("SELECT count(*) FROM layers WHERE run_id = 1"), 2LL);
        }
        {
            RawDb backup(path + ".bak-v4", true);
            QCOMPARE(backup.integer("PRAGMA user_version"), 4LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'op_steps'"), 0LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM layers"), 2LL);
            QCOMPARE(backup.integer("SELECT count(*) FROM runs"), 1LL);
        }
        QVERIFY(file_sha256(path) != before);
        RunStore again(path.toStdString());
        QCOMPARE(again.migrated_from(), 0);
        QVERIFY(again.backup_path().empty());
    }

    // Version 5 -> 6 adds `what_if_steps`: a v5 store (today's with the tables since dropped and
    // stamped 5) keeps its runs and has no what-if rows; a new run's rows read back in the order recorded
    // (formats in the run's order within a layer, not by name), the infinities kept, a NaN SQNR
    // as NaN; the export has their columns.
    void version5GainsWhatIfSteps() {
        const QString path = fresh("v5.sqlite");
        record_small_run(path);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE what_if_steps; DROP TABLE block_scale_steps; DROP TABLE checkpoints; "
                              "ALTER TABLE runs DROP COLUMN parent_uuid; ALTER TABLE runs DROP COLUMN parent_step; "
                              "DROP TABLE sweeps; DROP INDEX runs_by_sweep; ALTER TABLE runs DROP COLUMN sweep_uuid; "
                              "ALTER TABLE runs DROP COLUMN sweep_index; PRAGMA user_version = 5"),
                     QString());
        }
        RunStore store(path.toStdString());
        QCOMPARE(store.migrated_from(), 5);
        QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v5");
        QVERIFY(store.what_if_steps(1).empty());
        QCOMPARE(store.totals(1).what_if_rows, std::int64_t(0));

        const double inf = std::numeric_limits<double>::infinity();
        std::vector<WhatIfRecord> rows;
        for (int layer : {1, 0})
            for (const ComputeFormat& f : {ComputeFormat(BlockFormat::nvfp4), ComputeFormat(Format::bf16),
                                           ComputeFormat(Format::fp16)}) {
                WhatIfRecord w;
                w.step = 3;
                w.layer = layer;
                w.name = layer ? "fc2" : "fc1";
                w.format = f;
                w.input = {0.25, 0.125, 17.5, 640};
                w.weight = {0, 0, inf, 96};
                w.grad_output = {0.5, 0.0625, f.format == Format::fp16 ? -inf : std::nan(""), 40};
                rows.push_back(w);
            }
        auto rec = store.start_run({"what-if", "cpu", "", "{}", make_layer_infos()});
        rec->on_step(make_step(3), make_layers(3, 2));
        rec->on_what_if(rows);
        rec->finish(RunStatus::completed);
        const auto got = store.what_if_steps(rec->run_id());
        QCOMPARE(got.size(), rows.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            const WhatIfRecord& want = rows[(i + 3) % 6];  // fc1's rows first, in their recorded order
            QCOMPARE(got[i].step, want.step);
            QCOMPARE(got[i].layer, want.layer);
            QCOMPARE(got[i].name, want.name);
            QVERIFY(got[i].format == want.format);
            QCOMPARE(got[i].input.sqnr_db, 17.5);
            QCOMPARE(got[i].input.values, std::int64_t(640));
            QCOMPARE(got[i].weight.sqnr_db, inf);
            QCOMPARE(got[i].grad_output.saturation, 0.0625);
            if (want.format == ComputeFormat(Format::fp16)) QCOMPARE(got[i].grad_output.sqnr_db, -inf);
            else QVERIFY(std::isnan(got[i].grad_output.sqnr_db));
        }
        QCOMPARE(store.totals(rec->run_id()).what_if_rows, std::int64_t(6));
        QCOMPARE(store.what_if_steps(rec->run_id(), 4).size(), std::size_t(0));
        const std::string csv = store.export_table(rec->run_id(), "what_if_steps", RunStore::ExportFormat::csv);
        QVERIFY2(csv.starts_with("step,layer,slot,format,name,x_underflow,x_saturation,x_sqnr_db,x_values,"
                                 "w_underflow,w_saturation,w_sqnr_db,w_values,dy_underflow,dy_saturation,"
                                 "dy_sqnr_db,dy_values\r\n3,0,0,nvfp4,fc1,"),
                 csv.c_str());
    }

    // Version 6 -> 7 adds `block_scale_steps`: a v6 store (today's with the tables and columns since
    // dropped and stamped 6) keeps its runs and has no views; a new run's views, recorded out of order over two
    // steps, read back whole (sentinels, a sample of rows, a view without rows) by step, layer and
    // operand; totals count them and the last step that has them is found.
    void version6GainsBlockScaleSteps() {
        const QString path = fresh("v6.sqlite");
        record_small_run(path);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE block_scale_steps; DROP TABLE checkpoints; ALTER TABLE runs DROP COLUMN "
                              "parent_uuid; ALTER TABLE runs DROP COLUMN parent_step; DROP TABLE sweeps; DROP INDEX "
                              "runs_by_sweep; ALTER TABLE runs DROP COLUMN sweep_uuid; ALTER TABLE runs DROP COLUMN "
                              "sweep_index; PRAGMA user_version = 6"),
                     QString());
        }
        RunStore store(path.toStdString());
        QCOMPARE(store.migrated_from(), 6);
        QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v6");
        QCOMPARE(RawDb(path + ".bak-v6", true).integer("PRAGMA user_version"), 6LL);
        QVERIFY(store.block_scale_steps(1).empty());
        QCOMPARE(store.totals(1).block_scale_rows, std::int64_t(0));
        QVERIFY(!store.last_block_scale_step(1));
        QCOMPARE(store.steps(1).size(), std::size_t(50));

        auto rec = store.start_run({"block-scales", "cpu", "", "{}", make_layer_infos()});
        std::vector<BlockScaleRecord> want;
        for (std::int64_t step : {3, 7}) {
            const auto views = make_block_scales(step);
            want.insert(want.end(), views.begin(), views.end());
            rec->on_step(make_step(step), make_layers(step, 2));
            rec->on_block_scales({views.rbegin(), views.rend()});  // the store orders them
        }
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        const std::int64_t id = rec->run_id();
        const auto got = store.block_scale_steps(id);
        QCOMPARE(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            QVERIFY2(diff(want[i], got[i]).isEmpty(), qPrintable(diff(want[i], got[i])));
        QCOMPARE(store.totals(id).block_scale_rows, std::int64_t(10));
        QCOMPARE(store.last_block_scale_step(id), std::optional<std::int64_t>(7));
        const auto later = store.block_scale_steps(id, 4);
        QCOMPARE(later.size(), std::size_t(5));
        QCOMPARE(later.front().step, std::int64_t(7));
        QVERIFY(store.block_scale_steps(id, 8).empty());
        QVERIFY(store.block_scale_steps(1).empty());  // the migrated run's
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
        // As docs/schema.md gives the rows: the slot is the operand's, the names as written.
        QCOMPARE(raw.text(QString("SELECT group_concat(slot || operand || format || own, ' ') FROM (SELECT * FROM "
                                  "block_scale_steps WHERE run_id = %1 AND step = 3 ORDER BY layer, slot)")
                              .arg(id)),
                 QString("0xmxfp41 1Wmxfp41 2dymxfp41 0xnvfp40 1Wnvfp40"));
        // Each blob is a zlib stream of the int16s, little-endian, as docs/schema.md gives it: here
        // inflated by Qt's own zlib (qUncompress wants the length first, big-endian).
        for (int v = 0; v < 5; ++v) {
            const BlockScaleRecord& w = want[static_cast<std::size_t>(v)];
            QByteArray le;
            for (std::int16_t e : w.exponents) {
                le += static_cast<char>(static_cast<std::uint16_t>(e) & 0xFF);
                le += static_cast<char>(static_cast<std::uint16_t>(e) >> 8);
            }
            const auto n = static_cast<quint32>(le.size());
            QByteArray framed;
            for (int shift : {24, 16, 8, 0}) framed += static_cast<char>((n >> shift) & 0xFF);
            const QString hex = raw.text(QString("SELECT hex(exponents) FROM block_scale_steps WHERE run_id = %1 "
                                                 "AND step = 3 AND layer = %2 AND slot = %3")
                                             .arg(id)
                                             .arg(w.layer)
                                             .arg(static_cast<int>(w.operand)));
            framed += QByteArray::fromHex(hex.toLatin1());
            QCOMPARE(framed.mid(4, 1), QByteArray("\x78"));  // a zlib header: deflate, 32 KiB window
            QCOMPARE(qUncompress(framed), le);
        }
    }

    // A block-scale row damaged in the file (its blob, its sizes, its names) is read as one
    // sentence naming the row, by the reader and by the export alike; the rest of the store reads.
    void damagedBlockScalesAreOneSentence_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("sentence");
        const QString fc1_x = "The block scales of fc1's x at step 3 of run 2 are damaged: ";
        const QString where = " WHERE run_id = 2 AND step = 3 AND layer = 0 AND slot = 0";
        QTest::newRow("blob truncated")
            << "UPDATE block_scale_steps SET exponents = substr(exponents, 1, length(exponents) - 6)" + where
            << fc1_x + "their exponents' compressed data ends early";
        QTest::newRow("blob garbage") << "UPDATE block_scale_steps SET exponents = x'DEADBEEF00'" + where
                                      << fc1_x + "their exponents do not decompress (zlib: incorrect header check).";
        QTest::newRow("blob empty") << "UPDATE block_scale_steps SET exponents = x''" + where
                                    << fc1_x + "their exponents' compressed data ends early, after 0 of the 18 bytes "
                                               "3 rows of 3 blocks take.";
        QTest::newRow("bytes after the stream")
            << "UPDATE block_scale_steps SET exponents = exponents || x'00'" + where
            << fc1_x + "their blob has 1 byte after the end of the compressed exponents.";
        QTest::newRow("more rows than the blob holds")
            << "UPDATE block_scale_steps SET rows = 4" + where
            << fc1_x + "their exponents decompress to 18 bytes where 4 rows of 3 blocks take 24.";
        QTest::newRow("fewer blocks than the blob holds")
            << "UPDATE block_scale_steps SET blocks_per_row = 2" + where
            << fc1_x + "their exponents decompress to more than the 12 bytes 3 rows of 2 blocks take.";
        QTest::newRow("rows beyond the tensor's")
            << "UPDATE block_scale_steps SET rows = 9" + where
            << fc1_x + "their sizes do not fit together (9 of 8 rows, 3 blocks per row of 70 values).";
        QTest::newRow("sizes that overflow")
            << "UPDATE block_scale_steps SET rows = 4294967296, rows_total = 4294967296, blocks_per_row = "
               "4294967296" + where
            << fc1_x + "their sizes do not fit together (4294967296 of 4294967296 rows, 4294967296 blocks per row "
                       "of 70 values).";
        QTest::newRow("unknown format") << "UPDATE block_scale_steps SET format = 'mxfp9'" + where
                                        << fc1_x + "their format 'mxfp9' is not a block format (";
        QTest::newRow("unknown operand")
            << "UPDATE block_scale_steps SET operand = 'q'" + where
            << "The block scales of fc1's operand 'q' at step 3 of run 2 are damaged: the operand is not x, W or dy.";
        QTest::newRow("operand in another's slot")
            << "UPDATE block_scale_steps SET operand = 'W'" + where
            << "The block scales of fc1's W at step 3 of run 2 are damaged: they are stored in slot 0, where W "
               "takes slot 1.";
    }

    void damagedBlockScalesAreOneSentence() {
        QFETCH(QString, sql);
        QFETCH(QString, sentence);
        const QString path = fresh("damaged-views.sqlite");
        record_small_run(path, 5);
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"views", "cpu", "", "{}"});
            rec->on_step(make_step(3), make_layers(3, 2));
            rec->on_block_scales(make_block_scales(3));
            rec->finish(RunStatus::completed);
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(sql), QString());
        }
        RunStore store(path.toStdString(), StoreAccess::read);
        for (const QString& error :
             {error_of([&] { store.block_scale_steps(2); }),
              error_of([&] { store.export_table(2, "block_scale_steps", RunStore::ExportFormat::csv); }),
              error_of([&] { store.export_table(2, "block_scale_steps", RunStore::ExportFormat::json); })}) {
            QVERIFY2(error.startsWith(sentence), qPrintable(error));
            QVERIFY2(error.endsWith('.') && !error.contains('\n'), qPrintable(error));
        }
        QCOMPARE(store.block_scale_steps(2, 4).size(), std::size_t(0));  // the rows after it read
        QCOMPARE(store.steps(2).size(), std::size_t(1));
        QCOMPARE(store.totals(2).block_scale_rows, std::int64_t(5));
        QCOMPARE(store.last_block_scale_step(2), std::optional<std::int64_t>(3));
    }

    // A record whose exponents do not match its sizes is refused by on_block_scales, on the caller's
    // thread, before anything of the call is queued; the recording goes on.
    void malformedBlockScalesAreRefused() {
        const QString path = fresh("malformed-views.sqlite");
        RunStore store(path.toStdString());
        auto rec = store.start_run({"views", "cpu", "", "{}"});
        std::vector<BlockScaleRecord> views = make_block_scales(0);
        views[1].exponents.pop_back();
        const QString error = error_of([&] { rec->on_block_scales(views); });
        QVERIFY2(error.startsWith("Cannot record the block scales of fc1's W at step 0: 7 exponents for 4 of 4 rows "
                                  "of 2 blocks"),
                 qPrintable(error));
        views = make_block_scales(0);
        views[0].rows = 9;
        views[0].exponents.resize(27);
        QVERIFY(!error_of([&] { rec->on_block_scales(views); }).isEmpty());  // more rows than the tensor has
        rec->on_block_scales(make_block_scales(1));
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        const auto got = store.block_scale_steps(rec->run_id());
        QCOMPARE(got.size(), std::size_t(5));
        QCOMPARE(got.front().step, std::int64_t(1));
    }

    // A version-1 store goes through every step to version 9 in one open, with one backup (v1's).
    void migratesVersion1ToTheCurrentVersion() {
        const QString path = fresh("v1-to-v5.sqlite");
        make_v1_store(path, 6);
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 1);
            QVERIFY(store.layers(1).empty());
            QVERIFY(store.op_steps(1).empty());
            QVERIFY(store.what_if_steps(1).empty());
            QVERIFY(store.block_scale_steps(1).empty());
            QVERIFY(store.checkpoints(1).empty());
            QVERIFY(store.run(1).parent_uuid.empty());
            QVERIFY(store.run(1).sweep_uuid.empty() && !store.run(1).sweep_index);
            QVERIFY(store.list_sweeps().empty());
            QCOMPARE(store.steps(1).size(), std::size_t(6));
        }
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('layers', "
                             "'op_steps', 'what_if_steps', 'block_scale_steps', 'checkpoints', 'sweeps')"),
                 6LL);
        QVERIFY(QFile::exists(path + ".bak-v1"));
        QVERIFY(!QFile::exists(path + ".bak-v2") && !QFile::exists(path + ".bak-v3") &&
                !QFile::exists(path + ".bak-v4") && !QFile::exists(path + ".bak-v5") &&
                !QFile::exists(path + ".bak-v6") && !QFile::exists(path + ".bak-v7") &&
                !QFile::exists(path + ".bak-v8"));
    }

    // A current store without one of its tables (removed by hand, or damaged) is refused, and
    // left as it is.
    void missingTableIsDamage_data() {
        QTest::addColumn<QString>("table");
        QTest::newRow("layers (v4)") << "layers";
        QTest::newRow("op_steps (v5)") << "op_steps";
        QTest::newRow("what_if_steps (v6)") << "what_if_steps";
        QTest::newRow("block_scale_steps (v7)") << "block_scale_steps";
        QTest::newRow("checkpoints (v8)") << "checkpoints";
        QTest::newRow("sweeps (v9)") << "sweeps";
    }

    void missingTableIsDamage() {
        QFETCH(QString, table);
        const QString path = fresh("no-" + table + "-table.sqlite");
        record_small_run(path, 3);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE " + table), QString());
        }
        const QByteArray before = file_sha256(path);
        for (int access : {int(StoreAccess::write), int(StoreAccess::read), int(StoreAccess::read_only)}) {
            const QString error =
                error_of([&] { RunStore store(path.toStdString(), static_cast<StoreAccess>(access)); });
            QVERIFY2(error.contains("The run store '" + path + "' is damaged (only 10 of its 11 tables exist)"),
                     qPrintable(error));
        }
        QCOMPARE(file_sha256(path), before);
    }

    void migrationKeepsAnEarlierBackup() {
        const QString path = fresh("v1-again.sqlite");
        make_v1_store(path, 3);
        write_file(path + ".bak-v1", "an earlier backup");
        RunStore store(path.toStdString());
        QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v1.2");
        QFile earlier(path + ".bak-v1");
        QVERIFY(earlier.open(QIODevice::ReadOnly));
        QCOMPARE(earlier.readAll(), QByteArray("an earlier backup"));
        RawDb backup(path + ".bak-v1.2", true);
        QCOMPARE(backup.integer("PRAGMA user_version"), 1LL);
    }

    // Opening for reading (runs, show, export) never migrates: an older store is refused with a
    // sentence, its bytes and folder as they were (no backup copy); a writing open then migrates it.
    void readingMigratesWithABackup() {
        const QString path = fresh("v1-read.sqlite");
        make_v1_store(path, 3);
        RunStore reader(path.toStdString(), StoreAccess::read);
        QCOMPARE(reader.migrated_from(), 1);
        QVERIFY(QFile::exists(path + ".bak-v1"));
        QCOMPARE(reader.list_runs().size(), std::size_t(1));
        const QString missing = fresh("absent.sqlite");
        const QString error = error_of([&] { RunStore store(missing.toStdString(), StoreAccess::read); });
        QVERIFY2(error.contains("There is no run store at"), qPrintable(error));
        QVERIFY(!QFile::exists(missing));  // reading creates nothing
    }

    // A migration that fails (a store stamped version 1 that already has version 2's columns) is
    // rolled back and says so; opening it again and again keeps the one backup copy it made. (One
    // of version 3's columns is dropped: a file stamped 1 with every column of the current version
    // is refused as damaged before any migration, tst_store_damage.cpp.)
    void failedMigrationLeavesTheStoreAndOneBackup() {
        const QString path = fresh("bad-v1.sqlite");
        record_small_run(path, 5);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("ALTER TABLE layer_steps DROP COLUMN fp8_amax_grad_output"), QString());
            QCOMPARE(raw.exec("PRAGMA user_version = 1"), QString());
        }
        for (int attempt = 0; attempt < 3; ++attempt) {
            const QString error = error_of([&] { RunStore store(path.toStdString()); });
            QVERIFY2(error.contains("failed while migrating the schema from version 1 to 2 (SQLite: duplicate column "
                                    "name: tags); the migration was rolled back, so the store was left unchanged at "
                                    "schema version 1 (its backup copy is '" + path + ".bak-v1')."),
                     qPrintable(error));
        }
        QVERIFY(QFile::exists(path + ".bak-v1"));
        QVERIFY(!QFile::exists(path + ".bak-v1.2"));
        QVERIFY(!QFile::exists(path + ".bak-v1.partial"));
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 1LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM steps"), 5LL);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
    }

    // Two steps from version 1: the first (1 -> 2) commits, the second (2 -> 3) fails. The message
    // says where the file now stands and that the backup holds the original version 1.
    void failedSecondMigrationStepSaysWhereTheStoreStands() {
        const QString path = fresh("bad-second-step.sqlite");
        record_small_run(path, 4);
        {
            RawDb raw(path);  // version 1's shape, but with version 3's columns already there
            for (const char* sql : {"DROP INDEX evals_by_split", "ALTER TABLE runs DROP COLUMN tags",
                                    "ALTER TABLE runs DROP COLUMN step_count",
                                    "ALTER TABLE layer_steps DROP COLUMN grad_exponents", "PRAGMA user_version = 1"})
                QCOMPARE(raw.exec(sql), QString());
        }
        const QString error = error_of([&] { RunStore store(path.toStdString()); });
        QVERIFY2(error.contains("failed while migrating the schema from version 2 to 3 (SQLite: duplicate column "
                                "name: fp8_scale_input); that step was rolled back, so the store now stands at "
                                "schema version 2 (it was at version 1; its backup copy, at version 1, is '" +
                                path + ".bak-v1')."),
                 qPrintable(error));
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 2LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM steps"), 4LL);
        RawDb backup(path + ".bak-v1", true);
        QCOMPARE(backup.integer("PRAGMA user_version"), 1LL);
    }

    void missingColumnIsNamed_data() {
        QTest::addColumn<QString>("table");
        QTest::addColumn<QString>("column");
        QTest::addColumn<int>("access");
        QTest::newRow("op_steps, writing") << "op_steps" << "value" << int(StoreAccess::write);
        QTest::newRow("op_steps, read-only") << "op_steps" << "stat" << int(StoreAccess::read_only);
        QTest::newRow("layers, writing") << "layers" << "takes_precision" << int(StoreAccess::write);
        QTest::newRow("layers, read-only") << "layers" << "in_height" << int(StoreAccess::read_only);
        QTest::newRow("steps, writing") << "steps" << "grad_norm" << int(StoreAccess::write);
        QTest::newRow("steps, reading") << "steps" << "grad_norm" << int(StoreAccess::read);
        QTest::newRow("steps, read-only") << "steps" << "grad_norm" << int(StoreAccess::read_only);
        QTest::newRow("runs") << "runs" << "notes" << int(StoreAccess::write);
        QTest::newRow("events") << "events" << "data_json" << int(StoreAccess::read);
        QTest::newRow("sweeps") << "sweeps" << "spec_json" << int(StoreAccess::read_only);
    }

    void missingColumnIsNamed() {
        QFETCH(QString, table);
        QFETCH(QString, column);
        QFETCH(int, access);
        const QString path = fresh("missing-column.sqlite");
        record_small_run(path, 3);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("ALTER TABLE " + table + " DROP COLUMN " + column), QString());
        }
        const QString error =
            error_of([&] { RunStore store(path.toStdString(), static_cast<StoreAccess>(access)); });
        QVERIFY2(error.contains("The run store '" + path + "' is missing column " + column + " of table " + table +
                                "; it was not written by Mantissa or is damaged"),
                 qPrintable(error));
    }

    void newerVersionIsRefusedUntouched_data() {
        QTest::addColumn<bool>("readOnly");
        QTest::newRow("writable open") << false;
        QTest::newRow("read-only open") << true;
    }

    void newerVersionIsRefusedUntouched() {
        QFETCH(bool, readOnly);
        const QString path = fresh("newer.sqlite");
        record_small_run(path);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("PRAGMA user_version = 10"), QString());
        }
        const QByteArray before = file_sha256(path);
        const QString error = error_of([&] { RunStore store(path.toStdString(), readOnly); });
        QVERIFY2(error.contains("written by a newer Mantissa (schema version 10; this build reads versions up to 9)"),
                 qPrintable(error));
        QVERIFY2(error.contains(path), qPrintable(error));
        QCOMPARE(file_sha256(path), before);
        QVERIFY(!QFile::exists(path + "-wal") && !QFile::exists(path + "-shm"));  // nothing beside it either
    }

    void anotherProgramsDatabaseIsRefused() {
        const QString path = fresh("photos.sqlite");
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, file TEXT); "
                              "INSERT INTO photos(file) VALUES('cat.jpg')"),
                     QString());
        }
        const QByteArray before = file_sha256(path);
        for (bool read_only : {false, true}) {
            const QString error = error_of([&] { RunStore store(path.toStdString(), read_only); });
            QVERIFY2(error.contains("is an SQLite database but not a Mantissa run store (its application_id is "
                                    "0x00000000"),
                     qPrintable(error));
        }
        QCOMPARE(file_sha256(path), before);
        QVERIFY(!QFile::exists(path + "-wal") && !QFile::exists(path + "-shm"));
    }

    void notSqliteIsRefusedUntouched_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::newRow("text") << QByteArray("step,loss\n0,2.3\n1,2.1\n");
        QByteArray noise(8192, '\0');
        QRandomGenerator rng(42);
        for (auto& c : noise) c = static_cast<char>(rng.bounded(256));
        QTest::newRow("random bytes") << noise;
        QTest::newRow("five bytes") << QByteArray("MANT\n");
        QByteArray almost = QByteArray("SQLite format 2") + QByteArray(4081, '\0');
        QTest::newRow("almost the header") << almost;
    }

    void notSqliteIsRefusedUntouched() {
        QFETCH(QByteArray, content);
        const QString path = fresh("not-sqlite.sqlite");
        write_file(path, content);
        const QByteArray before = file_sha256(path);
        for (bool read_only : {false, true}) {
            const QString error = error_of([&] { RunStore store(path.toStdString(), read_only); });
            QVERIFY2(error.contains("is not an SQLite database, so it is not a Mantissa run store"), qPrintable(error));
        }
        QCOMPARE(file_sha256(path), before);
    }

    // Damage that SQLite must notice: the message says "damaged" (or, for a destroyed header, "not
    // an SQLite database"), whether it surfaces at open or at the first read of a damaged page.
    void damagedFileGivesOneSentence_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("expected");
        QTest::newRow("every page after the first") << "pages"
                                                    << "is damaged";
        QTest::newRow("the header's page size") << "header"
                                                << "";
        QTest::newRow("truncated to a third") << "truncate"
                                              << "is damaged";
        QTest::newRow("table pages overwritten") << "tables"
                                                 << "is damaged";
    }

    void damagedFileGivesOneSentence() {
        QFETCH(QString, damage);
        QFETCH(QString, expected);
        const QString path = fresh("damaged.sqlite");
        record_small_run(path, 1500, 3);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadWrite));
        const qint64 size = f.size();
        QVERIFY(size > 16 * 4096);
        if (damage == "pages") {
            f.seek(4096);
            f.write(QByteArray(static_cast<int>(size - 4096), '\xA5'));
        } else if (damage == "header") {
            f.seek(16);
            f.write(QByteArray(8, '\x7F'));
        } else if (damage == "truncate") {
            f.resize(size / 3);
        } else {
            // The root pages of the tables (pages 2..12) and their neighbours.
            f.seek(4096);
            f.write(QByteArray(11 * 4096, '\x00'));
        }
        f.close();
        for (bool read_only : {false, true}) {
            const QString error = error_of([&] { open_and_read_everything(path, read_only); });
            QVERIFY2(!error.isEmpty(), "a damaged store was read without complaint");
            if (!expected.isEmpty())
                QVERIFY2(error.contains(expected), qPrintable(error));
            else
                QVERIFY2(error.contains("is damaged") || error.contains("is not an SQLite database"),
                         qPrintable(error));
            QVERIFY2(error.contains(path), qPrintable(error));
            QVERIFY2(!error.contains('\n'), qPrintable(error));
        }
    }

    void readOnlyOpenWritesNothing() {
        const QString path = fresh("look.sqlite");
        record_small_run(path);
        const QByteArray before = file_sha256(path);
        {
            RunStore store(path.toStdString(), true);
            QVERIFY(store.read_only());
            QCOMPARE(store.list_runs().size(), std::size_t(1));
            QVERIFY_THROWS_EXCEPTION(Error, store.rename(1, "x"));
        }
        QCOMPARE(file_sha256(path), before);
    }

    // A file or folder the user cannot write: the store opens read-only and still reads. Root
    // ignores permissions, so as root the check runs in store_helper dropped to uid 65534.
    void readOnlyFileOrFolderStillReads_data() {
        QTest::addColumn<bool>("folderReadOnly");
        QTest::newRow("read-only file") << false;
        QTest::newRow("read-only folder") << true;
    }

    void readOnlyFileOrFolderStillReads() {
        QFETCH(bool, folderReadOnly);
        const QString folder = m_dir.filePath(folderReadOnly ? "ro-folder" : "ro-file");
        QVERIFY(QDir().mkpath(folder));
        const QString path = folder + "/runs.sqlite";
        record_small_run(path, 30, 1);
        QVERIFY(!QFile::exists(path + "-wal"));
        ::chmod(m_dir.path().toUtf8().constData(), 0755);
        ::chmod(folder.toUtf8().constData(), folderReadOnly ? 0555 : 0777);
        ::chmod(path.toUtf8().constData(), folderReadOnly ? 0666 : 0444);
        const QByteArray before = file_sha256(path);

        QString output;
        if (geteuid() != 0) {
            RunStore store(path.toStdString());
            output = QString("READONLY %1\n").arg(store.read_only() ? 1 : 0);
            for (const RunRow& r : store.list_runs())
                output += QString("RUN %1 %2 %3 %4\n")
                              .arg(r.id)
                              .arg(run_status_name(r.status))
                              .arg(r.steps)
                              .arg(r.name.c_str());
            output += "RECORD " + error_of([&] { store.start_run({"x", "", "", "{}"}); });
        } else {
            QProcess helper;
            helper.start(STORE_HELPER, {"list", path, "--as-nobody"});
            QVERIFY(helper.waitForFinished(20000));
            output = QString::fromUtf8(helper.readAllStandardOutput());
            if (helper.exitCode() == 4) QSKIP("cannot drop root privileges here to test permissions");
            QCOMPARE(helper.exitCode(), 0);
        }
        ::chmod(folder.toUtf8().constData(), 0755);
        QVERIFY2(output.contains("READONLY 1"), qPrintable(output));
        QVERIFY2(output.contains("RUN 1 completed 30 small"), qPrintable(output));
        QVERIFY2(output.contains("Cannot record a run: the run store") && output.contains("is open read-only"),
                 qPrintable(output));
        QCOMPARE(file_sha256(path), before);
    }

    void pathsThatCannotBeUsed_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("readOnly");
        QTest::addColumn<QString>("expected");
        QTest::newRow("under a regular file") << "under-file" << false << "-plain-file' on its path is not a folder.";
        QTest::newRow("a folder") << "folder" << false << "is a folder, not a run store file";
        QTest::newRow("a folder, read-only") << "folder" << true << "is a folder, not a run store file";
        QTest::newRow("missing, read-only") << "missing" << true << "There is no run store at";
        QTest::newRow("empty name") << "empty" << false << "No run store file was given";
        QTest::newRow("in memory") << "memory" << false << "':memory:' names an SQLite in-memory database";
    }

    void pathsThatCannotBeUsed() {
        QFETCH(QString, kind);
        QFETCH(bool, readOnly);
        QFETCH(QString, expected);
        QString path;
        if (kind == "under-file") {
            const QString file = fresh("plain-file");
            write_file(file, "x");
            path = file + "/sub/runs.sqlite";
        } else if (kind == "folder") {
            path = fresh("a-folder");
            QVERIFY(QDir().mkpath(path));
        } else if (kind == "missing") {
            path = fresh("missing.sqlite");
        } else if (kind == "memory") {
            path = ":memory:";
        }
        const QString error = error_of([&] { RunStore store(path.toStdString(), readOnly); });
        QVERIFY2(error.contains(expected), qPrintable(error));
        if (kind == "missing") QVERIFY(!QFile::exists(path));
    }

    // A write error from the kernel (the process may not grow a file: RLIMIT_FSIZE, which fails
    // writes as a full disk does): the run stops recording cleanly and what was written is kept.
    void writeErrorKeepsWhatWasWritten() {
        const QString path = fresh("fsize.sqlite");
        record_small_run(path, 10, 1);
        const qint64 size = QFileInfo(path).size();
        QProcess helper;
        helper.start(STORE_HELPER,
                     {"record", path, "--layers", "3", "--fsize-limit", QString::number(size + 2 * 1024 * 1024)});
        QVERIFY(helper.waitForFinished(30000));
        const QString output = QString::fromUtf8(helper.readAllStandardOutput());
        QCOMPARE(helper.exitCode(), 3);
        QVERIFY2(output.contains("ERROR Recording of run 2 stopped after step"), qPrintable(output));
        RunStore store(path.toStdString());
        RunRow r = store.run(2);
        QVERIFY2(r.status == RunStatus::failed || r.status == RunStatus::interrupted, run_status_name(r.status));
        auto steps = store.steps(2);
        QVERIFY(!steps.empty());
        for (std::size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, std::int64_t(i));
        QCOMPARE(store.run(1).steps, std::int64_t(10));
        RawDb raw(path, true);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
    }
};

QTEST_GUILESS_MAIN(StoreFiles)
#include "tst_store_files.moc"
