// MainWindow: places the panels and wires them to the run controller (see main_window.h); its
// actions, menus and toolbar are in main_window_actions.cpp, a run's life in the views in
// main_window_run.cpp, and branching from a checkpoint in main_window_branch.cpp.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScreen>
#include <QScrollBar>
#include <QSettings>
#include <QShowEvent>
#include <QStatusBar>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "block_scales/block_scale_panel.h"
#include "charts/charts_panel.h"
#include "classroom/lesson_panel.h"
#include "classroom/reference_run.h"
#include "dock_layout.h"
#include "explorer/format_explorer.h"
#include "export/output_check.h"
#include "histogram/gradient_histogram_view.h"
#include "history/run_browser.h"
#include "history/run_overlay.h"
#include "series/run_series.h"
#include "error.h"
#include "live/run_controller.h"
#include "live/store_location.h"
#include "models/event_log_model.h"
#include "models/layer_table_model.h"
#include "panels/events_panel.h"
#include "panels/experiment_panel.h"
#include "panels/layers_panel.h"
#include "panels/notice_bar.h"
#include "panels/precision_panel.h"
#include "panels/run_status_bar.h"
#include "panels/run_toolbar.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"
#include "model/model_plan.h"
#include "resource_paths.h"
#include "sweeps/sweep_view.h"
#include "train/live_change.h"

