// ChartView: a QCustomPlot fed from level-of-detail series (see chart_view.h).
#include "charts/chart_view.h"

#include <QMenu>

#include <algorithm>
#include <cmath>
#include <limits>

#include "charts/axis_fit.h"
#include "charts/marker_layout.h"
#include "charts/number_format.h"
#include "export/chart_export_dialog.h"

namespace mantissa::ui {

namespace {

// At most about this many ticks on a value axis; fewer where the chart is too short for their
// labels (axis_fit.h spaces them by the label height).
constexpr int ticksPerAxis = 4;

// The marker labels' font: smaller than the axes', so a row of them takes little of the plot.
QFont markerFont(const QFont& base) {
    QFont small = base;
    small.setPointSizeF(small.pointSizeF() * 0.8);
    return small;
}
constexpr double markerLabelAlpha = 210;  // the labels' background: the line and data show through a little

// Between the values of a read-out line.
const QString readoutSeparator = QStringLiteral("   ");


// The reference line's entry in the legend: its pen as the icon, then its label, laid out
// as QCustomPlot lays out a graph's entry (QCPPlottableLegendItem), which has no graph to draw.
class ReferenceLegendItem : public QCPAbstractLegendItem {
public:
    ReferenceLegendItem(QCPLegend* parent, const QString& text) : QCPAbstractLegendItem(parent), m_text(text) {
        setSelectable(false);
    }
    void setText(const QString& text) { m_text = text; }
    QString text() const { return m_text; }
    void setLinePen(const QPen& pen) { m_pen = pen; }

protected:
    void draw(QCPPainter* painter) override {
        const QSize icon = mParentLegend->iconSize();
        painter->setFont(mFont);
        painter->setPen(QPen(mTextColor));
        const QRect text = painter->fontMetrics().boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
        painter->drawText(mRect.x() + icon.width() + mParentLegend->iconTextPadding(), mRect.y(), text.width(),
                          std::max(text.height(), icon.height()), Qt::TextDontClip, m_text);
        const QRect iconRect(mRect.topLeft(), icon);
        painter->save();
        painter->setClipRect(iconRect, Qt::IntersectClip);
        painter->setPen(m_pen);
        const double y = iconRect.top() + iconRect.height() / 2.0;
        painter->drawLine(QLineF(iconRect.left(), y, iconRect.right() + 5, y));
        painter->restore();
    }
    QSize minimumOuterSizeHint() const override {
        const QSize icon = mParentLegend->iconSize();
        const QRect text = QFontMetrics(mFont).boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
        return {icon.width() + mParentLegend->iconTextPadding() + text.width() + mMargins.left() + mMargins.right(),
                std::max(text.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
    }

private:
    QString m_text;
    QPen m_pen;
};

}  // namespace

QString wrapReadout(const QStringList& parts, const QFontMetrics& metrics, int width) {
    QStringList lines;
    QString line;
    for (const QString& part : parts) {
        const QString longer = line.isEmpty() ? part : line + readoutSeparator + part;
        if (line.isEmpty() || metrics.horizontalAdvance(longer) <= width) {
            line = longer;
            continue;
        }
        lines << line;
        line = part;
    }
    if (!line.isEmpty()) lines << line;
    return lines.join(QLatin1Char('\n'));
}

QColor seriesColor(int index) {
    static const std::array<QColor, 10> tableau = {
        QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59), QColor(0x76, 0xb7, 0xb2),
        QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48), QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7),
        QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac)};
    return tableau[static_cast<std::size_t>(index) % tableau.size()];
}

