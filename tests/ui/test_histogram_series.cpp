// HistogramSeries alone, on synthetic histograms: fractions of the step's elements, the zero
// fraction, the binade shift by the loss scale (as held) against the unscaled view, decimation of
// steps into columns (equal groups, means), the occupied range, steps out of order ignored, and
// the compute format of each step kept as spans (what the view's caption names).
#include <QtTest>

#include "histogram/histogram_series.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {
ExponentHistogram hist(std::initializer_list<std::pair<int, std::uint32_t>> bins) {
    ExponentHistogram h;
    for (auto [exponent, count] : bins)
        h.counts[static_cast<std::size_t>(exponent - ExponentHistogram::min_exponent)] = count;
    return h;
}
}  // namespace

class TestHistogramSeries : public QObject {
    Q_OBJECT
private slots:
    void fractionsOfTheStepsElements() {
        HistogramSeries s;
        QVERIFY(s.append(0, hist({{-20, 30}, {-21, 10}}), 1.0, 100, 0.6));
        QCOMPARE(s.fractionAt(0, -20, false), 0.3);
        QCOMPARE(s.fractionAt(0, -21, false), 0.1);
        QCOMPARE_EXACT(s.fractionAt(0, -22, false), 0.0);
        const HistogramGrid g = s.grid(10, false);
        QCOMPARE(g.columns, 1);
        QCOMPARE(g.min_exponent, -21);
        QCOMPARE(g.max_exponent, -20);
        QCOMPARE(g.zero_fraction[0], 0.6);
        QCOMPARE(g.massBelow(0, -20), 0.1);
        QCOMPARE(g.massAtOrAbove(0, -20), 0.3);
        QCOMPARE(g.maxFraction(), 0.3);
    }

    void withoutElementsTheHistogramsOwnTotal() {
        HistogramSeries s;
        s.append(3, hist({{5, 1}, {6, 3}}), 1.0);
        QCOMPARE(s.fractionAt(0, 5, true), 0.25);
        QCOMPARE(s.fractionAt(0, 6, true), 0.75);
    }

    void lossScaleShiftsTheViewAsHeld_data() {
        QTest::addColumn<double>("scale");
        QTest::addColumn<int>("shift");
        QTest::newRow("1") << 1.0 << 0;
        QTest::newRow("2^16") << 65536.0 << 16;
        QTest::newRow("2^-3") << 0.125 << -3;
        QTest::newRow("1000 (nearest binade)") << 1000.0 << 10;
        QTest::newRow("0 (none)") << 0.0 << 0;
        QTest::newRow("inf (none)") << qInf() << 0;
    }
    void lossScaleShiftsTheViewAsHeld() {
        QFETCH(double, scale);
        QFETCH(int, shift);
        HistogramSeries s;
        s.append(0, hist({{-30, 5}, {-20, 5}}), scale, 10);
        QCOMPARE(s.shiftAt(0), shift);
        QCOMPARE(s.scaled(), shift != 0);
        QCOMPARE(s.fractionAt(0, -30, false), 0.5);
        QCOMPARE(s.fractionAt(0, -30 + shift, true), 0.5);
        QCOMPARE(s.minExponent(true), -30 + shift);
        QCOMPARE(s.maxExponent(true), -20 + shift);
        QCOMPARE(s.minExponent(false), -30);
        const HistogramGrid held = s.grid(4, true);
        QCOMPARE(held.at(0, -20 + shift), 0.5);
        QCOMPARE(held.massBelow(0, -24), (shift >= 6 ? 0.0 : shift >= -4 ? 0.5 : 1.0));
    }

    void perStepShiftsInOneColumn() {
        // Two steps in one column: one at scale 1, one at 2^8; as held, their mass sits 8 binades apart.
        HistogramSeries s;
        s.append(0, hist({{-26, 4}}), 1, 4);
        s.append(1, hist({{-26, 4}}), 256, 4);
        const HistogramGrid g = s.grid(1, true);
        QCOMPARE(g.columns, 1);
        QCOMPARE(g.at(0, -26), 0.5);
        QCOMPARE(g.at(0, -18), 0.5);
        QCOMPARE(g.massBelow(0, -24), 0.5);
        const HistogramGrid raw = s.grid(1, false);
        QCOMPARE(raw.at(0, -26), 1.0);
    }

