// One store shared by processes. POSIX advisory locks belong to a process and an inode, and
// closing ANY descriptor of the file drops ALL of the process's locks on it: a store opened in a
// process that already holds connections to it (the GUI's recorder, history browser and
// histogram feed) must never be read with a descriptor of our own, or another process closing
// its connection believes it is the last one and deletes the -wal and -shm files under the
// recorder (store/store_files.h; docs/schema.md, "Sharing the file").
//
// keepsItsLocks: after each way this process opens or looks at the store (a file a person names
// included: refused unopened), this process still holds its locks on the file and its -shm, as
// another process sees them. recorderKeepsEveryRowWhileShared: a recorder here writes runs
// while this process re-opens the store over and over and store_helper churns it from another
// process (opens, reads, records, closes); every row must arrive.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "user_file.h"
#include "error.h"
#include "store/run_store.h"
#include "store/store_files.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

// Whether this process holds a POSIX lock on the file at `path`: a child process asks (F_GETLK)
// for a write lock on the whole file and is told the first lock in its way and that lock's owner.
// Asked from a child because a process never conflicts with its own locks. (Counting this
// process's lines in /proc/locks is not reliable: the file is not read in one go, and while other
// processes take and drop locks a line can be listed twice or not at all.) 1 when it does, 0 when
// it does not, -1 when the question could not be asked.
int holds_lock_on(const std::string& path) {
    const pid_t me = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {  // only async-signal-safe calls here: open, fcntl, _exit
        const int fd = ::open(path.c_str(), O_RDONLY);
        struct flock probe {};
        probe.l_type = F_WRLCK;
        probe.l_whence = SEEK_SET;
        probe.l_start = 0;
        probe.l_len = 0;  // to the end of the file, however long it grows
        if (fd < 0 || ::fcntl(fd, F_GETLK, &probe) != 0) ::_exit(3);
        ::_exit(probe.l_type != F_UNLCK && probe.l_pid == me ? 1 : 0);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) > 1) return -1;
    return WEXITSTATUS(status);
}