ChartView::ChartView(const QString& valueLabel, QWidget* parent) : QCustomPlot(parent) {
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    setNoAntialiasingOnDrag(true);
    // Wide antialiased polylines through min/max zigzags are what makes QPainter slow; drawing them
    // as separate segments costs a fraction and looks the same at these widths.
    setPlottingHints(QCP::phCacheLabels | QCP::phFastPolylines);
    setNotAntialiasedElements(QCP::aeFills);  // the edges are drawn by the antialiased lines anyway
    setValueLabel(valueLabel);
    yAxis->setNumberFormat(QStringLiteral("g"));
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new SpacedTicker));
    yAxis->ticker()->setTickCount(ticksPerAxis);
    yAxis2->setTicker(QSharedPointer<QCPAxisTicker>(new SpacedTicker));
    yAxis2->ticker()->setTickCount(ticksPerAxis);
    yAxis2->setVisible(true);
    yAxis2->setTickLabels(false);
    yAxis2->setTicks(false);
    xAxis->setRange(0, 100);
    xAxis->setTickLabelPadding(3);  // every chart numbers its steps: as little height as reads well
    xAxis->setLabelPadding(2);
    setContextMenuPolicy(Qt::CustomContextMenu);
    connect(this, &QWidget::customContextMenuRequested, this, &ChartView::showContextMenu);

    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    legend->setFont(small);
    // A header row above the plot holds a note on the left (stretching) and the legend on the
    // right, so neither covers data in these short charts.
    legend->setVisible(false);
    legend->setRowSpacing(0);
    legend->setColumnSpacing(8);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setWrap(m_legendColumns);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    legend->setMargins(QMargins(4, 2, 4, 1));  // a short chart has no height to spare
    axisRect()->insetLayout()->take(legend);
    axisRect()->insetLayout()->simplify();
    m_header = new QCPLayoutGrid;
    plotLayout()->insertRow(0);
    plotLayout()->setRowSpacing(0);
    plotLayout()->addElement(0, 0, m_header);
    plotLayout()->setRowStretchFactor(0, 0.001);
    m_note = new QCPTextElement(this, QString(), small);
    m_note->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    // A text element's maximum height is its text's, and a layout row takes the smallest maximum
    // of its elements: the header row would be capped below the legend's height, clipping it in
    // short charts. An explicit maximum lifts the cap (QCustomPlot adds the margins to it and
    // ignores anything that reaches QWIDGETSIZE_MAX, so a large ordinary number).
    m_note->setMaximumSize(100000, 100000);
    m_header->addElement(0, 0, m_note);
    m_header->addElement(0, 1, legend);
    m_header->setColumnStretchFactor(0, 1);
    m_header->setColumnStretchFactor(1, 0.001);
    // QCustomPlot's default minimum plot of 50 px is more than a short chart has; 24 px still shows
    // a trend, and the header gets its legend's full height first.
    axisRect()->setMinimumSize(50, 24);
    m_xLabel = tr("step");
    connect(this, &QCustomPlot::afterLayout, this, [this] {
        // A legend re-wrapped for the width changes the header's height: lay out again.
        if (fitHeaderToWidth()) replot(QCustomPlot::rpQueuedReplot);
        // The graphs as the plot is drawn now: a new width or x range (the first layout after the
        // chart was filled unseen, a resize, an export at another size) queries them again, and
        // the labels' rows may change the band kept above the data. Either refits y, whose ticks
        // are then made again before anything is drawn.
        const bool requery = m_queriedColumns != queryColumns() || !(m_queriedRange == xAxis->range());
        if (requery) queryGraphs();
        const bool rowsChanged = layoutMarkerLabels();
        if (requery || rowsChanged || axisRect()->height() != m_fittedHeight) {
            fitValueAxes();
            axisRect()->update(QCPLayoutElement::upPreparation);
        }
        fitAxesToHeight();
        const int h = plotLayout()->minimumOuterSizeHint().height();
        if (h > 0 && h != m_minimumHeight) {
            m_minimumHeight = h;
            updateGeometry();
        }
    });

    // Other runs' overlays are drawn under this chart's own graphs, above the grid.
    addLayer(QStringLiteral("overlays"), layer(QStringLiteral("main")), limBelow);
    // The crosshair and its read-out live on their own buffered layer, so moving the mouse
    // repaints only that layer, never the graphs.
    layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmBuffered);
    m_crosshair = new QCPItemStraightLine(this);
    m_crosshair->setLayer(QStringLiteral("overlay"));
    for (QCPItemPosition* p : {m_crosshair->point1, m_crosshair->point2}) {
        p->setTypeX(QCPItemPosition::ptPlotCoords);
        p->setTypeY(QCPItemPosition::ptAxisRectRatio);
        p->setAxisRect(axisRect());
    }
    m_crosshair->setVisible(false);
    m_readout = new QCPItemText(this);
    m_readout->setLayer(QStringLiteral("overlay"));
    m_readout->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_readout->position->setAxisRect(axisRect());
    m_readout->position->setCoords(0.005, 0.01);
    m_readout->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_readout->setTextAlignment(Qt::AlignLeft);
    m_readout->setPadding(QMargins(4, 2, 4, 2));
    m_readout->setFont(small);
    m_readout->setVisible(false);

    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this](const QCPRange& r) {
        if (!m_settingRange) emit userChangedRange(r);
    });
    applyPalette();
}

