// RunBrowser: the runs of a store, their editing, opening, comparing and exporting (see
// run_browser.h).
#include "history/run_browser.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHideEvent>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <initializer_list>

#include "history/checkpoint_rules.h"
#include "history/close_keys.h"
#include "history/compare_view.h"
#include "history/run_filter_proxy.h"
#include "history/run_table_columns.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "panels/notice_bar.h"
#include "record_table.h"

namespace mantissa::ui {

QString RunBrowser::readOnlyReason() {
    return QObject::tr("This store is open read-only (the file or its folder cannot be written), so runs can be "
                       "browsed, opened and exported but not edited or deleted.");
}

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) {
    m_model = new RunTableModel(this);
    m_proxy = new RunFilterProxy(this);
    m_proxy->setSourceModel(m_model);

    m_view = new QTableView;
    m_view->setModel(m_proxy);
    setUpRecordTable(m_view);
    m_view->sortByColumn(RunTableModel::Date, Qt::DescendingOrder);
    setUpRunColumns(m_view);

    m_notice = new NoticeBar;
    m_storeLabel = new QLabel;
    m_storeLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_storeLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter by name, notes, tags, configuration…"));
    m_filter->setClearButtonEnabled(true);
    m_tagFilter = new QComboBox;
    m_tagFilter->setToolTip(tr("Show only runs with this tag."));
    m_tagFilter->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_statusFilter = new QComboBox;
    m_statusFilter->setToolTip(tr("Show only runs with this status."));
    m_statusFilter->addItem(tr("Any status"), QString());
    for (RunStatus s : {RunStatus::running, RunStatus::completed, RunStatus::stopped, RunStatus::failed, RunStatus::interrupted})
        m_statusFilter->addItem(QString::fromLatin1(run_status_name(s)), QString::fromLatin1(run_status_name(s)));
    updateFilterChoices();

    // Details of the selected run: name, tags and notes, edited in place and saved together.
    m_detailsTitle = new QLabel;
    m_detailsTitle->setWordWrap(true);
    m_detailsTitle->setTextFormat(Qt::RichText);
    m_nameEdit = new QLineEdit;
    m_tagsEdit = new QLineEdit;
    m_tagsEdit->setPlaceholderText(tr("comma-separated, e.g. baseline, fp16"));
    m_notesEdit = new QPlainTextEdit;
    m_notesEdit->setPlaceholderText(tr("What this run tried, what it showed…"));
    m_saveDetails = new QPushButton(tr("Save changes"));
    m_nameEdit->setObjectName(QStringLiteral("runName"));
    m_tagsEdit->setObjectName(QStringLiteral("runTags"));
    m_notesEdit->setObjectName(QStringLiteral("runNotes"));
    m_filter->setObjectName(QStringLiteral("runFilter"));
    auto* details = new QGroupBox(tr("Selected run"));
    auto* form = new QFormLayout;
    form->addRow(tr("Name"), m_nameEdit);
    form->addRow(tr("Tags"), m_tagsEdit);
    auto* detailsLayout = new QVBoxLayout(details);
    detailsLayout->addWidget(m_detailsTitle);
    detailsLayout->addLayout(form);
    detailsLayout->addWidget(new QLabel(tr("Notes")));
    detailsLayout->addWidget(m_notesEdit, 1);
    detailsLayout->addWidget(m_saveDetails, 0, Qt::AlignRight);
    details->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("comma-separated, e.g. baseline, fp16")) + 80);

    buildActions();

    auto* openStore = new QToolButton;
    openStore->setDefaultAction(m_openStoreAction);
    openStore->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto* refresh = new QToolButton;
    refresh->setDefaultAction(m_refreshAction);
    auto* storeRow = new QHBoxLayout;
    storeRow->addWidget(new QLabel(tr("Store:")));
    storeRow->addWidget(m_storeLabel, 1);
    storeRow->addWidget(openStore);

    auto* filterRow = new QHBoxLayout;
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_tagFilter);
    filterRow->addWidget(m_statusFilter);
    filterRow->addWidget(refresh);

    m_exportButton = new QToolButton;
    m_exportButton->setText(tr("Export"));
    m_exportButton->setPopupMode(QToolButton::InstantPopup);
    m_exportButton->setToolTip(tr("Save the selected run's tables as CSV or JSON (as mantissa-cli export does), or its "
                                  "experiment file to run it again."));
    auto* exportMenu = new QMenu(m_exportButton);
    for (const ExportChoice& c : exportChoices()) {
        if (c.kind == ExportChoice::experimentFile) exportMenu->addSeparator();
        exportMenu->addAction(exportChoiceLabel(c), this, [this, c] {
            const auto ids = selectedRunIds();
            if (ids.size() == 1 && m_store) exportRunWithDialog(this, *m_store, ids.front(), c);
        });
    }
    m_exportButton->setMenu(exportMenu);
    auto* buttons = new QHBoxLayout;
    for (QAction* a : {m_openRunAction, m_compareAction, m_overlayAction}) {
        auto* b = new QToolButton;
        b->setDefaultAction(a);
        buttons->addWidget(b);
    }
    buttons->addWidget(m_exportButton);
    for (QAction* a : {m_resumeAction, m_branchAction, m_sweepAction}) {
        auto* b = new QToolButton;
        b->setDefaultAction(a);
        buttons->addWidget(b);
    }
    buttons->addStretch(1);
    auto* del = new QToolButton;
    del->setDefaultAction(m_deleteAction);
    buttons->addWidget(del);

    auto* left = new QWidget;
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addLayout(filterRow);
    leftLayout->addWidget(m_view, 1);
    leftLayout->addLayout(buttons);
    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(left);
    splitter->addWidget(details);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(storeRow);
    layout->addWidget(m_notice);
    layout->addWidget(splitter, 1);

    connect(m_filter, &QLineEdit::textChanged, this, &RunBrowser::setTextFilter);
    connect(m_tagFilter, &QComboBox::currentIndexChanged, this,
            [this](int i) { m_proxy->setTag(m_tagFilter->itemData(i).toString()); });
    connect(m_statusFilter, &QComboBox::currentIndexChanged, this,
            [this](int i) { m_proxy->setStatus(m_statusFilter->itemData(i).toString()); });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& index) {
        openRun(index.data(RunTableModel::IdRole).toLongLong());
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        if (m_refreshing) return;
        updateActions();
        updateDetails();
    });
    connect(m_saveDetails, &QPushButton::clicked, this, &RunBrowser::saveDetails);
    m_autoRefresh.setInterval(autoRefreshMs);
    connect(&m_autoRefresh, &QTimer::timeout, this, &RunBrowser::refresh);

    m_confirm = [this](const QString& question) {
        return QMessageBox::question(this, tr("Delete runs"), question, QMessageBox::Yes | QMessageBox::Cancel,
                                     QMessageBox::Cancel) == QMessageBox::Yes;
    };
    setWindowTitle(tr("Runs — Mantissa"));
    installCloseKeys(this);
    updateActions();
    updateDetails();
}

