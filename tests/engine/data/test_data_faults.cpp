// Hostile dataset files, each ending in one sentence that names the file and what is wrong with it:
// gzip files that lie (a header declaring a gigabyte, a trailer cut off or not matching, data
// after the trailer, a damaged gzip header), IDX headers that disagree with each other, files of
// the wrong kind where an IDX file or folder should be (never taken for "missing", never blocking),
// CSV files that are too large, hold NUL bytes, or are UTF-16, and cells like "+-7". Several cases
// are built so that doing the wrong thing would give another sentence: a bomb whose data past the
// header is corrupt shows that the data was never inflated.
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/gzip_input.h"
#include "data/idx_reader.h"
#include "data/memory_budget.h"
#include "printable_text.h"
#include "user_file.h"
#include "data_test_util.h"
#include "error.h"
#include "idx_files.h"

using namespace mantissa;
using idx_files::Bytes;
using mantissa::test::error_of;

namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

#define VERIFY_CONTAINS(message, part) \
    QVERIFY2(contains(message, part), qPrintable(QString("'%1' not in: %2").arg(QString::fromStdString(part), QString::fromStdString(message))))

std::string write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

DatasetSpec spec_of(const std::string& kind, const std::string& path) {
    DatasetSpec spec;
    spec.kind = kind;
    spec.path = path;
    spec.test_fraction = 0.0;
    spec.normalize = false;
    return spec;
}

// A gzip file of `data` whose trailer bytes (or the bytes after it) are then edited by `edit`.
std::string write_gz_edited(const std::string& path, const Bytes& data, const std::function<void(Bytes&)>& edit) {
    Bytes file = idx_files::gzip_parts(data).file();
    edit(file);
    idx_files::write_raw(path, file);
    return path;
}

}  // namespace

class TestDataFaults : public QObject {
    Q_OBJECT

private slots:
    // ---- gzip: the trailer

    void gzip_without_its_trailer_is_truncated() {
        QTemporaryDir dir;
        const std::string path = write_gz_edited(dir.path().toStdString() + "/x.gz", idx_files::pattern_images(3, 4, 4),
                                                 [](Bytes& f) { f.resize(f.size() - 8); });
        QCOMPARE(error_of([&] { data::read_idx_images(path); }),
                 "The IDX file " + path + " is truncated: its gzip trailer is missing.");
    }

    void gzip_trailer_cut_short() {
        QTemporaryDir dir;
        const std::string path = write_gz_edited(dir.path().toStdString() + "/x.gz", idx_files::pattern_images(3, 4, 4),
                                                 [](Bytes& f) { f.resize(f.size() - 3); });
        QCOMPARE(error_of([&] { data::read_idx_images(path); }),
                 "The IDX file " + path + " is truncated: its gzip trailer is cut short (5 of its 8 bytes are there).");
    }

    void gzip_bad_crc() {
        QTemporaryDir dir;
        const Bytes data = idx_files::pattern_images(3, 4, 4);
        const std::string path = write_gz_edited(dir.path().toStdString() + "/x.gz", data,
                                                 [](Bytes& f) { f[f.size() - 8] ^= 0x01; });
        const std::string message = error_of([&] { data::read_idx_images(path); });
        VERIFY_CONTAINS(message, "The IDX file " + path + " is damaged: its data does not match the CRC-32 in its gzip trailer (");
        VERIFY_CONTAINS(message, "computed, ");
    }

    void gzip_bad_length() {
        QTemporaryDir dir;
        const Bytes data = idx_files::pattern_images(3, 4, 4);  // 16 + 48 = 64 bytes
        const std::string path = write_gz_edited(dir.path().toStdString() + "/x.gz", data,
                                                 [](Bytes& f) { f[f.size() - 4] = 65; });
        QCOMPARE(error_of([&] { data::read_idx_images(path); }),
                 "The IDX file " + path +
                     " is damaged: its gzip trailer gives the inflated length as 65 bytes (modulo 2^32), but 64 bytes "
                     "were inflated.");
    }

    void gzip_with_data_after_its_trailer() {
        QTemporaryDir dir;
        const Bytes data = idx_files::labels({1, 2, 3});
        Bytes second = idx_files::gzip_parts(data).file();  // two gzip streams one after the other
        std::size_t first_size = 0;
        const std::string path = write_gz_edited(dir.path().toStdString() + "/two.gz", data, [&](Bytes& f) {
            first_size = f.size();
            f.insert(f.end(), second.begin(), second.end());
        });
        QCOMPARE(error_of([&] { data::read_idx_labels(path, 10); }),
                 "The IDX file " + path + " holds " + std::to_string(second.size()) +
                     " more bytes after the end of its gzip data at byte " + std::to_string(first_size) +
                     "; only a single gzip stream is read (decompress it, or keep its first stream only).");
        const std::string junk = write_gz_edited(dir.path().toStdString() + "/junk.gz", data,
                                                 [](Bytes& f) { f.insert(f.end(), {'j', 'u', 'n', 'k'}); });
        VERIFY_CONTAINS(error_of([&] { data::read_idx_labels(junk, 10); }), "holds 4 more bytes after the end of its gzip data");
    }

