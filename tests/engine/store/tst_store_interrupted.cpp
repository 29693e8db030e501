// Runs left `running`: a writable open marks those whose recording process is gone (dead pid, pid
// reused by another process, machine rebooted) `interrupted`, once, with a run_interrupted event;
// a live recorder, or one on another host, is left alone; a read-only open reports the status
// without writing it.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

std::string hostname() {
    char h[256] = {};
    gethostname(h, sizeof h - 1);
    return h;
}

std::string boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(in, s);
    return s;
}

long long start_ticks(long long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    std::istringstream rest(line.substr(line.rfind(')') + 1));
    std::string field;
    for (int i = 3; rest >> field; ++i)
        if (i == 22) return std::stoll(field);
    return 0;
}

// The pid of a process that has ended (and been reaped).
long long dead_pid() {
    QProcess p;
    p.start("/bin/true", {});
    p.waitForFinished();
    return p.processId() ? p.processId() : 999999;
}

}  // namespace

class StoreInterrupted : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    // A store with one finished run and one fake `running` run recorded by the given process;
    // returns the fake run's id.
    long long make_store(const QString& path, const QString& host, long long pid, long long ticks,
                         const QString& boot) {
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"finished", "cpu", "", "{}"});
            rec->finish(RunStatus::completed);
        }
        RawDb raw(path);
        const QString insert =
            QString(
                "INSERT INTO runs(uuid, name, created_at, updated_at, status, host, pid, process_start, boot_id, "
                "step_count) VALUES('fake-uuid', 'fake', '2025-11-29T10:00:00.000Z', '2025-11-29T10:05:00.000Z', "
                "'running', '%1', %2, %3, '%4', 3)")
                .arg(host)
                .arg(pid)
                .arg(ticks)
                .arg(boot);
        if (!raw.exec(insert).isEmpty()) return -1;
        const long long id = raw.integer("SELECT max(id) FROM runs");
        for (int i = 0; i < 3; ++i)
            raw.exec(QString("INSERT INTO steps VALUES(%1, %2, 0, %3, 1.0, 1.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
                             "0, 0, 1)")
                         .arg(id)
                         .arg(i)
                         .arg(0.5 * (i + 1)));
        return id;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void recorderLiveness_data() {
        QTest::addColumn<QString>("host");
        QTest::addColumn<long long>("pid");
        QTest::addColumn<long long>("ticks");
        QTest::addColumn<QString>("boot");
        QTest::addColumn<bool>("interrupted");
        const QString host = QString::fromStdString(hostname());
        const QString boot = QString::fromStdString(boot_id());
        const long long me = getpid();
        QTest::newRow("dead pid") << host << dead_pid() << 12345LL << boot << true;
        QTest::newRow("pid reused by another process") << host << me << start_ticks(me) + 1 << boot << true;
        QTest::newRow("machine rebooted")
            << host << me << start_ticks(me) << "00000000-dead-beef-0000-000000000000" << true;
        QTest::newRow("alive (this process)") << host << me << start_ticks(me) << boot << false;
        QTest::newRow("alive, start time unknown") << host << me << 0LL << QString() << false;
        QTest::newRow("another host") << "another-machine" << dead_pid() << 1LL << boot << false;
    }

    void recorderLiveness() {
        QFETCH(QString, host);
        QFETCH(long long, pid);
        QFETCH(long long, ticks);
        QFETCH(QString, boot);
        QFETCH(bool, interrupted);
        const QString path = m_dir.filePath(QString("live-%1.sqlite").arg(QTest::currentDataTag()).replace(' ', '-'));
        const long long id = make_store(path, host, pid, ticks, boot);
        QVERIFY(id > 0);

        // A reader reports it, and writes nothing.
        {
            RunStore reader(path.toStdString(), true);
            QCOMPARE(reader.run(id).status, interrupted ? RunStatus::interrupted : RunStatus::running);
        }
        {
            RawDb raw(path, true);
            QCOMPARE(raw.text(QString("SELECT status FROM runs WHERE id = %1").arg(id)), QString("running"));
        }

        for (int open = 0; open < 2; ++open) {  // a second open changes nothing more
            RunStore store(path.toStdString());
            RunRow r = store.run(id);
            QCOMPARE(r.status, interrupted ? RunStatus::interrupted : RunStatus::running);
            int events = 0;
            for (const Event& e : store.events(id))
                if (e.kind == EventKind::run_interrupted) {
                    ++events;
                    QCOMPARE(e.step, std::int64_t(2));  // the last recorded step
                    QCOMPARE(e.time_s, 1.5);
                    QVERIFY2(QString::fromStdString(e.message).contains(QString("pid %1 on %2").arg(pid).arg(host)),
                             e.message.c_str());
                }
            QCOMPARE(events, interrupted ? 1 : 0);
            if (interrupted) QCOMPARE(r.finished_at, std::string("2025-11-29T10:05:00.000Z"));  // the last write
            QCOMPARE(store.run(1).status, RunStatus::completed);
        }
    }

    void concurrentOpensMarkOnce() {
        const QString path = m_dir.filePath("concurrent.sqlite");
        const long long id =
            make_store(path, QString::fromStdString(hostname()), dead_pid(), 5, QString::fromStdString(boot_id()));
        std::vector<std::thread> threads;
        std::atomic<int> failures{0};
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&] {
                try {
                    RunStore store(path.toStdString());
                } catch (...) {
                    ++failures;
                }
            });
        for (auto& t : threads) t.join();
        QCOMPARE(failures.load(), 0);
        RawDb raw(path, true);
        QCOMPARE(
            raw.integer(QString("SELECT count(*) FROM events WHERE run_id = %1 AND kind = 'run_interrupted'").arg(id)),
            1LL);
    }
};

QTEST_GUILESS_MAIN(StoreInterrupted)
#include "tst_store_interrupted.moc"
