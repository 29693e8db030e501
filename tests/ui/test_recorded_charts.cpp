// A recorded run's first picture: a run opened from the history (RunViewer) and a comparison of
// two (CompareView) are filled before their windows are shown, as the browser does, and must then
// draw what the store holds at the size they are shown at, without a zoom to wake them. After the
// windows are shown at a realistic size, the test reads back the points each chart's graphs draw
// and holds them against the store's rows: every drawn point is a recorded one, they run from the
// first step to the last, the extremes are there, and they are as many as the plot is wide (not
// the two or three points of a chart queried before it had a width). The runs are trained here by
// the engine (spirals, fp16 with dynamic loss scaling that grows and backs off).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

#include "charts/chart_view.h"
#include "charts/charts_panel.h"
#include "export/chart_export.h"
#include "history/compare_view.h"
#include "history/run_viewer.h"
#include "test_history_fixture.h"

using namespace mantissa;
using namespace mantissa::ui;
using namespace history_test;

namespace {

using Rows = std::vector<std::pair<double, double>>;  // (step, value) as recorded

QCPGraph* graphNamed(ChartView* chart, const QString& name) {
    for (int i = 0; i < chart->graphCount(); ++i)
        if (chart->graph(i)->name() == name) return chart->graph(i);
    return nullptr;
}

// Holds a graph's drawn points against the recorded rows (values as the chart stores them: float).
// `varying`: a series that changes every step (loss, throughput), whose drawing must be as dense as
// the plot is wide; a step function (the loss scale) is drawn by its corners, so only its span,
// extremes and fidelity are checked.
void checkDrawn(ChartView* chart, QCPGraph* graph, const Rows& rows, double factor, bool varying, const QString& what) {
    QVERIFY2(graph, qPrintable(what + QStringLiteral(": no graph")));
    QVERIFY2(!rows.empty(), qPrintable(what + QStringLiteral(": no rows")));
    std::map<double, std::vector<double>> recorded;
    for (const auto& [x, y] : rows) recorded[x].push_back(static_cast<double>(static_cast<float>(y)) * factor);
    const int width = chart->axisRect()->width();
    QVERIFY2(width > 300, qPrintable(QStringLiteral("%1: a plot %2 px wide").arg(what).arg(width)));
    const QCPRange range = chart->xAxis->range();
    QVERIFY2(range.lower <= rows.front().first && range.upper >= rows.back().first,
             qPrintable(QStringLiteral("%1: x range %2..%3 does not show the run").arg(what).arg(range.lower).arg(range.upper)));

    std::vector<std::pair<double, double>> drawn;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) drawn.push_back({it->key, it->value});
    QVERIFY2(drawn.size() >= 2, qPrintable(QStringLiteral("%1: %2 points drawn").arg(what).arg(drawn.size())));
    // Every drawn point is a recorded one.
    for (const auto& [x, y] : drawn) {
        const auto at = recorded.find(x);
        QVERIFY2(at != recorded.end(), qPrintable(QStringLiteral("%1: drawn x %2 was not recorded").arg(what).arg(x)));
        const bool known = std::any_of(at->second.begin(), at->second.end(),
                                       [&](double v) { return std::abs(v - y) <= 1e-6 * std::max(1.0, std::abs(v)); });
        QVERIFY2(known, qPrintable(QStringLiteral("%1: drawn %2 at step %3 was not recorded").arg(what).arg(y).arg(x)));
    }
    // From the first recorded step to the last.
    QCOMPARE(drawn.front().first, rows.front().first);
    QCOMPARE(drawn.back().first, rows.back().first);
    // The extremes are drawn.
    double lo = INFINITY, hi = -INFINITY, drawnLo = INFINITY, drawnHi = -INFINITY;
    for (const auto& [x, ys] : recorded)
        for (double y : ys) lo = std::min(lo, y), hi = std::max(hi, y);
    for (const auto& [x, y] : drawn) drawnLo = std::min(drawnLo, y), drawnHi = std::max(drawnHi, y);
    QVERIFY2(std::abs(drawnLo - lo) <= 1e-6 * std::max(1.0, std::abs(lo)) && std::abs(drawnHi - hi) <= 1e-6 * std::max(1.0, std::abs(hi)),
             qPrintable(QStringLiteral("%1: drawn %2..%3, recorded %4..%5").arg(what).arg(drawnLo).arg(drawnHi).arg(lo).arg(hi)));
    if (!varying) return;
    // As dense as the plot: no drawn segment spans more than a few pixels' worth of steps (a
    // chart queried before it had a width draws the run as two or three long segments), and the
    // number of points is in proportion to the width.
    const double stepsPerPixel = range.size() / width;
    const double rowGap = rows.size() > 1 ? (rows.back().first - rows.front().first) / double(rows.size() - 1) : 1;
    double widest = 0;
    for (std::size_t i = 1; i < drawn.size(); ++i) widest = std::max(widest, drawn[i].first - drawn[i - 1].first);
    QVERIFY2(widest <= std::max(8 * stepsPerPixel, 2 * rowGap),
             qPrintable(QStringLiteral("%1: a drawn segment spans %2 steps (%3 steps a pixel)").arg(what).arg(widest).arg(stepsPerPixel)));
    const std::size_t expected = std::min<std::size_t>(rows.size(), static_cast<std::size_t>(width / 4));
    QVERIFY2(drawn.size() >= expected,
             qPrintable(QStringLiteral("%1: %2 points drawn on a %3 px plot of %4 rows").arg(what).arg(drawn.size()).arg(width).arg(rows.size())));
    QVERIFY2(drawn.size() <= 2 * static_cast<std::size_t>(width) + 4,
             qPrintable(QStringLiteral("%1: %2 points drawn on a %3 px plot").arg(what).arg(drawn.size()).arg(width)));
}

