// RunViewer: a recorded (or still recording) run's charts and events (see run_viewer.h).
#include "history/run_viewer.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSplitter>
#include <QTabWidget>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>

#include "block_scales/block_scale_panel.h"
#include "charts/charts_panel.h"
#include "charts/number_format.h"
#include "dock_layout.h"
#include "history/checkpoint_rules.h"
#include "history/close_keys.h"
#include "history/config_summary.h"
#include "history/live_changes.h"
#include "history/run_loader.h"
#include "history/run_table_model.h"
#include "models/event_log_model.h"
#include "panels/events_panel.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"
#include "config/throughput.h"

namespace mantissa::ui {

RunViewer::RunViewer(std::shared_ptr<RunStore> store, std::int64_t runId, QWidget* parent)
    : QWidget(parent), m_store(std::move(store)), m_runId(runId) {
    m_summary = new QLabel;
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);
    m_notes = new QLabel;
    m_notes->setWordWrap(true);
    m_notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_notes->setVisible(false);

    m_export = new QToolButton;
    m_export->setText(tr("Export"));
    m_export->setPopupMode(QToolButton::InstantPopup);
    m_export->setToolTip(tr("Save this run's tables as CSV or JSON (as mantissa-cli export does), or its experiment "
                            "file to run it again."));
    auto* menu = new QMenu(m_export);
    for (const ExportChoice& c : exportChoices()) {
        if (c.kind == ExportChoice::experimentFile) menu->addSeparator();
        menu->addAction(exportChoiceLabel(c), this, [this, c] { exportRunWithDialog(this, *m_store, m_runId, c); });
    }
    m_export->setMenu(menu);

