// Checkpoints and branches (schema version 8): the `checkpoints` table and runs' parent columns as
// docs/schema.md gives them, a version-7 store migrated with its backup, the recorder's checkpoint
// rows in the order they were handed over (events_before and evals_before), replacing and pruning
// (rows first, files only after the commit), continue_run's truncation and its refusals, where a
// run's checkpoint files go, remove() taking them (never another store's), and the parent columns
// read back.
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

// A checkpoint file with `bytes` bytes (its folders made); false when it cannot be written.
bool make_file(const QString& path, int bytes = 64) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    return f.write(QByteArray(bytes, 'c')) == bytes;
}

CheckpointRecord checkpoint(std::int64_t step, const QString& file, int keep = 0) {
    return {step, 0.5 * static_cast<double>(step), file.toStdString(), 64, keep};
}

// The id the store gave the run's event with this message (0 when none).
long long event_id(RawDb& raw, std::int64_t run, const QString& message) {
    return raw.integer(QString("SELECT id FROM events WHERE run_id = %1 AND message = '%2'").arg(run).arg(message));
}

long long eval_id(RawDb& raw, std::int64_t run, std::int64_t step) {
    return raw.integer(QString("SELECT id FROM evals WHERE run_id = %1 AND step = %2").arg(run).arg(step));
}

long long count(RawDb& raw, const QString& table, std::int64_t run) {
    return raw.integer(QString("SELECT count(*) FROM %1 WHERE run_id = %2").arg(table).arg(run));
}

// One sentence: a full stop at its end, no line break.
bool one_sentence(const QString& s) {
    return !s.isEmpty() && s.endsWith('.') && !s.contains('\n');
}

}  // namespace

