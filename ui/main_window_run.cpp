// MainWindow (see main_window.h): a run's life in the views. Start (a fresh run or a prepared
// branch), a live setting applied as a person's pick would be, the plan the panels show before
// Start, the views handed the run's series when it starts, their pace while it runs, and its end.
#include "main_window.h"

#include <QApplication>
#include <QDockWidget>
#include <QStatusBar>

#include <string>
#include <vector>

#include "block_scales/block_scale_panel.h"
#include "block_scales/block_scale_text.h"
#include "charts/charts_panel.h"
#include "error.h"
#include "histogram/gradient_histogram_view.h"
#include "history/run_browser.h"
#include "live/run_controller.h"
#include "model/model_plan.h"
#include "models/event_log_model.h"
#include "models/layer_table_model.h"
#include "panels/experiment_panel.h"
#include "panels/layers_panel.h"
#include "panels/notice_bar.h"
#include "panels/precision_panel.h"
#include "panels/run_status_bar.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"
#include "series/run_series.h"
#include "train/live_change.h"

namespace mantissa::ui {

bool MainWindow::startRun(const std::vector<Command>& first) {
    m_lastError.clear();
    QApplication::setOverrideCursor(Qt::WaitCursor);  // loading a dataset can take a moment
    bool started = false;
    if (m_branch) {
        m_notice->hide();  // the branch's banner; the start's own notices come after
        started =
            m_controller->startBranch(m_branch->storePath, m_branch->runId, m_branch->step, currentExperiment(), first);
        if (started)
            cancelBranch();
        else
            m_notice->showNotice(branchNotice());  // still prepared: change what the error says, Start again
    } else {
        started = m_controller->start(currentExperiment(), first);
    }
    QApplication::restoreOverrideCursor();
    return started;
}

void MainWindow::applyLiveSetting(const std::string& assignment) {
    if (!m_controller->active()) throw Error("\"" + assignment + "\" needs a running session.");
    std::vector<std::string> layers;
    for (const auto& l : m_controller->layers()) layers.push_back(l.name);
    const LiveChange change = plan_live_change(currentExperiment(), layers, assignment);
    // Layer precision goes through the table, exactly as a pick there (its combo box, or its
    // per-matmul dialog) does.
    for (const auto& [layer, precision] : change.layers) {
        const int row = m_layerModel->rowOf(QString::fromStdString(layer));
        m_layerModel->setData(m_layerModel->index(row, LayerTableModel::Precision), QVariant::fromValue(precision),
                              LayerTableModel::SettingRole);
    }
    for (const Command& c : change.commands) m_controller->post(c);
    m_precision->setPrecision(change.after.precision);  // the panels show what is now in effect
    m_layerModel->setPrecision(change.after.precision);
    m_experiment->setExperiment(change.after);
}

void MainWindow::clearPreviousRun() {
    if (!m_controller->clearRun()) return;
    m_eventModel->setSeries(&m_controller->series());
    m_charts->setSeries(&m_controller->series());
    m_layerModel->clear();
    m_status->clear();
    m_histogram->clear();
    m_sample->setSeries(&m_controller->series());
    m_whatIf->setSeries(&m_controller->series().whatIf());
    m_blockScales->setSeries(&m_controller->series().blockScales());
    m_notice->hide();  // the last run's notices; a new experiment's lesson announces itself
}

void MainWindow::updatePlan(bool table) {
    const Experiment e = currentExperiment();
    try {
        const ModelPlan plan = plan_model(e);
        if (table) {
            m_layerModel->setPrecision(e.precision);
            m_layerModel->setPlan(plan);
            // The inject combo (greyed until Start) names this model's layers, not the last run's.
            std::vector<std::string> names;
            for (const PlannedLayer& l : plan.layers) names.push_back(l.info.name);
            m_precision->setLive(false, names);
        }
        m_experiment->setDatasetNote(QString::fromStdString(plan.dataset_note));
        // The op charts the run will fill (a lesson's accumulation chart among them) are shown
        // from now on, empty, so a lesson's text can point at them before Start.
        std::vector<LayerInfo> infos;
        for (const PlannedLayer& l : plan.layers) infos.push_back(l.info);
        auto stats = opStatsOf(infos);
        if (e.train.accumulation_error) {
            const auto accumulation = accumulationStatsOf(infos);
            stats.insert(stats.end(), accumulation.begin(), accumulation.end());
        }
        m_charts->setPlannedOpStats(std::move(stats));
    } catch (const std::exception& error) {  // a model the engine cannot build: Start will say so
        m_charts->setPlannedOpStats({});
        if (table) {
            m_layerModel->clear();
            m_precision->setLive(false, {});
        }
        m_experiment->setDatasetNote(QString::fromStdString(error.what()));
    }
    if (table) updateModelViews(e.dataset.kind == "text");
    m_blockScales->setExpectation(blockscale::expectationOf(e));  // its sentence while it has no views
}

void MainWindow::updateModelViews(bool text) {
    m_precision->setOpClasses(m_layerModel->hasOpKind("softmax"), m_layerModel->hasOpKind("layernorm"));
    if (text == m_sampleDock->isHidden()) m_sampleDock->setVisible(text);
}

void MainWindow::onRunStarted() {
    const Experiment e = m_controller->session()->experiment();
    if (m_controller->runKind() == RunController::RunKind::continued) {
        // The panels show the run as it stood at its checkpoint (a branch's are what was started).
        m_experiment->setExperiment(e);
        m_precision->setPrecision(e.precision);
    }
    m_layerModel->setLayers(m_controller->layers(), e.precision.layers);
    m_layerModel->setPrecision(e.precision);
    m_sample->setSeries(&m_controller->series());
    m_whatIf->setSeries(&m_controller->series().whatIf());
    m_blockScales->setExpectation(blockscale::expectationOf(e));
    m_blockScales->setSeries(&m_controller->series().blockScales());
    const bool text = e.dataset.kind == "text";
    updateModelViews(text);
    if (text) m_sampleDock->raise();  // what a language model writes, beside the charts
    m_eventModel->setSeries(&m_controller->series());
    m_charts->setSeries(&m_controller->series());
    std::vector<std::string> names;
    for (const auto& l : m_controller->layers()) names.push_back(l.name);
    m_precision->setLive(true, names);
    m_experiment->setRunning(true);
    m_status->update(*m_controller);
    // The live ring carries no histograms; the heat map follows the run through the store.
    if (m_controller->runId() >= 0)
        m_histogram->setRun(m_controller->runStorePath(), m_controller->runId());
    else
        m_histogram->clear();
    if (m_browser && m_browser->storePath() == m_controller->runStorePath()) m_browser->refresh();  // lists it
    statusBar()->showMessage(
        m_controller->runId() >= 0
            ? tr("Recording run %1 in %2").arg(m_controller->runId()).arg(m_controller->runStorePath())
            : tr("Training (not recorded)"),
        8000);
    updateActions();
    if (m_options.useSettings) saveSettings();
}

void MainWindow::refreshViews() {
    m_charts->redrawNow(true);
    m_layerModel->update(m_controller->series());
    m_eventModel->sync();
    m_sample->sync();
    m_whatIf->sync();
    m_blockScales->sync();
    m_status->update(*m_controller);
}

void MainWindow::onTelemetry() {
    if (m_controller->state() == SessionState::paused) {  // a single step: show it whole at once
        refreshViews();
        return;
    }
    m_eventModel->sync();
    m_sample->sync();
    m_charts->refresh();  // paces itself
    // The table and the status bar change every step; a person reads them a few times a second.
    if (!m_viewClock.isValid() || m_viewClock.elapsed() >= viewUpdateIntervalMs) {
        m_viewClock.start();
        m_layerModel->update(m_controller->series());
        m_whatIf->sync();  // changes on statistics steps only; a no-op when none arrived
        m_blockScales->sync();  // likewise
        m_status->update(*m_controller);
    }
}

void MainWindow::onRunFinished(SessionState s, const QString& error) {
    std::vector<std::string> names;
    for (const auto& l : m_controller->layers()) names.push_back(l.name);
    m_precision->setLive(false, names);
    m_experiment->setRunning(false);
    refreshViews();  // the run's last steps, whatever the live pacing skipped
    m_layers->setFinishedRun(true);  // a precision changed from now on is the next run's
    updateActions();
    if (m_browser && m_browser->isVisible()) m_browser->refresh();
    if (s == SessionState::failed)
        showError(tr("The run failed: %1").arg(error));
    else
        statusBar()->showMessage(s == SessionState::completed ? tr("Run completed") : tr("Run stopped"), 10000);
}

}  // namespace mantissa::ui
