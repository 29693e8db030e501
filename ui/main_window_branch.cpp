// MainWindow's resume and branch (see main_window.h): continuing a stored run from its latest
// checkpoint, and preparing a branch from any checkpoint so that a person changes its settings in
// the panels before Start. The rules and their sentences are history/checkpoint_rules.h's; the
// RunController builds and records the runs.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>

#include "charts/charts_panel.h"
#include "history/checkpoint_rules.h"
#include "history/run_browser.h"
#include "live/run_controller.h"
#include "panels/notice_bar.h"
#include "store/run_store.h"
#include "train/checkpoint.h"

namespace mantissa::ui {

void MainWindow::createBranchActions() {
    m_continue = new QAction(tr("&Continue stopped run"), this);
    m_continue->setToolTip(tr("Continue the run this window last trained, stopped or failed, from its latest "
                              "checkpoint, recorded as the same run (Run history ▸ Resume does it for any run)"));
    connect(m_continue, &QAction::triggered, this, [this] {
        if (!m_controller->active() && m_controller->runId() >= 0)
            resumeRun(m_controller->runStorePath(), m_controller->runId());
    });
    m_cancelBranch = new QAction(tr("Cancel &branch"), this);
    m_cancelBranch->setToolTip(tr("Start a new run with Start again instead of the branch prepared from a checkpoint"));
    connect(m_cancelBranch, &QAction::triggered, this, [this] {
        cancelBranch();
        m_notice->hide();
    });
    m_charts->setMenuExtension([this](QMenu& menu, double step) { addChartBranchEntry(menu, step); });
}

void MainWindow::updateBranchActions() {
    const SessionState state = m_controller->state();
    const bool stopped = state == SessionState::stopped || state == SessionState::failed;
    m_continue->setEnabled(!m_controller->active() && m_controller->runId() >= 0 && stopped);
    m_cancelBranch->setEnabled(m_branch.has_value() && !m_controller->active());
    m_start->setText(m_branch ? tr("&Start branch") : tr("&Start"));
    m_start->setToolTip(m_branch ? tr("Start the branch of run %1 from its checkpoint at step %2, with the settings "
                                      "in the panels (Ctrl+R)")
                                       .arg(m_branch->runId)
                                       .arg(m_branch->step)
                                 : tr("Start training this experiment (Ctrl+R)"));
}

bool MainWindow::resumeRun(const QString& storePath, std::int64_t runId) {
    m_lastError.clear();
    if (m_controller->active()) {
        showError(tr("A run is in progress; stop it before continuing another."));
        return false;
    }
    cancelBranch();
    QApplication::setOverrideCursor(Qt::WaitCursor);  // the dataset loads and the checkpoint is read
    const bool started = m_controller->resumeRun(storePath, runId);
    QApplication::restoreOverrideCursor();
    if (started) {
        statusBar()->showMessage(tr("Continuing run %1 from its checkpoint at step %2")
                                     .arg(runId)
                                     .arg(m_controller->firstStep()),
                                 8000);
        raise();
        activateWindow();
    }
    return started;
}

bool MainWindow::prepareBranch(const QString& storePath, std::int64_t runId, std::int64_t step) {
    m_lastError.clear();
    if (m_controller->active()) {
        showError(tr("A run is in progress; stop it before preparing a branch."));
        return false;
    }
    Experiment experiment;
    QString parentName;
    try {
        RunStore store(QFile::encodeName(storePath).toStdString(), StoreAccess::read_only);
        const RunRow run = store.run(runId);
        const std::vector<CheckpointRow> checkpoints = store.checkpoints(runId);
        if (const QString why = branchRefusal(run, checkpoints); !why.isEmpty()) {
            showError(why);
            return false;
        }
        const CheckpointRow* from = checkpointAt(checkpoints, step);
        if (!from) {
            showError(tr("Run %1 has no checkpoint at step %2; its checkpoints are at steps %3.")
                          .arg(runId)
                          .arg(step)
                          .arg(checkpointStepsText(checkpoints)));
            return false;
        }
        // Checked whole, so a damaged file is said now rather than after the settings are changed.
        // Start opens and checks it again (RunController::startBranch) rather than keep this one
        // open: a person may take any time over the panels, and the file restored must be the one
        // just checked, not one checked before it could have changed on the disk.
        const Checkpoint checkpoint(from->file);
        experiment = checkpoint.info().experiment;
        experiment.name = run.name + " @" + std::to_string(step);  // as mantissa-cli resume --as-new names it
        parentName = QString::fromStdString(run.name);
    } catch (const std::exception& e) {
        showError(RunController::checkpointErrorText(e));
        return false;
    }
    setExperiment(experiment);  // clears the last run's views and overlays, and any branch prepared before
    m_branch = PendingBranch{storePath, runId, step, parentName};
    overlayRun(storePath, runId, tr("%1 (run %2, the parent)").arg(parentName).arg(runId));
    m_notice->showNotice(branchNotice());
    updateActions();
    raise();
    activateWindow();
    return true;
}

QString MainWindow::branchNotice() const {
    if (!m_branch) return {};
    return tr("<b>Branch of run %1</b> (“%2”) from its checkpoint at step %3: change the settings in the Experiment "
              "and Precision panels, then <b>Start branch</b>. Run ▸ Cancel branch, or opening another experiment, "
              "drops it.")
        .arg(m_branch->runId)
        .arg(m_branch->parentName.toHtmlEscaped())
        .arg(m_branch->step);
}

void MainWindow::cancelBranch() {
    if (!m_branch) return;
    m_branch.reset();
    updateActions();
}

void MainWindow::addChartBranchEntry(QMenu& menu, double step) {
    if (m_controller->active() || m_controller->runId() < 0 || m_controller->runStorePath().isEmpty()) return;
    const QString path = m_controller->runStorePath();
    const std::int64_t id = m_controller->runId();
    std::vector<CheckpointRow> checkpoints;
    try {
        RunStore store(QFile::encodeName(path).toStdString(), StoreAccess::read_only);
        checkpoints = store.checkpoints(id);
    } catch (const std::exception&) {
        return;  // a store that cannot say offers no branch
    }
    addBranchMenuEntry(menu, step, checkpoints, [this, path, id](std::int64_t from) { prepareBranch(path, id, from); });
}

}  // namespace mantissa::ui
