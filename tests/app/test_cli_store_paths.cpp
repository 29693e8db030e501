// Store paths that cannot be a run store, as mantissa-cli (MANTISSA_CLI_PATH) and the desktop
// application (MANTISSA_GUI_PATH, when built) meet them: a FIFO (which must not hang any command),
// a character or block device (which must never get an SQLite header or a '-journal' file beside
// it), a symbolic link loop, a name over 255 bytes and a path over PATH_MAX: each is exit 2 with
// one sentence, before SQLite sees the path. The store's own -wal, -shm and -journal files are
// never outputs. And `mantissa-cli train` on damaged copies of a store: each copy either takes the
// run and passes integrity_check, or is refused (exit 2) byte-identical with nothing beside it.
#include <QtTest>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <climits>

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "run_cli.h"
#include "store_integrity.h"

namespace {

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QStringList side_files(const QString& path) {
    QStringList present;
    for (const char* suffix : {"-wal", "-shm", "-journal"})
        if (QFileInfo::exists(path + suffix) || QFileInfo(path + suffix).isSymLink()) present << path + suffix;
    return present;
}

// The options of a small, quick training run.
QStringList small_run(const QString& db, int steps) {
    return {"--db",  db,   "--steps", QString::number(steps), "--set", "dataset.kind=blobs", "--set",
            "dataset.samples=200", "--set", "model.hidden=[8]", "--set", "train.batch_size=32", "--set",
            "backend=cpu"};
}

// The commands that take --db, with what each needs besides it.
QStringList command(const QString& name) {
    if (name == "runs") return {"runs"};
    if (name == "show") return {"show", "1"};
    if (name == "export") return {"export", "1"};
    if (name == "rename") return {"rename", "1", "x"};
    return {"train", "--steps", "3", "--set", "dataset.kind=blobs", "--set", "dataset.samples=100",
            "--set", "model.hidden=[4]", "--set", "backend=cpu"};
}

}  // namespace

