// The What-if panel and the path its numbers take: the telemetry ring's own what-if ring (full: the
// step's rows are dropped and counted, never waited for), RunSeries keeping each statistics step's
// rows with the column of each layer's own format, the older steps thinned while the latest stays,
// and the heat map: each cell's words ("23.4 dB", "0.31 %", "exact", "overflow", "—"), its colour
// (10 dB warmer than 30 dB), the tensor and metric pickers, the framed cell of a layer's own format
// and its tooltip, the empty state, following the latest step and going back to an earlier one.
// Records are made here, except in the last test: a real run (spirals, CPU) fills the window's panel
// live, and the same run reopened from the store fills a run viewer's with the same numbers.
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QPainter>
#include <QSlider>
#include <QTableView>
#include <QToolButton>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

#include "history/run_viewer.h"
#include "live/telemetry_ring.h"
#include "main_window_fixture.h"
#include "models/what_if_delegate.h"
#include "models/what_if_model.h"
#include "models/what_if_scale.h"
#include "panels/what_if_panel.h"
#include "series/run_series.h"
#include "store/run_store.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const double noSignal = std::numeric_limits<double>::quiet_NaN();

QuantisationStats stats(double sqnr, double underflow = 0, double saturation = 0, std::int64_t values = 4096) {
    return {underflow, saturation, sqnr, values};
}

WhatIfRecord row(std::int64_t step, std::int32_t layer, const char* name, ComputeFormat format, QuantisationStats x,
                 QuantisationStats w = stats(50), QuantisationStats dy = stats(40)) {
    return {step, layer, name, format, x, w, dy};
}

// The run's formats, in its order.
const std::vector<ComputeFormat> formats = {Format::fp16, Format::bf16, Format::fp8_e4m3, BlockFormat::mxfp4};

// One statistics step of fc1 and fc2: x's SQNR falls with the format's width (fc2's 10 dB less),
// W's is the step number (so steps can be told apart), dy's underflow grows with the format.
std::vector<WhatIfRecord> stepRows(std::int64_t step) {
    std::vector<WhatIfRecord> rows;
    const double xSqnr[] = {68, 50, 30, 15};
    const double dyUnderflow[] = {0.0031, 0, 0.02, 0.4};
    for (int layer = 0; layer < 2; ++layer)
        for (std::size_t f = 0; f < formats.size(); ++f)
            rows.push_back(row(step, layer, layer == 0 ? "fc1" : "fc2", formats[f], stats(xSqnr[f] - 10 * layer, 0.001),
                               stats(static_cast<double>(step)), stats(40, dyUnderflow[f], 0.0005 * layer)));
    return rows;
}

LayerSample sample(std::int64_t step, std::int32_t layer, ComputeFormat precision) {
    LayerSample s;
    s.step = step;
    s.layer = layer;
    s.precision = precision;
    return s;
}

// A step as the controller drains it: the step's layer samples (fc1 in fp16, fc2 in mxfp4), then
// its what-if rows.
void addStep(RunSeries& series, std::int64_t step) {
    StepRecord s;
    s.step = step;
    series.addStep(s);
    series.addLayerSample(sample(step, 0, Format::fp16));
    series.addLayerSample(sample(step, 1, BlockFormat::mxfp4));
    series.addWhatIf(stepRows(step));
}

QString cellText(const WhatIfModel& m, int row, int column) {
    return m.index(row, column).data().toString();
}
double warmthOf(const WhatIfModel& m, int row, int column) {
    return m.index(row, column).data(WhatIfModel::WarmthRole).toDouble();
}
QColor background(const WhatIfModel& m, int row, int column) {
    return m.index(row, column).data(Qt::BackgroundRole).value<QBrush>().color();
}
bool same(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}
bool same(const WhatIfCell& a, const WhatIfCell& b) {
    if (a.measured != b.measured || a.current != b.current) return false;
    for (std::size_t t = 0; t < a.tensors.size(); ++t) {
        const WhatIfNumbers &x = a.tensors[t], &y = b.tensors[t];
        if (!same(x.underflow, y.underflow) || !same(x.saturation, y.saturation) || !same(x.sqnr_db, y.sqnr_db) ||
            x.values != y.values)
            return false;
    }
    return true;
}

