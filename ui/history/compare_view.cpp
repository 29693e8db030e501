// CompareView: runs overlaid on shared charts, and their configuration differences (see
// compare_view.h).
#include "history/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSlider>
#include <QSplitter>
#include <QStyle>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "charts/chart_view.h"
#include "charts/number_format.h"
#include "history/close_keys.h"
#include "history/config_summary.h"
#include "history/run_palette.h"

namespace mantissa::ui {

// What a comparison keeps of a run: its rows, without the layer histograms.
struct CompareView::RunData {
    RunRow row;
    std::vector<StepRecord> steps;
    std::vector<EvalRecord> evals;
    std::vector<std::string> layerNames;
    // Per step that has layer rows: the step and each layer's underflow fraction (NaN: absent).
    std::vector<std::int64_t> layerSteps;
    std::vector<std::vector<double>> underflow;  // [i][layer]
    std::int64_t nextStep = 0;                   // the first step not read yet

    // Appends layer rows (in step order, after those already held).
    void addLayerRows(const std::vector<LayerStepRecord>& rows) {
        for (const LayerStepRecord& r : rows) {
            if (r.layer < 0) continue;
            const auto l = static_cast<std::size_t>(r.layer);
            if (l >= layerNames.size()) layerNames.resize(l + 1, "fc" + std::to_string(l + 1));
            if (!r.name.empty()) layerNames[l] = r.name;
            if (layerSteps.empty() || layerSteps.back() != r.step) {
                layerSteps.push_back(r.step);
                underflow.emplace_back();
            }
            auto& row = underflow.back();
            if (row.size() <= l) row.resize(l + 1, NAN);
            row[l] = r.frac_underflow;
        }
    }
    // Reads the rows from nextStep on. A step's row and its layer rows are committed together by
    // the Recorder; an evaluation may come in a later commit, so the evaluations are read whole
    // (they are few). Returns whether anything new arrived.
    bool read(RunStore& store) {
        row = store.run(row.id);
        std::vector<StepRecord> more = store.steps(row.id, nextStep);
        std::vector<LayerStepRecord> layers = store.layer_steps(row.id, nextStep);
        const std::int64_t through = more.empty() ? nextStep - 1 : more.back().step;
        std::erase_if(layers, [&](const LayerStepRecord& r) { return r.step > through; });
        std::vector<EvalRecord> allEvals = store.evals(row.id);
        const bool changed = !more.empty() || !layers.empty() || allEvals.size() != evals.size();
        steps.insert(steps.end(), more.begin(), more.end());
        addLayerRows(layers);
        evals = std::move(allEvals);
        nextStep = through + 1;
        return changed;
    }

    // The x of a step: the step, or the elapsed seconds at its end (the nearest recorded step's).
    double x(std::int64_t step, XAxis axis) const {
        if (axis == XAxis::step || steps.empty()) return static_cast<double>(step);
        auto it = std::lower_bound(steps.begin(), steps.end(), step,
                                   [](const StepRecord& s, std::int64_t v) { return s.step < v; });
        if (it == steps.end()) --it;
        return it->time_s;
    }
};

namespace {

// TensorBoard's debiased exponential moving average, as RunSeries draws it.
void smoothInto(const LodSeries& raw, LodSeries& out, double w) {
    double biased = 0, weightPow = 1;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const double y = raw.y(i);
        if (!std::isfinite(y)) continue;
        biased = biased * w + (1 - w) * y;
        weightPow *= w;
        const double debias = 1 - weightPow;
        out.append(raw.x(i), debias > 0 ? biased / debias : y);
    }
}

}  // namespace

// What a chart's read-out says of each run: the curve hovered (and the raw one under it, when
// smoothed), scaled for display, and the unit. Every run's values at the hovered step share one
// number style.
struct CompareView::Readout {
    LodSeries RunCurves::*shown;
    LodSeries RunCurves::*raw;  // null: none
    double factor;
    const char* unit;  // after the number: " samples/s", " %"; "" for none
};

