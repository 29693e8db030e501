// MainWindow: wiring only. It places the panels (experiment and precision at the sides, charts in
// the middle, layers and events below), owns the actions with their shortcuts, routes the panels'
// requests to the RunController and the controller's telemetry to the views, and remembers the
// layout and the last experiment (QSettings). The logic lives in the panels, the models and the
// controller.
//
// Between runs the views describe the experiment on screen: setting or opening one clears the
// previous run's charts, table and events, and the Layers table shows the new experiment's layers
// and precisions (plan_model, engine/model/model_plan.h) until Start; for a transformer, every op's
// format and why (op_table), the Precision panel's op classes and, for a language model, the
// Sample tab behind the events. Small windows are laid out
// on purpose (dock_layout.h). A first window is 1500x950 or the room its screen has, whichever is
// smaller, and a remembered geometry is brought into that room too, so the status bar and the
// bottom docks are never off-screen. Closing the window during a run stops the run (recorded as
// `stopped`) before the window goes.
//
// Resume and branch (main_window_branch.cpp): a stored run is continued from its latest
// checkpoint (Run history ▸ Resume, Run ▸ Continue stopped run) and shown with its earlier steps;
// a branch is prepared (Run history ▸ Branch…, a chart's right-click menu) by putting the
// checkpoint's experiment into the panels, with the parent drawn faintly on the charts, and the
// next Start trains it as a new run with the parent recorded.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>

#include <optional>

#include "charts/charts_panel.h"
#include "train/session.h"

class QAction;
class QDockWidget;
class QMenu;

