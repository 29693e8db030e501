// BlockDistributionPlot (see block_distribution_plot.h). The colour map's rows, bottom to top: the
// "zero" row and a blank one when there are blocks of zeros, the exponents, then a blank row and
// the "NaN" row when there are blocks with NaNs; cells with nothing in them are NaN (transparent).
#include "block_scales/block_distribution_plot.h"

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

namespace {

QString percent(double fraction) {
    const double p = 100 * fraction;
    return QLocale().toString(p, 'f', p >= 10 || p == 0 ? 0 : p >= 1 ? 1 : 2) + QStringLiteral(" %");
}

}  // namespace

BlockDistributionPlot::BlockDistributionPlot(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("blockDistributionPlot"));
    setMinimumSize(160, 60);  // a short dock keeps its height for the charts; raised, the tab grows
    m_map = new QCPColorMap(xAxis, yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(true);
    m_scale = new QCPColorScale(this);
    plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(8);
    m_scale->setDataScaleType(QCPAxis::stLogarithmic);
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new SpacedLogTicker));
    m_scale->axis()->setNumberFormat(QStringLiteral("eb"));
    m_scale->axis()->setNumberPrecision(0);
    m_scale->axis()->setLabel(tr("fraction of blocks"));
    m_map->setColorScale(m_scale);
    m_scale->setGradient(fractionGradient());  // after setColorScale: the map takes the scale's gradient
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    const int halfLabel = QFontMetrics(yAxis->tickLabelFont()).height() / 2 + 1;
    axisRect()->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    m_scale->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    xAxis->setLabel(tr("statistics step"));
    yAxis->setLabel(tr("scale exponent e"));
    m_line = new QCPItemStraightLine(this);
    m_line->setPen(QPen(palette().color(QPalette::Text), 1.5, Qt::DashLine));
    m_line->setVisible(false);
    stylePlot(this, m_scale);
    connect(this, &QCustomPlot::afterLayout, this, &BlockDistributionPlot::fitTicks);
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        if (e->button() != Qt::LeftButton || !axisRect()->rect().contains(e->pos())) return;
        if (const auto step = stepAtPixel(e->position().x())) emit stepClicked(*step);
    });
    rebuild();
}

void BlockDistributionPlot::showTensor(const BlockScaleSeries* series, std::optional<std::size_t> tensor) {
    m_series = series;
    m_tensor = series && tensor && *tensor < series->tensors().size() ? tensor : std::nullopt;
    rebuild();
}

void BlockDistributionPlot::setMarker(std::optional<std::int64_t> step) {
    m_markerStep = step;
    m_line->setVisible(step.has_value() && m_grid.columns > 0);
    if (step) {
        m_line->point1->setCoords(static_cast<double>(*step), 0);
        m_line->point2->setCoords(static_cast<double>(*step), 1);
    }
    replot(QCustomPlot::rpQueuedReplot);
}

void BlockDistributionPlot::resizeEvent(QResizeEvent* event) {
    QCustomPlot::resizeEvent(event);
    // The column count follows the plot's width: rebuilt when it changed by more than a little.
    if (std::abs(width() - m_builtWidth) > 16) rebuild();
}