QCPGraph* ChartView::addSeries(const LodSeries* series, const QString& name, const QColor& color, GraphStyle style,
                               bool rightAxis, double factor) {
    QCPGraph* g = addGraph(xAxis, rightAxis ? yAxis2 : yAxis);
    g->setName(name);
    g->setAdaptiveSampling(true);
    switch (style) {
    case GraphStyle::line: g->setPen(QPen(color, 1.6)); break;
    case GraphStyle::dashedLine: g->setPen(QPen(color, 1.6, Qt::DashLine)); break;
    case GraphStyle::faintLine: {
        QColor c = color;
        c.setAlpha(90);
        g->setPen(QPen(c, 1));
        g->setAntialiased(false);  // a dense raw zigzag under its smoothed line: crisp 1 px is enough
        break;
    }
    case GraphStyle::steps:
        g->setPen(QPen(color, 1.6));
        g->setLineStyle(QCPGraph::lsStepLeft);
        break;
    case GraphStyle::points:
        g->setPen(QPen(color, 1.4));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, color.lighter(130), 6));
        break;
    case GraphStyle::markers:
        g->setPen(QPen(color, 1.4));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, color, color, 8));
        break;
    case GraphStyle::overlay:
    case GraphStyle::overlaySteps: {
        QColor c = color;
        c.setAlpha(170);
        g->setPen(QPen(c, 1.4, Qt::DashLine));  // dashed: never mistaken for a live line of its hue
        if (style == GraphStyle::overlaySteps) g->setLineStyle(QCPGraph::lsStepLeft);
        g->setLayer(QStringLiteral("overlays"));
        break;
    }
    case GraphStyle::stacked: {
        g->setPen(QPen(color, 1.2));
        QColor fill = color;
        fill.setAlpha(120);
        g->setBrush(fill);
        for (auto it = m_bindings.rbegin(); it != m_bindings.rend(); ++it) {
            if (it->style == GraphStyle::stacked) {
                g->setChannelFillGraph(it->graph);
                break;
            }
        }
        break;
    }
    }
    m_bindings.push_back({g, series, style, factor, name, {}, g->pen().widthF()});
    if (m_referenceItem && legend->hasItemWithPlottable(g)) {  // the reference stays the legend's last entry
        legend->take(m_referenceItem);
        legend->setFillOrder(legend->fillOrder(), true);  // closes the gap it left
        legend->addItem(m_referenceItem);
    }
    m_queriedColumns = -1;  // the new graph has no data yet: the next layout queries it
    return g;
}

ChartView::Binding* ChartView::binding(QCPGraph* graph) {
    for (auto& b : m_bindings)
        if (b.graph == graph) return &b;
    return nullptr;
}

void ChartView::setReadout(QCPGraph* graph, std::function<QString(double)> readout) {
    if (Binding* b = binding(graph)) b->readout = std::move(readout);
}

void ChartView::setFactor(QCPGraph* graph, double factor) {
    if (Binding* b = binding(graph)) b->factor = factor;
}

void ChartView::setReferenceLine(double value, const QString& label) {
    m_referenceValue = value;
    if (!std::isfinite(value)) {
        if (m_referenceLine) removeItem(m_referenceLine);
        if (m_referenceItem) legend->removeItem(m_referenceItem);
        m_referenceLine = nullptr;
        m_referenceItem = nullptr;
        if (legend->itemCount() == 0) legend->setVisible(false);
        return;
    }
    if (!m_referenceLine) {
        m_referenceLine = new QCPItemStraightLine(this);
        for (QCPItemPosition* p : {m_referenceLine->point1, m_referenceLine->point2}) {
            p->setTypeX(QCPItemPosition::ptAxisRectRatio);
            p->setTypeY(QCPItemPosition::ptPlotCoords);
            p->setAxes(xAxis, yAxis);
            p->setAxisRect(axisRect());
        }
        m_referenceLine->setSelectable(false);
        m_referenceItem = new ReferenceLegendItem(legend, label);
        legend->addItem(m_referenceItem);
    }
    m_referenceLine->point1->setCoords(0, value);
    m_referenceLine->point2->setCoords(1, value);
    static_cast<ReferenceLegendItem*>(m_referenceItem)->setText(label);
    legend->setVisible(true);
    applyPalette();
}

QRect ChartView::referenceLabelRect() const {
    return m_referenceItem && legend->visible() ? m_referenceItem->outerRect() : QRect();
}

QString ChartView::referenceLabelText() const {
    return m_referenceItem ? static_cast<const ReferenceLegendItem*>(m_referenceItem)->text() : QString();
}

void ChartView::removeAllSeries() {
    clearGraphs();
    m_bindings.clear();
    legend->setVisible(m_referenceItem != nullptr);  // the reference line is named even on an empty chart
    m_queriedColumns = -1;
    // An empty chart shows no values: not the last run's range, which would read as this one's.
    setEmptyRange();
}

void ChartView::setEmptyRange() {
    const bool log = logarithmic();
    if (std::isfinite(m_referenceValue) && (!log || m_referenceValue > 0)) {
        // The reference line in view, where data of its kind would lie (below a limit).
        const double r = m_referenceValue;
        if (log)
            yAxis->setRange(r / 1000, r * 10);
        else
            yAxis->setRange(std::min(0.0, r * 1.2), std::max(0.0, r * 1.2));
        return;
    }
    if (log) yAxis->setRange(1, 2);
    else yAxis->setRange(0, 1);
}