// With MANTISSA_SCREENSHOT_DIR set, the first picture of a window (as a person sees it on opening)
// and a chart exported from it are written there for review; the assertions run regardless.
void saveFirstPicture(QWidget& w, const QString& file) {
    const QString dir = qEnvironmentVariable("MANTISSA_SCREENSHOT_DIR");
    if (!dir.isEmpty()) QVERIFY(w.grab().save(QDir(dir).filePath(file)));
}

void settle(QWidget& w) {
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (int i = 0; i < 5; ++i) {
        QCoreApplication::processEvents();
        QTest::qWait(20);
    }
}

}  // namespace

class TestRecordedCharts : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_path;
    std::int64_t m_long = 0, m_other = 0;

    Rows stepRows(std::int64_t id, double StepRecord::*field) {
        RunStore store(m_path, true);
        Rows rows;
        for (const StepRecord& s : store.steps(id)) rows.push_back({static_cast<double>(s.step), s.*field});
        return rows;
    }
    Rows underflowRows(std::int64_t id, int layer) {
        RunStore store(m_path, true);
        Rows rows;
        for (const LayerStepRecord& r : store.layer_steps(id))
            if (r.layer == layer) rows.push_back({static_cast<double>(r.step), r.frac_underflow});
        return rows;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        // Long enough that the charts must summarise (more steps than pixels), with a loss scale
        // that grows every 150 steps and backs off on overflows.
        Experiment e = spirals("spirals-fp16-long", 3000);
        e.precision.autocast = Autocast::fp16;
        e.precision.loss_scaling.growth_interval = 150;
        e.train.eval_every = 250;
        m_long = trainRun(m_path, e);
        Experiment other = spirals("spirals-fp16-other", 2200);
        other.precision.autocast = Autocast::fp16;
        other.precision.loss_scaling.init_scale = 1024;
        other.precision.loss_scaling.growth_interval = 300;
        other.train.eval_every = 250;
        m_other = trainRun(m_path, other);
        RunStore store(m_path, true);
        QCOMPARE(store.run(m_long).steps, std::int64_t{3000});
    }

    // The browser's order: load (the charts are filled unseen), then show.
    void aRunOpensAsRecorded() {
        auto store = std::make_shared<RunStore>(m_path);
        RunViewer viewer(store, m_long);
        QVERIFY(viewer.load());
        viewer.resize(1280, 900);
        viewer.show();
        settle(viewer);
        saveFirstPicture(viewer, QStringLiteral("run-opened.png"));
        ChartsPanel* p = viewer.chartsPanel();
        for (ChartView* c : p->charts()) QCOMPARE(c->queriedColumns(), std::max(1, c->axisRect()->width() / 2));
        checkDrawn(p->lossChart(), graphNamed(p->lossChart(), QStringLiteral("loss")), stepRows(m_long, &StepRecord::loss), 1,
                   true, QStringLiteral("viewer loss"));
        checkDrawn(p->scaleChart(), graphNamed(p->scaleChart(), QStringLiteral("scale")),
                   stepRows(m_long, &StepRecord::loss_scale), 1, false, QStringLiteral("viewer loss scale"));
        checkDrawn(p->throughputChart(), graphNamed(p->throughputChart(), QStringLiteral("samples/s (per step)")),
                   stepRows(m_long, &StepRecord::samples_per_s), 1, true, QStringLiteral("viewer throughput"));
        checkDrawn(p->underflowChart(), graphNamed(p->underflowChart(), QStringLiteral("fc1")), underflowRows(m_long, 0), 100,
                   false, QStringLiteral("viewer underflow fc1"));
        // The loss scale changed during the run: more than one value drawn, the last at the end.
        const Rows scale = stepRows(m_long, &StepRecord::loss_scale);
        QVERIFY2(std::any_of(scale.begin(), scale.end(), [&](const auto& r) { return r.second != scale.front().second; }),
                 "the fixture's loss scale never changed");
        if (const QString dir = qEnvironmentVariable("MANTISSA_SCREENSHOT_DIR"); !dir.isEmpty())
            QCOMPARE(exportChart(p->scaleChart(), QDir(dir).filePath(QStringLiteral("exported-loss-scale.png"))), QString());
        // A resize redraws at the new width without any other prompt.
        viewer.resize(900, 900);
        settle(viewer);
        for (ChartView* c : p->charts()) QCOMPARE(c->queriedColumns(), std::max(1, c->axisRect()->width() / 2));
        checkDrawn(p->lossChart(), graphNamed(p->lossChart(), QStringLiteral("loss")), stepRows(m_long, &StepRecord::loss), 1,
                   true, QStringLiteral("viewer loss, narrower"));
    }

    void aComparisonOpensAsRecorded() {
        auto store = std::make_shared<RunStore>(m_path);
        CompareView view(store);
        QCOMPARE(view.setRuns({m_long, m_other}), QString());
        view.resize(1300, 900);
        view.show();
        settle(view);
        saveFirstPicture(view, QStringLiteral("compare-opened.png"));
        for (ChartView* c : view.charts()) QCOMPARE(c->queriedColumns(), std::max(1, c->axisRect()->width() / 2));
        for (std::int64_t id : {m_long, m_other}) {
            const QString name = QString::fromStdString(RunStore(m_path, true).run(id).name);
            checkDrawn(view.lossChart(), graphNamed(view.lossChart(), name + QStringLiteral(" (raw)")),
                       stepRows(id, &StepRecord::loss), 1, true, name + QStringLiteral(": compared loss"));
            checkDrawn(view.scaleChart(), graphNamed(view.scaleChart(), name), stepRows(id, &StepRecord::loss_scale), 1, false,
                       name + QStringLiteral(": compared loss scale"));
            checkDrawn(view.throughputChart(), graphNamed(view.throughputChart(), name + QStringLiteral(" (raw)")),
                       stepRows(id, &StepRecord::samples_per_s), 1, true, name + QStringLiteral(": compared throughput"));
        }
    }

    // The same at the chart's level: a ChartView filled before it is shown draws at its width.
    void aChartFilledUnseenDrawsAtItsWidth() {
        LodSeries s;
        for (int i = 0; i < 20000; ++i) s.append(i, std::sin(i * 0.01) + 0.001 * (i % 7));
        ChartView chart(QStringLiteral("value"));
        chart.addSeries(&s, QStringLiteral("s"), seriesColor(0), GraphStyle::line);
        chart.setXRange(QCPRange(0, 19999));
        chart.refreshData(true);
        chart.resize(1000, 300);
        chart.show();
        settle(chart);
        QCOMPARE(chart.queriedColumns(), chart.axisRect()->width() / 2);
        QVERIFY2(chart.graph(0)->dataCount() >= chart.axisRect()->width() / 2,
                 qPrintable(QString::number(chart.graph(0)->dataCount())));
    }
};

QTEST_MAIN(TestRecordedCharts)
#include "test_recorded_charts.moc"
