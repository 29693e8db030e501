// HistogramFeed: fills a HistogramSeries for one layer of one run from a run store, and follows
// the run while it is being recorded (by this process's Recorder or by `mantissa-cli train`),
// polling the store every `pollIntervalMs` (default 700 ms): the live telemetry ring carries no
// histograms, the store does.
//
// Each poll reads layer_steps(run, next) and steps(run, next); a layer row is appended once its
// step row (which holds the loss scale) is there too, so a step is never appended with a guessed
// scale, and with the layer's compute format at that step (layer_steps.precision, docs/schema.md).
// Polling stops when the run is no longer `running`. While paused (the view is hidden: a
// dock tab not shown), nothing is read; resuming reads everything missed in one poll.
//
// The store is opened read-only with its own connection on the GUI thread; reads are short (only
// the rows after the last step seen). GUI thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include <QObject>
#include <QStringList>
#include <QTimer>

#include "histogram/histogram_series.h"

namespace mantissa {
class RunStore;
}

namespace mantissa::ui {

class HistogramFeed : public QObject {
    Q_OBJECT
public:
    explicit HistogramFeed(QObject* parent = nullptr);
    ~HistogramFeed() override;

    // Opens `storePath` and loads the run's rows; follows the run while it is running. Returns an
    // empty string, or one sentence saying why the run cannot be shown (the series is then empty).
    QString setRun(const QString& storePath, std::int64_t runId);
    // Chooses the layer by name ("fc1"); empty or unknown: the first layer. Reloads the series.
    void setLayer(const QString& name);
    void clear();  // forgets the run

    QString storePath() const { return m_storePath; }
    std::int64_t runId() const { return m_runId; }
    QStringList layers() const { return m_layers; }
    QString layer() const { return m_layer; }
    // The layer's steps, each with the compute format it ran in (HistogramSeries::precisionSpans()).
    const HistogramSeries& series() const { return m_series; }
    // following: the run is being recorded and the feed keeps up with it (unless paused);
    // polling: its timer runs now (following and not paused).
    bool following() const { return m_following; }
    bool polling() const { return m_timer.isActive(); }
    void setPaused(bool paused);
    bool paused() const { return m_paused; }

    void setPollInterval(int ms) { m_timer.setInterval(ms); }
    int pollInterval() const { return m_timer.interval(); }

public slots:
    // Reads the rows recorded since the last poll (public so tests need not wait for the timer).
    void poll();

signals:
    void layersChanged(const QStringList& layers);
    void seriesChanged();  // rows were appended (or the series was reset)
    void failed(const QString& sentence);

private:
    void stopFollowing();
    void updateTimer();  // runs exactly while following and not paused

    std::unique_ptr<RunStore> m_store;
    QString m_storePath;
    std::int64_t m_runId = 0;
    QStringList m_layers;
    QString m_layer;
    int m_layerIndex = -1;
    std::int64_t m_nextStep = 0;              // the first step not yet appended
    std::map<std::int64_t, double> m_scales;  // loss scales of steps read but not yet appended
    HistogramSeries m_series;
    QTimer m_timer;
    bool m_following = false;
    bool m_paused = false;
    bool m_unread = false;  // a run was set while paused: its rows are read on resuming
};

}  // namespace mantissa::ui
