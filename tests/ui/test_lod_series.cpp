// LodSeries: the min/max level-of-detail pyramid behind every chart. The query must draw the same
// envelope as the raw points (no peak lost), stay bounded by the column count whatever the number
// of points, and never draw a non-finite value.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "series/lod_series.h"
#include "exact_compare.h"

using mantissa::ui::LodSeries;
using mantissa::ui::SeriesPoint;

namespace {

// A random walk with rare spikes: the kind of loss curve whose spikes a decimation must not lose.
LodSeries makeWalk(std::size_t n, unsigned seed, std::vector<float>* raw = nullptr) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> step(0.0f, 1.0f);
    std::uniform_int_distribution<int> spike(0, 997);
    LodSeries s;
    float v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        v += step(rng);
        float y = v;
        if (spike(rng) == 0) y += 1000.0f * (spike(rng) % 2 ? 1.0f : -1.0f);
        s.append(static_cast<double>(i), y);
        if (raw) raw->push_back(y);
    }
    return s;
}

}  // namespace

class TestLodSeries : public QObject {
    Q_OBJECT
private slots:
    void emptySeriesGivesNothing() {
        LodSeries s;
        std::vector<SeriesPoint> out{{1, 1}};
        s.query(0, 100, 10, out);
        QVERIFY(out.empty());
        QVERIFY(!s.nearest(3).has_value());
        QVERIFY(!s.atOrBefore(3).has_value());
    }

    void fewPointsAreReturnedRaw_data() {
        QTest::addColumn<int>("points");
        QTest::addColumn<int>("columns");
        QTest::newRow("one") << 1 << 10;
        QTest::newRow("five") << 5 << 10;
        QTest::newRow("exactly 2x columns") << 200 << 100;
    }
    void fewPointsAreReturnedRaw() {
        QFETCH(int, points);
        QFETCH(int, columns);
        LodSeries s;
        for (int i = 0; i < points; ++i) s.append(i, i * i);
        std::vector<SeriesPoint> out;
        QVERIFY(!s.query(0, points - 1, static_cast<std::size_t>(columns), out));  // raw, not a summary
        QCOMPARE(out.size(), static_cast<std::size_t>(points));
        for (int i = 0; i < points; ++i) {
            QCOMPARE(out[static_cast<std::size_t>(i)].x, double(i));
            QCOMPARE(out[static_cast<std::size_t>(i)].y, double(i * i));
        }
    }

    void windowIncludesOneNeighbourEachSide() {
        LodSeries s;
        for (int i = 0; i < 10; ++i) s.append(i * 10, i);
        std::vector<SeriesPoint> out;
        s.query(25, 55, 100, out);  // inside: 30, 40, 50; neighbours 20 and 60
        QCOMPARE(out.size(), std::size_t{5});
        QCOMPARE(out.front().x, 20.0);
        QCOMPARE(out.back().x, 60.0);
    }

    // The whole series at any resolution: the global extremes are drawn exactly, every drawn point
    // is a real point, x never goes back, and the count is bounded by the columns.
    void wholeSeriesKeepsExtremes_data() {
        QTest::addColumn<int>("points");
        QTest::addColumn<int>("columns");
        QTest::newRow("1e3 at 100") << 1000 << 100;
        QTest::newRow("1e4 at 700") << 10000 << 700;
        QTest::newRow("1e5 at 1000") << 100000 << 1000;
        QTest::newRow("1e5+3 at 333") << 100003 << 333;
        QTest::newRow("4^8 at 1920") << 65536 << 1920;
    }
    void wholeSeriesKeepsExtremes() {
        QFETCH(int, points);
        QFETCH(int, columns);
        std::vector<float> raw;
        const LodSeries s = makeWalk(static_cast<std::size_t>(points), 7, &raw);
        std::vector<SeriesPoint> out;
        QVERIFY(s.query(0, points - 1, static_cast<std::size_t>(columns), out));  // a min/max summary
        QVERIFY(out.size() <= 2 * static_cast<std::size_t>(columns) + 4);
        QVERIFY(out.size() >= static_cast<std::size_t>(columns) / 2);
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (std::size_t i = 0; i < out.size(); ++i) {
            if (i > 0) QVERIFY(out[i].x >= out[i - 1].x);
            const auto at = static_cast<std::size_t>(out[i].x);
            QCOMPARE(out[i].x, double(at));
            QCOMPARE(out[i].y, double(raw[at]));
            lo = std::min(lo, out[i].y);
            hi = std::max(hi, out[i].y);
        }
        QCOMPARE(lo, double(*std::min_element(raw.begin(), raw.end())));
        QCOMPARE(hi, double(*std::max_element(raw.begin(), raw.end())));
    }

    // A window inside the series: what is drawn covers the window's true extremes (it may reach one
    // bucket beyond either edge, where the chart clips it).
    void subWindowsCoverTheirExtremes() {
        const int n = 200000;
        std::vector<float> raw;
        const LodSeries s = makeWalk(n, 11, &raw);
        std::mt19937 rng(3);
        std::uniform_int_distribution<int> pick(0, n - 1);
        std::vector<SeriesPoint> out;
        for (int trial = 0; trial < 200; ++trial) {
            int a = pick(rng), b = pick(rng);
            if (a > b) std::swap(a, b);
            s.query(a, b, 500, out);
            const float lo = *std::min_element(raw.begin() + a, raw.begin() + b + 1);
            const float hi = *std::max_element(raw.begin() + a, raw.begin() + b + 1);
            double outLo = std::numeric_limits<double>::infinity(), outHi = -outLo;
            for (const auto& p : out) {
                outLo = std::min(outLo, p.y);
                outHi = std::max(outHi, p.y);
            }
            QVERIFY2(outLo <= lo && outHi >= hi, qPrintable(QStringLiteral("window [%1, %2]").arg(a).arg(b)));
            QVERIFY(out.size() <= 2 * 500 + 4);
        }
    }