void ChartView::setValueLabel(const QString& label, const QStringList& shorter) {
    m_leftLabels = QStringList{label} + shorter;
    yAxis->setLabel(label);  // until the next layout fits it
}

void ChartView::setValueSuffix(const QString& suffix) {
    m_valueSuffix = suffix;
    if (auto* ticker = dynamic_cast<SpacedTicker*>(yAxis->ticker().data())) ticker->setSuffix(suffix);
}

QStringList ChartView::labelForms(const QCPAxis* axis) const {
    if (axis == yAxis) return m_leftLabels;
    if (axis == yAxis2) return m_rightLabels;
    return {};
}

void ChartView::fitAxesToHeight() {
    bool changed = fitAxis(yAxis, m_leftLabels);
    if (yAxis2->tickLabels()) changed = fitAxis(yAxis2, m_rightLabels) || changed;
    // The side margins are fixed (setSideMargins), so neither tick labels nor axis labels move the
    // layout: ticks regenerated now are the ones drawn.
    if (changed) axisRect()->update(QCPLayoutElement::upPreparation);
}

void ChartView::setNote(const QString& note) {
    if (note == m_noteText) return;  // shown or hidden as the last layout fitted it
    m_noteText = note;
    m_note->setText(note);  // the next layout hides it if it does not fit (fitHeaderToWidth)
}

void ChartView::setLegendColumns(int columns) {
    m_legendColumns = std::max(1, columns);
    legend->setWrap(m_legendColumns);
    legend->setFillOrder(legend->fillOrder(), true);  // re-wraps the items already there
}

int ChartView::legendWidth(int columns) const {
    // Wrapped into `columns`, the n-th item sits in column n % columns; a column is as wide as its
    // widest item. The legend's grid counts its empty cells too (item() is null there).
    std::vector<int> widths(static_cast<std::size_t>(columns), 0);
    int n = 0;
    for (int i = 0; i < legend->itemCount(); ++i) {
        const QCPAbstractLegendItem* item = legend->item(i);
        if (!item) continue;
        int& w = widths[static_cast<std::size_t>(n++ % columns)];
        w = std::max(w, item->minimumOuterSizeHint().width());
    }
    int total = (columns - 1) * legend->columnSpacing() + legend->margins().left() + legend->margins().right();
    for (int w : widths) total += w;
    return total;
}

bool ChartView::fitHeaderToWidth() {
    // Inside the header's side margins (the plot's: setSideMargins), less the note's spacing.
    const int room = m_header->rect().width() - m_header->columnSpacing();
    if (room <= 0) return false;
    int items = 0;  // the legend's real items; its grid may hold empty cells
    for (int i = 0; legend->visible() && i < legend->itemCount(); ++i) items += legend->item(i) != nullptr;
    const int noteWidth = m_noteText.isEmpty()
                              ? 0
                              : QFontMetrics(m_note->font()).horizontalAdvance(m_noteText) +
                                    m_note->margins().left() + m_note->margins().right() + 8;
    // The most columns (up to the chart's own number) that fit, so the legend takes as few rows
    // as it can; the note beside it only where it fits too. Nothing fits: one column, no note.
    auto fits = [&](int k, bool withNote) { return (withNote ? noteWidth : 0) + legendWidth(k) <= room; };
    int columns = 1;
    bool showNote = items == 0 && noteWidth <= room;
    for (int k = std::max(1, std::min(m_legendColumns, items)); items > 0 && k >= 1; --k) {
        if (fits(k, false)) {
            columns = k;
            showNote = fits(k, true);
            break;
        }
    }
    bool changed = false;
    if (items > 0 && legend->wrap() != columns) {
        legend->setWrap(columns);
        legend->setFillOrder(legend->fillOrder(), true);
        changed = true;
    }
    const QString note = showNote ? m_noteText : QString();
    if (m_note->text() != note) {
        m_note->setText(note);
        changed = true;
    }
    return changed;
}

QString ChartView::noteText() const { return m_noteText; }

void ChartView::setLogarithmic(bool on, double base) {
    m_powerOfTwoValues = on && base == 2;
    if (on) {
        yAxis->setScaleType(QCPAxis::stLogarithmic);
        if (base == 2) {
            yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new Log2Ticker));
        } else {
            // Base 10 subdivides where the values span less than two decades (axis_fit.h).
            QSharedPointer<QCPAxisTickerLog> ticker(base == 10 ? new DecadeLogTicker : new SpacedLogTicker);
            ticker->setLogBase(base);
            yAxis->setTicker(ticker);
            yAxis->setNumberFormat(QStringLiteral("eb"));
            yAxis->setNumberPrecision(0);
        }
    } else {
        yAxis->setScaleType(QCPAxis::stLinear);
        auto* linear = new SpacedTicker;
        linear->setSuffix(m_valueSuffix);
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>(linear));
        yAxis->setNumberFormat(QStringLiteral("g"));
        yAxis->setNumberPrecision(6);
    }
    yAxis->ticker()->setTickCount(ticksPerAxis);
}

