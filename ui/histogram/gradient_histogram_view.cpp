// GradientHistogramView (see gradient_histogram_view.h). The colour map's rows, bottom to top: a
// "zero" row, a gap, then one row per binade; cells with nothing in them are NaN (transparent) so
// the empty space reads as empty rather than as the lowest colour.
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
#include <QPainter>
#include <QSignalBlocker>
#include <QTextLayout>
#include <QTimer>
#include <QVBoxLayout>

#include "charts/axis_fit.h"

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

// The axes' labels, longest first: a short plot shows the longest that fits along it, or none.
QStringList binadeAxisLabels() {
    return {QObject::tr("|gradient| (log2 binade)"), QObject::tr("|gradient| (binade)"), QObject::tr("|gradient|")};
}
QStringList fractionAxisLabels() {
    return {QObject::tr("fraction of the step's elements"), QObject::tr("fraction of elements"),
            QObject::tr("fraction")};
}
constexpr int stepLabelFromPlotHeight = 130;  // px: shorter, the step axis keeps its numbers alone

// Plain text on as many lines as the label's height holds, the last one elided ("…") when there
// is more (the view sets the whole text as its tooltip). Its minimum is one line, its size hint
// every line at its width: a short dock shows one line, a tall one the whole sentence, and none is
// ever cut through.
class ElidingLabel : public QLabel {
public:
    explicit ElidingLabel(QWidget* parent) : QLabel(parent) {
        setTextFormat(Qt::PlainText);
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the view
    }
    QSize minimumSizeHint() const override { return {0, fontMetrics().height()}; }
    QSize sizeHint() const override {
        const int w = width() > 40 ? width() : 400;
        return {w, std::max(1, static_cast<int>(lines(w).size())) * fontMetrics().lineSpacing()};
    }

protected:
    void resizeEvent(QResizeEvent* event) override {
        QLabel::resizeEvent(event);
        if (event->size().width() != event->oldSize().width()) updateGeometry();  // the hint follows the width
    }
    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        painter.setPen(palette().color(foregroundRole()));
        const QFontMetrics fm = fontMetrics();
        const std::vector<std::pair<int, int>> all = lines(width());
        const int shown = std::max(1, height() / fm.lineSpacing());
        for (int i = 0; i < static_cast<int>(all.size()) && i < shown; ++i) {
            const bool last = i == shown - 1 && i + 1 < static_cast<int>(all.size());
            const auto [start, length] = all[static_cast<std::size_t>(i)];
            const QString line = last ? fm.elidedText(text().mid(start).simplified(), Qt::ElideRight, width())
                                      : text().mid(start, length);
            painter.drawText(QPoint(0, i * fm.lineSpacing() + fm.ascent()), line);
        }
    }

private:
    // (start, length) of each wrapped line of the text at `width` px.
    std::vector<std::pair<int, int>> lines(int width) const {
        QTextLayout layout(text(), font());
        QTextOption option;
        option.setWrapMode(QTextOption::WordWrap);
        layout.setTextOption(option);
        std::vector<std::pair<int, int>> out;
        layout.beginLayout();
        for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
            line.setLineWidth(std::max(1, width));
            out.emplace_back(line.textStart(), line.textLength());
        }
        layout.endLayout();
        return out;
    }
};

}  // namespace

