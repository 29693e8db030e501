// RunViewer: one recorded run, as it was recorded: its summary (status, steps, final loss, test
// accuracy, for a language model its test loss in nats per token and perplexity, configuration and
// what was changed during the run, notes), the same ChartsPanel and EventsPanel the live window
// uses (and for a language model its SamplePanel, for a run with what-if statistics its
// WhatIfPanel, and for a run with block-scale views its BlockScalePanel, beside the events) over a
// RunSeries loaded from the store, and an Export menu. A run still `running` (recorded by another
// process, or by this GUI) is followed: new rows are appended a few times a second until it ends.
// The block maps are held within the series' budget (the newest steps'); the panel asks for an
// older step's again and the viewer reads it from the store (loadBlockScaleMaps). The header says
// which run a branch started from and at which step, and lists the run's checkpoints; a chart's
// right-click menu offers "Branch from the checkpoint at step ≤ N…" (branchRequested, which the
// run browser passes on to the main window).
//
// A window of its own (the browser opens one per run) or a widget to embed. GUI thread only.
#pragma once

#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>

#include "history/run_export.h"
#include "series/run_series.h"
#include "store/run_store.h"

class QLabel;
class QSplitter;
class QToolButton;

namespace mantissa::ui {

class ChartsPanel;
class EventLogModel;
class EventsPanel;
class RunFollower;
class SamplePanel;
class WhatIfPanel;
class BlockScalePanel;

class RunViewer : public QWidget {
    Q_OBJECT
public:
    RunViewer(std::shared_ptr<RunStore> store, std::int64_t runId, QWidget* parent = nullptr);
    ~RunViewer() override;

    // Reads the run (and starts following it when it is running). False, with error() set to one
    // sentence, when the store cannot give it.
    bool load();
    QString error() const { return m_error; }

    std::int64_t runId() const { return m_runId; }
    const RunRow& run() const { return m_run; }
    RunSeries& series() { return m_series; }
    ChartsPanel* chartsPanel() const { return m_charts; }
    EventsPanel* eventsPanel() const { return m_events; }
    EventLogModel* eventModel() const { return m_eventModel; }
    SamplePanel* samplePanel() const { return m_sample; }
    WhatIfPanel* whatIfPanel() const { return m_whatIf; }  // shown when the run has what-if statistics
    BlockScalePanel* blockScalePanel() const { return m_blockScales; }  // shown when it has block-scale views
    RunFollower* follower() const { return m_follower; }  // nullptr when the run is not followed
    bool following() const;
    QString summaryText() const;  // the header's text, plain

    // Exports without a dialog; returns "" or one sentence.
    QString exportTo(const ExportChoice& choice, const QString& path);

signals:
    void runFinished(qint64 runId);  // a followed run ended (its status is in run())
    void runUpdated(qint64 runId);   // new rows were appended
    // A person asked to branch this run from its checkpoint at `step` (a chart's menu).
    void branchRequested(qint64 runId, qint64 step);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void onRowsAdded();
    void onFinished();
    void updateSummary();

    std::shared_ptr<RunStore> m_store;
    std::int64_t m_runId;
    RunRow m_run;
    // samples/s (mean over the run) from the store's totals (config/throughput.h), read when the
    // run is loaded and when it finishes (not on every followed row: it reads every step).
    std::optional<double> m_samplesPerSecond;
    void readThroughput();
    void readFamily();  // m_family: where a branch came from, and the run's checkpoints
    QString m_family;
    void showBlockScales();  // once the run has block-scale views: the panel, with room for its plots
    void sizeBlockScales();
    RunSeries m_series;
    QString m_error;
    ChartsPanel* m_charts = nullptr;
    EventLogModel* m_eventModel = nullptr;
    EventsPanel* m_events = nullptr;
    SamplePanel* m_sample = nullptr;
    WhatIfPanel* m_whatIf = nullptr;
    BlockScalePanel* m_blockScales = nullptr;
    RunFollower* m_follower = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_notes = nullptr;
    QSplitter* m_splitter = nullptr;  // the charts over the bottom panels
    QSplitter* m_bottom = nullptr;    // the events and the panels beside them
    bool m_blockScalesSized = false;
    QToolButton* m_export = nullptr;
};

}  // namespace mantissa::ui