    // ---- gzip: the header

    void gzip_optional_header_fields_are_read() {
        QTemporaryDir dir;
        const Bytes data = idx_files::labels({4, 0, 9});
        idx_files::GzipFields fields;
        fields.name = "train-labels-idx1-ubyte";
        fields.comment = "a comment";
        fields.extra = Bytes(300, 7);
        fields.header_crc = true;
        const std::string path = dir.path().toStdString() + "/fields.gz";
        QVERIFY(idx_files::write_raw(path, idx_files::gzip_parts(data, fields).file()));
        QCOMPARE(data::read_idx_labels(path, 10), (std::vector<std::int32_t>{4, 0, 9}));
    }

    void gzip_damaged_header_data() {
        QTest::addColumn<QByteArray>("edit");  // "method", "flags", "hcrc", "cut:N"
        QTest::addColumn<QString>("expected");
        QTest::newRow("compression method 7")
            << QByteArray("method") << "is a damaged gzip file: its header names compression method 7 at byte 2, but gzip has only method 8 (deflate).";
        QTest::newRow("reserved flags")
            << QByteArray("flags") << "is a damaged gzip file: its header sets reserved flag bits (byte 3 is 224).";
        QTest::newRow("header CRC") << QByteArray("hcrc") << "is a damaged gzip file: its header does not match the header CRC it stores.";
        QTest::newRow("cut in the fixed header") << QByteArray("cut:5") << "is truncated: it ends after 5 bytes, inside its gzip header (its first 10 bytes).";
        QTest::newRow("cut in the file name") << QByteArray("cut:14") << "is truncated: it ends after 14 bytes, inside its gzip header (the original file name).";
    }
    void gzip_damaged_header() {
        QFETCH(QByteArray, edit);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        idx_files::GzipFields fields;
        fields.name = "name.idx";
        fields.header_crc = edit == "hcrc";
        Bytes file = idx_files::gzip_parts(idx_files::labels({1}), fields).file();
        if (edit == "method") file[2] = 7;
        if (edit == "flags") file[3] = 0xE0;
        if (edit == "hcrc") file[4] ^= 1;  // MTIME: covered by the header CRC
        if (edit.startsWith("cut:")) file.resize(static_cast<std::size_t>(edit.mid(4).toInt()));
        const std::string path = dir.path().toStdString() + "/h.gz";
        QVERIFY(idx_files::write_raw(path, file));
        QCOMPARE(QString::fromStdString(error_of([&] { data::read_idx_labels(path, 10); })),
                 "The IDX file " + QString::fromStdString(path) + " " + expected);
    }

    void gzip_corrupt_data_names_its_offset() {
        QTemporaryDir dir;
        idx_files::GzipParts parts = idx_files::gzip_parts(idx_files::pattern_images(5, 10, 10));
        parts.deflate[0] = 0xFF;  // BTYPE 3: no such block type
        const std::string path = dir.path().toStdString() + "/c.gz";
        QVERIFY(idx_files::write_raw(path, parts.file()));
        QCOMPARE(error_of([&] { data::read_idx_images(path); }),
                 "The IDX file " + path + " is damaged: its gzip data is corrupt at byte 10 (invalid block type).");
    }

    // A whole file whose deflate data stops short of its end-of-stream mark (a stored block that
    // claims more bytes than follow it, so zlib asks for more input than the file has), while its
    // trailer states the declared length: damaged, not truncated.
    void gzip_stream_ending_early_in_a_whole_file_is_damage() {
        QTemporaryDir dir;
        const Bytes idx = idx_files::pattern_images(5, 10, 10);  // 16 + 500 bytes
        idx_files::GzipParts parts = idx_files::gzip_parts(idx);
        const std::size_t given = 200;
        parts.deflate = {0x00, 0xFF, 0xFF, 0x00, 0x00};  // not final, stored, LEN 65535 (NLEN its complement)
        parts.deflate.insert(parts.deflate.end(), idx.begin(), idx.begin() + given);
        const std::string path = dir.path().toStdString() + "/e.gz";
        QVERIFY(idx_files::write_raw(path, parts.file()));
        // zlib hands on the stored bytes, then the trailer's 8 as if they were more of them.
        QCOMPARE(error_of([&] { data::read_idx_images(path); }),
                 "The IDX file " + path + " is damaged: its gzip trailer states the 516 bytes its header declares, but "
                 "its deflate data ends after " + std::to_string(given + 8) + " bytes without the end-of-stream mark.");
        // The same file cut short inside its data: the trailer is gone, so it is truncated.
        Bytes cut = parts.file();
        cut.resize(cut.size() - 20);
        QVERIFY(idx_files::write_raw(path, cut));
        VERIFY_CONTAINS(error_of([&] { data::read_idx_images(path); }), " is truncated: its header declares 516 bytes in all");
    }

