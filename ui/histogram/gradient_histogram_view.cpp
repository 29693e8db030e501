// GradientHistogramView (see gradient_histogram_view.h). Bottom to top: the zero row (a colour map
// of its own, sized in pixels by fitToHeight()), a gap of one binade, then the heat map, one row per
// binade; the heat map's cells with nothing in them are NaN (transparent) so the empty space reads
// as empty rather than as the lowest colour. The labels beside the map are placed by
// stackLabels(), pure geometry in pixels.
#include "histogram/gradient_histogram_view.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLayout>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QTextLayout>
#include <QTimer>
#include <QVBoxLayout>

#include "charts/axis_fit.h"
#include "histogram/eliding_label.h"
#include "histogram/wrapping_row.h"

namespace mantissa::ui {

namespace {

constexpr std::array<Format, 4> drawn_formats = {Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2};

QColor formatColor(Format f) {
    switch (f) {
        case Format::fp16: return QColor(0xff, 0x4d, 0x4d);
        case Format::bf16: return QColor(0xff, 0xa6, 0x00);
        case Format::fp8_e4m3: return QColor(0x00, 0xc8, 0xff);
        case Format::fp8_e5m2: return QColor(0xff, 0x66, 0xff);
        default: return QColor(Qt::gray);
    }
}

QString formatLabel(Format f) {
    const std::string_view n = format_name(f);
    QString s = QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
    return s.startsWith(QLatin1String("fp8-")) ? s.mid(4) : s;  // "e4m3": the chart is narrow
}

QString powerLabel(int e) {
    return e == 0 ? QStringLiteral("1") : QStringLiteral("2^%1").arg(e);
}

QString boundText(float v) {
    int exp = 0;
    if (std::frexp(v, &exp) == 0.5f) return powerLabel(exp - 1);
    return QString::number(static_cast<double>(v), 'g', v >= 1e5f ? 3 : 5);
}

QString computeFormatName(const ComputeFormat& f) {
    const std::string_view n = f.name();
    return QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
}

// The compute format(s) of the steps shown, as the store recorded them for the layer: "fp16";
// "fp32 to step 1096, fp16 from step 1100" where it changed; empty before any step is read.
QString precisionText(const std::vector<PrecisionSpan>& spans) {
    if (spans.empty()) return {};
    if (spans.size() == 1) return computeFormatName(spans.front().precision);
    if (spans.size() > 4) {  // switched back and forth: the formats and how often
        QStringList names;
        for (const PrecisionSpan& s : spans)
            if (!names.contains(computeFormatName(s.precision))) names << computeFormatName(s.precision);
        return QObject::tr("%1, changing %2 times; %3 from step %4")
            .arg(names.join(QStringLiteral(", ")))
            .arg(spans.size() - 1)
            .arg(computeFormatName(spans.back().precision))
            .arg(spans.back().first_step);
    }
    QStringList parts;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const PrecisionSpan& s = spans[i];
        const QString name = computeFormatName(s.precision);
        if (i == 0)
            parts << QObject::tr("%1 to step %2").arg(name).arg(s.last_step);
        else if (i + 1 == spans.size())
            parts << QObject::tr("%1 from step %2").arg(name).arg(s.first_step);
        else
            parts << QObject::tr("%1 at steps %2–%3").arg(name).arg(s.first_step).arg(s.last_step);
    }
    return parts.join(QStringLiteral(", "));
}

// A perceptually even gradient (viridis' stops): dark for rare, bright for common.
QCPColorGradient heatGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.00, QColor(0x44, 0x01, 0x54));
    g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
    g.setColorStopAt(0.50, QColor(0x21, 0x91, 0x8c));
    g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
    g.setColorStopAt(1.00, QColor(0xfd, 0xe7, 0x25));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhTransparent);
    g.setLevelCount(256);
    return g;
}