    // What makes a replot independent of the point count: the output for a fixed column count.
    void outputIsBoundedWhateverThePointCount_data() {
        QTest::addColumn<int>("points");
        QTest::newRow("1e4") << 10000;
        QTest::newRow("1e5") << 100000;
        QTest::newRow("1e6") << 1000000;
    }
    void outputIsBoundedWhateverThePointCount() {
        QFETCH(int, points);
        LodSeries s;
        s.reserve(static_cast<std::size_t>(points));
        for (int i = 0; i < points; ++i) s.append(i, std::sin(i * 0.001) + (i % 7));
        std::vector<SeriesPoint> out;
        s.query(0, points, 1000, out);
        QVERIFY(out.size() <= 2004);
        QVERIFY(out.size() >= 500);
        QCOMPARE(s.size(), static_cast<std::size_t>(points));
    }

    // A step function (the loss scale) summarised at any resolution still spans the whole window:
    // its first and last points are drawn, though a flat stretch's bucket holds only its first.
    void summariesSpanTheWholeWindow_data() {
        QTest::addColumn<int>("columns");
        QTest::newRow("1 column") << 1;
        QTest::newRow("3 columns") << 3;
        QTest::newRow("100 columns") << 100;
    }
    void summariesSpanTheWholeWindow() {
        QFETCH(int, columns);
        LodSeries s;
        const int n = 5000;
        for (int i = 0; i < n; ++i) s.append(i, i < 1200 ? 65536.0 : (i < 1300 ? 32768.0 : 131072.0));
        for (const bool collapse : {false, true}) {
            std::vector<SeriesPoint> out;
            QVERIFY(s.query(0, n - 1, static_cast<std::size_t>(columns), out, collapse));
            QCOMPARE_EXACT(out.front().x, 0.0);
            QCOMPARE(out.front().y, 65536.0);
            QCOMPARE(out.back().x, double(n - 1));
            QCOMPARE(out.back().y, 131072.0);
            for (std::size_t i = 1; i < out.size(); ++i) QVERIFY(out[i].x >= out[i - 1].x);
            QVERIFY(out.size() <= 2 * static_cast<std::size_t>(columns) + 4);
        }
    }

    void flatRunsCollapseToTheirEnds() {
        LodSeries s;
        const double ys[] = {1, 1, 1, 1, 2, 2, 2, 1, 3};
        for (int i = 0; i < 9; ++i) s.append(i, ys[i]);
        std::vector<SeriesPoint> out;
        s.query(0, 8, 100, out, true);
        std::vector<double> xs;
        for (const auto& p : out) xs.push_back(p.x);
        QCOMPARE(xs, (std::vector<double>{0, 3, 4, 6, 7, 8}));
        s.query(0, 8, 100, out, false);
        QCOMPARE(out.size(), std::size_t{9});
    }

    void nonFiniteValuesAreNeverDrawn() {
        LodSeries s;
        const double inf = std::numeric_limits<double>::infinity();
        for (int i = 0; i < 5000; ++i) s.append(i, (i % 100 == 50) ? (i % 200 == 50 ? inf : std::nan("")) : 1.0 + i % 3);
        for (std::size_t columns : {10000, 300, 10}) {
            std::vector<SeriesPoint> out;
            s.query(0, 5000, columns, out);
            QVERIFY(!out.empty());
            for (const auto& p : out) QVERIFY(std::isfinite(p.y));
        }
        // A read-out still sees the raw value.
        QVERIFY(std::isinf(s.nearest(50)->y));
        QVERIFY(std::isnan(s.nearest(150)->y));
    }

    void allNonFiniteWindowDrawsNothing() {
        LodSeries s;
        for (int i = 0; i < 100; ++i) s.append(i, std::nan(""));
        std::vector<SeriesPoint> out;
        s.query(0, 100, 5, out);
        QVERIFY(out.empty());
    }

    void nearestAndAtOrBefore() {
        LodSeries s;
        s.append(0, 1);
        s.append(10, 2);
        s.append(10, 3);
        s.append(20, 4);
        QCOMPARE(s.nearest(4)->y, 1.0);
        QCOMPARE(s.nearest(5)->y, 1.0);   // tie: the earlier
        QCOMPARE(s.nearest(9)->y, 2.0);   // first of equal x
        QCOMPARE(s.nearest(16)->y, 4.0);
        QCOMPARE(s.nearest(99)->y, 4.0);
        QCOMPARE(s.atOrBefore(15)->y, 3.0);
        QCOMPARE(s.atOrBefore(10)->y, 3.0);
        QVERIFY(!s.atOrBefore(-1).has_value());
    }

    void decreasingXIsClamped() {
        LodSeries s;
        s.append(5, 1);
        s.append(3, 2);
        QCOMPARE(s.x(1), 5.0);
        std::vector<SeriesPoint> out;
        s.query(0, 10, 10, out);
        QCOMPARE(out.size(), std::size_t{2});
    }

    void clearForgetsEverything() {
        LodSeries s = makeWalk(10000, 1);
        QVERIFY(s.memoryBytes() > 10000 * 12);
        s.clear();
        QVERIFY(s.empty());
        s.append(1, 2);
        std::vector<SeriesPoint> out;
        s.query(0, 2, 10, out);
        QCOMPARE(out.size(), std::size_t{1});
        QCOMPARE(out[0].y, 2.0);
    }
};

QTEST_APPLESS_MAIN(TestLodSeries)
#include "test_lod_series.moc"
