// ChartsPanel and ChartView on a synthetic run (no training): the charts draw a bounded number of
// points whatever the run's length, share one step axis (zoom one, all follow; reset follows the
// run again), centre on an event's step, label setting changes on every chart, read out values
// under the crosshair, and take their colours from the palette. However short the charts, their
// y tick labels never overlap and their rotated axis labels are shown whole or not at all. Every
// chart numbers its steps (the charts scroll in a short window); an underflow of zeros keeps
// the empty chart's 0..1 % with its line above the axis; a planned accumulation-error chart is
// there, with its reference line, before the run starts.
#include <QtTest>

#include <QLabel>

#include "charts/charts_panel.h"
#include "charts/number_format.h"
#include "config/layer_info.h"
#include "series/run_series.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {
void fill(RunSeries& s, std::int64_t steps) {
    s.reset({"fc1", "fc2", "fc3"});
    for (std::int64_t i = 0; i < steps; ++i) {
        StepRecord r;
        r.step = i;
        r.time_s = 0.001 * static_cast<double>(i);
        r.loss = 1.0 + 0.5 * std::sin(0.01 * static_cast<double>(i)) + 0.01 * static_cast<double>(i % 13);
        r.loss_scale = i < steps / 2 ? 65536 : 32768;
        r.overflow = r.skipped = i == steps / 2 - 1;
        r.samples_per_s = 1000 + static_cast<double>(i % 17);
        r.memory.parameters = 1 << 20;
        r.memory.master_weights = 2 << 20;
        r.memory.modelled = true;
        s.addStep(r);
        for (int l = 0; l < 3; ++l) {
            LayerSample ls;
            ls.step = i;
            ls.layer = l;
            ls.frac_underflow = 0.001 * static_cast<double>((i + l) % 5);
            s.addLayerSample(ls);
        }
    }
    // Test loss and accuracy give the loss chart four legend items, so a wrap into three columns
    // leaves empty cells in the legend's grid (a narrow window once crashed on them).
    for (std::int64_t at : {steps / 3, steps - 1}) s.addEval({at, "test", 0.8, 0.7});
    Event e;
    e.step = steps / 4;
    e.kind = EventKind::setting_change;
    e.data_json = R"({"key": "precision.layers.fc2", "old": "auto", "new": "bf16"})";
    s.addEvent(e);
}
// A panel showing 500 steps at a size, after the layouts that settle its legends and axes (the
// first layout tells each chart what its header needs; the splitter then lays out again).
struct ShownPanel {
    RunSeries series;
    ChartsPanel panel;
    ShownPanel(int width, int height) {
        fill(series, 500);
        panel.resize(width, height);
        panel.show();
        panel.setSeries(&series);
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
    }
};

// A 900x800 panel drawing `steps` steps of fill(), drawn once.
struct DrawnPanel {
    RunSeries series;
    ChartsPanel panel;
    explicit DrawnPanel(int steps) {
        fill(series, steps);
        panel.resize(900, 800);
        panel.show();
        panel.setSeries(&series);
        panel.redrawNow(true);
    }
};

}  // namespace

class TestChartsPanel : public QObject {
    Q_OBJECT
private slots:
    void drawsABoundedNumberOfPoints_data() {
        QTest::addColumn<int>("steps");
        QTest::newRow("1e3") << 1000;
        QTest::newRow("1e5") << 100000;
        QTest::newRow("1e6") << 1000000;
    }
    void hintDropsWholeParts() {
        // At 1280x800 with a lesson open the hint above the charts read "rag: pan · hover: values":
        // a right-aligned label that gave way clipped its left edge. Now it shows whole parts only.
        const QString whole = QStringLiteral("wheel: zoom · drag: pan · hover: values");
        for (const int width : {900, 560, 470, 430, 380, 320}) {
            ShownPanel shown(width, 600);
            QLabel* hint = nullptr;
            for (QLabel* label : shown.panel.findChildren<QLabel*>())
                if (label->toolTip() == whole || label->text() == whole) hint = label;
            QVERIFY(hint);
            const QString text = hint->text();
            QVERIFY2(text.isEmpty() || whole.startsWith(text), qPrintable(text));
            QVERIFY2(text.isEmpty() || text == whole || whole.mid(text.size()).startsWith(QStringLiteral(" · ")),
                     qPrintable(text));  // whole parts
            QVERIFY2(hint->fontMetrics().horizontalAdvance(text) <= hint->contentsRect().width(),
                     qPrintable(QStringLiteral("\"%1\" in %2 px at a %3 px panel").arg(text).arg(hint->contentsRect().width()).arg(width)));
            if (width == 900) QCOMPARE(text, whole);  // room for all of it
        }
    }