// The zero row's colours, apart from the heat map's and the formats' lines: the palest where no
// element is zero, then from a clear salmon for the fewest zeros to deep red where all are
// (zeroShade(): linear in the fraction above that step, so a few zeros never pass for none).
const QColor zeroColor(0xa5, 0x0f, 0x15);
constexpr double zeroFloor = 0.15;
double zeroShade(double fraction) {
    return fraction > 0 ? zeroFloor + (1 - zeroFloor) * std::min(fraction, 1.0) : 0.0;
}
QCPColorGradient zeroGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.00, QColor(0xfb, 0xec, 0xe6));
    g.setColorStopAt(zeroFloor - 0.001, QColor(0xfb, 0xec, 0xe6));
    g.setColorStopAt(zeroFloor, QColor(0xf4, 0xa0, 0x86));
    g.setColorStopAt(0.60, QColor(0xe0, 0x4f, 0x3a));
    g.setColorStopAt(1.00, zeroColor);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhTransparent);
    g.setLevelCount(200);
    return g;
}

// "100%", "98.7%", "0.0372%", "0%".
QString percentText(double fraction) {
    return QStringLiteral("%1%").arg(fraction > 0 ? QString::number(100 * fraction, 'g', 3) : QStringLiteral("0"));
}

// A label to stand beside the map: it wants its centre at `want` px (down from the axis rect's
// top), is `height` px tall, and goes before the others when they cannot all fit (lower first).
struct StackedLabel {
    double want = 0;
    double height = 0;
    int priority = 0;
    std::size_t index = 0;  // the caller's
    double top = 0;         // where stackLabels() put it
};

// Places the labels in one column within [low, high] px, none over another: each as near its
// wanted height as its neighbours allow (pushed down below the one above, then up from the bottom
// edge). While they cannot all fit, the one of the highest priority number is left out. Returns
// the labels placed, top to bottom.
std::vector<StackedLabel> stackLabels(std::vector<StackedLabel> labels, double low, double high) {
    std::stable_sort(labels.begin(), labels.end(),
                     [](const StackedLabel& a, const StackedLabel& b) { return a.want < b.want; });
    while (!labels.empty()) {
        double bottom = low;
        for (StackedLabel& l : labels) {
            l.top = std::max(l.want - l.height / 2, bottom);
            bottom = l.top + l.height;
        }
        double limit = high;
        for (auto l = labels.rbegin(); l != labels.rend(); ++l) {
            l->top = std::min(l->top, limit - l->height);
            limit = l->top;
        }
        if (labels.front().top >= low) return labels;
        labels.erase(std::max_element(labels.begin(), labels.end(), [](const StackedLabel& a, const StackedLabel& b) {
            return a.priority < b.priority;
        }));
    }
    return labels;
}

// The axes' labels, longest first: a short plot shows the longest that fits along it, or none.
QStringList binadeAxisLabels() {
    return {QObject::tr("|gradient| (log2 binade)"), QObject::tr("|gradient| (binade)"), QObject::tr("|gradient|")};
}
QStringList fractionAxisLabels() {
    return {QObject::tr("fraction of the step's elements"), QObject::tr("fraction of elements"),
            QObject::tr("fraction")};
}
constexpr int stepLabelFromPlotHeight = 130;  // px: shorter, the step axis keeps its numbers alone
constexpr int captionLinesFromHeight = 420;   // px of view: taller, the caption shows every line it has

}  // namespace