class StoreCheckpoints : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_counter = 0;
    // A fresh folder with a store path in it, one per case (data-driven rows included).
    QString fresh(const QString& name) {
        const QString folder = m_dir.filePath(QString("%1-%2").arg(++m_counter).arg(name));
        QDir().mkpath(folder);
        return folder + "/runs.sqlite";
    }
    static QString folder_of(RunStore& store, std::int64_t run) {
        return QString::fromStdString(checkpoint_folder(store.path(), store.run(run).uuid));
    }

    // A finished run of 10 steps with every kind of per-step row, evaluations and events before
    // and after checkpoints at steps 5 and 8 (their files made): for continue_run.
    struct Recorded {
        std::int64_t id = 0;
        QString file5, file8;
    };
    Recorded record_with_checkpoints(RunStore& store) {
        Recorded out;
        auto rec = store.start_run({"resumable", "cpu", "", "{}", make_layer_infos()});
        out.id = rec->run_id();
        const QString folder = folder_of(store, out.id);
        out.file5 = folder + "/step-5.safetensors";
        out.file8 = folder + "/step-8.safetensors";
        if (!make_file(out.file5) || !make_file(out.file8)) return {};
        for (std::int64_t i = 0; i < 10; ++i) {
            if (i == 5) rec->on_checkpoint(checkpoint(5, out.file5));
            if (i == 8) rec->on_checkpoint(checkpoint(8, out.file8));
            rec->on_step(make_step(i), make_layers(i, 2));
            rec->on_op_steps(make_ops(i, 1));
            if (i % 2 == 0) rec->on_block_scales(make_block_scales(i));
            WhatIfRecord w;
            w.step = i;
            w.name = "fc1";
            w.format = ComputeFormat(Format::bf16);
            rec->on_what_if({w});
            if (i == 4 || i == 9) rec->on_eval({i, "test", 0.5, 0.25 * static_cast<double>(i)});
            rec->on_event({i, 0.1 * static_cast<double>(i), EventKind::notice, "event " + std::to_string(i), "{}"});
        }
        rec->finish(RunStatus::completed);
        return out;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // A new store has version 8's tables: `checkpoints` as docs/schema.md gives it (a rowid table,
    // one row per run and step, removed with its run) and runs' parent columns, which may be NULL.
    void newStoreHasVersion8Tables() {
        const QString path = fresh("new");
        { RunStore store(path.toStdString()); }
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('checkpoints') "
                          "ORDER BY cid)"),
                 QString("id,run_id,step,file,bytes,time_s,created_at,events_before,evals_before"));
        QCOMPARE(raw.text("SELECT name FROM pragma_table_info('checkpoints') WHERE pk = 1"), QString("id"));
        QCOMPARE(raw.text("SELECT group_concat(name || ':' || type || ':' || \"notnull\", ',') FROM (SELECT * FROM "
                          "pragma_table_info('checkpoints') WHERE name <> 'id' ORDER BY cid)"),
                 QString("run_id:INTEGER:1,step:INTEGER:1,file:TEXT:1,bytes:INTEGER:1,time_s:REAL:0,"
                         "created_at:TEXT:1,events_before:INTEGER:1,evals_before:INTEGER:1"));
        QCOMPARE(raw.text("SELECT group_concat(c.name, ',') FROM pragma_index_list('checkpoints') i, "
                          "pragma_index_info(i.name) c WHERE i.\"unique\" = 1 AND i.origin = 'u'"),
                 QString("run_id,step"));
        QCOMPARE(raw.integer("SELECT count(*) FROM pragma_table_list WHERE name = 'checkpoints' AND wr = 0"), 1LL);
        QCOMPARE(raw.text("SELECT \"table\" || ' ' || on_delete FROM pragma_foreign_key_list('checkpoints')"),
                 QString("runs CASCADE"));
        QCOMPARE(raw.text("SELECT group_concat(name || ':' || type || ':' || \"notnull\", ',') FROM (SELECT * FROM "
                          "pragma_table_info('runs') WHERE name LIKE 'parent%' ORDER BY cid)"),
                 QString("parent_uuid:TEXT:0,parent_step:INTEGER:0"));
    }

    // Version 7 -> 8: a v7 store (today's with the table and columns dropped, stamped 7) is
    // migrated after a backup copy at version 7; its runs keep their rows, are no branches and have
    // no checkpoints; the migrated store records both.
    void migratesVersion7WithABackup() {
        const QString path = fresh("v7");
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"old", "cpu", "", "{}"});
            for (int i = 0; i < 12; ++i) rec->on_step(make_step(i), make_layers(i, 2));
            rec->on_eval({11, "test", 0.5, 0.75});
            rec->finish(RunStatus::completed);
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE checkpoints; ALTER TABLE runs DROP COLUMN parent_step; "
                              "ALTER TABLE runs DROP COLUMN parent_uuid; DROP TABLE sweeps; DROP INDEX runs_by_sweep; "
                              "ALTER TABLE runs DROP COLUMN sweep_uuid; ALTER TABLE runs DROP COLUMN sweep_index; "
                              "PRAGMA user_version = 7"),
                     QString());
        }
        {
            RunStore store(path.toStdString());
            QCOMPARE(store.migrated_from(), 7);
            QCOMPARE(QString::fromStdString(store.backup_path()), path + ".bak-v7");
            const RunRow old = store.run(1);
            QCOMPARE(old.steps, std::int64_t(12));
            QCOMPARE(old.status, RunStatus::completed);
            QVERIFY(old.parent_uuid.empty());
            QVERIFY(!old.parent_step);
            QVERIFY(store.checkpoints(1).empty());
            QCOMPARE(store.steps(1).size(), std::size_t(12));

            RunInfo info{"branch", "cpu", "", "{}"};
            info.parent_uuid = old.uuid;
            info.parent_step = 6;
            auto rec = store.start_run(info);
            const QString file = folder_of(store, rec->run_id()) + "/step-0.safetensors";
            QVERIFY(make_file(file));
            rec->on_checkpoint(checkpoint(0, file));
            rec->finish(RunStatus::completed);
            QCOMPARE(QString::fromStdString(rec->error()), QString());
            QCOMPARE(store.checkpoints(rec->run_id()).size(), std::size_t(1));
            QCOMPARE(store.run(rec->run_id()).parent_step, std::optional<std::int64_t>(6));
        }
        RawDb backup(path + ".bak-v7", true);
        QCOMPARE(backup.integer("PRAGMA user_version"), 7LL);
        QCOMPARE(backup.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'checkpoints'"), 0LL);
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
        QCOMPARE(raw.text("SELECT typeof(parent_uuid) || typeof(parent_step) FROM runs WHERE id = 1"),
                 QString("nullnull"));
    }

    // A checkpoint row keeps the ids of the evaluations and events handed over before it, not
    // those after, whether it lands in one batch with them or in batches of its own; the run's
    // own ids count, not another run's; before any, 0.
    void checkpointRowsFollowTheQueue_data() {
        QTest::addColumn<int>("bound");
        QTest::addColumn<int>("interval_ms");
        QTest::newRow("one batch") << 100000 << 60000;
        QTest::newRow("a batch a row") << 1 << 1;
    }

    void checkpointRowsFollowTheQueue() {
        QFETCH(int, bound);
        QFETCH(int, interval_ms);
        const QString path = fresh("fifo");
        RunStore store(path.toStdString());
        {
            auto other = store.start_run({"other", "cpu", "", "{}"});  // ids of another run
            other->on_eval({0, "test", 1, 0});
            other->on_event({0, 0, EventKind::notice, "other", "{}"});
            other->finish(RunStatus::completed);
        }
        RecorderOptions options;
        options.queue_bound_rows = static_cast<std::size_t>(bound);
        options.commit_interval_ms = interval_ms;
        auto rec = store.start_run({"fifo", "cpu", "", "{}"}, options);
        const std::int64_t id = rec->run_id();
        const QString folder = folder_of(store, id);
        rec->on_checkpoint(checkpoint(0, folder + "/a"));  // before anything of its run
        rec->on_step(make_step(0), {});
        rec->on_eval({0, "test", 0.5, 0.5});
        rec->on_event({0, 0, EventKind::notice, "E1", "{}"});
        rec->on_checkpoint(checkpoint(1, folder + "/b"));
        rec->on_event({1, 0, EventKind::notice, "E2", "{}"});
        rec->on_step(make_step(1), {});
        rec->on_eval({1, "test", 0.5, 0.5});
        rec->on_checkpoint(checkpoint(2, folder + "/c"));
        rec->on_event({2, 0, EventKind::notice, "E3", "{}"});
        rec->on_eval({2, "test", 0.5, 0.5});
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());

        RawDb raw(path, true);
        const auto rows = store.checkpoints(id);
        QCOMPARE(rows.size(), std::size_t(3));
        QCOMPARE(rows[0].step, std::int64_t(0));
        QCOMPARE(rows[0].events_before, std::int64_t(0));
        QCOMPARE(rows[0].evals_before, std::int64_t(0));
        // With a bound of one row the training thread may wait for the writer, and the first wait
        // queues its notice event then (Recorder::Impl::admit): when that is just before a
        // checkpoint, the notice is among the events before it. So a row's events end at its own
        // E or at that notice, never at the E after it.
        const auto events_between = [&](std::int64_t before, const char* last, const char* next) {
            return before >= std::int64_t(event_id(raw, id, last)) && before < std::int64_t(event_id(raw, id, next));
        };
        QVERIFY2(events_between(rows[1].events_before, "E1", "E2"), qPrintable(QString::number(rows[1].events_before)));
        QCOMPARE(rows[1].evals_before, std::int64_t(eval_id(raw, id, 0)));
        QVERIFY2(events_between(rows[2].events_before, "E2", "E3"), qPrintable(QString::number(rows[2].events_before)));
        QCOMPARE(rows[2].evals_before, std::int64_t(eval_id(raw, id, 1)));
        QVERIFY(eval_id(raw, id, 2) > rows[2].evals_before);
        for (const CheckpointRow& c : rows) {
            QCOMPARE(c.run_id, id);
            QCOMPARE(c.bytes, std::int64_t(64));
            QCOMPARE(c.time_s, std::optional<double>(0.5 * static_cast<double>(c.step)));
            QVERIFY2(c.created_at.size() == 24 && c.created_at.ends_with('Z'), c.created_at.c_str());
        }
        QCOMPARE(QString::fromStdString(rows[1].file), folder + "/b");
    }

    // A checkpoint of a step that has one replaces its row; the replaced file goes after the
    // commit when the new row names another, and stays when it names the same. A malformed
    // record is refused on the caller's thread, the recording going on.
    void checkpointOfTheSameStepReplaces() {
        const QString path = fresh("replace");
        RunStore store(path.toStdString());
        auto rec = store.start_run({"replace", "cpu", "", "{}"});
        const QString folder = folder_of(store, rec->run_id());
        QVERIFY(make_file(folder + "/first") && make_file(folder + "/second"));
        rec->on_checkpoint(checkpoint(3, folder + "/first"));
        rec->on_checkpoint(checkpoint(3, folder + "/first"));  // the same file again
        rec->on_checkpoint({3, 9.5, (folder + "/second").toStdString(), 128, 0});
        const QString error = error_of([&] { rec->on_checkpoint({4, 1, "", 10, 0}); });
        QVERIFY2(error.startsWith("Cannot record the checkpoint at step 4") && one_sentence(error), qPrintable(error));
        QVERIFY(!error_of([&] { rec->on_checkpoint({5, 1, "/x", -1, 0}); }).isEmpty());
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        const auto rows = store.checkpoints(rec->run_id());
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(rows[0].file), folder + "/second");
        QCOMPARE(rows[0].bytes, std::int64_t(128));
        QCOMPARE(rows[0].time_s, std::optional<double>(9.5));
        QVERIFY(!QFile::exists(folder + "/first"));
        QVERIFY(QFile::exists(folder + "/second"));
    }

    // keep: the run's newest `keep` rows by step stay, older rows go and then their files; the
    // newest is never pruned; keep 0 keeps every one.
    void keepPrunesOlderCheckpoints_data() {
        QTest::addColumn<int>("keep");
        QTest::addColumn<QList<int>>("kept");
        QTest::newRow("keep 2") << 2 << QList<int>{400, 500};
        QTest::newRow("keep 1") << 1 << QList<int>{500};
        QTest::newRow("keep 0: all") << 0 << QList<int>{100, 200, 300, 400, 500};
        QTest::newRow("keep more than there are") << 9 << QList<int>{100, 200, 300, 400, 500};
    }

    void keepPrunesOlderCheckpoints() {
        QFETCH(int, keep);
        QFETCH(QList<int>, kept);
        const QString path = fresh("keep");
        RunStore store(path.toStdString());
        RecorderOptions options;
        options.commit_interval_ms = 1;
        auto rec = store.start_run({"keep", "cpu", "", "{}"}, options);
        const QString folder = folder_of(store, rec->run_id());
        RawDb raw(path, true);
        for (int step = 100; step <= 500; step += 100) {
            const QString file = folder + QString("/step-%1.safetensors").arg(step);
            QVERIFY(make_file(file));
            rec->on_checkpoint(checkpoint(step, file, keep));
            // The newest is there, its file too, whatever was pruned.
            QTRY_COMPARE_WITH_TIMEOUT(
                raw.integer(QString("SELECT count(*) FROM checkpoints WHERE step = %1").arg(step)), 1LL, 10000);
            QVERIFY(QFile::exists(file));
        }
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        QList<int> steps;
        for (const CheckpointRow& c : store.checkpoints(rec->run_id())) {
            steps << static_cast<int>(c.step);
            QVERIFY2(QFile::exists(QString::fromStdString(c.file)), c.file.c_str());
        }
        QCOMPARE(steps, kept);
        for (int step = 100; step <= 500; step += 100)
            QCOMPARE(QFile::exists(folder + QString("/step-%1.safetensors").arg(step)), kept.contains(step));
    }

    // A transaction that prunes and then fails (here a trigger aborts it at the run's progress
    // update, after the checkpoint rows were written) is rolled back whole: the pruned rows are
    // back, and so are their files, which are unlinked only after a commit. Recording stops with
    // its sentence, and no row names a missing file.
    void prunedFilesGoOnlyAfterTheCommit() {
        const QString path = fresh("rollback");
        RunStore store(path.toStdString());
        RecorderOptions options;
        options.commit_interval_ms = 1;
        auto rec = store.start_run({"rollback", "cpu", "", "{}"}, options);
        const std::int64_t id = rec->run_id();
        const QString folder = folder_of(store, id);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(QString("CREATE TRIGGER fail_at_300 AFTER UPDATE ON runs WHEN EXISTS (SELECT 1 FROM "
                                      "checkpoints WHERE run_id = %1 AND step = 300) BEGIN SELECT RAISE(ABORT, "
                                      "'the test refuses this commit'); END")
                                  .arg(id)),
                     QString());
        }
        RawDb raw(path, true);
        for (int step : {100, 200, 300}) {
            const QString file = folder + QString("/step-%1.safetensors").arg(step);
            QVERIFY(make_file(file));
            rec->on_checkpoint(checkpoint(step, file, 2));
            if (step < 300) {
                QTRY_COMPARE_WITH_TIMEOUT(
                    raw.integer(QString("SELECT count(*) FROM checkpoints WHERE step = %1").arg(step)), 1LL, 10000);
            }
        }
        QTRY_VERIFY_WITH_TIMEOUT(!rec->error().empty(), 10000);
        QVERIFY2(QString::fromStdString(rec->error()).contains("the test refuses this commit"), rec->error().c_str());
        rec->finish(RunStatus::completed);
        QCOMPARE(raw.integer(QString("SELECT count(*) FROM checkpoints WHERE run_id = %1").arg(id)), 2LL);
        for (const CheckpointRow& c : store.checkpoints(id))
            QVERIFY2(QFile::exists(QString::fromStdString(c.file)), c.file.c_str());
        QVERIFY(QFile::exists(folder + "/step-100.safetensors"));
    }

    // Where the files go, and how the table keeps them: relative to the store's folder when under
    // it (so a store moved with its checkpoints finds them), else absolute; read back absolute.
    void checkpointFilesLiveBesideTheStore() {
        QCOMPARE(checkpoint_folder("/data/lab/runs.sqlite", "1234-abcd"),
                 std::string("/data/lab/runs.checkpoints/1234-abcd"));
        QCOMPARE(checkpoint_folder("/data/lab/store.db", "u"), std::string("/data/lab/store.db.checkpoints/u"));
        QCOMPARE(checkpoint_folder("/data/./lab/../lab/x.sqlite", "u"), std::string("/data/lab/x.checkpoints/u"));
        QCOMPARE(checkpoint_folder("runs.sqlite", "u"),
                 (std::filesystem::current_path() / "runs.checkpoints" / "u").string());

        const QString path = fresh("paths");
        const QString outside = m_dir.filePath("elsewhere/step-2.safetensors");
        std::int64_t id = 0;
        QString inside;
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"paths", "cpu", "", "{}"});
            id = rec->run_id();
            inside = folder_of(store, id) + "/step-1.safetensors";
            QVERIFY(make_file(inside) && make_file(outside));
            rec->on_checkpoint(checkpoint(1, inside));
            rec->on_checkpoint(checkpoint(2, outside));
            rec->finish(RunStatus::completed);
            const auto rows = store.checkpoints(id);
            QCOMPARE(rows.size(), std::size_t(2));
            QCOMPARE(QString::fromStdString(rows[0].file), inside);
            QCOMPARE(QString::fromStdString(rows[1].file), QFileInfo(outside).absoluteFilePath());
            QVERIFY(inside.startsWith(QFileInfo(path).absolutePath() + "/runs.checkpoints/"));
        }
        {
            RawDb raw(path, true);
            const QString uuid = raw.text(QString("SELECT uuid FROM runs WHERE id = %1").arg(id));
            QCOMPARE(raw.text("SELECT file FROM checkpoints WHERE step = 1"),
                     "runs.checkpoints/" + uuid + "/step-1.safetensors");
            QCOMPARE(raw.text("SELECT file FROM checkpoints WHERE step = 2"), QFileInfo(outside).absoluteFilePath());
        }
        // The store's folder moved: the row under it follows, the absolute one stays.
        const QString moved = m_dir.filePath("moved-paths");
        QVERIFY(QDir().rename(QFileInfo(path).absolutePath(), moved));
        RunStore store((moved + "/runs.sqlite").toStdString());
        const auto rows = store.checkpoints(id);
        QVERIFY2(QFile::exists(QString::fromStdString(rows[0].file)), rows[0].file.c_str());
        QVERIFY(QString::fromStdString(rows[0].file).startsWith(moved + "/runs.checkpoints/"));
        QCOMPARE(QString::fromStdString(rows[1].file), QFileInfo(outside).absoluteFilePath());
    }

    // continue_run: what was recorded at and after the checkpoint's step goes (per-step rows at
    // step >= 5, the evaluations and events after it, the later checkpoint and its file), what was
    // before stays, the run is running again in this process with its cached count right; the
    // Recorder appends from step 5, and finish() ends it. Another run is untouched.
    void continueRunTruncatesAndAppends() {
        const QString path = fresh("continue");
        RunStore store(path.toStdString());
        const Recorded r = record_with_checkpoints(store);
        QVERIFY(r.id > 0);
        const Recorded other = record_with_checkpoints(store);
        RawDb raw(path, true);
        const long long events_before = store.checkpoints(r.id)[0].events_before;
        QCOMPARE(events_before, event_id(raw, r.id, "event 4"));  // handed over before the checkpoint at 5

        auto rec = store.continue_run(r.id, 5);
        QCOMPARE(rec->run_id(), r.id);
        for (const char* table : {"steps", "layer_steps", "op_steps", "what_if_steps", "block_scale_steps"})
            QVERIFY2(raw.integer(
                         QString("SELECT count(*) FROM %1 WHERE run_id = %2 AND step >= 5").arg(table).arg(r.id)) == 0,
                     table);
        QCOMPARE(count(raw, "steps", r.id), 5LL);
        QCOMPARE(count(raw, "layer_steps", r.id), 10LL);
        QCOMPARE(count(raw, "op_steps", r.id), 20LL);
        QCOMPARE(count(raw, "what_if_steps", r.id), 5LL);
        QCOMPARE(count(raw, "block_scale_steps", r.id), 15LL);  // steps 0, 2, 4
        const auto evals = store.evals(r.id);
        QCOMPARE(evals.size(), std::size_t(1));
        QCOMPARE(evals[0].step, std::int64_t(4));
        const auto events = store.events(r.id);
        QCOMPARE(events.size(), std::size_t(5));  // events 0..4; the run_finished event is gone
        QCOMPARE(events.back().message, std::string("event 4"));
        const auto rows = store.checkpoints(r.id);
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].step, std::int64_t(5));
        QVERIFY(QFile::exists(r.file5));
        QVERIFY(!QFile::exists(r.file8));
        const RunRow running = store.run(r.id);
        QCOMPARE(running.status, RunStatus::running);
        QVERIFY(running.finished_at.empty());
        QVERIFY(running.error.empty());
        QCOMPARE(running.pid, std::int64_t(getpid()));
        QCOMPARE(running.steps, std::int64_t(5));  // step_count, cached in runs
        QCOMPARE(running.final_loss, std::optional<double>(make_step(4).loss));
        const RunTotals t = store.totals(r.id);
        QCOMPARE(t.steps, std::int64_t(5));
        QCOMPARE(t.elapsed_s, std::optional<double>(make_step(4).time_s));
        QCOMPARE(t.evals, std::int64_t(1));

        for (std::int64_t i = 5; i < 12; ++i) rec->on_step(make_step(i), make_layers(i, 2));
        rec->on_eval({11, "test", 0.25, 0.875});
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        const auto steps = store.steps(r.id);
        QCOMPARE(steps.size(), std::size_t(12));
        for (std::size_t i = 0; i < steps.size(); ++i)
            QVERIFY2(diff(make_step(static_cast<std::int64_t>(i)), steps[i]).isEmpty(),
                     qPrintable(diff(make_step(static_cast<std::int64_t>(i)), steps[i])));
        const RunRow done = store.run(r.id);
        QCOMPARE(done.status, RunStatus::completed);
        QCOMPARE(done.steps, std::int64_t(12));
        QVERIFY(!done.finished_at.empty());
        QCOMPARE(done.test_accuracy, std::optional<double>(0.875));
        const Event last = store.events(r.id).back();
        QCOMPARE(last.kind, EventKind::run_finished);
        QCOMPARE(last.step, std::int64_t(11));
        QCOMPARE(last.message, std::string("The run completed after 12 steps."));

        // The other run, with the same checkpoints, kept everything.
        QCOMPARE(count(raw, "steps", other.id), 10LL);
        QCOMPARE(count(raw, "events", other.id), 11LL);
        QCOMPARE(count(raw, "checkpoints", other.id), 2LL);
        QVERIFY(QFile::exists(other.file8));
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
    }

    // A run that was interrupted (its process gone) continues too; a run continued from its latest
    // checkpoint keeps that checkpoint.
    void continuesAnInterruptedRun() {
        const QString path = fresh("interrupted");
        std::int64_t id = 0;
        {
            RunStore store(path.toStdString());
            id = record_with_checkpoints(store).id;
            QVERIFY(id > 0);
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(QString("UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 "
                                      "WHERE id = %1")
                                  .arg(id)),
                     QString());
        }
        RunStore store(path.toStdString());
        QCOMPARE(store.run(id).status, RunStatus::interrupted);
        auto rec = store.continue_run(id, 8);
        QCOMPARE(store.run(id).status, RunStatus::running);
        QCOMPARE(store.run(id).steps, std::int64_t(8));
        QCOMPARE(store.checkpoints(id).size(), std::size_t(2));
        rec->finish(RunStatus::stopped);
        QCOMPARE(store.run(id).status, RunStatus::stopped);
    }

    // The refusals, each one sentence, leaving the run as it was: a run being recorded by a living
    // process (here this one), a step without a checkpoint (or a run without any), a checkpoint
    // whose file is gone, a read-only store, a run that does not exist.
    void continueRunRefuses() {
        const QString path = fresh("refusals");
        std::int64_t id = 0;
        QString file8;
        {
            RunStore store(path.toStdString());
            const Recorded r = record_with_checkpoints(store);
            id = r.id;
            file8 = r.file8;
            QVERIFY(id > 0);
        }
        auto unchanged = [&] {
            RawDb raw(path, true);
            return count(raw, "steps", id) == 10 && count(raw, "checkpoints", id) == 2 &&
                   raw.text(QString("SELECT status FROM runs WHERE id = %1").arg(id)) == "completed";
        };
        RunStore store(path.toStdString());
        const QString run = QString("Run %1 (resumable)").arg(id);

        QString error = error_of([&] { store.continue_run(id, 7); });
        QCOMPARE(error, run + " has no checkpoint at step 7 (its checkpoints are at steps 5 and 8).");
        QVERIFY(unchanged());

        auto live = store.start_run({"live", "cpu", "", "{}"});
        error = error_of([&] { store.continue_run(live->run_id(), 0); });
        QVERIFY2(
            error.startsWith(
                QString("Run %1 (live) is still being recorded by process %2 on ").arg(live->run_id()).arg(getpid())) &&
                error.endsWith("; stop it before continuing it from a checkpoint.") && one_sentence(error),
            qPrintable(error));
        QCOMPARE(store.run(live->run_id()).status, RunStatus::running);
        live->finish(RunStatus::stopped);
        error = error_of([&] { store.continue_run(live->run_id(), 0); });
        QCOMPARE(
            error,
            QString("Run %1 (live) has no checkpoint at step 0 (it has no checkpoints at all).").arg(live->run_id()));

        QVERIFY(QFile::remove(file8));
        error = error_of([&] { store.continue_run(id, 8); });
        QVERIFY2(error.startsWith(run + " has a checkpoint at step 8, but its file '" + file8 + "' is missing") &&
                     one_sentence(error),
                 qPrintable(error));
        QVERIFY(unchanged());

        error = error_of([&] { store.continue_run(999, 5); });
        QVERIFY2(error.startsWith("There is no run 999 in ") && one_sentence(error), qPrintable(error));

        RunStore reader(path.toStdString(), StoreAccess::read_only);
        error = error_of([&] { reader.continue_run(id, 5); });
        QCOMPARE(error, QString("Cannot continue run %1: the run store '%2' is open read-only (the file or its folder "
                                "is not writable).")
                            .arg(id)
                            .arg(path));
        QVERIFY(unchanged());
    }

    // remove() takes the run's checkpoint folder with everything in it, after its delete has
    // committed; a file its rows name outside the store's checkpoint folder is left where it is
    // and returned (it is another store's); another run's folder stays.
    void removeTakesTheCheckpointFolder() {
        const QString path = fresh("remove");
        RunStore store(path.toStdString());
        const Recorded a = record_with_checkpoints(store);
        const Recorded b = record_with_checkpoints(store);
        QVERIFY(a.id > 0 && b.id > 0);
        const QString folder = folder_of(store, a.id);
        const QString outside = m_dir.filePath("remove-elsewhere/step-9.safetensors");
        QVERIFY(make_file(folder + "/step-9.safetensors.partial") && make_file(outside));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(QString("INSERT INTO checkpoints(run_id, step, file, bytes, created_at, events_before, "
                                      "evals_before) VALUES(%1, 9, '%2', 64, '2025-01-01T00:00:00.000Z', 0, 0)")
                                  .arg(a.id)
                                  .arg(outside)),
                     QString());
        }
        const std::vector<std::string> left = store.remove(a.id);
        QVERIFY(!QFileInfo::exists(folder));
        QVERIFY(QFile::exists(outside));
        QCOMPARE(left.size(), std::size_t(1));
        QCOMPARE(QFileInfo(QString::fromStdString(left[0])).canonicalFilePath(), QFileInfo(outside).canonicalFilePath());
        QVERIFY(store.checkpoints(a.id).empty());
        QVERIFY(QFile::exists(b.file5) && QFile::exists(b.file8));
        QCOMPARE(store.checkpoints(b.id).size(), std::size_t(2));
        RawDb raw(path, true);
        QCOMPARE(raw.integer(QString("SELECT count(*) FROM checkpoints WHERE run_id = %1").arg(a.id)), 0LL);
    }

    // A store unlinks only the checkpoint files in its own checkpoint folder: the rows of a run
    // imported from another store, or of a store copied beside its original, name that store's
    // files, and removing the run, continuing it from an earlier checkpoint (its later rows go) or
    // pruning its rows (keep_checkpoints) leaves those files to their store, which still reads them.
    void checkpointFilesOfAnotherStoreAreNeverUnlinked() {
        const QString source_path = fresh("owner");
        auto source = std::make_unique<RunStore>(source_path.toStdString());
        const Recorded r = record_with_checkpoints(*source);
        QVERIFY(r.id > 0);
        auto source_intact = [&] {
            const std::vector<CheckpointRow> rows = source->checkpoints(r.id);
            return rows.size() == 2 && QFile::exists(r.file5) && QFile::exists(r.file8);
        };

        // Imported: removed.
        const QString imported_path = fresh("importer");
        RunStore imported(imported_path.toStdString());
        QCOMPARE(imported.import_store(source_path.toStdString()).runs_added, std::int64_t{1});
        const std::int64_t copy = imported.list_runs().front().id;
        QCOMPARE(imported.checkpoints(copy).size(), std::size_t(2));
        QCOMPARE(imported.remove(copy).size(), std::size_t(2));
        QVERIFY(source_intact());

        // Imported: continued from its first checkpoint (step 8's row goes), then a checkpoint
        // written with keep 1 prunes step 5's row.
        RunStore again(fresh("continuer").toStdString());
        again.import_store(source_path.toStdString());
        const std::int64_t id = again.list_runs().front().id;
        RecorderOptions options;
        options.commit_interval_ms = 1;
        auto rec = again.continue_run(id, 5, options);
        QVERIFY(source_intact());
        const QString own = QString::fromStdString(checkpoint_folder(again.path(), again.run(id).uuid)) +
                            "/step-7.safetensors";
        QVERIFY(make_file(own));
        rec->on_checkpoint(checkpoint(7, own, 1));
        rec->finish(RunStatus::completed);
        QCOMPARE(QString::fromStdString(rec->error()), QString());
        QCOMPARE(again.checkpoints(id).size(), std::size_t(1));
        QVERIFY(QFile::exists(own));
        QVERIFY(source_intact());

        // A store named as the source without ".sqlite", beside it, shares its checkpoint folder:
        // importing is refused, nothing copied.
        {
            RunStore twin((QFileInfo(source_path).absolutePath() + "/runs").toStdString());
            QVERIFY_THROWS_EXCEPTION(Error, twin.import_store(source_path.toStdString()));
            QVERIFY(twin.list_runs().empty());
        }
        QVERIFY(source_intact());

        // A copy of the store beside it (its rows name the original's folder), taken while the
        // original is closed (its write-ahead log folded into the file): removed.
        const QString copied_path = QFileInfo(source_path).absolutePath() + "/copied.sqlite";
        source.reset();
        QVERIFY(QFile::copy(source_path, copied_path));
        source = std::make_unique<RunStore>(source_path.toStdString());
        {
            RunStore copied(copied_path.toStdString());
            QCOMPARE(copied.remove(r.id).size(), std::size_t(2));
        }
        QVERIFY(source_intact());
        // The original still owns them.
        QVERIFY(source->remove(r.id).empty());
        QVERIFY(!QFile::exists(r.file5) && !QFile::exists(r.file8));
    }

    // A branch's parent round-trips through start_run, list_runs and run(); a run that is not one
    // has NULL in both columns; half a parent is refused.
    void parentColumnsRoundTrip() {
        const QString path = fresh("parent");
        RunStore store(path.toStdString());
        auto plain = store.start_run({"plain", "cpu", "", "{}"});
        plain->finish(RunStatus::completed);
        const RunRow parent = store.run(plain->run_id());
        RunInfo info{"branch", "cpu", "", "{}"};
        info.parent_uuid = parent.uuid;
        info.parent_step = 500;
        auto branch = store.start_run(info);
        branch->finish(RunStatus::completed);

        const RunRow got = store.run(branch->run_id());
        QCOMPARE(got.parent_uuid, parent.uuid);
        QCOMPARE(got.parent_step, std::optional<std::int64_t>(500));
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(2));
        QVERIFY(runs[0].parent_uuid.empty() && !runs[0].parent_step);
        QCOMPARE(runs[1].parent_uuid, parent.uuid);
        QCOMPARE(runs[1].parent_step, std::optional<std::int64_t>(500));
        RawDb raw(path, true);
        QCOMPARE(raw.text(QString("SELECT typeof(parent_uuid) || ' ' || typeof(parent_step) FROM runs WHERE id = %1")
                              .arg(parent.id)),
                 QString("null null"));
        QCOMPARE(
            raw.text(QString("SELECT parent_uuid || '@' || parent_step FROM runs WHERE id = %1").arg(branch->run_id())),
            QString::fromStdString(parent.uuid) + "@500");

        RunInfo half{"half", "cpu", "", "{}"};
        half.parent_uuid = parent.uuid;
        QVERIFY(one_sentence(error_of([&] { store.start_run(half); })));
        half.parent_uuid.clear();
        half.parent_step = 3;
        QVERIFY(one_sentence(error_of([&] { store.start_run(half); })));
        half.parent_uuid = parent.uuid;
        half.parent_step = -1;
        QVERIFY(one_sentence(error_of([&] { store.start_run(half); })));
        QCOMPARE(store.list_runs().size(), std::size_t(2));
    }
};

QTEST_GUILESS_MAIN(StoreCheckpoints)
#include "tst_store_checkpoints.moc"