    void drawsABoundedNumberOfPoints() {
        QFETCH(int, steps);
        DrawnPanel drawn(steps);
        ChartsPanel& panel = drawn.panel;
        for (ChartView* c : panel.charts()) {
            if (c->isHidden()) continue;  // the op charts of a model without attention or layer norms
            const int columns = c->axisRect()->width();
            QVERIFY(columns > 100);
            // Two points per column at most, per graph (the loss chart also has its evaluations).
            QVERIFY2(c->drawnPoints() <= 2 * columns * c->graphCount(),
                     qPrintable(QStringLiteral("%1 points on %2").arg(c->drawnPoints()).arg(c->valueLabel())));
            QVERIFY(c->drawnPoints() > 0);
            QCOMPARE_EXACT(c->xAxis->range().lower, 0.0);
            QVERIFY(c->xAxis->range().upper >= steps - 1);
        }
    }

    // Short charts (a short window, the experiment form open) still show every legend whole: the
    // legend gets at least the height its entries need, and lies inside the chart; where five
    // such charts do not fit, they scroll.
    void legendsAreNeverClipped_data() {
        QTest::addColumn<int>("height");
        QTest::newRow("800 px") << 800;
        QTest::newRow("560 px") << 560;
        QTest::newRow("420 px") << 420;
        QTest::newRow("330 px") << 330;
    }
    void legendsAreNeverClipped() {
        QFETCH(int, height);
        ShownPanel shown(1000, height);
        ChartsPanel& panel = shown.panel;
        QCOMPARE(panel.height(), height);  // the charts scroll; the panel does not grow
        for (ChartView* c : panel.charts()) {
            if (c->isHidden() || !c->legend->visible()) continue;  // an op chart of a model without such ops
            c->replot();
            const QRect r = c->legend->outerRect();
            const QSize need = c->legend->minimumOuterSizeHint();
            const QString what = c->valueLabel();
            QVERIFY2(r.height() >= need.height(), qPrintable(QStringLiteral("%1: legend %2 px high, needs %3")
                                                                 .arg(what).arg(r.height()).arg(need.height())));
            QVERIFY2(r.top() >= 0 && r.bottom() <= c->height(), qPrintable(what + QStringLiteral(": legend outside")));
        }
    }

