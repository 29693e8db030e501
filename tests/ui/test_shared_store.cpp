// The GUI and mantissa-cli sharing one run store, as a user does: the GUI's RunController records
// runs while the GUI process opens the same store again and again (as the history browser and the
// histogram feed do), and another process runs `mantissa-cli runs`, `show`, `export` and `train`
// on it in a loop, 200 commands in all. Every run, the GUI's and the CLI's, must be complete (all
// its steps, status completed), PRAGMA integrity_check must say ok, and no I/O error may appear
// anywhere. (A process that read the store with a descriptor of its own dropped its POSIX locks
// on the file, and a CLI command closing the store then deleted the -wal and -shm under the GUI's
// recorder: store/store_files.h.)
//
// Also the GUI's own outputs next to a store in use: a chart or a run exported onto the store or
// onto one of its -wal, -shm or -journal files is refused, and the store keeps recording.
#include <QtTest>

#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <qcustomplot.h>
#include <sqlite3.h>

#include <chrono>

#include "export/chart_export.h"
#include "history/run_export.h"
#include "live/run_controller.h"
#include "store/run_store.h"
#include "config/experiment.h"
#include "store_integrity.h"

using namespace mantissa;
using mantissa::ui::RunController;

namespace {

constexpr std::int64_t gui_steps = 40;
constexpr std::int64_t cli_steps = 20;
constexpr int cli_rounds = 200;

Experiment blobs(const std::string& name) {
    Experiment e;
    e.name = name;
    e.dataset.kind = "blobs";
    e.dataset.samples = 400;
    e.model.hidden = {16};
    e.train.batch_size = 32;
    e.train.steps = gui_steps;
    e.train.eval_every = 20;
    e.backend = "cpu";
    return e;
}

// mantissa-cli commands run one after another in another process, cycling through runs, show,
// export and train; each must exit 0 and say nothing about an error.
class CliLoop : public QObject {
public:
    CliLoop(const QString& db, int rounds) : m_db(db), m_rounds(rounds) {
        m_process.setProgram(QStringLiteral(MANTISSA_CLI_EXE));
        connect(&m_process, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
            const QByteArray err = m_process.readAllStandardError();
            m_process.readAllStandardOutput();
            if (status != QProcess::NormalExit || code != 0 || err.toLower().contains("error"))
                failures << QString("mantissa-cli %1: exit %2: %3")
                                .arg(m_process.arguments().join(' '))
                                .arg(status == QProcess::NormalExit ? code : -1)
                                .arg(QString::fromUtf8(err).trimmed());
            ++finished;
            next();
        });
    }
    void start() { next(); }
    bool done() const { return finished >= m_rounds; }

    QStringList failures;
    QStringList trained;  // names of the runs `train` recorded
    int finished = 0;

private:
    void next() {
        if (done()) return;
        const int i = finished;
        QStringList args;
        switch (i % 4) {
            case 0: args = {"runs", "--db", m_db}; break;
            case 1: args = {"show", "1", "--db", m_db}; break;
            case 2: args = {"export", "1", "--table", "steps", "--db", m_db}; break;
            default:
                trained << QString("cli-%1").arg(i);
                args = {"train",    "--db",  m_db,  "--name", trained.back(), "--steps", QString::number(cli_steps),
                        "--set",    "dataset.kind=blobs", "--set", "dataset.samples=200", "--set",
                        "model.hidden=[8]", "--set", "train.batch_size=32", "--set", "backend=cpu"};
        }
        m_process.setArguments(args);
        m_process.start();
    }

    QString m_db;
    int m_rounds;
    QProcess m_process;
};

}  // namespace