const CompareView::Readout CompareView::lossReadout{&RunCurves::lossSmoothed, &RunCurves::loss, 1, ""};
const CompareView::Readout CompareView::throughputReadout{&RunCurves::throughputSmoothed, &RunCurves::throughput, 1,
                                                          " samples/s"};
const CompareView::Readout CompareView::accuracyReadout{&RunCurves::accuracy, nullptr, 100, " %"};
const CompareView::Readout CompareView::underflowReadout{&RunCurves::underflow, nullptr, 100, " %"};

std::function<QString(double)> CompareView::readout(const Readout& r, std::size_t run) const {
    return [this, &r, run](double x) {
        const auto value = [&](const LodSeries& s) {
            const std::optional<SeriesPoint> p = s.nearest(x);
            return p ? p->y * r.factor : NAN;
        };
        double largest = 0;
        for (const RunCurves& c : m_curves)
            for (LodSeries RunCurves::*member : {r.shown, r.raw})
                if (member && std::isfinite(value(c.*member))) largest = std::max(largest, std::abs(value(c.*member)));
        const RunCurves& c = m_curves[run];
        const double shown = value(c.*r.shown);
        if (!std::isfinite(shown)) return QString();  // nothing recorded near here
        // One style for every run's values at this step (charts/number_format.h), so "81.3"
        // never stands beside "81.04".
        const ReadoutNumberStyle style = ReadoutNumberStyle::forLargest(largest);
        QString text = c.name + QLatin1Char(' ') + style.format(shown);
        if (r.raw) text += tr(" (raw %1)").arg(style.format(value(c.*r.raw)));
        return text + QString::fromUtf8(r.unit);
    };
}

