// BlockMapPlot (see block_map_plot.h). Two colour maps over the same cells: the exponents (blocks
// of zeros and NaN blocks left NaN, so transparent) under a two-level map that paints only those.
#include "block_scales/block_map_plot.h"

#include <QHelpEvent>
#include <QLocale>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

#include "block_scales/block_plot_style.h"
#include "block_scales/block_scale_text.h"
#include "charts/axis_fit.h"

namespace mantissa::ui {

using namespace blockscale;

BlockMapPlot::BlockMapPlot(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("blockMapPlot"));
    setMinimumSize(160, 60);  // a short dock keeps its height for the charts; raised, the tab grows
    m_values = new QCPColorMap(xAxis, yAxis);
    m_values->setInterpolate(false);
    m_values->setTightBoundary(true);
    m_special = new QCPColorMap(xAxis, yAxis);
    m_special->setInterpolate(false);
    m_special->setTightBoundary(true);
    QCPColorGradient flat;
    flat.clearColorStops();
    flat.setColorStopAt(0, zeroBlockColor());
    flat.setColorStopAt(1, nanBlockColor());
    flat.setLevelCount(2);
    flat.setNanHandling(QCPColorGradient::nhTransparent);
    m_special->setGradient(flat);
    m_special->setDataRange(QCPRange(0, 1));
    m_scale = new QCPColorScale(this);
    plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(8);
    m_scale->axis()->setLabel(tr("exponent e (scale 2^e)"));
    m_values->setColorScale(m_scale);
    m_scale->setGradient(exponentGradient());
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    const int halfLabel = QFontMetrics(yAxis->tickLabelFont()).height() / 2 + 1;
    axisRect()->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    m_scale->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    yAxis->setRangeReversed(true);  // row 0 at the top, as a matrix is written
    stylePlot(this, m_scale);
    connect(this, &QCustomPlot::afterLayout, this, &BlockMapPlot::fitTicks);
    clearMap();
}

void BlockMapPlot::clearMap() {
    m_exponents.clear();
    m_range.reset();
    m_step = {};
    m_values->data()->clear();
    m_special->data()->clear();
    xAxis->setRange(0, 1);
    yAxis->setRange(0, 1);
    xAxis->setLabel(QString());
    yAxis->setLabel(QString());
    m_fitted = {};
    replot(QCustomPlot::rpQueuedReplot);
}

bool BlockMapPlot::showMap(const BlockScaleSeries& series, std::size_t tensor, std::size_t stepIndex) {
    const BlockScaleStep& step = series.steps(tensor)[stepIndex];
    const std::vector<std::int16_t>* map = series.map(tensor, step.step);
    if (!map || step.rows <= 0 || step.blocks_per_row <= 0 ||
        static_cast<std::int64_t>(map->size()) != step.rows * step.blocks_per_row) {
        clearMap();
        return false;
    }
    m_step = step;
    m_exponents = *map;
    const int blocks = static_cast<int>(step.blocks_per_row), rows = static_cast<int>(step.rows);
    const auto range = series.exponentRange(tensor);
    m_range = range.value_or(std::make_pair(0, 0));
    const QCPRange keys = blocks > 1 ? QCPRange(0, blocks - 1) : QCPRange(-0.5, 0.5);
    const QCPRange values = rows > 1 ? QCPRange(0, rows - 1) : QCPRange(-0.5, 0.5);
    auto* exponents = new QCPColorMapData(blocks, rows, keys, values);
    auto* special = new QCPColorMapData(blocks, rows, keys, values);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int r = 0; r < rows; ++r)
        for (int b = 0; b < blocks; ++b) {
            const std::int16_t e = m_exponents[static_cast<std::size_t>(r) * static_cast<std::size_t>(blocks) +
                                               static_cast<std::size_t>(b)];
            const bool zero = e == BlockScaleRecord::zero_block, bad = e == BlockScaleRecord::nan_block;
            exponents->setCell(b, r, zero || bad ? nan : e);
            special->setCell(b, r, zero ? 0.0 : bad ? 1.0 : nan);
        }
    m_values->setData(exponents);  // each takes ownership
    m_special->setData(special);
    // Half an exponent beyond each end: every exponent's colour is the bar's at its tick.
    m_values->setDataRange(QCPRange(m_range->first - 0.5, m_range->second + 0.5));
    xAxis->setRange(-0.5, blocks - 0.5);
    yAxis->setRange(-0.5, rows - 0.5);
    xAxis->setLabel(tr("block along k (%1 values each)").arg(blockSize(step.format)));
    yAxis->setLabel(step.rows < step.rows_total ? tr("row (sampled)") : tr("row"));
    m_fitted = {};
    fitTicks();
    replot(QCustomPlot::rpQueuedReplot);
    return true;
}

void BlockMapPlot::fitTicks() {
    if (m_fitted == axisRect()->size()) return;
    m_fitted = axisRect()->size();
    if (!hasMap()) return;
    const int blocks = static_cast<int>(m_step.blocks_per_row), rows = static_cast<int>(m_step.rows);
    const QFontMetrics fm(xAxis->tickLabelFont());
    xAxis->setTicker(integerTicker(0, blocks - 1, axisRect()->width(),
                                   fm.horizontalAdvance(QString::number(blocks)) + 6,
                                   [](int b) { return QString::number(b); }));
    const BlockScaleStep step = m_step;
    yAxis->setTicker(integerTicker(0, rows - 1, axisRect()->height(), tickLabelHeight(yAxis), [step](int r) {
        return QLocale().toString(static_cast<qlonglong>(realRow(step, r)));
    }));
    m_scale->axis()->setTicker(
        integerTicker(m_range->first, m_range->second,
                      m_scale->axis()->axisRect() ? m_scale->axis()->axisRect()->height() : axisRect()->height(),
                      tickLabelHeight(m_scale->axis()), [](int e) { return exponentText(e); }));
    // New ticks change the margins: lay out and draw once more (the next layout changes nothing).
    axisRect()->update(QCPLayoutElement::upPreparation);
    m_scale->update(QCPLayoutElement::upPreparation);
    replot(QCustomPlot::rpQueuedReplot);
}

QPointF BlockMapPlot::cellCentre(std::int64_t row, std::int64_t block) const {
    return {xAxis->coordToPixel(static_cast<double>(block)), yAxis->coordToPixel(static_cast<double>(row))};
}

QString BlockMapPlot::toolTipAt(const QPointF& pos) const {
    if (!hasMap() || !axisRect()->rect().contains(pos.toPoint())) return {};
    const auto block = static_cast<std::int64_t>(std::lround(xAxis->pixelToCoord(pos.x())));
    const auto row = static_cast<std::int64_t>(std::lround(yAxis->pixelToCoord(pos.y())));
    if (block < 0 || block >= m_step.blocks_per_row || row < 0 || row >= m_step.rows) return {};
    return blockToolTip(m_step, row, block, m_exponents[static_cast<std::size_t>(row * m_step.blocks_per_row + block)]);
}

bool BlockMapPlot::event(QEvent* event) {
    if (answerToolTip(this, event, [this](QPoint p) { return toolTipAt(p); })) return true;
    return QCustomPlot::event(event);
}

}  // namespace mantissa::ui
