// The Block scales panel and the path its data take: the telemetry ring's block-scale rings (a
// step's maps when there is room, else its distributions, never a wait), BlockScaleSeries keeping
// every step's distribution and the newest maps within its budget (an older map read again stays),
// the caption's counts, the picker's labels, the distribution's grid and tooltip, the map's flat
// colours for blocks of zeros and NaN blocks and its tooltips (rows of a sample by their real index,
// the values a block covers, NVFP4's scale), the step slider and the click that picks a step, the
// sentence for a map no longer held, and the empty states. Records are made here, except in the
// last two tests: a real run (spirals, CPU, fc1 in mxfp4) fills the window's panel live and a run
// viewer's when reopened, and a Fashion-MNIST run pictures the dock (MANTISSA_SCREENSHOT_DIR).
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QSlider>
#include <QToolButton>
#include <QtTest>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "block_scales/block_distribution_plot.h"
#include "block_scales/block_map_plot.h"
#include "block_scales/block_plot_style.h"
#include "block_scales/block_scale_panel.h"
#include "block_scales/block_scale_text.h"
#include "history/run_viewer.h"
#include "live/telemetry_ring.h"
#include "main_window_fixture.h"
#include "series/run_series.h"
#include "store/run_store.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

constexpr std::int16_t zeroBlock = BlockScaleRecord::zero_block;
constexpr std::int16_t nanBlock = BlockScaleRecord::nan_block;

BlockScaleRecord record(std::int64_t step, std::int32_t layer, const char* name, MatmulOperand operand,
                        BlockFormat format, bool own, std::int64_t rows, std::int64_t rowsTotal, std::int64_t k,
                        std::vector<std::int16_t> exponents) {
    BlockScaleRecord r;
    r.step = step;
    r.layer = layer;
    r.name = name;
    r.operand = operand;
    r.format = format;
    r.own = own;
    r.rows = rows;
    r.rows_total = rowsTotal;
    r.row_length = k;
    const int size = block_format_info(format).block_size;
    r.blocks_per_row = (k + size - 1) / size;
    r.exponents = std::move(exponents);
    return r;
}

// fc1's x in mxfp4 at `step`: 4 sampled rows of 8, K = 784, so 25 blocks of 32 values (the last
// holding 16). Every block at -5 - step/10, except the first column at -9 and the last at -2, two blocks
// of zeros (row 1 block 3, row 2 block 5) and one NaN block (row 3 block 7): 100 blocks.
BlockScaleRecord fc1x(std::int64_t step) {
    std::vector<std::int16_t> e(100, static_cast<std::int16_t>(-5 - step / 10));
    for (int r = 0; r < 4; ++r) {
        e[static_cast<std::size_t>(r * 25)] = -9;
        e[static_cast<std::size_t>(r * 25 + 24)] = -2;
    }
    e[1 * 25 + 3] = zeroBlock;
    e[2 * 25 + 5] = zeroBlock;
    e[3 * 25 + 7] = nanBlock;
    return record(step, 0, "fc1", MatmulOperand::input, BlockFormat::mxfp4, true, 4, 8, 784, std::move(e));
}

// fc2's W viewed in mxfp8-e4m3 (not its own): 2 rows of 64 values, 2 blocks each, all at 3.
BlockScaleRecord fc2w(std::int64_t step) {
    return record(step, 1, "fc2", MatmulOperand::weight, BlockFormat::mxfp8_e4m3, false, 2, 2, 64, {3, 3, 3, 3});
}

std::vector<BlockScaleRecord> stepRows(std::int64_t step) {
    return {fc2w(step), fc1x(step)};  // in the engine's backward order: the last layer first
}

int distance(const QColor& a, const QColor& b) {
    return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}

// Shows a panel over `series` at a size where both plots have room, laid out and drawn.
void showPanel(BlockScalePanel& panel, const BlockScaleSeries& series) {
    panel.resize(1200, 420);
    panel.setSeries(&series);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.distributionPlot()->replot();
    panel.mapPlot()->replot();
    QCoreApplication::processEvents();
}

bool sameHistogram(const BlockScaleHistogram& a, const BlockScaleHistogram& b) {
    return a.zero_blocks == b.zero_blocks && a.nan_blocks == b.nan_blocks && a.counts == b.counts &&
           (a.counts.empty() || a.min_exponent == b.min_exponent);
}

}  // namespace

