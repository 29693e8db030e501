// Damaged stores opened for writing: a real store with a few runs is copied and each copy damaged
// in one way (truncated at many offsets, a byte flipped in every page and in the header's fields,
// a page zeroed); each copy is then opened for writing and a run recorded into it, as `train`
// does. Every copy must either take the run and pass PRAGMA integrity_check afterwards, or be
// refused with one sentence and stay byte-identical, with no -wal or -shm file left beside it.
// The reading commands' open (StoreAccess::read), on a sample of the copies, reads or refuses and
// writes nothing.
// (tests/app/test_cli_store_paths.cpp runs `mantissa-cli train` on a sample, for its exit code.)
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

constexpr int page_size = 4096;

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void write_all(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(bytes), bytes.size());
}

// One way to damage a store: a name for the failure message and the damaged bytes.
struct Damage {
    QString name;
    QByteArray bytes;
};

std::vector<Damage> damages_of(const QByteArray& good) {
    std::vector<Damage> out;
    const int pages = static_cast<int>(good.size() / page_size);
    // Truncated: at every page boundary, and inside a page.
    for (int p = 1; p < pages; ++p) {
        out.push_back({QString("truncated to %1 pages").arg(p), good.left(p * page_size)});
        out.push_back({QString("truncated inside page %1").arg(p + 1), good.left(p * page_size + 1234)});
    }
    // Bytes of page 1's database header, one field each.
    for (int at : {16, 17, 18, 19, 20, 21, 28, 31, 32, 36, 44, 47, 52, 56, 59, 60, 63, 64, 68, 71, 92, 96}) {
        QByteArray b = good;
        b[at] = static_cast<char>(b[at] ^ 0x5A);
        out.push_back({QString("header byte %1 flipped").arg(at), b});
    }
    // In every page: the b-tree page header (type, first freeblock, cell count, content start,
    // right child), the cell pointers, the middle and the end of the content.
    for (int p = 0; p < pages; ++p) {
        const int base = p * page_size + (p == 0 ? 100 : 0);
        for (int off : {0, 1, 3, 4, 5, 8, 10, 13, page_size / 2, page_size - 7, page_size - 1}) {
            const int at = (off >= page_size / 2 ? p * page_size : base) + off;
            if (at >= good.size()) continue;
            QByteArray b = good;
            b[at] = static_cast<char>(b[at] ^ 0xFF);
            out.push_back({QString("page %1 byte %2 flipped").arg(p + 1).arg(at - p * page_size), b});
        }
    }
    // Pages zeroed, one at a time (page 1 too: no header left).
    for (int p = 0; p < pages; ++p) {
        QByteArray b = good;
        b.replace(p * page_size, page_size, QByteArray(page_size, '\0'));
        out.push_back({QString("page %1 zeroed").arg(p + 1), b});
    }
    return out;
}

QStringList side_files(const QString& path) {
    QStringList present;
    for (const char* suffix : {"-wal", "-shm", "-journal"})
        if (QFile::exists(path + suffix)) present << path + suffix;
    return present;
}

}  // namespace

