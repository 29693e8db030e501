// Sweeps and importing stores (schema version 9): the `sweeps` table and runs' sweep columns as
// docs/schema.md gives them, a version-8 store migrated with its backup, creating, listing,
// resolving, updating and removing sweeps, a sweep's runs in plan order, and import_store: every
// row of every table copied value for value (run ids and the checkpoints' event and evaluation ids
// mapped, checkpoint files still naming where they lie), nothing added by a second import, an
// older store read as it is and left so, a run still recording as its store reports it, and the
// refusals that leave this store as it was.
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <cmath>
#include <thread>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

bool make_file(const QString& path, int bytes = 64) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    return f.write(QByteArray(bytes, 'c')) == bytes;
}

bool write_text(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// One sentence: a full stop at its end, no line break.
bool one_sentence(const QString& s) {
    return !s.isEmpty() && s.endsWith('.') && !s.contains('\n');
}

// Every row of every table of the store at `path` (sqlite_sequence too), value for value: what an
// operation that must change nothing is held to.
QByteArray rows_checksum(const QString& path) {
    RawDb raw(path, true);
    QCryptographicHash h(QCryptographicHash::Sha256);
    for (const QString& t : raw.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
        const QString table = t.mid(5);  // "text:"
        h.addData(table.toUtf8());
        for (const QString& row : raw.rows("SELECT * FROM \"" + table + "\"")) h.addData(row.toUtf8());
    }
    return h.result().toHex();
}

// The what-if rows of a step: fc1 in fp16 and mxfp4, an infinite and a NaN SQNR among them.
std::vector<WhatIfRecord> make_what_if(std::int64_t step) {
    std::vector<WhatIfRecord> v;
    for (ComputeFormat f : {ComputeFormat(Format::fp16), ComputeFormat(BlockFormat::mxfp4)}) {
        WhatIfRecord w;
        w.step = step;
        w.name = "fc1";
        w.format = f;
        w.input = {0.01 * static_cast<double>(step), 0.0, 40.5 + static_cast<double>(step), 784};
        w.weight = {0.0, 1.0 / 3.0, INFINITY, 1000};
        w.grad_output = {0.5, 0.0, NAN, 10};
        v.push_back(w);
    }
    return v;
}

// A finished run with rows in every per-run table: its layers, 12 steps with layer rows, op rows,
// what-if rows and (on even steps) block-scale views, evaluations and events before and after
// checkpoints at step 4 (its file in the store's checkpoint folder) and step 8 (a file elsewhere).
std::int64_t record_full_run(RunStore& store, RunInfo info, const QString& elsewhere,
                             RunStatus status = RunStatus::completed) {
    info.layers = make_layer_infos();
    auto rec = store.start_run(info);
    const std::int64_t id = rec->run_id();
    const QString inside =
        QString::fromStdString(checkpoint_folder(store.path(), store.run(id).uuid)) + "/step-4.safetensors";
    const QString outside = elsewhere + QString("/run-%1-step-8.safetensors").arg(id);
    if (!make_file(inside) || !make_file(outside, 96)) return 0;
    for (std::int64_t i = 0; i < 12; ++i) {
        if (i == 4) rec->on_checkpoint({4, 0.05, inside.toStdString(), 64, 0});
        if (i == 8) rec->on_checkpoint({8, 0.1, outside.toStdString(), 96, 0});
        rec->on_step(make_step(i), make_layers(i, 3));
        rec->on_op_steps(make_ops(i, 1));
        rec->on_what_if(make_what_if(i));
        if (i % 2 == 0) rec->on_block_scales(make_block_scales(i));
        if (i % 3 == 2) rec->on_eval({i, "test", 1.0 / static_cast<double>(i), 0.125 * static_cast<double>(i % 8)});
        rec->on_event({i, 0.0125 * static_cast<double>(i), EventKind::notice, "event " + std::to_string(i),
                       R"({"i":)" + std::to_string(i) + "}"});
    }
    rec->finish(status, status == RunStatus::failed ? "It failed on purpose." : "");
    return rec->error().empty() ? id : 0;
}

// A short finished run.
std::int64_t record_short_run(RunStore& store, RunInfo info, int steps = 3) {
    auto rec = store.start_run(info);
    for (int i = 0; i < steps; ++i) rec->on_step(make_step(i), make_layers(i, 1));
    rec->finish(RunStatus::completed);
    return rec->run_id();
}

RunInfo info(const std::string& name) {
    return {name, "cpu", "test CPU", R"({"name":")" + name + R"("})"};
}

std::int64_t id_of(RawDb& raw, const std::string& uuid) {
    return raw.integer(QString("SELECT id FROM runs WHERE uuid = '%1'").arg(QString::fromStdString(uuid)));
}

// A run's rows of `table`, every column but `skip` (and id, run_id), in `order`.
QStringList run_rows(RawDb& raw, const QString& table, std::int64_t run, const QString& order,
                     const QStringList& skip = {}) {
    QStringList columns = raw.columns(table);
    columns.removeAll("id");
    columns.removeAll("run_id");
    for (const QString& s : skip) columns.removeAll(s);
    return raw.rows(
        QString("SELECT %1 FROM %2 WHERE run_id = %3 ORDER BY %4").arg(columns.join(", "), table).arg(run).arg(order));
}

// The per-run tables and their natural orders; a checkpoint's file and ids are compared apart.
struct TableOrder {
    const char* table;
    const char* order;
    QStringList skip;
};
const std::vector<TableOrder>& per_run_tables() {
    static const std::vector<TableOrder> tables = {
        {"steps", "step", {}},
        {"layer_steps", "step, layer", {}},
        {"evals", "id", {}},
        {"events", "id", {}},
        {"layers", "layer", {}},
        {"op_steps", "step, op", {}},
        {"what_if_steps", "step, layer, slot", {}},
        {"block_scale_steps", "step, layer, slot", {}},
        {"checkpoints", "step", {"file", "events_before", "evals_before"}},
    };
    return tables;
}

// The SQL that takes a current store back to version 8's tables (the sweeps table, runs' sweep
// columns and their index dropped) and stamps it 8.
const char* const back_to_version_8 =
    "DROP TABLE sweeps; DROP INDEX runs_by_sweep; ALTER TABLE runs DROP COLUMN sweep_uuid; "
    "ALTER TABLE runs DROP COLUMN sweep_index; PRAGMA user_version = 8";

// How the sentence for a damaged store to import from ends: the advice for a file that is only read.
const char* const damaged_other_store_ends = ") and was left unchanged; import from a backup or another copy of it.";

}  // namespace