class TestBlockScalePanel : public QObject {
    Q_OBJECT
private slots:
    // A record's distribution is the engine's (block_scale_histogram), kept per step; tensors sort
    // by layer and then x, W, dy whatever order they come in.
    void seriesKeepsTheEnginesDistribution() {
        BlockScaleSeries s;
        s.addRecords(stepRows(0));
        QCOMPARE(s.tensors().size(), std::size_t{2});
        QCOMPARE(s.tensors()[0].name, std::string("fc1"));
        QCOMPARE(s.tensors()[1].operand, MatmulOperand::weight);
        const BlockScaleHistogram h = s.histogram(0, 0);
        QVERIFY(sameHistogram(h, block_scale_histogram(fc1x(0))));
        QCOMPARE(h.min_exponent, -9);
        QCOMPARE(h.max_exponent(), -2);
        QCOMPARE(h.counts.front(), std::int64_t{4});
        QCOMPARE(h.counts[4], std::int64_t{89});  // -5
        QCOMPARE(h.zero_blocks, std::int64_t{2});
        QCOMPARE(h.nan_blocks, std::int64_t{1});
        QCOMPARE(h.median_exponent(), -5);
        const BlockScaleStep& e = s.steps(0)[0];
        QCOMPARE(e.blocks_per_row, std::int64_t{25});
        QCOMPARE(e.rows_total, std::int64_t{8});
        QCOMPARE(s.mapState(0, 0), BlockMapState::held);
        QCOMPARE(s.map(0, 0)->size(), std::size_t{100});
        QCOMPARE((*s.map(0, 0))[3 * 25 + 7], nanBlock);

        // The grid: one column per statistics step (every 10 here), fractions of every block.
        s.addRecords(stepRows(10));
        s.addRecords(stepRows(20));
        const BlockScaleGrid g = s.grid(0, 100);
        QCOMPARE(g.columns, 3);
        QCOMPARE(g.stepsPerColumn, std::int64_t{10});
        QCOMPARE(g.minExponent, -9);  // over the run: -5, -6, -7 in the middle
        QCOMPARE(g.maxExponent, -2);
        QCOMPARE(g.at(0, -5), 0.89);
        QVERIFY(std::isnan(g.at(0, -6)));  // empty: blank
        QCOMPARE(g.at(1, -6), 0.89);
        QCOMPARE(g.zeroFraction[2], 0.02);
        QCOMPARE(g.nanFraction[2], 0.01);
        QCOMPARE(g.blocks[1], std::int64_t{100});
        // Too many steps for the columns: merged, shares of the merged steps' blocks.
        const BlockScaleGrid merged = s.grid(0, 2);
        QCOMPARE(merged.columns, 2);
        QCOMPARE(merged.stepsPerColumn, std::int64_t{20});
        QCOMPARE(merged.blocks[0], std::int64_t{200});
        QCOMPARE(merged.at(0, -9), 0.04);
    }

    // A step's maps go through a ring of their own; a step that finds it full sends its
    // distributions through the second ring, and only a step that finds both full is lost, each
    // counted and none waited for. The series takes both, in any order of steps.
    void ringSendsMapsOrElseDistributions() {
        TelemetryRing ring(2, 8, 8, 8, 8, 2, 2);
        for (std::int64_t step = 0; step < 50; step += 10) ring.on_block_scales(stepRows(step));
        QCOMPARE(ring.droppedBlockMaps(), std::int64_t{3});
        QCOMPARE(ring.droppedBlockScales(), std::int64_t{1});  // step 40
        QCOMPARE(ring.droppedSteps(), std::int64_t{0});
        RunSeries series;
        series.reset({"fc1", "fc2"});
        // Summaries first: the series sorts the steps.
        QCOMPARE(ring.drainBlockScaleSummaries([&](BlockScaleSummaryPacket& p) {
            QCOMPARE(p.rows.size(), std::size_t{2});
            series.addBlockScaleSummaries(p.rows);
        }),
                 std::size_t{2});
        QCOMPARE(ring.drainBlockScales([&](BlockScalePacket& p) { series.addBlockScales(p.rows); }), std::size_t{2});
        const BlockScaleSeries& s = series.blockScales();
        QCOMPARE(s.steps(0).size(), std::size_t{4});
        std::vector<std::int64_t> steps;
        for (const BlockScaleStep& e : s.steps(0)) steps.push_back(e.step);
        QCOMPARE(steps, (std::vector<std::int64_t>{0, 10, 20, 30}));
        QCOMPARE(s.mapState(0, 10), BlockMapState::held);
        QCOMPARE(s.mapState(0, 20), BlockMapState::notDelivered);
        QCOMPARE(s.mapState(0, 40), BlockMapState::noStep);
        QVERIFY(sameHistogram(s.histogram(0, 2), block_scale_histogram(fc1x(20))));  // counted on the way
        series.reset({"fc1"});
        QVERIFY(series.blockScales().empty());
    }

