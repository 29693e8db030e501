// load_dataset as the trainer sees it: split sizes, normalisation (per feature, and global for
// images), the Fashion-MNIST / MNIST folders and their fallback to spirals, and the real
// Fashion-MNIST when the Debian package is installed.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "data/dataset.h"
#include "data/table.h"
#include "error.h"
#include "idx_files.h"
#include "data_test_util.h"
#include "exact_compare.h"

using namespace mantissa;
using mantissa::test::error_of;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

struct Stats {
    double mean = 0, std = 0;
};

// Mean and population std of feature `c` (or of every value when c < 0) of a split.
Stats stats(const Split& s, int features, int c) {
    double sum = 0, sq = 0;
    std::int64_t n = 0;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (c >= 0 && static_cast<int>(i % static_cast<std::size_t>(features)) != c) continue;
        sum += s.x[i];
        ++n;
    }
    const double mean = sum / static_cast<double>(n);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (c >= 0 && static_cast<int>(i % static_cast<std::size_t>(features)) != c) continue;
        sq += (s.x[i] - mean) * (s.x[i] - mean);
    }
    return {mean, std::sqrt(sq / static_cast<double>(n))};
}

}  // namespace

class TestDataset : public QObject {
    Q_OBJECT

private slots:
    void split_sizes_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<double>("fraction");
        QTest::addColumn<int>("test_rows");
        QTest::newRow("100 at 0.2") << 100 << 0.2 << 20;
        QTest::newRow("2000 at 0.2 (the default)") << 2000 << 0.2 << 400;
        QTest::newRow("10 at 0.25 rounds up") << 10 << 0.25 << 3;
        QTest::newRow("7 at 0") << 7 << 0.0 << 0;
        QTest::newRow("5 at 0.99 keeps one training row") << 5 << 0.99 << 4;
        QTest::newRow("2 at 0.5") << 2 << 0.5 << 1;
    }
    void split_sizes() {
        QFETCH(int, rows);
        QFETCH(double, fraction);
        QFETCH(int, test_rows);
        QCOMPARE(data::test_rows_for(rows, fraction), std::int64_t{test_rows});
        DatasetSpec spec;
        spec.kind = "sine";
        spec.samples = rows;
        spec.test_fraction = fraction;
        const Dataset d = load_dataset(spec, 1);
        QCOMPARE(d.test.rows, std::int64_t{test_rows});
        QCOMPARE(d.train.rows, std::int64_t{rows - test_rows});
        QCOMPARE(d.test.targets.size(), static_cast<std::size_t>(test_rows));
    }

    void split_depends_on_the_seed() {
        DatasetSpec spec;
        spec.kind = "sine";
        spec.samples = 200;
        spec.normalize = false;
        const Dataset a = load_dataset(spec, 1), b = load_dataset(spec, 1), c = load_dataset(spec, 2);
        QCOMPARE(a.test.x, b.test.x);
        QVERIFY(a.test.x != c.test.x);
    }

    void normalises_per_feature_with_training_statistics() {
        DatasetSpec spec;
        spec.kind = "blobs";
        spec.samples = 1000;
        spec.classes = 4;
        spec.noise = 0.3;
        const Dataset d = load_dataset(spec, 8);
        spec.normalize = false;
        const Dataset raw = load_dataset(spec, 8);
        QCOMPARE(d.train.y, raw.train.y);
        for (int c = 0; c < d.features; ++c) {
            const Stats s = stats(d.train, d.features, c);
            QVERIFY2(std::abs(s.mean) < 1e-5, qPrintable(QString::number(s.mean)));
            QVERIFY2(std::abs(s.std - 1.0) < 1e-4, qPrintable(QString::number(s.std)));
            // The test split is moved by the training split's statistics, not its own.
            const Stats r = stats(raw.train, raw.features, c);
            for (std::size_t i = static_cast<std::size_t>(c); i < d.test.x.size(); i += 2) {
                const double expected = (raw.test.x[i] - r.mean) / r.std;
                QVERIFY(std::abs(d.test.x[i] - expected) < 1e-4);
            }
        }
    }

    void constant_feature_keeps_unit_std() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/c.csv";
        std::ofstream out(path);
        for (int i = 0; i < 20; ++i) out << "0.1," << i << "," << i % 2 << "\n";
        out.close();
        DatasetSpec spec;
        spec.kind = "csv";
        spec.path = path;
        const Dataset d = load_dataset(spec, 1);
        for (const Split* s : {&d.train, &d.test})
            for (std::size_t i = 0; i < s->x.size(); i += 2) QCOMPARE_EXACT(s->x[i], 0.0f);
        const Stats varying = stats(d.train, 2, 1);
        QVERIFY(std::abs(varying.std - 1.0) < 1e-4);
    }

    void images_normalise_with_one_global_mean_and_std() {
        QTemporaryDir dir;
        QVERIFY(idx_files::write_folder(dir.path().toStdString(), true, 4, 4));
        DatasetSpec spec;
        spec.kind = "idx";
        spec.path = dir.path().toStdString();
        const Dataset d = load_dataset(spec, 1);
        spec.normalize = false;
        const Dataset raw = load_dataset(spec, 1);
        const Stats all = stats(d.train, d.features, -1);
        QVERIFY(std::abs(all.mean) < 1e-5);
        QVERIFY(std::abs(all.std - 1.0) < 1e-4);
        // One affine map for every pixel (a per-feature one would differ between pixels).
        const Stats r = stats(raw.train, raw.features, -1);
        for (const auto& [s, rs] : {std::pair{&d.train, &raw.train}, std::pair{&d.test, &raw.test}})
            for (std::size_t i = 0; i < s->x.size(); ++i)
                QVERIFY(std::abs(s->x[i] - (rs->x[i] - r.mean) / r.std) < 1e-4);
        QVERIFY(std::abs(stats(d.train, d.features, 0).mean) > 0.1);  // not centred per pixel
    }

    // Every kind says how a row is laid out, and the shape always holds exactly its features.
    void every_kind_states_its_sample_shape_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("channels");
        QTest::addColumn<int>("height");
        QTest::addColumn<int>("width");
        QTest::newRow("idx 28x28") << "idx" << 1 << 28 << 28;
        QTest::newRow("mnist 28x28") << "mnist" << 1 << 28 << 28;
        QTest::newRow("fashion-mnist, fallen back to spirals") << "fashion-mnist (absent)" << 2 << 1 << 1;
        QTest::newRow("spirals") << "spirals" << 2 << 1 << 1;
        QTest::newRow("blobs") << "blobs" << 2 << 1 << 1;
        QTest::newRow("sine") << "sine" << 1 << 1 << 1;
        QTest::newRow("csv") << "csv" << 3 << 1 << 1;
    }
    void every_kind_states_its_sample_shape() {
        QFETCH(QString, kind);
        QFETCH(int, channels);
        QFETCH(int, height);
        QFETCH(int, width);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        DatasetSpec spec;
        spec.kind = kind.section(' ', 0, 0).toStdString();
        spec.path = folder;
        if (kind == "fashion-mnist (absent)") spec.path = folder + "/absent";
        if (spec.kind == "idx" || spec.kind == "mnist") QVERIFY(idx_files::write_folder(folder, true, 28, 28));
        if (spec.kind == "csv") {
            spec.path = folder + "/t.csv";
            std::ofstream(spec.path) << "1,2,3,0\n4,5,6,1\n7,8,9,0\n";
        }
        const Dataset d = load_dataset(spec, 1);
        QVERIFY2(d.shape == (SampleShape{channels, height, width}), d.shape.text().c_str());
        QCOMPARE(d.shape.numel(), std::int64_t{d.features});
    }

    void fashion_mnist_falls_back_to_spirals() {
        QTemporaryDir dir;
        DatasetSpec spec;  // kind fashion-mnist by default
        spec.path = dir.path().toStdString() + "/absent";
        const Dataset d = load_dataset(spec, 1);
        QCOMPARE(d.name, std::string("spirals"));
        QCOMPARE(d.features, 2);
        QCOMPARE(d.classes, spec.classes);
        QCOMPARE(d.train.rows + d.test.rows, spec.samples);
        QCOMPARE(d.notices.size(), std::size_t{1});
        const std::string& notice = d.notices[0];
        QVERIFY2(contains(notice, "Fashion-MNIST was not found at " + spec.path), notice.c_str());
        QVERIFY2(contains(notice, "spirals"), notice.c_str());
        QVERIFY2(contains(notice, "apt-get install dataset-fashion-mnist"), notice.c_str());
    }

    void partial_folder_falls_back_naming_the_missing_file() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, true));
        std::filesystem::remove(folder + "/t10k-images-idx3-ubyte.gz");
        DatasetSpec spec;
        spec.path = folder;
        const Dataset d = load_dataset(spec, 1);
        QCOMPARE(d.name, std::string("spirals"));
        QVERIFY2(contains(d.notices.at(0), "t10k-images-idx3-ubyte"), d.notices[0].c_str());
    }

    void corrupt_fashion_mnist_is_an_error_not_a_fallback() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(idx_files::write_folder(folder, false));
        QVERIFY(idx_files::write_raw(folder + "/train-labels-idx1-ubyte", idx_files::labels({1, 2, 3, 4, 11})));
        DatasetSpec spec;
        spec.path = folder;
        const std::string message = error_of([&] { load_dataset(spec, 1); });
        QVERIFY2(contains(message, "label 11 at index 4"), message.c_str());
    }

    void mnist_reads_its_own_folder() {
        QTemporaryDir dir;
        QVERIFY(idx_files::write_folder(dir.path().toStdString(), false));
        DatasetSpec spec;
        spec.kind = "mnist";
        spec.path = dir.path().toStdString();
        const Dataset d = load_dataset(spec, 1);
        QCOMPARE(d.name, std::string("mnist"));
        QCOMPARE(d.train.rows, std::int64_t{5});
        QVERIFY(d.notices.empty());
    }

    void mnist_with_the_default_path_looks_in_the_mnist_folder() {
        if (std::filesystem::exists("/usr/share/datasets/mnist"))
            QSKIP("/usr/share/datasets/mnist exists here; the fallback cannot be observed.");
        DatasetSpec spec;
        spec.kind = "mnist";  // path left at the fashion-mnist default
        const Dataset d = load_dataset(spec, 1);
        QCOMPARE(d.name, std::string("spirals"));
        QVERIFY2(contains(d.notices.at(0), "MNIST was not found at /usr/share/datasets/mnist"), d.notices[0].c_str());
    }

    void idx_kind_needs_a_path() {
        DatasetSpec spec;
        spec.kind = "idx";
        spec.path.clear();
        QVERIFY(contains(error_of([&] { load_dataset(spec, 1); }), "dataset.path"));
        spec.kind = "csv";
        QVERIFY(contains(error_of([&] { load_dataset(spec, 1); }), "dataset.path"));
    }

    void loads_the_installed_fashion_mnist() {
        const std::string folder = "/usr/share/datasets/fashion-mnist";
        if (!std::filesystem::is_directory(folder))
            QSKIP(
                "Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist "
                "(sudo apt-get install dataset-fashion-mnist).");
        QElapsedTimer timer;
        timer.start();
        const Dataset d = load_dataset(DatasetSpec{}, 1);
        qInfo("Fashion-MNIST loaded and normalised in %lld ms", static_cast<long long>(timer.elapsed()));
        QVERIFY(d.notices.empty());
        QCOMPARE(d.name, std::string("fashion-mnist"));
        QCOMPARE(d.train.rows, std::int64_t{60000});
        QCOMPARE(d.test.rows, std::int64_t{10000});
        QCOMPARE(d.features, 784);
        QVERIFY(d.shape == (SampleShape{1, 28, 28}));
        QCOMPARE(d.classes, 10);
        QCOMPARE(d.outputs, 10);
        QCOMPARE(d.train.x.size(), std::size_t{60000} * 784);
        QCOMPARE(d.test.y.size(), std::size_t{10000});
        int per_class[10] = {};
        for (std::int32_t y : d.train.y) ++per_class[y];
        for (int n : per_class) QCOMPARE(n, 6000);  // Fashion-MNIST is exactly balanced
        const Stats s = stats(d.train, d.features, -1);
        QVERIFY(std::abs(s.mean) < 1e-4);
        QVERIFY(std::abs(s.std - 1.0) < 1e-3);
    }
};

QTEST_GUILESS_MAIN(TestDataset)
#include "test_dataset.moc"
