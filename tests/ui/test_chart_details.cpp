// The charts' details that make them read right: a log loss axis with at least three labelled
// ticks whatever the loss spans, exports without the hover crosshair and with the step axis
// labelled, a read-out that clears when the mouse leaves, marker labels that stay inside the plot,
// stack when they collide and stay above the data, injected overflows marked like setting
// changes, loss scales read as powers of two, a read-out that wraps rather than run past a narrow
// plot, one number style per read-out and per history column, and a reference line whose label
// covers none of the data drawn near it.
#include <QtTest>

#include <QPushButton>
#include <QTemporaryDir>

#include "charts/axis_fit.h"
#include "charts/charts_panel.h"
#include "charts/marker_layout.h"
#include "charts/number_format.h"
#include "export/chart_export.h"
#include "history/run_table_model.h"
#include "series/run_series.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// A run whose loss moves between `lo` and `hi` (a slow wave), with a growing loss scale.
void fill(RunSeries& s, std::int64_t steps, double lo = 0.3, double hi = 0.6) {
    s.reset({"fc1", "fc2"});
    for (std::int64_t i = 0; i < steps; ++i) {
        StepRecord r;
        r.step = i;
        r.loss = lo + (hi - lo) * (0.5 + 0.5 * std::sin(0.01 * static_cast<double>(i)));
        r.loss_scale = std::ldexp(1.0, 16 + static_cast<int>(i * 2 / steps));
        r.samples_per_s = 1000;
        r.memory.parameters = 1 << 20;
        s.addStep(r);
        for (int l = 0; l < 2; ++l) {
            LayerSample ls;
            ls.step = i;
            ls.layer = l;
            ls.frac_underflow = 0.01;
            s.addLayerSample(ls);
        }
    }
}

Event settingChange(std::int64_t step, const char* key, const char* value) {
    Event e;
    e.step = step;
    e.kind = EventKind::setting_change;
    e.data_json = QStringLiteral(R"({"key": "%1", "old": "auto", "new": "%2"})").arg(QLatin1String(key), QLatin1String(value)).toStdString();
    return e;
}

// The notice Trainer::inject_non_finite leaves.
Event injection(std::int64_t step, const char* layer) {
    Event e;
    e.step = step;
    e.kind = EventKind::notice;
    e.message = "Injected inf into a layer's weight gradient.";
    e.data_json = QStringLiteral(R"({"action": "inject_non_finite", "layer": "%1", "value": "inf"})").arg(QLatin1String(layer)).toStdString();
    return e;
}

struct Shown {
    RunSeries series;
    ChartsPanel panel;
    explicit Shown(std::int64_t steps, int width = 1100, int height = 900) {
        fill(series, steps);
        panel.resize(width, height);
        panel.show();
        panel.setSeries(&series);
        settle();
    }
    void settle() {
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
    }
};

QImage exported(QCustomPlot* plot, const QString& path) {
    const QString error = exportChart(plot, path, {600, 300, 1});
    if (!error.isEmpty()) qWarning() << error;
    return QImage(path);
}

// The tick labels of `axis` inside its range, and their pixels.
QVector<double> ticksInside(QCPAxis* axis) {
    QVector<double> out;
    const QCPRange r = axis->range();
    for (double t : axis->tickVector())
        if (t >= r.lower && t <= r.upper) out << t;
    return out;
}

// Step `i` of a run at a flat loss whose memory read-out has all six categories.
StepRecord memoryStep(std::int64_t i) {
    StepRecord r;
    r.step = i;
    r.loss = 0.5;
    r.loss_scale = 65536;
    r.samples_per_s = 1000;
    r.memory.parameters = 472'908;
    r.memory.master_weights = 935'332;
    r.memory.gradients = 472'908;
    r.memory.optimizer_state = 1'881'145;
    r.memory.activations = 803'850;
    r.memory.workspace = 234'461;
    return r;
}

}  // namespace