RunBrowser::~RunBrowser() {
    // Viewers and comparisons are windows of their own: they close with the browser.
    for (const auto& v : m_viewers) delete v.data();
    for (const auto& c : m_compares) delete c.data();
}

void RunBrowser::buildActions() {
    m_openStoreAction = new QAction(tr("Open Store…"), this);
    m_openStoreAction->setToolTip(tr("Browse the runs of another store file (.sqlite)."));
    connect(m_openStoreAction, &QAction::triggered, this, &RunBrowser::openStoreWithDialog);
    m_refreshAction = new QAction(tr("Refresh"), this);
    m_refreshAction->setShortcut(QKeySequence::Refresh);
    m_refreshAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_refreshAction->setToolTip(tr("Read the list of runs again (F5)."));
    connect(m_refreshAction, &QAction::triggered, this, &RunBrowser::refresh);
    m_openRunAction = new QAction(tr("Open"), this);
    m_openRunAction->setToolTip(tr("Show the selected runs' charts and events, as recorded (double-click or Enter)."));
    connect(m_openRunAction, &QAction::triggered, this, [this] {
        for (std::int64_t id : selectedRunIds()) openRun(id);
    });
    m_compareAction = new QAction(tr("Compare"), this);
    m_compareAction->setToolTip(tr("Overlay the selected runs' curves (2 to %1 runs).").arg(CompareView::maxRuns));
    connect(m_compareAction, &QAction::triggered, this, [this] { compareRuns(selectedRunIds()); });
    m_overlayAction = new QAction(tr("Overlay on live charts"), this);
    m_overlayAction->setToolTip(tr("Draw the selected runs faintly over the main window's charts, on the same steps, "
                                   "to compare a run in progress with them (up to %1).")
                                    .arg(CompareView::maxRuns));
    connect(m_overlayAction, &QAction::triggered, this, [this] { overlayRuns(selectedRunIds()); });
    m_deleteAction = new QAction(tr("Delete…"), this);
    m_deleteAction->setShortcut(QKeySequence::Delete);
    m_deleteAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(m_deleteAction, &QAction::triggered, this, [this] { deleteRuns(selectedRunIds()); });
    m_resumeAction = new QAction(tr("Resume"), this);
    connect(m_resumeAction, &QAction::triggered, this, [this] {
        const auto ids = selectedRunIds();
        if (ids.size() == 1) resumeRun(ids.front());
    });
    m_branchAction = new QAction(tr("Branch…"), this);
    connect(m_branchAction, &QAction::triggered, this, [this] {
        const auto ids = selectedRunIds();
        if (ids.size() == 1) branchWithDialog(ids.front());
    });
    m_sweepAction = new QAction(tr("Sweep"), this);
    connect(m_sweepAction, &QAction::triggered, this, [this] {
        const auto ids = selectedRunIds();
        const RunRow* run = ids.size() == 1 ? m_model->runById(ids.front()) : nullptr;
        if (run && !run->sweep_uuid.empty())
            emit sweepRequested(storePath(), QString::fromStdString(run->sweep_uuid), run->id);
    });
    for (QAction* a : {m_refreshAction, m_deleteAction}) addAction(a);
}

