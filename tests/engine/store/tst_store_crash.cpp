// The crash test: store_helper records synthetic steps into one store and is killed with SIGKILL
// at random moments, again and again (some kills land while it starts and creates the file). After
// every kill: the file opens, PRAGMA integrity_check says ok, no run is left `running`, the killed
// run reads `interrupted` with exactly one run_interrupted event, and its steps are contiguous
// from 0 with every step's layer rows present: only whole batches are ever missing, so at most the
// batch being written when the process died is lost. A run killed well after its first commit
// interval must have rows: the recorder commits as it goes, not only at the end.
#include <csignal>

#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QDir>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

class StoreCrash : public QObject {
    Q_OBJECT

private slots:
    // Another process records while this one reads (WAL): the reader sees the run grow, batch by
    // batch, reports it `running` while the recorder lives and `interrupted` once it is killed.
    void readerFollowsAnotherProcess() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("follow.sqlite");
        { RunStore create(path.toStdString()); }
        QProcess helper;
        helper.start(STORE_HELPER, {"record", path, "--layers", "1"});
        QVERIFY(helper.waitForReadyRead(10000));
        const std::int64_t id = QString::fromUtf8(helper.readLine()).trimmed().mid(4).toLongLong();
        QVERIFY(id > 0);
        RunStore reader(path.toStdString(), true);
        std::int64_t seen = 0;
        int growths = 0;
        QElapsedTimer t;
        t.start();
        while (growths < 3 && t.elapsed() < 10000) {
            auto more = reader.steps(id, seen);
            if (!more.empty()) {
                QCOMPARE(more.front().step, seen);  // contiguous with what was read before
                QCOMPARE(more.back().step, seen + static_cast<std::int64_t>(more.size()) - 1);
                seen += static_cast<std::int64_t>(more.size());
                ++growths;
            }
            QCOMPARE(reader.run(id).status, RunStatus::running);
            QThread::msleep(60);
        }
        QCOMPARE(growths, 3);
        ::kill(static_cast<pid_t>(helper.processId()), SIGKILL);
        QVERIFY(helper.waitForFinished(5000));
        QCOMPARE(reader.run(id).status, RunStatus::interrupted);  // reported, not written
        RunStore writer(path.toStdString());
        QCOMPARE(writer.run(id).status, RunStatus::interrupted);  // written
        QVERIFY(writer.run(id).steps >= seen);
    }

    void killedAtRandomMoments() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("crash/runs.sqlite");
        QVERIFY(QDir().mkpath(dir.filePath("crash")));  // a store is made only in a folder that exists
        const int layers = 2;
        const int wanted_kills = 24;  // kills of a started recording
        quint32 seed = static_cast<quint32>(qEnvironmentVariableIntValue("MANTISSA_CRASH_SEED"));
        if (seed == 0) seed = QRandomGenerator::global()->generate();
        QRandomGenerator rng(seed);
        qInfo("seed %u (set MANTISSA_CRASH_SEED to repeat)", seed);

        int started_kills = 0, early_kills = 0, with_rows = 0;
        QElapsedTimer total;
        total.start();
        for (int round = 0; started_kills < wanted_kills; ++round) {
            QVERIFY2(total.elapsed() < 50000, "the crash test ran out of time");
            const bool early = round % 5 == 4;  // every fifth: kill during start-up
            QProcess helper;
            helper.start(STORE_HELPER, {"record", path, "--layers", QString::number(layers)});
            QVERIFY(helper.waitForStarted(5000));
            std::int64_t run_id = 0;
            int delay_ms = 0;
            if (early) {
                QThread::msleep(rng.bounded(25));
            } else {
                QVERIFY2(helper.waitForReadyRead(10000), "store_helper did not start recording");
                const QString line = QString::fromUtf8(helper.readLine()).trimmed();
                QVERIFY2(line.startsWith("RUN "), qPrintable(line));
                run_id = line.mid(4).toLongLong();
                delay_ms = static_cast<int>(rng.bounded(500));
                QThread::msleep(static_cast<unsigned long>(delay_ms));
            }
            ::kill(static_cast<pid_t>(helper.processId()), SIGKILL);
            QVERIFY(helper.waitForFinished(5000));
            QCOMPARE(helper.exitStatus(), QProcess::CrashExit);
            if (early) {
                const QString line = QString::fromUtf8(helper.readAllStandardOutput()).trimmed();
                if (line.startsWith("RUN ")) run_id = line.mid(4).toLongLong();
                ++early_kills;
            } else {
                ++started_kills;
            }

            std::vector<RunRow> runs;
            try {
                RunStore store(path.toStdString());  // marks the dead run interrupted
                runs = store.list_runs();
            } catch (const Error& e) {
                QFAIL(
                    qPrintable(QString("round %1: the store did not open after a kill: %2").arg(round).arg(e.what())));
            }
            RawDb raw(path, true);
            QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
            for (const RunRow& r : runs)
                QVERIFY2(r.status != RunStatus::running, qPrintable(QString("run %1 left running").arg(r.id)));
            if (run_id == 0) continue;

            const QString where = QString("run_id = %1").arg(run_id);
            QCOMPARE(raw.text(QString("SELECT status FROM runs WHERE id = %1").arg(run_id)), QString("interrupted"));
            QCOMPARE(raw.integer("SELECT count(*) FROM events WHERE kind = 'run_interrupted' AND " + where), 1LL);
            const long long count = raw.integer("SELECT count(*) FROM steps WHERE " + where);
            if (count > 0) {
                QCOMPARE(raw.integer("SELECT min(step) FROM steps WHERE " + where), 0LL);
                QCOMPARE(raw.integer("SELECT max(step) FROM steps WHERE " + where), count - 1);
                ++with_rows;
            }
            QCOMPARE(raw.integer("SELECT count(*) FROM layer_steps WHERE " + where), count * layers);
            QCOMPARE(raw.integer(QString("SELECT step_count FROM runs WHERE id = %1").arg(run_id)), count);
            if (delay_ms >= 300)
                QVERIFY2(
                    count > 0,
                    qPrintable(QString("round %1: nothing committed %2 ms after the start").arg(round).arg(delay_ms)));
        }
        qInfo("%d kills while recording, %d during start-up, %d runs with rows, %lld ms", started_kills, early_kills,
              with_rows, static_cast<long long>(total.elapsed()));
        QVERIFY(started_kills + early_kills >= 20);
        QVERIFY(with_rows >= wanted_kills / 3);
    }
};

QTEST_GUILESS_MAIN(StoreCrash)
#include "tst_store_crash.moc"
