// mantissa-cli train on hostile files, as a person meets it: each ends in exit 2 and one line on
// standard error ("mantissa-cli train: " and one sentence naming the file and what is wrong), never
// a crash, std::bad_alloc, "unexpected error", exit 1, or a silent fallback to another dataset.
// The gigabyte cases run under an address-space limit (ulimit -v 1 GiB): reading or allocating
// what their headers declare would fail there, so a pass shows that they were refused first.
#include <QtTest>

#include <QFile>
#include <QMap>
#include <QTemporaryDir>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "idx_files.h"
#include "run_cli.h"

namespace {

using idx_files::Bytes;
using namespace std::string_literals;

// `mantissa-cli train --no-record --steps 1 ARGS...` under ulimit -v `limit_kib` (0: none).
CliResult train(const QStringList& args, int limit_kib = 0) {
    QStringList all{"train", "--no-record", "--steps", "1"};
    all += args;
    if (limit_kib == 0) return run_cli(all, {}, 120'000);
    QStringList sh{"-c", QString("ulimit -v %1 && exec \"$0\" \"$@\"").arg(limit_kib), MANTISSA_CLI_PATH};
    sh += all;
    return run_program("/bin/sh", sh, {}, 120'000);
}

QStringList dataset(const QString& kind, const QString& path) {
    return {"--set", "dataset.kind=" + kind, "--set", "dataset.path=" + path};
}

constexpr int kOneGiB = 1 << 20;  // in KiB, as ulimit -v counts

}  // namespace

class TestCliFaults : public QObject {
    Q_OBJECT

    // Exit 2 with exactly one line on stderr: "mantissa-cli COMMAND: " + a sentence holding `part`.
    static void expectOneSentence(const CliResult& r, const QString& part, const QString& command = "train") {
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(r.code == 2, qPrintable(QString("exit %1: %2").arg(r.code).arg(err)));
        QVERIFY2(err.startsWith("mantissa-cli " + command + ": ") && err.endsWith(".\n") && err.count('\n') == 1,
                 qPrintable(err));
        QVERIFY2(err.toUtf8() == r.err, "not UTF-8");
        QVERIFY2(err.contains(part), qPrintable("'" + part + "' not in: " + err));
        QVERIFY2(!err.contains("unexpected") && !err.contains("bad_alloc"), qPrintable(err));
    }

private slots:
    // The probe's gzip bomb: 1,300,000 images (1 GB inflated) beside 5 labels, under 1 GiB.
    void gzipBombUnderAMemoryLimit() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true, 28, 28));
        std::filesystem::remove(folder + "/train-images-idx3-ubyte.gz");
        QVERIFY(idx_files::write_raw(folder + "/train-images-idx3-ubyte.gz",
                                     idx_files::gzip_of_zeros(idx_files::image_header(1'300'000, 28, 28), 1'300'000ull * 784)));
        const CliResult r = train(dataset("fashion-mnist", dir.path()), kOneGiB);
        expectOneSentence(r, "declares 5 labels but train-images-idx3-ubyte.gz declares 1300000 images; the counts must match");
    }

    // Headers that agree, declaring 1.9 GB of pixels (7.1 GiB as floats): refused by the memory
    // budget before any data, not by std::bad_alloc.
    void declaredGigabytesBeyondTheLimit() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true, 28, 28));
        const std::uint32_t count = 2'423'469;  // x 784 = 1,899,999,696 bytes
        for (const char* name : {"/train-images-idx3-ubyte.gz", "/train-labels-idx1-ubyte.gz"})
            std::filesystem::remove(folder + name);
        QVERIFY(idx_files::write_raw(folder + "/train-images-idx3-ubyte.gz",
                                     idx_files::gzip_of_zeros(idx_files::image_header(count, 28, 28), std::uint64_t{count} * 784)));
        QVERIFY(idx_files::write_raw(folder + "/train-labels-idx1-ubyte.gz",
                                     idx_files::gzip_of_zeros(idx_files::label_header(count), count)));
        const CliResult r = train(dataset("idx", dir.path()), kOneGiB);
        expectOneSentence(r, "The IDX dataset in " + dir.path() + " needs about 7.1 GiB of memory, more than the ");
        QVERIFY2(r.err.contains("address-space limit (ulimit -v)"), r.err.constData());
    }

    // A 2 GB sparse CSV under 1 GiB: refused by its size, not read up to its limit first.
    void sparseCsvRefusedByItsSize() {
        QTemporaryDir dir;
        const QString path = dir.filePath("huge.csv");
        std::ofstream(path.toStdString()) << "1,2\n";
        std::filesystem::resize_file(path.toStdString(), std::uint64_t{2} << 30);
        const CliResult r = train(dataset("csv", path), kOneGiB);
        expectOneSentence(r, "dataset.path " + path + " is 2147483648 bytes, larger than 1 GiB, the limit for a CSV dataset file");
    }

    void gzipWithoutItsTrailer() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        const std::string path = folder + "/t10k-labels-idx1-ubyte.gz";
        std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
        expectOneSentence(train(dataset("fashion-mnist", dir.path())),
                          QString::fromStdString("The IDX file " + path + " is truncated: its gzip trailer is missing"));
    }

    // A FIFO where an IDX file should be: named, an error (no fallback to spirals), no blocking.
    void fifoInTheFashionMnistFolder() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        const std::string path = folder + "/train-images-idx3-ubyte.gz";
        std::filesystem::remove(path);
        QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
        expectOneSentence(train(dataset("fashion-mnist", dir.path())),
                          QString::fromStdString("The IDX file " + path + " is a FIFO (a named pipe), not a file"));
    }

    // A folder that is not there still falls back to spirals with a warning before training, as
    // docs/datasets.md says.
    void missingFolderStillFallsBack() {
        QTemporaryDir dir;
        const CliResult r = train(dataset("fashion-mnist", dir.filePath("absent")));
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.err.contains("warning: Fashion-MNIST was not found at " + dir.filePath("absent").toUtf8()), r.err.constData());
    }

    void csvWithANulByte() {
        QTemporaryDir dir;
        const QString path = dir.filePath("nul.csv");
        std::ofstream(path.toStdString(), std::ios::binary) << "1,2\n3,4\0tail,1\n"s;
        expectOneSentence(train(dataset("csv", path)),
                          path + " line 2, column 2: '4\\0tail' holds a NUL byte (\\0); a CSV file is text");
    }

    void csvInUtf16() {
        QTemporaryDir dir;
        const QString path = dir.filePath("wide.csv");
        std::ofstream(path.toStdString(), std::ios::binary) << "\xFF\xFE" "1\0,\0" "2\0\n\0"s;
        expectOneSentence(train(dataset("csv", path)),
                          "The CSV file " + path + " is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8");
    }

    void csvPlusMinusSeven() {
        QTemporaryDir dir;
        const QString path = dir.filePath("sign.csv");
        std::ofstream(path.toStdString()) << "1,0\n+-7,1\n";
        expectOneSentence(train(dataset("csv", path)), path + " line 2, column 1: '+-7' is not a number");
    }

    // Bytes after a NUL in an experiment file are not ignored: the NUL is an error at its place.
    void experimentFileWithANulByte() {
        QTemporaryDir dir;
        const QString path = dir.filePath("e.json");
        std::ofstream(path.toStdString(), std::ios::binary)
            << "{\"name\": \"x\"}\0{\"train\": {\"lr\": -1}}"s;
        const CliResult r = run_cli({"train", "--no-record", "--steps", "1", path}, {}, 120'000);
        expectOneSentence(r, "Experiment file " + path + " is not valid JSON: line 1, column 14: a NUL byte (\\0)");
    }

    // Residual blocks nested past their limit (building a block recurses into its branch, and
    // 10000 of them overflowed the stack): 40 levels are refused naming the 33rd block's place;
    // 10000 are refused earlier, by the JSON's nesting, at its line and column.
    void residualBlocksNestedTooDeep_data() {
        QTest::addColumn<int>("depth");
        QTest::addColumn<QString>("part");
        QString path = "model.layers[0]";
        for (int i = 0; i < 32; ++i) path += ".layers[0]";
        QTest::newRow("40") << 40 << path + ": a residual block 33 levels deep, inside 32 others; residual blocks nest at most 32 levels deep.";
        QTest::newRow("10000") << 10000 << "is nested 513 levels deep; at most 512 levels of arrays and objects";
    }
    void residualBlocksNestedTooDeep() {
        QFETCH(int, depth);
        QFETCH(QString, part);
        QTemporaryDir dir;
        const QString path = dir.filePath("e.json");
        std::string layers;
        for (int i = 0; i < depth; ++i) layers += R"({"type":"residual","layers":[)";
        layers += R"({"type":"linear","out":4})";
        for (int i = 0; i < depth; ++i) layers += "]}";
        std::ofstream(path.toStdString()) << R"({"dataset":{"kind":"spirals"},"model":{"kind":"layers","layers":[)"
                                          << layers << R"(,{"type":"linear","out":3}]}})";
        expectOneSentence(run_cli({"train", "--no-record", "--steps", "1", path}, {}, 120'000), part);
    }

    // A store whose b-tree leaf pages have garbage cell pointers (the pointer array overwritten in
    // place, the cell count intact), each page in turn: SQLite walks such a page as if it held fewer
    // rows unless it checks a page's cells when it loads it, and `export` gave 136 of 360 what-if
    // rows with exit 0. Each export now gives every row, or the store's one sentence (exit 2), and
    // leaves the file byte for byte.
    void damagedPagesAreNotFewerRows() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult trained = run_cli({"train", "--db", db, "--steps", "20", "--set", "dataset.kind=spirals",
                                           "--set", "model.hidden=[64,32]", "--set", "train.layer_stats_every=1",
                                           "--set", "train.what_if.formats=[\"fp16\",\"bf16\",\"fp8-e4m3\",\"mxfp4\"]"},
                                          {}, 120'000);
        QVERIFY2(trained.code == 0, trained.err.constData());
        const QStringList tables = {"what_if_steps", "steps", "layer_steps"};
        QMap<QString, QByteArray> want;
        for (const QString& table : tables) {
            const CliResult r = run_cli({"export", "1", "--table", table, "--db", db});
            QVERIFY2(r.code == 0, r.err.constData());
            want[table] = r.out;
        }
        QVERIFY(want["what_if_steps"].count('\n') > 100);
        QFile f(db);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray good = f.readAll();
        f.close();
        const int page = (static_cast<unsigned char>(good[16]) << 8) | static_cast<unsigned char>(good[17]);
        QVERIFY(page >= 512 && good.size() % page == 0);
        int garbled = 0, refused = 0;
        for (qsizetype at = page; at < good.size(); at += page) {  // page 1 holds the schema's root
            if (good[at] != 0x0D && good[at] != 0x0A) continue;     // a table's or an index's leaf page
            QByteArray bytes = good;
            for (int i = 8; i < 808 && i + 4 <= page; i += 4) bytes.replace(at + i, 4, QByteArray("\xDE\xAD\xBE\xEF", 4));
            const QString copy = dir.filePath(QString("garbled-%1.sqlite").arg(at / page + 1));
            QFile out(copy);
            QVERIFY(out.open(QIODevice::WriteOnly) && out.write(bytes) == bytes.size());
            out.close();
            ++garbled;
            for (const QString& table : tables) {
                const CliResult r = run_cli({"export", "1", "--table", table, "--db", copy});
                if (r.code == 0) {
                    QVERIFY2(r.out == want[table], qPrintable(QString("page %1 garbled: %2 exported %3 of %4 lines, exit 0")
                                                                  .arg(at / page + 1).arg(table)
                                                                  .arg(r.out.count('\n')).arg(want[table].count('\n'))));
                    continue;
                }
                ++refused;
                expectOneSentence(r, "The run store '" + copy + "' is damaged", "export");
            }
            QFile back(copy);
            QVERIFY(back.open(QIODevice::ReadOnly));
            QVERIFY2(back.readAll() == bytes, "a damaged store was written to");
        }
        QVERIFY(garbled >= 5);
        QVERIFY(refused >= 1);
    }

    // A damaged store whose schema SQLite quotes with line breaks and bytes that are not UTF-8 (found
    // by fuzz_store_open): still one line, escaped.
    void damagedStoreQuotedOnOneLine_data() {
        QTest::addColumn<QString>("file");
        QTest::newRow("line breaks") << "damaged-schema.sqlite";
        QTest::newRow("not UTF-8") << "damaged-schema-not-utf8.sqlite";
    }
    void damagedStoreQuotedOnOneLine() {
        QFETCH(QString, file);
        QVERIFY2(qEnvironmentVariableIsSet("MANTISSA_SOURCE_DIR"), "MANTISSA_SOURCE_DIR is not set (run through ctest)");
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        QVERIFY(QFile::copy(qEnvironmentVariable("MANTISSA_SOURCE_DIR") + "/tests/fuzz/corpus/fuzz_store_open/" + file, db));
        expectOneSentence(run_cli({"runs", "--db", db}, {}, 60'000), "The run store '" + db + "' is damaged", "runs");
    }
};

QTEST_GUILESS_MAIN(TestCliFaults)
#include "test_cli_faults.moc"
