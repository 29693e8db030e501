// The CSV reader: header detection, label column choice, classification vs regression, the split,
// and errors that name the file, line and column.
#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "data/csv_reader.h"
#include "data/dataset.h"
#include "user_file.h"
#include "error.h"
#include "data_test_util.h"

using namespace mantissa;
using mantissa::test::error_of;

namespace {

std::string write_file(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.path().toStdString() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

DatasetSpec csv_spec(const std::string& path) {
    DatasetSpec spec;
    spec.kind = "csv";
    spec.path = path;
    spec.test_fraction = 0.0;
    spec.normalize = false;
    return spec;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

class TestCsvReader : public QObject {
    Q_OBJECT

private slots:
    void reads_classification_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("label_column");
        QTest::addColumn<bool>("has_header");
        const QString rows = "1.5,2,0\n-3,4e1,2\n\n   \n0.25, 7 ,1\n";
        QTest::newRow("no header") << rows << -1 << false;
        QTest::newRow("header") << "x1,x2,label\n" + rows << -1 << true;
        QTest::newRow("quoted header, CRLF, BOM")
            << "\xEF\xBB\xBF\"x1\",\"x2\",\"label\"\r\n1.5,2,0\r\n-3,4e1,2\r\n\r\n0.25,7,1\r\n"
            << -1 << true;
        QTest::newRow("label first") << "0,1.5,2\n2,-3,40\n1,0.25,+7\n" << 0 << false;
        QTest::newRow("label in the middle") << "a,label,b\n1.5,0,2\n-3,2,40\n0.25,1,7\n" << 1 << true;
        QTest::newRow("label -2: second from the end") << "1.5,0,2\n-3,2,40\n0.25,1,7\n" << -2 << false;
    }
    void reads_classification() {
        QFETCH(QString, text);
        QFETCH(int, label_column);
        QFETCH(bool, has_header);
        QTemporaryDir dir;
        const std::string path = write_file(dir, "data.csv", text.toStdString());

        const data::CsvData csv = data::read_csv(path, label_column);
        QCOMPARE(csv.header.empty(), !has_header);
        QCOMPARE(csv.rows, std::int64_t{3});

        DatasetSpec spec = csv_spec(path);
        spec.label_column = label_column;
        const Dataset data = load_dataset(spec, 1);
        QCOMPARE(data.name, std::string("csv"));
        QCOMPARE(data.features, 2);
        QCOMPARE(data.classes, 3);
        QCOMPARE(data.outputs, 3);
        QCOMPARE(data.train.rows, std::int64_t{3});
        QCOMPARE(data.test.rows, std::int64_t{0});
        QCOMPARE(data.train.x, (std::vector<float>{1.5f, 2.0f, -3.0f, 40.0f, 0.25f, 7.0f}));
        QCOMPARE(data.train.y, (std::vector<std::int32_t>{0, 2, 1}));
        QVERIFY(data.train.targets.empty());
        QCOMPARE(data.notices.size(), std::size_t{1});
        QVERIFY2(contains(data.notices[0], "classification with 3 classes"), data.notices[0].c_str());
    }

    void regression_labels_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QList<float>>("targets");
        QTest::newRow("fractions") << "x,y\n1,0.5\n2,1.25\n3,2\n" << QList<float>{0.5f, 1.25f, 2.0f};
        QTest::newRow("negative integers") << "1,-1\n2,1\n3,-1\n" << QList<float>{-1.0f, 1.0f, -1.0f};
        QTest::newRow("beyond the class limit") << "1,0\n2,5000\n" << QList<float>{0.0f, 5000.0f};
    }
    void regression_labels() {
        QFETCH(QString, text);
        QFETCH(QList<float>, targets);
        QTemporaryDir dir;
        const Dataset data = load_dataset(csv_spec(write_file(dir, "r.csv", text.toStdString())), 3);
        QVERIFY(data.is_regression());
        QCOMPARE(data.classes, 0);
        QCOMPARE(data.outputs, 1);
        QCOMPARE(data.features, 1);
        QCOMPARE(data.train.targets, std::vector<float>(targets.begin(), targets.end()));
        QVERIFY(data.train.y.empty());
        QVERIFY2(contains(data.notices.at(0), "regression with 1 output"), data.notices[0].c_str());
    }

    void classes_are_max_label_plus_one() {
        QTemporaryDir dir;
        const Dataset data = load_dataset(csv_spec(write_file(dir, "c.csv", "1,0\n2,4\n3,4.0\n")), 1);
        QCOMPARE(data.classes, 5);
        QCOMPARE(data.train.y, (std::vector<std::int32_t>{0, 4, 4}));
    }

    void bad_files_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("label_column");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("bad number") << "a,b,c\n1,2,0\n3,abc,1\n"
                                    << -1 << QStringList{"bad.csv line 3, column 2: 'abc' is not a number"};
        QTest::newRow("bad number after blank lines") << "1,2,0\n\n\n3,4,1\n5,6,x7\n"
                                                      << -1 << QStringList{"line 5, column 3: 'x7' is not a number"};
        QTest::newRow("empty cell") << "1,2,0\n3,,1\n" << -1 << QStringList{"line 2, column 2", "the cell is empty"};
        QTest::newRow("not finite") << "1,2,0\n3,nan,1\n"
                                    << -1 << QStringList{"line 2, column 2: 'nan' is not a finite number; NaN and infinity are not allowed"};
        // A first row of numbers, NaN or inf among them, is data (not a header), so it is an error.
        QTest::newRow("nan in the first row") << "nan,1,0\n1,2,1\n"
                                              << -1 << QStringList{"bad.csv line 1, column 1: 'nan' is not a finite number"};
        QTest::newRow("-inf in the first row") << "1,-inf,0\n1,2,1\n"
                                               << -1 << QStringList{"bad.csv line 1, column 2: '-inf' is not a finite number"};
        QTest::newRow("infinity label") << "1,2,0\n1,2,INFINITY\n"
                                        << -1 << QStringList{"bad.csv line 2, column 3: 'INFINITY' is not a finite number"};
        QTest::newRow("1e39 feature") << "1,2,0\n3,4,1\n1e39,2,0\n"
                                      << -1 << QStringList{"bad.csv line 3, column 1: '1e39' is outside the FP32 range"};
        QTest::newRow("1e300 feature") << "1e300,2,0\n3,4,1\n"
                                       << -1 << QStringList{"bad.csv line 1, column 1: '1e300' is outside the FP32 range"};
        QTest::newRow("1e999 feature") << "x,y,label\n1,-1e999,0\n3,4,1\n"
                                       << -1 << QStringList{"bad.csv line 2, column 2: '-1e999' is outside the FP32 range"};
        QTest::newRow("-1e39 target") << "1,0.5\n2,-1e39\n"
                                      << -1 << QStringList{"bad.csv line 2, column 2: '-1e39' is outside the FP32 range"};
        QTest::newRow("one row") << "1,2,1\n" << -1 << QStringList{"holds 1 data row; a dataset needs at least 2"};
        QTest::newRow("header and one row") << "a,b\n1,0.5\n" << -1 << QStringList{"holds 1 data row"};
        QTest::newRow("one class") << "1,0\n2,0\n3,0\n"
                                   << -1 << QStringList{"label column 1 (dataset.label_column, from 0) holds only the class 0; "
                                                        "a classification needs at least 2 classes"};
        QTest::newRow("one class, not 0") << "a,y\n1,3\n2,3\n"
                                          << -1 << QStringList{"label 'y' holds only the class 3"};
        QTest::newRow("too few columns") << "x,y,z\n1,2,0\n3,1\n"
                                         << -1 << QStringList{"line 3 has 2 columns", "line 1 has 3"};
        QTest::newRow("too many columns") << "1,2,0\n3,1,1,1\n" << -1 << QStringList{"line 2 has 4 columns"};
        QTest::newRow("label column out of range") << "1,2,0\n"
                                                   << 3 << QStringList{"3 columns", "dataset.label_column 3"};
        QTest::newRow("label column far from the end") << "1,2,0\n" << -4 << QStringList{"dataset.label_column -4"};
        QTest::newRow("empty file") << "\n\n" << -1 << QStringList{"holds no data rows"};
        QTest::newRow("header only") << "a,b\n" << -1 << QStringList{"holds no data rows", "only a header"};
        QTest::newRow("one column") << "1\n2\n" << -1 << QStringList{"line 1 has 1 column"};
    }
    void bad_files() {
        QFETCH(QString, text);
        QFETCH(int, label_column);
        QFETCH(QStringList, words);
        QTemporaryDir dir;
        DatasetSpec spec = csv_spec(write_file(dir, "bad.csv", text.toStdString()));
        spec.label_column = label_column;
        const std::string message = error_of([&] { load_dataset(spec, 1); });
        QVERIFY2(!message.empty(), "no error was thrown");
        QVERIFY2(contains(message, "bad.csv"), message.c_str());
        for (const QString& w : words)
            QVERIFY2(contains(message, w.toStdString()),
                     qPrintable("'" + w + "' not in: " + QString::fromStdString(message)));
    }