GradientHistogramView::GradientHistogramView(QWidget* parent) : QWidget(parent) {
    m_layerChoice = new QComboBox(this);
    m_layerChoice->setObjectName(QStringLiteral("layerChoice"));
    m_layerChoice->setMinimumContentsLength(6);
    m_viewChoice = new QComboBox(this);
    m_viewChoice->setObjectName(QStringLiteral("viewChoice"));
    // Short items, so that the controls take one row in a dock of usableWidth; the caption and
    // the items' tooltips say the rest.
    m_viewChoice->addItem(tr("As held (× loss scale)"), true);
    m_viewChoice->setItemData(
        0, tr("As the compute format holds it: scaled by the step's loss scale, before unscaling"), Qt::ToolTipRole);
    m_viewChoice->addItem(tr("Unscaled (÷ loss scale)"), false);
    m_viewChoice->setItemData(1, tr("As the optimizer sees it: in FP32, after dividing by the loss scale"),
                              Qt::ToolTipRole);

    // Three groups, which wrap onto more rows in a narrow dock (fitControlsToRoom()).
    auto* controls = new WrappingRow(12, 2);
    m_controls = controls;
    auto addGroup = [this, controls](const QList<QWidget*>& widgets) {
        auto* box = new QWidget(this);
        auto* row = new QHBoxLayout(box);
        row->setContentsMargins(0, 0, 0, 0);
        for (QWidget* w : widgets) row->addWidget(w);
        controls->addWidget(box);
    };
    addGroup({new QLabel(tr("Layer:"), this), m_layerChoice});
    addGroup({new QLabel(tr("Gradient:"), this), m_viewChoice});
    QList<QWidget*> ranges{new QLabel(tr("Ranges:"), this)};
    for (Format f : drawn_formats) {
        auto* check = new QCheckBox(formatLabel(f), this);
        check->setChecked(true);
        check->setStyleSheet(
            QStringLiteral("QCheckBox { color: %1; font-weight: 600; }").arg(formatColor(f).darker(115).name()));
        check->setProperty("format", static_cast<int>(f));
        connect(check, &QCheckBox::toggled, this, [this] { scheduleRebuild(); });
        m_formatChecks.append(check);
        ranges.append(check);
    }
    addGroup(ranges);

    m_caption = new ElidingLabel(this);
    m_caption->setObjectName(QStringLiteral("viewLabel"));
    m_status = new ElidingLabel(this);
    m_status->setObjectName(QStringLiteral("statusLabel"));
    m_status->hide();

    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("histogramPlot"));
    m_plot->setMinimumSize(240, minimumPlotHeight);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(true);
    m_zeroMap = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_zeroMap->setInterpolate(false);
    m_zeroMap->setTightBoundary(true);
    m_zeroMap->setGradient(zeroGradient());
    m_zeroMap->setDataRange(QCPRange(0, 1));
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->setDataScaleType(QCPAxis::stLogarithmic);
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new SpacedLogTicker));
    m_scale->axis()->setNumberFormat(QStringLiteral("eb"));
    m_scale->axis()->setNumberPrecision(0);
    m_scale->axis()->setLabel(tr("fraction of the step's elements"));
    m_map->setColorScale(m_scale);
    m_scale->setGradient(heatGradient());  // after setColorScale: the map takes the scale's gradient
    // QCustomPlot's default 15-px least margins would take a quarter of a short plot: room for the
    // axes' own labels, and at the top half a tick label, is enough.
    const int halfLabel = QFontMetrics(m_plot->yAxis->tickLabelFont()).height() / 2 + 1;
    m_plot->axisRect()->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    m_scale->setMinimumMargins(QMargins(0, halfLabel, 0, 0));
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(binadeAxisLabels().constFirst());
    // Short plots: fewer ticks and shorter axis labels, made for the height each layout gives.
    connect(m_plot, &QCustomPlot::afterLayout, this, &GradientHistogramView::fitAxesToHeight);
    m_plot->xAxis->grid()->setVisible(false);
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->setBackground(palette().color(QPalette::Base));
    m_plot->axisRect()->setBackground(palette().color(QPalette::Base));
    for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis, m_scale->axis()}) {
        const QColor text = palette().color(QPalette::Text);
        a->setLabelColor(text);
        a->setTickLabelColor(text);
        a->setBasePen(QPen(text));
        a->setTickPen(QPen(text));
        a->setSubTickPen(QPen(text));
    }

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);  // a dock frames it already
    layout->setSpacing(2);
    layout->addLayout(controls);
    layout->addWidget(m_caption);
    layout->addWidget(m_status);
    layout->addWidget(m_plot, 1);

    connect(m_layerChoice, &QComboBox::activated, this, [this](int i) { m_feed.setLayer(m_layerChoice->itemText(i)); });
    connect(m_viewChoice, &QComboBox::currentIndexChanged, this, [this](int) {
        m_asHeld = m_viewChoice->currentData().toBool();
        scheduleRebuild();
    });
    connect(&m_feed, &HistogramFeed::layersChanged, this, &GradientHistogramView::onLayersChanged);
    connect(&m_feed, &HistogramFeed::seriesChanged, this, &GradientHistogramView::scheduleRebuild);
    connect(&m_feed, &HistogramFeed::failed, this, [this](const QString& s) {
        m_status->setText(s);
        m_status->setToolTip(s);
        m_status->show();
    });
    rebuild();
}

