// MainWindow's actions, menus and Run toolbar: their shortcuts and tooltips, what the pace and
// "pause at step" controls do with a person's choice, the Sweeps window, and the Help menu
// (keyboard shortcuts, documentation). The rest of the window is main_window.cpp; main_window.h describes both.
#include "main_window.h"

#include <QAction>
#include <QDesktopServices>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QStyle>
#include <QUrl>

#include <algorithm>
#include <limits>

#include "charts/charts_panel.h"
#include "history/run_browser.h"
#include "live/run_controller.h"
#include "panels/experiment_panel.h"
#include "panels/run_toolbar.h"
#include "resource_paths.h"
#include "shortcuts_dialog.h"
#include "sweeps/sweep_view.h"

namespace mantissa::ui {

void MainWindow::createActions() {
    QStyle* s = style();
    m_open = new QAction(s->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this);
    m_open->setShortcut(QKeySequence::Open);
    m_open->setToolTip(tr("Open an experiment file (Ctrl+O)"));
    m_save = new QAction(s->standardIcon(QStyle::SP_DialogSaveButton), tr("&Save…"), this);
    m_save->setShortcut(QKeySequence::Save);
    m_save->setToolTip(tr("Save the experiment, live changes included (Ctrl+S)"));
    m_start = new QAction(s->standardIcon(QStyle::SP_MediaPlay), tr("&Start"), this);
    m_start->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_start->setToolTip(tr("Start training this experiment (Ctrl+R)"));
    m_pause = new QAction(s->standardIcon(QStyle::SP_MediaPause), tr("&Pause"), this);
    m_pause->setShortcut(QKeySequence(Qt::Key_Space));
    m_pause->setToolTip(tr("Pause or resume after the current step (Space)"));
    m_stop = new QAction(s->standardIcon(QStyle::SP_MediaStop), tr("S&top"), this);
    m_stop->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    m_stop->setToolTip(tr("Stop the run after the current step; it is recorded as stopped (Ctrl+.)"));
    m_quit = new QAction(tr("&Quit"), this);
    // The platform's Quit keys; some platforms (and the offscreen one) have none: Ctrl+Q then.
    QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
    if (quitKeys.isEmpty()) quitKeys = {QKeySequence(Qt::CTRL | Qt::Key_Q)};
    m_quit->setShortcuts(quitKeys);
    m_quit->setToolTip(tr("Quit Mantissa; a running run is stopped and recorded first (%1)")
                           .arg(quitKeys.first().toString(QKeySequence::NativeText)));
    m_resetCharts = new QAction(tr("&Reset charts"), this);
    m_resetCharts->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    m_clearOverlays = new QAction(tr("Remove &overlaid runs"), this);
    m_clearOverlays->setToolTip(tr("Take the recorded runs drawn faintly over the charts (a lesson's reference, or "
                                   "Run history ▸ Overlay on live charts) off them"));
    m_classroomAction = new QAction(tr("&Classroom mode"), this);
    m_classroomAction->setCheckable(true);
    m_classroomAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    m_classroomAction->setToolTip(tr("Show only what a lesson needs: the lesson, the run buttons, the precision "
                                     "switches and the teaching charts (Ctrl+Shift+C)"));
    connect(m_classroomAction, &QAction::toggled, this, &MainWindow::applyClassroomMode);
    m_history = new QAction(tr("Run &history…"), this);
    m_history->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_H));
    m_history->setToolTip(tr("Every recorded run: open, compare, rename, tag, export or delete (Ctrl+H)"));
    connect(m_history, &QAction::triggered, this, &MainWindow::showRunBrowser);
    m_openStore = new QAction(tr("Open run s&tore…"), this);
    m_openStore->setToolTip(tr("Browse the runs of another store file (runs are still recorded in %1)")
                                .arg(m_controller->storePath()));
    connect(m_openStore, &QAction::triggered, this, [this] {
        showRunBrowser();
        m_browser->openStoreWithDialog();
    });
    m_sweeps = new QAction(tr("S&weeps…"), this);
    m_sweeps->setToolTip(tr("The store's sweeps (mantissa-cli sweep): each recipe's figures in a table and a "
                            "scatter with the Pareto front"));
    connect(m_sweeps, &QAction::triggered, this, &MainWindow::showSweepView);
    m_explorer = new QAction(tr("&Format explorer…"), this);
    m_explorer->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_explorer->setToolTip(tr("How a value is stored in fp32, tf32, fp16, bf16 and fp8: bits, error, range (Ctrl+E)"));
    connect(m_explorer, &QAction::triggered, this, &MainWindow::showFormatExplorer);
    m_step = new QAction(s->standardIcon(QStyle::SP_MediaSkipForward), tr("Step &once"), this);
    m_step->setShortcut(QKeySequence(Qt::Key_N));
    m_step->setToolTip(tr("While paused: take one training step and pause again, to follow a change step by "
                          "step (N)"));
    m_pauseAtAction = new QAction(tr("Pause at &step…"), this);
    m_pauseAtAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    m_pauseAtAction->setToolTip(tr("Choose a step the run pauses at, before or during a run; the Run toolbar's "
                                   "\"Pause at step\" box (Ctrl+B)"));
    connect(m_pauseAtAction, &QAction::triggered, this, &MainWindow::pauseAtFromMenu);
    m_shortcuts = new QAction(tr("&Keyboard shortcuts"), this);
    m_shortcuts->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
    m_shortcuts->setToolTip(tr("Every keyboard shortcut of the window, with what it does (Ctrl+/)"));
    connect(m_shortcuts, &QAction::triggered, this, &MainWindow::showShortcuts);
    m_docs = new QAction(tr("&Documentation"), this);
    m_docs->setShortcut(QKeySequence::HelpContents);
    m_docs->setToolTip(tr("Open Mantissa's documentation: the window, the experiment file, the numerics (%1)")
                           .arg(QKeySequence(QKeySequence::HelpContents).toString(QKeySequence::NativeText)));
    connect(m_docs, &QAction::triggered, this, &MainWindow::openDocumentation);
    m_resetCharts->setToolTip(tr("Show the whole run on the charts and follow it again (Ctrl+0)"));
    m_about = new QAction(tr("&About Mantissa"), this);
    for (QAction* a : {m_open, m_save, m_start, m_pause, m_stop, m_quit, m_resetCharts, m_history, m_explorer,
                       m_classroomAction, m_step, m_pauseAtAction, m_shortcuts, m_docs})
        a->setShortcutContext(Qt::WindowShortcut);

    connect(m_open, &QAction::triggered, this, &MainWindow::openFromDialog);
    connect(m_save, &QAction::triggered, this, &MainWindow::saveFromDialog);
    connect(m_start, &QAction::triggered, this, [this] { startRun(); });
    connect(m_pause, &QAction::triggered, m_controller, &RunController::togglePause);
    connect(m_stop, &QAction::triggered, m_controller, &RunController::stop);
    connect(m_step, &QAction::triggered, m_controller, &RunController::stepOnce);
    connect(m_quit, &QAction::triggered, this, &QWidget::close);
    connect(m_resetCharts, &QAction::triggered, m_charts, &ChartsPanel::resetView);
    connect(m_clearOverlays, &QAction::triggered, m_charts, &ChartsPanel::clearOverlays);
    connect(m_about, &QAction::triggered, this, [this] {
        QMessageBox::about(this, tr("About Mantissa"),
                           tr("<b>Mantissa %1</b><p>A desktop lab for mixed-precision training: train a small "
                              "network and change its precision while it trains.</p>")
                               .arg(QStringLiteral(MANTISSA_VERSION)));
    });
    m_experiment->setActions(m_open, m_save, m_start, m_pause, m_stop);
    createBranchActions();
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_open);
    file->addAction(m_save);
    file->addSeparator();
    file->addAction(m_history);
    file->addAction(m_sweeps);
    file->addAction(m_openStore);
    file->addSeparator();
    file->addAction(m_quit);
    m_runBar = new RunToolBar(this);
    addToolBar(m_runBar);
    m_runBar->setActions({m_start, m_pause, m_step, m_stop}, {m_open, m_save});
    connect(m_runBar, &RunToolBar::paceChosen, this, &MainWindow::setPace);
    connect(m_runBar, &RunToolBar::pauseAtChosen, this, &MainWindow::onPauseAtChosen);
    connect(m_controller, &RunController::pauseAtChanged, m_runBar, &RunToolBar::setPauseAt);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->setToolTipsVisible(true);
    run->addAction(m_start);
    run->addAction(m_pause);
    run->addAction(m_step);
    run->addAction(m_stop);
    run->addSeparator();
    run->addAction(m_pauseAtAction);
    run->addMenu(m_runBar->paceMenu());
    run->addSeparator();
    run->addAction(m_continue);
    run->addAction(m_cancelBranch);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->setObjectName(QStringLiteral("viewMenu"));
    view->addAction(m_resetCharts);
    view->addAction(m_clearOverlays);
    view->addAction(m_classroomAction);
    view->addSeparator();
    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    tools->addAction(m_explorer);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(m_shortcuts);
    help->addAction(m_docs);
    help->addSeparator();
    help->addAction(m_about);
}