class TestSharedStore : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QStringList m_notices;

    // Records one run through the controller and waits for its end; its id.
    std::int64_t recordRun(RunController& c, const std::string& name) {
        QSignalSpy finished(&c, &RunController::runFinished);
        if (!c.start(blobs(name))) return -1;
        const std::int64_t id = c.runId();
        if (!finished.wait(60000)) return -1;
        return id;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void everyRunIsKeptWhileProcessesShareTheStore() {
#ifndef MANTISSA_CLI_EXE
        QSKIP("mantissa-cli is not built");
#else
        const QString db = m_dir.filePath("shared.sqlite");
        RunController c;
        c.setStorePath(db);
        QStringList notices;
        connect(&c, &RunController::noticeRaised, this, [&](const QString& n) { notices << n; });
        connect(&c, &RunController::errorOccurred, this, [&](const QString& n) { notices << "error: " + n; });

        // One run recorded before the other process starts, as a user does.
        std::vector<std::int64_t> gui = {recordRun(c, "gui-0")};
        QVERIFY(gui.back() > 0);

        CliLoop loop(db, cli_rounds);
        loop.start();
        int reopened = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
        while (!loop.done() && std::chrono::steady_clock::now() < deadline) {
            gui.push_back(recordRun(c, "gui-" + std::to_string(gui.size())));
            QVERIFY2(gui.back() > 0, qPrintable(notices.join('\n')));
            // The history browser (a store that may edit) and the histogram feed (read-only), opened
            // afresh in this process while its recorder's connections are open.
            try {
                RunStore browser(db.toStdString());
                RunStore feed(db.toStdString(), StoreAccess::read_only);
                QVERIFY(!browser.list_runs().empty());
                feed.run(gui.front());
            } catch (const std::exception& e) {
                QFAIL(qPrintable(QString("re-opening the store in this process: %1").arg(e.what())));
            }
            ++reopened;
            QTest::qWait(100);  // the CLI's turn: a few of its commands between two runs here
        }
        QTRY_VERIFY_WITH_TIMEOUT(loop.done(), 120000);
        QVERIFY2(loop.failures.isEmpty(), qPrintable(loop.failures.join('\n')));
        for (const QString& n : notices)
            QVERIFY2(!n.contains("record", Qt::CaseInsensitive) && !n.contains("I/O") && !n.startsWith("error"),
                     qPrintable(n));
        QVERIFY(reopened > 0);

        // Every run complete: the GUI's and the CLI's, all their steps, completed.
        RunStore check(db.toStdString(), StoreAccess::read_only);
        const auto runs = check.list_runs();
        QCOMPARE(static_cast<qsizetype>(runs.size()), static_cast<qsizetype>(gui.size()) + loop.trained.size());
        for (const RunRow& r : runs) {
            const bool ours = r.name.rfind("gui-", 0) == 0;
            QVERIFY2(ours || loop.trained.contains(QString::fromStdString(r.name)), r.name.c_str());
            const std::int64_t expected = ours ? gui_steps : cli_steps;
            QVERIFY2(r.status == RunStatus::completed && r.steps == expected,
                     qPrintable(QString("run %1 (%2): %3 with %4 of %5 steps")
                                    .arg(r.id)
                                    .arg(r.name.c_str())
                                    .arg(run_status_name(r.status))
                                    .arg(r.steps)
                                    .arg(expected)));
            QCOMPARE(static_cast<std::int64_t>(check.steps(r.id).size()), expected);
        }
        QCOMPARE(test_support::integrity(db), QString("ok"));
        qInfo("%d GUI runs and %d mantissa-cli commands (%lld trains) on one store; re-opened %d times",
              static_cast<int>(gui.size()), loop.finished, static_cast<long long>(loop.trained.size()), reopened);
#endif
    }

    // The GUI's outputs never land on a store in use or on a file SQLite keeps beside it.
    void outputsAreNotWrittenOverTheStore_data() {
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<QString>("expected");
        QTest::newRow("the store") << "" << "is an SQLite database, which is never overwritten";
        QTest::newRow("its -wal") << "-wal" << "is the write-ahead log (-wal) of the SQLite database";
        QTest::newRow("its -shm") << "-shm" << "is the shared-memory index (-shm) of the SQLite database";
        QTest::newRow("its -journal") << "-journal" << "is the rollback journal (-journal) of the SQLite database";
    }

    void outputsAreNotWrittenOverTheStore() {
        QFETCH(QString, suffix);
        QFETCH(QString, expected);
        const QString db = m_dir.filePath("outputs" + suffix + ".sqlite");
        RunController c;
        c.setStorePath(db);
        const std::int64_t first = recordRun(c, "first");
        QVERIFY(first > 0);
        RunStore store(db.toStdString());  // as the run browser holds it
        const QString target = db + suffix;

        const QString table = ui::exportRunTable(store, first, "steps", RunStore::ExportFormat::csv, target);
        QVERIFY2(table.contains(expected), qPrintable(table));
        const QString experiment = ui::exportRunExperiment(store, first, target);
        QVERIFY2(experiment.contains(expected), qPrintable(experiment));
        QCustomPlot plot;
        plot.resize(400, 300);
        plot.addGraph()->setData({0, 1, 2}, {1, 0.5, 0.25});
        const QString chart = ui::exportChart(&plot, target, ui::ChartFileFormat::png, {});
        QVERIFY2(chart.contains(expected), qPrintable(chart));
        QVERIFY(!QFile::exists(target + ".partial"));

        // The store still records, and nothing in it was lost.
        const std::int64_t second = recordRun(c, "second");
        QVERIFY(second > 0);
        QCOMPARE(store.run(first).steps, gui_steps);
        QCOMPARE(store.run(second).steps, gui_steps);
        QCOMPARE(store.run(second).status, RunStatus::completed);
        QCOMPARE(test_support::integrity(db), QString("ok"));
    }
};

QTEST_MAIN(TestSharedStore)
#include "test_shared_store.moc"