void ChartView::setRightAxis(const QString& label, QCPRange range, const QStringList& shorter) {
    yAxis2->setTicks(true);
    yAxis2->setTickLabels(true);
    m_rightLabels = QStringList{label} + shorter;
    yAxis2->setLabel(label);
    yAxis2->setRange(range);
}

void ChartView::setXTickLabels(bool on, bool labelled) {
    xAxis->setTickLabels(on);
    xAxis->setLabel(on && labelled ? m_xLabel : QString());
}

void ChartView::setXLabel(const QString& label) {
    m_xLabel = label;
    if (xAxis->tickLabels() && !xAxis->label().isEmpty()) xAxis->setLabel(label);
}

void ChartView::setSideMargins(int left, int right) {
    axisRect()->setAutoMargins(QCP::msTop | QCP::msBottom);
    axisRect()->setMargins(QMargins(left, 0, right, 0));
    m_header->setAutoMargins(QCP::msNone);
    m_header->setMargins(QMargins(left, 0, right, 0));
}

void ChartView::setXRange(const QCPRange& range) {
    m_settingRange = true;
    xAxis->setRange(range);
    m_settingRange = false;
}

int ChartView::queryColumns() const {
    // One min/max column per two pixels: the drawn envelope is the same, the polylines half as long.
    return std::max(1, axisRect()->width() / 2);
}

void ChartView::refreshData(bool immediate) {
    queryGraphs();
    layoutMarkerLabels();
    fitValueAxes();
    // immediate: draw now, and let the widget repaints of all charts merge into one window update.
    replot(immediate ? rpQueuedRefresh : rpQueuedReplot);
}

void ChartView::queryGraphs() {
    const QCPRange range = xAxis->range();
    // Before the first layout the axis rect has no width: what is queried now is only for the y
    // fit, and the first layout queries again at the real width (see the afterLayout handler).
    m_queriedColumns = queryColumns();
    m_queriedRange = range;
    const auto columns = static_cast<std::size_t>(m_queriedColumns);
    for (Binding& b : m_bindings) {
        // Markers are thinned to one min/max pair per 8 px: closer ones would overlap anyway, and
        // each antialiased marker costs as much as a long stretch of line.
        const bool isLine = b.style != GraphStyle::points && b.style != GraphStyle::markers;
        const bool summary = b.series->query(range.lower, range.upper,
                                             isLine ? columns : std::max<std::size_t>(1, columns / 4), m_points, isLine);
        m_scratch.resize(static_cast<int>(m_points.size()));
        for (std::size_t i = 0; i < m_points.size(); ++i)
            m_scratch[static_cast<int>(i)] = QCPGraphData(m_points[i].x, m_points[i].y * b.factor);
        b.graph->data()->set(m_scratch, true);
        // Antialiasing and a wide pen smooth a curve through real points; on a min/max summary (a
        // zigzag that reads as a filled band) they only cost time: it is drawn 1 px wide, without.
        if (b.style != GraphStyle::faintLine && b.style != GraphStyle::points && b.style != GraphStyle::markers) {
            b.graph->setAntialiased(!summary);
            QPen pen = b.graph->pen();
            pen.setWidthF(summary ? 1.0 : b.penWidth);
            b.graph->setPen(pen);
        }
    }
}