void BlockDistributionPlot::rebuild() {
    m_builtWidth = width();
    const int plotWidth = axisRect()->width() > 40 ? axisRect()->width() : std::max(width() - 80, 200);
    m_grid = valid() ? m_series->grid(*m_tensor, std::max(plotWidth / 2, 16)) : BlockScaleGrid{};
    m_zeroRow.reset();
    m_nanRow.reset();
    const BlockScaleGrid& g = m_grid;
    if (g.columns == 0) {
        m_map->data()->clear();
        m_map->setDataRange(QCPRange(1e-4, 1));
        xAxis->setRange(0, 1);
        yAxis->setRange(0, 1);
        m_line->setVisible(false);
        replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    bool zeros = false, nans = false;
    for (int c = 0; c < g.columns; ++c) {
        zeros = zeros || g.zeroFraction[static_cast<std::size_t>(c)] > 0;
        nans = nans || g.nanFraction[static_cast<std::size_t>(c)] > 0;
    }
    const int lo = g.rows() > 0 ? g.minExponent : 0, hi = g.rows() > 0 ? g.maxExponent : 0;
    if (zeros) m_zeroRow = lo - 2;
    if (nans) m_nanRow = hi + 2;
    m_yLow = m_zeroRow.value_or(lo);
    m_yHigh = m_nanRow.value_or(hi);
    const int mapRows = m_yHigh - m_yLow + 1;

    // Column c's cell is centred on the middle of the steps it covers.
    const double half = (static_cast<double>(g.stepsPerColumn) - 1) / 2;
    const double x0 = static_cast<double>(g.firstStep) + half;
    const double x1 = x0 + static_cast<double>((g.columns - 1) * g.stepsPerColumn);
    const QCPRange keys = g.columns > 1 ? QCPRange(x0, x1) : QCPRange(x0 - 0.5, x0 + 0.5);
    const QCPRange values = mapRows > 1 ? QCPRange(m_yLow, m_yHigh) : QCPRange(m_yLow - 0.5, m_yLow + 0.5);
    auto* data = new QCPColorMapData(g.columns, std::max(mapRows, 1), keys, values);
    double most = 0, least = std::numeric_limits<double>::infinity();
    const auto put = [&](int c, int y, double v) {
        if (!(v > 0)) return;
        data->setCell(c, y - m_yLow, v);
        most = std::max(most, v);
        least = std::min(least, v);
    };
    for (int c = 0; c < g.columns; ++c) {
        for (int r = 0; r < mapRows; ++r) data->setCell(c, r, std::numeric_limits<double>::quiet_NaN());
        for (int e = g.minExponent; e <= g.maxExponent; ++e) put(c, e, g.at(c, e));
        if (m_zeroRow) put(c, *m_zeroRow, g.zeroFraction[static_cast<std::size_t>(c)]);
        if (m_nanRow) put(c, *m_nanRow, g.nanFraction[static_cast<std::size_t>(c)]);
    }
    m_map->setData(data);  // takes ownership
    if (!(most > 0)) most = least = 1;
    // Four decades at most below the commonest: one block in 10^4 is the rarest colour.
    m_map->setDataRange(QCPRange(std::max(most * 1e-4, least * 0.5), most * 1.0001));
    const double halfColumn = static_cast<double>(g.stepsPerColumn) / 2;
    xAxis->setRange(x0 - halfColumn, x1 + halfColumn);
    yAxis->setRange(m_yLow - 0.5, m_yHigh + 0.5);
    m_fitted = {};
    fitTicks();
    setMarker(m_markerStep);
}

void BlockDistributionPlot::fitTicks() {
    if (axisRect()->size() == m_fitted) return;
    m_fitted = axisRect()->size();
    const int height = m_fitted.height();
    const int lo = m_grid.rows() > 0 ? m_grid.minExponent : 0, hi = m_grid.rows() > 0 ? m_grid.maxExponent : 0;
    std::vector<std::pair<int, QString>> extra;
    if (m_zeroRow) extra.emplace_back(*m_zeroRow, tr("zero"));
    if (m_nanRow) extra.emplace_back(*m_nanRow, tr("NaN"));
    yAxis->setTicker(integerTicker(
        m_grid.rows() > 0 ? lo : 1, m_grid.rows() > 0 ? hi : 0, height, tickLabelHeight(yAxis),
        [](int e) { return exponentText(e); }, extra));
    if (m_grid.columns > 0) {
        // Steps on whole numbers, as far apart as their widest label needs.
        const QCPRange x = xAxis->range();
        const auto first = static_cast<int>(std::ceil(x.lower)), last = static_cast<int>(std::floor(x.upper));
        const QFontMetrics fm(xAxis->tickLabelFont());
        const QString widest = QLocale().toString(std::max(std::abs(first), std::abs(last)));
        xAxis->setTicker(integerTicker(first, last, m_fitted.width(), fm.horizontalAdvance(widest) + 8,
                                       [](int step) { return QLocale().toString(step); }));
        // The ticks change the axis' width: lay out and draw once more (the next layout changes nothing).
        axisRect()->update(QCPLayoutElement::upPreparation);
        replot(QCustomPlot::rpQueuedReplot);
    }
}

bool BlockDistributionPlot::valid() const {
    // The series may have been cleared (a new run) since showTensor: its tensors are gone then.
    return m_series && m_tensor && *m_tensor < m_series->tensors().size();
}

std::optional<std::int64_t> BlockDistributionPlot::stepAtPixel(double x) const {
    if (!valid()) return std::nullopt;
    const auto& steps = m_series->steps(*m_tensor);
    if (steps.empty()) return std::nullopt;
    const double at = xAxis->pixelToCoord(x);
    const auto after = std::lower_bound(steps.begin(), steps.end(), at, [](const BlockScaleStep& s, double v) {
        return static_cast<double>(s.step) < v;
    });
    if (after == steps.begin()) return steps.front().step;
    if (after == steps.end()) return steps.back().step;
    const auto before = after - 1;
    return at - static_cast<double>(before->step) <= static_cast<double>(after->step) - at ? before->step : after->step;
}

QString BlockDistributionPlot::toolTipAt(const QPointF& pos) const {
    if (!valid() || m_grid.columns == 0 || !axisRect()->rect().contains(pos.toPoint())) return {};
    const BlockScaleGrid& g = m_grid;
    const double key = xAxis->pixelToCoord(pos.x());
    const int c =
        static_cast<int>(std::floor((key - static_cast<double>(g.firstStep)) / static_cast<double>(g.stepsPerColumn)));
    if (c < 0 || c >= g.columns) return {};
    const auto cu = static_cast<std::size_t>(c);
    if (g.blocks[cu] == 0) return {};
    const int y = static_cast<int>(std::lround(yAxis->pixelToCoord(pos.y())));
    const QLocale locale;
    // One step: its own counts; several merged: their shares.
    const std::int64_t from = g.firstStep + c * g.stepsPerColumn, to = from + g.stepsPerColumn - 1;
    const auto last = m_series->stepAtOrBefore(*m_tensor, to);
    const auto before = m_series->stepAtOrBefore(*m_tensor, from - 1);
    const int inColumn = last ? static_cast<int>(*last + 1 - (before ? *before + 1 : 0)) : 0;
    QString head;
    if (inColumn == 1)
        head = tr("step %1").arg(locale.toString(static_cast<qlonglong>(m_series->steps(*m_tensor)[*last].step)));
    else
        head = tr("steps %1–%2 (%3 statistics steps)")
                   .arg(locale.toString(static_cast<qlonglong>(from)), locale.toString(static_cast<qlonglong>(to)))
                   .arg(inColumn);
    const double blocks = static_cast<double>(g.blocks[cu]);
    const auto countOf = [&](double fraction) {
        return locale.toString(static_cast<qlonglong>(std::llround(std::isnan(fraction) ? 0 : fraction * blocks)));
    };
    const QString of = inColumn == 1
                           ? tr("of %1 blocks").arg(locale.toString(static_cast<qlonglong>(g.blocks[cu])))
                           : tr("of their %1 blocks").arg(locale.toString(static_cast<qlonglong>(g.blocks[cu])));
    QString line;
    if (m_zeroRow && y == *m_zeroRow)
        line = tr("blocks of zeros: %1 %2 (%3)").arg(countOf(g.zeroFraction[cu]), of, percent(g.zeroFraction[cu]));
    else if (m_nanRow && y == *m_nanRow)
        line = tr("blocks with a NaN or an infinity: %1 %2 (%3)")
                   .arg(countOf(g.nanFraction[cu]), of, percent(g.nanFraction[cu]));
    else if (g.rows() > 0 && y >= g.minExponent && y <= g.maxExponent) {
        const double f = g.at(c, y);
        line = tr("exponent %1 (scale %2): %3 %4 (%5)")
                   .arg(exponentText(y), scaleText(y), countOf(f), of, percent(std::isnan(f) ? 0 : f));
    }
    QString text = head;
    if (!line.isEmpty()) text += QLatin1Char('\n') + line;
    text += QLatin1Char('\n') + tr("blocks of zeros %1 · NaN blocks %2 · click to show this step's map")
                                    .arg(countOf(g.zeroFraction[cu]), countOf(g.nanFraction[cu]));
    return text;
}

bool BlockDistributionPlot::event(QEvent* event) {
    if (answerToolTip(this, event, [this](QPoint p) { return toolTipAt(p); })) return true;
    return QCustomPlot::event(event);
}

}  // namespace mantissa::ui