    // A narrow chart wraps its legend into more rows rather than cut its items, and shows its note
    // only where it fits beside the legend; a wide one keeps its own columns and the note.
    void legendItemsAreNeverCut_data() {
        QTest::addColumn<int>("width");
        QTest::newRow("1100 px") << 1100;
        QTest::newRow("700 px") << 700;
        QTest::newRow("560 px") << 560;
        QTest::newRow("500 px") << 500;
        QTest::newRow("440 px") << 440;
        QTest::newRow("360 px") << 360;
    }
    void legendItemsAreNeverCut() {
        QFETCH(int, width);
        ShownPanel shown(width, 900);
        ChartsPanel& panel = shown.panel;
        // As drawn by a live refresh (which sets the notes again), not after a layout of our own.
        panel.redrawNow(true);
        for (ChartView* c : panel.charts()) {
            if (c->isHidden() || !c->legend->visible()) continue;  // an op chart of a model without such ops
            const QString what = c->valueLabel();
            const QRect legendRect = c->legend->outerRect();
            QVERIFY2(legendRect.left() >= 0 && legendRect.right() <= c->width(),
                     qPrintable(what + QStringLiteral(": legend outside the chart")));
            for (int i = 0; i < c->legend->itemCount(); ++i) {
                QCPAbstractLegendItem* item = c->legend->item(i);
                if (!item) continue;  // an empty cell of the wrapped grid
                QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width(),
                         qPrintable(QStringLiteral("%1: legend item %2 is %3 px wide, needs %4")
                                        .arg(what).arg(i).arg(item->outerRect().width())
                                        .arg(item->minimumOuterSizeHint().width())));
            }
            for (QCPLayoutElement* e : c->plotLayout()->elements(true)) {
                auto* note = qobject_cast<QCPTextElement*>(e);
                if (!note || note->text().isEmpty()) continue;
                QCOMPARE(note->text(), c->noteText());  // whole, or not at all
                const int textWidth = QFontMetrics(note->font()).horizontalAdvance(note->text());
                QVERIFY2(note->outerRect().width() >= textWidth,
                         qPrintable(what + QStringLiteral(": the note is cut")));
                QVERIFY2(!note->outerRect().intersects(legendRect) || note->outerRect().right() <= legendRect.left(),
                         qPrintable(what + QStringLiteral(": the note runs into the legend")));
            }
        }
        if (width >= 1100) {  // room for everything: the memory chart's two rows of three, and its note
            ChartView* memory = panel.memoryChart();
            QCOMPARE(memory->legend->wrap(), 3);
            QVERIFY(!memory->noteText().isEmpty());
            bool noteShown = false;
            for (QCPLayoutElement* e : memory->plotLayout()->elements(true))
                if (auto* note = qobject_cast<QCPTextElement*>(e)) noteShown = noteShown || !note->text().isEmpty();
            QVERIFY(noteShown);
        }
    }

    // The underflow chart's values are percentages: its tick labels and its read-out say so,
    // however short the chart (its axis label is often hidden); other charts carry no suffix.
    void underflowValuesCarryTheirUnit() {
        ShownPanel shown(1000, 420);
        const std::vector<ChartView*> charts = shown.panel.charts();
        ChartView* underflow = charts.back();
        underflow->replot();
        const QVector<QString> labels = underflow->yAxis->tickVectorLabels();
        QVERIFY(!labels.isEmpty());
        for (const QString& l : labels) QVERIFY2(l.endsWith(QLatin1Char('%')), qPrintable(l));
        QVERIFY2(underflow->readoutText(250).contains(QLatin1Char('%')), qPrintable(underflow->readoutText(250)));
        ChartView* throughput = charts[3];
        throughput->replot();
        for (const QString& l : throughput->yAxis->tickVectorLabels()) QVERIFY(!l.endsWith(QLatin1Char('%')));
    }

    // A deep network's underflow lines are not listed in a legend that would bury the plot: past
    // ChartsPanel::underflowLegendLayers the chart draws every line, names none in its legend, and
    // says how to read them; a shallow one names each line.
    void deepNetworksNameUnderflowLinesByHover() {
        ShownPanel shallow(1000, 420);
        ChartView* chart = shallow.panel.underflowChart();
        QVERIFY(chart->legend->visible());
        QCOMPARE(chart->legend->itemCount(), 3);
        QVERIFY(chart->noteText().isEmpty());

        RunSeries deep;
        std::vector<std::string> names;
        for (std::size_t i = 0; i <= ChartsPanel::underflowLegendLayers; ++i)
            names.push_back("layer" + std::to_string(i) + ".conv1");
        deep.reset(names);
        for (std::int64_t step = 0; step < 50; ++step) {
            StepRecord r;
            r.step = step;
            r.loss = 1;
            deep.addStep(r);
            for (std::size_t l = 0; l < names.size(); ++l) {
                LayerSample ls;
                ls.step = step;
                ls.layer = static_cast<int>(l);
                ls.frac_underflow = 0.001 * static_cast<double>(l);
                deep.addLayerSample(ls);
            }
        }
        shallow.panel.setSeries(&deep);
        QCoreApplication::processEvents();
        shallow.panel.redrawNow(true);
        QCOMPARE(chart->graphCount(), static_cast<int>(names.size()));
        QVERIFY(!chart->legend->visible());
        QCOMPARE(chart->noteText(), QStringLiteral("%1 layers: hover for each one's value").arg(names.size()));
        QVERIFY2(chart->readoutText(10).contains(QStringLiteral("layer8.conv1")), qPrintable(chart->readoutText(10)));

        shallow.panel.setSeries(&shallow.series);  // back to three layers: named again
        QVERIFY(chart->legend->visible());
        QVERIFY(chart->noteText().isEmpty());
    }

    // The value axes follow the plot's height: no two tick labels overlap (their centres are at
    // least a label's height apart), a tall plot still gets several ticks, and each axis shows the
    // longest form of its label that fits along the plot (the full one whenever it fits), or none.
    void axesFitTheChartHeight_data() {
        QTest::addColumn<int>("height");
        QTest::newRow("1400 px") << 1400;
        QTest::newRow("800 px") << 800;
        QTest::newRow("560 px") << 560;
        QTest::newRow("420 px") << 420;
        QTest::newRow("330 px") << 330;
    }
    void axesFitTheChartHeight() {
        QFETCH(int, height);
        ShownPanel shown(1000, height);
        ChartsPanel& panel = shown.panel;
        for (ChartView* c : panel.charts()) {
            c->replot();
            const int plotHeight = c->axisRect()->height();
            QVERIFY(plotHeight > 0);
            for (QCPAxis* axis : {c->yAxis, c->yAxis2}) {
                if (!axis->visible() || !axis->tickLabels()) continue;
                const QString what = QStringLiteral("%1 (%2 px plot)").arg(c->valueLabel()).arg(plotHeight);
                const double labelHeight = QFontMetricsF(axis->tickLabelFont()).height();
                QVector<double> pixels;
                for (double t : axis->tickVector()) pixels.append(axis->coordToPixel(t));
                std::sort(pixels.begin(), pixels.end());
                QVERIFY2(!pixels.isEmpty(), qPrintable(what + QStringLiteral(": no tick")));
                for (int i = 1; i < pixels.size(); ++i)
                    QVERIFY2(pixels[i] - pixels[i - 1] >= labelHeight,
                             qPrintable(QStringLiteral("%1: tick labels %2 px apart, %3 px high")
                                            .arg(what)
                                            .arg(pixels[i] - pixels[i - 1])
                                            .arg(labelHeight)));
                if (plotHeight >= 8 * labelHeight)
                    QVERIFY2(pixels.size() >= 3, qPrintable(what + QStringLiteral(": too few ticks")));

                const QStringList forms = c->labelForms(axis);
                QVERIFY(!forms.isEmpty());
                const QString shown = axis->label();
                QVERIFY2(shown.isEmpty() || forms.contains(shown), qPrintable(what + QStringLiteral(": ") + shown));
                const QFontMetricsF fm(axis->labelFont());
                if (!shown.isEmpty())
                    QVERIFY2(fm.horizontalAdvance(shown) <= plotHeight,
                             qPrintable(QStringLiteral("%1: label \"%2\" is %3 px long")
                                            .arg(what, shown)
                                            .arg(fm.horizontalAdvance(shown))));
                // The longest form that fits is the one shown.
                for (const QString& form : forms) {
                    if (fm.horizontalAdvance(form) > plotHeight) continue;
                    QCOMPARE(shown, form);
                    break;
                }
            }
        }
    }

    // Every live chart names its values where its plot has room for a name: the samples/s chart's
    // short form too ("samples/s" where "samples/s (per step)" does not fit), as the loss scale's.
    void throughputAxisIsTitled_data() { axesFitTheChartHeight_data(); }
    void throughputAxisIsTitled() {
        QFETCH(int, height);
        ShownPanel shown(1000, height);
        ChartView* c = shown.panel.throughputChart();
        c->replot();
        const QFontMetricsF fm(c->yAxis->labelFont());
        if (fm.horizontalAdvance(QStringLiteral("samples/s")) <= c->axisRect()->height())
            QVERIFY2(!c->yAxis->label().isEmpty(), qPrintable(QStringLiteral("%1 px plot").arg(c->axisRect()->height())));
    }

    // A series with no steps (another experiment opened, nothing run yet) leaves no value range
    // of the run drawn before: an empty chart reads as empty, not as that run's scale.
    void emptySeriesKeepsNoOldRange() {
        DrawnPanel shown(1000);
        ChartsPanel& panel = shown.panel;
        const QCPRange drawn = panel.lossChart()->yAxis->range();
        QVERIFY(drawn.upper > 1.5 || drawn.lower != 0);
        RunSeries empty;
        panel.setSeries(&empty);
        panel.redrawNow(true);
        QCOMPARE(panel.lossChart()->yAxis->range().lower, 0.0);
        QCOMPARE(panel.lossChart()->yAxis->range().upper, 1.0);
        QVERIFY(panel.scaleChart()->logarithmic());
        QCOMPARE(panel.scaleChart()->yAxis->range().lower, 1.0);
    }

    // Every chart shown numbers the steps under it, inside its own widget, so a chart scrolled
    // away from the bottom one still says where it is (the window sizes a review used, where the
    // charts scroll); the lowest chart alone names the axis.
    void everyChartNumbersItsSteps_data() {
        QTest::addColumn<QSize>("size");
        QTest::newRow("1500x950") << QSize(1100, 780);
        QTest::newRow("1024x700") << QSize(650, 480);
        QTest::newRow("short") << QSize(900, 330);
    }
    void everyChartNumbersItsSteps() {
        QFETCH(QSize, size);
        ShownPanel shown(size.width(), size.height());
        ChartsPanel& panel = shown.panel;
        ChartView* lowest = nullptr;
        for (ChartView* c : panel.charts())
            if (!c->isHidden()) lowest = c;
        QVERIFY(lowest);
        for (ChartView* c : panel.charts()) {
            if (c->isHidden()) continue;
            c->replot();
            const QString what = c->valueLabel();
            QVERIFY2(c->xAxis->visible() && c->xAxis->tickLabels(), qPrintable(what));
            int labelled = 0;
            const QVector<double> ticks = c->xAxis->tickVector();
            const QVector<QString> labels = c->xAxis->tickVectorLabels();
            for (int i = 0; i < ticks.size(); ++i)
                labelled += c->xAxis->range().contains(ticks[i]) && !labels.value(i).isEmpty();
            QVERIFY2(labelled >= 2, qPrintable(QStringLiteral("%1: %2 step labels").arg(what).arg(labelled)));
            // The labels fit under the plot, inside the chart.
            const double labelHeight = QFontMetricsF(c->xAxis->tickLabelFont()).height();
            QVERIFY2(c->axisRect()->bottom() + labelHeight <= c->height(),
                     qPrintable(QStringLiteral("%1: plot ends at %2 of %3 px").arg(what).arg(c->axisRect()->bottom()).arg(c->height())));
            QCOMPARE(c->xAxis->label().isEmpty(), c != lowest);
        }
        QCOMPARE(lowest->xAxis->label(), QStringLiteral("step"));
    }

    // No underflow at all: the chart keeps the empty chart's 0..1 % and draws its lines above the
    // axis, not on it (nor on a range made up around nothing, 0..0.075 %).
    void allZeroUnderflowKeepsADefaultRange() {
        RunSeries s;
        s.reset({"fc1", "fc2"});
        for (std::int64_t i = 0; i < 200; ++i) {
            StepRecord r;
            r.step = i;
            r.loss = 1;
            r.loss_scale = 65536;
            r.samples_per_s = 1000;
            s.addStep(r);
            for (int l = 0; l < 2; ++l) {
                LayerSample ls;
                ls.step = i;
                ls.layer = l;
                ls.frac_underflow = 0;
                s.addLayerSample(ls);
            }
        }
        ChartsPanel panel;
        panel.resize(1000, 900);
        panel.show();
        panel.setSeries(&s);
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
        ChartView* underflow = panel.underflowChart();
        underflow->replot();
        QVERIFY(underflow->drawnPoints() > 0);
        const QCPRange r = underflow->yAxis->range();
        QVERIFY2(r.lower < 0 && r.upper == 1.0, qPrintable(QStringLiteral("%1..%2").arg(r.lower).arg(r.upper)));
        const double zero = underflow->yAxis->coordToPixel(0);
        QVERIFY2(zero <= underflow->axisRect()->bottom() - 2,
                 qPrintable(QStringLiteral("zero at %1 px, axis at %2 px").arg(zero).arg(underflow->axisRect()->bottom())));
        QVERIFY(underflow->yAxis->tickVectorLabels().contains(QStringLiteral("1%")));
        // Some underflow: the range is the data's again, from zero, and zeros still sit above the axis.
        LayerSample ls;
        ls.step = 200;
        ls.layer = 0;
        ls.frac_underflow = 0.0005;
        s.addLayerSample(ls);
        panel.redrawNow(true);
        QVERIFY(underflow->yAxis->range().upper < 0.1);
        QVERIFY(underflow->yAxis->range().upper > 0.05);
        QVERIFY(underflow->yAxis->coordToPixel(0) <= underflow->axisRect()->bottom() - 2);
    }

    // The experiment plans accumulation errors (train.accumulation_error): the chart is there
    // before the run's first step, empty, with its axis in the reference line's range and the
    // line named in its legend; a plan without them hides it again.
    void plannedAccumulationChartShowsBeforeTheRun() {
        RunSeries notStarted;
        notStarted.reset({});
        ChartsPanel panel;
        panel.resize(1000, 900);
        panel.show();
        panel.setSeries(&notStarted);
        QVERIFY(panel.accumulationChart()->isHidden());
        std::vector<LayerInfo> layers(3);
        for (int i = 0; i < 3; ++i) {
            layers[static_cast<std::size_t>(i)].name = "fc" + std::to_string(i + 1);
            layers[static_cast<std::size_t>(i)].kind = "linear";
        }
        const auto planned = accumulationStatsOf(layers);
        QCOMPARE(planned.size(), std::size_t{6});  // each layer's forward and weight-gradient sums
        QCOMPARE(planned[1], (std::pair<std::string, std::string>{"fc1", accumulationErrorWgradStat}));
        panel.setPlannedOpStats(planned);
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
        ChartView* chart = panel.accumulationChart();
        QVERIFY(!chart->isHidden());
        QVERIFY(chart->logarithmic());
        QVERIFY(chart->yAxis->range().contains(ChartsPanel::fp16UnitRoundoff));
        chart->replot();
        QVERIFY(!chart->referenceLabelRect().isEmpty());
        QVERIFY(chart->referenceLabelText().contains(QStringLiteral("roundoff")));
        // The run starts: its series has no accumulation error yet, and the chart stays.
        RunSeries started;
        started.reset({"fc1", "fc2", "fc3"});
        panel.setSeries(&started);
        QVERIFY(!chart->isHidden());
        started.addOpSteps({{0, "fc1", accumulationErrorStat, 3e-4}});
        panel.redrawNow(true);
        QCOMPARE(chart->graphCount(), 1);
        // Another experiment, without them.
        panel.setPlannedOpStats({});
        panel.setSeries(&notStarted);
        QVERIFY(chart->isHidden());
        QVERIFY(panel.underflowChart()->xAxis->label() == QStringLiteral("step"));
    }

    void oneStepAxisForAllCharts() {
        RunSeries s;
        fill(s, 10000);
        ChartsPanel panel;
        panel.resize(900, 800);
        panel.show();
        panel.setSeries(&s);
        QVERIFY(panel.following());
        // A zoom or pan on one chart (QCustomPlot sets the range) moves them all.
        panel.memoryChart()->xAxis->setRange(1000, 2000);
        QVERIFY(!panel.following());
        for (ChartView* c : panel.charts()) {
            QCOMPARE(c->xAxis->range().lower, 1000.0);
            QCOMPARE(c->xAxis->range().upper, 2000.0);
        }
        panel.centerOn(5000);
        for (ChartView* c : panel.charts()) QCOMPARE(c->xAxis->range().center(), 5000.0);
        QCOMPARE(panel.lossChart()->xAxis->range().size(), 1000.0);  // the zoom is kept
        panel.resetView();
        QVERIFY(panel.following());
        QVERIFY(panel.underflowChart()->xAxis->range().upper >= 9999);
    }

    void settingChangesAreLabelledOnEveryChart() {
        DrawnPanel drawn(2000);
        ChartsPanel& panel = drawn.panel;
        for (ChartView* c : panel.charts()) {
            QCOMPARE(c->markerCount(), std::size_t{1});
            bool labelled = false;
            for (int i = 0; i < c->itemCount(); ++i)
                if (auto* t = qobject_cast<QCPItemText*>(c->item(i)); t && t->text() == QStringLiteral("fc2=bf16"))
                    labelled = true;
            QVERIFY(labelled);
        }
    }

    void crosshairReadsOutTheValues() {
        DrawnPanel drawn(2000);
        ChartsPanel& panel = drawn.panel;
        const RunSeries& s = drawn.series;
        const QString loss = panel.lossChart()->readoutText(100);
        QVERIFY2(loss.startsWith(QStringLiteral("step 100")), qPrintable(loss));
        const ReadoutNumberStyle style = ReadoutNumberStyle::forValues({s.loss().y(100), s.lossSmoothed().y(100)});
        QVERIFY2(loss.contains(QStringLiteral("loss %1").arg(style.format(s.loss().y(100)))), qPrintable(loss));
        const QString scale = panel.scaleChart()->readoutText(999);
        QVERIFY2(scale.contains(QStringLiteral("overflow at 999, step skipped")), qPrintable(scale));
        QVERIFY2(scale.contains(QStringLiteral("scale 2^16 (65536)")), qPrintable(scale));  // a power of two, as the axis
        // Memory: each category's own bytes, not the stacked sum.
        const QString memory = panel.memoryChart()->readoutText(10);
        QVERIFY2(memory.contains(QStringLiteral("master weights 2.000 MiB")), qPrintable(memory));  // as the 3 MiB total
        QVERIFY2(memory.contains(QStringLiteral("parameters 1.000 MiB")), qPrintable(memory));
        QCOMPARE(panel.memoryChart()->valueLabel(), QStringLiteral("memory (MiB)"));
        QCOMPARE(panel.memoryChart()->labelForms(panel.memoryChart()->yAxis),
                 QStringList({QStringLiteral("memory (MiB)"), QStringLiteral("MiB")}));
        QVERIFY(panel.memoryChart()->noteText().contains(QStringLiteral("modelled")));
    }

    void controlsChangeTheDrawing() {
        RunSeries s;
        fill(s, 2000);
        ChartsPanel panel;
        panel.show();
        panel.setSeries(&s);
        panel.setSmoothingWeight(0.9);
        QCOMPARE(s.smoothingWeight(), 0.9);
        panel.setLogLoss(true);
        QVERIFY(panel.lossChart()->logarithmic());
        QVERIFY(panel.scaleChart()->logarithmic());  // always: scales are powers of two
        panel.setLogLoss(false);
        QVERIFY(!panel.lossChart()->logarithmic());
    }

    void followsThePalette() {
        ChartsPanel panel;
        panel.show();
        QPalette dark = panel.palette();
        dark.setColor(QPalette::Base, QColor(30, 30, 30));
        dark.setColor(QPalette::Text, QColor(230, 230, 230));
        panel.setPalette(dark);
        QCoreApplication::processEvents();
        for (ChartView* c : panel.charts()) QCOMPARE(c->yAxis->tickLabelColor(), QColor(230, 230, 230));
    }
};

QTEST_MAIN(TestChartsPanel)
#include "test_charts_panel.moc"