namespace mantissa::ui {

class DockLayout;
class EventLogModel;
class EventsPanel;
class FormatExplorer;
class GradientHistogramView;
class RunBrowser;
class ExperimentPanel;
class LayerTableModel;
class LayersPanel;
class LessonPanel;
class ReferenceRun;
class NoticeBar;
class PrecisionPanel;
class RunController;
class RunStatusBar;
class RunToolBar;
class SamplePanel;
class SweepView;
class ShortcutsDialog;
class WhatIfPanel;
class BlockScalePanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        QString storePath;         // where runs are recorded; empty: the default location
        bool useSettings = true;   // restore and save layout and last experiment (off for screenshots)
    };
    explicit MainWindow(const Options& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The experiment as the panels describe it now (lesson.pace: the pace chosen in the Run toolbar).
    Experiment currentExperiment() const;
    // Shows `experiment` in the panels and, between runs, its layers in the Layers table, after
    // clearing the previous run's charts, table and events; a lesson's pace becomes the pace.
    void setExperiment(const Experiment& experiment);
    // Opens an experiment file as setExperiment shows it; a file without a lesson ends classroom
    // mode. False (and a message) when it cannot be read.
    bool openExperiment(const QString& path);
    // The default experiment (resources/experiments/default.json, installed or in the source tree,
    // resource_paths.h), as ./mantissa.sh run opens it; for a window started without --config and
    // with no remembered experiment. Its path is not remembered, so Save never offers to overwrite
    // it. False when no default.json is found (the engine's defaults stay).
    bool showDefaultExperiment();
    bool restoredExperiment() const { return m_restoredExperiment; }  // from the saved settings
    bool saveExperiment(const QString& path);
    // first: commands the session takes before its first step (a scripted pause, say).
    bool startRun(const std::vector<Command>& first = {});
    // Changes a setting of the running session as the panels would: "KEY=VALUE" with the experiment
    // file's dotted keys (precision.layers.fc1=fp16, precision.autocast=bf16,
    // precision.loss_scaling.mode=off, train.lr=0.01, as mantissa-cli's --set), or "inject=LAYER".
    // Throws mantissa::Error for a bad assignment or a key that cannot change during a run.
    void applyLiveSetting(const std::string& assignment);

    // Continues run `runId` of the store at `storePath` from its latest checkpoint, as the same run
    // (RunController::resumeRun); the panels show its experiment. False and a message otherwise.
    bool resumeRun(const QString& storePath, std::int64_t runId);
    // Prepares a branch of run `runId` from its checkpoint at `step`: the checkpoint's experiment,
    // named "<parent name> @step", goes into the panels (clearing the last run's views) and the
    // parent is overlaid on the charts; startRun() then starts the branch with whatever the panels
    // say. False and a message when the checkpoint cannot be read. Setting or opening another
    // experiment, or cancelBranch(), drops it.
    bool prepareBranch(const QString& storePath, std::int64_t runId, std::int64_t step);
    void cancelBranch();
    bool branchPending() const { return m_branch.has_value(); }

    // Classroom mode: only what a lesson needs (the lesson, the run buttons, the precision switches,
    // the teaching charts and columns). A preset with "classroom": true turns it on when loaded;
    // View ▸ Classroom mode turns it on or off, and the choice is remembered.
    void setClassroomMode(bool on);
    bool classroomMode() const;

    // Steps per second (0: as fast as possible), as the Run toolbar's Pace sets it.
    void setPace(double stepsPerSecond);
    double pace() const;

    // Help ▸ Keyboard shortcuts (a dialog listing every menu action's keys) and Help ▸
    // Documentation (the docs folder, through QDesktopServices; false and a message when the docs
    // are not found).
    ShortcutsDialog* showShortcuts();
    bool openDocumentation();

    // Brings every view up to the data now (the live updates are paced); for screenshots and tests.
    void refreshViews();

    RunController* controller() const { return m_controller; }
    RunToolBar* runToolBar() const { return m_runBar; }
    QAction* stepAction() const { return m_step; }
    QAction* pauseAtAction() const { return m_pauseAtAction; }
    QAction* startAction() const { return m_start; }
    // Run ▸ Continue stopped run: the window's last run, stopped or failed, from its latest checkpoint.
    QAction* continueAction() const { return m_continue; }
    ExperimentPanel* experimentPanel() const { return m_experiment; }
    PrecisionPanel* precisionPanel() const { return m_precision; }
    LayerTableModel* layerModel() const { return m_layerModel; }
    LayersPanel* layersPanel() const { return m_layers; }
    ChartsPanel* chartsPanel() const { return m_charts; }
    EventsPanel* eventsPanel() const { return m_events; }
    NoticeBar* noticeBar() const { return m_notice; }
    LessonPanel* lessonPanel() const { return m_lesson; }
    // A lesson's reference run (lesson.reference): found in the store or trained at full speed when
    // the lesson is set, then overlaid on the charts as a faint series (classroom/reference_run.h).
    // A window not yet shown prepares it only once it is, on the event loop after the show: until
    // then the experiment may still change (a remembered one replaced by --config, the steps of a
    // --screenshot), and a reference started for it would be abandoned, recorded `stopped`.
    ReferenceRun* referenceRun() const { return m_reference; }
    // Overlays run `runId` of the store at `storePath` on the live charts (Run history ▸ Overlay on
    // live charts); false and a notice when it cannot be read.
    bool overlayRun(const QString& storePath, std::int64_t runId, const QString& name = {},
                    OverlayRole role = OverlayRole::run);
    // The run history (a window of its own, made on first use) over the store runs are recorded in,
    // until "Open store…" picks another.
    RunBrowser* runBrowser();
    void showRunBrowser();
    // File ▸ Sweeps…: the store's sweeps and their recipe table with its scatter (a window of its
    // own, made on first use), over the run history's store; Run history ▸ Sweep opens it on a run.
    SweepView* sweepView();
    void showSweepView();
    QAction* sweepsAction() const { return m_sweeps; }
    FormatExplorer* formatExplorer();  // a window of its own, made on first use
    void showFormatExplorer();
    GradientHistogramView* histogramView() const { return m_histogram; }
    QDockWidget* histogramDock() const { return m_histogramDock; }
    QDockWidget* lessonDock() const { return m_lessonDock; }
    QDockWidget* layersDock() const { return m_layersDock; }
    QDockWidget* experimentDock() const { return m_experimentDock; }
    QDockWidget* precisionDock() const { return m_precisionDock; }
    QDockWidget* eventsDock() const { return m_eventsDock; }
    // A language model's samples (dataset.kind text): a tab behind the events, shown for a text
    // experiment and raised when its run starts; hidden for other experiments.
    SamplePanel* samplePanel() const { return m_sample; }
    QDockWidget* sampleDock() const { return m_sampleDock; }
    // What each format would do to each layer's operands (train.what_if): a tab behind the events.
    WhatIfPanel* whatIfPanel() const { return m_whatIf; }
    QDockWidget* whatIfDock() const { return m_whatIfDock; }
    // The block scales of block-quantised operands (train.block_scales): a tab behind the events.
    BlockScalePanel* blockScalePanel() const { return m_blockScales; }
    QDockWidget* blockScaleDock() const { return m_blockScaleDock; }
    QString lastError() const { return m_lastError; }

protected:
    void closeEvent(QCloseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createDocks();
    void connectController();
    void updateActions();
    void showError(const QString& message);
    void showNotice(const QString& message);
    void showRunNotice(const QString& message);  // the session's: a warning the banner keeps
    void clearPreviousRun();   // between runs: the charts, table, events and status show no run
    // Between runs: the dataset note and (table) the Layers table for the form's experiment.
    void updatePlan(bool table = true);
    // The views a model's ops call for: the Precision panel's softmax and layernorm rows, and the
    // Sample dock for a text experiment (`text`).
    void updateModelViews(bool text);
    void onPauseAtChosen(std::int64_t step);
    void pauseAtFromMenu();
    void restoreSettings();
    void saveSettings() const;
    // A window larger than this screen's room (a geometry restored from a larger screen): shrunk
    // and moved into it, as far as the window's minimum size allows (again once shown).
    void fitToScreen();
    // The reference of the lesson set while the window was hidden (m_pendingReference), now.
    void preparePendingReference();
    void applyClassroomMode(bool on);  // the View menu's action, checked or not
    // The banner that announces a lesson, saying whether classroom mode is on now.
    QString lessonNotice(const QString& title) const;
    void onRunStarted();
    void onTelemetry();
    void onRunFinished(SessionState state, const QString& error);
    void openFromDialog();
    void saveFromDialog();
    void createBranchActions();  // main_window_branch.cpp
    void updateBranchActions();
    // The charts' right-click entry for the window's finished, recorded run.
    void addChartBranchEntry(QMenu& menu, double step);

    struct PendingBranch {
        QString storePath;
        std::int64_t runId = -1;
        std::int64_t step = 0;
        QString parentName;
    };
    std::optional<PendingBranch> m_branch;  // prepared, waiting for Start
    std::optional<Experiment> m_pendingReference;  // set while hidden: its reference waits for the show
    bool m_fitRestoredGeometry = false;  // a geometry was restored: fitToScreen once shown
    QString branchNotice() const;

    Options m_options;
    RunController* m_controller = nullptr;
    LayerTableModel* m_layerModel = nullptr;
    EventLogModel* m_eventModel = nullptr;
    ExperimentPanel* m_experiment = nullptr;
    PrecisionPanel* m_precision = nullptr;
    LayersPanel* m_layers = nullptr;
    ChartsPanel* m_charts = nullptr;
    EventsPanel* m_events = nullptr;
    NoticeBar* m_notice = nullptr;
    RunStatusBar* m_status = nullptr;
    LessonPanel* m_lesson = nullptr;
    ReferenceRun* m_reference = nullptr;
    QDockWidget* m_lessonDock = nullptr;
    QAction* m_classroomAction = nullptr;
    QAction* m_history = nullptr;
    QAction* m_openStore = nullptr;
    QAction* m_explorer = nullptr;
    RunBrowser* m_browser = nullptr;
    QAction* m_sweeps = nullptr;
    SweepView* m_sweepView = nullptr;
    FormatExplorer* m_formatExplorer = nullptr;
    GradientHistogramView* m_histogram = nullptr;
    QDockWidget* m_histogramDock = nullptr;
    SamplePanel* m_sample = nullptr;
    QDockWidget* m_sampleDock = nullptr;
    WhatIfPanel* m_whatIf = nullptr;
    QDockWidget* m_whatIfDock = nullptr;
    BlockScalePanel* m_blockScales = nullptr;
    QDockWidget* m_blockScaleDock = nullptr;
    QDockWidget* m_experimentDock = nullptr;
    QDockWidget* m_precisionDock = nullptr;
    QDockWidget* m_layersDock = nullptr;
    QDockWidget* m_eventsDock = nullptr;
    QAction* m_open = nullptr;
    QAction* m_save = nullptr;
    QAction* m_start = nullptr;
    QAction* m_pause = nullptr;
    QAction* m_stop = nullptr;
    QAction* m_quit = nullptr;
    QAction* m_resetCharts = nullptr;
    QAction* m_clearOverlays = nullptr;
    QAction* m_about = nullptr;
    QAction* m_step = nullptr;
    QAction* m_pauseAtAction = nullptr;
    QAction* m_continue = nullptr;
    QAction* m_cancelBranch = nullptr;
    QAction* m_shortcuts = nullptr;
    QAction* m_docs = nullptr;
    RunToolBar* m_runBar = nullptr;
    DockLayout* m_dockLayout = nullptr;
    ShortcutsDialog* m_shortcutsDialog = nullptr;
    bool m_restoredExperiment = false;
    QString m_experimentPath;  // the file last opened or saved
    QString m_lessonNotice;  // the banner that announced the lesson shown
    QElapsedTimer m_viewClock;  // paces the table and status bar updates
    static constexpr int viewUpdateIntervalMs = 200;
    QString m_lastError;
};

}  // namespace mantissa::ui