class TestCliStorePaths : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_store;  // a store with two runs, made by initTestCase

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_store = m_dir.filePath("runs.sqlite");
        for (const char* name : {"first", "second"}) {
            const CliResult r = run_cli(QStringList{"train", "--name", name} + small_run(m_store, 30));
            QVERIFY2(r.code == 0, r.err.constData());
        }
        QVERIFY(side_files(m_store).isEmpty());
    }

    void pathsThatAreNoStoreFile_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("expected");
        const QList<QPair<QString, QString>> kinds = {
            {"fifo", "is a named pipe (FIFO), not a run store file"},
            {"dev-null", "'/dev/null' is a character device, not a run store file"},
            {"block-device", "is a block device, not a run store file"},
            {"link-loop", "cannot be followed: a symbolic link on the way to it leads back to itself"},
            {"long-name", "bytes, more than the 255 a file system allows"},
            {"long-store-name", "bytes long, more than the 247 a store's name may have"},
            {"long-path", "bytes long, more than the"},
            {"wal-is-a-fifo", "(where SQLite keeps its write-ahead log) is a named pipe (FIFO), not a regular file"},
        };
        for (const auto& [kind, expected] : kinds)
            for (const char* cmd : {"runs", "show", "export", "rename", "train"}) {
                // `runs` and `rename` on a store that does not exist say there is none yet: a name
                // that could be a file but not a store is refused by the commands that open it.
                if (kind == "long-store-name" && (QString(cmd) == "runs" || QString(cmd) == "rename")) continue;
                QTest::newRow(qPrintable(kind + " " + cmd)) << kind + " " + cmd << expected;
            }
    }

    // Exit 2 with one sentence, within seconds (a FIFO must not hang), and nothing written.
    void pathsThatAreNoStoreFile() {
        QFETCH(QString, kind);
        QFETCH(QString, expected);
        const QString cmd = kind.section(' ', 1);
        kind = kind.section(' ', 0, 0);
        QString db;
        if (kind == "fifo") {
            db = m_dir.filePath("a-fifo");
            if (!QFileInfo::exists(db)) QCOMPARE(::mkfifo(db.toUtf8().constData(), 0600), 0);
        } else if (kind == "dev-null") {
            db = "/dev/null";
        } else if (kind == "block-device") {
            // Block major 0 is reserved (no driver): even an open of it could only fail.
            db = m_dir.filePath("a-block-device");
            if (!QFileInfo::exists(db) && ::mknod(db.toUtf8().constData(), S_IFBLK | 0600, makedev(0, 0)) != 0)
                QSKIP("cannot make a block device node here (not root)");
        } else if (kind == "link-loop") {
            db = m_dir.filePath("loop.sqlite");
            if (!QFileInfo(db).isSymLink()) QVERIFY(QFile::link(db, db));
        } else if (kind == "long-name") {
            db = m_dir.filePath(QString(300, 'n') + ".sqlite");
        } else if (kind == "long-store-name") {
            db = m_dir.filePath(QString(250, 's'));
        } else if (kind == "long-path") {
            db = m_dir.path();
            while (db.size() < PATH_MAX + 100) db += "/" + QString(200, 'd');
            db += "/runs.sqlite";
        } else if (kind == "wal-is-a-fifo") {
            db = m_dir.filePath("fifo-beside.sqlite");
            if (!QFileInfo::exists(db)) {
                QVERIFY(QFile::copy(m_store, db));
                QCOMPARE(::mkfifo((db + "-wal").toUtf8().constData(), 0600), 0);
            }
        }
        const bool dev_null_had_side_files = !side_files("/dev/null").isEmpty();
        QStringList args = command(cmd);
        args.insert(cmd == "train" ? 1 : args.size(), "--db");
        args.insert(cmd == "train" ? 2 : args.size(), db);
        const CliResult r = run_cli(args, {}, 20'000);
        QVERIFY2(r.code != -1, "the command hung or crashed");
        QCOMPARE(r.code, 2);
        const QString err = QString::fromUtf8(r.err).trimmed();
        QVERIFY2(err.contains(expected), qPrintable(err));
        QVERIFY2(!err.contains('\n') && !err.contains("unexpected error"), qPrintable(err));
        if (kind == "dev-null") {
            QVERIFY(QFileInfo("/dev/null").exists() && !QFileInfo("/dev/null").isFile());
            if (!dev_null_had_side_files) QVERIFY2(side_files("/dev/null").isEmpty(), "SQLite wrote beside /dev/null");
        }
        if (kind == "long-name" || kind == "long-path" || kind == "long-store-name") QVERIFY(!QFile::exists(db));
    }

    // `export -o` onto a file SQLite keeps beside the store (or beside any database) would replace
    // a live write-ahead log or journal: refused, the store untouched.
    // A store path whose folder does not exist is refused (a mistyped --db made folders wherever it
    // pointed); only the default store's folder is made (docs/schema.md), as XDG_DATA_HOME shows.
    void storeFolderMustExist() {
        const QString missing = m_dir.filePath("no-such-folder");
        const QString db = missing + "/deeper/x.sqlite";
        for (const QStringList& args : {command("train") + QStringList{"--db", db}, QStringList{"rename", "1", "x", "--db", db},
                                        QStringList{"import", m_store, "--db", db}}) {
            const CliResult r = run_cli(args);
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.count('\n') == 1, r.err.constData());
            QVERIFY(!QFileInfo::exists(missing));
        }
        const CliResult train = run_cli(command("train") + QStringList{"--db", db});
        QVERIFY2(train.err.contains("Cannot create the run store '" + db.toUtf8() + "': its folder '" + missing.toUtf8() +
                                    "/deeper' does not exist"),
                 train.err.constData());
        const QString xdg = m_dir.filePath("xdg-home");
        const CliResult made = run_cli(command("train"), xdg);
        QVERIFY2(made.code == 0, made.err.constData());
        QVERIFY(QFileInfo(xdg + "/mantissa/runs.sqlite").isFile());
    }

    void sideFilesAreNoOutputs_data() {
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<bool>("otherDatabase");
        for (const char* s : {"-wal", "-shm", "-journal"}) {
            QTest::newRow(qPrintable(QString("store%1").arg(s))) << QString(s) << false;
            QTest::newRow(qPrintable(QString("another database%1").arg(s))) << QString(s) << true;
        }
    }

    void sideFilesAreNoOutputs() {
        QFETCH(QString, suffix);
        QFETCH(bool, otherDatabase);
        QString base = m_store;
        if (otherDatabase) {
            base = m_dir.filePath("other.sqlite");
            if (!QFile::exists(base)) QVERIFY(QFile::copy(m_store, base));
        }
        const QByteArray before = read_all(m_store);
        const QString target = base + suffix;
        const CliResult r = run_cli({"export", "1", "--db", m_store, "-o", target});
        QCOMPARE(r.code, 2);
        const QString err = QString::fromUtf8(r.err);
        if (otherDatabase)
            QVERIFY2(err.contains("is the ") && err.contains("of the SQLite database '" + base + "'") &&
                         err.contains("never overwritten"),
                     qPrintable(err));
        else
            QVERIFY2(err.contains("is a file SQLite keeps beside the run store (" + target + ")"), qPrintable(err));
        QVERIFY(!QFile::exists(target));
        QVERIFY(!QFile::exists(target + ".partial"));
        QCOMPARE(read_all(m_store), before);
        QCOMPARE(test_support::integrity(m_store), QString("ok"));
    }

