// HistogramFeed (see histogram_feed.h).
#include "histogram/histogram_feed.h"

#include <algorithm>

#include "error.h"
#include "store/run_store.h"

namespace mantissa::ui {

HistogramFeed::HistogramFeed(QObject* parent) : QObject(parent) {
    m_timer.setInterval(700);
    connect(&m_timer, &QTimer::timeout, this, &HistogramFeed::poll);
}

HistogramFeed::~HistogramFeed() = default;

void HistogramFeed::clear() {
    stopFollowing();
    m_unread = false;
    m_store.reset();
    m_storePath.clear();
    m_runId = 0;
    m_layers.clear();
    m_layer.clear();
    m_layerIndex = -1;
    m_nextStep = 0;
    m_scales.clear();
    m_series.clear();
    emit layersChanged(m_layers);
    emit seriesChanged();
}

QString HistogramFeed::setRun(const QString& storePath, std::int64_t runId) {
    const QString keepLayer = m_layer;
    clear();
    try {
        m_store = std::make_unique<RunStore>(storePath.toStdString(), /*read_only=*/true);
        const RunRow row = m_store->run(runId);  // throws when there is no such run
        m_storePath = storePath;
        m_runId = runId;
        m_layer = keepLayer;  // the same layer name in the next run, when it has one
        m_following = row.status == RunStatus::running;
    } catch (const std::exception& e) {
        m_store.reset();
        const QString sentence = QStringLiteral("Cannot show gradient histograms: %1").arg(QString::fromUtf8(e.what()));
        emit failed(sentence);
        return sentence;
    }
    if (m_paused) {
        m_unread = true;
    } else {
        poll();
    }
    updateTimer();
    return {};
}

void HistogramFeed::setPaused(bool paused) {
    if (paused == m_paused) return;
    m_paused = paused;
    if (!paused && m_store && (m_unread || m_following)) {
        m_unread = false;
        poll();  // what was recorded meanwhile
    }
    updateTimer();
}

void HistogramFeed::updateTimer() {
    if (m_following && !m_paused) {
        if (!m_timer.isActive()) m_timer.start();
    } else {
        m_timer.stop();
    }
}

void HistogramFeed::setLayer(const QString& name) {
    if (name == m_layer && m_layerIndex >= 0) return;
    m_layer = name;
    m_layerIndex = -1;
    m_nextStep = 0;
    m_scales.clear();
    m_series.clear();
    emit seriesChanged();
    if (m_store && !m_paused) poll();
    if (m_paused) m_unread = m_store != nullptr;
}

void HistogramFeed::stopFollowing() {
    m_following = false;
    updateTimer();
}

void HistogramFeed::poll() {
    if (!m_store) return;
    try {
        const bool wasRunning = m_following;
        // Read the status first: rows committed before a final status are then all visible below.
        const bool running = m_store->run(m_runId).status == RunStatus::running;
        const std::vector<LayerStepRecord> rows = m_store->layer_steps(m_runId, m_nextStep);
        for (const StepRecord& s : m_store->steps(m_runId, m_nextStep)) m_scales[s.step] = s.loss_scale;

        // Layers: discovered from the rows (index -> name), kept in index order.
        bool layersGrew = false;
        for (const LayerStepRecord& r : rows) {
            const QString name = QString::fromStdString(r.name);
            if (r.layer >= 0 && r.layer >= m_layers.size()) {
                while (m_layers.size() <= r.layer) m_layers.append(QString());
                layersGrew = true;
            }
            if (r.layer >= 0 && m_layers[r.layer].isEmpty()) {
                m_layers[r.layer] = name;
                layersGrew = true;
            }
        }
        if (layersGrew) emit layersChanged(m_layers);
        if (m_layerIndex < 0 && !m_layers.isEmpty()) {
            m_layerIndex = std::max<int>(0, static_cast<int>(m_layers.indexOf(m_layer)));
            m_layer = m_layers[m_layerIndex];
        }

        bool appended = false;
        for (const LayerStepRecord& r : rows) {
            if (r.layer != m_layerIndex) continue;
            const auto scale = m_scales.find(r.step);
            if (scale == m_scales.end()) {
                if (running) break;  // its step row is not committed yet: read it again next poll
                continue;            // a finished run without the step row: nothing more will come
            }
            appended |=
                m_series.append(r.step, r.grad_exponents, scale->second, r.grad_elements, r.frac_zero, r.precision);
            m_nextStep = r.step + 1;
        }
        m_scales.erase(m_scales.begin(), m_scales.lower_bound(m_nextStep));
        if (appended) emit seriesChanged();
        if (!running && wasRunning) stopFollowing();
        if (running && !wasRunning) {
            m_following = true;
            updateTimer();
        }
    } catch (const std::exception& e) {
        stopFollowing();
        emit failed(QStringLiteral("Reading gradient histograms stopped: %1").arg(QString::fromUtf8(e.what())));
    }
}

}  // namespace mantissa::ui