namespace mantissa::ui {

namespace {
QDockWidget* makeDock(const QString& title, const QString& name, QWidget* content, QWidget* parent) {
    auto* dock = new QDockWidget(title, parent);
    dock->setObjectName(name);  // saveState() needs names
    dock->setWidget(content);
    return dock;
}

// A panel in a vertical scroll area that is never narrower than the panel, so a dock can be
// short but never clips its controls.
QWidget* scrollable(QWidget* content) {
    auto* area = new QScrollArea;
    area->setWidget(content);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    area->setMinimumWidth(content->minimumSizeHint().width() + area->verticalScrollBar()->sizeHint().width());
    return area;
}
// A view in a scroll area that scrolls sideways only: its dock can be as narrow as the docks beside
// it need (the view's row of controls then scrolls into sight) and is never shorter than the view.
QWidget* sideScrollable(QWidget* content) {
    auto* area = new QScrollArea;
    area->setWidget(content);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    area->setMinimumHeight(content->minimumSizeHint().height() + area->horizontalScrollBar()->sizeHint().height());
    return area;
}
// A view in a scroll area that scrolls either way, so its minimum size (which can grow when a run
// brings it content: the What-if heat map's row of pickers and its columns) never becomes the
// minimum of the docks it is tabbed with, and the docks beside them keep their width.
QWidget* anyScrollable(QWidget* content) {
    auto* area = new QScrollArea;
    area->setWidget(content);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

// The size a window gets when nothing is remembered: room for the five charts and both forms,
// but never more than the screen offers, less a title bar's height for the window manager's frame
// (which is not known before the window is shown).
constexpr QSize preferredSize(1500, 950);
QSize roomOn(const QWidget* window) {
    const QScreen* screen = window->screen() ? window->screen() : QGuiApplication::primaryScreen();
    if (!screen) return preferredSize;
    const QSize available = screen->availableGeometry().size();
    if (available.width() >= preferredSize.width() && available.height() >= preferredSize.height())
        return available;
    return available - QSize(0, window->style()->pixelMetric(QStyle::PM_TitleBarHeight));
}
}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), m_options(options) {
    setWindowTitle(tr("Mantissa"));
    m_controller = new RunController(this);
    m_controller->setStorePath(options.storePath.isEmpty() ? defaultStorePath() : options.storePath);
    m_layerModel = new LayerTableModel(this);
    m_eventModel = new EventLogModel(this);
    m_eventModel->setSeries(&m_controller->series());

    m_experiment = new ExperimentPanel;
    m_precision = new PrecisionPanel;
    m_layers = new LayersPanel(m_layerModel);
    m_events = new EventsPanel(m_eventModel);
    m_charts = new ChartsPanel;
    m_notice = new NoticeBar;
    m_status = new RunStatusBar;
    m_lesson = new LessonPanel;
    m_reference = new ReferenceRun(this);
    m_histogram = new GradientHistogramView;
    m_sample = new SamplePanel;
    m_whatIf = new WhatIfPanel;
    m_blockScales = new BlockScalePanel;
    // Tabbed with the events under the charts: short by default, so the five charts keep the
    // height; float or enlarge the dock to study it. The tallest tab's minimum sets the bottom
    // docks'; the view keeps its own small (GradientHistogramView::minimumShortHeight).
    m_histogram->feed()->setPaused(true);  // until its dock is shown (below): a hidden tab reads nothing

    auto* central = new QWidget;
    auto* centralLayout = new QVBoxLayout(central);
    centralLayout->setContentsMargins(4, 4, 4, 0);
    centralLayout->addWidget(m_notice);
    centralLayout->addWidget(m_charts, 1);
    setCentralWidget(central);
    statusBar()->addPermanentWidget(m_status);

    createActions();
    createMenus();
    createDocks();
    connectController();

    connect(m_layerModel, &LayerTableModel::precisionRequested, this,
            [this](const QString& layer, const LayerSetting& precision) {
                m_precision->setLayerPrecision(layer.toStdString(), precision);
                m_layerModel->setPrecision(m_precision->precision());
                m_controller->post(command::SetLayerPrecision{layer.toStdString(), precision});
                if (m_layerModel->showsPlan()) updatePlan();  // "auto → fp16" and the bytes follow
            });
    connect(m_precision, &PrecisionPanel::commandRequested, m_controller, &RunController::post);
    // Edits before Start: the table follows while it shows the plan (a finished run's table stays
    // until the next start or experiment); the dataset note always does.
    connect(m_precision, &PrecisionPanel::edited, this, [this] {
        m_layerModel->setPrecision(m_precision->precision());  // Format (why), live or before Start
        if (m_layerModel->showsPlan()) updatePlan();
    });
    connect(m_experiment, &ExperimentPanel::modelEdited, this, [this] {
        if (!m_controller->active()) updatePlan(m_layerModel->showsPlan());
    });
    connect(m_experiment, &ExperimentPanel::learningRateEdited, this,
            [this](double lr) { m_controller->post(command::SetLearningRate{lr}); });
    connect(m_events, &EventsPanel::stepActivated, m_charts, &ChartsPanel::centerOn);
    connect(m_reference, &ReferenceRun::progress, this, [this](std::int64_t steps, std::int64_t total) {
        statusBar()->showMessage(tr("Training the lesson's reference (%1) at full speed: step %2 of %3")
                                     .arg(m_reference->label())
                                     .arg(steps)
                                     .arg(total),
                                 2000);
    });
    connect(m_reference, &ReferenceRun::ready, this,
            [this](const QString& storePath, std::int64_t runId, const QString& label) {
                if (overlayRun(storePath, runId, tr("%1 reference").arg(label), OverlayRole::reference))
                    statusBar()->showMessage(
                        tr("The %1 reference (run %2) is drawn faintly on the charts").arg(label).arg(runId), 8000);
            });
    connect(m_reference, &ReferenceRun::failed, this, &MainWindow::showNotice);

    m_charts->setSeries(&m_controller->series());
    m_sample->setSeries(&m_controller->series());
    m_whatIf->setSeries(&m_controller->series().whatIf());
    m_blockScales->setSeries(&m_controller->series().blockScales());
    resize(preferredSize.boundedTo(roomOn(this)));
    updatePlan();  // the engine's defaults, until an experiment is set
    if (m_options.useSettings) restoreSettings();
    updateActions();
}

MainWindow::~MainWindow() {
    // A window destroyed without being closed still stops and records its run, before any widget
    // goes; the views are not told (they are about to go).
    m_controller->disconnect(this);
    m_controller->shutdown();
    // The docks report being hidden while QWidget's destructor hides them; the layout must not
    // answer (its window is half gone by then).
    delete m_dockLayout;
    m_dockLayout = nullptr;
}

void MainWindow::createDocks() {
    m_experimentDock = makeDock(tr("Experiment"), QStringLiteral("experimentDock"), scrollable(m_experiment), this);
    m_precisionDock = makeDock(tr("Precision"), QStringLiteral("precisionDock"), scrollable(m_precision), this);
    m_layersDock = makeDock(tr("Layers"), QStringLiteral("layersDock"), m_layers, this);
    m_eventsDock = makeDock(tr("Events"), QStringLiteral("eventsDock"), m_events, this);
    m_lessonDock = makeDock(tr("Lesson"), QStringLiteral("lessonDock"), scrollable(m_lesson), this);
    m_histogramDock = makeDock(tr("Gradient histogram"), QStringLiteral("histogramDock"), sideScrollable(m_histogram), this);
    m_sampleDock = makeDock(tr("Sample"), QStringLiteral("sampleDock"), m_sample, this);
    m_whatIfDock = makeDock(tr("What-if"), QStringLiteral("whatIfDock"), anyScrollable(m_whatIf), this);
    m_blockScaleDock = makeDock(tr("Block scales"), QStringLiteral("blockScaleDock"), m_blockScales, this);
    addDockWidget(Qt::LeftDockWidgetArea, m_experimentDock);
    splitDockWidget(m_experimentDock, m_lessonDock, Qt::Vertical);
    m_lessonDock->hide();  // shown by an experiment that has a lesson
    addDockWidget(Qt::RightDockWidgetArea, m_precisionDock);
    addDockWidget(Qt::BottomDockWidgetArea, m_layersDock);
    splitDockWidget(m_layersDock, m_eventsDock, Qt::Horizontal);
    tabifyDockWidget(m_eventsDock, m_histogramDock);
    tabifyDockWidget(m_eventsDock, m_whatIfDock);
    tabifyDockWidget(m_eventsDock, m_blockScaleDock);
    tabifyDockWidget(m_eventsDock, m_sampleDock);
    m_sampleDock->hide();  // shown by a text experiment
    m_eventsDock->raise();
    // Shown or hidden, floated, or its tab selected or not: the feed reads the store only while
    // the heat map can be seen, and catches up in one read when it can again.
    connect(m_histogramDock, &QDockWidget::visibilityChanged, this,
            [this](bool visible) { m_histogram->feed()->setPaused(!visible); });
    // Likewise the block-scale plots are drawn only while their tab is raised (the data still come).
    m_blockScales->setDrawing(false);
    connect(m_blockScaleDock, &QDockWidget::visibilityChanged, m_blockScales, &BlockScalePanel::setDrawing);
    m_dockLayout = new DockLayout(
        this,
        {m_experimentDock, m_precisionDock, m_layersDock, m_eventsDock, m_lessonDock, m_histogramDock, m_sampleDock,
         m_whatIfDock, m_blockScaleDock},
        m_charts, m_layers, m_lesson);
    m_dockLayout->applyInitialSizes();
    if (QMenu* view = menuBar()->findChild<QMenu*>(QStringLiteral("viewMenu")))
        for (QDockWidget* d :
             {m_experimentDock, m_lessonDock, m_precisionDock, m_layersDock, m_eventsDock, m_histogramDock,
              m_whatIfDock, m_blockScaleDock, m_sampleDock})
            view->addAction(d->toggleViewAction());
}

void MainWindow::connectController() {
    connect(m_controller, &RunController::runStarted, this, &MainWindow::onRunStarted);
    connect(m_controller, &RunController::telemetryArrived, this, &MainWindow::onTelemetry);
    connect(m_controller, &RunController::stateChanged, this, [this](SessionState state) {
        updateActions();
        if (state == SessionState::paused) {
            refreshViews();  // every view at the step the run paused at, not the last paced update's
            statusBar()->showMessage(tr("Paused after %1 steps: %2 resumes, %3 takes one step")
                                         .arg(QLocale().toString(static_cast<qlonglong>(m_controller->stepsDone())),
                                              m_pause->shortcut().toString(QKeySequence::NativeText),
                                              m_step->shortcut().toString(QKeySequence::NativeText)));
        }
        if (state == SessionState::running) statusBar()->clearMessage();
    });
    connect(m_controller, &RunController::runFinished, this, &MainWindow::onRunFinished);
    connect(m_controller, &RunController::errorOccurred, this, &MainWindow::showError);
    connect(m_controller, &RunController::noticeRaised, this, &MainWindow::showNotice);
    connect(m_controller, &RunController::runNoticeRaised, this, &MainWindow::showRunNotice);
}

Experiment MainWindow::currentExperiment() const {
    Experiment e = m_experiment->experiment();
    e.precision = m_precision->precision();
    e.lesson.pace = m_controller->pace();
    return e;
}

void MainWindow::setExperiment(const Experiment& experiment) {
    cancelBranch();  // another experiment: the branch prepared before is dropped (prepareBranch sets its own after)
    m_experiment->setExperiment(experiment);
    m_precision->setPrecision(experiment.precision);
    setPace(experiment.lesson.pace);
    if (!m_controller->active()) {
        clearPreviousRun();
        updatePlan();
        m_charts->clearOverlays();  // they belonged to the experiment shown before
        m_pendingReference.reset();
        if (isVisible()) {
            m_reference->prepare(experiment, m_controller->storePath());
        } else {
            m_reference->cancel();  // the experiment before, if it was shown
            m_pendingReference = experiment;
        }
    }
    m_lesson->setLesson(experiment.lesson);
    m_lessonDock->setVisible(m_lesson->hasLesson());
    if (m_lesson->hasLesson()) QTimer::singleShot(0, m_dockLayout, &DockLayout::fitLesson);  // once laid out
    if (m_lesson->hasLesson()) {
        if (experiment.lesson.classroom) m_classroomAction->setChecked(true);
        // The Lesson panel holds the text; the banner only announces it.
        m_lessonNotice = lessonNotice(m_lesson->titleText());
        showNotice(m_lessonNotice);
    }
}

QString MainWindow::lessonNotice(const QString& title) const {
    const QString mode = classroomMode() ? tr(" Classroom mode is on (View ▸ Classroom mode, Ctrl+Shift+C).") : QString();
    return tr("<b>%1</b>: the lesson and what to watch are in the Lesson panel.%2").arg(title.toHtmlEscaped(), mode.toHtmlEscaped());
}

// The action's check state is the setting; toggling it applies it.
void MainWindow::setClassroomMode(bool on) { m_classroomAction->setChecked(on); }
bool MainWindow::classroomMode() const { return m_classroomAction->isChecked(); }

void MainWindow::applyClassroomMode(bool on) {
    m_experiment->setClassroomMode(on);
    m_precision->setClassroomMode(on);
    // Throughput is about the machine, not the numerics a lesson shows.
    m_charts->throughputChart()->setVisible(!on);
    for (int column : {LayerTableModel::Shape, LayerTableModel::Parameters, LayerTableModel::GradAmax})
        m_layers->view()->setColumnHidden(column, on);
    if (on && m_lesson->hasLesson()) m_lessonDock->show();
    // The form's height changed (classroom mode shows only its name and buttons): the lesson's
    // share follows, once laid out.
    if (m_lesson->hasLesson()) QTimer::singleShot(0, m_dockLayout, &DockLayout::fitLesson);
    // A lesson's banner still up says what the mode is now (another message is left alone).
    if (m_lesson->hasLesson() && !m_notice->isHidden() && m_notice->text() == m_lessonNotice) {
        m_lessonNotice = lessonNotice(m_lesson->titleText());
        showNotice(m_lessonNotice);
    }
}

bool MainWindow::openExperiment(const QString& path) {
    try {
        const Experiment e = load_experiment(path.toStdString());
        if (e.lesson.title.empty()) setClassroomMode(false);  // a lesson's mode ends with its file
        setExperiment(e);
        m_experimentPath = path;
        statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(path).fileName()), 5000);
        return true;
    } catch (const std::exception& e) {
        showError(QString::fromStdString(e.what()));
        return false;
    }
}