    // The budget: maps go oldest first until it is kept, never the newest step's; every step's
    // distribution stays. An older map read again is the newest held and stays.
    void budgetDropsOldMapsButKeepsDistributions() {
        // Each step: fc1's 100 exponents and fc2's 4, with their overhead.
        const std::size_t perStep = 100 * 2 + 4 * 2 + 2 * BlockScaleSeries::mapOverhead;
        BlockScaleSeries s(3 * perStep);
        for (std::int64_t step = 0; step < 100; step += 10) s.addRecords(stepRows(step));
        QCOMPARE(s.steps(0).size(), std::size_t{10});
        QCOMPARE(s.steps(1).size(), std::size_t{10});
        QVERIFY(s.mapBytes() <= s.mapBudget());
        QCOMPARE(s.mapBytes(), 3 * perStep);
        QCOMPARE(s.mapsHeld(), std::size_t{6});
        QCOMPARE(s.heldSteps(), (std::optional<std::pair<std::int64_t, std::int64_t>>({70, 90})));
        QCOMPARE(s.mapState(0, 60), BlockMapState::evicted);
        QCOMPARE(s.mapState(1, 0), BlockMapState::evicted);
        QCOMPARE(s.mapState(0, 90), BlockMapState::held);
        for (std::size_t i = 0; i < 10; ++i)
            QVERIFY(sameHistogram(s.histogram(0, i), block_scale_histogram(fc1x(static_cast<std::int64_t>(i) * 10))));
        QCOMPARE(s.mapBytesOfStep(20), perStep);

        s.addRecords(stepRows(20));  // read again: held, and the oldest held (step 70) goes
        QCOMPARE(s.mapState(0, 20), BlockMapState::held);
        QCOMPARE(s.mapState(0, 70), BlockMapState::evicted);
        QCOMPARE(s.steps(0).size(), std::size_t{10});
        QCOMPARE(s.mapsHeld(), std::size_t{6});
        QCOMPARE(s.mapBytes(), 3 * perStep);
        s.addRecords(stepRows(20));  // the same again replaces, counts nothing twice
        QCOMPARE(s.mapBytes(), 3 * perStep);
        QCOMPARE(s.mapsHeld(), std::size_t{6});
        QVERIFY(sameHistogram(s.histogram(0, 2), block_scale_histogram(fc1x(20))));

        // A budget smaller than one step keeps the newest step's maps all the same.
        s.setMapBudget(10);
        QCOMPARE(s.mapsHeld(), std::size_t{2});
        QCOMPARE(s.heldSteps(), (std::optional<std::pair<std::int64_t, std::int64_t>>({20, 20})));
        s.addRecords(stepRows(100));
        QCOMPARE(s.heldSteps(), (std::optional<std::pair<std::int64_t, std::int64_t>>({100, 100})));
        QCOMPARE(s.steps(0).size(), std::size_t{11});
    }