class StoreDamage : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QByteArray m_good;

    // Opens `path` as `access` says and, for a writing open, records a short run; the sentence
    // thrown, or empty.
    static QString use(const QString& path, StoreAccess access) {
        return error_of([&] {
            RunStore store(path.toStdString(), access);
            for (const RunRow& r : store.list_runs()) store.steps(r.id);
            if (access != StoreAccess::write) return;
            auto rec = store.start_run({"after-damage", "cpu", "test", "{}", make_layer_infos()});
            for (int i = 0; i < 12; ++i) {
                rec->on_step(make_step(i), make_layers(i, 2));
                rec->on_op_steps(make_ops(i, 1));
            }
            rec->on_eval({11, "test", 0.5, 0.75});
            rec->finish(RunStatus::completed);
            if (!rec->error().empty()) throw Error(rec->error());
        });
    }

    // Holds the rule for every `every`th copy; returns how many were refused, and each copy that
    // broke the rule in *broken.
    int hold(StoreAccess access, int every, QStringList* broken) {
        const std::vector<Damage> damages = damages_of(m_good);
        int refused = 0, tried = 0;
        for (std::size_t i = 0; i < damages.size(); i += static_cast<std::size_t>(every)) {
            const Damage& d = damages[i];
            const QString path = m_dir.filePath(QString("copy-%1.sqlite").arg(i));
            {
                QFile f(path);
                if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(d.bytes) != d.bytes.size()) {
                    *broken << d.name + ": cannot write the copy";
                    continue;
                }
            }
            const QString error = use(path, access);
            ++tried;
            if (error.isEmpty() && access == StoreAccess::write) {
                RawDb raw(path, true);
                const QString check = raw.text("PRAGMA integrity_check");
                if (check != "ok") *broken << d.name + ": was written to and is now damaged: " + check;
            } else if (error.isEmpty()) {
                // A reading open wrote nothing (no run here is left `running`), or, if it did (a
                // header that said "rollback journal" switched to WAL), left the file sound.
                if (read_all(path) != d.bytes) {
                    RawDb raw(path, true);
                    const QString check = raw.text("PRAGMA integrity_check");
                    if (check != "ok") *broken << d.name + ": read, changed, and now damaged: " + check;
                }
                if (!side_files(path).isEmpty()) *broken << d.name + ": read, but left " + side_files(path).join(", ");
            } else {
                ++refused;
                if (read_all(path) != d.bytes) *broken << d.name + ": refused (" + error + ") but changed";
                if (!side_files(path).isEmpty())
                    *broken << d.name + ": refused (" + error + ") but left " + side_files(path).join(", ");
                if (error.contains('\n') || !error.contains(path))
                    *broken << d.name + ": not one sentence naming the file: " + error;
            }
            for (const QString& f : QDir(m_dir.path()).entryList({QString("copy-%1.sqlite*").arg(i)}, QDir::Files))
                QFile::remove(m_dir.filePath(f));
        }
        qInfo("%d damaged copies, %d refused untouched, %d %s", tried, refused, tried - refused,
              access == StoreAccess::write ? "took the run and stayed sound" : "were read, unchanged (or changed and sound)");
        return refused;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const QString path = m_dir.filePath("good.sqlite");
        {
            RunStore store(path.toStdString());
            for (int run = 0; run < 3; ++run) {
                auto rec = store.start_run({"run-" + std::to_string(run), "cpu", "test", "{}", make_layer_infos()});
                for (int i = 0; i < 120; ++i) {
                    rec->on_step(make_step(i), make_layers(i, 2));
                    if (i % 4 == 0) rec->on_op_steps(make_ops(i, 1));
                    if (i % 40 == 39) rec->on_eval({i, "test", 1.0 / (i + 1), 0.5});
                    if (i % 50 == 0) rec->on_event({i, 0.1 * i, EventKind::checkpoint, "tick", "{}"});
                }
                rec->finish(RunStatus::completed);
            }
        }
        QVERIFY(side_files(path).isEmpty());  // the last connection checkpointed and removed them
        m_good = read_all(path);
        QVERIFY(m_good.size() >= 16 * page_size);
        QCOMPARE(m_good.size() % page_size, 0);
    }

    void soundCopyTakesARun() {
        const QString path = m_dir.filePath("sound-copy.sqlite");
        write_all(path, m_good);
        QCOMPARE(use(path, StoreAccess::write), QString());
        QCOMPARE(RawDb(path, true).integer("SELECT count(*) FROM runs"), 4LL);
    }

    void writingOpenTakesARunOrRefusesUntouched() {
        QStringList broken;
        const int refused = hold(StoreAccess::write, 1, &broken);
        QVERIFY2(broken.isEmpty(), qPrintable(broken.join('\n')));
        QVERIFY(refused > 0);
    }

    void readingOpenReadsOrRefusesUntouched() {
        QStringList broken;
        hold(StoreAccess::read, 3, &broken);
        QVERIFY2(broken.isEmpty(), qPrintable(broken.join('\n')));
    }

    // The sentence for a damaged store says what SQLite found and how to recover.
    void damagedSentenceSaysHowToRecover() {
        QByteArray b = m_good;
        const int page = static_cast<int>(m_good.size() / page_size) - 2;
        b.replace(page * page_size, page_size, QByteArray(page_size, '\xA5'));
        const QString path = m_dir.filePath("recover.sqlite");
        write_all(path, b);
        const QString error = use(path, StoreAccess::write);
        QVERIFY2(error.startsWith("The run store '" + path + "' is damaged (integrity_check: "), qPrintable(error));
        QVERIFY2(error.contains("it was left unchanged: recover what it holds with `sqlite3 '" + path +
                                "' .recover | sqlite3 NEW.sqlite` or move it aside to start a new store."),
                 qPrintable(error));
        QCOMPARE(read_all(path), b);
        QVERIFY(side_files(path).isEmpty());
    }

    // A user_version older than the tables (a damaged header) is refused before a migration that
    // could not apply would write a backup copy or touch the file.
    void olderVersionOverNewerTablesIsDamage_data() {
        QTest::addColumn<int>("version");
        QTest::newRow("stamped 1") << 1;
        QTest::newRow("stamped 2") << 2;
        QTest::newRow("stamped 3") << 3;
        QTest::newRow("stamped 4") << 4;
        QTest::newRow("stamped 5") << 5;
        QTest::newRow("stamped 6") << 6;
        QTest::newRow("stamped 7") << 7;
        QTest::newRow("stamped 8") << 8;
    }

    void olderVersionOverNewerTablesIsDamage() {
        QFETCH(int, version);
        QByteArray b = m_good;
        b[63] = static_cast<char>(version);  // user_version, big-endian at offset 60
        const QString path = m_dir.filePath(QString("stamped-%1.sqlite").arg(version));
        write_all(path, b);
        for (StoreAccess access : {StoreAccess::write, StoreAccess::read}) {
            const QString error = use(path, access);
            QVERIFY2(error.contains(QString("is damaged (user_version: the file says schema version %1, but its "
                                            "tables already have every column of version 9); it was left unchanged")
                                        .arg(version)),
                     qPrintable(error));
        }
        QCOMPARE(read_all(path), b);
        QVERIFY(side_files(path).isEmpty());
        QVERIFY(QDir(m_dir.path()).entryList({QString("stamped-%1.sqlite.bak*").arg(version)}).isEmpty());
    }

    // JSON text nested 100,000 deep, written into a run's experiment, a sweep's definition and an
    // event's data with sqlite: reading the run or the sweep is one sentence naming the row and the
    // store (whoever holds a row copies and writes its JSON, recursing per level), and an export
    // writes the event's data as its text; nothing overflows the stack.
    void deeplyNestedJsonIsRefusedAsItIsRead() {
        const QString path = m_dir.filePath("deep.sqlite");
        write_all(path, m_good);
        {
            RunStore store(path.toStdString());
            store.create_sweep({"deep sweep", "{}", 1, "local"});
        }
        const QString deep = QString(100'000, '[') + QString(100'000, ']');
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE runs SET config_json = '" + deep + "' WHERE id = 2"), QString());
            QCOMPARE(raw.exec("UPDATE sweeps SET spec_json = '" + deep + "'"), QString());
            QCOMPARE(raw.exec("UPDATE events SET data_json = '" + deep + "' WHERE run_id = 1"), QString());
        }
        const QString sentence = "The run store '" + path +
                                 "' is damaged: the experiment of run 2 (runs.config_json) is nested too deep to read "
                                 "(line 1, column 513: the array at [0][0]";
        for (StoreAccess access : {StoreAccess::read, StoreAccess::write}) {
            RunStore store(path.toStdString(), access);
            for (const QString& error : {error_of([&] { store.list_runs(); }), error_of([&] { store.run(2); })}) {
                QVERIFY2(error.startsWith(sentence) && error.endsWith(" is nested 513 levels deep; at most 512 levels of "
                                                                      "arrays and objects inside each other are read)."),
                         qPrintable(error));
                QCOMPARE(error.count('\n'), 0);
            }
            QCOMPARE(store.run(1).id, 1LL);  // the other runs read as before
            const QString sweep = error_of([&] { store.list_sweeps(); });
            QVERIFY2(sweep.startsWith("The run store '" + path + "' is damaged: the definition of sweep 1 "
                                                                 "(sweeps.spec_json) is nested too deep to read (line 1, column 513: "),
                     qPrintable(sweep));
            QCOMPARE(error_of([&] { store.sweep(1); }), sweep);
            const std::string events = store.export_table(1, "events", RunStore::ExportFormat::json);
            QVERIFY(events.find("\"data_json\":\"[[[[") != std::string::npos);
        }
    }
};

QTEST_GUILESS_MAIN(StoreDamage)
#include "tst_store_damage.moc"