QString GradientHistogramView::setRun(const QString& storePath, std::int64_t runId) {
    m_status->hide();
    const QString error = m_feed.setRun(storePath, runId);
    rebuildNow();
    return error;
}

void GradientHistogramView::setLayer(const QString& name) {
    m_feed.setLayer(name);
    const QSignalBlocker block(m_layerChoice);
    m_layerChoice->setCurrentText(m_feed.layer());
    rebuildNow();
}

void GradientHistogramView::clear() {
    m_feed.clear();
    rebuildNow();
}

void GradientHistogramView::setAsHeld(bool asHeld) {
    m_viewChoice->setCurrentIndex(asHeld ? 0 : 1);
    m_asHeld = asHeld;
    rebuildNow();
}

void GradientHistogramView::setFormatShown(Format format, bool shown) {
    for (QCheckBox* c : m_formatChecks)
        if (c->property("format").toInt() == static_cast<int>(format)) c->setChecked(shown);
    rebuildNow();
}

QString GradientHistogramView::viewLabel() const {
    return m_caption->text();
}

QList<double> GradientHistogramView::boundLines() const {
    return m_boundYs;
}

void GradientHistogramView::onLayersChanged(const QStringList& layers) {
    const QSignalBlocker block(m_layerChoice);
    m_layerChoice->clear();
    m_layerChoice->addItems(layers);
    m_layerChoice->setCurrentText(m_feed.layer());
}

bool GradientHistogramView::event(QEvent* event) {
    if (event->type() == QEvent::ParentChange) {
        if (m_scrollArea) m_scrollArea->removeEventFilter(this);
        // A QScrollArea's widget is a child of its viewport.
        QWidget* viewport = parentWidget();
        m_scrollArea = qobject_cast<QScrollArea*>(viewport ? viewport->parentWidget() : nullptr);
        if (m_scrollArea) m_scrollArea->installEventFilter(this);
        fitControlsToRoom();
    }
    const bool done = QWidget::event(event);
    // The layout has just been activated (the status line shown or hidden, the caption's lines):
    // the rows are fitted to its new least height.
    if (event->type() == QEvent::LayoutRequest) fitControlsToRoom();
    return done;
}

bool GradientHistogramView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_scrollArea && event->type() == QEvent::Resize) fitControlsToRoom();
    return QWidget::eventFilter(watched, event);
}

void GradientHistogramView::fitControlsToRoom() {
    auto* row = static_cast<WrappingRow*>(m_controls);
    auto* area = qobject_cast<QScrollArea*>(m_scrollArea.data());
    if (!area) {
        row->setMaxRows(0);
        return;
    }
    const QRect room = area->contentsRect();  // the viewport and its scroll bars
    const int bar = area->horizontalScrollBar()->sizeHint().height();
    const QMargins margins = layout()->contentsMargins();
    // The view's least height but for its controls' rows.
    const int others = layout()->minimumSize().height() - row->minimumSize().height();
    int rows = 1;
    for (int r = 2; r <= row->count(); ++r) {
        const bool scrolls = row->leastWidth(r) + margins.left() + margins.right() > room.width();
        if (others + row->heightOfRows(r) <= room.height() - (scrolls ? bar : 0)) rows = r;
    }
    row->setMaxRows(rows);
}

void GradientHistogramView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Below captionLinesFromHeight px the caption asks for two lines at most (the rest on hover).
    static_cast<ElidingLabel*>(m_caption)->setMaxHintLines(height() >= captionLinesFromHeight ? 0 : 2);
    scheduleRebuild();  // the column count follows the plot's width
}

void GradientHistogramView::scheduleRebuild() {
    if (m_rebuildQueued) return;
    m_rebuildQueued = true;
    QTimer::singleShot(0, this, &GradientHistogramView::rebuild);
}

void GradientHistogramView::rebuildNow() {
    rebuild();
}