SweepView* MainWindow::sweepView() {
    if (!m_sweepView) {
        RunBrowser* browser = runBrowser();  // the sweeps are the run history's store's
        m_sweepView = new SweepView(this);
        m_sweepView->setWindowFlag(Qt::Window);
        m_sweepView->resize(1400, 640);
        m_sweepView->setStore(browser->store());
        connect(browser, &RunBrowser::storeChanged, m_sweepView, [this] { m_sweepView->setStore(m_browser->store()); });
    }
    return m_sweepView;
}

void MainWindow::showSweepView() {
    SweepView* v = sweepView();
    v->refresh();
    v->show();
    v->raise();
    v->activateWindow();
}

void MainWindow::setPace(double stepsPerSecond) {
    m_controller->setPace(stepsPerSecond);
    m_runBar->setPace(m_controller->pace());
}

double MainWindow::pace() const { return m_controller->pace(); }

void MainWindow::onPauseAtChosen(std::int64_t step) {
    // A step the run has already taken would pause it at once, which no one typing a number means.
    if (step >= 0 && m_controller->active() && step <= m_controller->stepsDone()) {
        statusBar()->showMessage(tr("The run has already taken %1 steps; choose a later step to pause at.")
                                     .arg(QLocale().toString(static_cast<qlonglong>(m_controller->stepsDone()))),
                                 8000);
        m_runBar->setPauseAt(m_controller->pauseAt());
        return;
    }
    m_controller->setPauseAt(step);
    if (step >= 0)
        statusBar()->showMessage(tr("The run will pause after %1 steps.").arg(QLocale().toString(static_cast<qlonglong>(step))),
                                 5000);
}