// Steps [from, to) with their layer rows, pausing now and then so a run takes several commits.
void feed_steps(Recorder& r, std::int64_t from, std::int64_t to) {
    for (std::int64_t i = from; i < to; ++i) {
        r.on_step(make_step(i), make_layers(i, 2));
        if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

}  // namespace

class StoreShared : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void keepsItsLocks_data() {
        QTest::addColumn<QString>("look");
        QTest::newRow("the file's first bytes") << "read_file_start";
        QTest::newRow("is it a database") << "is_sqlite_database";
        QTest::newRow("comparing it with a copy") << "same_file_contents";
        QTest::newRow("is its -wal an output") << "database_file_role";
        QTest::newRow("opened again for writing") << "open_write";
        QTest::newRow("opened again to read") << "open_read";
        QTest::newRow("opened again read-only") << "open_read_only";
        QTest::newRow("named as an experiment file") << "user_file";
        QTest::newRow("its -wal named as a dataset file") << "user_file_wal";
    }

    void keepsItsLocks() {
        QFETCH(QString, look);
        const QString path = m_dir.filePath("locks-" + look + ".sqlite");
        const std::string p = path.toStdString();
        {
            RunStore first(p);
            auto rec = first.start_run({"first", "cpu", "test", "{}"});
            feed_steps(*rec, 0, 20);
            rec->finish(RunStatus::completed);
        }
        RunStore held(p);  // a WAL connection holds a shared lock on the file while it is open
        QCOMPARE(held.list_runs().size(), std::size_t(1));
        QCOMPARE(holds_lock_on(p), 1);  // the open WAL connection's shared lock
        QCOMPARE(holds_lock_on(p + "-shm"), 1);

        const std::function<void()> act = [&]() -> std::function<void()> {
            if (look == "read_file_start") return [&] { QVERIFY(store::read_file_start(p, 100).has_value()); };
            if (look == "is_sqlite_database") return [&] { QVERIFY(store::is_sqlite_database(p)); };
            if (look == "same_file_contents") return [&] { QVERIFY(store::same_file_contents(p, p)); };
            if (look == "database_file_role")
                return [&] { QVERIFY(store::database_file_role(p + "-wal").has_value()); };
            if (look == "open_write") return [&] { RunStore again(p); again.list_runs(); };
            if (look == "open_read") return [&] { RunStore again(p, StoreAccess::read); again.list_runs(); };
            // A file a person names (user_file.h) is refused, unopened, when it is a store
            // this process has open or one of its side files (held_files.h).
            if (look == "user_file" || look == "user_file_wal")
                return [&] {
                    const std::string named = look == "user_file" ? p : p + "-wal";
                    try {
                        read_user_file(named, "Experiment file " + named, kExperimentFileLimit);
                        QFAIL("a store this process has open was read as a user's file");
                    } catch (const Error& e) {
                        QVERIFY2(std::string(e.what()).find("is a run store that Mantissa has open") != std::string::npos,
                                 e.what());
                    }
                };
            return [&] { RunStore again(p, StoreAccess::read_only); again.list_runs(); };
        }();
        act();
        QCOMPARE(holds_lock_on(p), 1);
        QCOMPARE(holds_lock_on(p + "-shm"), 1);
        QCOMPARE(held.list_runs().size(), std::size_t(1));
    }

    // Once this process has closed every connection to a store, the file is an ordinary file again
    // for the readers of user files (which then say what is wrong with it as JSON, say).
    void aClosedStoreIsNoLongerHeld() {
        const std::string p = m_dir.filePath("released.sqlite").toStdString();
        {
            RunStore store(p);
            QVERIFY(HeldFiles::instance().held(p));
            QVERIFY(HeldFiles::instance().held(p + "-shm"));
        }
        QVERIFY(!HeldFiles::instance().held(p));
        QVERIFY(!HeldFiles::instance().held(p + "-shm"));
        QVERIFY(!read_user_file(p, "Experiment file " + p, kExperimentFileLimit).empty());
    }

    void recorderKeepsEveryRowWhileShared() {
        const QString path = m_dir.filePath("shared.sqlite");
        const std::string p = path.toStdString();
        RunStore store(p);  // as the GUI's run controller keeps it
        {
            auto rec = store.start_run({"before", "cpu", "test", "{}"});
            feed_steps(*rec, 0, 30);
            rec->finish(RunStatus::completed);
        }

        QProcess churn;
        churn.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        churn.start(STORE_HELPER, {"churn", path, "150"});
        QVERIFY(churn.waitForStarted(5000));

        constexpr std::int64_t steps = 60;
        std::vector<std::int64_t> ours;
        QStringList errors;
        int reopened = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        while (churn.state() != QProcess::NotRunning && std::chrono::steady_clock::now() < deadline) {
            try {
                RecorderOptions often;
                often.commit_interval_ms = 5;
                auto rec = store.start_run({"ours", "cpu", "test", "{}"}, often);
                ours.push_back(rec->run_id());
                feed_steps(*rec, 0, steps / 2);
                // Meanwhile this process opens the store again, as the history browser and the
                // histogram feed do, and looks at its file as the output guards do.
                {
                    RunStore browser(p);
                    RunStore feed(p, StoreAccess::read_only);
                    browser.list_runs();
                    feed.list_runs();
                    ++reopened;
                }
                store::is_sqlite_database(p);
                store::database_file_role(p + "-wal");
                feed_steps(*rec, steps / 2, steps);
                rec->finish(RunStatus::completed);
                if (!rec->error().empty()) errors << QString::fromStdString(rec->error());
            } catch (const Error& e) {
                errors << QString::fromUtf8(e.what());
            }
            churn.waitForFinished(1);
        }
        if (churn.state() != QProcess::NotRunning)
            QVERIFY2(churn.waitForFinished(60000), "store_helper churn did not finish");
        const QString out = QString::fromUtf8(churn.readAllStandardOutput());
        QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
        QVERIFY2(out.contains("DONE 150 0"), qPrintable(out));
        QCOMPARE(churn.exitCode(), 0);
        QVERIFY(reopened > 0);

        // Every run of ours and of the helper, with every step, completed; the file is sound.
        RunStore check(p, StoreAccess::read_only);
        for (const RunRow& r : check.list_runs()) {
            QVERIFY2(r.status == RunStatus::completed,
                     qPrintable(QString("run %1 (%2) is %3").arg(r.id).arg(r.name.c_str()).arg(run_status_name(r.status))));
            const std::int64_t expected = r.name == "ours" ? steps : r.name == "before" ? 30 : 20;
            QVERIFY2(r.steps == expected, qPrintable(QString("run %1 (%2) has %3 of %4 steps")
                                                         .arg(r.id)
                                                         .arg(r.name.c_str())
                                                         .arg(r.steps)
                                                         .arg(expected)));
            QCOMPARE(static_cast<std::int64_t>(check.steps(r.id).size()), expected);
        }
        RawDb raw(path, true);
        QCOMPARE(raw.text("PRAGMA integrity_check"), QString("ok"));
        QCOMPARE(raw.integer("SELECT count(*) FROM runs WHERE name = 'ours'"), static_cast<long long>(ours.size()));
        qInfo("%d runs recorded here while store_helper churned the store 150 times; re-opened %d times",
              static_cast<int>(ours.size()), reopened);
    }

    // A reader that opens a store while another connection is creating it (the CLI's test
    // watching a `train` it started) sees it empty or whole: never its tables without its
    // application id, "an SQLite database but not a Mantissa run store". One thread creates
    // stores at fresh paths; this one opens each, read-only, over and over while it is made.
    void aStoreBeingCreatedIsNeverCalledForeign() {
        constexpr int stores = 150;
        std::vector<std::string> paths;
        for (int i = 0; i < stores; ++i) paths.push_back(m_dir.filePath(QString("new-%1.sqlite").arg(i)).toStdString());
        std::atomic<int> made{0};
        std::string creator_error;
        std::thread creator([&] {
            try {
                for (const std::string& p : paths) {
                    RunStore created(p);
                    made.fetch_add(1);
                }
            } catch (const Error& e) {
                creator_error = e.what();
                made.store(stores);
            }
        });
        QStringList errors;
        int opened = 0;
        for (int i = 0; i < stores; ++i) {
            while (made.load() <= i) {
                // From its switch to WAL on (its first page written): a reader before that can
                // make the creator's switch fail as busy, another matter.
                std::error_code ec;
                if (std::filesystem::file_size(paths[static_cast<std::size_t>(i)], ec) == 0 || ec) continue;
                try {
                    RunStore reader(paths[static_cast<std::size_t>(i)], StoreAccess::read);
                    reader.list_runs();
                    ++opened;
                } catch (const Error& e) {
                    const QString why = QString::fromUtf8(e.what());
                    if (why.contains("not a Mantissa run store")) errors << why;
                }
            }
        }
        creator.join();
        QVERIFY2(creator_error.empty(), creator_error.c_str());
        QVERIFY2(errors.isEmpty(), qPrintable(QString("%1 of the opens: %2").arg(errors.size()).arg(errors.value(0))));
        qInfo("%d read-only opens while %d stores were created", opened, stores);
    }
};

QTEST_GUILESS_MAIN(StoreShared)
#include "tst_store_shared.moc"