    // The gzip layer on its own: a file read in chunks of any size gives back exactly its data.
    void gzip_input_reads_in_any_chunk_size() {
        QTemporaryDir dir;
        Bytes data(300000);
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>((i * i) >> 7);
        const std::string path = dir.path().toStdString() + "/d.gz";
        QVERIFY(idx_files::write_raw(path, idx_files::gzip_parts(data).file()));
        for (std::uint64_t chunk : {1u, 7u, 4096u, 300000u, 1000000u}) {
            UserFile file = open_user_file(path, "f");
            QVERIFY(data::starts_like_gzip(file));
            data::GzipInput in(std::move(file), "f");
            QCOMPARE(in.stated_size(), std::optional<std::uint32_t>(300000));
            Bytes back;
            Bytes buf(chunk);
            for (;;) {
                const std::uint64_t r = in.read(buf.data(), chunk);
                back.insert(back.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(r));
                if (r < chunk) break;
            }
            QVERIFY(back == data);
            QVERIFY(!in.ended_early());
            QCOMPARE(in.inflated(), std::uint64_t{300000});
        }
    }

    // ---- IDX headers, checked before any data

    // A gzip bomb in the probe's shape: train images declaring 1,300,000 28x28 images (1 GB
    // inflated, a 1 MB file) beside a label file of 5. The count mismatch is told from the headers;
    // the data past the images header is corrupt here, so had it been inflated the sentence would be
    // about corruption instead.
    void gzip_bomb_is_refused_by_its_headers() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        Bytes bomb = idx_files::gzip_of_zeros(idx_files::image_header(1'300'000, 28, 28), 1'300'000ull * 784);
        QVERIFY(bomb.size() < 2'000'000);
        for (std::size_t i = 200; i < bomb.size() - 8; i += 97) bomb[i] = 0xFF;  // corrupt past the header
        std::filesystem::remove(folder + "/train-images-idx3-ubyte.gz");
        QVERIFY(idx_files::write_raw(folder + "/train-images-idx3-ubyte.gz", bomb));
        QCOMPARE(error_of([&] { load_dataset(spec_of("idx", folder), 1); }),
                 "The IDX label file " + folder + "/train-labels-idx1-ubyte.gz declares 5 labels but "
                 "train-images-idx3-ubyte.gz declares 1300000 images; the counts must match.");
    }

    // A header that declares more than the gzip file's size could ever inflate to.
    void gzip_too_small_for_its_header() {
        QTemporaryDir dir;
        Bytes data = idx_files::image_header(1'000'000, 28, 28);  // 784 MB declared
        data.resize(data.size() + 5000, 3);
        const std::string path = dir.path().toStdString() + "/small.gz";
        QVERIFY(idx_files::write_raw(path, idx_files::gzip_parts(data).file()));
        const std::string message = error_of([&] { data::read_idx_images(path); });
        VERIFY_CONTAINS(message, "The IDX file " + path + " is truncated or damaged: its header declares 784000016 bytes in all, more than its ");
        VERIFY_CONTAINS(message, " bytes of gzip data can hold (deflate packs at most about 1032 bytes into one); it was refused before inflating.");
    }

    void train_and_test_image_sizes_differ_before_reading() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        // Test images of another size whose data is cut short: the sizes are compared first.
        Bytes test = idx_files::pattern_images(3, 5, 5);
        test.resize(test.size() - 10);
        std::filesystem::remove(folder + "/t10k-images-idx3-ubyte.gz");
        QVERIFY(idx_files::write(folder, "t10k-images-idx3-ubyte", test, true));
        QCOMPARE(error_of([&] { load_dataset(spec_of("idx", folder), 1); }),
                 "The IDX image file " + folder + "/t10k-images-idx3-ubyte.gz holds 5x5 images but the training images are 2x3.");
    }

    // More than this machine (or this process's limits) can hold is refused before reading.
    void memory_beyond_the_budget_is_refused() {
        const data::MemoryBudget budget = data::memory_budget();
        QVERIFY(budget.bytes > 0);
        QVERIFY(!budget.says.empty());
        const std::string message = error_of([&] { data::check_memory(budget.bytes + 1, "The IDX dataset in /x"); });
        QCOMPARE(message, "The IDX dataset in /x needs about " + data::memory_text(budget.bytes + 1) + " of memory, more than " +
                              budget.says + "; it was refused before reading.");
        QCOMPARE(error_of([&] { data::check_memory(1024, "small"); }), std::string());
        QCOMPARE(data::memory_text(7ull << 30), std::string("7.0 GiB"));
        QCOMPARE(data::memory_text(900), std::string("900 bytes"));
    }

    // ---- the wrong kind of thing where an IDX file or folder should be

    void wrong_kind_of_idx_file_data() {
        QTest::addColumn<QString>("kind");  // dataset.kind
        QTest::addColumn<QString>("make");  // what replaces train-images-idx3-ubyte.gz
        QTest::addColumn<QString>("expected");
        for (const char* kind : {"fashion-mnist", "mnist", "idx"}) {
            auto row = [&](const char* make, const char* expected) {
                QTest::newRow((std::string(kind) + ": " + make).c_str()) << kind << make << expected;
            };
            row("fifo", "is a FIFO (a named pipe), not a file.");
            row("folder", "is a folder, not a file.");
            row("device", "is a device, not a file.");
            row("loop", "is a symbolic link that loops (too many levels of symbolic links), not a file.");
            row("dangling", "is a symbolic link to nowhere-at-all, which does not exist.");
        }
    }
    void wrong_kind_of_idx_file() {
        QFETCH(QString, kind);
        QFETCH(QString, make);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        const std::string path = folder + "/train-images-idx3-ubyte.gz";
        fs::remove(path);
        if (make == "fifo") QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
        if (make == "folder") QVERIFY(fs::create_directory(path));
        if (make == "device") fs::create_symlink("/dev/zero", path);
        if (make == "loop") fs::create_symlink(path, path);
        if (make == "dangling") fs::create_symlink("nowhere-at-all", path);
        // Never "missing" (no fallback to spirals for fashion-mnist or mnist), never blocking.
        QCOMPARE(QString::fromStdString(error_of([&] { load_dataset(spec_of(kind.toStdString(), folder), 1); })),
                 "The IDX file " + QString::fromStdString(path) + " " + expected);
    }

    void wrong_kind_of_idx_folder() {
        QTemporaryDir dir;
        const std::string fifo = dir.path().toStdString() + "/fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        for (const char* kind : {"fashion-mnist", "idx"})
            QCOMPARE(error_of([&] { load_dataset(spec_of(kind, fifo), 1); }),
                     "dataset.path " + fifo + " is a FIFO (a named pipe), not a folder; kind '" + kind +
                         "' reads a folder holding the four IDX files.");
        const std::string loop = dir.path().toStdString() + "/loop";
        fs::create_symlink(loop, loop);
        QCOMPARE(error_of([&] { load_dataset(spec_of("mnist", loop), 1); }),
                 "dataset.path " + loop + " is a symbolic link that loops (too many levels of symbolic links).");
        QCOMPARE(error_of([&] { load_dataset(spec_of("fashion-mnist", "/dev/null"), 1); }),
                 std::string("dataset.path /dev/null is a device, not a folder; kind 'fashion-mnist' reads a folder "
                             "holding the four IDX files."));
        // What is not there at all still falls back, as docs/datasets.md says.
        const Dataset d = load_dataset(spec_of("fashion-mnist", dir.path().toStdString() + "/absent"), 1);
        QCOMPARE(d.name, std::string("spirals"));
    }

    // ---- CSV

    // A file over the limit is refused by its size, before a byte is read (a sparse file: instant).
    void csv_over_the_limit_refused_by_its_size() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/huge.csv";
        write_file(path, "1,2\n");
        fs::resize_file(path, std::uint64_t{2} << 30);
        QCOMPARE(error_of([&] { load_dataset(spec_of("csv", path), 1); }),
                 "dataset.path " + path + " is 2147483648 bytes, larger than 1 GiB, the limit for a CSV dataset file.");
    }

    void csv_text_faults_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("expected");  // after "<path> " or "The CSV file <path> "
        const auto bytes = [](const char* s, int n) { return QByteArray(s, n); };
        QTest::newRow("NUL in a cell") << bytes("a,b\n1,2\n3,4\0x,1\n", 16)
                                       << "line 3, column 2: '4\\0x' holds a NUL byte (\\0); a CSV file is text, and this one holds binary data.";
        QTest::newRow("NUL in the header") << bytes("a\0b,c\n1,2\n3,4\n", 14)
                                           << "line 1, column 1: 'a\\0b' holds a NUL byte (\\0); a CSV file is text, and this one holds binary data.";
        QTest::newRow("NUL after a BOM, line 1") << bytes("\xEF\xBB\xBF" "1,\0\n", 7)
                                                 << "line 1, column 2: '\\0' holds a NUL byte (\\0); a CSV file is text, and this one holds binary data.";
        QTest::newRow("UTF-16LE with BOM") << bytes("\xFF\xFE" "1\0,\0" "2\0\n\0", 10)
                                           << "is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 (or plain ASCII) text.";
        QTest::newRow("UTF-16BE with BOM") << bytes("\xFE\xFF\0" "1\0,\0" "2", 8)
                                           << "is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 (or plain ASCII) text.";
        QTest::newRow("UTF-16LE without BOM") << bytes("1\0,\0" "2\0\n\0" "3\0,\0" "4\0\n\0", 16)
                                              << "looks like UTF-16 text (every second byte is NUL); save it as UTF-8 (or plain ASCII) text.";
        QTest::newRow("UTF-32LE with BOM") << bytes("\xFF\xFE\0\0" "1\0\0\0", 8)
                                           << "is UTF-32 text (it starts with a UTF-32 byte-order mark); save it as UTF-8 (or plain ASCII) text.";
        QTest::newRow("a byte that is not UTF-8") << QByteArray("1,2,0\n3,\xFF,1\n")
                                                  << "line 2, column 2: '\\xFF' is not a number.";
        QTest::newRow("+-7") << QByteArray("1,2\n+-7,1\n") << "line 2, column 1: '+-7' is not a number.";
        QTest::newRow("++7") << QByteArray("1,2\n++7,1\n") << "line 2, column 1: '++7' is not a number.";
        QTest::newRow("+-inf") << QByteArray("1,2\n+-inf,1\n") << "line 2, column 1: '+-inf' is not a number.";
        QTest::newRow("a long cell with a NUL is cut, escaped")
            << bytes("1,2\n3,45678901234567890123456789012345678\0" "9012345,1\n", 52)
            << "line 2, column 2: '45678901234567890123456789012345678\\09...' holds a NUL byte (\\0); a CSV file is text, and this one holds binary data.";
    }
    void csv_text_faults() {
        QFETCH(QByteArray, text);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = write_file(dir.path().toStdString() + "/t.csv", text.toStdString());
        const QString message = QString::fromStdString(error_of([&] { load_dataset(spec_of("csv", path), 1); }));
        const QString p = QString::fromStdString(path);
        QVERIFY2(message == p + " " + expected || message == "The CSV file " + p + " " + expected, qPrintable(message));
        QVERIFY2(!message.contains(QChar(0)), "a NUL in the message");
    }

    void csv_signed_numbers_stay_valid() {
        QTemporaryDir dir;
        const std::string path = write_file(dir.path().toStdString() + "/s.csv", "+7,0\n-7,1\n7e3,0\n+7e-1,1\n\"+2\",0\n");
        const Dataset d = load_dataset(spec_of("csv", path), 1);
        QCOMPARE(d.train.x, (std::vector<float>{7.0f, -7.0f, 7000.0f, 0.7f, 2.0f}));
    }

    // ---- the shared text helpers

    void printable_text_escapes() {
        QCOMPARE(printable_text(std::string("a\0b", 3)), std::string("a\\0b"));
        QCOMPARE(printable_text("caf\xE9 \t\r\n\x7F\x01"), std::string("caf\\xE9 \\t\\r\\n\\x7F\\x01"));
        QCOMPARE(printable_text("ünïcode 日本 😀"), std::string("ünïcode 日本 😀"));
        QCOMPARE(printable_text("\xC3"), std::string("\\xC3"));            // cut short
        QCOMPARE(printable_text("\xED\xA0\x80"), std::string("\\xED\\xA0\\x80"));  // a surrogate
    }

    void read_user_file_refuses_by_size_before_reading() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/sparse";
        write_file(path, "");
        fs::resize_file(path, std::uint64_t{4} << 30);  // 4 GiB, none of it on disk
        QCOMPARE(error_of([&] { read_user_file(path, "The file", kExperimentFileLimit); }),
                 std::string("The file is 4294967296 bytes, larger than 16 MiB, the limit for an experiment file."));
    }
};

QTEST_GUILESS_MAIN(TestDataFaults)
#include "test_data_faults.moc"