bool MainWindow::saveExperiment(const QString& path) {
    // Never over the run store, a database, a checkpoint or a pipe (export/output_check.h); through
    // a symbolic link, the file it names is replaced and the link kept.
    if (const QString refusal = outputRefusal(path); !refusal.isEmpty()) {
        showError(refusal);
        return false;
    }
    try {
        save_experiment(currentExperiment(), QFile::encodeName(outputDestination(path)).toStdString());
        m_experimentPath = path;
        statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 5000);
        return true;
    } catch (const std::exception& e) {
        showError(QString::fromStdString(e.what()));
        return false;
    }
}

void MainWindow::openFromDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open experiment"), m_experimentPath,
                                                      tr("Experiment files (*.json);;All files (*)"));
    if (!path.isEmpty()) openExperiment(path);
}

bool MainWindow::showDefaultExperiment() {
    const QString path = findDefaultExperiment();
    if (path.isEmpty()) return false;
    try {
        const Experiment e = load_experiment(path.toStdString());
        if (e.lesson.title.empty()) setClassroomMode(false);
        setExperiment(e);
        return true;
    } catch (const std::exception& e) {
        showNotice(tr("The default experiment could not be read (%1); the built-in defaults are shown.")
                       .arg(QString::fromStdString(e.what()).toHtmlEscaped()));
        return false;
    }
}