CompareView::CompareView(std::shared_ptr<RunStore> store, QWidget* parent) : QWidget(parent), m_store(std::move(store)) {
    m_lossChart = new ChartView(tr("loss"));
    m_scaleChart = new ChartView(tr("loss scale"));
    m_accuracyChart = new ChartView(tr("test acc. (%)"));
    m_throughputChart = new ChartView(tr("samples/s"));
    m_underflowChart = new ChartView(tr("underflow (%)"));
    // Shorter label forms for short charts, as the live charts have (ChartView::setValueLabel); each
    // keeps the unit, and the title above the plot (updateTitles) stays when none fits.
    m_scaleChart->setValueLabel(tr("loss scale"), {tr("scale")});
    m_accuracyChart->setValueLabel(tr("test acc. (%)"), {tr("acc. (%)")});
    m_underflowChart->setValueSuffix(QStringLiteral("%"));
    m_scaleChart->setLogarithmic(true, 2);
    m_throughputChart->setIncludeZero(true);
    m_underflowChart->setIncludeZero(true);
    m_accuracyChart->setIncludeZero(true);

    const QFontMetrics fm(font());
    const int left = fm.horizontalAdvance(QStringLiteral("-0.00000")) + 2 * fm.height() + 8;
    const int right = fm.height() + 8;
    auto* chartSplitter = new QSplitter(Qt::Vertical);
    chartSplitter->setChildrenCollapsible(false);
    for (ChartView* c : charts()) {
        // The runs are named once, above the charts (m_legend): a chart's own legend, hidden, would
        // still claim the width of its entries from the header row and squeeze the title.
        c->setAutoAddPlottableToLegend(false);
        c->setSideMargins(left, right);
        c->setXTickLabels(true, c == m_underflowChart);  // every chart numbers its steps, the lowest names the axis
        c->yAxis2->setVisible(false);
        chartSplitter->addWidget(c);
        connect(c, &ChartView::userChangedRange, this, [this, c](const QCPRange& r) { applyRange(r, c); });
        connect(c, &ChartView::crosshairRequested, this, [this](double x) {
            for (ChartView* v : charts()) v->setCrosshair(x);
        });
    }
    const int stretch[] = {3, 2, 2, 2, 3};
    for (int i = 0; i < 5; ++i) chartSplitter->setStretchFactor(i, stretch[i]);

    m_xChoice = new QComboBox;
    m_xChoice->addItem(tr("step"));
    m_xChoice->addItem(tr("elapsed time"));
    m_xChoice->setToolTip(tr("Align the runs by training step, or by seconds since each run started "
                             "(to compare speed as well as progress)."));
    m_layerChoice = new QComboBox;
    m_layerChoice->addItem(tr("mean over layers"), -1);
    m_layerChoice->setToolTip(tr("Which layer's gradient underflow to draw."));
    m_smoothingSlider = new QSlider(Qt::Horizontal);
    m_smoothingSlider->setRange(0, 990);
    m_smoothingSlider->setValue(static_cast<int>(m_smoothing * 1000));
    m_smoothingSlider->setMaximumWidth(160);
    m_smoothingSlider->setToolTip(tr("Weight of the debiased moving average drawn over every run's loss and "
                                     "throughput, as in TensorBoard; 0 shows the raw values alone."));
    m_smoothingValue = new QLabel(QString::number(m_smoothing, 'f', 2));
    m_smoothingValue->setMinimumWidth(fm.horizontalAdvance(QStringLiteral("0.000")));

    m_logLoss = new QCheckBox(tr("Log loss"));
    m_logLoss->setToolTip(tr("Draw the loss on a logarithmic axis, to see the runs apart late in training."));

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Align by")));
    bar->addWidget(m_xChoice);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Smoothing")));
    bar->addWidget(m_smoothingSlider);
    bar->addWidget(m_smoothingValue);
    bar->addSpacing(12);
    bar->addWidget(m_logLoss);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Underflow of")));
    bar->addWidget(m_layerChoice);
    bar->addStretch(1);

    m_legend = new QLabel;
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setWordWrap(true);

    m_diffNote = new QLabel;
    m_diffNote->setWordWrap(true);
    m_diffTable = new QTableWidget;
    m_diffTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_diffTable->setSelectionMode(QAbstractItemView::NoSelection);
    m_diffTable->verticalHeader()->setDefaultSectionSize(fm.height() + 6);
    // Every run's column shares the width, so none is pushed off-screen by a long value (a lesson's
    // text): values are one line, elided, whole in their tooltips; run names elide in the middle,
    // where "…-reference-fp32" and its lesson differ. Narrower than a sane minimum, it scrolls.
    m_diffTable->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_diffTable->horizontalHeader()->setMinimumSectionSize(fm.horizontalAdvance(QStringLiteral("lesson-fp16-x…")));
    m_diffTable->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    // The header clips a long label rather than elide it (Qt 6's Fusion style): elided here, once
    // the header has settled its sections' sizes (while it resizes them, sectionSize() is stale).
    connect(m_diffTable->horizontalHeader(), &QHeaderView::sectionResized, this, &CompareView::elideRunNames,
            Qt::QueuedConnection);
    m_diffTable->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_diffTable->setWordWrap(false);
    m_diffTable->setTextElideMode(Qt::ElideRight);
    auto* diffBox = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffBox);
    diffLayout->setContentsMargins(0, 0, 0, 0);
    auto* diffTitle = new QLabel(tr("<b>Configuration differences</b>"));
    diffLayout->addWidget(diffTitle);
    diffLayout->addWidget(m_diffNote);
    diffLayout->addWidget(m_diffTable, 1);

    auto* chartsBox = new QWidget;
    auto* chartsLayout = new QVBoxLayout(chartsBox);
    chartsLayout->setContentsMargins(0, 0, 0, 0);
    chartsLayout->addWidget(m_legend);
    chartsLayout->addWidget(chartSplitter, 1);

    // The differences under the charts, across the full width: they are usually a few rows, and
    // every run's column then has room.
    auto* split = new QSplitter(Qt::Vertical);
    split->setChildrenCollapsible(false);
    split->addWidget(chartsBox);
    split->addWidget(diffBox);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(split, 1);

    connect(m_xChoice, &QComboBox::currentIndexChanged, this,
            [this](int i) { setXAxis(i == 1 ? XAxis::time : XAxis::step); });
    connect(m_layerChoice, &QComboBox::currentIndexChanged, this,
            [this](int i) { setUnderflowLayer(m_layerChoice->itemData(i).toInt()); });
    connect(m_logLoss, &QCheckBox::toggled, this, &CompareView::setLogLoss);
    connect(m_smoothingSlider, &QSlider::valueChanged, this, [this](int v) { setSmoothingWeight(v / 1000.0); });
    setWindowTitle(tr("Compare runs — Mantissa"));
    installCloseKeys(this);
    resize(1300, 860);
    m_follow.setInterval(1000);
    connect(&m_follow, &QTimer::timeout, this, &CompareView::followRunning);
}