bool RunBrowser::openStore(const QString& path, bool readOnly, bool createIfMissing) {
    const QString native = QDir::toNativeSeparators(path);
    if (!createIfMissing && !QFileInfo::exists(path)) {
        reportError(tr("There is no run store at %1.").arg(native));
        return false;
    }
    std::shared_ptr<RunStore> store;
    try {
        store = std::make_shared<RunStore>(QFile::encodeName(path).toStdString(), readOnly);
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));  // the engine's sentence names the file and the fault
        return false;
    }
    m_store = std::move(store);
    m_detailsId = -1;  // ids of another store name other runs
    m_changes.clear();
    m_lastError.clear();
    m_notice->hide();
    QString label = native;
    if (m_store->read_only()) label += tr("  (read-only)");
    m_storeLabel->setText(label);
    m_storeLabel->setToolTip(m_store->read_only() ? readOnlyReason() : native);
    refresh();
    emit storeChanged(path);
    return true;
}

void RunBrowser::openStoreWithDialog() {
    const QString start = m_store ? QFileInfo(QString::fromStdString(m_store->path())).absolutePath() : QDir::homePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Run Store"), start,
                                                      tr("Run stores (*.sqlite *.db);;All files (*)"));
    if (!path.isEmpty()) openStore(path);
}

QString RunBrowser::storePath() const {
    return m_store ? QString::fromStdString(m_store->path()) : QString();
}

bool RunBrowser::readOnly() const {
    return m_store && m_store->read_only();
}

void RunBrowser::refresh() {
    if (!m_store) return;
    const auto selected = selectedRunIds();
    const int scroll = m_view->verticalScrollBar()->value();
    std::vector<RunRow> runs;
    try {
        runs = m_store->list_runs();
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        m_bannerIsListError = true;
        return;
    }
    if (m_bannerIsListError) m_notice->hide();  // read this time
    m_bannerIsListError = false;
    m_changes.update(*m_store, runs);
    m_refreshing = true;
    m_model->setRuns(std::move(runs), m_changes.all());
    updateFilterChoices();
    selectRuns(selected);
    m_view->verticalScrollBar()->setValue(scroll);
    m_refreshing = false;
    if (m_model->anyRunning()) {
        if (!m_autoRefresh.isActive()) m_autoRefresh.start();
    } else {
        m_autoRefresh.stop();
    }
    updateActions();
    updateDetails();
    emit runsChanged();
}

void RunBrowser::updateFilterChoices() {
    const QString current = m_tagFilter->currentData().toString();
    const QSignalBlocker block(m_tagFilter);
    m_tagFilter->clear();
    m_tagFilter->addItem(tr("Any tag"), QString());
    for (const QString& t : m_model->allTags()) m_tagFilter->addItem(t, t);
    const int i = m_tagFilter->findData(current);
    m_tagFilter->setCurrentIndex(i < 0 ? 0 : i);
    if (i < 0 && !current.isEmpty()) m_proxy->setTag({});  // the tag is gone
}

