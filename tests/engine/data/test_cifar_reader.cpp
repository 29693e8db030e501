// The CIFAR-10 reader: tiny batch files written here (20 records each) read back exactly (labels,
// file order, channel order, the pixel at (c, y, x)); normalisation per colour channel; every kind
// of bad file or folder refused with one sentence that names it (a size that is not whole records,
// a label above 9, a missing file, the wrong kind of thing where a file or the folder should be).
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "cifar_files.h"
#include "data/cifar_reader.h"
#include "data/dataset.h"
#include "data/memory_budget.h"
#include "data_test_util.h"
#include "error.h"
#include "exact_compare.h"

using namespace mantissa;
using mantissa::test::error_of;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSource =
    "the \"CIFAR-10 binary version\" (cifar-10-binary.tar.gz) from its authors, "
    "https://www.cs.toronto.edu/~kriz/cifar.html";
constexpr const char* kFiles = "data_batch_1.bin to data_batch_5.bin and test_batch.bin";

DatasetSpec cifar_spec(const std::string& folder, bool normalize = false) {
    DatasetSpec spec;
    spec.kind = "cifar10";
    spec.path = folder;
    spec.normalize = normalize;
    return spec;
}

std::size_t at(int row, int c, int y, int x) {
    return static_cast<std::size_t>(row) * 3072 + static_cast<std::size_t>(c * 1024 + y * 32 + x);
}

float value(int f, int r, int c, int y, int x) {
    return static_cast<float>(cifar_files::pixel(f, r, c, y, x)) / 255.0f;
}

}  // namespace

class TestCifarReader : public QObject {
    Q_OBJECT

private slots:
    // ---- reading