void ChartView::fitValueAxes() {
    // Over what the graphs hold: the window plus one point beyond either edge (the lines run to
    // them), which also covers a flat run collapsed to its two ends outside the window.
    const bool log = logarithmic();
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Binding& b : m_bindings) {
        if (b.graph->valueAxis() != yAxis || !b.graph->visible()) continue;
        for (auto it = b.graph->data()->constBegin(); it != b.graph->data()->constEnd(); ++it) {
            if (log && !(it->value > 0)) continue;
            lo = std::min(lo, it->value);
            hi = std::max(hi, it->value);
        }
    }
    m_fittedHeight = axisRect()->height();
    if (!(lo <= hi)) {  // nothing visible: keep the range, or show the reference line
        if (m_bindings.empty() || drawnPoints() == 0) setEmptyRange();
        return;
    }
    if (std::isfinite(m_referenceValue) && (!log || m_referenceValue > 0)) {
        lo = std::min(lo, m_referenceValue);
        hi = std::max(hi, m_referenceValue);
    }
    // The marker labels' rows along the top are kept clear of the data: the range grows upwards
    // so that the data ends below them (where the plot is tall enough to spare that band).
    const double plotHeight = axisRect()->height();
    const double band = m_markerRows * (QFontMetricsF(markerFont(font())).height() + 1) + 2;
    const double stretch = m_markerRows > 0 && plotHeight > 3 * band ? plotHeight / (plotHeight - band) : 1.0;
    if (log) {
        const double pad = yAxis->ticker().dynamicCast<Log2Ticker>() ? 2.0 : 1.3;
        const double lower = lo / pad;
        double upper = hi * pad;
        if (std::isfinite(m_referenceValue) && m_referenceValue > 0 && m_referenceValue >= hi) {
            // A reference line at the top of the data (FP16's unit roundoff over accumulation
            // errors) is kept a readable band below the plot's top border, not drawn on it: over
            // decades a factor of 1.3 is a pixel or two. The band is a fraction of the log range.
            const double room = std::clamp(14.0 / std::max(1.0, plotHeight), 0.06, 0.2);
            const double atLeast = std::exp((std::log(m_referenceValue) - room * std::log(lower)) / (1 - room));
            upper = std::max(upper, atLeast);
        }
        yAxis->setRange(lower, lower * std::pow(upper / lower, stretch));
        return;
    }
    const bool touchesZero = m_includeZero && lo == 0;
    if (m_includeZero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
    }
    // Zeros alone (no underflow yet): the empty chart's 0..1, not a range made up around nothing.
    const bool zeros = lo == 0 && hi == 0;
    if (zeros) hi = 1;
    double span = hi - lo;
    if (span <= 0) span = std::abs(hi) * 0.1;  // a flat line: show it mid-chart
    // From zero where zero is kept in view; a line at zero a few pixels above the axis, not on it.
    const double lift = std::clamp(4.0 / std::max(1.0, plotHeight), 0.03, 0.1);
    const double lower = lo == 0 && m_includeZero ? (touchesZero ? -lift * span : 0.0) : lo - 0.05 * span;
    const double upper = zeros ? hi : hi + 0.08 * span;
    yAxis->setRange(lower, lower + (upper - lower) * stretch);
}

QString ChartView::formatReadoutValue(double value) const {
    if (m_powerOfTwoValues) return formatPowerOfTwo(value);
    return ReadoutNumberStyle::forLargest(value).format(value) + m_valueSuffix;
}

QStringList ChartView::readoutParts(double step) const {
    const QCPRange x = xAxis->range();
    const double stepsPerPixel = x.size() / std::max(1, axisRect()->width());
    // Each graph's part in order; the values of one axis are written in one style, chosen once
    // all of them are known (ReadoutNumberStyle): a part with a value has its text filled last.
    struct Part {
        QString text;                   // a custom read-out's, or the graph's name
        const QCPAxis* axis = nullptr;  // null: `text` is the whole part
        double value = 0;
    };
    std::vector<Part> found;
    for (const Binding& b : m_bindings) {
        if (!b.graph->visible()) continue;
        if (b.readout) {
            const QString s = b.readout(step);
            if (!s.isEmpty()) found.push_back({s});
            continue;
        }
        std::optional<SeriesPoint> p;
        const bool overlay = b.style == GraphStyle::overlay || b.style == GraphStyle::overlaySteps;
        if (overlay && (b.series->empty() || step < b.series->x(0) - stepsPerPixel ||
                        step > b.series->lastX() + stepsPerPixel))
            continue;  // outside the run drawn over this one
        switch (b.style) {
        case GraphStyle::steps:
        case GraphStyle::overlaySteps: p = b.series->atOrBefore(step); break;
        case GraphStyle::points:
        case GraphStyle::markers:
            p = b.series->nearest(step);
            if (p && std::abs(p->x - step) > 4 * stepsPerPixel) p.reset();
            break;
        default: p = b.series->nearest(step); break;
        }
        if (p) found.push_back({b.name, b.graph->valueAxis(), p->y * b.factor});
    }
    QStringList parts{tr("step %1").arg(std::llround(step))};
    for (const Part& part : found) {
        if (!part.axis) {
            parts << part.text;
            continue;
        }
        QString value;
        if (part.axis == yAxis && m_powerOfTwoValues) {
            value = formatPowerOfTwo(part.value);
        } else {
            std::vector<double> shared;
            for (const Part& other : found)
                if (other.axis == part.axis) shared.push_back(other.value);
            value = ReadoutNumberStyle::forValues(shared).format(part.value) + m_valueSuffix;
        }
        parts << QStringLiteral("%1 %2").arg(part.text, value);
    }
    return parts;
}

QString ChartView::readoutText(double step) const {
    return readoutParts(step).join(readoutSeparator);
}

QString ChartView::readoutLines(double step) const {
    // The box's left edge sits 0.5 % of the plot's width in (setCoords(0.005, ...)); its padding
    // and frame take a few pixels more. Whatever is left is the lines' width.
    const QMargins pad = m_readout->padding();
    const int width = axisRect()->width();
    const int available = width - static_cast<int>(std::ceil(0.005 * width)) - pad.left() - pad.right() - 2;
    return wrapReadout(readoutParts(step), QFontMetrics(m_readout->font()), available);
}

