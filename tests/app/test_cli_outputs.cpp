// mantissa-cli's outputs, where a mistake loses data: -o never overwrites the run store or any
// SQLite database (and never replaces a device such as /dev/full), every write that fails (a full
// disk, played by /dev/full) is exit 2 with "Writing to F failed: ...", weights export never
// replaces a checkpoint (nor does any other -o), -o writes through a symbolic link and never waits on
// a named pipe, and a training run whose
// recording stopped early (a file-size limit plays the full disk) is exit 1 with its warning.
#include <QtTest>

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <csignal>
#include <utility>
#include <sys/resource.h>
#include <sys/stat.h>

#include "run_cli.h"

namespace {

bool isSqlite(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) && f.read(16) == QByteArray("SQLite format 3\0", 16);
}

bool devFullIsTheDevice() {
    struct stat st {};
    return ::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

class TestCliOutputs : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_db;      // the default store of XDG_DATA_HOME=m_dir, with one short run
    QString m_other;   // a copy of it: any SQLite database
    QString m_doc;     // a saved `bench --json` document

    QStringList fill(QStringList args) const {
        for (QString& a : args) a.replace("{DB}", m_db).replace("{OTHER}", m_other).replace("{DOC}", m_doc)
                                  .replace("{DIR}", m_dir.path());
        return args;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath("mantissa/runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps", "3",
                                     "--db", m_db},
                                    m_dir.path());  // the default store: its folder is made
        QVERIFY2(r.code == 0, r.err.constData());
        m_other = m_dir.filePath("other.sqlite");
        QVERIFY(QFile::copy(m_db, m_other));
        m_doc = m_dir.filePath("bench.json");
        QFile doc(m_doc);
        QVERIFY(doc.open(QIODevice::WriteOnly));
        doc.write(R"({"tool": "mantissa-cli bench", "suites": {"numeric": {"name": "numeric", "tables": )"
                  R"([{"name": "t", "columns": [{"key": "a"}], "rows": [{"a": 1}]}]}}})");
    }

    void outputNeverOverwritesADatabase_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("export -o the store") << QStringList{"export", "1", "--db", "{DB}", "-o", "{DB}"} << "{DB}"
                                             << "is the run store";
        QTest::newRow("export --output=the store") << QStringList{"export", "1", "--db", "{DB}", "--output={DB}"}
                                                   << "{DB}" << "is the run store";
        QTest::newRow("export -o the store by another path")
            << QStringList{"export", "1", "--db", "{DB}", "-o", "{DIR}/mantissa/../mantissa/runs.sqlite"} << "{DB}"
            << "is the run store";
        QTest::newRow("export -o another database") << QStringList{"export", "1", "--db", "{DB}", "-o", "{OTHER}"}
                                                    << "{OTHER}" << "is an SQLite database";
        QTest::newRow("bench -o the default store") << QStringList{"bench", "--suite", "numeric", "--quick", "-o", "{DB}"}
                                                    << "{DB}" << "is the run store";
        QTest::newRow("bench --from -o a database") << QStringList{"bench", "--from", "{DOC}", "-o", "{OTHER}"}
                                                    << "{OTHER}" << "is an SQLite database";
        QTest::newRow("bench --from -o itself") << QStringList{"bench", "--from", "{DOC}", "-o", "{DOC}"} << "{DOC}"
                                                << "is the --from document";
    }
    void outputNeverOverwritesADatabase() {
        QFETCH(QStringList, args);
        QFETCH(QString, target);
        QFETCH(QString, mentions);
        target = fill({target}).front();
        const QByteArray before = [&] {
            QFile f(target);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();
        QVERIFY(!before.isEmpty());
        const CliResult r = run_cli(fill(args), m_dir.path());
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);  // one sentence
        QFile after(target);
        QVERIFY(after.open(QIODevice::ReadOnly));
        QVERIFY(after.readAll() == before);  // not a byte changed
        QVERIFY(!QFile::exists(target + ".partial"));
    }

    // weights export -o never replaces a checkpoint: not a file in the store's checkpoint folder
    // (which the store writes and prunes; not even a new one), not a copy of a checkpoint kept
    // elsewhere (another store's); an ordinary file, such as an earlier export, it may replace.
    void weightsExportNeverReplacesACheckpoint() {
        QDirIterator it(m_dir.filePath("mantissa/runs.checkpoints"), {"step-*.safetensors"}, QDir::Files,
                        QDirIterator::Subdirectories);
        QVERIFY2(it.hasNext(), "the run kept no checkpoint");
        const QString checkpoint = it.next();
        const QString inside = QFileInfo(checkpoint).absolutePath() + "/weights.safetensors";
        const QString copy = m_dir.filePath("copy.safetensors");
        QVERIFY(QFile::copy(checkpoint, copy));
        auto bytes = [](const QString& path) {
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        const QByteArray copy_before = bytes(copy);
        for (const auto& [target, mentions] : {std::pair{inside, QString("lies in the run store's checkpoint folder")},
                                               std::pair{copy, QString("holds a Mantissa checkpoint")}}) {
            const CliResult r = run_cli({"weights", "export", "1", "--db", m_db, "-o", target}, m_dir.path());
            QCOMPARE(r.code, 2);
            QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
            QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);
        }
        QVERIFY(!QFile::exists(inside));
        QVERIFY(bytes(copy) == copy_before);
        const QString exported = m_dir.filePath("exported.safetensors");
        for (int i = 0; i < 2; ++i) {  // the second replaces the first
            const CliResult r = run_cli({"weights", "export", "1", "--db", m_db, "-o", exported}, m_dir.path());
            QVERIFY2(r.code == 0, r.err.constData());
        }
    }

    // Every command's -o (export, bench, weights export) refuses a Mantissa checkpoint: a file in a
    // store's checkpoint folder (a live one, or a new name there), by a symbolic link too, and a
    // copy of a checkpoint kept elsewhere; one sentence, exit 2, not a byte changed.
    void noOutputReplacesACheckpoint_data() {
        QTest::addColumn<QStringList>("command");
        QTest::newRow("export") << QStringList{"export", "1", "--db", "{DB}"};
        QTest::newRow("bench --from") << QStringList{"bench", "--from", "{DOC}"};
        QTest::newRow("weights export") << QStringList{"weights", "export", "1", "--db", "{DB}"};
    }
    void noOutputReplacesACheckpoint() {
        QFETCH(QStringList, command);
        QDirIterator it(m_dir.filePath("mantissa/runs.checkpoints"), {"step-*.safetensors"}, QDir::Files,
                        QDirIterator::Subdirectories);
        QVERIFY2(it.hasNext(), "the run kept no checkpoint");
        const QString checkpoint = it.next();
        const QString copy = m_dir.filePath("kept-elsewhere.safetensors");
        if (!QFile::exists(copy)) QVERIFY(QFile::copy(checkpoint, copy));
        const QString link = m_dir.filePath("link-to-checkpoint.safetensors");
        if (!QFileInfo(link).isSymLink()) QVERIFY(QFile::link(checkpoint, link));
        auto bytes = [](const QString& path) {
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        const QByteArray checkpoint_before = bytes(checkpoint), copy_before = bytes(copy);
        const QString fresh = QFileInfo(checkpoint).absolutePath() + "/new.csv";
        const QStringList files_before = QDir(QFileInfo(checkpoint).absolutePath()).entryList(QDir::Files);
        for (const auto& [target, mentions] :
             {std::pair{checkpoint, QString("lies in the run store's checkpoint folder")},
              std::pair{fresh, QString("lies in the run store's checkpoint folder")},
              std::pair{link, QString("lies in the run store's checkpoint folder")},
              std::pair{copy, QString("holds a Mantissa checkpoint, which is never overwritten")}}) {
            const CliResult r = run_cli(fill(command) + QStringList{"-o", target}, m_dir.path());
            QCOMPARE(r.code, 2);
            const QString err = QString::fromUtf8(r.err);
            // weights export names the checkpoint it reads as such.
            QVERIFY2(err.contains("-o " + target + " " + mentions) ||
                         (command.front() == "weights" && err.contains("-o " + target + " is the checkpoint it reads")),
                     r.err.constData());
            QCOMPARE(err.trimmed().count('\n'), 0);
        }
        QVERIFY(bytes(checkpoint) == checkpoint_before);
        QVERIFY(bytes(copy) == copy_before);
        QVERIFY(QFileInfo(link).isSymLink());
        QVERIFY(!QFileInfo::exists(fresh));
        QCOMPARE(QDir(QFileInfo(checkpoint).absolutePath()).entryList(QDir::Files), files_before);  // no partial file left
    }

    // -o through a symbolic link writes the file it leads to (an existing one, or one the link names
    // that does not exist yet) and keeps the link, for every command that writes a file.
    void outputsWriteThroughSymbolicLinks_data() {
        QTest::addColumn<QStringList>("command");
        QTest::addColumn<QByteArray>("begins");
        QTest::newRow("export") << QStringList{"export", "1", "--db", "{DB}"} << QByteArray("step,epoch,");
        QTest::newRow("bench --from") << QStringList{"bench", "--from", "{DOC}"} << QByteArray("Mantissa ");
        QTest::newRow("weights export") << QStringList{"weights", "export", "1", "--db", "{DB}"} << QByteArray();
    }
    void outputsWriteThroughSymbolicLinks() {
        QFETCH(QStringList, command);
        QFETCH(QByteArray, begins);
        const QString tag = QTest::currentDataTag();
        QTemporaryDir dir;
        const QString real = dir.filePath("real-" + tag), link = dir.filePath("link");
        QVERIFY(QDir().mkpath(dir.filePath("sub")));
        const QString dangling_target = dir.filePath("sub/new-" + tag), dangling = dir.filePath("dangling");
        {
            QFile f(real);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("an earlier output\n");
        }
        QVERIFY(QFile::link(real, link));
        QVERIFY(QFile::link("sub/new-" + tag, dangling));  // relative to the link's folder
        for (const auto& [through, target] : {std::pair{link, real}, std::pair{dangling, dangling_target}}) {
            const CliResult r = run_cli(fill(command) + QStringList{"-o", through}, m_dir.path());
            QVERIFY2(r.code == 0, r.err.constData());
            QVERIFY2(QFileInfo(through).isSymLink(), "the link was replaced by a file");
            QFile f(target);
            QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(target));
            const QByteArray written = f.readAll();
            QVERIFY2(written.startsWith(begins) && written.size() > 24, written.left(80).constData());
            QVERIFY(!written.contains("an earlier output"));
        }
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::System).size(), 3);  // real, link, dangling: no partial
    }

    // An -o that is a named pipe is refused at once (export waited forever for a reader), for every
    // command that writes a file; the process's own standard output (/dev/stdout into a pipe) is
    // still written.
    void outputsRefuseANamedPipe_data() {
        QTest::addColumn<QStringList>("command");
        QTest::newRow("export") << QStringList{"export", "1", "--db", "{DB}"};
        QTest::newRow("bench --from") << QStringList{"bench", "--from", "{DOC}"};
        QTest::newRow("weights export") << QStringList{"weights", "export", "1", "--db", "{DB}"};
    }
    void outputsRefuseANamedPipe() {
        QFETCH(QStringList, command);
        const QString fifo = m_dir.filePath("out.fifo");
        if (!QFileInfo::exists(fifo)) QCOMPARE(::mkfifo(fifo.toUtf8().constData(), 0600), 0);
        const CliResult r = run_cli(fill(command) + QStringList{"-o", fifo}, m_dir.path(), 20'000);
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains("-o " + fifo + " is a named pipe (FIFO)"), r.err.constData());
        QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);
        if (command.front() == "export") {
            const CliResult piped = run_program("/bin/sh", {"-c", "\"$0\" \"$@\" | head -c 10", MANTISSA_CLI_PATH,
                                                            "export", "1", "--db", m_db, "-o", "/dev/stdout"},
                                                m_dir.path(), 20'000);
            QCOMPARE(piped.code, 0);
            QCOMPARE(piped.out, QByteArray("step,epoch"));
        }
    }

    void writeFailuresAreErrors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("stdoutFile");
        QTest::addColumn<QString>("mentions");
        const QString full = "/dev/full";
        QTest::newRow("export -o /dev/full") << QStringList{"export", "1", "--db", "{DB}", "-o", full} << QString()
                                             << "Writing to /dev/full failed: No space left on device.";
        QTest::newRow("export json > /dev/full") << QStringList{"export", "1", "--db", "{DB}", "--format", "json"} << full
                                                 << "Writing to standard output failed: No space left on device.";
        QTest::newRow("export csv > /dev/full") << QStringList{"export", "1", "--db", "{DB}", "--table", "layer_steps"}
                                                << full << "Writing to standard output failed";
        QTest::newRow("runs > /dev/full") << QStringList{"runs", "--db", "{DB}"} << full << "Writing to standard output failed";
        QTest::newRow("show > /dev/full") << QStringList{"show", "1", "--db", "{DB}"} << full
                                          << "Writing to standard output failed";
        QTest::newRow("format > /dev/full") << QStringList{"format", "0.1"} << full << "Writing to standard output failed";
        QTest::newRow("format --json > /dev/full") << QStringList{"format", "--json", "0.1"} << full
                                                   << "Writing to standard output failed";
        QTest::newRow("bench --from > /dev/full") << QStringList{"bench", "--from", "{DOC}"} << full
                                                  << "Writing to standard output failed";
        QTest::newRow("bench --from -o /dev/full") << QStringList{"bench", "--from", "{DOC}", "-o", full} << QString()
                                                   << "Writing to /dev/full failed: No space left on device.";
        QTest::newRow("train > /dev/full")
            << QStringList{"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps", "3",
                           "--no-record"}
            << full << "Writing to standard output failed";
    }
    void writeFailuresAreErrors() {
        QFETCH(QStringList, args);
        QFETCH(QString, stdoutFile);
        QFETCH(QString, mentions);
        if (!devFullIsTheDevice()) QSKIP("/dev/full is not the full device here");
        const CliResult r = run_cli(fill(args), m_dir.path(), 120'000, stdoutFile);
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QVERIFY(devFullIsTheDevice());  // written in place, never renamed over
        QVERIFY(isSqlite(m_db));
    }

    // A file-size limit (with SIGXFSZ ignored, so writes fail with EFBIG) stops the recording part
    // way through a run, as a full disk would: the run trains on, says why, and exits 1.
    void trainRecordingStoppedEarlyFails() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const QStringList first = {"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps", "3",
                                   "--db", db};
        const CliResult created = run_cli(first);
        QVERIFY2(created.code == 0, created.err.constData());
        const qint64 size = QFileInfo(db).size();

        QProcess p;
        p.setChildProcessModifier([size] {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{static_cast<rlim_t>(size + 64 * 1024), static_cast<rlim_t>(size + 64 * 1024)};
            setrlimit(RLIMIT_FSIZE, &limit);
        });
        p.start(MANTISSA_CLI_PATH, {"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps",
                                    "3000", "--db", db, "--json"});
        QVERIFY(p.waitForFinished(120'000));
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(err.contains("warning: recording stopped early"), err.constData());
        QVERIFY2(p.exitCode() == 1, err.constData());
        const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        QCOMPARE(o["status"].toString(), QString("completed"));  // the run itself trained to the end
        QVERIFY(!o["record_error"].toString().isEmpty());
    }

    // --steps 1e1 is a whole number, as in the experiment file; 1.5 is not, and the sentence says so.
    void stepsWithAnExponent() {
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[8]", "--steps", "1e1",
                                     "--no-record", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["steps"].toInt(), 10);
        const CliResult bad = run_cli({"train", "--steps", "1.5", "--no-record"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("a whole number like 1000"), bad.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliOutputs)
#include "test_cli_outputs.moc"