void GradientHistogramView::rebuild() {
    m_rebuildQueued = false;
    const HistogramSeries& series = m_feed.series();
    {
        const QSignalBlocker block(m_layerChoice);
        if (m_layerChoice->currentText() != m_feed.layer()) m_layerChoice->setCurrentText(m_feed.layer());
    }

    const QString layer = m_feed.layer().isEmpty() ? tr("the layer") : m_feed.layer();
    // The format each shown step computed in, as recorded for this layer; none named before a step is read.
    const QString precision = precisionText(series.precisionSpans());
    const QString inFormat = precision.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(precision);
    QString caption = m_asHeld ? tr("%1 weight gradient, as held in the compute format%2: scaled by each step's loss "
                                    "scale, before unscaling.")
                                     .arg(layer, inFormat)
                               : tr("%1 weight gradient, computed in the compute format%2, unscaled: as the optimizer "
                                    "sees it, in FP32 after dividing by the loss scale.")
                                     .arg(layer, inFormat);
    if (!series.empty() && !series.scaled()) caption += tr(" The loss scale was 1 throughout: both views agree.");
    caption +=
        tr(" Colour: fraction of the step's elements (log scale); red bottom row: elements that are zero "
           "(flushed or exact), labelled with the last step's share.");

    // At most one column per two pixels of the plot (the first layout may not know its width yet).
    const int width = m_plot->axisRect()->width();
    const int columns = width > 40 ? width / 2 : 400;
    m_grid = series.grid(static_cast<std::size_t>(columns), m_asHeld);

    if (series.empty()) {
        m_map->data()->clear();
        m_zeroMap->data()->clear();
        m_status->setText(m_feed.storePath().isEmpty()
                              ? tr("No run chosen: open a run to see its gradient histograms.")
                              : tr("This run has no gradient histograms for %1 yet (they are recorded with the "
                                   "per-layer statistics, every k steps).")
                                    .arg(layer));
        m_status->setToolTip(m_status->text());
        m_status->setVisible(true);
    } else if (m_status->text().startsWith(QLatin1String("No run")) ||
               m_status->text().startsWith(QLatin1String("This run has no"))) {
        m_status->hide();
    }
    m_zeroLabel = series.empty() ? QString() : tr("zero %1").arg(percentText(series.zeroFractionAt(series.size() - 1)));

    // The view's y span: the data and at least fp16's range, so its floor is always in sight.
    const bool hasRows = m_grid.rows() > 0;
    const int yLow = std::min(hasRows ? m_grid.min_exponent : -25, -25) - 1;
    const int yHigh = std::max(hasRows ? m_grid.max_exponent + 1 : 17, 17) + 1;
    const int top = hasRows ? std::max(m_grid.max_exponent, yHigh - 1) : yHigh - 1;
    const int mapRows = top - yLow + 1;  // binade yLow stays empty (a gap above the zero row's gap)

    if (m_grid.columns > 0) {
        const double x0 = m_grid.column_step.front(), x1 = m_grid.column_step.back();
        const QCPRange xr = m_grid.columns > 1 ? QCPRange(x0, x1) : QCPRange(x0 - 0.5, x0 + 0.5);
        auto* data = new QCPColorMapData(m_grid.columns, mapRows, xr, QCPRange(yLow + 0.5, top + 0.5));
        // The zero row: two rows of cells, so that QCustomPlot gives it a height; fitToHeight() sets
        // its value range. A column with no zeros shows the ramp's palest colour: the row is always there.
        auto* zeros = new QCPColorMapData(m_grid.columns, 2, xr, QCPRange(0, 1));
        double hi = 0, lo = std::numeric_limits<double>::infinity();
        auto put = [&](int c, int r, double v) {
            if (!(v > 0)) return;
            data->setCell(c, r, v);
            hi = std::max(hi, v);
            lo = std::min(lo, v);
        };
        for (int c = 0; c < m_grid.columns; ++c) {
            for (int r = 0; r < mapRows; ++r) data->setCell(c, r, std::nan(""));
            for (int e = m_grid.min_exponent; e <= m_grid.max_exponent; ++e) put(c, e - yLow, m_grid.at(c, e));
            const double z = zeroShade(m_grid.zero_fraction[static_cast<std::size_t>(c)]);
            zeros->setCell(c, 0, z);
            zeros->setCell(c, 1, z);
        }
        m_map->setData(data);  // takes ownership
        m_zeroMap->setData(zeros);
        // Colours span the fractions present (a small layer's smallest is 1/elements), five decades at most.
        if (!(hi > 0)) hi = lo = 1;
        m_map->setDataRange(QCPRange(std::max(hi * 1e-5, lo * 0.5), hi * 1.0001));
        const double halfColumn = m_grid.columns > 1 ? (x1 - x0) / (2.0 * (m_grid.columns - 1)) : 0.5;
        m_plot->xAxis->setRange(x0 - halfColumn, x1 + halfColumn);
    } else {
        m_map->setDataRange(QCPRange(1e-5, 1));
        m_plot->xAxis->setRange(0, 1);
    }

    m_yLow = yLow;
    m_yHigh = yHigh;
    fitToHeight();  // the y range, with the zero row's height for the plot's
    // Formats whose bounds all lie outside the view say so in the caption.
    QStringList beyond;
    for (QCheckBox* c : m_formatChecks) {
        if (!c->isChecked()) continue;
        const FormatInfo& info = format_info(static_cast<Format>(c->property("format").toInt()));
        if (std::log2(static_cast<double>(info.min_subnormal)) < yLow &&
            std::log2(static_cast<double>(info.max_finite)) > yHigh)
            beyond << tr("%1 (%2 … %3)")
                          .arg(formatLabel(info.format), boundText(info.min_subnormal), boundText(info.max_finite));
    }
    if (!beyond.isEmpty())
        caption += tr(" Beyond this view, %1 hold%2 every value shown.")
                       .arg(beyond.join(tr(", ")), beyond.size() == 1 ? QStringLiteral("s") : QString());
    m_caption->setText(caption);
    m_caption->setToolTip(caption);
    m_plot->replot();
}

