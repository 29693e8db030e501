// ChartsPanel: the ChartViews on one step axis (see charts_panel.h).
#include "charts/charts_panel.h"
#include "charts/hint_label.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QVBoxLayout>
#include <QElapsedTimer>

#include <algorithm>
#include <cmath>

#include "charts/number_format.h"
#include "history/run_palette.h"
#include "series/run_series.h"

namespace mantissa::ui {

namespace {
constexpr double defaultSmoothing = 0.6;  // TensorBoard's default

struct MemoryUnit {
    double bytes;
    const char* name;
};
MemoryUnit memoryUnitFor(double totalBytes) {
    if (totalBytes >= 1024.0 * 1024 * 1024) return {1024.0 * 1024 * 1024, "GiB"};
    if (totalBytes >= 1024.0 * 1024) return {1024.0 * 1024, "MiB"};
    return {1024.0, "KiB"};
}
}  // namespace

ChartsPanel::ChartsPanel(QWidget* parent) : QWidget(parent) {
    // A short chart shows a shorter form of its axis label, or none (the legend names what is
    // drawn): a rotated label longer than the plot is tall would be cut.
    m_loss = new ChartView(tr("loss"));
    m_scale = new ChartView(tr("loss scale"));
    m_scale->setValueLabel(tr("loss scale"), {tr("scale")});
    m_memory = new ChartView(tr("memory"));
    m_throughput = new ChartView(tr("samples/s (per step)"));
    m_throughput->setValueLabel(tr("samples/s (per step)"), {tr("samples/s")});
    m_underflow = new ChartView(tr("underflow"));
    m_underflow->setValueSuffix(QStringLiteral("%"));  // on its ticks: the label is often hidden
    m_logits = new ChartView(tr("largest |QKᵀ/√d|"));
    m_logits->setValueLabel(tr("largest |QKᵀ/√d|"), {tr("|logit|")});
    m_logits->setLogarithmic(true, 10);
    m_logits->setReferenceLine(fp16Max, tr("FP16 max 65504"));
    m_variance = new ChartView(tr("smallest variance"));
    m_variance->setValueLabel(tr("smallest variance"), {tr("variance")});
    m_variance->setLogarithmic(true, 10);
    // train.accumulation_error (engine/train/accumulation_error.h): each matmul's sums against
    // FP64, relative to the products' magnitudes; FP16's unit roundoff is the rounding its
    // output takes anyway, so a sum above it has lost more to the accumulator than to the output.
    m_accumulation = new ChartView(tr("accumulation error"));
    m_accumulation->setValueLabel(tr("sum error vs FP64 / Σ|products|"), {tr("accumulation error"), tr("error")});
    m_accumulation->setLogarithmic(true, 10);
    m_accumulation->setReferenceLine(fp16UnitRoundoff, tr("FP16 unit roundoff 2⁻¹¹"));
    m_scale->setLogarithmic(true, 2);
    const std::pair<ChartView*, const char*> exportNames[] = {
        {m_loss, "loss"}, {m_scale, "loss-scale"}, {m_memory, "memory"}, {m_throughput, "throughput"},
        {m_underflow, "underflow"}, {m_logits, "attention-logits"}, {m_variance, "layernorm-variance"},
        {m_accumulation, "accumulation-error"}};
    for (const auto& [chart, name] : exportNames) {
        chart->setExportName(QString::fromLatin1(name));
        chart->setExportGroup([this] {  // the charts on screen, top to bottom
            QList<QCustomPlot*> shown;
            for (ChartView* c : charts())
                if (c->isVisible()) shown.append(c);
            return shown;
        });
    }
    m_memory->setIncludeZero(true);
    m_throughput->setIncludeZero(true);
    m_underflow->setIncludeZero(true);
    m_loss->setRightAxis(tr("test accuracy (%)"), QCPRange(0, 100), {tr("accuracy (%)"), tr("acc. (%)"), tr("%")});
    m_memory->setLegendColumns(3);  // six categories: two rows of three

    // Equal side margins on every chart, so the five step axes line up exactly.
    const QFontMetrics fm(font());
    const int left = fm.horizontalAdvance(QStringLiteral("-0.00000")) + 2 * fm.height() + 8;
    const int right = fm.horizontalAdvance(QStringLiteral("100")) + 2 * fm.height() + 8;
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->setChildrenCollapsible(false);
    for (ChartView* c : charts()) {
        c->setSideMargins(left, right);
        splitter->addWidget(c);
        connect(c, &ChartView::userChangedRange, this, [this, c](const QCPRange& r) { onUserRange(c, r); });
        connect(c, &ChartView::crosshairRequested, this, &ChartsPanel::onCrosshair);
    }
    // The loss gets the most room.
    const int stretch[] = {3, 2, 2, 2, 2, 2, 2, 3};
    for (int i = 0; i < 8; ++i) splitter->setStretchFactor(i, stretch[i]);
    // Hidden until a run reports op statistics; sized, so that a grab of the window (which sends a
    // hidden widget its pending resize) never has a chart draw into an empty buffer.
    for (ChartView* c : {m_logits, m_variance, m_accumulation}) {
        c->resize(400, 160);
        c->hide();
    }
    updateStepAxes();

    m_smoothing = new QSlider(Qt::Horizontal);
    m_smoothing->setRange(0, 990);
    m_smoothing->setSingleStep(10);
    m_smoothing->setPageStep(100);
    m_smoothing->setValue(static_cast<int>(defaultSmoothing * 1000));
    m_smoothing->setMaximumWidth(160);
    m_smoothing->setToolTip(tr("Weight of the debiased moving average drawn over the raw loss and throughput, "
                               "as in TensorBoard; 0 shows the raw values alone."));
    m_smoothingValue = new QLabel(QString::number(defaultSmoothing, 'f', 2));
    m_smoothingValue->setMinimumWidth(fm.horizontalAdvance(QStringLiteral("0.000")));
    m_logLoss = new QCheckBox(tr("Log loss"));
    m_logLoss->setToolTip(tr("Draw the loss on a logarithmic axis, to see progress late in training."));
    auto* reset = new QPushButton(tr("Reset view"));
    reset->setToolTip(tr("Show the whole run again and follow it as it grows (wheel zooms, drag pans)."));
    // Gives way on narrow windows, a part at a time, never cut mid-word.
    auto* hint = new HintLabel({tr("wheel: zoom"), tr("drag: pan"), tr("hover: values")});
    hint->setObjectName(QStringLiteral("chartHint"));
    hint->setEnabled(false);
    hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    hint->setAlignment(Qt::AlignRight | Qt::AlignVCenter);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Smoothing")));
    bar->addWidget(m_smoothing);
    bar->addWidget(m_smoothingValue);
    bar->addSpacing(12);
    bar->addWidget(m_logLoss);
    bar->addWidget(hint, 1);  // takes the free room, right-aligned; shrinks to nothing when narrow
    bar->addWidget(reset);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    // Each chart is at least as tall as its legend and axes need; where the window is shorter
    // than five such charts (a laptop's screen, the docks open), the charts scroll rather than
    // clip their legends or hold the window taller than the screen.
    auto* scroll = new QScrollArea;
    scroll->setWidget(splitter);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(scroll, 1);

    m_clock.start();
    m_roundTimer.setSingleShot(true);
    m_roundTimer.setInterval(0);
    connect(&m_roundTimer, &QTimer::timeout, this, &ChartsPanel::drawNextChartOfRound);
    m_deferTimer.setSingleShot(true);
    connect(&m_deferTimer, &QTimer::timeout, this, &ChartsPanel::refresh);

    connect(m_smoothing, &QSlider::valueChanged, this, [this](int v) {
        m_smoothingValue->setText(QString::number(v / 1000.0, 'f', 2));
        if (m_series) m_series->setSmoothingWeight(v / 1000.0);
        for (Overlay& o : m_overlays) o.series->setSmoothingWeight(v / 1000.0);
        redrawNow();
    });
    connect(m_logLoss, &QCheckBox::toggled, this, &ChartsPanel::setLogLoss);
    connect(reset, &QPushButton::clicked, this, &ChartsPanel::resetView);
}

ChartsPanel::~ChartsPanel() {
    // The overlays' followers go first, while the series they feed still exist. Nothing is
    // redrawn: the live series may already be gone.
    for (Overlay& o : m_overlays) delete o.owned;
}

void ChartsPanel::setSeries(RunSeries* series) {
    m_series = series;
    if (m_series) m_series->setSmoothingWeight(smoothingWeight());
    buildGraphs();
    m_follow = true;
    m_drawnRevision = ~std::uint64_t{0};
    m_nextRoundMs = 0;
    redrawNow();
}

void ChartsPanel::buildGraphs() {
    for (ChartView* c : charts()) {
        c->removeAllSeries();
        c->setMarkers({});
    }
    m_memoryGraphs.clear();
    m_memoryUnit = 0;
    if (m_series) buildLiveGraphs();
    const auto shows = [this](const char* stat) { return (m_series && m_series->hasOpStat(stat)) || planned(stat); };
    const bool logits = shows(logitAmaxStat);
    const bool variance = shows(minVarianceStat);
    const bool accumulation = shows(accumulationErrorStat);
    if (logits == m_logits->isHidden() || variance == m_variance->isHidden() ||
        accumulation == m_accumulation->isHidden()) {
        m_logits->setVisible(logits);
        m_variance->setVisible(variance);
        m_accumulation->setVisible(accumulation);
        updateStepAxes();
    }
    // A language model's loss is the mean negative log-likelihood of the next token, in nats.
    const bool text = m_series && m_series->textRun();
    m_loss->setValueLabel(text ? tr("loss (nats/token)") : tr("loss"), text ? QStringList{tr("nats/token"), tr("loss")}
                                                                            : QStringList{});
    addOverlayGraphs();
}

void ChartsPanel::setPlannedOpStats(std::vector<std::pair<std::string, std::string>> stats) {
    if (stats == m_plannedOpStats) return;
    m_plannedOpStats = std::move(stats);
    buildGraphs();
    redrawNow();
}

bool ChartsPanel::planned(const char* stat) const {
    return std::any_of(m_plannedOpStats.begin(), m_plannedOpStats.end(),
                       [stat](const auto& s) { return s.second == stat; });
}

void ChartsPanel::updateStepAxes() {
    ChartView* lowest = nullptr;
    for (ChartView* c : charts())
        if (!c->isHidden()) lowest = c;
    for (ChartView* c : charts()) c->setXTickLabels(true, c == lowest);
}

void ChartsPanel::buildOpGraphs(ChartView* chart, std::initializer_list<OpLine> kinds) {
    std::size_t lines = 0;
    for (const OpStatSeries& s : m_series->opStats())
        for (const OpLine& k : kinds) lines += s.stat == k.stat;
    const bool named = lines <= opLegendLines;
    // The ops in network order: a layer with parameters (a matmul's sums) where the layer list
    // has it, and in its underflow line's colour; the others (attention, layer norms) after, in
    // the order they first report. An op's lines share its colour; a stat's style tells them apart.
    const std::vector<std::string>& layers = m_series->layerNames();
    std::vector<std::pair<std::size_t, const OpStatSeries*>> lineOrder;  // (place, series)
    std::vector<std::string> others;
    for (const OpLine& k : kinds)
        for (const OpStatSeries& s : m_series->opStats()) {
            if (s.stat != k.stat) continue;
            auto layer = std::find(layers.begin(), layers.end(), s.name);
            std::size_t place = static_cast<std::size_t>(layer - layers.begin());
            if (layer == layers.end()) {
                auto at = std::find(others.begin(), others.end(), s.name);
                if (at == others.end()) at = others.insert(others.end(), s.name);
                place = layers.size() + static_cast<std::size_t>(at - others.begin());
            }
            lineOrder.emplace_back(place, &s);
        }
    std::stable_sort(lineOrder.begin(), lineOrder.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const OpLine& k : kinds)
        for (const auto& [place, s] : lineOrder) {
            if (s->stat != k.stat) continue;
            const QString name = QString::fromStdString(s->name) + (k.suffix ? QString::fromUtf8(k.suffix) : QString());
            QCPGraph* g = chart->addSeries(&s->values, name, seriesColor(static_cast<int>(place)), k.style);
            if (!named) g->removeFromLegend();
        }
    chart->setNote(named ? QString() : tr("%1 lines: hover for each one's value").arg(lines));
    chart->legend->setVisible((named && lines > 0) || chart->hasReferenceLine());
}

void ChartsPanel::buildLiveGraphs() {
    RunSeries& s = *m_series;
    const QColor lossColor = seriesColor(0);
    m_loss->addSeries(&s.loss(), tr("loss"), lossColor, GraphStyle::faintLine);
    m_loss->addSeries(&s.lossSmoothed(), tr("smoothed"), lossColor, GraphStyle::line);
    QCPGraph* testLoss = m_loss->addSeries(&s.testLoss(), tr("test loss"), seriesColor(1), GraphStyle::points);
    if (s.textRun())  // nats per token, and the perplexity e^loss it means
        m_loss->setReadout(testLoss, [this](double step) {
            const auto p = m_series->testLoss().nearest(step);
            const QCPRange x = m_loss->xAxis->range();
            if (!p || std::abs(p->x - step) > 4 * x.size() / std::max(1, m_loss->axisRect()->width())) return QString();
            return tr("test loss %1 nats/token (perplexity %2)")
                .arg(QString::number(p->y, 'g', 4), QString::number(std::exp(p->y), 'g', 4));
        });
    m_loss->addSeries(&s.testAccuracy(), tr("test acc. %"), seriesColor(4), GraphStyle::points, true, 100.0);
    m_loss->legend->setVisible(true);

    m_scale->addSeries(&s.lossScale(), tr("scale"), seriesColor(6), GraphStyle::steps);
    QCPGraph* overflow = m_scale->addSeries(&s.overflows(), tr("overflow"), seriesColor(2), GraphStyle::markers);
    m_scale->setReadout(overflow, [this](double step) {
        const auto p = m_series->overflows().nearest(step);
        const QCPRange x = m_scale->xAxis->range();
        if (!p || std::abs(p->x - step) > 4 * x.size() / std::max(1, m_scale->axisRect()->width())) return QString();
        const auto skipped = m_series->skipped().nearest(p->x);
        const bool wasSkipped = skipped && skipped->x == p->x;
        return wasSkipped ? tr("overflow at %1, step skipped").arg(std::llround(p->x))
                          : tr("overflow at %1").arg(std::llround(p->x));
    });
    m_scale->legend->setVisible(true);

    for (int c = 0; c < memoryCategoryCount; ++c) {
        const auto category = static_cast<MemoryCategory>(c);
        QCPGraph* g = m_memory->addSeries(&s.memoryStack(category), tr(memoryCategoryLabel(category)),
                                          seriesColor(c), GraphStyle::stacked);
        m_memory->setReadout(g, [this, category, c](double step) {
            const auto top = m_series->memoryStack(category).atOrBefore(step);
            if (!top) return QString();
            double below = 0;
            if (c > 0) {
                const auto p = m_series->memoryStack(static_cast<MemoryCategory>(c - 1)).atOrBefore(step);
                below = p ? p->y : 0;
            }
            // Every category in one style: 4 significant digits for the whole stack at this step.
            const MemoryUnit unit = memoryUnitFor(m_series->memoryStack(MemoryCategory::workspace).lastY());
            const auto total = m_series->memoryStack(MemoryCategory::workspace).atOrBefore(step);
            const ReadoutNumberStyle style = ReadoutNumberStyle::forLargest((total ? total->y : top->y) / unit.bytes);
            return QStringLiteral("%1 %2 %3")
                .arg(tr(memoryCategoryLabel(category)), style.format((top->y - below) / unit.bytes),
                     QLatin1String(unit.name));
        });
        m_memoryGraphs.push_back(g);
    }
    m_memory->legend->setVisible(true);

    m_throughput->addSeries(&s.throughput(), tr("samples/s (per step)"), seriesColor(3), GraphStyle::faintLine);
    m_throughput->addSeries(&s.throughputSmoothed(), tr("smoothed"), seriesColor(3), GraphStyle::line);
    m_throughput->legend->setVisible(true);

    // A deep network (a ResNet has 20 and more layers with parameters) would bury the plot under
    // its legend: past a few layers the lines are named by the hover read-out and the Layers
    // table instead, and a note says so.
    const std::size_t layers = s.layerNames().size();
    const bool named = layers <= underflowLegendLayers;
    for (std::size_t i = 0; i < layers; ++i) {
        QCPGraph* g = m_underflow->addSeries(&s.underflow(i), QString::fromStdString(s.layerNames()[i]),
                                             seriesColor(static_cast<int>(i)), GraphStyle::line, false, 100.0);
        if (!named) g->removeFromLegend();
    }
    m_underflow->setNote(named ? QString() : tr("%1 layers: hover for each one's value").arg(layers));
    m_underflow->legend->setVisible(named && layers > 0);

    buildOpGraphs(m_logits, {{logitAmaxStat}});
    buildOpGraphs(m_variance, {{minVarianceStat}});
    buildOpGraphs(m_accumulation, {{accumulationErrorStat}, {accumulationErrorWgradStat, " (wgrad)", GraphStyle::dashedLine}});
    m_builtOpLayout = s.opStatLayout();
}

void ChartsPanel::addOverlayGraphs() {
    for (const Overlay& o : m_overlays) {
        const RunSeries& s = *o.series;  // drawn dashed (GraphStyle::overlay), in the overlay's colour
        m_loss->addSeries(&s.lossSmoothed(), o.name, o.color, GraphStyle::overlay);
        m_scale->addSeries(&s.lossScale(), o.name, o.color, GraphStyle::overlaySteps);
        m_throughput->addSeries(&s.throughputSmoothed(), o.name, o.color, GraphStyle::overlay);
        m_underflow->addSeries(&s.underflowMean(), tr("%1 (mean)").arg(o.name), o.color, GraphStyle::overlay, false,
                               100.0);
    }
    for (ChartView* c : {m_loss, m_scale, m_throughput, m_underflow}) {
        bool listed = false;  // a deep network's underflow lines are in no legend
        for (int i = 0; i < c->graphCount() && !listed; ++i) listed = c->legend->hasItemWithPlottable(c->graph(i));
        if (listed) c->legend->setVisible(true);
    }
}

QColor ChartsPanel::referenceOverlayColor() { return runColor(7); }  // the palette's grey

QColor ChartsPanel::freeOverlayColor(const QColor& taken) const {
    // Okabe-Ito colours (history/run_palette.h) from its grey, so the first overlay stands apart
    // from the live charts' own colours.
    static const int order[] = {7, 4, 2, 5, 1, 3, 6, 0};
    for (int i : order) {
        const QColor c = runColor(i);
        if (c != taken &&
            std::none_of(m_overlays.begin(), m_overlays.end(), [&](const Overlay& o) { return o.color == c; }))
            return c;
    }
    return runColor(order[m_overlays.size() % runPaletteSize]);
}

void ChartsPanel::addOverlay(const QString& name, std::shared_ptr<RunSeries> series, QObject* owned, OverlayRole role) {
    if (!series) {
        delete owned;
        return;
    }
    // The same name again replaces it, keeping its colour.
    QColor color;
    for (auto it = m_overlays.begin(); it != m_overlays.end(); ++it) {
        if (it->name != name) continue;
        color = it->color;
        delete it->owned;
        m_overlays.erase(it);
        break;
    }
    if (m_overlays.size() >= static_cast<std::size_t>(maxOverlays)) {
        delete m_overlays.front().owned;
        m_overlays.erase(m_overlays.begin());
    }
    if (role == OverlayRole::reference) {
        // A reference is grey; a run that held grey moves to a colour of its own.
        color = referenceOverlayColor();
        for (Overlay& o : m_overlays)
            if (o.color == color && o.role != OverlayRole::reference) o.color = freeOverlayColor(color);
    }
    if (!color.isValid()) color = freeOverlayColor();
    if (owned && !owned->parent()) owned->setParent(this);
    series->setSmoothingWeight(smoothingWeight());
    m_overlays.push_back({name, std::move(series), color, owned, role});
    ++m_overlayGeneration;
    buildGraphs();
    redrawNow();
}

bool ChartsPanel::removeOverlay(const QString& name) {
    for (auto it = m_overlays.begin(); it != m_overlays.end(); ++it) {
        if (it->name != name) continue;
        delete it->owned;
        m_overlays.erase(it);
        ++m_overlayGeneration;
        buildGraphs();
        redrawNow();
        return true;
    }
    return false;
}

void ChartsPanel::clearOverlays() {
    if (m_overlays.empty()) return;
    for (Overlay& o : m_overlays) delete o.owned;
    m_overlays.clear();
    ++m_overlayGeneration;
    buildGraphs();
    redrawNow();
}

QStringList ChartsPanel::overlays() const {
    QStringList names;
    for (const Overlay& o : m_overlays) names << o.name;
    return names;
}

std::shared_ptr<const RunSeries> ChartsPanel::overlaySeries(const QString& name) const {
    for (const Overlay& o : m_overlays)
        if (o.name == name) return o.series;
    return nullptr;
}

std::uint64_t ChartsPanel::revision() const {
    std::uint64_t r = m_overlayGeneration + (m_series ? m_series->revision() : 0);
    for (const Overlay& o : m_overlays) r += o.series->revision();
    return r;
}

void ChartsPanel::updateMemoryUnit() {
    const auto& last = m_series->lastStep();
    const bool modelled = !last || last->memory.modelled;
    m_memory->setNote(modelled ? tr("modelled: bytes on a device") : QString());
    const MemoryUnit unit = memoryUnitFor(m_series->memoryStack(MemoryCategory::workspace).lastY());
    if (unit.bytes == m_memoryUnit) return;
    m_memoryUnit = unit.bytes;
    for (QCPGraph* g : m_memoryGraphs) m_memory->setFactor(g, 1.0 / unit.bytes);
    m_memory->setValueLabel(tr("memory (%1)").arg(QLatin1String(unit.name)), {QLatin1String(unit.name)});
}

void ChartsPanel::prepareRound() {
    // Op statistics of a name not declared at the start have a series of their own now.
    if (m_series && m_series->opStatLayout() != m_builtOpLayout) buildGraphs();
    if (m_follow) {
        // The live run's steps (overlays follow them); with no live run (or none of its steps
        // yet), the overlays' own.
        double first = 0, last = 1;
        if (m_series && (!m_series->loss().empty() || m_overlays.empty())) {
            // The final evaluation comes at the step after the last one: keep it in view.
            last = std::max({m_series->loss().lastX(), m_series->testLoss().lastX(), 1.0});
            first = m_series->loss().empty() ? 0.0 : m_series->loss().x(0);
        } else {
            bool any = false;
            for (const Overlay& o : m_overlays) {
                const LodSeries& loss = o.series->loss();
                if (loss.empty()) continue;
                first = any ? std::min(first, loss.x(0)) : loss.x(0);
                last = any ? std::max(last, loss.lastX()) : std::max(loss.lastX(), 1.0);
                any = true;
            }
        }
        applyRange(QCPRange(first, last + 0.02 * (last - first)));
    }
    if (m_series) updateMemoryUnit();
    static const std::vector<ChartMarker> none;
    for (ChartView* c : charts()) c->setMarkers(m_series ? m_series->markers() : none);
    m_roundRevision = revision();
    m_rangeDirty = false;
}

bool ChartsPanel::dirty() const {
    return (m_series || !m_overlays.empty()) && (m_rangeDirty || revision() != m_drawnRevision);
}

void ChartsPanel::refresh() {
    if (!dirty()) return;
    if (m_roundChart >= 0) return;  // a round is drawing; it checks for news when it ends
    const qint64 now = m_clock.elapsed();
    if (now < m_nextRoundMs) {
        if (!m_deferTimer.isActive()) m_deferTimer.start(static_cast<int>(m_nextRoundMs - now));
        return;
    }
    prepareRound();
    m_roundChart = 0;
    m_roundCostMs = 0;
    m_roundTimer.start();
}

void ChartsPanel::drawNextChartOfRound() {
    const std::vector<ChartView*> all = charts();
    if (m_roundChart < 0 || (!m_series && m_overlays.empty())) {
        m_roundChart = -1;
        return;
    }
    QElapsedTimer t;
    t.start();
    // A chart hidden (an op chart of a model without such ops) has no size to draw at.
    if (ChartView* chart = all[static_cast<std::size_t>(m_roundChart)]; !chart->isHidden()) chart->refreshData(true);
    m_roundCostMs += static_cast<double>(t.nsecsElapsed()) / 1e6;
    if (++m_roundChart < static_cast<int>(all.size())) {
        m_roundTimer.start();  // the next chart after the event loop has had its turn
        return;
    }
    m_roundChart = -1;
    m_drawnRevision = m_roundRevision;
    // Keep live redrawing to a small share of one core, whatever the machine: the next round waits
    // until this one's cost is that share of the time between them.
    m_nextRoundMs = m_clock.elapsed() + std::max<qint64>(minRoundIntervalMs, std::llround(m_roundCostMs / liveCpuShare));
    refresh();
}

void ChartsPanel::redrawNow(bool synchronous) {
    m_roundTimer.stop();
    m_deferTimer.stop();
    m_roundChart = -1;
    if (!m_series && m_overlays.empty()) {
        for (ChartView* c : charts())
            if (!c->isHidden()) c->replot(synchronous ? QCustomPlot::rpQueuedRefresh : QCustomPlot::rpQueuedReplot);
        return;
    }
    prepareRound();
    for (ChartView* c : charts())
        if (!c->isHidden()) c->refreshData(synchronous);
    m_drawnRevision = m_roundRevision;
}

void ChartsPanel::applyRange(const QCPRange& range, ChartView* except) {
    m_range = range;
    for (ChartView* c : charts())
        if (c != except) c->setXRange(range);
}

void ChartsPanel::onUserRange(ChartView* source, const QCPRange& range) {
    m_follow = false;
    applyRange(range, source);
    redrawNow();
}

void ChartsPanel::centerOn(std::int64_t step) {
    double width = m_range.size();
    if (m_follow && m_series) width = std::min(width, std::max(200.0, width / 10));  // zoom in a little
    const double s = static_cast<double>(step);
    m_follow = false;
    applyRange(QCPRange(s - width / 2, s + width / 2));
    redrawNow();
    onCrosshair(s);
}

void ChartsPanel::resetView() {
    m_follow = true;
    redrawNow();
}

void ChartsPanel::setMenuExtension(const ChartView::MenuExtension& extend) {
    for (ChartView* c : charts()) c->setMenuExtension(extend);
}

void ChartsPanel::setSmoothingWeight(double weight) {
    m_smoothing->setValue(static_cast<int>(std::lround(weight * 1000)));
}

double ChartsPanel::smoothingWeight() const { return m_smoothing->value() / 1000.0; }

void ChartsPanel::setLogLoss(bool on) {
    if (m_logLoss->isChecked() != on) m_logLoss->setChecked(on);  // re-enters through toggled
    if (m_loss->logarithmic() == on) return;
    m_loss->setLogarithmic(on, 10);
    redrawNow();
}

void ChartsPanel::onCrosshair(double step) {
    for (ChartView* c : charts()) c->setCrosshair(step);
}

}  // namespace mantissa::ui
