// TrainBatches: step s's batch is the rows epoch_order names for it, with or without the helper
// thread that gathers one step ahead; a prefetched batch is taken by a swap; a step other than the
// prefetched one is gathered on the caller's thread; destruction with a request pending returns.
#include <QTest>

#include <functional>

#include "data/train_batches.h"
#include "error.h"
#include "data_test_util.h"

using namespace mantissa;
using mantissa::test::error_of;

namespace {

// `rows` rows of 2 features (r, -r); classification (label r % 3) or regression (target 10 r).
Dataset numbered(std::int64_t rows, bool regression) {
    Dataset d;
    d.features = 2;
    d.shape = {2, 1, 1};
    d.classes = regression ? 0 : 3;
    d.outputs = regression ? 1 : 3;
    d.train.rows = rows;
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto v = static_cast<float>(r);
        d.train.x.insert(d.train.x.end(), {v, -v});
        if (regression)
            d.train.targets.push_back(10 * v);
        else
            d.train.y.push_back(static_cast<std::int32_t>(r % 3));
    }
    return d;
}

// The batch of `step` as the definition in train_batches.h states it, from epoch_order.
BatchBuffers expected(const Dataset& d, std::uint64_t seed, std::int64_t batch, std::int64_t step) {
    const std::int64_t per_epoch = (d.train.rows + batch - 1) / batch;
    const auto order = epoch_order(d.train.rows, seed, step / per_epoch);
    const std::int64_t first = (step % per_epoch) * batch;
    BatchBuffers b;
    b.step = step;
    b.rows = std::min(batch, d.train.rows - first);
    gather_batch(d, d.train, order, first, b.rows, b.x, b.y, b.targets);
    return b;
}

void compare(const BatchBuffers& got, const BatchBuffers& want, bool regression) {
    QCOMPARE(got.step, want.step);
    QCOMPARE(got.rows, want.rows);
    const auto n = static_cast<std::size_t>(want.rows);
    QVERIFY(std::equal(want.x.begin(), want.x.begin() + static_cast<std::ptrdiff_t>(2 * n), got.x.begin()));
    if (regression)
        QVERIFY(std::equal(want.targets.begin(), want.targets.begin() + static_cast<std::ptrdiff_t>(n),
                           got.targets.begin()));
    else
        QVERIFY(std::equal(want.y.begin(), want.y.begin() + static_cast<std::ptrdiff_t>(n), got.y.begin()));
}

}  // namespace

class TestTrainBatches : public QObject {
    Q_OBJECT

private slots:
    void everyStepHasItsRows_data() {
        QTest::addColumn<bool>("prefetch");
        QTest::addColumn<bool>("regression");
        QTest::addColumn<qint64>("rows");
        QTest::addColumn<qint64>("batch");
        QTest::newRow("on, partial last batch") << true << false << qint64{10} << qint64{3};
        QTest::newRow("off, partial last batch") << false << false << qint64{10} << qint64{3};
        QTest::newRow("on, whole batches") << true << false << qint64{12} << qint64{4};
        QTest::newRow("on, one batch an epoch") << true << false << qint64{5} << qint64{8};
        QTest::newRow("on, regression") << true << true << qint64{7} << qint64{2};
    }
    // Three and a half epochs, taken in order with the next step prefetched, as the trainer does.
    void everyStepHasItsRows() {
        QFETCH(bool, prefetch);
        QFETCH(bool, regression);
        QFETCH(qint64, rows);
        QFETCH(qint64, batch);
        const Dataset d = numbered(rows, regression);
        TrainBatches batches(d, 7, batch, prefetch ? TrainBatches::Prefetch::on : TrainBatches::Prefetch::off);
        QCOMPARE(batches.prefetching(), prefetch);
        QCOMPARE(batches.steps_per_epoch(), (rows + batch - 1) / batch);
        BatchBuffers b;
        const std::int64_t steps = batches.steps_per_epoch() * 7 / 2;
        for (std::int64_t s = 0; s < steps; ++s) {
            batches.take(s, b);
            compare(b, expected(d, 7, batch, s), regression);
            // The first step has nothing prefetched; every later one does, when there is a helper.
            QCOMPARE(batches.last_take_was_prefetched(), prefetch && s > 0);
            batches.prefetch(s + 1);
        }
    }

    // A step other than the prefetched one is gathered here; the prefetched one stays usable.
    void aJumpIsGatheredHere() {
        const Dataset d = numbered(20, false);
        TrainBatches batches(d, 3, 4, TrainBatches::Prefetch::on);
        BatchBuffers b;
        batches.prefetch(9);
        batches.take(2, b);
        QVERIFY(!batches.last_take_was_prefetched());
        compare(b, expected(d, 3, 4, 2), false);
        batches.take(9, b);
        QVERIFY(batches.last_take_was_prefetched());
        compare(b, expected(d, 3, 4, 9), false);
        batches.take(9, b);  // taken once: the second time it is gathered again, the same rows
        QVERIFY(!batches.last_take_was_prefetched());
        compare(b, expected(d, 3, 4, 9), false);
    }

    // Buffers are swapped, not reallocated: after the first two steps no vector changes capacity.
    void takingSwapsBuffers() {
        const Dataset d = numbered(64, false);
        TrainBatches batches(d, 1, 16, TrainBatches::Prefetch::on);
        BatchBuffers b;
        batches.take(0, b);
        batches.prefetch(1);
        batches.take(1, b);
        batches.prefetch(2);
        const float* first = b.x.data();
        batches.take(2, b);
        batches.prefetch(3);
        const float* second = b.x.data();
        QVERIFY(first != second);
        batches.take(3, b);
        QCOMPARE(b.x.data(), first);  // two buffers take turns
    }

    void destroyingWithARequestPendingReturns() {
        const Dataset d = numbered(1000, false);
        for (int i = 0; i < 50; ++i) {
            TrainBatches batches(d, 1, 100, TrainBatches::Prefetch::on);
            batches.prefetch(i);
            if (i % 2) {  // half of them taken, half destroyed with the helper busy or about to be
                BatchBuffers b;
                batches.take(i, b);
                compare(b, expected(d, 1, 100, i), false);
            }
        }
    }

    void badArgumentsAreErrors() {
        const Dataset d = numbered(10, false);
        QCOMPARE(error_of([&] { TrainBatches(d, 1, 0, TrainBatches::Prefetch::off); }),
                 std::string("TrainBatches: the batch size must be positive, got 0."));
        const Dataset empty = numbered(0, false);
        QCOMPARE(error_of([&] { TrainBatches(empty, 1, 4, TrainBatches::Prefetch::on); }),
                 std::string("TrainBatches: the training split has no rows."));
        TrainBatches batches(d, 1, 4, TrainBatches::Prefetch::on);
        BatchBuffers b;
        batches.prefetch(-1);  // nothing to prefetch: ignored
        QCOMPARE(error_of([&] { batches.take(-1, b); }), std::string("TrainBatches: step -1 is negative."));
    }
};

QTEST_APPLESS_MAIN(TestTrainBatches)
#include "test_train_batches.moc"
