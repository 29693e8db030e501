// The gradient histogram heat map over a run store made in the test (a Recorder fed synthetic
// LayerStepRecords): without loss scaling the gradient as held in fp16 has mass below fp16's
// subnormal floor (2^-24); with a 2^16 scale the same unscaled gradients sit above it; the
// unscaled view of both agrees; the layer chooser switches layers; the format bounds are drawn
// where they belong; a run being recorded is followed (and not read while paused); a bad store
// or run gives one sentence. In a short dock the view stays usable: a small minimum height at
// which every control is shown whole, and a plot whose y ticks thin out and whose axis labels
// shorten or go rather than overlap or be cut; in a narrow dock the controls wrap rather than make
// the view wider than the dock. The zero row keeps a least height, its own colours and a label
// with its share; the labels beside the map never overlap one another or the map; the caption
// names the compute format the shown steps ran in, changes included.
// A real fp16 run (lesson 01, loss scaling switched on half-way) is trained and shown, and the
// lesson's point checked on it, in every run of the suite; with MANTISSA_SCREENSHOT_DIR set the
// view is also saved there as histogram.png, and the short view as histogram-short*.png.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QPixmap>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>

#include <limits>

#include <qcustomplot.h>
#include <nlohmann/json.hpp>

#include "export/chart_export.h"
#include "histogram/gradient_histogram_view.h"
#include "store/run_store.h"
#include "config/experiment.h"
#include "train/session.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

constexpr std::int64_t elements = 1000;

// fc1: the unscaled gradient spread over 2^-31 .. 2^-18 (70 % of the non-zero mass below 2^-24);
// fc2: around 2^-10. 10 % of the elements are zero. fc1 computes in `fc1Format`, fc2 in fp32 from
// step fp32From (a run where the layers differ).
std::vector<LayerStepRecord> layers(std::int64_t step, Format fc1Format = Format::fp16,
                                    std::int64_t fp32From = std::numeric_limits<std::int64_t>::max()) {
    std::vector<LayerStepRecord> v;
    for (int l = 0; l < 2; ++l) {
        LayerStepRecord r;
        r.step = step;
        r.layer = l;
        r.name = "fc" + std::to_string(l + 1);
        r.precision = l == 0 ? fc1Format : step >= fp32From ? Format::fp32 : Format::fp16;
        r.grad_elements = elements;
        r.frac_zero = 0.1;
        auto put = [&](int exponent, std::uint32_t count) {
            r.grad_exponents.counts[static_cast<std::size_t>(exponent - ExponentHistogram::min_exponent)] = count;
        };
        if (l == 0) {
            put(-31, 200);
            put(-28, 250);
            put(-25, 180);
            put(-22, 170);
            put(-18, 100);
        } else {
            put(-11, 400);
            put(-10, 500);
        }
        v.push_back(std::move(r));
    }
    return v;
}

StepRecord stepRow(std::int64_t step, double scale) {
    StepRecord s;
    s.step = step;
    s.time_s = 0.01 * static_cast<double>(step + 1);
    s.loss = 1;
    s.loss_scale = scale;
    return s;
}

RecorderOptions fast() {
    RecorderOptions o;
    o.commit_interval_ms = 5;
    return o;
}

std::int64_t recordRun(RunStore& store, const std::string& name, double scale, int steps) {
    auto rec = store.start_run({name, "cpu", "test", "{}"}, fast());
    for (int i = 0; i < steps; ++i) rec->on_step(stepRow(i, scale), layers(i));
    rec->finish(RunStatus::completed);
    return rec->run_id();
}

// fc1 in fp32 until `switchAt`, then fp16 (autocast switched on live); fc2 in fp16 throughout.
std::int64_t recordSwitchingRun(RunStore& store, int steps, std::int64_t switchAt) {
    auto rec = store.start_run({"fp32-then-fp16", "cpu", "test", "{}"}, fast());
    for (int i = 0; i < steps; ++i)
        rec->on_step(stepRow(i, 1.0), layers(i, i < switchAt ? Format::fp32 : Format::fp16));
    rec->finish(RunStatus::completed);
    return rec->run_id();
}

