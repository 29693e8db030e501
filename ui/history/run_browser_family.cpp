// RunBrowser's resume and branch (see run_browser.h): the selected run's checkpoints, the Resume
// and Branch… actions with the reason when they cannot apply (history/checkpoint_rules.h), and the
// checkpoint picker. The browser only checks and asks; the main window runs them.
#include "history/run_browser.h"

#include <QAction>
#include <QInputDialog>
#include <QLocale>

#include "history/checkpoint_rules.h"
#include "history/run_table_model.h"

namespace mantissa::ui {

void RunBrowser::readCheckpoints(const RunRow* run) {
    m_checkpoints.clear();
    m_checkpointError.clear();
    if (!run || !m_store) return;
    try {
        m_checkpoints = m_store->checkpoints(run->id);
    } catch (const std::exception& e) {
        m_checkpointError = QString::fromStdString(e.what());
    }
}

void RunBrowser::updateResumeActions(const RunRow* run) {
    const bool writable = m_store && !m_store->read_only();
    QString resumeWhy, branchWhy;
    if (!run) {
        resumeWhy = branchWhy = tr("Select one run.");
    } else if (!m_checkpointError.isEmpty()) {
        resumeWhy = branchWhy = m_checkpointError;
    } else if (!writable) {
        resumeWhy = branchWhy = readOnlyReason();
    } else {
        resumeWhy = resumeRefusal(*run, m_checkpoints);
        branchWhy = branchRefusal(*run, m_checkpoints);
    }
    m_resumeAction->setEnabled(resumeWhy.isEmpty());
    m_resumeAction->setToolTip(resumeWhy.isEmpty()
                                   ? tr("Continue this run from its latest checkpoint (step %1), recorded as the same "
                                        "run: its steps after the checkpoint are trained again, in the main window.")
                                         .arg(QLocale().toString(static_cast<qlonglong>(m_checkpoints.back().step)))
                                   : resumeWhy);
    m_branchAction->setEnabled(branchWhy.isEmpty());
    m_branchAction->setToolTip(branchWhy.isEmpty()
                                   ? tr("Start a new run from one of this run's checkpoints (steps %1) with settings "
                                        "you change first, in the main window; it is recorded with this run as its "
                                        "parent.")
                                         .arg(checkpointStepsText(m_checkpoints))
                                   : branchWhy);
}

const RunRow* RunBrowser::runWithCheckpoints(std::int64_t id, std::vector<CheckpointRow>& checkpoints) {
    if (!editAllowed()) return nullptr;
    const RunRow* run = m_model->runById(id);
    if (!run) {
        reportError(tr("There is no run %1 in this store.").arg(id));
        return nullptr;
    }
    try {
        checkpoints = m_store->checkpoints(id);
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return nullptr;
    }
    return run;
}

bool RunBrowser::resumeRun(std::int64_t id) {
    std::vector<CheckpointRow> checkpoints;
    const RunRow* run = runWithCheckpoints(id, checkpoints);
    if (!run) return false;
    if (const QString why = resumeRefusal(*run, checkpoints); !why.isEmpty()) {
        reportError(why);
        return false;
    }
    emit resumeRequested(storePath(), id);
    return true;
}

bool RunBrowser::branchRun(std::int64_t id, std::int64_t step) {
    std::vector<CheckpointRow> checkpoints;
    const RunRow* run = runWithCheckpoints(id, checkpoints);
    if (!run) return false;
    if (const QString why = branchRefusal(*run, checkpoints); !why.isEmpty()) {
        reportError(why);
        return false;
    }
    if (!checkpointAt(checkpoints, step)) {
        reportError(tr("Run %1 has no checkpoint at step %2; its checkpoints are at steps %3.")
                        .arg(id)
                        .arg(step)
                        .arg(checkpointStepsText(checkpoints)));
        return false;
    }
    emit branchRequested(storePath(), id, step);
    return true;
}

void RunBrowser::branchWithDialog(std::int64_t id) {
    std::vector<CheckpointRow> checkpoints;
    try {
        if (m_store) checkpoints = m_store->checkpoints(id);
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return;
    }
    if (checkpoints.empty()) {
        branchRun(id, 0);  // says why
        return;
    }
    QStringList items;
    for (auto c = checkpoints.rbegin(); c != checkpoints.rend(); ++c)
        items << tr("step %1").arg(QLocale().toString(static_cast<qlonglong>(c->step)));
    bool ok = false;
    const QString chosen = QInputDialog::getItem(
        this, tr("Branch run %1").arg(id),
        tr("Start the branch from the checkpoint at:\n(its experiment then goes into the main window, to change "
           "before Start)"),
        items, 0, false, &ok);
    if (!ok) return;
    const auto i = static_cast<std::size_t>(items.indexOf(chosen));
    if (i < checkpoints.size()) branchRun(id, checkpoints[checkpoints.size() - 1 - i].step);
}

}  // namespace mantissa::ui
