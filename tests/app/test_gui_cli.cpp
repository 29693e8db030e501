// The desktop application's command line (MANTISSA_GUI_PATH), run as a script runs it, offscreen:
// every mistake is exit 2 with one sentence before any training (bad options, --steps, --size out
// of its limits, --at that cannot apply or comes after the last step, a --screenshot that cannot be
// written or would replace the run store, the experiment file or any SQLite database, two experiment
// files), a short screenshot still works, an experiment file named alone opens, and SIGTERM closes
// the window with its run recorded `stopped`.
#include <QtTest>

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>

#include <signal.h>

#include <chrono>
#include <thread>

#include "run_cli.h"
#include "store/run_store.h"

namespace {

bool isSqlite(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) && f.read(16) == QByteArray("SQLite format 3\0", 16);
}

CliResult runGui(const QStringList& args, const QString& xdg) {
    return run_program(MANTISSA_GUI_PATH, QStringList{"-platform", "offscreen"} + args, xdg, 120'000);
}

}  // namespace

class TestGuiCli : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_config, m_db, m_other;

    QStringList fill(QStringList args) const {
        for (QString& a : args)
            a.replace("{CFG}", m_config).replace("{DB}", m_db).replace("{OTHER}", m_other).replace("{DIR}", m_dir.path());
        return args;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_config = m_dir.filePath("tiny.json");
        QFile file(m_config);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"name": "tiny", "dataset": {"kind": "spirals", "samples": 200}, "model": {"hidden": [8]},
                       "train": {"steps": 3, "batch_size": 16}, "backend": "cpu"})");
        file.close();
        m_db = m_dir.filePath("runs.sqlite");
        m_other = m_dir.filePath("other.sqlite");
    }

    // A short screenshot: the PNG is written, the store is still a store. Runs first, so the
    // store exists for the cases below.
    void screenshotWorks() {
        const QString png = m_dir.filePath("shot.png");
        const CliResult r = runGui({"--config", m_config, "--db", m_db, "--screenshot", png, "--steps", "3", "--size",
                                    "1200x800"},
                                   m_dir.path());
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(isSqlite(m_db));
        QVERIFY(QFile::copy(m_db, m_other));
        QCOMPARE(QImage(png).size(), QSize(1200, 800));
    }

    // FILE alone opens the experiment as -c FILE does: the run recorded is the file's.
    void positionalFileOpens() {
        const QString png = m_dir.filePath("positional.png");
        const QString db = m_dir.filePath("positional.sqlite");
        const CliResult r = runGui({m_config, "--db", db, "--screenshot", png, "--steps", "3"}, m_dir.path());
        QVERIFY2(r.code == 0, r.err.constData());
        mantissa::RunStore store(db.toStdString(), mantissa::StoreAccess::read_only);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(runs.front().name), QStringLiteral("tiny"));
    }

    void badCommandLine_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        QTest::addColumn<QString>("mustNotMention");
        const QStringList base = {"--config", "{CFG}", "--db", "{DB}", "--steps", "3"};
        const QString png = "{DIR}/x.png";
        QTest::newRow("unknown option") << QStringList{"--bogus"} << "bogus" << "";
        QTest::newRow("two files") << QStringList{"{CFG}", "{CFG}", "--screenshot", png}
                                   << "mantissa opens one experiment file, not 2" << "";
        QTest::newRow("file and --config") << base + QStringList{"{CFG}", "--screenshot", png}
                                           << "Give the experiment file once, as FILE or as -c FILE" << "";
        QTest::newRow("missing value") << QStringList{"--screenshot", png, "--steps"} << "steps" << "";
        QTest::newRow("steps not a number") << base + QStringList{"--screenshot", png, "--steps", "abc"} << "--steps"
                                            << "--size";
        QTest::newRow("size too small") << base + QStringList{"--screenshot", png, "--size", "10x10"}
                                        << "--size takes WxH from 320x240 to 8192x8192" << "--steps";
        QTest::newRow("size zero") << base + QStringList{"--screenshot", png, "--size", "0x0"} << "--size" << "--steps";
        QTest::newRow("size too large") << base + QStringList{"--screenshot", png, "--size", "100000x100000"} << "--size"
                                        << "--steps";
        QTest::newRow("size not WxH") << base + QStringList{"--screenshot", png, "--size", "big"} << "--size" << "--steps";
        QTest::newRow("at unknown key") << base + QStringList{"--screenshot", png, "--at", "1:precision.autocas=bf16"}
                                        << "precision.autocas" << "";
        QTest::newRow("pace negative") << base + QStringList{"--screenshot", png, "--pace", "-1"} << "--pace takes" << "";
        QTest::newRow("pace not a number") << base + QStringList{"--screenshot", png, "--pace", "fast"} << "--pace takes"
                                           << "";
        QTest::newRow("at bad value") << base + QStringList{"--screenshot", png, "--at", "1:train.lr=-1"} << "train.lr" << "";
        QTest::newRow("at unknown layer") << base + QStringList{"--screenshot", png, "--at", "1:inject=fc9"} << "fc9" << "";
        QTest::newRow("at beyond the run") << base + QStringList{"--screenshot", png, "--at", "3:train.lr=0.1"}
                                           << "--at 3:train.lr=0.1 is beyond the run: it takes 3 steps" << "";
        QTest::newRow("at beyond the run, during it")
            << base + QStringList{"--screenshot", png, "--during", "--at", "0:train.lr=0.1", "--at", "7:inject=fc1"}
            << "--at 7:inject=fc1 is beyond the run: it takes 3 steps" << "";
        QTest::newRow("screenshot into a missing folder")
            << base + QStringList{"--screenshot", "/nonexistent/x.png"} << "/nonexistent/x.png" << "";
        QTest::newRow("screenshot onto a folder") << base + QStringList{"--screenshot", "{DIR}"} << "is a folder" << "";
        QTest::newRow("screenshot onto the store") << base + QStringList{"--screenshot", "{DB}"} << "is the run store" << "";
        QTest::newRow("screenshot onto the default store")
            << QStringList{"--config", "{CFG}", "--steps", "3", "--screenshot", "{DIR}/mantissa/runs.sqlite"}
            << "is the run store" << "";
        QTest::newRow("screenshot onto the experiment")
            << base + QStringList{"--screenshot", "{CFG}"} << "is the experiment file" << "";
        QTest::newRow("screenshot onto a database") << base + QStringList{"--screenshot", "{OTHER}"} << "is an SQLite database"
                                                    << "";
    }
    void badCommandLine() {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        QFETCH(QString, mustNotMention);
        const QByteArray config = [&] {
            QFile f(m_config);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();
        const CliResult r = runGui(fill(args), m_dir.path());
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(r.code == 2, r.err.constData());
        QVERIFY2(err.contains(mentions), r.err.constData());
        if (!mustNotMention.isEmpty()) QVERIFY2(!err.contains(mustNotMention), r.err.constData());
        QVERIFY(isSqlite(m_db));
        QVERIFY(isSqlite(m_other));
        QFile f(m_config);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll() == config);
        QVERIFY(!QFile::exists(m_dir.filePath("x.png")));  // nothing trained, nothing saved
    }

    // SIGTERM during a screenshot's run: the window closes as its close button would, the run is
    // recorded `stopped` with every step it took, no picture is written, and the exit code says the
    // screenshot was not taken (1).
    void sigtermClosesTheWindow() {
        const QString db = m_dir.filePath("signal.sqlite");
        const QString png = m_dir.filePath("never.png");
        QProcess p;
        p.setChildProcessModifier([] { ::signal(SIGTERM, SIG_DFL); });
        p.start(MANTISSA_GUI_PATH, {"-platform", "offscreen", "--config", m_config, "--db", db, "--screenshot", png,
                                    "--steps", "1000000", "--size", "800x600"});
        QVERIFY(p.waitForStarted());
        const auto steps = [&]() -> std::int64_t {
            try {
                mantissa::RunStore store(db.toStdString(), mantissa::StoreAccess::read_only);
                const auto runs = store.list_runs();
                return runs.empty() ? 0 : runs.back().steps;
            } catch (const std::exception&) {
                return 0;
            }
        };
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        while (steps() < 3 && std::chrono::steady_clock::now() < deadline && p.state() == QProcess::Running)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        QVERIFY2(steps() >= 3, p.readAllStandardError().constData());
        p.terminate();  // SIGTERM
        QVERIFY2(p.waitForFinished(60'000), "the window did not close within 60 s of SIGTERM");
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(p.exitCode() == 1, err.constData());
        QVERIFY2(err.contains("stopped by SIGTERM before the screenshot was taken"), err.constData());
        QVERIFY(!QFile::exists(png));

        mantissa::RunStore store(db.toStdString(), mantissa::StoreAccess::read_only);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(runs[0].status, mantissa::RunStatus::stopped);
        const auto recorded = store.steps(runs[0].id);
        QCOMPARE(static_cast<std::int64_t>(recorded.size()), runs[0].steps);
        QVERIFY(runs[0].steps >= 3);
        for (std::size_t i = 0; i < recorded.size(); ++i) QCOMPARE(recorded[i].step, static_cast<std::int64_t>(i));
    }
};

QTEST_MAIN(TestGuiCli)
#include "test_gui_cli.moc"