    void reads_a_batch_exactly() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/data_batch_3.bin";
        QVERIFY(cifar_files::write(path, cifar_files::batch(2, 20)));
        const data::CifarBatch batch = data::read_cifar_batch(path);
        QCOMPARE(batch.count, std::int64_t{20});
        QCOMPARE(batch.labels.size(), std::size_t{20});
        QCOMPARE(batch.pixels.size(), std::size_t{20 * 3072});
        for (int r = 0; r < 20; ++r)
            QCOMPARE(batch.labels[static_cast<std::size_t>(r)], std::int32_t{cifar_files::label(2, r)});
        // Every pixel, in the order the file holds them: red plane, green, blue, each row-major.
        for (int r = 0; r < 20; ++r)
            for (int c = 0; c < 3; ++c)
                for (int y = 0; y < 32; ++y)
                    for (int x = 0; x < 32; ++x)
                        if (batch.pixels[at(r, c, y, x)] != value(2, r, c, y, x))
                            QFAIL(qPrintable(QString("pixel (%1, %2, %3, %4) differs").arg(r).arg(c).arg(y).arg(x)));
        // A few by hand: record 0 of file 2 is (106 + 101 c + 7 y + 3 x) % 256.
        QCOMPARE(batch.pixels[at(0, 0, 0, 0)], 106.0f / 255.0f);
        QCOMPARE(batch.pixels[at(0, 1, 0, 0)], 207.0f / 255.0f);                            // green starts at 1024
        QCOMPARE(batch.pixels[at(0, 2, 1, 2)], float((106 + 202 + 7 + 6) % 256) / 255.0f);  // blue, row 1, col 2
        QCOMPARE(batch.pixels[at(19, 2, 31, 31)], value(2, 19, 2, 31, 31));                 // the file's last byte
    }

    void reads_extreme_bytes() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/b.bin";
        cifar_files::Bytes b(cifar_files::kRecord, 255);
        b[0] = 9;
        b[1] = 0;
        QVERIFY(cifar_files::write(path, b));
        const data::CifarBatch batch = data::read_cifar_batch(path);
        QCOMPARE(batch.labels, (std::vector<std::int32_t>{9}));
        QCOMPARE_EXACT(batch.pixels[0], 0.0f);
        QCOMPARE(batch.pixels[1], 1.0f);
        QCOMPARE(batch.pixels[3071], 1.0f);
    }

    void reads_a_folder() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 20));
        const Dataset data = load_dataset(cifar_spec(folder), 1);
        QCOMPARE(data.name, std::string("cifar10"));
        QCOMPARE(data.features, 3072);
        QVERIFY(data.shape == (SampleShape{3, 32, 32}));
        QCOMPARE(data.shape.numel(), std::int64_t{data.features});
        QCOMPARE(data.shape.text(), std::string("3\u00d732\u00d732"));
        QCOMPARE(data.classes, 10);
        QCOMPARE(data.outputs, 10);
        QVERIFY(!data.is_regression());
        QCOMPARE(data.train.rows, std::int64_t{100});
        QCOMPARE(data.test.rows, std::int64_t{20});
        QCOMPARE(data.train.x.size(), std::size_t{100 * 3072});
        QCOMPARE(data.test.x.size(), std::size_t{20 * 3072});
        QVERIFY(data.train.targets.empty());
        QVERIFY(data.notices.empty());
        // The training split is the five data batches in order; the test split the test batch.
        for (int row = 0; row < 100; ++row)
            QCOMPARE(data.train.y[static_cast<std::size_t>(row)], std::int32_t{cifar_files::label(row / 20, row % 20)});
        for (int r = 0; r < 20; ++r)
            QCOMPARE(data.test.y[static_cast<std::size_t>(r)], std::int32_t{cifar_files::label(5, r)});
        QCOMPARE(data.train.x[at(45, 2, 31, 0)], value(2, 5, 2, 31, 0));  // file 3, record 5
        QCOMPARE(data.train.x[at(99, 1, 16, 17)], value(4, 19, 1, 16, 17));
        QCOMPARE(data.test.x[at(7, 0, 3, 30)], value(5, 7, 0, 3, 30));
    }

    // Each colour channel to mean 0 and std 1 over the training split, with the training split's
    // statistics applied to the test split.
    void normalises_per_channel() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 20));
        const Dataset raw = load_dataset(cifar_spec(folder, false), 1);
        const Dataset data = load_dataset(cifar_spec(folder, true), 1);
        for (int c = 0; c < 3; ++c) {
            const double n = 100 * 1024;
            double sum = 0, sq = 0;
            for (int row = 0; row < 100; ++row)
                for (int k = 0; k < 1024; ++k) sum += raw.train.x[static_cast<std::size_t>(row * 3072 + c * 1024 + k)];
            const double mean = sum / n;
            for (int row = 0; row < 100; ++row)
                for (int k = 0; k < 1024; ++k) {
                    const double d = raw.train.x[static_cast<std::size_t>(row * 3072 + c * 1024 + k)] - mean;
                    sq += d * d;
                }
            const double std = std::sqrt(sq / n);
            QVERIFY(std > 0.1);
            // The normalised channel: mean 0, std 1 over the training split.
            double nsum = 0, nsq = 0;
            for (int row = 0; row < 100; ++row)
                for (int k = 0; k < 1024; ++k) {
                    const double v = data.train.x[static_cast<std::size_t>(row * 3072 + c * 1024 + k)];
                    nsum += v;
                    nsq += v * v;
                }
            QVERIFY(std::abs(nsum / n) < 1e-5);
            QVERIFY(std::abs(std::sqrt(nsq / n) - 1.0) < 1e-5);
            // A test pixel, by the training split's statistics.
            const std::size_t i = at(3, c, 10, 20);
            QVERIFY(std::abs(data.test.x[i] - (raw.test.x[i] - mean) / std) < 1e-5);
        }
        QCOMPARE(data.test.y, raw.test.y);
    }

    // A channel whose statistics differ from the others' keeps its own: one global mean would leave
    // a bright red channel off-centre.
    void channels_keep_their_own_statistics() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        for (std::size_t f = 0; f < 6; ++f) {
            cifar_files::Bytes b;
            for (int r = 0; r < 4; ++r) {
                b.push_back(static_cast<std::uint8_t>(r));
                for (int k = 0; k < 1024; ++k)
                    b.push_back(static_cast<std::uint8_t>(200 + (k + r) % 50));  // red: bright
                for (int k = 0; k < 1024; ++k)
                    b.push_back(static_cast<std::uint8_t>((k * 7 + r) % 256));              // green: spread
                for (int k = 0; k < 1024; ++k) b.push_back(static_cast<std::uint8_t>(10));  // blue: constant
            }
            QVERIFY(cifar_files::write(folder + "/" + cifar_files::kNames[f], b));
        }
        const Dataset data = load_dataset(cifar_spec(folder, true), 1);
        for (int c = 0; c < 2; ++c) {
            double sum = 0;
            for (int row = 0; row < 20; ++row)
                for (int k = 0; k < 1024; ++k) sum += data.train.x[static_cast<std::size_t>(row * 3072 + c * 1024 + k)];
            QVERIFY2(std::abs(sum / (20 * 1024)) < 1e-5, qPrintable(QString("channel %1").arg(c)));
        }
        // A constant channel is only centred (its std is taken as 1): every value 0.
        for (int row = 0; row < 20; ++row) QCOMPARE_EXACT(data.train.x[at(row, 2, 5, 5)], 0.0f);
    }

    void missing_cifar_files_lists_them_in_order() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QCOMPARE(data::missing_cifar_files(folder).size(), std::size_t{6});
        QVERIFY(cifar_files::write_folder(folder, 1));
        QVERIFY(data::missing_cifar_files(folder).empty());
        fs::remove(folder + "/data_batch_2.bin");
        fs::remove(folder + "/test_batch.bin");
        QCOMPARE(data::missing_cifar_files(folder), (std::vector<std::string>{"data_batch_2.bin", "test_batch.bin"}));
    }

    // ---- files that are not whole records, or hold a label above 9

    void bad_files_data() {
        QTest::addColumn<QString>("file");      // the one file of the folder that is bad
        QTest::addColumn<int>("size");          // cut or padded to this size (-1: as built)
        QTest::addColumn<int>("label_record");  // this record's label set to `label` (-1: none)
        QTest::addColumn<int>("label");
        QTest::addColumn<QString>("message");  // after "The CIFAR-10 file <path> "
        const int whole = 20 * 3073;
        QTest::newRow("truncated in a record")
            << "data_batch_2.bin" << whole - 100 << -1 << 0
            << "is 61360 bytes, not a whole number of 3073-byte records (1 label byte, then 3072 pixel bytes): 19 "
               "records and 2973 bytes more; it is cut short, or not a file of the CIFAR-10 binary version.";
        QTest::newRow("truncated to its first label")
            << "data_batch_1.bin" << 1 << -1 << 0
            << "is 1 bytes, not a whole number of 3073-byte records (1 label byte, then 3072 pixel bytes): 0 records "
               "and 1 byte more; it is cut short, or not a file of the CIFAR-10 binary version.";
        QTest::newRow("one byte too long")
            << "test_batch.bin" << whole + 1 << -1 << 0
            << "is 61461 bytes, not a whole number of 3073-byte records (1 label byte, then 3072 pixel bytes): 20 "
               "records and 1 byte more; it is cut short, or not a file of the CIFAR-10 binary version.";
        QTest::newRow("one record and some")
            << "data_batch_5.bin" << 3073 + 3000 << -1 << 0
            << "is 6073 bytes, not a whole number of 3073-byte records (1 label byte, then 3072 pixel bytes): 1 record "
               "and 3000 bytes more; it is cut short, or not a file of the CIFAR-10 binary version.";
        QTest::newRow("empty")
            << "data_batch_4.bin" << 0 << -1 << 0
            << "is empty; a batch file holds records of 3073 bytes (1 label byte, then 3072 pixel bytes).";
        QTest::newRow("label 10")
            << "data_batch_4.bin" << -1 << 7 << 10
            << "holds label 10 in record 7 (counting from 0, at byte 21511), out of range: labels must be 0..9.";
        QTest::newRow("label 255 in the last record")
            << "test_batch.bin" << -1 << 19 << 255
            << "holds label 255 in record 19 (counting from 0, at byte 58387), out of range: labels must be 0..9.";
        QTest::newRow("label 10 in the first record")
            << "data_batch_1.bin" << -1 << 0 << 10
            << "holds label 10 in record 0 (counting from 0, at byte 0), out of range: labels must be 0..9.";
    }
    void bad_files() {
        QFETCH(QString, file);
        QFETCH(int, size);
        QFETCH(int, label_record);
        QFETCH(int, label);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 20));
        const std::string path = folder + "/" + file.toStdString();
        cifar_files::Bytes b = cifar_files::batch(0, 20);
        if (size >= 0) b.resize(static_cast<std::size_t>(size), 0);
        if (label_record >= 0)
            b[static_cast<std::size_t>(label_record) * cifar_files::kRecord] = static_cast<std::uint8_t>(label);
        QVERIFY(cifar_files::write(path, b));
        const QString expected = "The CIFAR-10 file " + QString::fromStdString(path) + " " + message;
        QCOMPARE(QString::fromStdString(error_of([&] { load_dataset(cifar_spec(folder), 1); })), expected);
        QCOMPARE(QString::fromStdString(error_of([&] { data::read_cifar_batch(path); })), expected);
    }

    // ---- missing folder and files: no fallback, a sentence that says where to get them

    void missing_folder() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString() + "/absent";
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(folder), 1); }),
                 "The CIFAR-10 folder " + folder + " does not exist (dataset.path); download " + kSource +
                     ", unpack it, and set dataset.path to the folder cifar-10-batches-bin it holds.");
    }

    void missing_file_data() {
        QTest::addColumn<QString>("missing");
        for (const char* name : cifar_files::kNames) QTest::newRow(name) << name;
    }
    void missing_file() {
        QFETCH(QString, missing);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 2));
        fs::remove(folder + "/" + missing.toStdString());
        QCOMPARE(QString::fromStdString(error_of([&] { load_dataset(cifar_spec(folder), 1); })),
                 QString::fromStdString("The CIFAR-10 folder " + folder + " lacks " + missing.toStdString() +
                                        "; it needs " + kFiles + ", the files of " + kSource + "."));
    }

    // Only the raw .bin files are read: a gzipped one is not taken for it.
    void gzipped_file_is_not_read() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 2));
        fs::rename(folder + "/data_batch_1.bin", folder + "/data_batch_1.bin.gz");
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(folder), 1); }),
                 "The CIFAR-10 folder " + folder + " lacks data_batch_1.bin; it needs " + kFiles + ", the files of " +
                     kSource + ".");
    }

    // The folder above the files, and the Python version, are named as what they are.
    void hints_for_the_wrong_folder() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(fs::create_directory(folder + "/cifar-10-batches-bin"));
        QCOMPARE(
            error_of([&] { load_dataset(cifar_spec(folder), 1); }),
            "The CIFAR-10 folder " + folder +
                " lacks data_batch_1.bin; it holds a folder cifar-10-batches-bin: set dataset.path to that folder; "
                "it needs " +
                kFiles + ", the files of " + kSource + ".");
        QTemporaryDir py;
        const std::string python = py.path().toStdString();
        QVERIFY(cifar_files::write(python + "/data_batch_1", {1, 2, 3}));
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(python), 1); }),
                 "The CIFAR-10 folder " + python +
                     " lacks data_batch_1.bin; it seems to hold the Python version (data_batch_1 without .bin), which "
                     "Mantissa does not read; it needs " +
                     kFiles + ", the files of " + kSource + ".");
    }

    // With dataset.path left at its default (or empty), kind cifar10 reads /usr/share/datasets/cifar10.
    void default_folder() {
        if (fs::exists("/usr/share/datasets/cifar10")) QSKIP("/usr/share/datasets/cifar10 exists on this machine");
        for (const std::string& path : {DatasetSpec{}.path, std::string()}) {
            DatasetSpec spec = cifar_spec(path);
            QCOMPARE(error_of([&] { load_dataset(spec, 1); }),
                     "The CIFAR-10 folder /usr/share/datasets/cifar10 does not exist (dataset.path); download " +
                         std::string(kSource) +
                         ", unpack it, and set dataset.path to the folder cifar-10-batches-bin it holds.");
        }
    }

    // ---- the wrong kind of thing where a file or the folder should be (never "missing", never blocking)

    void wrong_kind_of_file_data() {
        QTest::addColumn<QString>("make");
        QTest::addColumn<QString>("expected");
        QTest::newRow("fifo") << "fifo"
                              << "is a FIFO (a named pipe), not a file.";
        QTest::newRow("folder") << "folder"
                                << "is a folder, not a file.";
        QTest::newRow("device") << "device"
                                << "is a device, not a file.";
        QTest::newRow("loop") << "loop"
                              << "is a symbolic link that loops (too many levels of symbolic links), not a file.";
        QTest::newRow("dangling") << "dangling"
                                  << "is a symbolic link to nowhere-at-all, which does not exist.";
    }
    void wrong_kind_of_file() {
        QFETCH(QString, make);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(cifar_files::write_folder(folder, 2));
        const std::string path = folder + "/data_batch_3.bin";
        fs::remove(path);
        if (make == "fifo") QCOMPARE(::mkfifo(path.c_str(), 0600), 0);
        if (make == "folder") QVERIFY(fs::create_directory(path));
        if (make == "device") fs::create_symlink("/dev/zero", path);
        if (make == "loop") fs::create_symlink(path, path);
        if (make == "dangling") fs::create_symlink("nowhere-at-all", path);
        QCOMPARE(QString::fromStdString(error_of([&] { load_dataset(cifar_spec(folder), 1); })),
                 "The CIFAR-10 file " + QString::fromStdString(path) + " " + expected);
        QCOMPARE(QString::fromStdString(error_of([&] { data::read_cifar_batch(path); })),
                 "The CIFAR-10 file " + QString::fromStdString(path) + " " + expected);
    }

    void wrong_kind_of_folder() {
        QTemporaryDir dir;
        const std::string holding =
            "' reads a folder holding the six files of the CIFAR-10 binary version (" + std::string(kFiles) + ").";
        const std::string fifo = dir.path().toStdString() + "/fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(fifo), 1); }),
                 "dataset.path " + fifo + " is a FIFO (a named pipe), not a folder; kind 'cifar10" + holding);
        const std::string file = dir.path().toStdString() + "/data_batch_1.bin";
        QVERIFY(cifar_files::write(file, cifar_files::batch(0, 1)));
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(file), 1); }),
                 "dataset.path " + file + " is a file, not a folder; kind 'cifar10" + holding);
        QCOMPARE(error_of([&] { load_dataset(cifar_spec("/dev/null"), 1); }),
                 "dataset.path /dev/null is a device, not a folder; kind 'cifar10" + holding);
        const std::string loop = dir.path().toStdString() + "/loop";
        fs::create_symlink(loop, loop);
        QCOMPARE(error_of([&] { load_dataset(cifar_spec(loop), 1); }),
                 "dataset.path " + loop + " is a symbolic link that loops (too many levels of symbolic links).");
    }

    // ---- memory

    // A file whose records would take more memory than this process may use is refused by its size,
    // before anything is allocated or read (a sparse file: instant, no disk used).
    void memory_beyond_the_budget_is_refused_before_reading() {
        const data::MemoryBudget budget = data::memory_budget();
        QVERIFY(budget.bytes > 0);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/huge.bin";
        QVERIFY(cifar_files::write(path, {}));
        const std::uint64_t records = budget.bytes / (3072 * 4 + 4) + 1;
        std::error_code ec;
        fs::resize_file(path, records * cifar_files::kRecord, ec);
        if (ec) QSKIP(qPrintable("cannot make a sparse file here: " + QString::fromStdString(ec.message())));
        const std::uint64_t needed = records * (3072 * 4 + 4);
        QCOMPARE(error_of([&] { data::read_cifar_batch(path); }),
                 "The CIFAR-10 file " + path + " needs about " + data::memory_text(needed) + " of memory, more than " +
                     budget.says + "; it was refused before reading.");
    }
};

QTEST_GUILESS_MAIN(TestCifarReader)
#include "test_cifar_reader.moc"