QString describe(const WhatIfCell& c) {
    QString out = QStringLiteral("measured %1 current %2:").arg(c.measured).arg(c.current);
    for (const auto& t : c.tensors)
        out += QStringLiteral(" [%1 %2 %3 %4]").arg(t.underflow).arg(t.saturation).arg(t.sqnr_db).arg(t.values);
    return out;
}

int distance(const QColor& a, const QColor& b) {
    return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}

}  // namespace

class TestWhatIfPanel : public QObject {
    Q_OBJECT
private slots:
    // The what-if rows have a ring of their own: a full one drops the newest step's rows and
    // counts it, leaving the steps' ring alone; what gets through is whole and in order.
    void ringDropsAndCountsWhenFull() {
        TelemetryRing ring(2, 8, 8, 8, 2);
        auto rows = stepRows(10);
        rows[1].input.sqnr_db = inf;
        ring.on_what_if(rows);
        ring.on_what_if(stepRows(20));
        ring.on_what_if(stepRows(30));  // the ring holds two: dropped, not waited for
        QCOMPARE(ring.droppedWhatIf(), std::int64_t{1});
        QCOMPARE(ring.droppedSteps(), std::int64_t{0});
        QCOMPARE(ring.droppedOps(), std::int64_t{0});
        std::vector<std::int64_t> steps;
        std::vector<WhatIfRecord> first;
        QCOMPARE(ring.drainWhatIf([&](WhatIfPacket& p) {
            steps.push_back(p.rows.front().step);
            if (first.empty()) first = p.rows;
        }),
                 std::size_t{2});
        QCOMPARE(steps, (std::vector<std::int64_t>{10, 20}));
        QCOMPARE(first.size(), std::size_t{8});
        QCOMPARE(first[1].name, std::string("fc1"));
        QCOMPARE(first[1].format, ComputeFormat(Format::bf16));
        QVERIFY(std::isinf(first[1].input.sqnr_db));
        QCOMPARE(first[7].name, std::string("fc2"));
        QCOMPARE(first[7].format, ComputeFormat(BlockFormat::mxfp4));
        QCOMPARE(first[7].grad_output.underflow, 0.4);
        QCOMPARE(first[7].weight.values, std::int64_t{4096});
        // Room again: the next step goes in.
        ring.on_what_if(stepRows(40));
        QCOMPARE(ring.drainWhatIf([](WhatIfPacket&) {}), std::size_t{1});
        QCOMPARE(ring.droppedWhatIf(), std::int64_t{1});
    }

    // RunSeries keeps a step's rows: layers in model order (whatever order the rows come in),
    // formats in the run's, the numbers, and each layer's own format from the same step's samples.
    void runSeriesKeepsTheRows() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        StepRecord s;
        s.step = 10;
        series.addStep(s);
        series.addLayerSample(sample(10, 0, Format::fp16));
        series.addLayerSample(sample(10, 1, BlockFormat::mxfp4));
        auto rows = stepRows(10);
        std::rotate(rows.begin(), rows.begin() + 4, rows.end());  // fc2's rows first
        const auto revision = series.revision();
        series.addWhatIf(rows);
        QVERIFY(series.revision() > revision);
        const WhatIfSeries& w = series.whatIf();
        QCOMPARE(w.layers(), (std::vector<std::string>{"fc1", "fc2"}));
        QCOMPARE(w.formats(), formats);
        QCOMPARE(w.snapshots().size(), std::size_t{1});
        QCOMPARE(w.snapshots()[0].step, std::int64_t{10});
        const WhatIfCell& c = w.cell(0, 1, 3);  // fc2 in mxfp4
        QVERIFY(c.measured);
        QCOMPARE(c[WhatIfTensor::input].sqnr_db, 5.0f);
        QCOMPARE(c[WhatIfTensor::weight].sqnr_db, 10.0f);
        QCOMPARE(c[WhatIfTensor::grad_output].underflow, 0.4f);
        QCOMPARE(c[WhatIfTensor::grad_output].saturation, 0.0005f);
        QCOMPARE(c[WhatIfTensor::input].values, std::uint32_t{4096});
        QCOMPARE(w.currentFormat(0, 0), std::optional<std::size_t>(0));  // fc1 runs in fp16
        QCOMPARE(w.currentFormat(0, 1), std::optional<std::size_t>(3));  // fc2 in mxfp4
        QVERIFY(c.current);
        QVERIFY(!w.cell(0, 1, 0).current);