CompareView::~CompareView() {
    for (ChartView* c : charts()) c->removeAllSeries();  // they draw m_curves' series
}

std::vector<ChartView*> CompareView::charts() const {
    return {m_lossChart, m_scaleChart, m_accuracyChart, m_throughputChart, m_underflowChart};
}

CompareView* CompareView::open(std::shared_ptr<RunStore> store, const std::vector<std::int64_t>& ids, QString& error) {
    auto* view = new CompareView(std::move(store));
    error = view->setRuns(ids);
    if (!error.isEmpty()) {
        delete view;
        return nullptr;
    }
    view->setAttribute(Qt::WA_DeleteOnClose);
    return view;
}

QString CompareView::checkRunCount(std::size_t count) {
    if (count < static_cast<std::size_t>(minRuns)) return tr("Select at least two runs to compare.");
    if (count > static_cast<std::size_t>(maxRuns))
        return tr("Select at most %1 runs to compare (%2 are selected): more curves than that cannot be told apart.")
            .arg(maxRuns)
            .arg(count);
    return {};
}

QString CompareView::setRuns(const std::vector<std::int64_t>& ids) {
    if (QString why = checkRunCount(ids.size()); !why.isEmpty()) return why;
    std::vector<std::unique_ptr<RunData>> runs;
    try {
        for (std::int64_t id : ids) {
            auto d = std::make_unique<RunData>();
            d->row = m_store->run(id);
            d->layerNames = layerNamesFromConfig(d->row.config_json);
            d->read(*m_store);
            runs.push_back(std::move(d));
        }
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    for (ChartView* c : charts()) c->removeAllSeries();
    m_runs = std::move(runs);

    // The layer choice: the union of the runs' layer names, by position.
    std::vector<std::string> names;
    for (const auto& r : m_runs)
        for (std::size_t i = 0; i < r->layerNames.size(); ++i)
            if (i >= names.size()) names.push_back(r->layerNames[i]);
    const QSignalBlocker block(m_layerChoice);
    m_layerChoice->clear();
    m_layerChoice->addItem(tr("mean over layers"), -1);
    for (std::size_t i = 0; i < names.size(); ++i) m_layerChoice->addItem(QString::fromStdString(names[i]), static_cast<int>(i));
    if (m_underflowLayer >= static_cast<int>(names.size())) m_underflowLayer = -1;
    m_layerChoice->setCurrentIndex(m_underflowLayer + 1);

    updateTitles();
    fillDifferenceTable();
    rebuildSeries();
    updateLegend();
    bool recording = false;
    for (const auto& r : m_runs) recording |= r->row.status == RunStatus::running;
    if (recording) {
        m_follow.start();
    } else {
        m_follow.stop();
    }
    return {};
}

void CompareView::followRunning() {
    bool changed = false, recording = false;
    try {
        for (auto& r : m_runs) {
            if (r->row.status != RunStatus::running) continue;
            changed |= r->read(*m_store);
            recording |= r->row.status == RunStatus::running;
        }
    } catch (const std::exception&) {
        recording = false;  // the store went away or broke: keep what is shown, stop reading
    }
    if (!recording) m_follow.stop();
    if (!changed) return;
    // New steps widen the x range when the whole run was shown; a range the user zoomed to stays.
    const QCPRange shown = m_lossChart->xAxis->range();
    const bool zoomed = shown.lower > 0 || shown.upper < m_xMax;
    rebuildSeries();
    if (zoomed) applyRange(shown, nullptr);
}

void CompareView::updateLegend() {
    QStringList legend;
    for (const auto& c : m_curves)
        legend << QStringLiteral("<span style=\"color:%1\">&#9632;&#9632;</span>&nbsp;%2&nbsp;<span style=\"color:gray\">(%3)</span>")
                      .arg(c.color.name(), c.name.toHtmlEscaped())
                      .arg(c.id);
    m_legend->setText(legend.join(QStringLiteral(" &nbsp;&nbsp; ")));
    QStringList names2;
    for (const auto& c : m_curves) names2 << c.name;
    setWindowTitle(tr("Compare: %1 — Mantissa").arg(names2.join(QStringLiteral(", "))));
}

void CompareView::setXAxis(XAxis axis) {
    if (axis == m_xAxis) return;
    m_xAxis = axis;
    const QSignalBlocker block(m_xChoice);
    m_xChoice->setCurrentIndex(axis == XAxis::time ? 1 : 0);
    rebuildSeries();
}

void CompareView::setSmoothingWeight(double weight) {
    weight = std::clamp(weight, 0.0, 0.99);
    if (weight == m_smoothing) return;
    m_smoothing = weight;
    const QSignalBlocker block(m_smoothingSlider);
    m_smoothingSlider->setValue(static_cast<int>(std::lround(weight * 1000)));
    m_smoothingValue->setText(QString::number(weight, 'f', 2));
    rebuildSeries();
}

void CompareView::setUnderflowLayer(int layer) {
    if (layer < -1 || layer >= m_layerChoice->count() - 1) layer = -1;
    if (layer == m_underflowLayer) return;
    m_underflowLayer = layer;
    const QSignalBlocker block(m_layerChoice);
    m_layerChoice->setCurrentIndex(layer + 1);
    updateTitles();
    rebuildSeries();
}

void CompareView::updateTitles() {
    // A language model's loss is the mean negative log-likelihood of the next token, in nats.
    bool text = !m_runs.empty();
    for (const auto& r : m_runs) text &= flattenConfig(r->row.config_json)["dataset.kind"] == "\"text\"";
    m_lossChart->setNote(text ? tr("training loss (nats/token): smoothed, raw faint")
                              : tr("training loss: smoothed, raw faint"));
    m_scaleChart->setNote(tr("loss scale (×, log₂ axis)"));
    m_accuracyChart->setNote(tr("test accuracy (%)"));
    m_throughputChart->setNote(tr("throughput (samples/s): smoothed, raw faint"));
    m_underflowChart->setNote(
        m_underflowLayer < 0
            ? tr("gradient underflow (% of values rounded to zero): mean over layers")
            : tr("gradient underflow (% of values rounded to zero): %1").arg(m_layerChoice->currentText()));
}

void CompareView::setLogLoss(bool on) {
    const QSignalBlocker block(m_logLoss);
    m_logLoss->setChecked(on);
    m_lossChart->setLogarithmic(on, 10);
    m_lossChart->refreshData();
}

bool CompareView::logLoss() const {
    return m_lossChart->logarithmic();
}

void CompareView::rebuildSeries() {
    for (ChartView* c : charts()) c->removeAllSeries();
    m_curves.clear();
    m_curves.reserve(m_runs.size());  // the charts keep pointers into it
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
        const RunData& d = *m_runs[i];
        RunCurves c;
        c.id = d.row.id;
        c.name = QString::fromStdString(d.row.name);
        c.color = runColor(static_cast<int>(i));
        for (const StepRecord& s : d.steps) {
            const double x = m_xAxis == XAxis::step ? static_cast<double>(s.step) : s.time_s;
            c.loss.append(x, s.loss);
            c.lossScale.append(x, s.loss_scale);
            c.throughput.append(x, s.samples_per_s);
        }
        smoothInto(c.loss, c.lossSmoothed, m_smoothing);
        smoothInto(c.throughput, c.throughputSmoothed, m_smoothing);
        for (const EvalRecord& e : d.evals)
            if (e.split == "test" && std::isfinite(e.accuracy)) c.accuracy.append(d.x(e.step, m_xAxis), e.accuracy);
        for (std::size_t k = 0; k < d.layerSteps.size(); ++k) {
            const auto& row = d.underflow[k];
            double value = NAN;
            if (m_underflowLayer >= 0) {
                if (static_cast<std::size_t>(m_underflowLayer) < row.size()) value = row[static_cast<std::size_t>(m_underflowLayer)];
            } else {
                double sum = 0;
                int n = 0;
                for (double v : row)
                    if (std::isfinite(v)) sum += v, ++n;
                if (n > 0) value = sum / n;
            }
            c.underflow.append(d.x(d.layerSteps[k], m_xAxis), value);
        }
        m_curves.push_back(std::move(c));
    }
    rebuildGraphs();
}

