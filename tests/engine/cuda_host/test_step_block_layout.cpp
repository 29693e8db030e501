// The CUDA step pipeline's result block (step_block_layout.h), checked without a GPU: every region
// lies inside the block, none overlaps another, each starts where the kernels may write it (256-byte
// boundaries; the rounding counts right after the update counts, so one memset zeroes both), and
// the block is no larger than its regions need.
#include <QtTest>

#include <algorithm>
#include <utility>
#include <vector>

#include "backend/cuda/step_block_layout.h"

using namespace mantissa::cuda;

class TestStepBlockLayout : public QObject {
    Q_OBJECT
private slots:
    void regionsFitWithoutOverlap_data() {
        QTest::addColumn<int>("layers");
        QTest::addColumn<qint64>("rows");
        QTest::addColumn<int>("header");
        QTest::addColumn<int>("checkResult");
        QTest::newRow("one layer, one row") << 1 << qint64{1} << 56 << 1136;
        QTest::newRow("reference MLP") << 3 << qint64{128} << 56 << 1136;
        QTest::newRow("odd sizes") << 7 << qint64{1001} << 61 << 1133;
        QTest::newRow("wide batch") << 3 << qint64{16384} << 56 << 1136;
        QTest::newRow("no layers") << 0 << qint64{5} << 56 << 1136;
    }
    void regionsFitWithoutOverlap() {
        QFETCH(int, layers);
        QFETCH(qint64, rows);
        QFETCH(int, header);
        QFETCH(int, checkResult);
        const StepBlockLayout l = layout_step_block(layers, rows, static_cast<std::size_t>(header),
                                                    static_cast<std::size_t>(checkResult));
        const auto L = static_cast<std::size_t>(layers);
        const auto R = static_cast<std::size_t>(rows);
        // [begin, end) of each region, in block order.
        const std::vector<std::pair<std::size_t, std::size_t>> regions = {
            {0, static_cast<std::size_t>(header)},
            {l.results, l.results + 2 * L * static_cast<std::size_t>(checkResult)},
            {l.counts, l.counts + 2 * L * 8},
            {l.rounding, l.rounding + 4 * L * 8},
            {l.row_loss, l.row_loss + R * 4},
            {l.row_correct, l.row_correct + R * 4},
        };
        for (std::size_t i = 0; i < regions.size(); ++i) {
            QVERIFY(regions[i].second <= l.bytes);
            if (i > 0) QVERIFY2(regions[i - 1].second <= regions[i].first, qPrintable(QString("region %1").arg(i)));
        }
        for (std::size_t offset : {l.results, l.counts, l.row_loss, l.row_correct}) QCOMPARE(offset % 256, std::size_t{0});
        QCOMPARE(l.rounding, l.counts + 2 * L * 8);  // one memset from counts to row_loss
        QCOMPARE(l.bytes % 256, std::size_t{0});
        // No more than alignment slack over the sum of the regions.
        std::size_t need = 0;
        for (const auto& [b, e] : regions) need += e - b;
        QVERIFY(l.bytes <= need + 6 * 256);
        QCOMPARE(l.layers, layers);
        QCOMPARE(l.rows, rows);
    }
};

QTEST_GUILESS_MAIN(TestStepBlockLayout)
#include "test_step_block_layout.moc"