class TestChartDetails : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // The ticker alone, over ranges a loss takes: at least three ticks inside, a label apart.
    void decadeTickerGivesThreeTicks_data() {
        QTest::addColumn<double>("lo");
        QTest::addColumn<double>("hi");
        QTest::newRow("0.3..0.6") << 0.3 << 0.6;
        QTest::newRow("0.23..0.39") << 0.23 << 0.39;
        QTest::newRow("0.05..0.9") << 0.05 << 0.9;
        QTest::newRow("9..15") << 9.0 << 15.2;
        QTest::newRow("1e-5..3e-5") << 1e-5 << 3e-5;
        QTest::newRow("0.01..10") << 0.01 << 10.0;
        QTest::newRow("1e-6..1") << 1e-6 << 1.0;
    }
    void decadeTickerGivesThreeTicks() {
        QFETCH(double, lo);
        QFETCH(double, hi);
        DecadeLogTicker ticker;
        ticker.setTickCount(4);
        ticker.setRoom({200, 15});
        QVector<double> ticks;
        QVector<QString> labels;
        ticker.generate(QCPRange(lo, hi), QLocale::c(), QLatin1Char('e'), 0, ticks, nullptr, &labels);
        int inside = 0;
        double previous = 0;
        for (double t : ticks) {
            if (t < lo || t > hi) continue;
            ++inside;
            if (previous > 0) QVERIFY2(200 * std::log(t / previous) / std::log(hi / lo) >= 15, "ticks closer than a label");
            previous = t;
        }
        QVERIFY2(inside >= 3, qPrintable(QStringLiteral("%1 ticks in %2..%3").arg(inside).arg(lo).arg(hi)));
        QCOMPARE(labels.size(), ticks.size());
        if (ticker.subdivided()) {
            // One style: every label is a plain number, the same number of decimals or all scientific.
            const bool scientific = labels.front().contains(QLatin1Char('e'));
            for (const QString& l : labels) {
                bool ok = false;
                QLocale::c().toDouble(l, &ok);
                QVERIFY2(ok, qPrintable(l));
                QCOMPARE(l.contains(QLatin1Char('e')), scientific);
                if (!scientific) QCOMPARE(l.section(QLatin1Char('.'), 1).size(), labels.front().section(QLatin1Char('.'), 1).size());
            }
        }
    }

    // On the chart: a loss within one decade on a log axis is labelled at three ticks or more.
    void logLossAxisIsLabelled() {
        Shown shown(2000);
        shown.panel.setLogLoss(true);
        shown.settle();
        ChartView* loss = shown.panel.lossChart();
        loss->replot();
        QVERIFY(loss->logarithmic());
        const QVector<double> ticks = ticksInside(loss->yAxis);
        QVERIFY2(ticks.size() >= 3, qPrintable(QStringLiteral("%1 ticks, range %2..%3").arg(ticks.size())
                                                   .arg(loss->yAxis->range().lower).arg(loss->yAxis->range().upper)));
    }

    // An export has no crosshair or read-out, and its step axis labelled; the screen keeps both.
    void exportsLookAsWithoutAMouse() {
        Shown shown(1000);
        ChartView* loss = shown.panel.lossChart();
        // The panel numbers the steps on every chart and names the axis on its bottom one only.
        QVERIFY(loss->xAxis->tickLabels());
        QVERIFY(loss->xAxis->label().isEmpty());
        const QImage plain = exported(loss, m_dir.filePath(QStringLiteral("plain.png")));
        QVERIFY(!plain.isNull());
        // Hovering: the crosshair and read-out are on screen, not in the file.
        shown.panel.lossChart()->setCrosshair(400);
        QVERIFY(loss->crosshairShown());
        const QImage hovered = exported(loss, m_dir.filePath(QStringLiteral("hovered.png")));
        QCOMPARE(hovered, plain);
        QVERIFY(loss->crosshairShown());  // restored
        QVERIFY(loss->xAxis->tickLabels());
        QVERIFY(loss->xAxis->label().isEmpty());
        loss->setCrosshair(qQNaN());
        // The file has the step axis labelled: as the chart looks with its labels on.
        loss->setXTickLabels(true);
        const QImage labelled = exported(loss, m_dir.filePath(QStringLiteral("labelled.png")));
        QCOMPARE(plain, labelled);
        loss->setXTickLabels(true, false);
        // In a stack, the bottom chart carries the step axis.
        ChartView* scale = shown.panel.scaleChart();
        QCOMPARE(exportChartsStacked({loss, scale}, m_dir.filePath(QStringLiteral("stack.png")), {600, 300, 1}), QString());
        scale->setXTickLabels(true);
        QCOMPARE(exportChartsStacked({loss, scale}, m_dir.filePath(QStringLiteral("stack-labelled.png")), {600, 300, 1}), QString());
        QCOMPARE(QImage(m_dir.filePath(QStringLiteral("stack.png"))), QImage(m_dir.filePath(QStringLiteral("stack-labelled.png"))));
        QCOMPARE(loss->xLabel(), QStringLiteral("step"));
    }

    // Hovering shows the read-out on every chart; leaving the chart clears them all.
    void readoutClearsOnLeave() {
        Shown shown(1000);
        QVERIFY(QTest::qWaitForWindowExposed(&shown.panel));
        ChartView* loss = shown.panel.lossChart();
        const QPoint inside = loss->axisRect()->rect().center();
        QTest::mouseMove(loss, inside);
        QTRY_VERIFY(loss->crosshairShown());
        for (ChartView* c : shown.panel.charts()) {
            QVERIFY(c->crosshairShown());
            QVERIFY(c->readoutShown().startsWith(QStringLiteral("step ")));
        }
        // Out to a button beside the charts: Qt sends the chart its leave event.
        auto* button = shown.panel.findChild<QPushButton*>();
        QVERIFY(button);
        QTest::mouseMove(button, button->rect().center());
        QTRY_VERIFY(!loss->crosshairShown());
        for (ChartView* c : shown.panel.charts()) {
            QVERIFY(!c->crosshairShown());
            QVERIFY(c->readoutShown().isEmpty());
        }
        // And a leave straight out of the window.
        QTest::mouseMove(loss, inside);
        QTRY_VERIFY(loss->crosshairShown());
        QEvent leave(QEvent::Leave);
        QCoreApplication::sendEvent(loss, &leave);
        for (ChartView* c : shown.panel.charts()) QVERIFY(!c->crosshairShown());
        // And when another window comes to the front (a dialog, another application), which may
        // leave the chart without a leave event.
        shown.panel.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&shown.panel));
        QTest::mouseMove(loss, inside + QPoint(10, 0));
        QTRY_VERIFY(loss->crosshairShown());
        QWidget other;
        other.resize(200, 100);
        other.show();
        other.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&other));
        QTRY_VERIFY(!loss->crosshairShown());
        for (ChartView* c : shown.panel.charts()) QVERIFY(c->readoutShown().isEmpty());
    }

    // The memory read-out names six categories, each with its unit: on a chart too narrow for one
    // line it wraps, every value whole and inside the plot, none cut off at the plot's edge.
    void readoutWrapsToFitThePlot() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        for (std::int64_t i = 0; i < 400; ++i) {
            series.addStep(memoryStep(i));
        }
        ChartsPanel panel;
        panel.resize(620, 900);
        panel.show();
        panel.setSeries(&series);
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        ChartView* memory = panel.memoryChart();
        const QString oneLine = memory->readoutText(200);
        for (const char* category :
             {"parameters", "master weights", "gradients", "optimizer state", "activations", "workspace"})
            QVERIFY2(oneLine.contains(QStringLiteral("%1 ").arg(QLatin1String(category))), qPrintable(oneLine));
        QCOMPARE(oneLine.count(QStringLiteral(" MiB")), 6);
        memory->setCrosshair(200);
        const QString shown = memory->readoutShown();
        QCPItemText* box = nullptr;
        for (int i = 0; i < memory->itemCount(); ++i)
            if (auto* t = qobject_cast<QCPItemText*>(memory->item(i)); t && t->visible() && t->text() == shown) box = t;
        QVERIFY(box);
        const QStringList lines = shown.split(QLatin1Char('\n'));
        QVERIFY2(lines.size() >= 2, qPrintable(shown));        // one line would be wider than this plot
        QCOMPARE(lines.join(QStringLiteral("   ")), oneLine);  // the same values, broken only between them
        const QFontMetrics fm(box->font());
        const int room = memory->axisRect()->width() - box->padding().left() - box->padding().right();
        for (const QString& line : lines)
            QVERIFY2(fm.horizontalAdvance(line) <= room,
                     qPrintable(QStringLiteral("%1: %2 px in %3").arg(line).arg(fm.horizontalAdvance(line)).arg(room)));
        // Wide enough, one line.
        QCOMPARE(wrapReadout({QStringLiteral("step 1"), QStringLiteral("loss 0.5")}, fm, 10'000),
                 QStringLiteral("step 1   loss 0.5"));
        QCOMPARE(wrapReadout({QStringLiteral("step 1"), QStringLiteral("loss 0.5")}, fm, 1),
                 QStringLiteral("step 1\nloss 0.5"));
    }

    // Labels along the top: inside the plot near its right edge (left of the line), stacked when
    // they would collide, and the data below them.
    void markerLabelsStayInsideAndApart() {
        Shown shown(2000);
        shown.series.addEvent(settingChange(300, "precision.layers.fc1", "fp16"));
        shown.series.addEvent(settingChange(320, "precision.autocast", "bf16"));  // collides with the first
        shown.series.addEvent(injection(1000, "fc2"));
        shown.series.addEvent(settingChange(1990, "precision.layers.fc2", "fp8"));  // at the right edge
        shown.settle();
        for (ChartView* c : shown.panel.charts()) {
            c->replot();
            QCOMPARE(c->markerCount(), std::size_t{4});
            const QRectF plot = c->axisRect()->rect();
            std::vector<QRectF> rects;
            for (std::size_t i = 0; i < c->markerCount(); ++i) {
                const QRectF r = c->markerLabelRect(i);
                // Every label is shown where the chart has the height for two rows of them.
                if (c != shown.panel.lossChart() && r.isEmpty()) continue;
                QVERIFY2(!r.isEmpty(), qPrintable(c->markerLabelText(i)));
                QVERIFY2(r.left() >= plot.left() - 0.5 && r.right() <= plot.right() + 1.5,
                         qPrintable(QStringLiteral("%1: label %2 at %3..%4, plot %5..%6").arg(c->valueLabel(), c->markerLabelText(i))
                                        .arg(r.left()).arg(r.right()).arg(plot.left()).arg(plot.right())));
                QVERIFY(r.top() >= plot.top());
                rects.push_back(r);
            }
            for (std::size_t i = 0; i < rects.size(); ++i)
                for (std::size_t j = i + 1; j < rects.size(); ++j)
                    QVERIFY2(!rects[i].intersects(rects[j]),
                             qPrintable(QStringLiteral("%1: labels %2 and %3 overlap").arg(c->valueLabel(), c->markerLabelText(i), c->markerLabelText(j))));
            QCOMPARE(c->markerLabelText(3), QStringLiteral("fc2=fp8"));
            if (c->markerLabelRect(3).isEmpty()) continue;
            QVERIFY(c->markerLabelRect(3).right() <= c->xAxis->coordToPixel(1990) + 0.5);  // flipped left of its line
        }
        QVERIFY(shown.panel.lossChart()->markerLabelRows() == 2);
        // The loss scale's line stays below the labels.
        ChartView* scale = shown.panel.scaleChart();
        double bottom = 0;
        for (std::size_t i = 0; i < scale->markerCount(); ++i) bottom = std::max(bottom, scale->markerLabelRect(i).bottom());
        const double top = scale->yAxis->coordToPixel(std::ldexp(1.0, 17));  // the highest scale drawn
        QVERIFY2(top > bottom, qPrintable(QStringLiteral("scale line at %1 px, labels down to %2 px").arg(top).arg(bottom)));
    }

    void injectedOverflowsAreMarked() {
        RunSeries s;
        fill(s, 100);
        s.addEvent(injection(40, "fc2"));
        QCOMPARE(s.markers().size(), std::size_t{1});
        QCOMPARE(s.markers()[0].step, std::int64_t{40});
        QCOMPARE(s.markers()[0].kind, ChartMarker::Kind::injection);
        QCOMPARE(QString::fromStdString(s.markers()[0].label), QStringLiteral("inject inf\u2192fc2"));
        Event notice;
        notice.kind = EventKind::notice;
        notice.data_json = "{}";
        s.addEvent(notice);  // other notices are not markers
        QCOMPARE(s.markers().size(), std::size_t{1});
    }

    void placementOfLabels() {
        // Right of each line; near the right edge, left of it; a collision goes a row down.
        const auto placed = placeMarkerLabels({100, 110, 590, 900}, {60, 60, 60, 60}, 50, 600, 3);
        QVERIFY(placed[0].visible && !placed[0].flipped && placed[0].row == 0 && placed[0].left == 103);
        QVERIFY(placed[1].visible && placed[1].row == 1);
        QVERIFY(placed[2].visible && placed[2].flipped && placed[2].left + 60 <= 590);
        QVERIFY(!placed[3].visible);  // its line is outside the plot
        QCOMPARE(markerLabelRows(placed), 2);
        // No row left: the label is left out rather than drawn over another.
        const auto crowded = placeMarkerLabels({100, 110}, {60, 60}, 50, 600, 1);
        QVERIFY(crowded[0].visible && !crowded[1].visible);
    }

    // One tick style per linear axis: a throughput axis up to a million reads "1000000", "500000",
    // "0", not "1e+06" beside "500000" (QCustomPlot's "g").
    void linearTicksShareOneStyle() {
        QCustomPlot plot;  // the ticker ChartView gives a linear axis, on an axis of its own
        plot.resize(500, 300);
        plot.yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new SpacedTicker));
        plot.yAxis->setNumberFormat(QStringLiteral("g"));
        plot.yAxis->setNumberPrecision(6);
        plot.yAxis->setRange(0, 1.1e6);
        plot.replot();
        const QVector<QString> labels = plot.yAxis->tickVectorLabels();
        QVERIFY(labels.size() >= 2);
        const QString all = QStringList(labels.begin(), labels.end()).join(QStringLiteral(", "));
        for (const QString& l : labels) QVERIFY2(!l.contains(QLatin1Char('e')), qPrintable(all));
        QVERIFY2(labels.contains(plot.locale().toString(1e6, 'f', 0)), qPrintable(all));
        plot.yAxis->setRange(0, 1.2);  // not whole: "g" as before
        plot.replot();
        QVERIFY(plot.yAxis->tickVectorLabels().contains(QStringLiteral("0.5")));
    }

    // Lesson 15's chart: fc1 and fc2 just below FP16's unit roundoff, fc3 far below. The line's
    // label is the legend's last entry, outside the plot: it covers none of the points drawn.
    void referenceLabelCoversNoData() {
        RunSeries series;
        series.reset({"fc1", "fc2", "fc3"});
        for (std::int64_t i = 0; i < 300; ++i) {
            StepRecord r;
            r.step = i;
            r.loss = 1;
            r.loss_scale = 65536;
            series.addStep(r);
            const double wave = 0.1 * std::sin(0.05 * static_cast<double>(i));
            series.addOpSteps({{i, "fc1", accumulationErrorStat, 4.2e-4 * (1 + wave)},
                               {i, "fc2", accumulationErrorStat, 3.9e-4 * (1 - wave)},
                               {i, "fc3", accumulationErrorStat, 3e-8 * (1 + wave)},
                               {i, "fc1", accumulationErrorWgradStat, 4.6e-4},
                               {i, "fc2", accumulationErrorWgradStat, 2.5e-4}});
        }
        for (const QSize size : {QSize(1100, 900), QSize(700, 600)}) {
            ChartsPanel panel;
            panel.resize(size);
            panel.show();
            panel.setSeries(&series);
            for (int i = 0; i < 4; ++i) {
                QCoreApplication::processEvents();
                panel.redrawNow(true);
            }
            ChartView* chart = panel.accumulationChart();
            QVERIFY(!chart->isHidden());
            chart->replot();
            const QRect label = chart->referenceLabelRect();
            QVERIFY2(!label.isEmpty(), "the reference line is not named");
            QCOMPARE(chart->referenceLabelText(), QStringLiteral("FP16 unit roundoff 2⁻¹¹"));
            QVERIFY(label.bottom() <= chart->height() && label.right() <= chart->width());
            QVERIFY(chart->yAxis->range().contains(ChartsPanel::fp16UnitRoundoff));
            // The line itself has headroom: a band below the plot's top border, not on it (over
            // four decades the data's 1.3× padding alone left it two or three pixels down).
            const double linePx = chart->yAxis->coordToPixel(ChartsPanel::fp16UnitRoundoff);
            QVERIFY2(linePx - chart->axisRect()->top() >= std::min(8.0, 0.15 * chart->axisRect()->height()),
                     qPrintable(QStringLiteral("the FP16 unit roundoff line is %1 px below the top of a %2 px plot")
                                    .arg(linePx - chart->axisRect()->top())
                                    .arg(chart->axisRect()->height())));
            int points = 0;
            for (int g = 0; g < chart->graphCount(); ++g) {
                QCPGraph* graph = chart->graph(g);
                for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
                    const QPointF at(chart->xAxis->coordToPixel(it->key), chart->yAxis->coordToPixel(it->value));
                    if (!chart->axisRect()->rect().contains(at.toPoint())) continue;  // clipped away
                    ++points;
                    QVERIFY2(!QRectF(label).adjusted(-2, -2, 2, 2).contains(at),
                             qPrintable(QStringLiteral("%1 at step %2 under the label").arg(graph->name()).arg(it->key)));
                }
            }
            QVERIFY(points > 100);
            // Nor the line itself: the label is outside the plot.
            QVERIFY(!label.intersects(chart->axisRect()->rect()));
        }
    }

    // One number style per read-out: the memory categories all with the decimals that give the
    // whole stack 4 significant digits (never "0.892" beside "0.7666"), and a chart's lines alike.
    void readoutHasOneStyle() {
        QCOMPARE(ReadoutNumberStyle::forLargest(4.58).format(0.8920), QStringLiteral("0.892"));
        QCOMPARE(ReadoutNumberStyle::forLargest(4.58).format(0.76659), QStringLiteral("0.767"));
        QCOMPARE(ReadoutNumberStyle::forLargest(20.1).format(0.38), QStringLiteral("0.38"));
        QCOMPARE(ReadoutNumberStyle::forLargest(85012).format(84000), QStringLiteral("84000"));
        QCOMPARE(ReadoutNumberStyle::forValues({3.5e-4, 2.9e-8}).format(2.9e-8), QStringLiteral("2.900e-08"));
        QCOMPARE(ReadoutNumberStyle::forValues({0, 0}).format(0), QStringLiteral("0"));
        QCOMPARE(ReadoutNumberStyle::forLargest(1).format(qInf()), QStringLiteral("inf"));

        RunSeries series;
        series.reset({"fc1", "fc2"});
        for (std::int64_t i = 0; i < 100; ++i) {
            series.addStep(memoryStep(i));
            for (int l = 0; l < 2; ++l) {
                LayerSample ls;
                ls.step = i;
                ls.layer = l;
                ls.frac_underflow = l == 0 ? 0.0002 : 0.0000123;
                series.addLayerSample(ls);
            }
        }
        ChartsPanel panel;
        panel.resize(1100, 900);
        panel.show();
        panel.setSeries(&series);
        panel.redrawNow(true);
        // "name 1.234 unit": every value's decimals, from the parts of a read-out.
        const auto decimals = [](const QString& readout, const QString& unit) {
            QList<int> out;
            for (const QString& part : readout.split(QStringLiteral("   "))) {
                if (!part.endsWith(unit)) continue;
                const QString number = part.left(part.size() - unit.size()).section(QLatin1Char(' '), -1);
                out << (number.contains(QLatin1Char('.')) ? static_cast<int>(number.section(QLatin1Char('.'), 1).size()) : 0);
            }
            return out;
        };
        const QString memory = panel.memoryChart()->readoutText(50);
        const QList<int> memoryDecimals = decimals(memory, QStringLiteral(" MiB"));
        QCOMPARE(memoryDecimals.size(), 6);
        for (int d : memoryDecimals) QVERIFY2(d == 3, qPrintable(memory));  // a 4.58 MiB stack
        QVERIFY2(memory.contains(QStringLiteral("parameters 0.451 MiB")), qPrintable(memory));
        const QString underflow = panel.underflowChart()->readoutText(50);
        const QList<int> underflowDecimals = decimals(underflow, QStringLiteral("%"));
        QCOMPARE(underflowDecimals.size(), 2);
        QVERIFY2(underflowDecimals[0] == underflowDecimals[1], qPrintable(underflow));
    }

    void lossScaleReadsAsAPowerOfTwo() {
        QCOMPARE(formatPowerOfTwo(131072), QStringLiteral("2^17 (131072)"));
        QCOMPARE(formatPowerOfTwo(0.125), QStringLiteral("2^-3 (0.125)"));
        QCOMPARE(formatPowerOfTwo(1000), QStringLiteral("1000"));
        Shown shown(1000);
        const QString readout = shown.panel.scaleChart()->readoutText(10);
        QVERIFY2(readout.contains(QStringLiteral("scale 2^16 (65536)")), qPrintable(readout));
    }

    // The history's final loss: one style for the whole column, chosen from its values; sorting
    // stays numeric.
    void finalLossColumnHasOneStyle_data() {
        QTest::addColumn<QList<double>>("losses");
        QTest::addColumn<QStringList>("shown");
        QTest::newRow("small") << QList<double>{6.659e-05, 1.008e-04, 0.25} << QStringList{"6.659e-05", "1.008e-04", "2.500e-01"};
        QTest::newRow("ordinary") << QList<double>{0.41, 2.3, 0.0523} << QStringList{"0.41000", "2.30000", "0.05230"};
        QTest::newRow("tenths and above") << QList<double>{0.5, 2.0} << QStringList{"0.5000", "2.0000"};
    }
    void finalLossColumnHasOneStyle() {
        QFETCH(QList<double>, losses);
        QFETCH(QStringList, shown);
        std::vector<RunRow> runs;
        for (int i = 0; i < losses.size(); ++i) {
            RunRow r;
            r.id = i + 1;
            r.name = "run" + std::to_string(i);
            r.final_loss = losses[i];
            runs.push_back(r);
        }
        RunTableModel model;
        model.setRuns(runs);
        for (int i = 0; i < losses.size(); ++i) {
            const QModelIndex cell = model.index(i, RunTableModel::FinalLoss);
            QCOMPARE(cell.data().toString(), shown[i]);
            QCOMPARE(cell.data(RunTableModel::SortRole).toDouble(), losses[i]);
        }
    }
};

QTEST_MAIN(TestChartDetails)
#include "test_chart_details.moc"