double GradientHistogramView::pixelsPerBinade() const {
    const int length = m_plot->axisRect()->height();
    // Before the first layout: as if the plot were of an ordinary height.
    return (length > 0 ? length : 200) / std::max(1.0, m_yHigh - m_zeroBottom);
}

QList<QRectF> GradientHistogramView::labelRects() const {
    QList<QRectF> rects;
    for (QCPItemText* label : m_labels)
        rects.append(QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized());
    return rects;
}

QRectF GradientHistogramView::zeroRowRect() const {
    const QRect r = m_plot->axisRect()->rect();
    const double top = m_plot->yAxis->coordToPixel(m_zeroBottom + m_zeroHeight);
    const double bottom = m_plot->yAxis->coordToPixel(m_zeroBottom);
    return QRectF(QPointF(r.left(), top), QPointF(r.right() + 1, bottom)).normalized();
}

void GradientHistogramView::fitToHeight() {
    m_fittedSize = m_plot->axisRect()->size();
    // The zero row: at least a label's height (minimumZeroRowHeight), at most 40 % of the plot; the
    // binades from yLow - 1 (the gap) to yHigh share the rest. With H px for S binades and a row
    // of z binades, a binade is H / (S + z) px: z binades are m px for z = m S / (H - m).
    const int length = m_plot->axisRect()->height() > 0 ? m_plot->axisRect()->height() : 200;
    const double zeroPx = std::max<double>(minimumZeroRowHeight, std::ceil(QFontMetricsF(font()).height()) + 2);
    const double span = m_yHigh - (m_yLow - 1);
    const double most = span * 0.4 / 0.6;
    m_zeroHeight = length > zeroPx / 0.4 ? std::clamp(zeroPx * span / (length - zeroPx), 1.0, most) : most;
    m_zeroBottom = m_yLow - 1 - m_zeroHeight;
    if (m_zeroMap->data()->keySize() > 0)
        m_zeroMap->data()->setValueRange(
            QCPRange(m_zeroBottom + m_zeroHeight / 4, m_zeroBottom + 3 * m_zeroHeight / 4));  // two cells
    m_plot->yAxis->setRange(m_zeroBottom, m_yHigh);

    const double perBinade = pixelsPerBinade();
    const double spacing = TickRoom{0, tickLabelHeight(m_plot->yAxis)}.comfortablePx();
    // Every 4 binades (8 when the span is wide), doubled until the labels are apart; "zero" on the
    // zero row, and no tick whose label would touch the one below it.
    int every = m_yHigh - m_yLow > 64 ? 8 : 4;
    while (every * perBinade < spacing && every < 1024) every *= 2;
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    double below = m_zeroBottom + m_zeroHeight / 2;
    ticker->addTick(below, tr("zero"));
    const int first = static_cast<int>(std::ceil(double(m_yLow) / every)) * every;
    for (int e = first; e <= m_yHigh; e += every) {
        if ((e - below) * perBinade < spacing) continue;
        ticker->addTick(e, powerLabel(e));
        below = e;
    }
    ticker->setSubTickCount(0);
    m_plot->yAxis->setTicker(ticker);
    rebuildBounds(m_yLow, m_yHigh);
}
void GradientHistogramView::fitAxesToHeight() {
    bool changed = fitAxis(m_plot->yAxis, binadeAxisLabels());
    changed = fitAxis(m_scale->axis(), fractionAxisLabels()) || changed;
    const QString stepLabel = m_plot->height() >= stepLabelFromPlotHeight ? tr("step") : QString();
    if (m_plot->xAxis->label() != stepLabel) {
        m_plot->xAxis->setLabel(stepLabel);
        // A margin group only ever widens the colour scale's margins (QCustomPlot takes its last
        // margin as what it needs): let it take the axis rect's new bottom margin.
        m_scale->setMargins(QMargins());
        changed = true;
    }
    if (m_plot->axisRect()->size() != m_fittedSize) {
        fitToHeight();
        changed = true;
    }
    if (!changed) return;
    // Labels and ticks change the margins (the axis rect's width, and its height with the step
    // label): draw once more with the new layout. The next layout changes nothing, so this ends.
    m_plot->axisRect()->update(QCPLayoutElement::upPreparation);
    m_scale->update(QCPLayoutElement::upPreparation);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void GradientHistogramView::rebuildBounds(double yLow, double yHigh) {
    m_plot->clearItems();
    m_labels.clear();
    m_boundYs.clear();
    struct Bound {
        double y;
        QString name, what, shortWhat, value;  // "fp16", "min subnormal", "sub", "2^-24"
        QColor color;
        Qt::PenStyle style;
        int priority;  // lower: kept when the labels cannot all fit
    };
    std::vector<Bound> bounds;
    for (QCheckBox* c : m_formatChecks) {
        if (!c->isChecked()) continue;
        const Format f = static_cast<Format>(c->property("format").toInt());
        const FormatInfo& info = format_info(f);
        const QString name = formatLabel(f);
        const int rank =
            static_cast<int>(std::find(drawn_formats.begin(), drawn_formats.end(), f) - drawn_formats.begin());
        bounds.push_back({std::log2(static_cast<double>(info.min_subnormal)), name, tr("min subnormal"), tr("sub"),
                          boundText(info.min_subnormal), formatColor(f), Qt::DotLine, 10 + rank});
        bounds.push_back({std::log2(static_cast<double>(info.min_normal)), name, tr("min normal"), tr("norm"),
                          boundText(info.min_normal), formatColor(f), Qt::DashLine, 20 + rank});
        bounds.push_back({std::log2(static_cast<double>(info.max_finite)), name, tr("max"), tr("max"),
                          boundText(info.max_finite), formatColor(f), Qt::SolidLine, 30 + rank});
    }
    std::stable_sort(bounds.begin(), bounds.end(), [](const Bound& a, const Bound& b) { return a.y < b.y; });

    // One label per line height: bounds of a kind at the same value share it ("fp16·e5m2 min
    // normal 2^-14"), bounds of other kinds there are joined to it (" · ").
    struct Label {
        double y;  // plot coordinates: the line's, or the zero row's middle
        QString longText, shortText;
        QColor color;
        QPen leader;
        int priority;
    };
    std::vector<Label> labels;
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        const Bound& b = bounds[i];
        if (b.y < yLow || b.y > yHigh) continue;
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(0, b.y);
        line->point2->setCoords(1, b.y);
        line->setPen(QPen(b.color, 1.6, b.style));
        m_boundYs.append(b.y);
        bool named = false;  // with an earlier bound of its kind at this value
        for (std::size_t k = i; k-- > 0 && std::fabs(bounds[k].y - b.y) < 1e-9;)
            named = named || bounds[k].what == b.what;
        if (named) continue;
        QStringList names{b.name};
        for (std::size_t j = i + 1; j < bounds.size() && std::fabs(bounds[j].y - b.y) < 1e-9; ++j)
            if (bounds[j].what == b.what) names << bounds[j].name;
        const QString name = names.join(QStringLiteral("·"));
        const QString longText = QStringLiteral("%1 %2 %3").arg(name, b.what, b.value);
        const QString shortText = QStringLiteral("%1 %2 %3").arg(name, b.shortWhat, b.value);
        if (!labels.empty() && std::fabs(labels.back().y - b.y) < 1e-9) {
            Label& l = labels.back();
            l.longText += QStringLiteral(" · ") + longText;
            l.shortText += QStringLiteral(" · ") + shortText;
            l.priority = std::min(l.priority, b.priority);
            continue;
        }
        labels.push_back({b.y, longText, shortText, b.color.darker(130), QPen(b.color, 1, Qt::SolidLine), b.priority});
    }
    if (!m_zeroLabel.isEmpty() && m_grid.columns > 0)
        labels.push_back({m_zeroBottom + m_zeroHeight / 2, m_zeroLabel, m_zeroLabel, zeroColor, QPen(zeroColor, 1), 0});

    // The labels' column, right of the map, at most 30 % of the plot's width (which the margin
    // does not change, so this settles): the long texts, else the short ones, else the zero row's
    // alone (the lines keep their formats' colours, as the check boxes show them), else none.
    QFont labelFont = font();
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.85);
    const QFontMetricsF fm(labelFont);
    constexpr double gap = 10, padX = 2, padY = 1;  // px: a leader's room; the text's padding
    auto widest = [&](bool shortText) {
        double w = 0;
        for (const Label& l : labels) w = std::max(w, fm.horizontalAdvance(shortText ? l.shortText : l.longText));
        return gap + std::ceil(w) + 2 * padX;
    };
    const double budget = 0.3 * m_plot->width();
    const bool useShort = widest(false) > budget;
    if (useShort && widest(true) > budget) {
        std::erase_if(labels, [](const Label& l) { return l.priority > 0; });  // the zero row's is 0
        if (widest(true) > budget) labels.clear();
    }
    const int column = labels.empty() ? 0 : static_cast<int>(widest(useShort)) + 2;
    const int halfLabel = QFontMetrics(m_plot->yAxis->tickLabelFont()).height() / 2 + 1;
    if (m_plot->axisRect()->minimumMargins() != QMargins(0, halfLabel, column, 0))
        m_plot->axisRect()->setMinimumMargins(QMargins(0, halfLabel, column, 0));

    // Stacked in the axis rect's pixels (y down from its top), from the top margin to the bottom.
    const double perBinade = pixelsPerBinade();
    const double rectWidth = m_plot->axisRect()->width() > 0 ? m_plot->axisRect()->width() : 400.0;
    const double rectHeight = perBinade * (yHigh - m_zeroBottom);
    const double lineHeight = std::ceil(fm.height()) + 2 * padY + 1;  // a pixel for QCustomPlot's rounding
    std::vector<StackedLabel> wanted;
    for (std::size_t i = 0; i < labels.size(); ++i)
        wanted.push_back({(yHigh - labels[i].y) * perBinade, lineHeight, labels[i].priority, i});
    for (const StackedLabel& slot : stackLabels(wanted, -halfLabel + 1, rectHeight)) {
        const Label& l = labels[slot.index];
        const double middle = (slot.top + slot.height / 2) / rectHeight;  // as a fraction of the axis rect
        auto* leader = new QCPItemLine(m_plot);
        leader->start->setTypeX(QCPItemPosition::ptAxisRectRatio);
        leader->start->setTypeY(QCPItemPosition::ptPlotCoords);
        leader->start->setCoords(1, l.y);
        leader->end->setType(QCPItemPosition::ptAxisRectRatio);
        leader->end->setCoords(1 + (gap - 1) / rectWidth, middle);
        leader->setPen(l.leader);
        leader->setClipToAxisRect(false);
        auto* label = new QCPItemText(m_plot);
        label->position->setType(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(1 + gap / rectWidth, middle);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setText(useShort ? l.shortText : l.longText);
        label->setColor(l.color);
        label->setPadding(QMargins(int(padX), int(padY), int(padX), int(padY)));
        label->setFont(labelFont);
        label->setClipToAxisRect(false);
        m_labels.append(label);
    }
}

}  // namespace mantissa::ui
