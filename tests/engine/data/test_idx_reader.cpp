// The IDX reader: tiny files written here, raw and gzipped, read back exactly; every kind of bad
// file refused with a message that names the file and the problem.
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "data/dataset.h"
#include "data/idx_reader.h"
#include "error.h"
#include "idx_files.h"
#include "data_test_util.h"
#include "exact_compare.h"
#include "huge_page_advice.h"

using namespace mantissa;
using mantissa::test::error_of;
using idx_files::Bytes;

namespace {

// The message of the mantissa::Error `f` throws, or "" when it throws none.
DatasetSpec idx_spec(const QString& folder) {
    DatasetSpec spec;
    spec.kind = "idx";
    spec.path = folder.toStdString();
    return spec;
}

}  // namespace

class TestIdxReader : public QObject {
    Q_OBJECT

private slots:
    void reads_images_and_labels_data() {
        QTest::addColumn<bool>("gz");
        QTest::newRow("raw") << false;
        QTest::newRow("gzip") << true;
    }
    void reads_images_and_labels() {
        QFETCH(bool, gz);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string folder = dir.path().toStdString();
        Bytes px{0, 255, 51, 102, 1, 254};  // one 2x3 image, then a second
        px.insert(px.end(), {10, 20, 30, 40, 50, 60});
        QVERIFY(idx_files::write(folder, "img", idx_files::images(2, 2, 3, px), gz));
        QVERIFY(idx_files::write(folder, "lab", idx_files::labels({7, 0}), gz));

        const std::string suffix = gz ? ".gz" : "";
        const data::IdxImages images = data::read_idx_images(folder + "/img" + suffix);
        QCOMPARE(images.count, std::int64_t{2});
        QCOMPARE(images.rows, 2);
        QCOMPARE(images.cols, 3);
        QCOMPARE(images.pixels.size(), std::size_t{12});
        for (std::size_t i = 0; i < px.size(); ++i) QCOMPARE(images.pixels[i], static_cast<float>(px[i]) / 255.0f);
        QCOMPARE(images.pixels[1], 1.0f);
        QCOMPARE_EXACT(images.pixels[0], 0.0f);

        const auto labels = data::read_idx_labels(folder + "/lab" + suffix, 10);
        QCOMPARE(labels, (std::vector<std::int32_t>{7, 0}));
    }

    // A dataset's values are written once into one large buffer: the reader asks the kernel for
    // huge pages before the first write (engine/huge_pages.h), which /proc/self/smaps shows as the
    // mapping's "hg" flag.
    void large_images_ask_for_huge_pages() {
        if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage"))
            QSKIP("This kernel has no transparent huge pages.");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string folder = dir.path().toStdString();
        const Bytes px(std::size_t{2000} * 28 * 28, 7);  // 6 MB of FP32 once read
        QVERIFY(idx_files::write(folder, "img", idx_files::images(2000, 28, 28, px), false));
        const data::IdxImages images = data::read_idx_images(folder + "/img");
        QCOMPARE(images.pixels.size(), px.size());
        QCOMPARE(images.pixels.back(), 7.0f / 255.0f);

        const void* inside = test::first_huge_page_in(images.pixels.data());
        QVERIFY(static_cast<const char*>(inside) + (2 << 20) <=
                reinterpret_cast<const char*>(images.pixels.data() + images.pixels.size()));
        QString flags;
        QVERIFY2(test::huge_page_advice_at(inside, &flags), qPrintable("VmFlags: " + flags));
    }

    void reads_a_folder_data() {
        QTest::addColumn<bool>("gz");
        QTest::newRow("raw") << false;
        QTest::newRow("gzip") << true;
    }
    void reads_a_folder() {
        QFETCH(bool, gz);
        QTemporaryDir dir;
        QVERIFY(idx_files::write_folder(dir.path().toStdString(), gz, 4, 5));
        DatasetSpec spec = idx_spec(dir.path());
        spec.normalize = false;
        const Dataset data = load_dataset(spec, 1);
        QCOMPARE(data.name, std::string("idx"));
        QCOMPARE(data.features, 20);
        QVERIFY(data.shape == (SampleShape{1, 4, 5}));  // 4 rows of 5: one grey channel
        QCOMPARE(data.classes, 10);
        QCOMPARE(data.outputs, 10);
        QCOMPARE(data.train.rows, std::int64_t{5});
        QCOMPARE(data.test.rows, std::int64_t{3});
        QCOMPARE(data.train.x.size(), std::size_t{100});
        QCOMPARE(data.test.x.size(), std::size_t{60});
        QCOMPARE(data.train.y, (std::vector<std::int32_t>{0, 1, 2, 9, 4}));
        QCOMPARE(data.test.y, (std::vector<std::int32_t>{3, 1, 5}));
        // Image 2, pixel 3 holds (2 * 7 + 3) % 256 = 17.
        QCOMPARE(data.train.x[2 * 20 + 3], 17.0f / 255.0f);
        QVERIFY(data.train.targets.empty());
        QVERIFY(data.notices.empty());
    }