class StoreSweeps : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_counter = 0;
    // A fresh folder with a store path in it, one per case (data-driven rows included).
    QString fresh(const QString& name, const QString& file = "runs.sqlite") {
        const QString folder = m_dir.filePath(QString("%1-%2").arg(++m_counter).arg(name));
        QDir().mkpath(folder);
        return folder + "/" + file;
    }

    // A source store as a sweep leaves it: a Slurm sweep of two runs (the second a branch of a run
    // outside it, and failed), and that run; every table has rows. Returns the store's path.
    QString make_source(const QString& name) {
        const QString path = fresh(name);
        const QString elsewhere = QFileInfo(path).absolutePath() + "-elsewhere";
        QDir().mkpath(elsewhere);
        RunStore store(path.toStdString());
        const SweepRow sweep = store.create_sweep({"lr-grid", R"({"grid":["train.lr=1e-3,3e-3"]})", 2, "slurm"});
        store.set_sweep_slurm(sweep.id, "4242", (QFileInfo(path).absolutePath() + "/tasks").toStdString());
        const std::int64_t plain = record_full_run(store, info("plain"), elsewhere);
        RunInfo first = info("lr-grid · train.lr=0.001");
        first.sweep_uuid = sweep.uuid;
        first.sweep_index = 0;
        RunInfo second = info("lr-grid · train.lr=0.003");
        second.sweep_uuid = sweep.uuid;
        second.sweep_index = 1;
        second.parent_uuid = store.run(plain).uuid;
        second.parent_step = 4;
        if (plain == 0 || record_full_run(store, first, elsewhere) == 0 ||
            record_full_run(store, second, elsewhere, RunStatus::failed) == 0)
            return {};
        store.set_notes(plain, "notes, with\na line break");
        store.set_tags(plain, "fp16,baseline");
        return path;
    }

    // Holds every run of `from` (by uuid) equal in `to`, row for row in every table; the
    // checkpoints' files resolved equal, their events_before and evals_before naming the same rows.
    // Empty when equal, else what differs.
    static QString compare_imported(const QString& from, const QString& to) {
        RawDb a(from, true), b(to, true);
        RunStore sa(from.toStdString(), StoreAccess::read_only), sb(to.toStdString(), StoreAccess::read_only);
        QStringList run_columns = a.columns("runs");
        run_columns.removeAll("id");
        for (const RunRow& r : sa.list_runs()) {
            const std::int64_t id = id_of(b, r.uuid);
            if (id == 0) return QString("run %1 was not imported").arg(r.id);
            const QString where = QString(" FROM runs WHERE uuid = '%1'").arg(QString::fromStdString(r.uuid));
            if (a.rows("SELECT " + run_columns.join(", ") + where) !=
                b.rows("SELECT " + run_columns.join(", ") + where))
                return QString("run %1's row differs: %2 != %3")
                    .arg(r.id)
                    .arg(a.rows("SELECT " + run_columns.join(", ") + where).join(""),
                         b.rows("SELECT " + run_columns.join(", ") + where).join(""));
            for (const TableOrder& t : per_run_tables()) {
                const QStringList ra = run_rows(a, t.table, r.id, t.order, t.skip);
                const QStringList rb = run_rows(b, t.table, id, t.order, t.skip);
                if (ra != rb)
                    return QString("run %1's %2 differ (%3 rows, %4 imported)")
                        .arg(r.id)
                        .arg(t.table)
                        .arg(ra.size())
                        .arg(rb.size());
            }
            const auto ca = sa.checkpoints(r.id), cb = sb.checkpoints(id);
            if (ca.size() != cb.size()) return QString("run %1's checkpoints differ").arg(r.id);
            for (std::size_t i = 0; i < ca.size(); ++i) {
                if (ca[i].file != cb[i].file)
                    return QString("checkpoint file %1 != %2").arg(ca[i].file.c_str(), cb[i].file.c_str());
                if (!QFile::exists(QString::fromStdString(cb[i].file)))
                    return QString("%1 is not there").arg(cb[i].file.c_str());
                const QString event_a =
                    a.text(QString("SELECT message FROM events WHERE id = %1").arg(ca[i].events_before));
                const QString event_b = b.text(QString("SELECT message FROM events WHERE run_id = %1 AND id = %2")
                                                   .arg(id)
                                                   .arg(cb[i].events_before));
                if (event_a.isEmpty() || event_a != event_b)
                    return QString("checkpoint at %1: events_before names '%2', imported '%3'")
                        .arg(ca[i].step)
                        .arg(event_a, event_b);
                const QString eval_a =
                    a.text(QString("SELECT step || split FROM evals WHERE id = %1").arg(ca[i].evals_before));
                const QString eval_b = b.text(QString("SELECT step || split FROM evals WHERE run_id = %1 AND id = %2")
                                                  .arg(id)
                                                  .arg(cb[i].evals_before));
                if (eval_a != eval_b || (ca[i].evals_before == 0) != (cb[i].evals_before == 0))
                    return QString("checkpoint at %1: evals_before names '%2', imported '%3'")
                        .arg(ca[i].step)
                        .arg(eval_a, eval_b);
            }
        }
        return {};
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // A new store is at version 9: `sweeps` as docs/schema.md gives it (uuid unique, slurm_job and
    // folder may be NULL) and runs' sweep columns, which may be NULL, with their index.
    void newStoreHasVersion9Tables() {
        const QString path = fresh("new");
        { RunStore store(path.toStdString()); }
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("SELECT group_concat(name || ':' || type || ':' || \"notnull\" || ':' || pk, ',') FROM "
                          "(SELECT * FROM pragma_table_info('sweeps') ORDER BY cid)"),
                 QString("id:INTEGER:0:1,uuid:TEXT:1:0,name:TEXT:1:0,created_at:TEXT:1:0,spec_json:TEXT:1:0,"
                         "runs_planned:INTEGER:1:0,executor:TEXT:1:0,slurm_job:TEXT:0:0,folder:TEXT:0:0"));
        QCOMPARE(raw.text("SELECT group_concat(c.name, ',') FROM pragma_index_list('sweeps') i, "
                          "pragma_index_info(i.name) c WHERE i.\"unique\" = 1 AND i.origin = 'u'"),
                 QString("uuid"));
        QCOMPARE(raw.text("SELECT group_concat(name || ':' || type || ':' || \"notnull\", ',') FROM (SELECT * FROM "
                          "pragma_table_info('runs') WHERE name LIKE 'sweep%' ORDER BY cid)"),
                 QString("sweep_uuid:TEXT:0,sweep_index:INTEGER:0"));
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM pragma_index_info('runs_by_sweep')"),
                 QString("sweep_uuid,sweep_index"));
    }

    // Version 8 -> 9: a v8 store (today's with the table, columns and index dropped, stamped 8) is
    // migrated after a backup copy at version 8; its runs keep their rows and are in no sweep; the
    // migrated store records sweeps and runs of sweeps.
    void migratesVersion8WithABackup() {
        const QString path = fresh("v8");
        std::string old_uuid;
        {
            RunStore store(path.toStdString());
            const QString elsewhere = QFileInfo(path).absolutePath();
            old_uuid = store.run(record_full_run(store, info("old"), elsewhere)).uuid;
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(back_to_version_8), QString());
        }
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 8);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v8");
            const RunRow old = store.run(1);
            QCOMPARE(old.uuid, old_uuid);
            QCOMPARE(old.steps, std::int64_t(12));
            QVERIFY(old.sweep_uuid.empty());
            QVERIFY(!old.sweep_index);
            QCOMPARE(store.checkpoints(1).size(), std::size_t(2));
            QVERIFY(store.list_sweeps().empty());
            const SweepRow s = store.create_sweep({"after", "{}", 1, "local"});
            RunInfo in = info("after · 0");
            in.sweep_uuid = s.uuid;
            in.sweep_index = 0;
            const std::int64_t id = record_short_run(store, in);
            QCOMPARE(store.sweep_runs(s.id).size(), std::size_t(1));
            QCOMPARE(store.run(id).sweep_index, std::optional<std::int64_t>(0));
        }
        RawDb backup(path + ".bak-v8", true);
        QCOMPARE(backup.integer("PRAGMA user_version"), 8LL);
        QCOMPARE(backup.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'sweeps'"), 0LL);
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
        QCOMPARE(raw.text("SELECT typeof(sweep_uuid) || typeof(sweep_index) FROM runs WHERE id = 1"),
                 QString("nullnull"));
    }

    // create_sweep's row as it reads back and as the file holds it (the spec kept byte for byte,
    // NULL until submitted); list_sweeps newest first; sweep() and its sentence; set_sweep_slurm
    // with the folder made absolute, and emptied again.
    void createListAndUpdate() {
        const QString path = fresh("create");
        RunStore store(path.toStdString());
        const std::string spec = "{ \"recipes\": [\"fp16\", \"bf16\"],\n  \"repeat\": 3 }";
        const SweepRow a = store.create_sweep({"recipes", spec, 6, "local"});
        const SweepRow b = store.create_sweep({"lr-grid", "{}", 4, "slurm"});
        const SweepRow c = store.create_sweep({"", "", 0});
        QCOMPARE(a.name, std::string("recipes"));
        QCOMPARE(a.spec_json, spec);
        QCOMPARE(a.runs_planned, std::int64_t(6));
        QCOMPARE(a.executor, std::string("local"));
        QVERIFY(a.slurm_job.empty() && a.folder.empty());
        QCOMPARE(a.uuid.size(), std::size_t(36));
        QVERIFY(a.uuid != b.uuid && b.uuid != c.uuid);
        QVERIFY2(a.created_at.size() == 24 && a.created_at.ends_with('Z'), a.created_at.c_str());
        QCOMPARE(c.name, std::string("sweep"));
        QCOMPARE(c.spec_json, std::string("{}"));
        QCOMPARE(c.executor, std::string("local"));

        const SweepRow got = store.sweep(a.id);
        QCOMPARE(got.uuid, a.uuid);
        QCOMPARE(got.spec_json, spec);
        QCOMPARE(got.created_at, a.created_at);
        const auto list = store.list_sweeps();
        QCOMPARE(list.size(), std::size_t(3));
        QCOMPARE(list[0].id, c.id);
        QCOMPARE(list[1].id, b.id);
        QCOMPARE(list[2].id, a.id);
        {
            RawDb raw(path);
            // Created at the same moment or not, the newest is first: make a the newest by its time.
            QCOMPARE(
                raw.exec(QString("UPDATE sweeps SET created_at = '2999-01-01T00:00:00.000Z' WHERE id = %1").arg(a.id)),
                QString());
            QCOMPARE(
                raw.text(QString("SELECT typeof(slurm_job) || typeof(folder) FROM sweeps WHERE id = %1").arg(b.id)),
                QString("nullnull"));
            QCOMPARE(raw.text(QString("SELECT spec_json FROM sweeps WHERE id = %1").arg(a.id)),
                     QString::fromStdString(spec));
        }
        QCOMPARE(store.list_sweeps().front().id, a.id);

        QCOMPARE(error_of([&] { store.sweep(99); }), QString("There is no sweep 99 in '%1'.").arg(path));

        const QString cwd = QDir::currentPath();
        QVERIFY(QDir::setCurrent(QFileInfo(path).absolutePath()));
        store.set_sweep_slurm(b.id, "123456", "tasks/./here/");
        QVERIFY(QDir::setCurrent(cwd));
        SweepRow submitted = store.sweep(b.id);
        QCOMPARE(submitted.slurm_job, std::string("123456"));
        QCOMPARE(QString::fromStdString(submitted.folder), QFileInfo(path).absolutePath() + "/tasks/here/");
        store.set_sweep_slurm(b.id, "", "");
        RawDb raw(path, true);
        QCOMPARE(raw.text(QString("SELECT typeof(slurm_job) || typeof(folder) FROM sweeps WHERE id = %1").arg(b.id)),
                 QString("nullnull"));
        QCOMPARE(error_of([&] { store.set_sweep_slurm(99, "1", "/x"); }),
                 QString("There is no sweep 99 in '%1'.").arg(path));
    }

    // resolve_sweep: an id, the start of a name or of a uuid; a name equal to the text among
    // several; each miss and ambiguity in one sentence.
    void resolveSweep() {
        const QString path = fresh("resolve");
        RunStore store(path.toStdString());
        const SweepRow lr = store.create_sweep({"lr", "{}", 1});
        const SweepRow grid = store.create_sweep({"lr-grid", "{}", 1});
        const SweepRow fine = store.create_sweep({"lr-fine", "{}", 1});
        const SweepRow recipes = store.create_sweep({"recipes", "{}", 1});
        QCOMPARE(store.resolve_sweep(std::to_string(fine.id)), fine.id);
        QCOMPARE(store.resolve_sweep("rec"), recipes.id);
        QCOMPARE(store.resolve_sweep("lr-g"), grid.id);
        QCOMPARE(store.resolve_sweep("lr"), lr.id);  // three start so, one is named so
        QCOMPARE(store.resolve_sweep(grid.uuid.substr(0, 13)), grid.id);
        QCOMPARE(store.resolve_sweep(recipes.uuid), recipes.id);

        QString error = error_of([&] { store.resolve_sweep("lr-"); });
        QCOMPARE(error, QString("'lr-' matches 2 sweeps: %1 (lr-grid), %2 (lr-fine); give the id or more of the name.")
                            .arg(grid.id)
                            .arg(fine.id));
        error = error_of([&] { store.resolve_sweep("zzz"); });
        QCOMPARE(error, QString("No sweep in '%1' has the id or a name or uuid starting with 'zzz'.").arg(path));
        error = error_of([&] { store.resolve_sweep("123456789012"); });  // no such id, and no uuid starts so
        QVERIFY2(error.startsWith("No sweep in ") && one_sentence(error), qPrintable(error));
        QCOMPARE(error_of([&] { store.resolve_sweep(""); }),
                 QString("No sweep was given: give its id or the start of its name or uuid."));
    }

    // sweep_runs: the runs naming the sweep's uuid by index, a re-run of an index after the run it
    // repeats, whatever the order they were recorded in; runs outside it or of another sweep left
    // out. RunRow's sweep columns read back through run() and list_runs(); NULL for other runs.
    void sweepRunsInPlanOrder() {
        const QString path = fresh("order");
        RunStore store(path.toStdString());
        const SweepRow s = store.create_sweep({"grid", "{}", 3});
        const SweepRow other = store.create_sweep({"other", "{}", 1});
        auto of = [&](const SweepRow& sweep, std::int64_t index) {
            RunInfo in = info(sweep.name + " · " + std::to_string(index));
            in.sweep_uuid = sweep.uuid;
            in.sweep_index = index;
            return record_short_run(store, in);
        };
        const std::int64_t r2 = of(s, 2);
        const std::int64_t r0 = of(s, 0);
        const std::int64_t outside = record_short_run(store, info("outside"));
        const std::int64_t r1 = of(s, 1);
        const std::int64_t r0_again = of(s, 0);
        of(other, 0);
        const auto runs = store.sweep_runs(s.id);
        QCOMPARE(runs.size(), std::size_t(4));
        const std::vector<std::int64_t> want = {r0, r0_again, r1, r2};
        for (std::size_t i = 0; i < runs.size(); ++i) {
            QCOMPARE(runs[i].id, want[i]);
            QCOMPARE(runs[i].sweep_uuid, s.uuid);
            QCOMPARE(runs[i].steps, std::int64_t(3));
        }
        QCOMPARE(runs[0].sweep_index, std::optional<std::int64_t>(0));
        QCOMPARE(runs[1].sweep_index, std::optional<std::int64_t>(0));
        QCOMPARE(runs[3].sweep_index, std::optional<std::int64_t>(2));
        QCOMPARE(store.run(r1).sweep_index, std::optional<std::int64_t>(1));
        QCOMPARE(store.run(r1).sweep_uuid, s.uuid);
        QVERIFY(store.run(outside).sweep_uuid.empty() && !store.run(outside).sweep_index);
        std::size_t in_sweeps = 0;
        for (const RunRow& r : store.list_runs()) in_sweeps += r.sweep_index.has_value();
        QCOMPARE(in_sweeps, std::size_t(5));
        QCOMPARE(error_of([&] { store.sweep_runs(99); }), QString("There is no sweep 99 in '%1'.").arg(path));
        RawDb raw(path, true);
        QCOMPARE(
            raw.text(QString("SELECT typeof(sweep_uuid) || typeof(sweep_index) FROM runs WHERE id = %1").arg(outside)),
            QString("nullnull"));
        QCOMPARE(raw.text(QString("SELECT sweep_uuid || '#' || sweep_index FROM runs WHERE id = %1").arg(r2)),
                 QString::fromStdString(s.uuid) + "#2");
    }

    // remove_sweep deletes the row alone: its runs stay and still name its uuid.
    void removeSweepKeepsItsRuns() {
        const QString path = fresh("remove");
        RunStore store(path.toStdString());
        const SweepRow s = store.create_sweep({"gone", "{}", 1});
        const SweepRow kept = store.create_sweep({"kept", "{}", 1});
        RunInfo in = info("gone · 0");
        in.sweep_uuid = s.uuid;
        in.sweep_index = 0;
        const std::int64_t run = record_short_run(store, in);
        store.remove_sweep(s.id);
        QCOMPARE(store.list_sweeps().size(), std::size_t(1));
        QCOMPARE(store.list_sweeps()[0].id, kept.id);
        QCOMPARE(store.run(run).sweep_uuid, s.uuid);
        QCOMPARE(store.run(run).steps, std::int64_t(3));
        QVERIFY(one_sentence(error_of([&] { store.sweep(s.id); })));
        QCOMPARE(error_of([&] { store.remove_sweep(s.id); }),
                 QString("There is no sweep %1 in '%2'.").arg(s.id).arg(path));
    }

    // What create_sweep and start_run refuse, each in one sentence, writing nothing; a read-only
    // store refuses every edit of sweeps and an import, and still reads them.
    void refusals() {
        const QString path = fresh("refusals");
        {
            RunStore store(path.toStdString());
            QString error = error_of([&] { store.create_sweep({"pbs", "{}", 1, "pbs"}); });
            QCOMPARE(error, QString("Cannot create the sweep 'pbs' with the executor 'pbs': a sweep runs on 'local' "
                                    "or 'slurm'."));
            error = error_of([&] { store.create_sweep({"neg", "{}", -1}); });
            QCOMPARE(error,
                     QString("Cannot create the sweep 'neg' with -1 runs planned: a sweep plans 0 runs or more."));
            error = error_of([&] { store.create_sweep({"bad\x1bname", "{}", 1}); });
            QVERIFY2(error.startsWith("The sweep name must not contain control characters") && one_sentence(error),
                     qPrintable(error));
            error = error_of([&] { store.create_sweep({std::string(201, 's'), "{}", 1}); });
            QCOMPARE(error, QString("The sweep name is 201 characters long; a sweep name may have at most 200."));
            QVERIFY(store.list_sweeps().empty());

            const SweepRow s = store.create_sweep({"s", "{}", 2});
            RunInfo half = info("half");
            half.sweep_uuid = s.uuid;
            error = error_of([&] { store.start_run(half); });
            QVERIFY2(error.startsWith("Cannot record the run as run (none) of the sweep '") && one_sentence(error),
                     qPrintable(error));
            half.sweep_uuid.clear();
            half.sweep_index = 1;
            QVERIFY(one_sentence(error_of([&] { store.start_run(half); })));
            half.sweep_uuid = s.uuid;
            half.sweep_index = -1;
            QVERIFY(one_sentence(error_of([&] { store.start_run(half); })));
            QVERIFY(store.list_runs().empty());
        }
        const QByteArray before = rows_checksum(path);
        const QString other = make_source("refusals-source");
        QVERIFY(!other.isEmpty());
        RunStore reader(path.toStdString(), StoreAccess::read_only);
        const QString read_only =
            " the run store '" + path + "' is open read-only (the file or its folder is not writable).";
        QCOMPARE(error_of([&] { reader.create_sweep({"x", "{}", 1}); }), "Cannot create a sweep:" + read_only);
        QCOMPARE(error_of([&] { reader.set_sweep_slurm(1, "1", "/x"); }),
                 "Cannot record the Slurm job of sweep 1:" + read_only);
        QCOMPARE(error_of([&] { reader.remove_sweep(1); }), "Cannot remove sweep 1:" + read_only);
        QCOMPARE(error_of([&] { reader.import_store(other.toStdString()); }),
                 "Cannot import another store:" + read_only);
        QCOMPARE(reader.list_sweeps().size(), std::size_t(1));
        QCOMPARE(rows_checksum(path), before);
    }

    // import_store: every sweep and run of the other store, every row of every table equal (run
    // ids mapped, as this store had runs and a sweep of its own), the checkpoints' files resolved
    // where they lie and their events_before and evals_before naming the same rows; the sweep's
    // runs in order, the branch's parent and the other store untouched.
    void importCopiesEveryRow() {
        const QString source = make_source("source");
        QVERIFY(!source.isEmpty());
        const QByteArray source_bytes = file_sha256(source);
        const QString path = fresh("target");
        RunStore store(path.toStdString());
        record_short_run(store, info("mine"));
        record_short_run(store, info("mine too"));
        store.create_sweep({"mine", "{}", 1});

        const ImportResult r = store.import_store(source.toStdString());
        // Read without a -wal or -shm file beside it: nobody had it open, and an import writes
        // nothing there.
        QVERIFY(!QFile::exists(source + "-wal") && !QFile::exists(source + "-shm"));
        QCOMPARE(r.runs_added, std::int64_t(3));
        QCOMPARE(r.runs_skipped, std::int64_t(0));
        QCOMPARE(r.sweeps_added, std::int64_t(1));
        const QString difference = compare_imported(source, path);
        QVERIFY2(difference.isEmpty(), qPrintable(difference));

        RunStore from(source.toStdString(), StoreAccess::read_only);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(5));
        QCOMPARE(runs[2].id, std::int64_t(3));  // "plain", run 1 there
        QCOMPARE(runs[2].uuid, from.run(1).uuid);
        QCOMPARE(runs[2].notes, std::string("notes, with\na line break"));
        QCOMPARE(runs[4].status, RunStatus::failed);
        QCOMPARE(runs[4].error, std::string("It failed on purpose."));
        QCOMPARE(runs[4].parent_uuid, runs[2].uuid);
        QCOMPARE(runs[4].parent_step, std::optional<std::int64_t>(4));
        for (std::int64_t id = 3; id <= 5; ++id) {
            const auto steps = store.steps(id), theirs = from.steps(id - 2);
            QCOMPARE(steps.size(), std::size_t(12));
            for (std::size_t i = 0; i < steps.size(); ++i)
                QVERIFY2(diff(theirs[i], steps[i]).isEmpty(), qPrintable(diff(theirs[i], steps[i])));
            const auto blocks = store.block_scale_steps(id);
            QCOMPARE(blocks.size(), std::size_t(30));
            QVERIFY(diff(make_block_scales(10)[2], blocks[27]).isEmpty());
            QCOMPARE(store.totals(id).events, from.totals(id - 2).events);
        }
        const SweepRow theirs = from.list_sweeps().front();
        const SweepRow sweep = store.sweep(store.resolve_sweep(theirs.uuid));
        QCOMPARE(sweep.name, theirs.name);
        QCOMPARE(sweep.created_at, theirs.created_at);
        QCOMPARE(sweep.spec_json, theirs.spec_json);
        QCOMPARE(sweep.runs_planned, std::int64_t(2));
        QCOMPARE(sweep.executor, std::string("slurm"));
        QCOMPARE(sweep.slurm_job, std::string("4242"));
        QCOMPARE(sweep.folder, theirs.folder);
        const auto members = store.sweep_runs(sweep.id);
        QCOMPARE(members.size(), std::size_t(2));
        QCOMPARE(members[0].id, std::int64_t(4));
        QCOMPARE(members[1].id, std::int64_t(5));
        // A checkpoint that lies under neither store's folder (elsewhere) and one under the
        // source's: both named absolutely here, where they are.
        RawDb raw(path, true);
        for (const QString& file : raw.rows("SELECT file FROM checkpoints"))
            QVERIFY2(file.startsWith("text:/"), qPrintable(file));
        QCOMPARE(raw.integer("SELECT count(*) FROM checkpoints"), 6LL);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
        QCOMPARE(raw.text("PRAGMA foreign_key_check"), QString());
        QCOMPARE(file_sha256(source), source_bytes);
    }

    // Importing twice adds nothing and changes nothing; a run recorded there since is the one
    // added next time; a store holding copies of the runs (imported elsewhere) adds none either.
    void importIsIdempotent() {
        const QString source = make_source("twice-source");
        QVERIFY(!source.isEmpty());
        const QString path = fresh("twice");
        RunStore store(path.toStdString());
        store.import_store(source.toStdString());
        const QByteArray once = rows_checksum(path);
        ImportResult r = store.import_store(source.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(0));
        QCOMPARE(r.runs_skipped, std::int64_t(3));
        QCOMPARE(r.sweeps_added, std::int64_t(0));
        QCOMPARE(rows_checksum(path), once);

        std::string later;
        {
            RunStore from(source.toStdString());
            later = from.run(record_short_run(from, info("later"), 5)).uuid;
        }
        r = store.import_store(source.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(1));
        QCOMPARE(r.runs_skipped, std::int64_t(3));
        QCOMPARE(r.sweeps_added, std::int64_t(0));
        QCOMPARE(store.list_runs().back().uuid, later);
        QCOMPARE(store.list_runs().back().steps, std::int64_t(5));

        // A copy of a copy: the third store holds them all by uuid already.
        const QString third = fresh("third");
        RunStore copy(third.toStdString());
        record_short_run(copy, info("own"));
        r = copy.import_store(path.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(4));
        QCOMPARE(r.sweeps_added, std::int64_t(1));
        const QByteArray before = rows_checksum(third);
        r = copy.import_store(source.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(0));
        QCOMPARE(r.runs_skipped, std::int64_t(4));
        QCOMPARE(r.sweeps_added, std::int64_t(0));
        QCOMPARE(rows_checksum(third), before);
        const QString difference = compare_imported(source, third);
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    // An older store is read as it is: a version-8 store (no sweeps, no sweep columns) and a
    // version-1-shaped store (no tags, step count, histograms, FP8 columns, layers or any later
    // table) give their runs, the columns they lack as a migration gives them, the step count
    // counted; the file is left byte-identical at its version, with no backup copy.
    void importReadsAnOlderStoreAsItIs_data() {
        QTest::addColumn<int>("version");
        QTest::newRow("version 8") << 8;
        QTest::newRow("version 1") << 1;
    }

    void importReadsAnOlderStoreAsItIs() {
        QFETCH(int, version);
        const QString source = make_source(QString("v%1-source").arg(version));
        QVERIFY(!source.isEmpty());
        {
            RawDb raw(source);
            QCOMPARE(raw.exec(back_to_version_8), QString());
            if (version == 1)
                QCOMPARE(raw.exec("DROP TABLE layers; DROP TABLE op_steps; DROP TABLE what_if_steps; "
                                  "DROP TABLE block_scale_steps; DROP TABLE checkpoints; DROP INDEX evals_by_split; "
                                  "ALTER TABLE runs DROP COLUMN parent_uuid; ALTER TABLE runs DROP COLUMN parent_step; "
                                  "ALTER TABLE runs DROP COLUMN tags; ALTER TABLE runs DROP COLUMN step_count; "
                                  "ALTER TABLE layer_steps DROP COLUMN grad_exponents; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_scale_input; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_scale_weight; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_scale_grad_output; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_amax_input; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_amax_weight; "
                                  "ALTER TABLE layer_steps DROP COLUMN fp8_amax_grad_output; PRAGMA user_version = 1"),
                         QString());
        }
        const QByteArray bytes = file_sha256(source);
        const QString path = fresh(QString("from-v%1").arg(version));
        RunStore store(path.toStdString());
        const ImportResult r = store.import_store(source.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(3));
        QCOMPARE(r.sweeps_added, std::int64_t(0));  // a version-8 store has none
        QCOMPARE(file_sha256(source), bytes);
        QVERIFY(!QFile::exists(source + QString(".bak-v%1").arg(version)));
        QCOMPARE(RawDb(source, true).integer("PRAGMA user_version"), static_cast<long long>(version));

        RawDb a(source, true), b(path, true);
        for (std::int64_t id = 1; id <= 3; ++id) {
            const RunRow run = store.run(id);
            QCOMPARE(run.steps, std::int64_t(12));  // counted here for version 1
            QVERIFY(run.sweep_uuid.empty() && !run.sweep_index);
            QCOMPARE(run_rows(a, "steps", id, "step"), run_rows(b, "steps", id, "step"));
            QCOMPARE(run_rows(a, "events", id, "id"), run_rows(b, "events", id, "id"));
            QCOMPARE(
                b.text(QString("SELECT typeof(sweep_uuid) || typeof(sweep_index) FROM runs WHERE id = %1").arg(id)),
                QString("nullnull"));
            if (version == 1) {
                QVERIFY(run.parent_uuid.empty() && run.tags.empty());
                QVERIFY(store.layers(id).empty() && store.checkpoints(id).empty() && store.op_steps(id).empty());
                QCOMPARE(b.integer(QString("SELECT count(*) FROM layer_steps WHERE run_id = %1 AND "
                                           "(grad_exponents IS NOT NULL OR fp8_scale_input IS NOT NULL)")
                                       .arg(id)),
                         0LL);
                QCOMPARE(b.integer(QString("SELECT count(*) FROM layer_steps WHERE run_id = %1").arg(id)), 36LL);
            } else {
                QCOMPARE(store.checkpoints(id).size(), std::size_t(2));
                QCOMPARE(store.layers(id).size(), std::size_t(4));
            }
        }
        if (version == 8) {
            QCOMPARE(store.run(3).parent_uuid, store.run(1).uuid);
            QCOMPARE(store.run(1).tags, std::string("fp16,baseline"));
        }
    }

    // A run left `running` by a process that is gone is imported as its store reports it,
    // interrupted, with the event saying where it came from (the other store still says running);
    // a run whose recorder lives (here, this process's) is imported running, as recorded so far.
    void importsARunningRunAsItsStoreReportsIt() {
        const QString source = fresh("running-source");
        const QString path = fresh("running");
        RunStore from(source.toStdString());
        const std::int64_t dead = record_short_run(from, info("dead"), 4);
        {
            RawDb raw(source);
            QCOMPARE(raw.exec(QString("UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 "
                                      "WHERE id = %1")
                                  .arg(dead)),
                     QString());
        }
        auto live = from.start_run(info("live"));
        for (int i = 0; i < 6; ++i) live->on_step(make_step(i), {});
        live->finish(RunStatus::completed);  // flushed; then made to look live again below
        {
            RawDb raw(source);
            QCOMPARE(raw.exec(QString("UPDATE runs SET status = 'running', finished_at = NULL WHERE id = %1")
                                  .arg(live->run_id())),
                     QString());
        }
        RunStore store(path.toStdString());
        const ImportResult r = store.import_store(source.toStdString());
        QCOMPARE(r.runs_added, std::int64_t(2));
        const RunRow was_dead = store.run(1);
        QCOMPARE(was_dead.status, RunStatus::interrupted);
        QCOMPARE(was_dead.finished_at, was_dead.updated_at);
        const Event last = store.events(1).back();
        QCOMPARE(last.kind, EventKind::run_interrupted);
        QCOMPARE(last.step, std::int64_t(3));
        QVERIFY2(QString::fromStdString(last.message)
                     .endsWith("it was marked interrupted when it was imported from '" + source + "'."),
                 last.message.c_str());
        QCOMPARE(RawDb(source, true).text(QString("SELECT status FROM runs WHERE id = %1").arg(dead)),
                 QString("running"));
        const RunRow alive = store.run(2);
        QCOMPARE(alive.status, RunStatus::running);
        QCOMPARE(alive.pid, std::int64_t(getpid()));
        QCOMPARE(alive.steps, std::int64_t(6));
    }

    // A store is read as of one commit while its recorder goes on writing to it.
    void importsAStoreBeingRecorded() {
        const QString source = fresh("recording-source");
        const QString path = fresh("recording");
        RunStore from(source.toStdString());
        RecorderOptions fast;
        fast.commit_interval_ms = 1;
        auto rec = from.start_run(info("growing"), fast);
        std::atomic<bool> stop{false};
        std::thread writer([&] {
            for (std::int64_t i = 0; !stop; ++i) rec->on_step(make_step(i), make_layers(i, 2));
        });
        QTest::qWait(100);
        RunStore store(path.toStdString());
        const ImportResult r = store.import_store(source.toStdString());
        stop = true;
        writer.join();
        rec->finish(RunStatus::completed);
        QCOMPARE(r.runs_added, std::int64_t(1));
        const RunRow got = store.run(1);
        QCOMPARE(got.status, RunStatus::running);
        QVERIFY(got.steps > 0);
        // Whole steps, contiguous from 0, each with its layer rows: one commit's state.
        RawDb raw(path, true);
        QCOMPARE(raw.integer("SELECT max(step) + 1 FROM steps"), static_cast<long long>(got.steps));
        QCOMPARE(raw.integer("SELECT count(*) FROM layer_steps"), 2 * static_cast<long long>(got.steps));
    }

    // What import refuses, each in one sentence, leaving this store's rows as they were and the
    // other file byte for byte (nothing created beside a file refused by its header): itself
    // (by another spelling of its path too), a missing file, a file that is not SQLite, another
    // program's database, an empty database, a store from a newer version, a store whose second
    // run cannot be copied (the first one was: the one transaction rolls back), and a damaged
    // store, whether SQLite or the store's checks find it, on opening it or while copying: said
    // as damage of a file that is only read, not with the advice for one's own store.
    void importRefusals_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("begins");
        const QString damaged = "Nothing was imported from '%1': it is damaged (";
        const QString unchanged = damaged_other_store_ends;
        QTest::newRow("itself") << "itself"
                                << "Cannot import '%1' into the run store '%2': they are the same file";
        QTest::newRow("itself, another spelling")
            << "itself-dot"
            << "Cannot import '%1' into the run store '%2': they are the same file";
        QTest::newRow("missing") << "missing"
                                 << "There is no run store at '%1' yet";
        QTest::newRow("not SQLite") << "garbage"
                                    << "The file '%1' is not an SQLite database, so it is not a Mantissa run store";
        QTest::newRow("another program's") << "foreign"
                                           << "The file '%1' is an SQLite database but not a Mantissa run store";
        QTest::newRow("empty database") << "empty"
                                        << "The file '%1' is an empty database, not yet a run store";
        QTest::newRow("newer") << "newer"
                               << "The run store '%1' was written by a newer Mantissa (schema version 10; this build "
                                  "reads versions up to 9); it was left unchanged";
        QTest::newRow("second run broken")
            << "broken"
            << "Nothing was imported from '%1': the run store '%2' failed while writing to it (SQLite: "
               "NOT NULL constraint failed: block_scale_steps.exponents)";
        // Cut in half, its tables lie past its end, found as its header is read; with bytes flipped in
        // the middle, its header reads and a page of rows fails while copying.
        QTest::newRow("cut in half") << "cut"
                                     << damaged +
                                            "SQLite: database disk image is malformed, while reading its "
                                            "application id" +
                                            unchanged;
        QTest::newRow("bytes flipped") << "flipped"
                                       << damaged + "SQLite: database disk image is malformed, while reading it" +
                                              unchanged;
        QTest::newRow("a table missing") << "no-table" << damaged + "only 10 of its 11 tables exist" + unchanged;
        QTest::newRow("no schema version")
            << "no-version" << damaged + "it has tables but no schema version" + unchanged;
        QTest::newRow("a column missing")
            << "no-column" << damaged + "column notes of table runs is missing" + unchanged;
        QTest::newRow("a column of an older store missing")
            << "no-column-v8" << damaged + "column host of table runs is missing" + unchanged;
    }

    void importRefusals() {
        QFETCH(QString, kind);
        QFETCH(QString, begins);
        const QString path = fresh("refuse-" + kind);
        QString other = QFileInfo(path).absolutePath() + "/other.sqlite";
        {
            RunStore store(path.toStdString());
            record_short_run(store, info("mine"));
            store.create_sweep({"mine", "{}", 1});
        }
        if (kind == "itself") other = path;
        if (kind == "itself-dot") other = QFileInfo(path).absolutePath() + "/./runs.sqlite";
        if (kind == "garbage") QVERIFY(write_text(other, QByteArray("not a database\n").repeated(20)));
        if (kind == "foreign")
            QCOMPARE(RawDb(other).exec("PRAGMA application_id = 42; CREATE TABLE photos(x)"), QString());
        if (kind == "empty") QVERIFY(write_text(other, {}));
        const bool damaged = kind == "cut" || kind == "flipped" || kind.startsWith("no-");
        // A damaged copy is made from a sound store beside it.
        const QString sound = kind == "cut" || kind == "flipped" ? other + ".sound" : other;
        if (kind == "newer" || kind == "broken" || damaged) {
            RunStore from(sound.toStdString());
            record_short_run(from, info("fine"));
            auto rec = from.start_run(info("with views"));
            rec->on_step(make_step(0), {});
            rec->on_block_scales(make_block_scales(0));
            rec->finish(RunStatus::completed);
        }
        if (kind == "newer") QCOMPARE(RawDb(other).exec("PRAGMA user_version = 10"), QString());
        // A version-8 stamp spares it the column check a current store gets; the rows it cannot give
        // are found while copying.
        if (kind == "broken")
            QCOMPARE(RawDb(other).exec("ALTER TABLE block_scale_steps DROP COLUMN exponents; PRAGMA user_version = 8"),
                     QString());
        if (kind == "cut") QVERIFY(copy_cut_in_half(sound, other));
        if (kind == "flipped") QVERIFY(copy_with_bytes_flipped(sound, other, 20000, 30000));
        if (kind == "no-table") QCOMPARE(RawDb(other).exec("DROP TABLE sweeps"), QString());
        if (kind == "no-version") QCOMPARE(RawDb(other).exec("PRAGMA user_version = 0"), QString());
        if (kind == "no-column") QCOMPARE(RawDb(other).exec("ALTER TABLE runs DROP COLUMN notes"), QString());
        // Version 8's columns are not checked on opening: the missing one is found while copying.
        if (kind == "no-column-v8")
            QCOMPARE(RawDb(other).exec(QString(back_to_version_8) + "; ALTER TABLE runs DROP COLUMN host"), QString());
        const bool exists = QFile::exists(other) && kind != "itself" && kind != "itself-dot";
        const QByteArray other_bytes = exists ? file_sha256(other) : QByteArray();
        const QByteArray before = rows_checksum(path);

        RunStore store(path.toStdString());
        const QString error = error_of([&] { store.import_store(other.toStdString()); });
        const QString expected = begins.contains("%2") ? begins.arg(other, path) : begins.arg(other);
        QVERIFY2(error.startsWith(expected) && one_sentence(error), qPrintable(error));
        if (damaged)
            QVERIFY2(error.endsWith(damaged_other_store_ends) && !error.contains("start a new store"),
                     qPrintable(error));
        QCOMPARE(rows_checksum(path), before);
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        if (exists) QCOMPARE(file_sha256(other), other_bytes);
        // STORE is only read: nothing beside it either, when it was read up to its rows ("broken").
        if (kind != "itself" && kind != "itself-dot")
            QVERIFY(!QFile::exists(other + "-wal") && !QFile::exists(other + "-shm"));
        if (kind == "missing") QVERIFY(!QFile::exists(other));
    }
};

QTEST_GUILESS_MAIN(StoreSweeps)
#include "tst_store_sweeps.moc"