void ChartView::setCrosshair(double step) {
    m_crosshairStep = step;
    const bool show = !std::isnan(step) && !m_export.active;
    const bool wasShown = m_crosshair->visible();
    m_crosshair->setVisible(show);
    m_readout->setVisible(show);
    if (show) {
        m_crosshair->point1->setCoords(step, 0);
        m_crosshair->point2->setCoords(step, 1);
        m_readout->setText(readoutLines(step));
    }
    if (show || wasShown) layer(QStringLiteral("overlay"))->replot();
}

QString ChartView::readoutShown() const {
    return m_readout->visible() ? m_readout->text() : QString();
}

void ChartView::setMarkers(const std::vector<ChartMarker>& markers) {
    // Markers only ever grow during a run; anything else (another run, a reset) starts afresh.
    bool prefix = markers.size() >= m_markers.size();
    for (std::size_t i = 0; prefix && i < m_markers.size(); ++i) prefix = m_markers[i].marker == markers[i];
    if (!prefix) {
        for (auto& m : m_markers) {
            removeItem(m.line);
            removeItem(m.label);
        }
        m_markers.clear();
    }
    if (markers.size() == m_markers.size()) return;
    for (std::size_t i = m_markers.size(); i < markers.size(); ++i) {
        const double step = static_cast<double>(markers[i].step);
        auto* line = new QCPItemStraightLine(this);
        for (QCPItemPosition* p : {line->point1, line->point2}) {
            p->setTypeX(QCPItemPosition::ptPlotCoords);
            p->setTypeY(QCPItemPosition::ptAxisRectRatio);
            p->setAxisRect(axisRect());
        }
        line->point1->setCoords(step, 0);
        line->point2->setCoords(step, 1);
        // Placed in pixels by layoutMarkerLabels() at every layout: along the top, inside the plot.
        auto* label = new QCPItemText(this);
        label->position->setType(QCPItemPosition::ptAbsolute);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setFont(markerFont(font()));
        label->setPadding(QMargins(3, 0, 3, 1));
        label->setText(QString::fromStdString(markers[i].label));
        label->setClipToAxisRect(true);
        label->setClipAxisRect(axisRect());
        m_markers.push_back({line, label, markers[i]});
        styleMarker(m_markers.back());
    }
    layoutMarkerLabels();
}

void ChartView::styleMarker(MarkerItems& m) const {
    const QPalette pal = palette();
    QColor lineColor = m.marker.kind == ChartMarker::Kind::injection ? seriesColor(2) : pal.color(QPalette::Text);
    lineColor.setAlpha(m.marker.kind == ChartMarker::Kind::injection ? 200 : 140);
    // Where a continued or branched run took over from its checkpoint: a solid line, not a change.
    m.line->setPen(QPen(lineColor, 1, m.marker.kind == ChartMarker::Kind::origin ? Qt::SolidLine : Qt::DashLine));
    m.label->setColor(pal.color(QPalette::Text));
    QColor labelBrush = pal.color(QPalette::Base);
    labelBrush.setAlpha(static_cast<int>(markerLabelAlpha));
    m.label->setBrush(labelBrush);
    QColor border = lineColor;
    border.setAlpha(90);
    m.label->setPen(QPen(border));
}

bool ChartView::layoutMarkerLabels() {
    const QRect plot = axisRect()->rect();
    const QFontMetricsF fm(markerFont(font()));
    const double rowHeight = fm.height() + 1;  // the label's text and its bottom padding
    std::vector<double> lines, widths;
    for (const MarkerItems& m : m_markers) {
        lines.push_back(xAxis->coordToPixel(static_cast<double>(m.marker.step)));
        widths.push_back(fm.horizontalAdvance(m.label->text()) + m.label->padding().left() + m.label->padding().right());
    }
    // At most half the plot's height for labels (four rows), and always one row.
    const int maxRows = std::clamp(static_cast<int>(plot.height() / 2 / rowHeight), 1, 4);
    const std::vector<MarkerLabelSlot> placed =
        placeMarkerLabels(lines, widths, plot.left(), plot.right(), plot.width() > 0 ? maxRows : 1);
    for (std::size_t i = 0; i < m_markers.size(); ++i) {
        QCPItemText* label = m_markers[i].label;
        label->setVisible(placed[i].visible);
        label->position->setCoords(placed[i].left, plot.top() + 1 + placed[i].row * rowHeight);
    }
    const int rows = ui::markerLabelRows(placed);
    const bool changed = rows != m_markerRows;
    m_markerRows = rows;
    return changed;
}

QString ChartView::markerLabelText(std::size_t i) const {
    return i < m_markers.size() ? m_markers[i].label->text() : QString();
}