void MainWindow::saveFromDialog() {
    QString suggestion = m_experimentPath;
    if (suggestion.isEmpty()) suggestion = QString::fromStdString(currentExperiment().name) + QStringLiteral(".json");
    const QString path = QFileDialog::getSaveFileName(this, tr("Save experiment"), suggestion,
                                                      tr("Experiment files (*.json);;All files (*)"));
    if (!path.isEmpty()) saveExperiment(path);
}

bool MainWindow::overlayRun(const QString& storePath, std::int64_t runId, const QString& name, OverlayRole role) {
    const QString error = overlayStoredRun(*m_charts, storePath, runId, name, role);
    if (error.isEmpty()) return true;
    showNotice(error);
    return false;
}

RunBrowser* MainWindow::runBrowser() {
    if (!m_browser) {
        m_browser = new RunBrowser(this);
        connect(m_browser, &RunBrowser::overlayRequested, this,
                [this](const QString& storePath, qint64 runId, const QString& name) { overlayRun(storePath, runId, name); });
        m_browser->setWindowFlag(Qt::Window);
        m_browser->setWindowTitle(tr("Mantissa — run history"));
        m_browser->resize(1200, 640);
        // The default store is created by the first run; until then the list is simply empty.
        m_browser->openStore(m_controller->storePath(), false, true);
        connect(m_browser, &RunBrowser::resumeRequested, this,
                [this](const QString& storePath, qint64 runId) { resumeRun(storePath, runId); });
        connect(m_browser, &RunBrowser::branchRequested, this,
                [this](const QString& storePath, qint64 runId, qint64 step) { prepareBranch(storePath, runId, step); });
        connect(m_browser, &RunBrowser::storeChanged, this, [this](const QString& path) {
            m_browser->setWindowTitle(tr("Mantissa — run history — %1").arg(path));
        });
        connect(m_browser, &RunBrowser::sweepRequested, this,
                [this](const QString&, const QString& uuid, qint64 runId) {
                    showSweepView();  // over the browser's store, which the request names
                    m_sweepView->showSweepOfRun(uuid.toStdString(), runId);
                });
    }
    return m_browser;
}