    // The caption counts the step's blocks; the picker names each tensor with its format and whether
    // it is the layer's own.
    void captionAndPickerSayTheCounts() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        series.addBlockScales(stepRows(0));
        BlockScalePanel panel;
        panel.setSeries(&series.blockScales());
        QVERIFY(!panel.showsEmptyState());
        QCOMPARE(panel.tensorPicker()->count(), 2);
        QCOMPARE(panel.tensorPicker()->itemText(0), QStringLiteral("fc1 · x (mxfp4, own)"));
        QCOMPARE(panel.tensorPicker()->itemText(1), QStringLiteral("fc2 · W (mxfp8-e4m3, as if)"));
        QCOMPARE(panel.captionText(),
                 QStringLiteral("fc1 · x in mxfp4 (the layer's own format), 4 of 8 rows × 25 blocks of 32 values "
                                "(K = 784), exponents −9…−2, median −5, 2 zero blocks, 1 NaN block"));
        QCOMPARE(panel.stepText(), QStringLiteral("step 0 (latest)"));
        panel.tensorPicker()->setCurrentIndex(1);
        emit panel.tensorPicker()->activated(1);
        QCOMPARE(panel.shownTensor(), std::optional<std::size_t>(1));
        QCOMPARE(panel.captionText(),
                 QStringLiteral("fc2 · W in mxfp8-e4m3 (train.block_scales.format; the layer runs another format), "
                                "2 of 2 rows × 2 blocks of 32 values, exponents 3…3, median 3, 0 zero blocks"));
        QVERIFY(panel.legendText().contains(QStringLiteral("a block of zeros")));
        QVERIFY(panel.legendText().contains(QStringLiteral("a block with a NaN or an infinity")));
        QVERIFY(panel.heldText().startsWith(QStringLiteral("Maps held: steps 0–0")));
        QVERIFY(panel.heldText().contains(QStringLiteral("32 MiB")));
    }

    // Blocks of zeros and NaN blocks are drawn in their flat colours, every other block in the
    // exponent gradient's colour at its exponent, on a scale over the tensor's whole run.
    void sentinelsAreColouredApart() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        series.addBlockScales(stepRows(0));
        series.addBlockScales(stepRows(20));  // exponents down to -9, the middle at -7 here
        BlockScalePanel panel;
        showPanel(panel, series.blockScales());
        BlockMapPlot* map = panel.mapPlot();
        QVERIFY(map->hasMap());
        QCOMPARE(map->colourRange(), (std::optional<std::pair<int, int>>({-9, -2})));
        const QImage image = map->grab().toImage();
        const auto at = [&](int row, int block) { return image.pixelColor(map->cellCentre(row, block).toPoint()); };
        QCOMPARE(at(1, 3), blockscale::zeroBlockColor());
        QCOMPARE(at(2, 5), blockscale::zeroBlockColor());
        QCOMPARE(at(3, 7), blockscale::nanBlockColor());
        const QCPRange range(-9.5, -1.5);
        QCPColorGradient gradient = blockscale::exponentGradient();
        const QColor low = QColor::fromRgb(gradient.color(-9, range)),
                     high = QColor::fromRgb(gradient.color(-2, range));
        const QColor middle = QColor::fromRgb(gradient.color(-7, range));
        QVERIFY2(distance(at(0, 0), low) <= 6, qPrintable(at(0, 0).name() + QStringLiteral(" / ") + low.name()));
        QVERIFY2(distance(at(0, 24), high) <= 6, qPrintable(at(0, 24).name() + QStringLiteral(" / ") + high.name()));
        QVERIFY2(distance(at(2, 10), middle) <= 6,
                 qPrintable(at(2, 10).name() + QStringLiteral(" / ") + middle.name()));
        for (const QColor& c : {at(0, 0), at(0, 24), at(2, 10)}) {
            QVERIFY(distance(c, blockscale::zeroBlockColor()) > 60);
            QVERIFY(distance(c, blockscale::nanBlockColor()) > 60);
        }
        QVERIFY(distance(low, high) > 200);
    }

    // A block's tooltip: its real row (a sample's), the values k0…k1 it covers, its exponent and
    // scale; for NVFP4 what the power of two is of; for the sentinels what they mean.
    void blockTooltipsSayWhereAndWhat() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        series.addBlockScales(stepRows(0));
        series.addBlockScales(
            {record(0, 2, "fc3", MatmulOperand::grad_output, BlockFormat::nvfp4, true, 1, 1, 40, {-7, 0, zeroBlock})});
        BlockScalePanel panel;
        showPanel(panel, series.blockScales());
        BlockMapPlot* map = panel.mapPlot();
        const QString last = map->toolTipAt(map->cellCentre(3, 24));
        QVERIFY2(last.contains(QStringLiteral("row 6 (sampled row 4 of 4), block 24: values k = 768…783 of 784")),
                 qPrintable(last));
        QVERIFY2(last.contains(QStringLiteral("Exponent −2: the block's scale is 2^−2 = 0.25.")), qPrintable(last));
        QVERIFY(!last.contains(QStringLiteral("NVFP4")));
        const QString first = map->toolTipAt(map->cellCentre(1, 1));
        QVERIFY2(first.contains(QStringLiteral("row 2 (sampled row 2 of 4), block 1: values k = 32…63")),
                 qPrintable(first));
        QVERIFY(first.contains(QStringLiteral("Exponent −5: the block's scale is 2^−5 = 0.03125.")));
        QVERIFY(map->toolTipAt(map->cellCentre(1, 3)).contains(QStringLiteral("A block of zeros")));
        QVERIFY(map->toolTipAt(map->cellCentre(3, 7)).contains(QStringLiteral("NaN or an infinity")));

        panel.setTensor(2);  // fc3 · dy in NVFP4: blocks of 16, all rows (no sample)
        QCOMPARE(panel.tensorPicker()->currentText(), QStringLiteral("fc3 · dy (nvfp4, own)"));
        map->replot();
        const QString nv = map->toolTipAt(map->cellCentre(0, 2));
        QVERIFY2(nv.contains(QStringLiteral("row 0, block 2: values k = 32…39 of 40")), qPrintable(nv));
        QVERIFY(nv.contains(QStringLiteral("A block of zeros")));
        const QString scaled = map->toolTipAt(map->cellCentre(0, 0));
        QVERIFY(scaled.contains(QStringLiteral("Exponent −7: the block's scale is 2^−7 = 0.0078125.")));
        QVERIFY2(scaled.contains(QStringLiteral("NVFP4: the block's E4M3 scale over the tensor's FP32 scale, floored "
                                                "to a power of two.")),
                 qPrintable(scaled));
        QVERIFY(
            panel.captionText().startsWith(QStringLiteral("fc3 · dy in nvfp4 (the layer's own format), 1 of 1 rows "
                                                          "× 3 blocks of 16 values (K = 40)")));
    }

    // The distribution: a column per statistics step, the exponents' rows with a "zero" row under
    // and a "NaN" row over them; a cell's tooltip counts its blocks; the marker is on the step shown.
    void distributionShowsEveryStep() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        for (std::int64_t step = 0; step <= 40; step += 10) series.addBlockScales(stepRows(step));
        BlockScalePanel panel;
        showPanel(panel, series.blockScales());
        BlockDistributionPlot* plot = panel.distributionPlot();
        QCOMPARE(plot->grid().columns, 5);
        QCOMPARE(plot->zeroRow(), std::optional<int>(-11));
        QCOMPARE(plot->nanRow(), std::optional<int>(0));
        QCOMPARE(plot->marker(), std::optional<std::int64_t>(40));
        const auto cell = [&](std::int64_t step, int exponent) {
            return QPointF(plot->xAxis->coordToPixel(static_cast<double>(step)), plot->yAxis->coordToPixel(exponent));
        };
        const QString tip = plot->toolTipAt(cell(20, -7));
        QVERIFY2(tip.startsWith(QStringLiteral("step 20\nexponent −7 (scale 2^−7 = 0.0078125): 89 of 100 blocks "
                                               "(89 %)")),
                 qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("blocks of zeros 2 · NaN blocks 1")), qPrintable(tip));
        QVERIFY(plot->toolTipAt(cell(20, -11)).contains(QStringLiteral("blocks of zeros: 2 of 100 blocks (2.0 %)")));
        QVERIFY(plot->toolTipAt(cell(20, 0)).contains(QStringLiteral("a NaN or an infinity: 1 of 100 blocks")));
        QCOMPARE(plot->stepAtPixel(cell(21, -7).x()), std::optional<std::int64_t>(20));
        // A tensor without zero or NaN blocks has neither row.
        panel.setTensor(1);
        QCOMPARE(plot->zeroRow(), std::nullopt);
        QCOMPARE(plot->nanRow(), std::nullopt);
        QCOMPARE(plot->grid().rows(), 1);
    }

    // Live the panel follows the newest step; the slider or a click on the distribution picks an
    // earlier one, which stays while steps arrive; the right end (or Latest) follows again.
    void sliderAndClickPickSteps() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        for (std::int64_t step = 0; step <= 20; step += 10) series.addBlockScales(stepRows(step));
        BlockScalePanel panel;
        showPanel(panel, series.blockScales());
        QVERIFY(panel.following());
        QCOMPARE(panel.shownStep(), std::optional<std::int64_t>(20));
        QCOMPARE(panel.stepSlider()->maximum(), 2);
        QCOMPARE(panel.stepSlider()->value(), 2);
        QVERIFY(!panel.latestButton()->isEnabled());
        QVERIFY(panel.captionText().contains(QStringLiteral("median −7")));

        panel.stepSlider()->setValue(0);  // a person drags back
        QVERIFY(!panel.following());
        QCOMPARE(panel.shownStep(), std::optional<std::int64_t>(0));
        QCOMPARE(panel.stepText(), QStringLiteral("step 0"));
        QVERIFY(panel.captionText().contains(QStringLiteral("median −5")));
        QCOMPARE(panel.distributionPlot()->marker(), std::optional<std::int64_t>(0));
        QCOMPARE(panel.mapPlot()->step().step, std::int64_t{0});
        QVERIFY(panel.latestButton()->isEnabled());

        series.addBlockScales(stepRows(30));
        panel.sync();
        QCOMPARE(panel.shownStep(), std::optional<std::int64_t>(0));  // held while the run goes on
        QCOMPARE(panel.stepSlider()->maximum(), 3);
        QCOMPARE(panel.stepSlider()->value(), 0);

        emit panel.distributionPlot()->stepClicked(10);  // a click on the distribution
        QCOMPARE(panel.shownStep(), std::optional<std::int64_t>(10));
        QCOMPARE(panel.stepSlider()->value(), 1);
        QVERIFY(panel.captionText().contains(QStringLiteral("median −6")));

        panel.stepSlider()->setValue(panel.stepSlider()->maximum());  // the right end follows
        QVERIFY(panel.following());
        series.addBlockScales(stepRows(40));
        panel.sync();
        QCOMPARE(panel.shownStep(), std::optional<std::int64_t>(40));
        QCOMPARE(panel.stepText(), QStringLiteral("step 40 (latest)"));
        QCOMPARE(panel.mapPlot()->step().step, std::int64_t{40});

        panel.showStep(20);
        panel.latestButton()->click();
        QVERIFY(panel.following());
        QCOMPARE(panel.stepSlider()->value(), 4);
    }

    // A step whose map the budget pushed out: live, a sentence says so (its distribution stays
    // drawn); with a loader (a reopened run) the panel reads it again and draws it.
    void aMapNoLongerHeldIsSaidOrReadAgain() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        for (std::int64_t step = 0; step <= 90; step += 10) series.addBlockScales(stepRows(step));
        BlockScalePanel panel;
        showPanel(panel, series.blockScales());
        const BlockScaleSeries& s = series.blockScales();
        QVERIFY(s.mapState(0, 0) == BlockMapState::held);  // 32 MiB holds these small maps
        // A series with a budget of two steps' maps, as a long run's would be.
        BlockScaleSeries small(2 * (100 * 2 + 4 * 2 + 2 * BlockScaleSeries::mapOverhead));
        for (std::int64_t step = 0; step <= 90; step += 10) small.addRecords(stepRows(step));
        panel.setSeries(&small);
        panel.showStep(30);
        QVERIFY(!panel.mapPlot()->hasMap());
        const QString why = panel.missingMapText();
        QVERIFY2(
            why.startsWith(QStringLiteral("The block map of step 30 is no longer held: the window keeps the maps of "
                                          "the newest steps within")),
            qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("(now steps 80–90)")), qPrintable(why));
        QVERIFY(why.contains(QStringLiteral("Run history")));
        QCOMPARE(panel.distributionPlot()->grid().columns, 10);              // every step's distribution
        QVERIFY(panel.captionText().contains(QStringLiteral("median −8")));  // from the distribution kept

        // With a loader: the panel asks once for the step, and shows the map read.
        int asked = 0;
        panel.setMapLoader([&](std::int64_t step) {
            ++asked;
            small.addRecords(stepRows(step));
            return QString();
        });
        panel.showStep(40);
        QCOMPARE(asked, 1);
        QVERIFY(panel.mapPlot()->hasMap());
        QCOMPARE(panel.mapPlot()->step().step, std::int64_t{40});
        QVERIFY(panel.missingMapText().isEmpty());
        panel.sync();
        QCOMPARE(asked, 1);

        // A loader that fails says why, and is not asked again for the same map.
        panel.setMapLoader([&](std::int64_t) {
            ++asked;
            return QStringLiteral("the store is gone");
        });
        panel.showStep(10);
        QCOMPARE(asked, 2);
        QVERIFY(
            panel.missingMapText().contains(QStringLiteral("could not be read from the run store: the store is gone")));
        panel.sync();
        panel.showStep(10);
        QCOMPARE(asked, 2);
    }

    void emptySentences_data() {
        QTest::addColumn<int>("expectation");
        QTest::addColumn<QString>("sentence");
        QTest::newRow("none") << static_cast<int>(blockscale::Expectation::none)
                              << QStringLiteral(
                                     "No block-scaled operands in this run: set a layer to mxfp8, mxfp6, "
                                     "mxfp4 or nvfp4, or train.block_scales.format to view every layer "
                                     "in one.");
        QTest::newRow("off") << static_cast<int>(blockscale::Expectation::off)
                             << QStringLiteral(
                                    "Block-scale views are off in this run (train.block_scales.format is "
                                    "\"off\").");
        QTest::newRow("expected") << static_cast<int>(blockscale::Expectation::expected)
                                  << QStringLiteral(
                                         "The block scales appear at the run's first statistics step "
                                         "(train.layer_stats_every).");
    }
    // No views: one sentence, for what the experiment asks; views replace it; a new run (the
    // series cleared) shows it again and is followed from its first step.
    void emptySentences() {
        QFETCH(int, expectation);
        QFETCH(QString, sentence);
        BlockScalePanel panel;
        panel.setExpectation(static_cast<blockscale::Expectation>(expectation));
        QVERIFY(panel.showsEmptyState());
        QCOMPARE(panel.emptyText(), sentence);
        RunSeries series;
        series.reset({"fc1", "fc2"});
        panel.setSeries(&series.blockScales());
        QVERIFY(panel.showsEmptyState());
        series.addBlockScales(stepRows(0));
        series.addBlockScales(stepRows(10));
        panel.sync();
        QVERIFY(!panel.showsEmptyState());
        panel.stepSlider()->setValue(0);
        QVERIFY(!panel.following());
        series.reset({"fc1", "fc2"});
        panel.sync();
        QVERIFY(panel.showsEmptyState());
        series.addBlockScales(stepRows(0));
        panel.sync();
        QVERIFY(panel.following());
        QCOMPARE(panel.stepText(), QStringLiteral("step 0 (latest)"));
    }

    // What an experiment asks for decides the sentence.
    void expectationFollowsTheExperiment() {
        Experiment e;
        QCOMPARE(blockscale::expectationOf(e), blockscale::Expectation::none);
        e.precision.layers["fc2"] = LayerPrecision::fp16;
        QCOMPARE(blockscale::expectationOf(e), blockscale::Expectation::none);
        LayerSetting wgradOnly;
        wgradOnly.wgrad = LayerPrecision::nvfp4;
        e.precision.layers["fc1"] = wgradOnly;
        QCOMPARE(blockscale::expectationOf(e), blockscale::Expectation::expected);
        e.precision.layers.clear();
        e.train.block_scales.format = BlockFormat::mxfp8_e4m3;
        QCOMPARE(blockscale::expectationOf(e), blockscale::Expectation::expected);
        e.train.block_scales.enabled = false;
        QCOMPARE(blockscale::expectationOf(e), blockscale::Expectation::off);
    }

    // The whole path on a real run: spirals with fc1 in mxfp4, statistics every 4 steps. The
    // window's Block scales tab fills live with fc1's x, W and dy in mxfp4 (its own format), and the
    // run reopened from the store shows the same steps, distributions and maps.
    void aRealRunFillsThePanelLiveAndReopened() {
        QTemporaryDir dir;
        auto w = window_test::openWindow(dir);
        Experiment e = window_test::endlessSpirals("block-scales", {64, 64}, 0);
        e.train.layer_stats_every = 4;
        e.precision.layers["fc1"] = LayerPrecision::mxfp4;
        w->setExperiment(e);
        // Steps a second: 12 statistics steps a second against a ring of 8 maps drained at 30 Hz,
        // so only a GUI stalled for over half a second would lose a map.
        w->setPace(50);
        BlockScalePanel* panel = w->blockScalePanel();
        QVERIFY(panel->showsEmptyState());
        QCOMPARE(panel->emptyText(), blockscale::emptySentence(blockscale::Expectation::expected));
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        const BlockScaleSeries& live = c->series().blockScales();
        QVERIFY(QTest::qWaitFor([&] { return !live.empty() && live.steps(0).size() >= 4; }, 60000));
        const std::int64_t runId = c->runId();
        QVERIFY(window_test::stopAndWait(*w));
        w->refreshViews();

        // Every step's distribution arrived; a step whose maps found their small ring full (a
        // stalled test machine) came without its map, and says so.
        QCOMPARE(c->droppedBlockScaleSteps(), std::int64_t{0});
        std::vector<std::string> names;
        for (const BlockScaleTensor& t : live.tensors()) names.push_back(t.name + " " + matmul_operand_name(t.operand));
        QCOMPARE(names, (std::vector<std::string>{"fc1 x", "fc1 W", "fc1 dy"}));
        std::int64_t withoutMap = 0;
        for (std::size_t t = 0; t < live.tensors().size(); ++t) {
            const auto& steps = live.steps(t);
            for (std::size_t i = 0; i < steps.size(); ++i) {
                QCOMPARE(steps[i].format, BlockFormat::mxfp4);
                QVERIFY(steps[i].own);
                if (i > 0) QCOMPARE(steps[i].step - steps[i - 1].step, std::int64_t{4});
                // Every block is counted once: the distribution's blocks are the map's.
                QCOMPARE(live.histogram(t, i).blocks(), steps[i].rows * steps[i].blocks_per_row);
                const BlockMapState state = live.mapState(t, steps[i].step);
                QVERIFY(state == BlockMapState::held || state == BlockMapState::notDelivered);
                withoutMap += state == BlockMapState::notDelivered && t == 0;
            }
        }
        QCOMPARE(withoutMap, c->droppedBlockMaps());
        QCOMPARE(live.mapState(0, live.steps(0).back().step), BlockMapState::held);  // the newest came whole
        QVERIFY(!panel->showsEmptyState());
        QVERIFY(panel->following());
        QCOMPARE(panel->tensorPicker()->itemText(0), QStringLiteral("fc1 · x (mxfp4, own)"));
        QVERIFY2(panel->captionText().startsWith(QStringLiteral("fc1 · x in mxfp4 (the layer's own format), 32 of 32 "
                                                                "rows × 1 block of 32 values (K = 2)")),
                 qPrintable(panel->captionText()));
        QCOMPARE(panel->shownStep(), std::optional<std::int64_t>(live.steps(0).back().step));
        // Behind the Events tab the plots wait (nothing is drawn that cannot be seen) ...
        QVERIFY(!panel->drawing());
        QVERIFY(!panel->mapPlot()->hasMap());
        QCOMPARE(panel->distributionPlot()->grid().columns, 0);

        // ... and the tab raised, they catch up, and the bottom docks grow to the panel's usable height.
        w->blockScaleDock()->raise();
        QVERIFY(QTest::qWaitFor(
            [&] { return panel->drawing() && panel->height() >= BlockScalePanel::usableHeight - 8; }, 5000));
        QVERIFY(panel->mapPlot()->hasMap());
        QCOMPARE(panel->mapPlot()->step().step, live.steps(0).back().step);
        QCOMPARE(panel->distributionPlot()->grid().columns, static_cast<int>(live.steps(0).size()));
        QVERIFY(!panel->grab().isNull());

        auto store = std::make_shared<RunStore>(dir.filePath(QStringLiteral("runs.sqlite")).toStdString());
        RunViewer viewer(store, runId);
        QVERIFY(viewer.load());
        QVERIFY(viewer.blockScalePanel()->isVisibleTo(&viewer));
        QVERIFY(!viewer.blockScalePanel()->showsEmptyState());
        const BlockScaleSeries& stored = viewer.series().blockScales();
        QCOMPARE(stored.tensors().size(), live.tensors().size());
        for (std::size_t t = 0; t < live.tensors().size(); ++t) {
            QCOMPARE(stored.tensors()[t].name, live.tensors()[t].name);
            QCOMPARE(stored.tensors()[t].operand, live.tensors()[t].operand);
            // The store has every statistics step the run took; live had them all too (none dropped).
            QCOMPARE(stored.steps(t).size(), live.steps(t).size());
            for (std::size_t i = 0; i < live.steps(t).size(); ++i) {
                const std::int64_t step = live.steps(t)[i].step;
                QCOMPARE(stored.steps(t)[i].step, step);
                QVERIFY(sameHistogram(stored.histogram(t, i), live.histogram(t, i)));
                QCOMPARE(stored.mapState(t, step), BlockMapState::held);  // the store has every map
                if (live.map(t, step)) QCOMPARE(*stored.map(t, step), *live.map(t, step));
            }
        }
        QCOMPARE(viewer.blockScalePanel()->captionText(), panel->captionText());
        // Shown, the viewer grows to room for the panel's plots and draws the newest step's map.
        viewer.show();
        QVERIFY(QTest::qWaitForWindowExposed(&viewer));
        QVERIFY(viewer.width() >= 1500);
        QVERIFY(QTest::qWaitFor([&] { return viewer.blockScalePanel()->mapPlot()->hasMap(); }, 5000));
        QCOMPARE(viewer.blockScalePanel()->mapPlot()->step().step, live.steps(0).back().step);
    }

    // The picture in docs/gui.md (docs/screenshots/block-scales.png): a Fashion-MNIST MLP with fc1
    // in mxfp4 and fc2 in nvfp4, 120 steps, statistics every 4; fc1's dy shown, the dock raised and
    // widened. Only with MANTISSA_SCREENSHOT_DIR set and the dataset installed.
    void screenshotOfAFashionMnistRun() {
        const QByteArray shots = qgetenv("MANTISSA_SCREENSHOT_DIR");
        const QString data = QStringLiteral("/usr/share/datasets/fashion-mnist");
        if (shots.isEmpty()) QSKIP("MANTISSA_SCREENSHOT_DIR is not set");
        if (!QFileInfo::exists(data + QStringLiteral("/train-images-idx3-ubyte.gz")))
            QSKIP("Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist");
        QTemporaryDir dir;
        auto w = window_test::openWindow(dir, {1600, 1000});
        Experiment e;
        e.name = "block-scales";
        e.dataset.kind = "fashion-mnist";
        e.dataset.path = data.toStdString();
        e.model.hidden = {256, 128};
        e.train.batch_size = 128;
        e.train.steps = 120;
        e.train.eval_every = 0;
        e.train.layer_stats_every = 4;
        e.precision.autocast = Autocast::bf16;
        e.precision.loss_scaling.mode = LossScalingMode::off;
        e.precision.layers["fc1"] = LayerPrecision::mxfp4;
        e.precision.layers["fc2"] = LayerPrecision::nvfp4;
        e.backend = "cpu";
        w->setExperiment(e);
        QVERIFY(w->startRun());
        QVERIFY(QTest::qWaitFor([&] { return !w->controller()->active(); }, 120000));
        w->refreshViews();
        BlockScalePanel* panel = w->blockScalePanel();
        QVERIFY(!panel->showsEmptyState());
        // fc1's output gradient: its blocks' scales fall and spread as the loss falls.
        const auto dy = w->controller()->series().blockScales().tensorIndex("fc1", MatmulOperand::grad_output);
        QVERIFY(dy.has_value());
        panel->setTensor(*dy);
        panel->followLatest();
        w->blockScaleDock()->raise();
        // The Layers dock beside it made narrow: the two plots side by side want the width.
        QTest::qWait(100);
        w->resizeDocks({w->findChild<QDockWidget*>(QStringLiteral("layersDock")), w->blockScaleDock()}, {420, 1150},
                       Qt::Horizontal);
        QTest::qWait(300);
        QVERIFY(QTest::qWaitFor([&] { return panel->isVisible() && panel->width() >= 1000; }, 5000));
        QTest::qWait(200);
        panel->distributionPlot()->replot();
        panel->mapPlot()->replot();
        QVERIFY(w->blockScaleDock()->grab().save(
            QDir(QString::fromLocal8Bit(shots)).filePath(QStringLiteral("block-scales.png"))));
    }
};

QTEST_MAIN(TestBlockScalePanel)
#include "test_block_scale_panel.moc"