QRectF ChartView::markerLabelRect(std::size_t i) const {
    if (i >= m_markers.size() || !m_markers[i].label->visible()) return {};
    const QCPItemText* label = m_markers[i].label;
    const QFontMetricsF fm(label->font());
    const QPointF topLeft = label->position->pixelPosition();
    const QMargins pad = label->padding();
    return {topLeft, QSizeF(fm.horizontalAdvance(label->text()) + pad.left() + pad.right(),
                            fm.height() + pad.top() + pad.bottom())};
}

void ChartView::beginExport(bool labelXAxis) {
    if (m_export.active) return;
    m_export = {true, m_crosshair->visible(), m_readout->visible(), xAxis->tickLabels(), xAxis->label()};
    m_crosshair->setVisible(false);
    m_readout->setVisible(false);
    if (labelXAxis) {
        xAxis->setTickLabels(true);
        xAxis->setLabel(m_xLabel);
    }
}

void ChartView::endExport() {
    if (!m_export.active) return;
    m_crosshair->setVisible(m_export.crosshair);
    m_readout->setVisible(m_export.readout);
    xAxis->setTickLabels(m_export.xTickLabels);
    xAxis->setLabel(m_export.xAxisLabel);
    m_export = {};
    replot(rpQueuedReplot);
}

int ChartView::drawnPoints() const {
    int n = 0;
    for (const Binding& b : m_bindings) n += b.graph->dataCount();
    return n;
}

void ChartView::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const QPointF pos = event->position();
    if (axisRect()->rect().contains(pos.toPoint()))
        emit crosshairRequested(xAxis->pixelToCoord(pos.x()));
    else
        emit crosshairRequested(qQNaN());
}

void ChartView::leaveEvent(QEvent* event) {
    QCustomPlot::leaveEvent(event);
    emit crosshairRequested(qQNaN());
}

bool ChartView::event(QEvent* event) {
    // The window went to the back (another window, a menu, a dialog): no leave event may follow.
    if (event->type() == QEvent::WindowDeactivate && crosshairShown()) emit crosshairRequested(qQNaN());
    return QCustomPlot::event(event);
}

void ChartView::resizeEvent(QResizeEvent* event) {
    if (event->size().isEmpty()) {
        QWidget::resizeEvent(event);
        return;
    }
    QCustomPlot::resizeEvent(event);
}

void ChartView::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyPalette();
        replot(rpQueuedReplot);
    }
}

void ChartView::applyPalette() {
    const QPalette pal = palette();
    const QColor base = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    QColor grid = text;
    grid.setAlpha(45);
    setBackground(QBrush(base));
    for (QCPAxis* axis : {xAxis, yAxis, xAxis2, yAxis2}) {
        axis->setBasePen(QPen(text, 1));
        axis->setTickPen(QPen(text, 1));
        axis->setSubTickPen(QPen(text, 1));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
        axis->grid()->setSubGridVisible(false);
        axis->grid()->setZeroLinePen(Qt::NoPen);
    }
    yAxis2->grid()->setVisible(false);
    legend->setTextColor(text);
    QColor readoutBrush = base;
    readoutBrush.setAlpha(225);
    m_readout->setBrush(readoutBrush);
    m_readout->setColor(text);
    m_readout->setPen(QPen(grid));
    m_crosshair->setPen(QPen(text, 1));
    QColor noteColor = text;
    noteColor.setAlpha(170);
    m_note->setTextColor(noteColor);
    for (auto& m : m_markers) styleMarker(m);
    if (m_referenceLine) {
        // In the text's colour and dash-dotted: no data line is drawn so (the layers' lines take
        // the series colours, a red among them, solid or dashed).
        QColor limit = text;
        limit.setAlpha(200);
        const QPen pen(limit, 1.3, Qt::DashDotLine);
        m_referenceLine->setPen(pen);
        static_cast<ReferenceLegendItem*>(m_referenceItem)->setLinePen(pen);
    }
}

void ChartView::fillContextMenu(QMenu& menu, const QPoint& pos) {
    QAction* one = menu.addAction(tr("Export chart…"));
    connect(one, &QAction::triggered, this, [this] { ChartExportDialog::exportPlot(this, window(), m_exportName); });
    if (m_exportGroup) {
        QAction* all = menu.addAction(tr("Export all charts…"));
        connect(all, &QAction::triggered, this,
                [this] { ChartExportDialog::exportPlots(m_exportGroup(), window(), tr("charts")); });
    }
    if (m_menuExtension) {
        menu.addSeparator();
        m_menuExtension(menu, xAxis->pixelToCoord(pos.x()));
    }
}

void ChartView::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    menu.setToolTipsVisible(true);
    fillContextMenu(menu, pos);
    menu.exec(mapToGlobal(pos));
}

}  // namespace mantissa::ui