    // Paths that are not a readable CSV file: `path` is relative to a fresh temporary folder
    // unless absolute; the message must name the path and say what is wrong with it.
    void not_a_csv_file_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing file") << "absent.csv" << "dataset.path %1 does not exist.";
        QTest::newRow("a folder") << "sub" << "dataset.path %1 is a folder, not a file.";
        QTest::newRow("a folder, trailing slash") << "sub/" << "dataset.path %1 is a folder, not a file.";
        QTest::newRow("the temporary folder itself") << "" << "dataset.path %1 is a folder, not a file.";
        // A device or a pipe would be read without end: refused before it is opened.
        QTest::newRow("/dev/null") << "/dev/null" << "dataset.path %1 is a device, not a file.";
        QTest::newRow("/dev/zero") << "/dev/zero" << "dataset.path %1 is a device, not a file.";
        QTest::newRow("/dev/urandom") << "/dev/urandom" << "dataset.path %1 is a device, not a file.";
        QTest::newRow("a FIFO") << "pipe.csv" << "dataset.path %1 is a FIFO (a named pipe), not a file.";
    }
    void not_a_csv_file() {
        QFETCH(QString, path);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir("sub"));
        QCOMPARE(::mkfifo((dir.path() + "/pipe.csv").toLocal8Bit().constData(), 0600), 0);
        const QString full = path.startsWith('/') ? path : dir.path() + "/" + path;
        const std::string message = error_of([&] { load_dataset(csv_spec(full.toStdString()), 1); });
        QCOMPARE(QString::fromStdString(message), expected.arg(full));
    }

    // The largest FP32 values are fine; a value below the smallest rounds as a float would.
    void fp32_extremes_are_read() {
        QTemporaryDir dir;
        const Dataset data =
            load_dataset(csv_spec(write_file(dir, "e.csv", "3.4e38,1e-50,0\n-3.4e38,1e-400,1\n")), 1);
        QCOMPARE(data.train.x, (std::vector<float>{3.4e38f, 0.0f, -3.4e38f, 0.0f}));
    }

    // The shared reader stops at the limit + 1 bytes, whatever the file's stated size.
    void read_user_file_limit() {
        QTemporaryDir dir;
        const std::string path = write_file(dir, "f.txt", std::string(101, 'x'));
        const UserFileLimit limit{100, "100 bytes, the test's limit"};
        QCOMPARE(error_of([&] { read_user_file(path, "The file f.txt", limit); }),
                 std::string("The file f.txt is 101 bytes, larger than 100 bytes, the test's limit."));
        const std::string fits = write_file(dir, "g.txt", std::string(100, 'y'));
        QCOMPARE(read_user_file(fits, "g", limit), std::string(100, 'y'));
        const std::string big = write_file(dir, "big.txt", std::string(200000, 'z'));  // buffer growth
        QCOMPARE(read_user_file(big, "big", {1 << 20, "1 MiB"}).size(), std::size_t{200000});
        QCOMPARE(read_user_file(write_file(dir, "empty.txt", ""), "empty", limit), std::string());
    }

    void splits_by_test_fraction() {
        QTemporaryDir dir;
        std::string text = "f,label\n";
        for (int i = 0; i < 10; ++i) text += std::to_string(i) + "," + std::to_string(i % 2) + "\n";
        DatasetSpec spec = csv_spec(write_file(dir, "s.csv", text));
        spec.test_fraction = 0.3;
        const Dataset a = load_dataset(spec, 5);
        QCOMPARE(a.train.rows, std::int64_t{7});
        QCOMPARE(a.test.rows, std::int64_t{3});
        // Every row lands in exactly one split, with its own label.
        std::vector<float> all = a.train.x;
        all.insert(all.end(), a.test.x.begin(), a.test.x.end());
        std::sort(all.begin(), all.end());
        for (int i = 0; i < 10; ++i) QCOMPARE(all[static_cast<std::size_t>(i)], static_cast<float>(i));
        for (std::size_t i = 0; i < 7; ++i) QCOMPARE(a.train.y[i], static_cast<int>(a.train.x[i]) % 2);
        const Dataset b = load_dataset(spec, 5);
        QCOMPARE(a.test.x, b.test.x);
    }

    // ---- dataset.shape: how a row's feature columns are laid out

    // Without a shape a CSV's rows are flat (features x 1 x 1); with one they keep it, values and
    // per-feature normalisation unchanged.
    void shape_is_declared_or_flat() {
        QTemporaryDir dir;
        std::string text;
        for (int r = 0; r < 6; ++r) {
            for (int k = 0; k < 12; ++k) text += std::to_string(r * 12 + k) + ",";
            text += std::to_string(r % 3) + "\n";
        }
        DatasetSpec spec = csv_spec(write_file(dir, "images.csv", text));
        const Dataset flat = load_dataset(spec, 1);
        QCOMPARE(flat.features, 12);
        QVERIFY(flat.shape == (SampleShape{12, 1, 1}));
        QCOMPARE(flat.shape.text(), std::string("12"));
        spec.shape = SampleShape{3, 2, 2};
        const Dataset shaped = load_dataset(spec, 1);
        QCOMPARE(shaped.features, 12);
        QVERIFY(shaped.shape == (SampleShape{3, 2, 2}));
        QCOMPARE(shaped.shape.text(), std::string("3\u00d72\u00d72"));
        QCOMPARE(shaped.train.x, flat.train.x);
        QCOMPARE(shaped.train.y, flat.train.y);
        spec.normalize = true;
        spec.shape = std::nullopt;
        const Dataset flat_normalised = load_dataset(spec, 1);
        spec.shape = SampleShape{1, 3, 4};
        QCOMPARE(load_dataset(spec, 1).train.x, flat_normalised.train.x);
    }

    void shape_must_hold_the_feature_columns_data() {
        QTest::addColumn<int>("channels");
        QTest::addColumn<int>("height");
        QTest::addColumn<int>("width");
        QTest::addColumn<QString>("message");  // after "dataset.shape "
        QTest::newRow("too many") << 3 << 2 << 3
            << "[3, 2, 3] holds 18 values per sample, but the CSV file %1 has 12 feature columns; make the product of "
               "the shape equal the number of feature columns, or remove dataset.shape.";
        QTest::newRow("too few") << 1 << 1 << 11
            << "[1, 1, 11] holds 11 values per sample, but the CSV file %1 has 12 feature columns; make the product of "
               "the shape equal the number of feature columns, or remove dataset.shape.";
    }
    void shape_must_hold_the_feature_columns() {
        QFETCH(int, channels);
        QFETCH(int, height);
        QFETCH(int, width);
        QFETCH(QString, message);
        QTemporaryDir dir;
        std::string text = "a,b,c,d,e,f,g,h,i,j,k,l,label\n";
        for (int r = 0; r < 4; ++r) text += "1,2,3,4,5,6,7,8,9,10,11,12," + std::to_string(r % 2) + "\n";
        const std::string path = write_file(dir, "images.csv", text);
        DatasetSpec spec = csv_spec(path);
        spec.shape = SampleShape{channels, height, width};
        QCOMPARE(QString::fromStdString(error_of([&] { load_dataset(spec, 1); })),
                 "dataset.shape " + message.arg(QString::fromStdString(path)));
    }

    // Only a CSV takes a shape; a spec built in code that gives one to another kind is refused, as
    // the experiment file refuses it.
    void shape_only_for_csv() {
        DatasetSpec spec;
        spec.kind = "spirals";
        spec.shape = SampleShape{2, 1, 1};
        QCOMPARE(error_of([&] { load_dataset(spec, 1); }),
                 std::string("dataset.shape: only kind 'csv' takes a shape; kind 'spirals' knows its own "
                             "(docs/datasets.md), so remove dataset.shape."));
    }
};

QTEST_GUILESS_MAIN(TestCsvReader)
#include "test_csv_reader.moc"