// Lays the view out until it settles (the plot's layout, then the labels fitted to it).
void settle(GradientHistogramView& view) {
    for (int i = 0; i < 4; ++i) {
        QCoreApplication::processEvents();
        view.rebuildNow();
        QCoreApplication::processEvents();
        view.plot()->replot();
    }
}

// Posts "switch dynamic loss scaling on" once the run reaches `at` (training thread; post is thread-safe).
class SwitchScalingAt : public TelemetrySink {
public:
    SwitchScalingAt(Session* s, std::int64_t at) : m_session(s), m_at(at) {}
    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>&) override {
        if (step.step + 1 == m_at) {
            LossScalingSpec spec;
            spec.mode = LossScalingMode::dynamic;
            m_session->post(command::SetLossScaling{spec});
        }
    }
    void on_eval(const EvalRecord&) override {}
    void on_event(const Event&) override {}

private:
    Session* m_session;
    std::int64_t m_at;
};

}  // namespace

class TestGradientHistogramView : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_path;
    std::int64_t m_unscaled = 0, m_scaled = 0, m_switching = 0;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        RunStore store(m_path.toStdString());
        m_unscaled = recordRun(store, "fp16-no-scaling", 1.0, 60);
        m_scaled = recordRun(store, "fp16-scaled", 65536.0, 60);
        m_switching = recordSwitchingRun(store, 60, 40);
    }

    void withoutScalingMassFallsBelowTheFp16Floor() {
        GradientHistogramView view;
        view.resize(900, 500);
        view.show();
        QCOMPARE(view.setRun(m_path, m_unscaled), QString());
        QCOMPARE(int(view.feed()->series().size()), 60);
        QCOMPARE(view.feed()->layer(), QStringLiteral("fc1"));
        const HistogramGrid& g = view.grid();
        QVERIFY(g.columns > 0);
        for (int c = 0; c < g.columns; ++c) {
            QCOMPARE(g.massBelow(c, -24), 0.63);  // (200 + 250 + 180) of 1000 elements
            QCOMPARE(g.zero_fraction[c], 0.1);
        }
        QVERIFY(view.viewLabel().contains(QStringLiteral("as held in the compute format")));
        QVERIFY(view.viewLabel().contains(QStringLiteral("both views agree")));
        // The map itself holds the mass: the cell of binade -28 at the first column.
        auto* map = qobject_cast<QCPColorMap*>(view.plot()->plottable(0));
        QVERIFY(map);
        int ck = -1, cv = -1;
        map->data()->coordToCell(g.column_step[0], -28 + 0.5, &ck, &cv);
        QCOMPARE(ck, 0);
        QCOMPARE(map->data()->cell(ck, cv), 0.25);
        map->data()->coordToCell(g.column_step[0], -24 + 0.5, &ck, &cv);  // nothing in 2^-24: transparent
        QVERIFY(std::isnan(map->data()->cell(ck, cv)));
        QCOMPARE(map->gradient().nanHandling(), QCPColorGradient::nhTransparent);
        QCOMPARE(map->gradient().color(1, QCPRange(0, 1)), QColor(0xfd, 0xe7, 0x25).rgb());
    }

    void withScalingTheSameGradientsSitAboveIt() {
        GradientHistogramView view;
        view.resize(900, 500);
        view.show();
        QCOMPARE(view.setRun(m_path, m_scaled), QString());
        const HistogramGrid& held = view.grid();
        QVERIFY(held.columns > 0);
        for (int c = 0; c < held.columns; ++c) {
            QCOMPARE_EXACT(held.massBelow(c, -24), 0.0);
            QCOMPARE(held.massAtOrAbove(c, -24), 0.9);
        }
        QCOMPARE(held.min_exponent, -31 + 16);
        QVERIFY(!view.viewLabel().contains(QStringLiteral("both views agree")));
        // Unscaled, the scaled run shows what the unscaled run shows.
        view.setAsHeld(false);
        QVERIFY(view.viewLabel().contains(QStringLiteral("unscaled")));
        for (int c = 0; c < view.grid().columns; ++c) QCOMPARE(view.grid().massBelow(c, -24), 0.63);
    }

    void layerChooser() {
        GradientHistogramView view;
        view.resize(900, 500);
        view.show();
        view.setRun(m_path, m_unscaled);
        auto* combo = view.findChild<QComboBox*>(QStringLiteral("layerChoice"));
        QVERIFY(combo);
        QCOMPARE(combo->count(), 2);
        QCOMPARE(combo->itemText(1), QStringLiteral("fc2"));
        view.setLayer(QStringLiteral("fc2"));
        QCOMPARE(combo->currentText(), QStringLiteral("fc2"));
        QCOMPARE(view.grid().min_exponent, -11);
        QCOMPARE(view.grid().max_exponent, -10);
        QCOMPARE(int(view.feed()->series().size()), 60);
        // A chosen layer carries over to the next run.
        view.setRun(m_path, m_scaled);
        QCOMPARE(view.feed()->layer(), QStringLiteral("fc2"));
        QCOMPARE(view.grid().min_exponent, -11 + 16);
    }

    void formatBoundsAreDrawn() {
        GradientHistogramView view;
        view.resize(900, 500);
        view.show();
        view.setRun(m_path, m_unscaled);
        const QList<double> ys = view.boundLines();
        auto has = [&](double y) {
            return std::any_of(ys.begin(), ys.end(), [&](double v) { return std::fabs(v - y) < 1e-9; });
        };
        QVERIFY(has(-24));                 // fp16 smallest subnormal
        QVERIFY(has(-14));                 // fp16 and e5m2 smallest normal
        QVERIFY(has(std::log2(65504.0)));  // fp16 largest
        QVERIFY(has(-9) && has(-6) && has(std::log2(448.0)));
        QVERIFY(has(-16) && has(std::log2(57344.0)));
        QVERIFY(!has(-133));  // bf16's floor is beyond the view, and said so
        QVERIFY(view.viewLabel().contains(QStringLiteral("Beyond this view, bf16")));
        QVERIFY(view.plot()->yAxis->range().contains(-24.5));
        view.setFormatShown(Format::fp16, false);
        const QList<double> without = view.boundLines();
        QVERIFY(!without.isEmpty());  // e4m3's and e5m2's remain
        QVERIFY(std::none_of(without.begin(), without.end(), [](double v) { return std::fabs(v + 24) < 1e-9; }));
        // The heat map exports like any chart.
        const QString svg = m_dir.filePath(QStringLiteral("histogram.svg"));
        QCOMPARE(exportChart(view.plot(), svg, {800, 400, 1}), QString());
        QVERIFY(QFileInfo(svg).size() > 1000);
    }

    void followsARunBeingRecorded() {
        RunStore store(m_path.toStdString());
        auto rec = store.start_run({"live", "cpu", "test", "{}"}, fast());
        for (int i = 0; i < 5; ++i) rec->on_step(stepRow(i, 1024), layers(i));
        QTRY_COMPARE_WITH_TIMEOUT(int(store.steps(rec->run_id()).size()), 5, 5000);

        GradientHistogramView view;
        view.feed()->setPollInterval(20);
        QCOMPARE(view.setRun(m_path, rec->run_id()), QString());
        QVERIFY(view.feed()->following());
        QTRY_COMPARE_WITH_TIMEOUT(int(view.feed()->series().size()), 5, 5000);
        for (int i = 5; i < 12; ++i) rec->on_step(stepRow(i, 1024), layers(i));
        QTRY_COMPARE_WITH_TIMEOUT(int(view.feed()->series().size()), 12, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(view.feed()->series().lastStep(), std::int64_t(11), 5000);
        QCOMPARE(view.feed()->series().shiftAt(11), 10);
        rec->finish(RunStatus::completed);
        QTRY_VERIFY_WITH_TIMEOUT(!view.feed()->following(), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(view.grid().columns, 12, 5000);  // the map caught up
    }

    // Paused (its dock tab not shown), the feed reads nothing; resumed, it catches up in one read.
    void readsNothingWhilePaused() {
        RunStore store(m_path.toStdString());
        auto rec = store.start_run({"paused", "cpu", "test", "{}"}, fast());
        for (int i = 0; i < 4; ++i) rec->on_step(stepRow(i, 1024), layers(i));
        QTRY_COMPARE_WITH_TIMEOUT(int(store.steps(rec->run_id()).size()), 4, 5000);

        GradientHistogramView view;
        view.feed()->setPollInterval(20);
        view.feed()->setPaused(true);
        QCOMPARE(view.setRun(m_path, rec->run_id()), QString());
        QVERIFY(view.feed()->following());
        QVERIFY(!view.feed()->polling());
        QCOMPARE(int(view.feed()->series().size()), 0);

        view.feed()->setPaused(false);
        QCOMPARE(int(view.feed()->series().size()), 4);  // one read on resuming
        QVERIFY(view.feed()->polling());

        view.feed()->setPaused(true);
        QVERIFY(!view.feed()->polling());
        for (int i = 4; i < 9; ++i) rec->on_step(stepRow(i, 1024), layers(i));
        QTRY_COMPARE_WITH_TIMEOUT(int(store.steps(rec->run_id()).size()), 9, 5000);
        QTest::qWait(100);  // five poll intervals: a running timer would have read them
        QCOMPARE(int(view.feed()->series().size()), 4);

        view.feed()->setPaused(false);
        QCOMPARE(int(view.feed()->series().size()), 9);
        rec->finish(RunStatus::completed);
        QTRY_VERIFY_WITH_TIMEOUT(!view.feed()->following(), 5000);
        QVERIFY(!view.feed()->polling());
    }

    // Its minimum height is at most minimumShortHeight (130 px), with or without the one-line status;
    // at that height every control is visible at its own minimum size inside the view, the caption
    // shows one line, the plot has its minimum height, and the plot's axes fit it.
    void usableWhenShort_data() {
        QTest::addColumn<bool>("withRun");
        QTest::newRow("a run") << true;
        QTest::newRow("no run (status shown)") << false;
    }
    void usableWhenShort() {
        QFETCH(bool, withRun);
        GradientHistogramView view;
        if (withRun) QCOMPARE(view.setRun(m_path, m_unscaled), QString());
        const QSize least = view.minimumSizeHint();
        QVERIFY2(least.height() <= GradientHistogramView::minimumShortHeight,
                 qPrintable(QStringLiteral("minimum height %1 px").arg(least.height())));
        view.resize(std::max(least.width(), 700), least.height());
        view.show();
        for (int i = 0; i < 3; ++i) {
            QCoreApplication::processEvents();
            view.rebuildNow();
        }
        QCOMPARE(view.height(), least.height());
        QList<QWidget*> controls;
        for (QComboBox* c : view.findChildren<QComboBox*>()) controls.append(c);
        for (QCheckBox* c : view.findChildren<QCheckBox*>()) controls.append(c);
        QCOMPARE(controls.size(), 2 + 4);  // layer, view; fp16, bf16, e4m3, e5m2
        for (QWidget* w : controls) {
            const QRect r(w->mapTo(&view, QPoint(0, 0)), w->size());
            const QString what = w->objectName().isEmpty() ? w->property("text").toString() : w->objectName();
            QVERIFY2(w->isVisible(), qPrintable(what));
            QVERIFY2(w->height() >= w->minimumSizeHint().height() && w->width() >= w->minimumSizeHint().width(),
                     qPrintable(QStringLiteral("%1 is %2x%3").arg(what).arg(w->width()).arg(w->height())));
            QVERIFY2(view.rect().contains(r), qPrintable(what + QStringLiteral(" lies outside the view")));
        }
        auto* caption = view.findChild<QLabel*>(QStringLiteral("viewLabel"));
        QVERIFY(caption && caption->isVisible());
        QVERIFY(caption->height() >= caption->fontMetrics().height());
        QCOMPARE(caption->toolTip(), view.viewLabel());  // the whole sentence, on hover
        auto* status = view.findChild<QLabel*>(QStringLiteral("statusLabel"));
        QCOMPARE(status->isVisible(), !withRun);
        if (!withRun) QVERIFY(status->height() >= status->fontMetrics().height());

        QCustomPlot* plot = view.plot();
        QVERIFY(plot->height() >= GradientHistogramView::minimumPlotHeight);
        plot->replot();
        const int plotHeight = plot->axisRect()->height();
        QVERIFY(plotHeight > 0);
        QCPAxis* fraction = plot->axisRect()->axis(QCPAxis::atLeft);
        for (QCPLayoutElement* e : plot->plotLayout()->elements(false))
            if (auto* scale = qobject_cast<QCPColorScale*>(e)) fraction = scale->axis();
        QVERIFY(fraction != plot->yAxis);
        for (QCPAxis* axis : {plot->yAxis, fraction}) {
            QVector<double> pixels;
            for (double t : axis->tickVector()) pixels.append(axis->coordToPixel(t));
            std::sort(pixels.begin(), pixels.end());
            // The binade axis always has "zero"; the fractions may span less than a decade (no tick).
            if (axis == plot->yAxis) QVERIFY(pixels.size() >= 2);
            const double labelHeight = QFontMetricsF(axis->tickLabelFont()).height();
            for (int i = 1; i < pixels.size(); ++i)
                QVERIFY2(pixels[i] - pixels[i - 1] >= labelHeight,
                         qPrintable(QStringLiteral("%1: ticks %2 px apart in a %3 px plot")
                                        .arg(axis->label())
                                        .arg(pixels[i] - pixels[i - 1])
                                        .arg(plotHeight)));
            QVERIFY2(QFontMetricsF(axis->labelFont()).horizontalAdvance(axis->label()) <= plotHeight,
                     qPrintable(QStringLiteral("\"%1\" along a %2 px plot").arg(axis->label()).arg(plotHeight)));
        }
        if (const QByteArray dir = qgetenv("MANTISSA_SCREENSHOT_DIR"); !dir.isEmpty())
            view.grab().save(QDir(QString::fromLocal8Bit(dir))
                                 .filePath(withRun ? QStringLiteral("histogram-short.png")
                                                   : QStringLiteral("histogram-short-empty.png")));
        // Tall, the full labels come back.
        view.resize(900, 600);
        for (int i = 0; i < 3; ++i) {
            QCoreApplication::processEvents();
            plot->replot();
        }
        QCOMPARE(plot->yAxis->label(), QStringLiteral("|gradient| (log2 binade)"));
        QCOMPARE(fraction->label(), QStringLiteral("fraction of the step's elements"));
        QCOMPARE(plot->xAxis->label(), QStringLiteral("step"));
    }

    // The zero row is what an underflow lesson shows: at every size at least minimumZeroRowHeight
    // px tall (a 240-px dock gave it 3 px when it was one binade's row), in colours of its own (red,
    // which no colour of the heat map is), labelled with the last step's share beside the map.
    void zeroRowIsVisible_data() {
        QTest::addColumn<QSize>("size");
        QTest::newRow("usable dock 760x240")
            << QSize(GradientHistogramView::usableWidth, GradientHistogramView::usableHeight);
        QTest::newRow("narrow dock 600x240") << QSize(600, 240);
        QTest::newRow("short 760x170") << QSize(760, 170);
        QTest::newRow("tall 1000x700") << QSize(1000, 700);
    }
    void zeroRowIsVisible() {
        QFETCH(QSize, size);
        GradientHistogramView view;
        view.resize(size);
        view.show();
        QCOMPARE(view.setRun(m_path, m_unscaled), QString());
        settle(view);
        const QRectF zero = view.zeroRowRect();
        QVERIFY2(zero.height() >= GradientHistogramView::minimumZeroRowHeight - 0.5,
                 qPrintable(QStringLiteral("the zero row is %1 px tall").arg(zero.height())));
        const QRect rect = view.plot()->axisRect()->rect();
        QVERIFY(rect.contains(zero.center().toPoint()));
        // Its colour, in the drawn plot: red where 10 % of the elements are zero, unlike any viridis colour.
        const QImage image = view.plot()->toPixmap().toImage();
        const QColor c = image.pixelColor(zero.center().toPoint());
        QVERIFY2(c.red() > c.green() + 40 && c.red() > c.blue() + 40, qPrintable(c.name()));
        // Its label, at its height beside the map.
        QCOMPARE(view.zeroRowLabel(), QStringLiteral("zero 10%"));
        const QList<QRectF> labels = view.labelRects();
        QVERIFY(std::any_of(labels.begin(), labels.end(), [&](const QRectF& r) {
            return r.left() >= rect.right() && r.top() <= zero.bottom() + 1 && r.bottom() >= zero.top() - 1;
        }));
    }

    // The labels of the range lines and of the zero row stand beside the map, never over one
    // another, the map, or the colour scale, and inside the plot; at the dock's usable size each
    // line of fp16's has its label.
    void labelsNeverOverlap_data() {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("scaled");
        QTest::newRow("usable dock 760x240") << QSize(760, 240) << false;
        QTest::newRow("usable dock, scaled run") << QSize(760, 240) << true;
        QTest::newRow("narrow dock 600x240") << QSize(600, 240) << false;
        QTest::newRow("short 760x150") << QSize(760, 150) << false;
        QTest::newRow("wide 1400x320") << QSize(1400, 320) << true;
        QTest::newRow("tall 1000x700") << QSize(1000, 700) << false;
    }
    void labelsNeverOverlap() {
        QFETCH(QSize, size);
        QFETCH(bool, scaled);
        GradientHistogramView view;
        view.resize(size);
        view.show();
        QCOMPARE(view.setRun(m_path, scaled ? m_scaled : m_unscaled), QString());
        settle(view);
        QCustomPlot* plot = view.plot();
        const QList<QRectF> labels = view.labelRects();
        QVERIFY(!labels.isEmpty());
        QRectF scale;
        for (QCPLayoutElement* e : plot->plotLayout()->elements(false))
            if (auto* s = qobject_cast<QCPColorScale*>(e)) scale = QRectF(s->rect());
        QVERIFY(!scale.isEmpty());
        const QRectF map(plot->axisRect()->rect());
        for (int i = 0; i < labels.size(); ++i) {
            const QRectF a = labels[i].adjusted(0.5, 0.5, -0.5, -0.5);  // QCustomPlot rounds to whole pixels
            const QString where = QStringLiteral("label %1 at (%2, %3) %4x%5")
                                      .arg(i)
                                      .arg(a.left())
                                      .arg(a.top())
                                      .arg(a.width())
                                      .arg(a.height());
            QVERIFY2(!a.intersects(map), qPrintable(where + QStringLiteral(" covers the map")));
            QVERIFY2(!a.intersects(scale), qPrintable(where + QStringLiteral(" covers the colour scale")));
            QVERIFY2(QRectF(plot->rect()).contains(a), qPrintable(where + QStringLiteral(" is cut")));
            for (int j = i + 1; j < labels.size(); ++j)
                QVERIFY2(!a.intersects(labels[j].adjusted(0.5, 0.5, -0.5, -0.5)),
                         qPrintable(where + QStringLiteral(" overlaps label %1").arg(j)));
        }
        if (size == QSize(760, 240)) {
            // fp16's three lines, fp16·e5m2's shared one counted once, and the zero row: all labelled.
            QVERIFY2(labels.size() >= 5, qPrintable(QString::number(labels.size())));
        }
    }

    // The caption names the format the shown steps computed in, as recorded for the layer: one
    // format, or each with its steps where it changed (it named the last step's alone); nothing
    // before a step is read (it said fp32).
    void captionNamesTheComputeFormat() {
        GradientHistogramView view;
        view.resize(900, 500);
        view.show();
        QCOMPARE(view.setRun(m_path, m_switching), QString());
        QVERIFY2(view.viewLabel().contains(QStringLiteral("compute format (fp32 to step 39, fp16 from step 40)")),
                 qPrintable(view.viewLabel()));
        view.setAsHeld(false);
        QVERIFY2(view.viewLabel().contains(QStringLiteral("(fp32 to step 39, fp16 from step 40)")),
                 qPrintable(view.viewLabel()));
        view.setAsHeld(true);
        view.setLayer(QStringLiteral("fc2"));  // per layer: fc2 stayed in fp16
        QVERIFY2(view.viewLabel().contains(QStringLiteral("compute format (fp16):")), qPrintable(view.viewLabel()));
        QCOMPARE(view.setRun(m_path, m_unscaled), QString());
        QVERIFY2(view.viewLabel().contains(QStringLiteral("compute format (fp16):")), qPrintable(view.viewLabel()));

        GradientHistogramView paused;
        paused.feed()->setPaused(true);  // a dock tab not shown: nothing read yet
        QCOMPARE(paused.setRun(m_path, m_switching), QString());
        QVERIFY(!paused.viewLabel().contains(QStringLiteral("fp32")));
        QVERIFY(!paused.viewLabel().contains(QStringLiteral("fp16")));
        paused.feed()->setPaused(false);
        paused.rebuildNow();
        QVERIFY(paused.viewLabel().contains(QStringLiteral("(fp32 to step 39, fp16 from step 40)")));
    }

    // In a dock narrower than the row of controls (the main window's bottom dock is 340 to 600 px),
    // the controls wrap: the view is no wider than the dock's scroll area, so nothing is cut at
    // its right edge, and the caption wraps or elides within it (it was laid out 750 px wide).
    // Never taller than the area either (its height is cut, not scrolled; the main window sizes
    // the dock from the view's height): where two rows do not fit, one row, scrolled sideways.
    void fitsANarrowDock_data() {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("wraps");
        QTest::newRow("600x260") << QSize(600, 260) << true;
        QTest::newRow("340x260: three rows") << QSize(340, 260) << true;
        QTest::newRow("517x138: two rows just fit") << QSize(517, 138) << true;
        QTest::newRow("517x124: one row, sideways") << QSize(517, 124) << false;
    }
    void fitsANarrowDock() {
        QFETCH(QSize, size);
        QFETCH(bool, wraps);
        QScrollArea area;  // as the main window holds the view
        auto* view = new GradientHistogramView;
        area.setWidget(view);
        area.setWidgetResizable(true);
        area.setFrameShape(QFrame::NoFrame);
        area.setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        area.resize(size);
        area.show();
        QCOMPARE(view->setRun(m_path, m_unscaled), QString());
        settle(*view);
        QCoreApplication::processEvents();
        QVERIFY2(view->height() <= area.viewport()->height(),
                 qPrintable(QStringLiteral("%1 px tall in %2 px").arg(view->height()).arg(area.viewport()->height())));
        if (!wraps) {
            QVERIFY(area.horizontalScrollBar()->isVisible());
            return;
        }
        QVERIFY2(view->minimumSizeHint().width() <= size.width(),
                 qPrintable(QString::number(view->minimumSizeHint().width())));
        QCOMPARE(view->width(), area.viewport()->width());
        QVERIFY(!area.horizontalScrollBar()->isVisible());
        QList<QWidget*> shown;
        for (QComboBox* c : view->findChildren<QComboBox*>()) shown.append(c);
        for (QCheckBox* c : view->findChildren<QCheckBox*>()) shown.append(c);
        shown.append(view->findChild<QLabel*>(QStringLiteral("viewLabel")));
        shown.append(view->plot());
        for (QWidget* w : shown) {
            const QRect r(w->mapTo(view, QPoint(0, 0)), w->size());
            QVERIFY2(w->isVisible() && view->rect().contains(r),
                     qPrintable(w->objectName() + QStringLiteral(" at ") + QString::number(r.left()) +
                                QStringLiteral(", width ") + QString::number(r.width())));
        }
        auto* caption = view->findChild<QLabel*>(QStringLiteral("viewLabel"));
        QVERIFY(caption->fontMetrics().horizontalAdvance(caption->text()) > caption->width());  // so it wraps
        QCOMPARE(caption->toolTip(), view->viewLabel());
        if (const QByteArray dir = qgetenv("MANTISSA_SCREENSHOT_DIR"); !dir.isEmpty())
            area.grab().save(QDir(QString::fromLocal8Bit(dir))
                                 .filePath(QStringLiteral("histogram-narrow-%1.png").arg(size.width())));
    }

    void badStoreOrRunIsOneSentence() {
        GradientHistogramView view;
        QString error = view.setRun(m_path, 987654);
        QVERIFY2(error.startsWith(QStringLiteral("Cannot show gradient histograms")), qPrintable(error));
        QVERIFY(view.feed()->series().empty());
        const QString junk = m_dir.filePath(QStringLiteral("junk.sqlite"));
        QFile f(junk);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(4096, 'x'));
        f.close();
        error = view.setRun(junk, 1);
        QVERIFY2(!error.isEmpty(), "a file that is not a store must be refused");
        QVERIFY(view.findChild<QLabel*>(QStringLiteral("statusLabel"))->isVisibleTo(&view));
    }

    // The lesson's point on a real run; the picture of it is saved only for docs/ (the variable).
    void realRun() {
        const QByteArray dir = qgetenv("MANTISSA_SCREENSHOT_DIR");
        const QString lesson = qEnvironmentVariable("MANTISSA_SOURCE_DIR") +
                               QStringLiteral("/resources/experiments/lessons/01-fp16-underflow.json");
        Experiment e = load_experiment(lesson.toStdString());
        e.train.steps = 600;
        e.train.eval_every = 100;
        RunStore store(m_path.toStdString());
        Session session(e);
        auto rec =
            store.start_run({e.name, session.backend_name(), session.device_name(), experiment_to_json(e).dump()});
        session.add_sink(rec);
        session.add_sink(std::make_shared<SwitchScalingAt>(&session, 300));
        session.start();
        session.wait();
        rec->finish(RunStatus::completed);

        GradientHistogramView view;
        view.resize(1000, 560);
        view.show();
        QCOMPARE(view.setRun(m_path, rec->run_id()), QString());
        view.setLayer(QStringLiteral("fc2"));  // 64 × 64 weights: a fuller picture than fc1's 128
        QCoreApplication::processEvents();
        view.rebuildNow();
        const QPixmap shot = view.grab();
        QVERIFY(!shot.isNull());
        if (!dir.isEmpty())
            QVERIFY(shot.save(QDir(QString::fromLocal8Bit(dir)).filePath(QStringLiteral("histogram.png"))));
        // The lesson's point, on real data: before the switch much of the gradient is zero in fp16
        // (flushed), after it little is.
        const HistogramGrid& g = view.grid();
        QVERIFY(g.columns > 2);
        double before = 0, after = 0;
        int nb = 0, na = 0;
        for (int c = 0; c < g.columns; ++c) {
            if (g.first_step[c] >= 200 && g.last_step[c] < 300) before += g.zero_fraction[c], ++nb;
            if (g.first_step[c] >= 500) after += g.zero_fraction[c], ++na;
        }
        QVERIFY(nb > 0 && na > 0);
        qInfo("zero fraction: steps 200-299 %.3f, steps 500+ %.3f", before / nb, after / na);
        QVERIFY(before / nb > after / na + 0.2);
    }
};

QTEST_MAIN(TestGradientHistogramView)
#include "test_gradient_histogram_view.moc"