void CompareView::rebuildGraphs() {
    double xMax = 0;
    for (const RunCurves& c : m_curves) {
        // Raw curves first, so every run's smoothed line is drawn above all the faint ones. Their
        // values are read out beside the smoothed ones ("0.512 (raw 0.466)"), not apart.
        const auto none = [](double) { return QString(); };
        m_lossChart->setReadout(m_lossChart->addSeries(&c.loss, c.name + tr(" (raw)"), c.color, GraphStyle::faintLine),
                                none);
        m_throughputChart->setReadout(
            m_throughputChart->addSeries(&c.throughput, c.name + tr(" (raw)"), c.color, GraphStyle::faintLine), none);
        xMax = std::max({xMax, c.loss.lastX(), c.accuracy.lastX(), c.underflow.lastX()});
    }
    for (std::size_t i = 0; i < m_curves.size(); ++i) {
        const RunCurves& c = m_curves[i];
        m_lossChart->setReadout(m_lossChart->addSeries(&c.lossSmoothed, c.name, c.color, GraphStyle::line),
                                readout(lossReadout, i));
        m_throughputChart->setReadout(
            m_throughputChart->addSeries(&c.throughputSmoothed, c.name, c.color, GraphStyle::line),
            readout(throughputReadout, i));
        m_scaleChart->addSeries(&c.lossScale, c.name, c.color, GraphStyle::steps);  // "2^15 (32768)" as it is
        QCPGraph* acc = m_accuracyChart->addSeries(&c.accuracy, c.name, c.color, GraphStyle::line, false, 100.0);
        acc->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c.color, c.color, 5));
        m_accuracyChart->setReadout(acc, readout(accuracyReadout, i));
        m_underflowChart->setReadout(
            m_underflowChart->addSeries(&c.underflow, c.name, c.color, GraphStyle::line, false, 100.0),
            readout(underflowReadout, i));
    }
    // Where a branch left its parent, when both are compared (by step only: a marker sits on a step).
    std::vector<ChartMarker> markers;
    if (m_xAxis == XAxis::step)
        for (const auto& child : m_runs) {
            if (child->row.parent_uuid.empty() || !child->row.parent_step) continue;
            for (const auto& parent : m_runs)
                if (parent.get() != child.get() && parent->row.uuid == child->row.parent_uuid)
                    markers.push_back({*child->row.parent_step,
                                       tr("#%1 branched from #%2").arg(child->row.id).arg(parent->row.id).toStdString(),
                                       ChartMarker::Kind::origin});
        }
    for (ChartView* c : charts()) c->setMarkers(markers);
    const QString xLabel = m_xAxis == XAxis::step ? tr("step") : tr("elapsed time (s)");
    for (ChartView* c : charts()) c->setXLabel(xLabel);  // shown on the bottom chart, and on any exported
    m_xMax = xMax > 0 ? xMax : 1;
    applyRange(QCPRange(0, m_xMax), nullptr);
}