GradientHistogramView::GradientHistogramView(QWidget* parent) : QWidget(parent) {
    m_layerChoice = new QComboBox(this);
    m_layerChoice->setObjectName(QStringLiteral("layerChoice"));
    m_layerChoice->setMinimumContentsLength(6);
    m_viewChoice = new QComboBox(this);
    m_viewChoice->setObjectName(QStringLiteral("viewChoice"));
    m_viewChoice->addItem(tr("As the format holds it (× loss scale)"), true);
    m_viewChoice->addItem(tr("Unscaled (as the optimizer sees it)"), false);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Layer:"), this));
    controls->addWidget(m_layerChoice);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Gradient:"), this));
    controls->addWidget(m_viewChoice);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Ranges:"), this));
    for (Format f : drawn_formats) {
        auto* check = new QCheckBox(formatLabel(f), this);
        check->setChecked(true);
        check->setStyleSheet(
            QStringLiteral("QCheckBox { color: %1; font-weight: 600; }").arg(formatColor(f).darker(115).name()));
        check->setProperty("format", static_cast<int>(f));
        connect(check, &QCheckBox::toggled, this, [this] { scheduleRebuild(); });
        m_formatChecks.append(check);
        controls->addWidget(check);
    }
    controls->addStretch(1);

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

void GradientHistogramView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
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
    const std::string_view prec = m_feed.lastPrecision().name();
    const QString precision = QString::fromUtf8(prec.data(), static_cast<qsizetype>(prec.size()));
    QString caption = m_asHeld
                          ? tr("%1 weight gradient, as held in the compute format (%2): scaled by each step's loss "
                               "scale, before unscaling.")
                                .arg(layer, precision)
                          : tr("%1 weight gradient, unscaled: as the optimizer sees it, in FP32 after dividing by "
                               "the loss scale.")
                                .arg(layer);
    if (!series.empty() && !series.scaled()) caption += tr(" The loss scale was 1 throughout: both views agree.");
    caption += tr(" Colour: fraction of the step's elements (log scale); bottom row: elements that are zero.");

    // At most one column per two pixels of the plot (the first layout may not know its width yet).
    const int width = m_plot->axisRect()->width();
    const int columns = width > 40 ? width / 2 : 400;
    m_grid = series.grid(static_cast<std::size_t>(columns), m_asHeld);

    if (series.empty()) {
        m_map->data()->clear();
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

    // The view's y span: the data and at least fp16's range, so its floor is always in sight.
    const bool hasRows = m_grid.rows() > 0;
    const int yLow = std::min(hasRows ? m_grid.min_exponent : -25, -25) - 1;
    const int yHigh = std::max(hasRows ? m_grid.max_exponent + 1 : 17, 17) + 1;
    const int zeroExp = yLow - 2;  // the zero row's binade slot; yLow - 1 stays empty (a gap)
    const int top = hasRows ? std::max(m_grid.max_exponent, yHigh - 1) : yHigh - 1;
    const int mapRows = top - zeroExp + 1;

    if (m_grid.columns > 0) {
        const double x0 = m_grid.column_step.front(), x1 = m_grid.column_step.back();
        const QCPRange xr = m_grid.columns > 1 ? QCPRange(x0, x1) : QCPRange(x0 - 0.5, x0 + 0.5);
        auto* data = new QCPColorMapData(m_grid.columns, mapRows, xr, QCPRange(zeroExp + 0.5, top + 0.5));
        double hi = 0, lo = std::numeric_limits<double>::infinity();
        auto put = [&](int c, int r, double v) {
            if (!(v > 0)) return;
            data->setCell(c, r, v);
            hi = std::max(hi, v);
            lo = std::min(lo, v);
        };
        for (int c = 0; c < m_grid.columns; ++c) {
            for (int r = 0; r < mapRows; ++r) data->setCell(c, r, std::nan(""));
            put(c, 0, m_grid.zero_fraction[static_cast<std::size_t>(c)]);
            for (int e = m_grid.min_exponent; e <= m_grid.max_exponent; ++e) put(c, e - zeroExp, m_grid.at(c, e));
        }
        m_map->setData(data);  // takes ownership
        // Colours span the fractions present (a small layer's smallest is 1/elements), five decades at most.
        if (!(hi > 0)) hi = lo = 1;
        m_map->setDataRange(QCPRange(std::max(hi * 1e-5, lo * 0.5), hi * 1.0001));
        const double halfColumn = m_grid.columns > 1 ? (x1 - x0) / (2.0 * (m_grid.columns - 1)) : 0.5;
        m_plot->xAxis->setRange(x0 - halfColumn, x1 + halfColumn);
    } else {
        m_map->setDataRange(QCPRange(1e-5, 1));
        m_plot->xAxis->setRange(0, 1);
    }
    m_plot->yAxis->setRange(zeroExp, yHigh);

    m_yLow = yLow;
    m_yHigh = yHigh;
    m_zeroExp = zeroExp;
    fitToHeight();
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
    return (length > 0 ? length : 200) / std::max(1.0, double(m_yHigh - m_zeroExp));
}

void GradientHistogramView::fitToHeight() {
    m_fittedSize = m_plot->axisRect()->size();
    const double perBinade = pixelsPerBinade();
    const double spacing = TickRoom{0, tickLabelHeight(m_plot->yAxis)}.comfortablePx();
    // Every 4 binades (8 when the span is wide), doubled until the labels are apart; "zero" on the
    // zero row, and no tick whose label would touch the one below it.
    int every = m_yHigh - m_yLow > 64 ? 8 : 4;
    while (every * perBinade < spacing && every < 1024) every *= 2;
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    double below = m_zeroExp + 0.5;
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
    m_boundYs.clear();
    struct Bound {
        double y;
        QString text;
        QColor color;
        Qt::PenStyle style;
    };
    std::vector<Bound> bounds;
    for (QCheckBox* c : m_formatChecks) {
        if (!c->isChecked()) continue;
        const Format f = static_cast<Format>(c->property("format").toInt());
        const FormatInfo& info = format_info(f);
        const QString name = formatLabel(f);
        bounds.push_back({std::log2(static_cast<double>(info.min_subnormal)),
                          tr("%1 min subnormal %2").arg(name, boundText(info.min_subnormal)), formatColor(f),
                          Qt::DotLine});
        bounds.push_back({std::log2(static_cast<double>(info.min_normal)),
                          tr("%1 min normal %2").arg(name, boundText(info.min_normal)), formatColor(f), Qt::DashLine});
        bounds.push_back({std::log2(static_cast<double>(info.max_finite)),
                          tr("%1 max %2").arg(name, boundText(info.max_finite)), formatColor(f), Qt::SolidLine});
    }
    std::sort(bounds.begin(), bounds.end(), [](const Bound& a, const Bound& b) { return a.y < b.y; });

    const QColor base = palette().color(QPalette::Base);
    QColor labelBack = base;
    labelBack.setAlpha(200);
    QFont labelFont = font();
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.85);
    // Labels are placed in the axis rect's pixels (y down from the top), each at the leftmost
    // place where it touches no label placed before it; one that fits nowhere is left out (its
    // line stays, coloured as its format's check box), never drawn over another or cut.
    const QFontMetricsF fm(labelFont);
    const double perBinade = pixelsPerBinade();
    const double rectWidth = m_plot->axisRect()->width() > 0 ? m_plot->axisRect()->width() : 400.0;
    const double rectHeight = perBinade * (yHigh - m_zeroExp);
    std::vector<QRectF> placed;
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        const Bound& b = bounds[i];
        if (b.y < yLow || b.y > yHigh) continue;
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(0, b.y);
        line->point2->setCoords(1, b.y);
        line->setPen(QPen(b.color, 1.6, b.style));
        m_boundYs.append(b.y);
        // Bounds at the same value share one label ("fp16 min normal 2^-14 · e5m2 min normal 2^-14").
        if (i > 0 && std::fabs(bounds[i - 1].y - b.y) < 1e-9 && bounds[i - 1].y >= yLow) continue;
        QString text = b.text;
        for (std::size_t j = i + 1; j < bounds.size() && std::fabs(bounds[j].y - b.y) < 1e-9; ++j)
            text += QStringLiteral(" · ") + bounds[j].text;
        // Above its line, or below it where the top of the plot is nearer than the label is tall.
        const double lineY = (yHigh - b.y) * perBinade;
        // With the padding, and a pixel each way for QCustomPlot's rounding to whole pixels.
        const QSizeF size(std::ceil(fm.horizontalAdvance(text)) + 8, std::ceil(fm.height()) + 2);
        const bool roomAbove = lineY >= size.height();
        QRectF box(QPointF(4, roomAbove ? lineY - size.height() : lineY), size);
        if (box.bottom() > rectHeight) continue;
        for (bool moved = true; moved;) {
            moved = false;
            for (const QRectF& other : placed)
                if (other.intersects(box)) {
                    box.moveLeft(other.right() + 8);
                    moved = true;
                }
        }
        if (box.right() > rectWidth) continue;
        placed.push_back(box);
        auto* label = new QCPItemText(m_plot);
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(box.left() / rectWidth, b.y);
        label->setPositionAlignment(Qt::AlignLeft | (roomAbove ? Qt::AlignBottom : Qt::AlignTop));
        label->setText(text);
        label->setColor(b.color.darker(130));
        label->setBrush(labelBack);
        label->setPadding(QMargins(3, 0, 3, 0));
        label->setFont(labelFont);
        label->setClipToAxisRect(true);
        label->setLayer(QStringLiteral("legend"));  // above every line, not only the ones drawn before it
    }
}

}  // namespace mantissa::ui