#ifdef MANTISSA_GUI_PATH
    // The desktop application: the same sentences for --db, and --screenshot is never a side file.
    void guiRefusesTheSamePaths_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("--db a FIFO") << QStringList{"--db", "{FIFO}"} << "is a named pipe (FIFO), not a run store file";
        QTest::newRow("--db a FIFO, screenshot") << QStringList{"--db", "{FIFO}", "--screenshot", "{DIR}/s.png"}
                                                 << "is a named pipe (FIFO), not a run store file";
        QTest::newRow("--db /dev/null") << QStringList{"--db", "/dev/null", "--screenshot", "{DIR}/s.png"}
                                        << "'/dev/null' is a character device, not a run store file";
        QTest::newRow("--db a link loop") << QStringList{"--db", "{DIR}/loop.sqlite", "--screenshot", "{DIR}/s.png"}
                                          << "a symbolic link on the way to it leads back to itself";
        QTest::newRow("--screenshot the store's -wal")
            << QStringList{"--db", "{DB}", "--screenshot", "{DB}-wal"} << "is a file SQLite keeps beside the run store";
        QTest::newRow("--screenshot the store's -journal")
            << QStringList{"--db", "{DB}", "--screenshot", "{DB}-journal"} << "is a file SQLite keeps beside the run store";
    }

    void guiRefusesTheSamePaths() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const QString fifo = m_dir.filePath("gui-fifo");
        if (!QFileInfo::exists(fifo)) QCOMPARE(::mkfifo(fifo.toUtf8().constData(), 0600), 0);
        const QString loop = m_dir.filePath("loop.sqlite");
        if (!QFileInfo(loop).isSymLink()) QVERIFY(QFile::link(loop, loop));
        for (QString& a : args) a.replace("{FIFO}", fifo).replace("{DB}", m_store).replace("{DIR}", m_dir.path());
        const QByteArray before = read_all(m_store);
        const CliResult r = run_program(MANTISSA_GUI_PATH, QStringList{"-platform", "offscreen"} + args, {}, 60'000);
        QVERIFY2(r.code != -1, "mantissa hung or crashed");
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(expected), r.err.constData());
        QVERIFY(!QFile::exists(m_store + "-wal") && !QFile::exists(m_store + "-journal"));
        QCOMPARE(read_all(m_store), before);
    }
#endif

    // `train` on damaged copies of the store: trains and stays sound, or exit 2 byte-identical.
    void trainOnDamagedCopies() {
        const QByteArray good = read_all(m_store);
        constexpr int page = 4096;
        const int pages = static_cast<int>(good.size() / page);
        QVERIFY(pages >= 6);
        struct Copy {
            QString name;
            QByteArray bytes;
        };
        std::vector<Copy> copies;
        for (int p = 1; p < pages; p += 2) copies.push_back({QString("truncated to %1 pages").arg(p), good.left(p * page)});
        copies.push_back({"truncated inside the last page", good.left(good.size() - 100)});
        for (int p = 0; p < pages; ++p) {
            QByteArray flipped = good;
            const int at = p * page + (p == 0 ? 100 : 0) + 3;  // a b-tree page's cell count
            flipped[at] = static_cast<char>(flipped[at] ^ 0xFF);
            copies.push_back({QString("page %1's cell count flipped").arg(p + 1), flipped});
            QByteArray zeroed = good;
            zeroed.replace(p * page, page, QByteArray(page, '\0'));
            copies.push_back({QString("page %1 zeroed").arg(p + 1), zeroed});
        }
        for (int at : {18, 21, 44, 60, 63, 68}) {
            QByteArray flipped = good;
            flipped[at] = static_cast<char>(flipped[at] ^ 0x03);
            copies.push_back({QString("header byte %1 flipped").arg(at), flipped});
        }
        QStringList broken;
        int refused = 0;
        for (std::size_t i = 0; i < copies.size(); ++i) {
            const QString path = m_dir.filePath(QString("damaged-%1.sqlite").arg(i));
            {
                QFile f(path);
                QVERIFY(f.open(QIODevice::WriteOnly) && f.write(copies[i].bytes) == copies[i].bytes.size());
            }
            const CliResult r = run_cli(QStringList{"train"} + small_run(path, 5), {}, 60'000);
            const QString err = QString::fromUtf8(r.err).trimmed();
            const QString name = copies[i].name;
            if (r.code == 0) {
                const QString check = test_support::integrity(path);
                if (check != "ok") broken << name + ": trained, and now damaged: " + check;
            } else if (r.code == 2) {
                ++refused;
                if (read_all(path) != copies[i].bytes) broken << name + ": refused (" + err + ") but changed";
                if (!side_files(path).isEmpty()) broken << name + ": refused but left " + side_files(path).join(", ");
                if (err.contains('\n')) broken << name + ": more than one sentence: " + err;
            } else {
                broken << QString("%1: exit %2: %3").arg(name).arg(r.code).arg(err);
            }
        }
        QVERIFY2(broken.isEmpty(), qPrintable(broken.join('\n')));
        QVERIFY(refused > 0);
        qInfo("%d damaged copies: %d refused untouched, %d trained and sound", static_cast<int>(copies.size()), refused,
              static_cast<int>(copies.size()) - refused);
    }
};

QTEST_GUILESS_MAIN(TestCliStorePaths)
#include "test_cli_store_paths.moc"