    void decimatesIntoEqualColumns_data() {
        QTest::addColumn<int>("steps");
        QTest::addColumn<int>("maxColumns");
        QTest::addColumn<int>("columns");
        QTest::newRow("1000 into 100") << 1000 << 100 << 100;
        QTest::newRow("1001 into 100") << 1001 << 100 << 100;
        QTest::newRow("fewer steps than columns") << 37 << 100 << 37;
        QTest::newRow("one column") << 50 << 1 << 1;
    }
    void decimatesIntoEqualColumns() {
        QFETCH(int, steps);
        QFETCH(int, maxColumns);
        QFETCH(int, columns);
        HistogramSeries s;
        // Even steps have all mass at 2^-10, odd steps at 2^-11: a column of an even count of steps is half each.
        for (int i = 0; i < steps; ++i) s.append(10 * i, hist({{i % 2 ? -11 : -10, 8}}), 1, 8, 0.25);
        const HistogramGrid g = s.grid(static_cast<std::size_t>(maxColumns), true);
        QCOMPARE(g.columns, columns);
        QCOMPARE(int(g.column_step.size()), columns);
        QCOMPARE(g.first_step.front(), std::int64_t(0));
        QCOMPARE(g.last_step.back(), std::int64_t(10 * (steps - 1)));
        std::int64_t covered = 0;
        for (int c = 0; c < g.columns; ++c) {
            const std::int64_t n = (g.last_step[c] - g.first_step[c]) / 10 + 1;
            covered += n;
            QVERIFY(n == steps / columns || n == steps / columns + 1);      // equal groups
            if (c > 0) QCOMPARE(g.first_step[c], g.last_step[c - 1] + 10);  // consecutive, no gaps
            QCOMPARE(g.at(c, -10) + g.at(c, -11), 1.0);                     // a mean keeps the total
            QCOMPARE(g.zero_fraction[c], 0.25);
            QCOMPARE(g.column_step[c], 0.5 * double(g.first_step[c] + g.last_step[c]));
            if (n % 2 == 0) QCOMPARE(g.at(c, -10), 0.5);
        }
        QCOMPARE(covered, std::int64_t(steps));
    }

    void endBinsAndEmptySteps() {
        HistogramSeries s;
        s.append(0, hist({{ExponentHistogram::min_exponent, 1}, {ExponentHistogram::max_exponent, 1}}), 1, 2);
        s.append(1, ExponentHistogram{}, 1, 10, 1.0);  // every element zero
        QCOMPARE(s.minExponent(false), -150);
        QCOMPARE(s.maxExponent(false), 127);
        const HistogramGrid g = s.grid(2, false);
        QCOMPARE(g.rows(), 278);
        QCOMPARE(g.at(0, -150), 0.5);
        QCOMPARE_EXACT(g.massAtOrAbove(1, -150), 0.0);
        QCOMPARE(g.zero_fraction[1], 1.0);
    }

    void stepsOutOfOrderAreIgnored() {
        HistogramSeries s;
        QVERIFY(s.append(5, hist({{0, 1}}), 1));
        QVERIFY(!s.append(5, hist({{1, 1}}), 1));
        QVERIFY(!s.append(4, hist({{1, 1}}), 1));
        QVERIFY(s.append(6, hist({{1, 1}}), 1));
        QCOMPARE(int(s.size()), 2);
        QCOMPARE(s.firstStep(), std::int64_t(5));
        QCOMPARE(s.lastStep(), std::int64_t(6));
        s.clear();
        QVERIFY(s.empty());
        QCOMPARE(s.lastStep(), std::int64_t(-1));
        QCOMPARE(s.grid(10, true).columns, 0);
    }

    // Each step's compute format, as spans of consecutive steps: a layer that never changed has
    // one; a step without a format (not known) neither ends a span nor starts one; an ignored step
    // adds nothing; clear() forgets them.
    void precisionSpansFollowTheSteps() {
        HistogramSeries s;
        QVERIFY(s.precisionSpans().empty());
        QVERIFY(s.append(0, hist({{-20, 1}}), 1, 1, 0, ComputeFormat(Format::fp32)));
        QVERIFY(s.append(10, hist({{-20, 1}}), 1, 1, 0, ComputeFormat(Format::fp32)));
        QCOMPARE(int(s.precisionSpans().size()), 1);
        QVERIFY(s.append(20, hist({{-20, 1}}), 1, 1, 0.25, ComputeFormat(Format::fp16)));
        QVERIFY(s.append(30, hist({{-20, 1}}), 1, 1, 0.5));  // not known
        QVERIFY(s.append(40, hist({{-20, 1}}), 1, 1, 0.75, ComputeFormat(Format::fp16)));
        QVERIFY(!s.append(40, hist({{-20, 1}}), 1, 1, 0, ComputeFormat(Format::bf16)));  // ignored
        QVERIFY(s.append(50, hist({{-20, 1}}), 1, 1, 1.0, ComputeFormat(BlockFormat::mxfp4)));
        const std::vector<PrecisionSpan>& spans = s.precisionSpans();
        QCOMPARE(int(spans.size()), 3);
        QCOMPARE(spans[0].first_step, std::int64_t(0));
        QCOMPARE(spans[0].last_step, std::int64_t(10));
        QVERIFY(spans[0].precision == ComputeFormat(Format::fp32));
        QCOMPARE(spans[1].first_step, std::int64_t(20));
        QCOMPARE(spans[1].last_step, std::int64_t(40));
        QVERIFY(spans[1].precision == ComputeFormat(Format::fp16));
        QCOMPARE(spans[2].first_step, std::int64_t(50));
        QVERIFY(spans[2].precision == ComputeFormat(BlockFormat::mxfp4));
        QCOMPARE(s.zeroFractionAt(2), 0.25);
        QCOMPARE(s.zeroFractionAt(s.size() - 1), 1.0);
        s.clear();
        QVERIFY(s.precisionSpans().empty());
    }
};

QTEST_MAIN(TestHistogramSeries)
#include "test_histogram_series.moc"