void MainWindow::showRunBrowser() {
    RunBrowser* b = runBrowser();
    b->refresh();
    b->show();
    b->raise();
    b->activateWindow();
}

FormatExplorer* MainWindow::formatExplorer() {
    if (!m_formatExplorer) {
        m_formatExplorer = new FormatExplorer(this);
        m_formatExplorer->setWindowFlag(Qt::Window);
        m_formatExplorer->setWindowTitle(tr("Mantissa — format explorer"));
        m_formatExplorer->resize(1100, 860);
    }
    return m_formatExplorer;
}

void MainWindow::showFormatExplorer() {
    FormatExplorer* e = formatExplorer();
    e->show();
    e->raise();
    e->activateWindow();
}

void MainWindow::showError(const QString& message) {
    m_lastError = message;
    // Window-modal but not blocking: open() returns at once, so runs, timers and tests go on.
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Mantissa"), message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::showNotice(const QString& message) {
    m_notice->showNotice(message);
    statusBar()->showMessage(QString(message).remove(QRegularExpression(QStringLiteral("<[^>]*>"))), 10000);
}

void MainWindow::showRunNotice(const QString& message) {
    m_notice->showNotice(message.toHtmlEscaped(), NoticeBar::Level::warning);
    statusBar()->showMessage(message, 10000);
}

