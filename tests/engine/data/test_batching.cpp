// Batching: epoch_order is a permutation fixed by (seed, epoch) alone; gather_batch copies the
// named rows and stops allocating once its buffers are large enough.
#include <QTest>

#include <algorithm>
#include <functional>
#include <numeric>

#include "data/dataset.h"
#include "error.h"
#include "data_test_util.h"

using namespace mantissa;
using mantissa::test::error_of;

namespace {

// A classification set of `rows` rows, 3 features, whose row r holds (r, r + 0.5, -r), label r % 4.
Dataset numbered(std::int64_t rows) {
    Dataset d;
    d.features = 3;
    d.shape = {3, 1, 1};
    d.classes = 4;
    d.outputs = 4;
    d.train.rows = rows;
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto v = static_cast<float>(r);
        d.train.x.insert(d.train.x.end(), {v, v + 0.5f, -v});
        d.train.y.push_back(static_cast<std::int32_t>(r % 4));
    }
    return d;
}

}  // namespace

class TestBatching : public QObject {
    Q_OBJECT

private slots:
    void order_is_a_permutation_data() {
        QTest::addColumn<qint64>("rows");
        QTest::newRow("0") << qint64{0};
        QTest::newRow("1") << qint64{1};
        QTest::newRow("7") << qint64{7};
        QTest::newRow("60000") << qint64{60000};
    }
    void order_is_a_permutation() {
        QFETCH(qint64, rows);
        std::vector<std::int64_t> order = epoch_order(rows, 99, 3);
        QCOMPARE(static_cast<qint64>(order.size()), rows);
        std::sort(order.begin(), order.end());
        for (std::int64_t i = 0; i < rows; ++i) QCOMPARE(order[static_cast<std::size_t>(i)], i);
    }

    void order_is_determined_by_seed_and_epoch() {
        const auto a = epoch_order(1000, 1, 0);
        QCOMPARE(epoch_order(1000, 1, 0), a);   // same (seed, epoch): same order
        QVERIFY(epoch_order(1000, 1, 1) != a);  // next epoch: another order
        QVERIFY(epoch_order(1000, 2, 0) != a);  // another seed: another order
        // Epoch 5 does not depend on having drawn epochs 0..4 first.
        const auto fifth = epoch_order(1000, 1, 5);
        for (int e = 0; e < 5; ++e) epoch_order(1000, 1, e);
        QCOMPARE(epoch_order(1000, 1, 5), fifth);
        // It is shuffled: few elements stay in place (about one expected).
        std::vector<std::int64_t> identity(1000);
        std::iota(identity.begin(), identity.end(), 0);
        int fixed = 0;
        for (std::size_t i = 0; i < a.size(); ++i) fixed += a[i] == identity[i];
        QVERIFY2(fixed < 10, qPrintable(QString::number(fixed)));
        // Orders of different epochs are not shifts or reversals of each other.
        QVERIFY(epoch_order(1000, 1, 1) != std::vector<std::int64_t>(a.rbegin(), a.rend()));
    }

    void order_spreads_evenly() {
        // Over many epochs every row visits every position about equally: the first slot of
        // 4000 epochs of 4 rows holds each row about 1000 times.
        int first[4] = {};
        for (int e = 0; e < 4000; ++e) ++first[epoch_order(4, 17, e)[0]];
        for (int n : first) QVERIFY2(n > 880 && n < 1120, qPrintable(QString::number(n)));
    }

    void gathers_the_named_rows() {
        const Dataset d = numbered(10);
        const std::vector<std::int64_t> order{9, 2, 5, 0, 7};
        std::vector<float> x;
        std::vector<std::int32_t> y;
        std::vector<float> targets;
        gather_batch(d, d.train, order, 1, 3, x, y, targets);
        QCOMPARE(x, (std::vector<float>{2, 2.5f, -2, 5, 5.5f, -5, 0, 0.5f, 0}));
        QCOMPARE(y, (std::vector<std::int32_t>{2, 1, 0}));
        QVERIFY(targets.empty());
    }

    void gathers_regression_targets() {
        Dataset d;
        d.features = 1;
        d.shape = {1, 1, 1};
        d.outputs = 2;  // classes 0: regression
        d.train.rows = 3;
        d.train.x = {10, 11, 12};
        d.train.targets = {0, 1, 2, 3, 4, 5};
        std::vector<float> x, targets;
        std::vector<std::int32_t> y;
        gather_batch(d, d.train, {2, 0}, 0, 2, x, y, targets);
        QCOMPARE(x, (std::vector<float>{12, 10}));
        QCOMPARE(targets, (std::vector<float>{4, 5, 0, 1}));
        QVERIFY(y.empty());
    }

    void reuses_buffers_that_are_big_enough() {
        const Dataset d = numbered(100);
        const auto order = epoch_order(100, 4, 0);
        std::vector<float> x, targets;
        std::vector<std::int32_t> y;
        gather_batch(d, d.train, order, 0, 32, x, y, targets);
        const float* x_data = x.data();
        const std::int32_t* y_data = y.data();
        QCOMPARE(x.size(), std::size_t{96});
        // Further full batches and the short last one reuse the same storage.
        for (std::int64_t first = 32; first < 100; first += 32)
            gather_batch(d, d.train, order, first, std::min<std::int64_t>(32, 100 - first), x, y, targets);
        QCOMPARE(x.data(), x_data);
        QCOMPARE(y.data(), y_data);
        QCOMPARE(x.size(), std::size_t{96});
        // The last batch (rows 96..99) is at the front of the buffer.
        for (std::size_t i = 0; i < 4; ++i) {
            const std::int64_t row = order[96 + i];
            QCOMPARE(x[3 * i], static_cast<float>(row));
            QCOMPARE(y[i], static_cast<std::int32_t>(row % 4));
        }
    }

    void refuses_rows_outside_the_order_or_split() {
        const Dataset d = numbered(5);
        std::vector<float> x, t;
        std::vector<std::int32_t> y;
        const std::vector<std::int64_t> order{0, 1, 2, 3, 4};
        QVERIFY(error_of([&] { gather_batch(d, d.train, order, 3, 3, x, y, t); }).find("outside the order") !=
                std::string::npos);
        QVERIFY(error_of([&] { gather_batch(d, d.train, order, -1, 2, x, y, t); }).find("outside the order") !=
                std::string::npos);
        const std::vector<std::int64_t> bad{0, 9};
        QVERIFY(error_of([&] { gather_batch(d, d.train, bad, 0, 2, x, y, t); }).find("names row 9") !=
                std::string::npos);
        QVERIFY(error_of([&] { gather_batch(d, d.train, order, 5, 0, x, y, t); }).empty());
    }
};

QTEST_GUILESS_MAIN(TestBatching)
#include "test_batching.moc"