        series.reset({"fc1"});
        QVERIFY(series.whatIf().empty());
        QVERIFY(series.whatIf().layers().empty());
    }

    // A layer's own format is the one of the very same step, in either order of arrival; a step
    // without it marks nothing (the format may have changed since).
    void ownFormatIsTheSameSteps() {
        WhatIfSeries w;
        w.addRows(stepRows(10));
        QCOMPARE(w.currentFormat(0, 0), std::nullopt);
        w.notePrecision(10, "fc1", Format::bf16);  // after the rows
        QCOMPARE(w.currentFormat(0, 0), std::optional<std::size_t>(1));
        w.notePrecision(10, "fc1", Format::fp32);  // not a column: nothing marked
        QCOMPARE(w.currentFormat(0, 0), std::nullopt);
        w.notePrecision(10, "fc2", Format::fp16);
        w.addRows(stepRows(20));
        QCOMPARE(w.currentFormat(1, 1), std::nullopt);  // step 20 has no sample of fc2's
        QCOMPARE(w.currentFormat(0, 1), std::optional<std::size_t>(0));

        // As a live tick can bring them: the samples of two statistics steps, then both steps' rows
        // (the steps' ring is drained before the what-if ring); fc1 changed format in between.
        WhatIfSeries live;
        live.notePrecision(30, "fc1", Format::fp16);
        live.notePrecision(34, "fc1", Format::fp8_e4m3);
        live.addRows(stepRows(30));
        live.addRows(stepRows(34));
        QCOMPARE(live.currentFormat(0, 0), std::optional<std::size_t>(0));
        QCOMPARE(live.currentFormat(1, 0), std::optional<std::size_t>(2));
    }

    // A step's rows in two parts (a store read that met the step half committed) fill one snapshot.
    void aStepInTwoPartsIsOneSnapshot() {
        WhatIfSeries w;
        auto rows = stepRows(10);
        w.addRows({rows.begin(), rows.begin() + 3});  // fc1's fp16, bf16 and fp8-e4m3
        QCOMPARE(w.formats().size(), std::size_t{3});
        QCOMPARE(w.layers(), std::vector<std::string>{"fc1"});
        w.addRows({rows.begin() + 3, rows.end()});
        QCOMPARE(w.snapshots().size(), std::size_t{1});
        QCOMPARE(w.formats(), formats);
        QCOMPARE(w.layers().size(), std::size_t{2});
        for (std::size_t l = 0; l < 2; ++l)
            for (std::size_t f = 0; f < formats.size(); ++f) QVERIFY(w.cell(0, l, f).measured);
        QCOMPARE(w.cell(0, 0, 0)[WhatIfTensor::input].sqnr_db, 68.0f);  // written before the grid grew
    }

    // Past its limit the series thins its older half: the oldest and the latest stay, the recent
    // steps stay whole, and a step asked for that was thinned shows the kept one before it.
    void olderStepsAreThinnedTheLatestStays() {
        WhatIfSeries w(8);
        for (std::int64_t step = 0; step < 100; ++step) w.addRows({row(step, 0, "fc1", Format::fp16, stats(1))});
        const auto& s = w.snapshots();
        QVERIFY(s.size() <= 8);
        QVERIFY(s.size() >= 4);
        QCOMPARE(s.front().step, std::int64_t{0});
        QCOMPARE(s.back().step, std::int64_t{99});
        for (std::size_t i = 1; i < s.size(); ++i) QVERIFY(s[i - 1].step < s[i].step);
        QCOMPARE(s[s.size() - 2].step, std::int64_t{98});  // the newest half is not thinned
        const auto at = w.snapshotAt(50);
        QVERIFY(at.has_value());
        QVERIFY(s[*at].step <= 50);
        QVERIFY(*at + 1 == s.size() || s[*at + 1].step > 50);
        QCOMPARE(w.snapshotAt(-1), std::nullopt);
    }

    void numbersInWords_data() {
        QTest::addColumn<int>("metric");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("text");
        const int sqnr = static_cast<int>(WhatIfMetric::sqnr_db);
        const int under = static_cast<int>(WhatIfMetric::underflow);
        const int sat = static_cast<int>(WhatIfMetric::saturation);
        QTest::newRow("sqnr") << sqnr << 23.44 << QStringLiteral("23.4 dB");
        QTest::newRow("sqnr negative") << sqnr << -3.21 << QStringLiteral("-3.2 dB");
        QTest::newRow("sqnr about zero") << sqnr << -0.02 << QStringLiteral("0.0 dB");
        QTest::newRow("sqnr exact") << sqnr << inf << QStringLiteral("exact");
        QTest::newRow("sqnr overflow") << sqnr << -inf << QStringLiteral("overflow");
        QTest::newRow("sqnr no signal") << sqnr << noSignal << QStringLiteral("—");
        QTest::newRow("underflow") << under << 0.0031 << QStringLiteral("0.31 %");
        QTest::newRow("underflow none") << under << 0.0 << QStringLiteral("0 %");
        QTest::newRow("underflow tiny") << under << 1e-6 << QStringLiteral("<0.01 %");
        QTest::newRow("underflow all") << under << 1.0 << QStringLiteral("100 %");
        QTest::newRow("saturation half") << sat << 0.5 << QStringLiteral("50 %");
        QTest::newRow("saturation no signal") << sat << noSignal << QStringLiteral("—");
    }
    void numbersInWords() {
        QFETCH(int, metric);
        QFETCH(double, value);
        QFETCH(QString, text);
        QCOMPARE(whatif::numberText(static_cast<WhatIfMetric>(metric), value), text);
    }

    // Through the model: the cells of inf, -inf and NaN are words, their colours the ends of the
    // scale (exact neutral, overflow red, no signal neutral).
    void infinitiesAndNanAreWords() {
        WhatIfSeries w;
        w.addRows({row(5, 0, "fc1", Format::fp16, stats(inf)), row(5, 0, "fc1", Format::bf16, stats(-inf)),
                   row(5, 0, "fc1", BlockFormat::nvfp4, stats(noSignal, noSignal, noSignal, 0))});
        WhatIfModel m;
        m.setSeries(&w);
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("exact"));
        QCOMPARE(cellText(m, 0, 1), QStringLiteral("overflow"));
        QCOMPARE(cellText(m, 0, 2), QStringLiteral("—"));
        QCOMPARE_EXACT(warmthOf(m, 0, 0), 0.0);
        QCOMPARE(warmthOf(m, 0, 1), 1.0);
        QVERIFY(std::isnan(warmthOf(m, 0, 2)));
        const QColor neutral = QGuiApplication::palette().color(QPalette::Base);
        QCOMPARE(background(m, 0, 0), neutral);
        QCOMPARE(background(m, 0, 2), neutral);
        QVERIFY(distance(background(m, 0, 1), neutral) > 100);
        m.setMetric(WhatIfMetric::underflow);
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("0 %"));
        QCOMPARE(cellText(m, 0, 2), QStringLiteral("—"));
    }

    // Worse is warmer: 10 dB is warmer (further from the neutral colour, redder) than 30 dB, and
    // 30 dB than 68; more underflow is warmer than less, and none is neutral.
    void worseIsWarmer() {
        WhatIfSeries w;
        w.addRows(stepRows(10));
        WhatIfModel m;
        m.setSeries(&w);
        // x's SQNR: fc1 68, 50, 30, 15; fc2 58, 40, 20, 5.
        QCOMPARE(cellText(m, 0, 2), QStringLiteral("30.0 dB"));
        QCOMPARE(cellText(m, 1, 2), QStringLiteral("20.0 dB"));
        QVERIFY(warmthOf(m, 1, 3) > warmthOf(m, 0, 2));  // 5 dB warmer than 30
        QVERIFY(warmthOf(m, 0, 2) > warmthOf(m, 0, 1));  // 30 than 50
        QCOMPARE_EXACT(warmthOf(m, 0, 0), 0.0);                // 68 dB: neutral
        QVERIFY(whatif::warmth(WhatIfMetric::sqnr_db, 10) > whatif::warmth(WhatIfMetric::sqnr_db, 30));
        const QColor neutral = QGuiApplication::palette().color(QPalette::Base);
        QCOMPARE(background(m, 0, 0), neutral);
        const QColor at30 = background(m, 0, 2), at5 = background(m, 1, 3);
        QVERIFY(distance(at5, neutral) > distance(at30, neutral));
        QVERIFY(at5.red() - at5.green() > at30.red() - at30.green());  // redder
        QVERIFY(at5.hueF() < at30.hueF());                             // from amber towards red

        m.setTensor(WhatIfTensor::grad_output);
        m.setMetric(WhatIfMetric::underflow);  // dy: 0.31 %, 0 %, 2 %, 40 %
        QCOMPARE_EXACT(warmthOf(m, 0, 1), 0.0);
        QCOMPARE(background(m, 0, 1), neutral);
        QVERIFY(warmthOf(m, 0, 0) > 0);
        QVERIFY(warmthOf(m, 0, 2) > warmthOf(m, 0, 0));
        QCOMPARE(warmthOf(m, 0, 3), 1.0);  // 40 %: red
    }

    // The pickers change what the cells say: x's SQNR, then W's (the step number), then dy's
    // underflow, then saturation.
    void tensorAndMetricChangeTheNumbers() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        addStep(series, 10);
        WhatIfPanel panel;
        panel.setSeries(&series.whatIf());
        const WhatIfModel& m = *panel.model();
        QCOMPARE(cellText(m, 1, 3), QStringLiteral("5.0 dB"));
        panel.tensorPicker()->setCurrentIndex(1);
        emit panel.tensorPicker()->activated(1);
        QCOMPARE(m.tensor(), WhatIfTensor::weight);
        QCOMPARE(cellText(m, 1, 3), QStringLiteral("10.0 dB"));
        panel.tensorPicker()->setCurrentIndex(2);
        emit panel.tensorPicker()->activated(2);
        panel.metricPicker()->setCurrentIndex(1);
        emit panel.metricPicker()->activated(1);
        QCOMPARE(m.metric(), WhatIfMetric::underflow);
        QCOMPARE(cellText(m, 1, 3), QStringLiteral("40 %"));
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("0.31 %"));
        QVERIFY(panel.legendText().contains(QStringLiteral("Underflow")));
        QVERIFY(panel.legendText().contains(QStringLiteral("≥ 10 %")));
        panel.setMetric(WhatIfMetric::saturation);
        QCOMPARE(panel.metricPicker()->currentIndex(), 2);
        QCOMPARE(cellText(m, 1, 0), QStringLiteral("0.05 %"));
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("0 %"));
        panel.setMetric(WhatIfMetric::sqnr_db);
        QVERIFY(panel.legendText().contains(QStringLiteral("≥ 60 dB or exact")));
        QVERIFY(panel.legendText().contains(QStringLiteral("own operands")));
    }

    // The cell of the format a layer runs in is bold and framed; its tooltip says these are the
    // layer's own operands, and every cell's gives the three tensors' three numbers and counts.
    void ownFormatIsMarkedAndTooltipsSayAll() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        addStep(series, 10);
        WhatIfModel m;
        m.setSeries(&series.whatIf());
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 4; ++c) {
                const bool own = (r == 0 && c == 0) || (r == 1 && c == 3);
                QCOMPARE(m.index(r, c).data(WhatIfModel::CurrentFormatRole).toBool(), own);
                QCOMPARE(m.index(r, c).data(Qt::FontRole).value<QFont>().bold(), own);
            }
        const QString own = m.index(1, 3).data(Qt::ToolTipRole).toString();
        QVERIFY2(own.contains(QStringLiteral("fc2 runs in mxfp4: these are its own operands.")), qPrintable(own));
        const QString n = QLocale().toString(4096);
        QVERIFY2(own.contains(
                     QStringLiteral("x (input): SQNR 5.0 dB, underflow 0.1 %, saturation 0 %, of %1 values").arg(n)),
                 qPrintable(own));
        QVERIFY(own.contains(QStringLiteral("W (weight): SQNR 10.0 dB")));
        QVERIFY(own.contains(QStringLiteral("dy (output gradient): SQNR 40.0 dB, underflow 40 %, saturation 0.05 %")));
        QVERIFY(own.contains(QStringLiteral("step 10")));
        const QString other = m.index(1, 0).data(Qt::ToolTipRole).toString();
        QVERIFY2(other.contains(QStringLiteral("fc2 runs in mxfp4: this is what fp16 would do to its operands.")),
                 qPrintable(other));
        QVERIFY(!other.contains(QStringLiteral("its own operands.")));
        QCOMPARE(m.headerData(3, Qt::Horizontal).toString(), QStringLiteral("mxfp4"));
        QCOMPARE(m.headerData(1, Qt::Vertical).toString(), QStringLiteral("fc2"));
        QVERIFY(
            m.headerData(2, Qt::Horizontal, Qt::ToolTipRole).toString().contains(QStringLiteral("delayed scaling")));

        // The delegate frames the own cell in the text colour, and only that one.
        WhatIfDelegate delegate;
        const QColor frame = QGuiApplication::palette().color(QPalette::Text);
        const auto paint = [&](const QModelIndex& index) {
            QImage image(80, 24, QImage::Format_ARGB32);
            image.fill(Qt::white);
            QPainter p(&image);
            QStyleOptionViewItem option;
            option.rect = image.rect();
            option.palette = QGuiApplication::palette();
            option.state = QStyle::State_Enabled;
            delegate.paint(&p, option, index);
            p.end();
            return image;
        };
        const QImage framed = paint(m.index(1, 3)), plain = paint(m.index(1, 0));
        QCOMPARE(framed.pixelColor(0, 12), frame);
        QCOMPARE(framed.pixelColor(40, 0), frame);
        QCOMPARE(framed.pixelColor(79, 12), frame);
        QVERIFY(plain.pixelColor(0, 12) != frame);
        QVERIFY(plain.pixelColor(40, 0) != frame);
    }

    // No series, or one without what-if rows: the one sentence, no table; rows make the table.
    void emptyStateUntilRowsArrive() {
        WhatIfPanel panel;
        QVERIFY(panel.showsEmptyState());
        QCOMPARE(panel.emptyText(),
                 QStringLiteral("What-if statistics appear at statistics steps when train.what_if lists formats."));
        RunSeries series;
        series.reset({"fc1", "fc2"});
        StepRecord s;
        series.addStep(s);
        panel.setSeries(&series.whatIf());
        QVERIFY(panel.showsEmptyState());
        QVERIFY(panel.view()->isHidden() || !panel.view()->isVisibleTo(&panel));
        QCOMPARE(panel.model()->rowCount(), 0);
        addStep(series, 10);
        panel.sync();
        QVERIFY(!panel.showsEmptyState());
        QVERIFY(panel.emptyText().isEmpty());
        QVERIFY(panel.view()->isVisibleTo(&panel));
        QCOMPARE(panel.model()->rowCount(), 2);
        QCOMPARE(panel.model()->columnCount(), 4);
        addStep(series, 20);
        panel.sync();
        panel.stepSlider()->setValue(0);  // looking back at step 10 when the run is replaced
        QVERIFY(!panel.model()->following());

        series.reset({"fc1", "fc2"});  // a new run
        panel.sync();
        QVERIFY(panel.showsEmptyState());
        QCOMPARE(panel.model()->rowCount(), 0);
        addStep(series, 0);
        panel.sync();
        QVERIFY(panel.model()->following());  // the new run is followed from its first step
        QCOMPARE(panel.model()->shownStep(), std::optional<std::int64_t>(0));
        QCOMPARE(panel.stepText(), QStringLiteral("step 0 (latest)"));
    }

    // The latest step by default, following the run; the slider goes back to an earlier step,
    // which stays put while steps arrive; its right end (or Latest) follows again.
    void followsTheLatestAndGoesBack() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        addStep(series, 10);
        addStep(series, 20);
        WhatIfPanel panel;
        panel.setSeries(&series.whatIf());
        panel.setTensor(WhatIfTensor::weight);  // W's SQNR is the step number
        const WhatIfModel& m = *panel.model();
        QVERIFY(m.following());
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(20));
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("20.0 dB"));
        QCOMPARE(panel.stepText(), QStringLiteral("step 20 (latest)"));
        QCOMPARE(panel.stepSlider()->maximum(), 1);
        QCOMPARE(panel.stepSlider()->value(), 1);
        QVERIFY(!panel.latestButton()->isEnabled());

        addStep(series, 30);
        panel.sync();
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("30.0 dB"));
        QCOMPARE(panel.stepSlider()->value(), 2);

        panel.stepSlider()->setValue(0);  // a person drags back
        QVERIFY(!m.following());
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(10));
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("10.0 dB"));
        QCOMPARE(panel.stepText(), QStringLiteral("step 10"));
        QVERIFY(panel.latestButton()->isEnabled());

        addStep(series, 40);
        panel.sync();
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(10));  // held while the run goes on
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("10.0 dB"));
        QCOMPARE(panel.stepSlider()->maximum(), 3);
        QCOMPARE(panel.stepSlider()->value(), 0);

        panel.stepSlider()->setValue(panel.stepSlider()->maximum());  // the right end follows
        QVERIFY(m.following());
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("40.0 dB"));
        addStep(series, 50);
        panel.sync();
        QCOMPARE(cellText(m, 0, 0), QStringLiteral("50.0 dB"));
        QCOMPARE(panel.stepText(), QStringLiteral("step 50 (latest)"));

        panel.stepSlider()->setValue(1);
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(20));
        panel.latestButton()->click();
        QVERIFY(m.following());
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(50));
        QCOMPARE(panel.stepSlider()->value(), 4);
    }

    // The whole path on a real run: autocast bf16 with fc2 in mxfp4, statistics every 4 steps. The
    // window's What-if tab fills live (every linear layer, the run's formats in its order, each
    // layer's own format marked), and the run reopened from the store shows the same snapshots.
    void aRealRunFillsThePanelLiveAndReopened() {
        QTemporaryDir dir;
        auto w = window_test::openWindow(dir);
        Experiment e = window_test::endlessSpirals("what-if", {16, 16}, 0);
        e.train.layer_stats_every = 4;
        e.precision.autocast = Autocast::bf16;
        e.precision.layers["fc2"] = LayerPrecision::mxfp4;
        QVERIFY(!e.train.what_if.formats.empty());  // on by default
        w->setExperiment(e);
        w->setPace(200);  // steps a second: the ring is never full, so every statistics step arrives
        QVERIFY(w->whatIfPanel()->showsEmptyState());
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QVERIFY(QTest::qWaitFor([&] { return c->series().whatIf().snapshots().size() >= 3; }, 60000));
        const std::int64_t runId = c->runId();
        QVERIFY(window_test::stopAndWait(*w));
        w->refreshViews();

        QCOMPARE(c->droppedWhatIfSteps(), std::int64_t{0});
        const WhatIfSeries& live = c->series().whatIf();
        QCOMPARE(live.layers(), (std::vector<std::string>{"fc1", "fc2", "fc3"}));
        QCOMPARE(live.formats(), e.train.what_if.formats);
        for (std::size_t i = 1; i < live.snapshots().size(); ++i)
            QCOMPARE(live.snapshots()[i].step - live.snapshots()[i - 1].step, std::int64_t{4});
        WhatIfPanel* panel = w->whatIfPanel();
        QVERIFY(!panel->showsEmptyState());
        const WhatIfModel& m = *panel->model();
        QVERIFY(m.following());
        QCOMPARE(m.shownStep(), std::optional<std::int64_t>(live.snapshots().back().step));
        QCOMPARE(m.rowCount(), 3);
        QCOMPARE(m.columnCount(), static_cast<int>(e.train.what_if.formats.size()));
        int bf16 = -1, mxfp4 = -1;
        for (int col = 0; col < m.columnCount(); ++col) {
            const QString name = m.headerData(col, Qt::Horizontal).toString();
            const std::string_view want = e.train.what_if.formats[static_cast<std::size_t>(col)].name();
            QCOMPARE(name, QString::fromUtf8(want.data(), static_cast<qsizetype>(want.size())));
            if (name == QStringLiteral("bf16")) bf16 = col;
            if (name == QStringLiteral("mxfp4")) mxfp4 = col;
        }
        QVERIFY(bf16 >= 0 && mxfp4 >= 0);
        for (int row = 0; row < 3; ++row) {
            const int own = row == 1 ? mxfp4 : bf16;
            for (int col = 0; col < m.columnCount(); ++col) {
                QVERIFY(m.index(row, col).data(WhatIfModel::MeasuredRole).toBool());
                QVERIFY(!cellText(m, row, col).isEmpty());
                QCOMPARE(m.index(row, col).data(WhatIfModel::CurrentFormatRole).toBool(), col == own);
            }
        }
        QVERIFY(m.index(1, mxfp4)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("fc2 runs in mxfp4: these are its own operands.")));

        // The tab raised: the bottom docks grow until every layer's row is in sight (DockLayout), and
        // the heat map is drawn (with MANTISSA_SCREENSHOT_DIR set, pictured: what-if-heat-map.png).
        w->whatIfDock()->raise();
        QTableView* view = panel->view();
        QVERIFY(QTest::qWaitFor(
            [&] {
                return panel->isVisible() &&
                       view->rowViewportPosition(2) + view->rowHeight(2) <= view->viewport()->height();
            },
            5000));
        QVERIFY(!panel->grab().isNull());
        const QByteArray shots = qgetenv("MANTISSA_SCREENSHOT_DIR");
        if (!shots.isEmpty())
            QVERIFY(w->whatIfDock()->grab().save(
                QDir(QString::fromLocal8Bit(shots)).filePath(QStringLiteral("what-if-heat-map.png"))));

        auto store = std::make_shared<RunStore>(dir.filePath(QStringLiteral("runs.sqlite")).toStdString());
        RunViewer viewer(store, runId);
        QVERIFY(viewer.load());
        QVERIFY(viewer.whatIfPanel()->isVisibleTo(&viewer));
        QVERIFY(!viewer.whatIfPanel()->showsEmptyState());
        const WhatIfSeries& stored = viewer.series().whatIf();
        QCOMPARE(stored.layers(), live.layers());
        QCOMPARE(stored.formats(), live.formats());
        // Every statistics step, number for number.
        QCOMPARE(stored.snapshots().size(), live.snapshots().size());
        for (const WhatIfSnapshot& s : live.snapshots()) {
            const auto at = stored.snapshotAt(s.step);
            QVERIFY(at.has_value());
            QCOMPARE(stored.snapshots()[*at].step, s.step);
            for (std::size_t l = 0; l < live.layers().size(); ++l)
                for (std::size_t f = 0; f < live.formats().size(); ++f)
                    QVERIFY2(same(stored.cell(*at, l, f), live.cell(live.snapshotAt(s.step).value(), l, f)),
                             qPrintable(QStringLiteral("step %1, layer %2, format %3: %4 / %5")
                                            .arg(s.step)
                                            .arg(l)
                                            .arg(f)
                                            .arg(describe(stored.cell(*at, l, f)),
                                                 describe(live.cell(live.snapshotAt(s.step).value(), l, f)))));
        }
        QCOMPARE(viewer.whatIfPanel()->model()->index(1, mxfp4).data(WhatIfModel::CurrentFormatRole).toBool(), true);
    }
};

QTEST_MAIN(TestWhatIfPanel)
#include "test_what_if_panel.moc"