void MainWindow::pauseAtFromMenu() {
    if (m_runBar->focusPauseAt()) return;
    // The toolbar is hidden: ask in a dialog instead.
    bool ok = false;
    const std::int64_t from = m_controller->active() ? m_controller->stepsDone() + 1 : 1;
    const int step = QInputDialog::getInt(this, tr("Pause at step"), tr("Pause the run after this many steps:"),
                                          static_cast<int>(std::max<std::int64_t>(from, m_controller->pauseAt())), 1,
                                          std::numeric_limits<int>::max(), 1, &ok);
    if (ok) onPauseAtChosen(step);
}

ShortcutsDialog* MainWindow::showShortcuts() {
    if (!m_shortcutsDialog) {
        m_shortcutsDialog = new ShortcutsDialog(menuBar(), this);
        m_shortcutsDialog->setObjectName(QStringLiteral("shortcutsDialog"));
    }
    m_shortcutsDialog->show();
    m_shortcutsDialog->raise();
    m_shortcutsDialog->activateWindow();
    return m_shortcutsDialog;
}

bool MainWindow::openDocumentation() {
    const QString docs = findDocumentation();
    if (docs.isEmpty()) {
        showError(tr("Mantissa's documentation was not found beside the program (share/doc/mantissa) or in its "
                     "source tree (docs/); the same pages are in the docs folder of its source."));
        return false;
    }
    if (!QDesktopServices::openUrl(QUrl::fromLocalFile(docs))) {
        showError(tr("No program could open the documentation folder %1; open gui.md there with any text viewer.")
                      .arg(docs));
        return false;
    }
    statusBar()->showMessage(tr("Opened %1").arg(docs), 5000);
    return true;
}

void MainWindow::updateActions() {
    const bool active = m_controller->active();
    m_start->setEnabled(!active);
    m_open->setEnabled(!active);
    m_pause->setEnabled(active);
    m_stop->setEnabled(active);
    const bool paused = active && m_controller->state() == SessionState::paused;
    m_step->setEnabled(paused);
    m_pause->setText(paused ? tr("&Resume") : tr("&Pause"));
    m_pause->setIcon(style()->standardIcon(paused ? QStyle::SP_MediaPlay : QStyle::SP_MediaPause));
    updateBranchActions();
}

}  // namespace mantissa::ui
