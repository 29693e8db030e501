// MainWindow: wiring only. It places the panels (experiment and precision at the sides, charts in
// the middle, layers and events below), owns the actions with their shortcuts, routes the panels'
// requests to the RunController and the controller's telemetry to the views, and remembers the
// layout and the last experiment (QSettings). The logic lives in the panels, the models and the
// controller.
//
// Closing the window during a run stops the run (recorded as `stopped`) before the window goes.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>

#include "train/session.h"

class QAction;
class QDockWidget;

namespace mantissa::ui {

class ChartsPanel;
class EventLogModel;
class EventsPanel;
class FormatExplorer;
class GradientHistogramView;
class RunBrowser;
class ExperimentPanel;
class LayerTableModel;
class LayersPanel;
class LessonPanel;
class NoticeBar;
class PrecisionPanel;
class RunController;
class RunStatusBar;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        QString storePath;         // where runs are recorded; empty: the default location
        bool useSettings = true;   // restore and save layout and last experiment (off for screenshots)
    };
    explicit MainWindow(const Options& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The experiment as the panels describe it now.
    Experiment currentExperiment() const;
    void setExperiment(const Experiment& experiment);
    bool openExperiment(const QString& path);   // false (and a message) when it cannot be read
    bool saveExperiment(const QString& path);
    // first: commands the session takes before its first step (a scripted pause, say).
    bool startRun(const std::vector<Command>& first = {});
    // Changes a setting of the running session as the panels would: "KEY=VALUE" with the experiment
    // file's dotted keys (precision.layers.fc1=fp16, precision.autocast=bf16,
    // precision.loss_scaling.mode=off, train.lr=0.01, as mantissa-cli's --set), or "inject=LAYER".
    // Throws mantissa::Error for a bad assignment or a key that cannot change during a run.
    void applyLiveSetting(const std::string& assignment);

    // Classroom mode: only what a lesson needs (the lesson, the run buttons, the precision switches,
    // the teaching charts and columns). A preset with "classroom": true turns it on when loaded;
    // View ▸ Classroom mode turns it on or off, and the choice is remembered.
    void setClassroomMode(bool on);
    bool classroomMode() const;

    // Brings every view up to the data now (the live updates are paced); for screenshots and tests.
    void refreshViews();

    RunController* controller() const { return m_controller; }
    ExperimentPanel* experimentPanel() const { return m_experiment; }
    PrecisionPanel* precisionPanel() const { return m_precision; }
    LayerTableModel* layerModel() const { return m_layerModel; }
    LayersPanel* layersPanel() const { return m_layers; }
    ChartsPanel* chartsPanel() const { return m_charts; }
    EventsPanel* eventsPanel() const { return m_events; }
    NoticeBar* noticeBar() const { return m_notice; }
    LessonPanel* lessonPanel() const { return m_lesson; }
    // The run history (a window of its own, made on first use) over the store runs are recorded in,
    // until "Open store…" picks another.
    RunBrowser* runBrowser();
    void showRunBrowser();
    FormatExplorer* formatExplorer();  // a window of its own, made on first use
    void showFormatExplorer();
    GradientHistogramView* histogramView() const { return m_histogram; }
    QDockWidget* histogramDock() const { return m_histogramDock; }
    QDockWidget* lessonDock() const { return m_lessonDock; }
    QString lastError() const { return m_lastError; }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createDocks();
    void connectController();
    void updateActions();
    void showError(const QString& message);
    void showNotice(const QString& message);
    void restoreSettings();
    void saveSettings() const;
    void applyClassroomMode(bool on);  // the View menu's action, checked or not
    void onRunStarted();
    void onTelemetry();
    void onRunFinished(SessionState state, const QString& error);
    void openFromDialog();
    void saveFromDialog();

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
    QDockWidget* m_lessonDock = nullptr;
    QAction* m_classroomAction = nullptr;
    QAction* m_history = nullptr;
    QAction* m_openStore = nullptr;
    QAction* m_explorer = nullptr;
    RunBrowser* m_browser = nullptr;
    FormatExplorer* m_formatExplorer = nullptr;
    GradientHistogramView* m_histogram = nullptr;
    QDockWidget* m_histogramDock = nullptr;
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
    QAction* m_about = nullptr;
    QString m_experimentPath;  // the file last opened or saved
    QElapsedTimer m_viewClock;  // paces the table and status bar updates
    static constexpr int viewUpdateIntervalMs = 200;
    QString m_lastError;
};

}  // namespace mantissa::ui
