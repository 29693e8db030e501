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
#include <QSignalBlocker>
#include <QTimer>
#include <QVBoxLayout>

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

    m_caption = new QLabel(this);
    m_caption->setObjectName(QStringLiteral("viewLabel"));
    m_caption->setWordWrap(true);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("statusLabel"));
    m_status->setWordWrap(true);
    m_status->hide();

    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("histogramPlot"));
    m_plot->setMinimumSize(320, 220);
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(true);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->setDataScaleType(QCPAxis::stLogarithmic);
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_scale->axis()->setNumberFormat(QStringLiteral("eb"));
    m_scale->axis()->setNumberPrecision(0);
    m_scale->axis()->setLabel(tr("fraction of the step's elements"));
    m_map->setColorScale(m_scale);
    m_scale->setGradient(heatGradient());  // after setColorScale: the map takes the scale's gradient
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("|gradient| (log2 binade)"));
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
    const std::string_view prec = format_name(m_feed.lastPrecision());
    const QString precision = QString::fromUtf8(prec.data(), static_cast<qsizetype>(prec.size()));
    QString caption =
        m_asHeld
            ? tr("<b>%1</b> weight gradient, <b>as held in the compute format</b> (%2): scaled by each step's loss "
                 "scale, before unscaling.")
                  .arg(layer, precision)
            : tr("<b>%1</b> weight gradient, <b>unscaled</b>: as the optimizer sees it, in FP32 after dividing by "
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

    // Ticks: every 4 binades (8 when the span is wide), and "zero" on the zero row.
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    const int every = yHigh - yLow > 64 ? 8 : 4;
    for (int e = (yLow / every) * every; e <= yHigh; e += every)
        if (e >= yLow) ticker->addTick(e, powerLabel(e));
    ticker->addTick(zeroExp + 0.5, tr("zero"));
    ticker->setSubTickCount(0);
    m_plot->yAxis->setTicker(ticker);

    rebuildBounds(yLow, yHigh);
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
    m_plot->replot();
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
    double clusterY = -1e9;
    int inCluster = 0;
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
        // Labels of lines closer than about a binade and a half go side by side, not on top of each other.
        inCluster = b.y - clusterY < 1.5 ? inCluster + 1 : 0;
        if (inCluster == 0) clusterY = b.y;
        auto* label = new QCPItemText(m_plot);
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(0.01 + 0.3 * inCluster, b.y);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        label->setText(text);
        label->setColor(b.color.darker(130));
        label->setBrush(labelBack);
        label->setPadding(QMargins(3, 0, 3, 0));
        QFont f = font();
        f.setPointSizeF(f.pointSizeF() * 0.85);
        label->setFont(f);
        label->setClipToAxisRect(true);
    }
}

}  // namespace mantissa::ui