void CompareView::applyRange(const QCPRange& range, ChartView* except) {
    for (ChartView* c : charts()) {
        if (c != except) c->setXRange(range);
        c->refreshData();
    }
}

void CompareView::redrawNow() {
    for (ChartView* c : charts()) c->refreshData(true);
}

void CompareView::fillDifferenceTable() {
    std::vector<std::map<std::string, std::string>> configs;
    for (const auto& r : m_runs) configs.push_back(flattenConfig(r->row.config_json));
    m_keys = ui::differingKeys(configs);  // precision.* first, lesson.* last (compareKeyLess)
    m_diffTable->clear();
    m_diffTable->setRowCount(static_cast<int>(m_keys.size()));
    m_diffTable->setColumnCount(static_cast<int>(m_runs.size()));
    for (std::size_t col = 0; col < m_runs.size(); ++col) {
        const RunRow& run = m_runs[col]->row;
        auto* header = new QTableWidgetItem(QString::fromStdString(run.name));
        header->setData(Qt::UserRole, QString::fromStdString(run.name));  // the text is elided to fit
        header->setForeground(runColor(static_cast<int>(col)));
        header->setToolTip(tr("#%1 %2").arg(run.id).arg(QString::fromStdString(run.name)));
        m_diffTable->setHorizontalHeaderItem(static_cast<int>(col), header);
    }
    const QColor quiet = palette().color(QPalette::Disabled, QPalette::Text);
    for (std::size_t row = 0; row < m_keys.size(); ++row) {
        m_diffTable->setVerticalHeaderItem(static_cast<int>(row), new QTableWidgetItem(QString::fromStdString(m_keys[row])));
        for (std::size_t col = 0; col < configs.size(); ++col) {
            const auto it = configs[col].find(m_keys[row]);
            QString text = it == configs[col].end() ? tr("(absent)") : QString::fromStdString(it->second);
            if (text.size() >= 2 && text.startsWith(QLatin1Char('"')) && text.endsWith(QLatin1Char('"')))
                text = QString::fromStdString(nlohmann::json::parse(it->second).get<std::string>());  // unquoted
            auto* item = new QTableWidgetItem;
            if (text.isEmpty()) {
                item->setText(tr("(empty)"));
                item->setForeground(quiet);
            } else {
                // One line, elided to the column; the whole value in the tooltip (wrapped: rich text).
                item->setText(QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')));
                item->setToolTip(QStringLiteral("<p>%1</p>").arg(text.toHtmlEscaped()));
            }
            if (it == configs[col].end()) item->setForeground(quiet);
            m_diffTable->setItem(static_cast<int>(row), static_cast<int>(col), item);
        }
    }
    m_diffTable->setVisible(!m_keys.empty());
    // Tall enough for up to eight keys without scrolling; more scroll.
    const int rows = std::min<int>(static_cast<int>(m_keys.size()), 8);
    const int height = m_diffTable->horizontalHeader()->sizeHint().height() +
                       rows * m_diffTable->verticalHeader()->defaultSectionSize() + 2 * m_diffTable->frameWidth() +
                       m_diffTable->horizontalScrollBar()->sizeHint().height();
    m_diffTable->setMinimumHeight(height);
    m_diffNote->setText(differenceNote());
    elideRunNames();
}

void CompareView::elideRunNames() {
    const QHeaderView* header = m_diffTable->horizontalHeader();
    const int margins = 2 * header->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, header) + 2;
    for (int col = 0; col < m_diffTable->columnCount(); ++col) {
        QTableWidgetItem* item = m_diffTable->horizontalHeaderItem(col);
        if (!item) continue;
        // In the middle: runs of one lesson differ at their ends ("…-reference-fp32-accumulation").
        const QString text = header->fontMetrics().elidedText(item->data(Qt::UserRole).toString(), Qt::ElideMiddle,
                                                              header->sectionSize(col) - margins);
        if (item->text() != text) item->setText(text);
    }
}

QString CompareView::differenceNote() const {
    if (m_runs.empty()) return {};
    if (m_keys.empty()) return tr("No configuration key differs: these runs were set up identically.");
    // Singular and plural spelt out: tr()'s %n picks a form only where a translation is loaded.
    if (m_keys.size() == 1) return tr("1 key differs; keys the runs share are not shown.");
    return tr("%1 keys differ; keys the runs share are not shown.").arg(m_keys.size());
}

}  // namespace mantissa::ui
