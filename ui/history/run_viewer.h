// RunViewer: one recorded run, as it was recorded: its summary (status, steps, final loss, test
// accuracy, for a language model its test loss in nats per token and perplexity, configuration and
// what was changed during the run, notes), the same ChartsPanel and EventsPanel the live window
// uses (and beside the events: for a language model its SamplePanel and for a run with what-if
// statistics its WhatIfPanel, tabs of one widget when there are both; for a run with block-scale
// views its BlockScalePanel) over a RunSeries loaded from the store, and an Export menu. A run still `running` (recorded by another
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
class QTabWidget;
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
    // Tabs beside the events (a tab bar when there are both; the sample is raised first):
    SamplePanel* samplePanel() const { return m_sample; }  // a language model's run
    WhatIfPanel* whatIfPanel() const { return m_whatIf; }  // a run with what-if statistics
    QTabWidget* panelTabs() const { return m_panels; }
    // Beside them, shown when the run has block-scale views:
    BlockScalePanel* blockScalePanel() const { return m_blockScales; }
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
    // The panels beside the events and the sizes of everything, chosen for the panels the run has
    // (run_viewer_layout.cpp): when it is loaded or grows a panel, and once the window is laid out.
    void showPanels();
    int shownPanels() const;  // a bit for each of sample, what-if, block scales that is shown
    void layOutPanels();
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
    QTabWidget* m_panels = nullptr;   // the sample and the what-if table, hidden when neither
    bool m_panelPicked = false;       // a person raised a tab: a new panel does not take its place
    int m_laidOutPanels = -1;         // shownPanels() when the sizes were last chosen; -1: not yet
    QToolButton* m_export = nullptr;
};

}  // namespace mantissa::ui