std::vector<std::int64_t> RunBrowser::selectedRunIds() const {
    std::vector<std::int64_t> ids;
    auto rows = m_view->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
    for (const QModelIndex& i : rows) ids.push_back(i.data(RunTableModel::IdRole).toLongLong());
    return ids;
}

void RunBrowser::selectRuns(const std::vector<std::int64_t>& ids) {
    QItemSelection selection;
    for (std::int64_t id : ids) {
        const int row = m_model->rowOf(id);
        if (row < 0) continue;
        const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
        if (index.isValid()) selection.select(index, index);
    }
    m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    if (!selection.isEmpty() && !m_refreshing) m_view->scrollTo(selection.indexes().front());
}

void RunBrowser::setTextFilter(const QString& text) {
    if (m_filter->text() != text) m_filter->setText(text);  // comes back here through textChanged
    else m_proxy->setText(text);
}

void RunBrowser::setTagFilter(const QString& tag) {
    const int i = m_tagFilter->findData(tag);
    if (i >= 0) m_tagFilter->setCurrentIndex(i);
    m_proxy->setTag(tag);
}

void RunBrowser::setStatusFilter(const QString& status) {
    const int i = m_statusFilter->findData(status);
    if (i >= 0) m_statusFilter->setCurrentIndex(i);
    m_proxy->setStatus(status);
}

int RunBrowser::visibleRunCount() const {
    return m_proxy->rowCount();
}

bool RunBrowser::editAllowed() {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return false;
    }
    if (m_store->read_only()) {
        reportError(readOnlyReason());
        return false;
    }
    return true;
}