    void prefers_the_raw_file_and_finds_gz() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(data::find_idx_file(folder, "a").empty());
        QVERIFY(idx_files::write(folder, "a", idx_files::labels({1}), true));
        QCOMPARE(data::find_idx_file(folder, "a"), folder + "/a.gz");
        QVERIFY(idx_files::write(folder, "a", idx_files::labels({1}), false));
        QCOMPARE(data::find_idx_file(folder, "a"), folder + "/a");
        QCOMPARE(data::missing_idx_files(folder).size(), std::size_t{4});
    }

    // One bad file among a valid folder's four: its name, gzip or not, its bytes, and words the
    // message must hold.
    void bad_files_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("gz");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QStringList>("words");
        auto qb = [](const Bytes& b) {
            return QByteArray(reinterpret_cast<const char*>(b.data()), static_cast<int>(b.size()));
        };
        const QString img = "train-images-idx3-ubyte";
        const QString lab = "train-labels-idx1-ubyte";
        const Bytes good_px(2 * 2 * 3, 9);
        for (bool gz : {false, true}) {
            const char* tag = gz ? " (gz)" : " (raw)";
            auto row = [&](const char* name) -> QTestData& { return QTest::newRow((std::string(name) + tag).c_str()); };
            row("wrong magic: labels in the images file")
                << img << gz << qb(idx_files::labels({1, 2}))
                << QStringList{"magic number", "0x00000801", "0x00000803", img};
            row("wrong magic: float type") << img << gz << qb(idx_files::images(2, 2, 3, good_px, 0x00000D03))
                                           << QStringList{"magic number", "0x00000D03"};
            row("wrong magic: not an IDX file")
                << lab << gz << qb(Bytes{'h', 'e', 'l', 'l', 'o', '\n'}) << QStringList{"magic number", lab};
            row("truncated header") << img << gz << qb(Bytes{0, 0, 8, 3, 0, 0})
                                    << QStringList{"truncated", "header declares 3 dimensions", img};
            row("truncated magic") << img << gz << qb(Bytes{0, 0}) << QStringList{"truncated", "ends after 2 bytes"};
            row("truncated pixels") << img << gz << qb(idx_files::images(5, 2, 3, Bytes(29, 1)))
                                    << QStringList{"truncated", "declares 46 bytes in all, but 45 bytes were found",
                                                   img};
            row("truncated labels") << lab << gz << qb(idx_files::labels({1, 2, 3}, 0x00000801, 5))
                                    << QStringList{"truncated", "declares 13 bytes in all, but 11 bytes were found",
                                                   lab};
            row("dims mismatch: data longer than declared")
                << img << gz << qb(idx_files::images(5, 2, 3, Bytes(31, 1)))
                << QStringList{"longer than its header declares", "46 bytes", img};
            row("absurd size: 2^32 images")
                << img << gz << qb(idx_files::images(0xFFFFFFFFu, 28, 28, Bytes(16, 0)))
                << QStringList{"absurd size", "4294967295 x 28 x 28", "refused before reading"};
            row("absurd size: product overflows 64 bits")
                << img << gz << qb(idx_files::images(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, Bytes(16, 0)))
                << QStringList{"absurd size"};
            row("absurd size: labels") << lab << gz << qb(idx_files::labels({1}, 0x00000801, 0x80000000u))
                                       << QStringList{"absurd size", "2147483648"};
            row("zero dimension") << img << gz << qb(idx_files::images(5, 0, 3, Bytes{}))
                                  << QStringList{"dimension 2 as 0"};
            row("label out of range") << lab << gz << qb(idx_files::labels({0, 1, 10, 3, 4}))
                                      << QStringList{"label 10 at index 2", "out of range", "0..9", lab};
            row("count mismatch") << lab << gz << qb(idx_files::labels({0, 1, 2, 3}))
                                  << QStringList{"declares 4 labels", "declares 5 images", lab};
            row("image size differs between train and test")
                << "t10k-images-idx3-ubyte" << gz << qb(idx_files::pattern_images(3, 3, 3))
                << QStringList{"holds 3x3 images", "training images are 2x3"};
        }
    }
    void bad_files() {
        QFETCH(QString, file);
        QFETCH(bool, gz);
        QFETCH(QByteArray, bytes);
        QFETCH(QStringList, words);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        // A valid raw folder, whose file `file` is then replaced (the raw one is removed so that
        // a gzipped bad file is the one found).
        QVERIFY(idx_files::write_folder(folder, false));
        std::filesystem::remove(folder + "/" + file.toStdString());
        const Bytes b(bytes.begin(), bytes.end());
        QVERIFY(idx_files::write(folder, file.toStdString(), b, gz));

        const std::string message = error_of([&] { load_dataset(idx_spec(dir.path()), 1); });
        QVERIFY2(!message.empty(), "no error was thrown");
        for (const QString& w : words)
            QVERIFY2(message.find(w.toStdString()) != std::string::npos,
                     qPrintable("'" + w + "' not in: " + QString::fromStdString(message)));
        QVERIFY2(message.find(file.toStdString()) != std::string::npos, message.c_str());
    }

    void truncated_gzip_stream() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        // A gzip stream cut in half: zlib delivers what it can, the reader reports the shortfall.
        Bytes px(5 * 40 * 40);
        for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(i * 131 % 251);
        const std::string path = folder + "/train-images-idx3-ubyte.gz";
        QVERIFY(idx_files::write_gz(path, idx_files::images(5, 40, 40, px)));
        const auto size = std::filesystem::file_size(path);
        std::filesystem::resize_file(path, size / 2);
        const std::string message = error_of([&] { data::read_idx_images(path); });
        QVERIFY2(message.find("truncated") != std::string::npos, message.c_str());
        QVERIFY2(message.find("declares 8016 bytes in all") != std::string::npos, message.c_str());
        QVERIFY2(message.find("gzip stream ends early") != std::string::npos, message.c_str());
        QVERIFY2(message.find(path) != std::string::npos, message.c_str());
    }

    void corrupt_gzip_stream() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/x.gz";
        QVERIFY(idx_files::write_gz(path, idx_files::pattern_images(5, 10, 10)));
        // Overwrite the deflate data after the 10-byte gzip header with garbage.
        std::FILE* f = std::fopen(path.c_str(), "r+b");
        QVERIFY(f);
        std::fseek(f, 10, SEEK_SET);
        const unsigned char junk[16] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
        std::fwrite(junk, 1, sizeof junk, f);
        std::fclose(f);
        const std::string message = error_of([&] { data::read_idx_images(path); });
        QCOMPARE(message, "The IDX file " + path + " is damaged: its gzip data is corrupt at byte 10 (invalid block type).");
    }

    // A device or a pipe is never read (a device could be read without end).
    void not_a_regular_file() {
        QCOMPARE(error_of([&] { data::read_idx_images("/dev/zero"); }),
                 std::string("The IDX file /dev/zero is a device, not a file."));
        QCOMPARE(error_of([&] { data::read_idx_labels("/dev/urandom", 10); }),
                 std::string("The IDX file /dev/urandom is a device, not a file."));
        QTemporaryDir dir;
        const std::string fifo = dir.path().toStdString() + "/train-images-idx3-ubyte";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(error_of([&] { data::read_idx_images(fifo); }),
                 "The IDX file " + fifo + " is a FIFO (a named pipe), not a file.");
    }

    void idx_path_that_is_a_file() {
        QCOMPARE(error_of([&] { load_dataset(idx_spec("/etc/passwd"), 1); }),
                 std::string("dataset.path /etc/passwd is a file, not a folder; kind 'idx' reads a folder holding the "
                             "four IDX files."));
    }

    void missing_file_and_folder() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        std::filesystem::remove(folder + "/t10k-labels-idx1-ubyte.gz");
        std::string message = error_of([&] { load_dataset(idx_spec(dir.path()), 1); });
        QVERIFY2(message.find("lacks t10k-labels-idx1-ubyte") != std::string::npos, message.c_str());
        QVERIFY2(message.find(folder) != std::string::npos, message.c_str());

        const QString gone = dir.path() + "/no-such-folder";
        message = error_of([&] { load_dataset(idx_spec(gone), 1); });
        QVERIFY2(message.find("does not exist") != std::string::npos, message.c_str());
        QVERIFY2(message.find(gone.toStdString()) != std::string::npos, message.c_str());

        message = error_of([&] { data::read_idx_labels(folder + "/nothing.gz", 10); });
        QVERIFY2(message.find("does not exist") != std::string::npos, message.c_str());
        QVERIFY2(message.find("nothing.gz") != std::string::npos, message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestIdxReader)
#include "test_idx_reader.moc"