    m_charts = new ChartsPanel;
    m_eventModel = new EventLogModel(this);
    m_events = new EventsPanel(m_eventModel);
    // Beside the events, as the run has them (showPanels): a language model's samples and the
    // what-if statistics (tabs of one widget; the viewer owns each while it is not a tab), and
    // the block-scale views.
    m_sample = new SamplePanel(this);
    m_sample->hide();
    m_whatIf = new WhatIfPanel(this);
    m_whatIf->hide();
    m_blockScales = new BlockScalePanel;
    m_blockScales->hide();
    m_blockScales->setMapLoader([this](std::int64_t step) {
        try {
            loadBlockScaleMaps(*m_store, m_runId, step, m_series);
            return QString();
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    });
    // Each chart keeps the plot the live window promises (docs/gui.md, "Small windows"); the
    // chart area scrolls when the window cannot give every chart that.
    for (ChartView* chart : m_charts->charts()) chart->axisRect()->setMinimumSize(50, DockLayout::minPlotHeight);
    connect(m_events, &EventsPanel::stepActivated, m_charts, &ChartsPanel::centerOn);
    m_charts->setMenuExtension([this](QMenu& menu, double step) {
        std::vector<CheckpointRow> checkpoints;
        try {
            checkpoints = m_store->checkpoints(m_runId);
        } catch (const std::exception&) {
            return;  // a store that cannot say offers no branch
        }
        addBranchMenuEntry(menu, step, checkpoints, [this](std::int64_t from) { emit branchRequested(m_runId, from); });
    });

    auto* header = new QHBoxLayout;
    header->addWidget(m_summary, 1);
    header->addWidget(m_export, 0, Qt::AlignTop);
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(m_charts);
    m_bottom = new QSplitter(Qt::Horizontal);
    m_bottom->setChildrenCollapsible(false);
    m_bottom->addWidget(m_events);
    m_panels = new QTabWidget;
    m_panels->setTabBarAutoHide(true);  // one panel: no tab bar
    m_panels->setDocumentMode(true);
    m_panels->hide();
    connect(m_panels, &QTabWidget::tabBarClicked, this, [this] { m_panelPicked = true; });
    m_bottom->addWidget(m_panels);
    m_bottom->addWidget(m_blockScales);
    splitter->addWidget(m_bottom);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    m_splitter = splitter;
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(header);
    layout->addWidget(m_notes);
    layout->addWidget(splitter, 1);
    installCloseKeys(this);
    resize(1100, 820);
}

RunViewer::~RunViewer() {
    // The charts draw m_series: detach them before it goes.
    if (m_follower) m_follower->stop();
    m_charts->setSeries(nullptr);
    m_eventModel->setSeries(nullptr);
    m_sample->setSeries(nullptr);
    m_whatIf->setSeries(nullptr);
    m_blockScales->setSeries(nullptr);
}

bool RunViewer::load() {
    RunCursor cursor;
    cursor.blockScales = true;
    try {
        m_run = m_store->run(m_runId);
        loadNewRows(*m_store, m_runId, m_series, cursor);
    } catch (const std::exception& e) {
        m_error = QString::fromStdString(e.what());
        return false;
    }
    readThroughput();
    readFamily();
    m_charts->setSeries(&m_series);
    m_eventModel->setSeries(&m_series);
    m_sample->setSeries(&m_series);
    m_whatIf->setSeries(&m_series.whatIf());
    m_blockScales->setSeries(&m_series.blockScales());
    showPanels();
    m_eventModel->setLive(m_run.status == RunStatus::running);
    m_charts->redrawNow();
    setWindowTitle(tr("%1 (run %2) — Mantissa").arg(QString::fromStdString(m_run.name)).arg(m_runId));
    delete m_follower;
    m_follower = nullptr;
    if (m_run.status == RunStatus::running) {
        m_follower = new RunFollower(m_store, m_runId, &m_series, cursor, this);
        connect(m_follower, &RunFollower::rowsAdded, this, &RunViewer::onRowsAdded);
        connect(m_follower, &RunFollower::finished, this, &RunViewer::onFinished);
        connect(m_follower, &RunFollower::failed, this, [this](const QString& message) {
            m_error = message;
            updateSummary();
        });
        m_follower->start();
    }
    updateSummary();
    return true;
}

bool RunViewer::following() const {
    return m_follower && m_follower->active();
}

void RunViewer::onRowsAdded() {
    m_charts->refresh();
    m_eventModel->sync();
    m_sample->sync();
    m_whatIf->sync();
    m_blockScales->sync();
    showPanels();
    updateSummary();
    emit runUpdated(m_runId);
}

void RunViewer::readThroughput() {
    try {
        m_samplesPerSecond = m_store->totals(m_runId).samples_per_s;
    } catch (const std::exception&) {
        m_samplesPerSecond.reset();  // the summary goes without it; the charts say the rest
    }
}

void RunViewer::readFamily() {
    QStringList parts;
    try {
        if (const QString from =
                branchedFromText(m_run, m_run.parent_uuid.empty() ? std::vector<RunRow>{} : m_store->list_runs());
            !from.isEmpty())
            parts << from;
        const std::vector<CheckpointRow> checkpoints = m_store->checkpoints(m_runId);
        parts << (checkpoints.empty()          ? tr("no checkpoints")
                  : checkpoints.size() == 1 ? tr("checkpoint at step %1").arg(checkpointStepsText(checkpoints))
                                            : tr("checkpoints at steps %1").arg(checkpointStepsText(checkpoints)));
    } catch (const std::exception&) {
        // The family is a note; the run itself was read.
    }
    m_family = parts.join(QStringLiteral(" · "));
}

void RunViewer::onFinished() {
    try {
        m_run = m_store->run(m_runId);
    } catch (const std::exception& e) {
        m_error = QString::fromStdString(e.what());
    }
    readThroughput();
    readFamily();
    m_charts->redrawNow();
    m_eventModel->sync();
    m_sample->sync();
    m_whatIf->sync();
    m_blockScales->sync();
    showPanels();
    m_eventModel->setLive(false);
    updateSummary();
    emit runFinished(m_runId);
}

QString RunViewer::summaryText() const {
    QTextDocument doc;
    doc.setHtml(m_summary->text());
    return doc.toPlainText();
}

void RunViewer::updateSummary() {
    const QString name = QString::fromStdString(m_run.name).toHtmlEscaped();
    QString status = QString::fromLatin1(run_status_name(m_run.status));
    if (following()) status = tr("running — following live");
    const auto& last = m_series.lastStep();
    QStringList facts;
    facts << tr("%1 steps").arg(QLocale().toString(static_cast<qlonglong>(m_series.stepCount())));
    if (last) facts << tr("final loss %1").arg(QString::number(last->loss, 'g', 4));
    else if (m_run.final_loss) facts << tr("final loss %1").arg(QString::number(*m_run.final_loss, 'g', 4));
    if (m_series.textRun() && !m_series.testLoss().empty()) {
        const double loss = m_series.testLoss().lastY();
        facts << tr("test loss %1 nats/token (perplexity %2)")
                     .arg(QString::number(loss, 'g', 4), QString::number(std::exp(loss), 'g', 4));
    }
    if (!m_series.testAccuracy().empty())
        facts << (m_series.textRun() ? tr("next-token accuracy %1 %") : tr("test accuracy %1 %"))
                     .arg(QString::number(m_series.testAccuracy().lastY() * 100, 'f', 1));
    if (last) facts << tr("loss scale %1").arg(formatPowerOfTwo(last->loss_scale));
    if (m_samplesPerSecond && !following())
        facts << tr("%1 %2").arg(QLocale().toString(*m_samplesPerSecond, 'f', 0),
                                 QString::fromLatin1(run_samples_per_s_label));
    if (const auto overflows = m_series.overflowCount(); overflows > 0)  // %n's plural needs a translation
        facts << (overflows == 1 ? tr("1 overflow") : tr("%1 overflows").arg(overflows));
    // What was changed while it trained: the first few on the configuration line, all in the tooltip.
    const std::vector<SettingChange> changes = liveChanges(m_series.events());
    m_summary->setToolTip(changes.empty() ? QString() : tr("Changed during the run:\n%1").arg(liveChangesList(changes)));
    QString html = QStringLiteral("<b>%1</b> &nbsp; <span>run %2 · %3 · %4 on %5</span><br>%6<br><i>%7</i>")
                       .arg(name)
                       .arg(m_runId)
                       .arg(status.toHtmlEscaped(), RunTableModel::displayDate(m_run.created_at),
                            QString::fromStdString(m_run.backend + (m_run.device.empty() ? "" : " (" + m_run.device + ")")).toHtmlEscaped())
                       .arg(facts.join(QStringLiteral(" · ")).toHtmlEscaped(),
                            summaryWithChanges(QString::fromStdString(configSummary(m_run.config_json)), changes)
                                .toHtmlEscaped());
    if (!m_family.isEmpty()) html += QStringLiteral("<br>") + m_family.toHtmlEscaped();
    if (!m_run.error.empty()) html += QStringLiteral("<br>") + tr("Failed: %1").arg(QString::fromStdString(m_run.error).toHtmlEscaped());
    if (!m_error.isEmpty()) html += QStringLiteral("<br><b>%1</b>").arg(m_error.toHtmlEscaped());
    m_summary->setText(html);
    m_notes->setText(tr("Notes: %1").arg(QString::fromStdString(m_run.notes)));
    m_notes->setVisible(!m_run.notes.empty());
}

QString RunViewer::exportTo(const ExportChoice& choice, const QString& path) {
    return choice.kind == ExportChoice::experimentFile ? exportRunExperiment(*m_store, m_runId, path)
                                                   : exportRunTable(*m_store, m_runId, choice.table, choice.format, path);
}

}  // namespace mantissa::ui