void MainWindow::resizeEvent(QResizeEvent* event) {
    QMainWindow::resizeEvent(event);
    if (m_dockLayout) m_dockLayout->windowResized();
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    // Once shown, a narrow window's forms are tabs (DockLayout) and its minimum width smaller: a
    // size restored from a larger screen, which that minimum held up, fits now.
    if (m_fitRestoredGeometry) {
        m_fitRestoredGeometry = false;
        QTimer::singleShot(0, this, &MainWindow::fitToScreen);
    }
    // After what follows the show in the same turn of the event loop (a screenshot's step count).
    if (m_pendingReference) QTimer::singleShot(0, this, &MainWindow::preparePendingReference);
}

void MainWindow::preparePendingReference() {
    if (!m_pendingReference || m_controller->active()) return;
    const Experiment experiment = std::move(*m_pendingReference);
    m_pendingReference.reset();
    m_reference->prepare(experiment, m_controller->storePath());
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // Stop the session, join it and finish its recording (`stopped`) before any widget goes; a
    // lesson's reference still training likewise.
    m_controller->shutdown();
    m_pendingReference.reset();
    m_reference->cancel();
    if (m_options.useSettings) saveSettings();
    event->accept();
}

void MainWindow::restoreSettings() {
    QSettings settings;
    if (restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        fitToScreen();
        m_fitRestoredGeometry = true;  // and again once shown
    }
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_dockLayout->setFormsTabbed(settings.value(QStringLiteral("window/formsTabbed"), false).toBool());
    m_charts->setSmoothingWeight(settings.value(QStringLiteral("charts/smoothing"), m_charts->smoothingWeight()).toDouble());
    m_charts->setLogLoss(settings.value(QStringLiteral("charts/logLoss"), false).toBool());
    m_experimentPath = settings.value(QStringLiteral("experiment/path")).toString();
    setClassroomMode(settings.value(QStringLiteral("view/classroom"), false).toBool());
    const QString json = settings.value(QStringLiteral("experiment/last")).toString();
    if (json.isEmpty()) return;
    try {
        setExperiment(experiment_from_json(nlohmann::json::parse(json.toStdString())));
        m_restoredExperiment = true;
    } catch (const std::exception& e) {
        showNotice(tr("The last experiment could not be restored (%1); the defaults are shown.")
                       .arg(QString::fromStdString(e.what())));
    }
}

void MainWindow::fitToScreen() {
    if (isMaximized() || isFullScreen()) return;
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen) return;
    const QRect available = screen->availableGeometry();
    // The frame around the window, once it is shown; before that, a title bar's allowance.
    const QSize frame = frameGeometry().size() - size();
    const QSize room = frame.isNull() ? roomOn(this) : available.size() - frame;
    const QSize size = this->size().boundedTo(room);
    if (size != this->size()) resize(size);
    // Wholly inside: a window that was at the right of a wider screen comes back into this one.
    const QSize outer = this->size() + frame;
    QPoint at = pos();  // the frame's top left
    at.setX(std::clamp(at.x(), available.left(), std::max(available.left(), available.right() + 1 - outer.width())));
    at.setY(std::clamp(at.y(), available.top(), std::max(available.top(), available.bottom() + 1 - outer.height())));
    if (at != pos()) move(at);
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/formsTabbed"), m_dockLayout->formsTabbed());
    settings.setValue(QStringLiteral("charts/smoothing"), m_charts->smoothingWeight());
    settings.setValue(QStringLiteral("charts/logLoss"), m_charts->lossChart()->logarithmic());
    settings.setValue(QStringLiteral("experiment/path"), m_experimentPath);
    settings.setValue(QStringLiteral("view/classroom"), classroomMode());
    settings.setValue(QStringLiteral("experiment/last"),
                      QString::fromStdString(experiment_to_json(currentExperiment()).dump()));
}

}  // namespace mantissa::ui