bool RunBrowser::renameRun(std::int64_t id, const QString& name) {
    if (!editAllowed()) return false;
    if (name.trimmed().isEmpty()) {
        reportError(tr("A run needs a name; the name was left as it was."));
        return false;
    }
    try {
        m_store->rename(id, name.trimmed().toStdString());
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::setRunNotes(std::int64_t id, const QString& notes) {
    if (!editAllowed()) return false;
    try {
        m_store->set_notes(id, notes.toStdString());
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::setRunTags(std::int64_t id, const QString& tags) {
    if (!editAllowed()) return false;
    try {
        m_store->set_tags(id, tags.toStdString());  // the store normalises the list
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    refresh();
    return true;
}

void RunBrowser::setConfirmHandler(std::function<bool(const QString&)> confirm) {
    m_confirm = std::move(confirm);
}

bool RunBrowser::deleteRuns(const std::vector<std::int64_t>& ids) {
    if (ids.empty() || !editAllowed()) return false;
    QStringList names;
    for (std::int64_t id : ids)
        if (const RunRow* r = m_model->runById(id)) names << QStringLiteral("“%1” (run %2)").arg(QString::fromStdString(r->name)).arg(id);
    const QString question =
        ids.size() == 1 ? tr("Delete %1 and all its recorded data? This cannot be undone.").arg(names.value(0))
                        : tr("Delete these %1 runs and all their recorded data? This cannot be undone.\n\n%2")
                              .arg(ids.size())
                              .arg(names.join(QLatin1Char('\n')));
    if (!m_confirm || !m_confirm(question)) return false;
    bool ok = true;
    for (std::int64_t id : ids) {
        try {
            m_store->remove(id);
        } catch (const std::exception& e) {
            reportError(QString::fromStdString(e.what()));
            ok = false;
        }
    }
    refresh();
    return ok;
}

RunViewer* RunBrowser::openRun(std::int64_t id) {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return nullptr;
    }
    if (!m_opensWindows) {
        emit runOpened(id);
        return nullptr;
    }
    for (const auto& v : m_viewers) {
        if (v && v->runId() == id && v->property("storePath").toString() == storePath()) {
            v->show();
            v->raise();
            v->activateWindow();
            emit runOpened(id);
            return v;
        }
    }
    auto* viewer = new RunViewer(m_store, id);
    if (!viewer->load()) {
        reportError(viewer->error());
        delete viewer;
        return nullptr;
    }
    viewer->setProperty("storePath", storePath());
    viewer->setAttribute(Qt::WA_DeleteOnClose);
    connect(viewer, &RunViewer::runFinished, this, &RunBrowser::refresh);
    connect(viewer, &RunViewer::branchRequested, this,
            [this, path = storePath()](qint64 runId, qint64 step) { emit branchRequested(path, runId, step); });
    m_viewers.removeAll(nullptr);
    m_viewers << viewer;
    viewer->show();
    emit runOpened(id);
    return viewer;
}

CompareView* RunBrowser::compareRuns(const std::vector<std::int64_t>& ids) {
    if (const QString why = CompareView::checkRunCount(ids.size()); !why.isEmpty()) {
        reportError(why);
        return nullptr;
    }
    if (!m_store) {
        reportError(tr("No run store is open."));
        return nullptr;
    }
    QList<qint64> list;
    for (std::int64_t id : ids) list << id;
    if (!m_opensWindows) {
        emit compareRequested(list);
        return nullptr;
    }
    QString error;
    auto* view = CompareView::open(m_store, ids, error);
    if (!view) {
        reportError(error);
        return nullptr;
    }
    m_compares.removeAll(nullptr);
    m_compares << view;
    view->show();
    emit compareRequested(list);
    return view;
}

void RunBrowser::overlayRuns(const std::vector<std::int64_t>& ids) {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return;
    }
    if (ids.size() > static_cast<std::size_t>(CompareView::maxRuns)) {
        reportError(tr("Select at most %1 runs to overlay (%2 are selected): more curves than that cannot be told apart.")
                        .arg(CompareView::maxRuns)
                        .arg(ids.size()));
        return;
    }
    for (std::int64_t id : ids) {
        const RunRow* r = m_model->runById(id);
        const QString name = r ? tr("%1 (run %2)").arg(QString::fromStdString(r->name)).arg(id) : tr("run %1").arg(id);
        emit overlayRequested(storePath(), id, name);
    }
}

QList<RunViewer*> RunBrowser::openViewers() const {
    QList<RunViewer*> out;
    for (const auto& v : m_viewers)
        if (v) out << v.data();
    return out;
}

QString RunBrowser::exportRun(std::int64_t id, const ExportChoice& choice, const QString& path) {
    if (!m_store) return tr("No run store is open.");
    return choice.kind == ExportChoice::experimentFile ? exportRunExperiment(*m_store, id, path)
                                                   : exportRunTable(*m_store, id, choice.table, choice.format, path);
}

void RunBrowser::reportError(const QString& message) {
    m_lastError = message;
    m_bannerIsListError = false;
    m_notice->showNotice(message.toHtmlEscaped());
    emit errorOccurred(message);
}

void RunBrowser::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    // Closed (not minimised, which the window system does): the banner was about what was tried in
    // this visit, and the browser reopens on the store it kept, which opened.
    if (!event->spontaneous()) m_notice->hide();
}

void RunBrowser::updateActions() {
    const auto ids = selectedRunIds();
    const bool store = m_store != nullptr;
    const bool writable = store && !m_store->read_only();
    m_openRunAction->setEnabled(store && !ids.empty());
    m_compareAction->setEnabled(store && ids.size() >= static_cast<std::size_t>(CompareView::minRuns));
    m_overlayAction->setEnabled(store && !ids.empty() && ids.size() <= static_cast<std::size_t>(CompareView::maxRuns));
    m_exportButton->setEnabled(store && ids.size() == 1);
    m_deleteAction->setEnabled(writable && !ids.empty());
    m_deleteAction->setToolTip(writable ? tr("Delete the selected runs and their data (asks first).") : readOnlyReason());
    m_refreshAction->setEnabled(store);
    const RunRow* run = ids.size() == 1 ? m_model->runById(ids.front()) : nullptr;
    const bool inSweep = run && !run->sweep_uuid.empty();
    m_sweepAction->setEnabled(inSweep);
    m_sweepAction->setToolTip(inSweep
                                  ? tr("Show the recipe table of this run's sweep, with its Pareto front.")
                                  : tr("Select one run recorded by a sweep (mantissa-cli sweep) to see its sweep."));
    readCheckpoints(run);
    updateResumeActions(run);
}

void RunBrowser::updateDetails() {
    const auto ids = selectedRunIds();
    const RunRow* run = ids.size() == 1 ? m_model->runById(ids.front()) : nullptr;
    const bool writable = m_store && !m_store->read_only();
    for (QWidget* w : std::initializer_list<QWidget*>{m_nameEdit, m_tagsEdit, m_notesEdit, m_saveDetails}) {
        w->setEnabled(run && writable);
        w->setToolTip(run && !writable ? readOnlyReason() : QString());
    }
    if (!run) {
        m_detailsTitle->setText(ids.empty() ? tr("Select a run to see and edit its name, tags and notes.")
                                            : tr("%1 runs selected: Compare overlays their curves.").arg(ids.size()));
        m_detailsId = -1;
        m_loadedName.clear();
        m_loadedTags.clear();
        m_loadedNotes.clear();
        m_nameEdit->clear();
        m_tagsEdit->clear();
        m_notesEdit->clear();
        return;
    }
    QString title = tr("<b>Run %1</b> · %2 · %3").arg(run->id).arg(QString::fromLatin1(run_status_name(run->status)),
                                                                    RunTableModel::displayDate(run->created_at));
    if (!run->device.empty()) title += QStringLiteral("<br>") + QString::fromStdString(run->backend + ": " + run->device).toHtmlEscaped();
    if (!run->error.empty()) title += QStringLiteral("<br>") + QString::fromStdString(run->error).toHtmlEscaped();
    // The family: where a branch came from, the run's checkpoints and its own branches.
    if (const QString from = branchedFromText(*run, m_model->runs()); !from.isEmpty())
        title += QStringLiteral("<br>") + from.toHtmlEscaped() + QLatin1Char('.');
    if (!m_checkpointError.isEmpty())
        title += QStringLiteral("<br>") + m_checkpointError.toHtmlEscaped();
    else if (m_checkpoints.empty())
        title += QStringLiteral("<br>") + tr("No checkpoints.");
    else
        title += QStringLiteral("<br>") +
                 (m_checkpoints.size() == 1 ? tr("Checkpoint at step %1.") : tr("Checkpoints at steps %1."))
                     .arg(checkpointStepsText(m_checkpoints));
    QStringList branches;
    for (const RunRow& r : m_model->runs())
        if (!r.parent_uuid.empty() && r.parent_uuid == run->uuid && r.parent_step)
            branches
                << tr("run %1 at step %2").arg(r.id).arg(QLocale().toString(static_cast<qlonglong>(*r.parent_step)));
    if (!branches.isEmpty())
        title += QStringLiteral("<br>") + tr("Branches: %1.").arg(branches.join(QStringLiteral(", ")));
    m_detailsTitle->setText(title);
    // The same run again (a refresh): an editor the user has changed keeps its text.
    const bool same = run->id == m_detailsId;
    const QString name = QString::fromStdString(run->name);
    const QString tags = RunTableModel::splitTags(run->tags).join(QStringLiteral(", "));
    const QString notes = QString::fromStdString(run->notes);
    if (!same || m_nameEdit->text() == m_loadedName) m_nameEdit->setText(name);
    if (!same || m_tagsEdit->text() == m_loadedTags) m_tagsEdit->setText(tags);
    if (!same || m_notesEdit->toPlainText() == m_loadedNotes) m_notesEdit->setPlainText(notes);
    m_detailsId = run->id;
    m_loadedName = name;
    m_loadedTags = tags;
    m_loadedNotes = notes;
}

QString RunBrowser::detailsText() const {
    QTextDocument doc;
    doc.setHtml(m_detailsTitle->text());
    return doc.toPlainText();
}

void RunBrowser::saveDetails() {
    const auto ids = selectedRunIds();
    if (ids.size() != 1) return;
    const RunRow* run = m_model->runById(ids.front());
    if (!run) return;
    const std::int64_t id = run->id;
    // Copies: each edit re-reads the list, which replaces *run.
    const QString name = m_nameEdit->text(), tags = m_tagsEdit->text(), notes = m_notesEdit->toPlainText();
    const bool nameChanged = name.trimmed() != QString::fromStdString(run->name);
    const bool tagsChanged = RunTableModel::splitTags(tags.toStdString()) != RunTableModel::splitTags(run->tags);
    const bool notesChanged = notes != QString::fromStdString(run->notes);
    if (nameChanged && !renameRun(id, name)) return;
    if (tagsChanged && !setRunTags(id, tags)) return;
    if (notesChanged) setRunNotes(id, notes);
}

}  // namespace mantissa::ui
