// SweepView: a store's sweeps, the recipe table and its scatter (see sweep_view.h).
#include "sweeps/sweep_view.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "config/telemetry.h"
#include "history/close_keys.h"
#include "history/compare_view.h"
#include "history/run_table_model.h"
#include "panels/notice_bar.h"
#include "record_table.h"
#include "sweeps/sweep_scatter.h"
#include "sweeps/sweep_table_model.h"

namespace mantissa::ui {
namespace {

QString figureTitle(SweepFigure f) {
    const QString name = QString::fromStdString(figureName(f));
    return name.left(1).toUpper() + name.mid(1);
}

}  // namespace

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
    m_model = new SweepTableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(SweepTableModel::SortRole);

    m_view = new QTableView;
    m_view->setObjectName(QStringLiteral("sweepTable"));
    m_view->setModel(m_proxy);
    setUpRecordTable(m_view);
    m_view->sortByColumn(0, Qt::AscendingOrder);
    m_view->horizontalHeader()->setStretchLastSection(false);

    m_scatter = new SweepScatter;
    m_scatter->setObjectName(QStringLiteral("sweepScatter"));
    m_scatter->setMinimumSize(320, 260);

    m_list = new QListWidget;
    m_list->setObjectName(QStringLiteral("sweepList"));
    m_list->setToolTip(tr("The store's sweeps, newest first (mantissa-cli sweep list)."));
    m_list->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("#12 spirals-recipes (6 runs)")) + 16);

    m_xChoice = new QComboBox;
    m_yChoice = new QComboBox;
    for (SweepFigure f : sweepFigures) {
        m_xChoice->addItem(figureTitle(f), static_cast<int>(f));
        m_yChoice->addItem(figureTitle(f), static_cast<int>(f));
    }
    m_xChoice->setToolTip(tr("The figure across; the front is of the two figures drawn."));
    m_yChoice->setToolTip(tr("The figure up; the front is of the two figures drawn."));
    m_xChoice->setCurrentIndex(m_xChoice->findData(static_cast<int>(m_x)));
    m_yChoice->setCurrentIndex(m_yChoice->findData(static_cast<int>(m_y)));

    m_notice = new NoticeBar;
    m_storeLabel = new QLabel;
    m_storeLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_storeLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_heading = new QLabel;
    m_heading->setTextFormat(Qt::RichText);
    m_heading->setWordWrap(true);
    m_caption = new QLabel;
    m_caption->setWordWrap(true);
    m_caption->setTextFormat(Qt::PlainText);

    m_refreshAction = new QAction(tr("Refresh"), this);
    m_refreshAction->setShortcut(QKeySequence::Refresh);
    m_refreshAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_refreshAction->setToolTip(tr("Read the sweeps and the shown sweep's runs again (F5)."));
    connect(m_refreshAction, &QAction::triggered, this, &SweepView::refresh);
    addAction(m_refreshAction);
    m_compareAction = new QAction(tr("Compare"), this);
    m_compareAction->setToolTip(tr("Overlay the sweep's runs' curves: the selected rows when two or more are "
                                   "selected, else every run of the sweep (at most %1).")
                                    .arg(CompareView::maxRuns));
    connect(m_compareAction, &QAction::triggered, this, [this] { compare(); });

    auto* storeRow = new QHBoxLayout;
    storeRow->addWidget(new QLabel(tr("Store:")));
    storeRow->addWidget(m_storeLabel, 1);
    auto* refreshButton = new QToolButton;
    refreshButton->setDefaultAction(m_refreshAction);
    storeRow->addWidget(refreshButton);

    auto* tablePane = new QWidget;
    auto* tableLayout = new QVBoxLayout(tablePane);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(m_view, 1);
    auto* buttons = new QHBoxLayout;
    auto* compareButton = new QToolButton;
    compareButton->setDefaultAction(m_compareAction);
    buttons->addWidget(compareButton);
    buttons->addStretch(1);
    tableLayout->addLayout(buttons);

    auto* plotPane = new QWidget;
    auto* plotLayout = new QVBoxLayout(plotPane);
    plotLayout->setContentsMargins(0, 0, 0, 0);
    auto* axes = new QHBoxLayout;
    axes->addWidget(new QLabel(tr("X:")));
    axes->addWidget(m_xChoice);
    axes->addSpacing(12);
    axes->addWidget(new QLabel(tr("Y:")));
    axes->addWidget(m_yChoice);
    axes->addStretch(1);
    plotLayout->addLayout(axes);
    plotLayout->addWidget(m_scatter, 1);
    plotLayout->addWidget(m_caption);

    m_split = new QSplitter(Qt::Horizontal);
    m_split->setChildrenCollapsible(false);
    m_split->addWidget(tablePane);
    m_split->addWidget(plotPane);
    m_split->setStretchFactor(0, 3);
    m_split->setStretchFactor(1, 2);
    auto* right = new QWidget;
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addWidget(m_heading);
    rightLayout->addWidget(m_split, 1);
    auto* outer = new QSplitter(Qt::Horizontal);
    outer->setChildrenCollapsible(false);
    outer->addWidget(m_list);
    outer->addWidget(right);
    outer->setStretchFactor(0, 0);
    outer->setStretchFactor(1, 1);
    outer->setSizes({m_list->minimumWidth(), 10000});  // the list as narrow as its names allow

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(storeRow);
    layout->addWidget(m_notice);
    layout->addWidget(outer, 1);

    connect(m_list, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item && item->data(Qt::UserRole).toLongLong() != m_sweepId)
            showSweep(item->data(Qt::UserRole).toLongLong());
    });
    const auto axisChanged = [this] {
        setAxes(static_cast<SweepFigure>(m_xChoice->currentData().toInt()),
                static_cast<SweepFigure>(m_yChoice->currentData().toInt()));
    };
    connect(m_xChoice, &QComboBox::currentIndexChanged, this, axisChanged);
    connect(m_yChoice, &QComboBox::currentIndexChanged, this, axisChanged);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateActions();
        if (m_syncing) return;
        m_scatter->setSelectedRows(selectedRows());
    });
    connect(m_scatter, &SweepScatter::rowClicked, this, &SweepView::onScatterClicked);
    m_autoRefresh.setInterval(autoRefreshMs);
    connect(&m_autoRefresh, &QTimer::timeout, this, &SweepView::refresh);

    setWindowTitle(tr("Mantissa — sweeps"));
    installCloseKeys(this);
    m_heading->setText(tr("No run store is open."));
    updateActions();
}

SweepView::~SweepView() {
    for (const auto& c : m_compares) delete c.data();  // windows of their own: they close with the view
}

const SweepTable& SweepView::table() const {
    return m_model->table();
}

void SweepView::setStore(std::shared_ptr<RunStore> store) {
    m_store = std::move(store);
    m_sweepId = -1;
    m_lastError.clear();
    m_notice->hide();
    m_storeLabel->setText(m_store ? QDir::toNativeSeparators(QString::fromStdString(m_store->path())) : QString());
    m_model->setTable({});
    fillSweepList();
    if (m_list->count() > 0)
        showSweep(m_list->item(0)->data(Qt::UserRole).toLongLong());
    else
        updateScatter();
}

void SweepView::fillSweepList() {
    const QSignalBlocker block(m_list);
    m_list->clear();
    if (!m_store) return;
    std::vector<SweepRow> sweeps;
    try {
        sweeps = m_store->list_sweeps();
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return;
    }
    for (const SweepRow& s : sweeps) {
        auto* item = new QListWidgetItem(
            tr("#%1 %2 (%3 runs)").arg(s.id).arg(QString::fromStdString(s.name)).arg(s.runs_planned));
        item->setData(Qt::UserRole, QVariant::fromValue<qlonglong>(s.id));
        item->setToolTip(
            tr("Sweep %1, %2: %3 runs planned, %4 (%5)")
                .arg(s.id)
                .arg(RunTableModel::displayDate(s.created_at))
                .arg(s.runs_planned)
                .arg(QString::fromStdString(s.executor == "slurm" ? "a Slurm job array" : "run on this machine"))
                .arg(QString::fromStdString(s.uuid)));
        m_list->addItem(item);
        if (s.id == m_sweepId) m_list->setCurrentItem(item);
    }
    if (sweeps.empty())
        m_heading->setText(
            tr("This store holds no sweep. <code>mantissa-cli sweep --recipes standard</code> makes one "
               "(docs/sweeps.md)."));
}

bool SweepView::showSweep(std::int64_t id) {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return false;
    }
    const std::int64_t before = m_sweepId;
    m_sweepId = id;
    try {
        readShownSweep();
    } catch (const std::exception& e) {
        m_sweepId = before;
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->data(Qt::UserRole).toLongLong() == id) {
            const QSignalBlocker block(m_list);
            m_list->setCurrentRow(i);
        }
    return true;
}

bool SweepView::showSweepOfRun(const std::string& sweepUuid, std::int64_t runId) {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return false;
    }
    try {
        for (const SweepRow& s : m_store->list_sweeps()) {
            if (s.uuid != sweepUuid) continue;
            if (!showSweep(s.id)) return false;
            const auto& rows = table().rows;
            for (std::size_t i = 0; i < rows.size(); ++i)
                if (rows[i].run && rows[i].run->id == runId) selectRows({static_cast<int>(i)});
            return true;
        }
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    reportError(tr("This store holds no sweep with the uuid %1: the run was recorded for a sweep of another store "
                   "(a Slurm task's store names its main store's); open that store to see the sweep.")
                    .arg(QString::fromStdString(sweepUuid)));
    return false;
}

void SweepView::readShownSweep() {
    QGuiApplication::setOverrideCursor(Qt::WaitCursor);
    SweepTable table;
    try {
        table = readSweepTable(*m_store, m_sweepId);
    } catch (...) {
        QGuiApplication::restoreOverrideCursor();
        throw;
    }
    QGuiApplication::restoreOverrideCursor();
    // The same sweep read again keeps its selected runs (by index); another starts unselected.
    const bool same = m_model->table().sweep.id == table.sweep.id && !m_model->table().rows.empty();
    std::vector<std::int64_t> indices;
    if (same)
        for (int r : selectedRows()) indices.push_back(m_model->table().rows[static_cast<std::size_t>(r)].index);
    if (!same && !m_axesChosen) {
        // Until a person picks the axes, a sweep opens on the CLI's front (a regression's: final loss).
        m_y = defaultYFigure(table);
        const QSignalBlocker block(m_yChoice);
        m_yChoice->setCurrentIndex(m_yChoice->findData(static_cast<int>(m_y)));
    }
    m_lastError.clear();
    m_notice->hide();
    m_syncing = true;
    m_model->setTable(std::move(table));
    m_syncing = false;
    const SweepTable& t = m_model->table();
    if (!t.planError.empty())
        m_notice->showNotice(
            tr("The sweep's plan could not be made again (%1); the table lists its recorded runs only.")
                .arg(QString::fromStdString(t.planError))
                .toHtmlEscaped());
    int recorded = 0, completed = 0, running = 0;
    for (const SweepTableRow& r : t.rows) {
        recorded += r.run ? 1 : 0;
        completed += r.completed() ? 1 : 0;
        running += r.run && r.run->status == RunStatus::running ? 1 : 0;
    }
    m_heading->setText(tr("<b>Sweep %1</b> “%2” · %3 runs planned, %4 recorded, %5 completed%6 · %7")
                           .arg(t.sweep.id)
                           .arg(QString::fromStdString(t.sweep.name).toHtmlEscaped())
                           .arg(t.rows.size())
                           .arg(recorded)
                           .arg(completed)
                           .arg(running > 0 ? tr(", %1 running").arg(running) : QString())
                           .arg(RunTableModel::displayDate(t.sweep.created_at)));
    updateScatter();
    if (!same) fitTable();  // a refresh keeps the widths a person set
    std::vector<int> rows;
    for (std::size_t i = 0; i < t.rows.size(); ++i)
        if (std::find(indices.begin(), indices.end(), t.rows[i].index) != indices.end())
            rows.push_back(static_cast<int>(i));
    selectRows(rows);
    if (running > 0) {
        if (!m_autoRefresh.isActive()) m_autoRefresh.start();
    } else {
        m_autoRefresh.stop();
    }
    updateActions();
}

void SweepView::fitTable() {
    m_view->resizeColumnsToContents();  // after the front is set: its rows are bold
    int want = 2 * m_view->frameWidth() + m_view->verticalScrollBar()->sizeHint().width();
    for (int c = 0; c < m_proxy->columnCount(); ++c) want += m_view->columnWidth(c);
    const int total = m_split->width();
    const int plotAtLeast = m_scatter->minimumWidth() + 40;
    if (total > plotAtLeast + 200) {
        const int table = std::min(want, total - plotAtLeast);
        m_split->setSizes({table, total - table - m_split->handleWidth()});
    }
}

void SweepView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    fitTable();  // the splitter has its real width now
}

void SweepView::refresh() {
    if (!m_store) return;
    fillSweepList();
    if (m_sweepId < 0) {
        if (m_list->count() > 0) showSweep(m_list->item(0)->data(Qt::UserRole).toLongLong());
        return;
    }
    try {
        readShownSweep();
    } catch (const std::exception& e) {
        m_autoRefresh.stop();
        reportError(QString::fromStdString(e.what()));
    }
}

void SweepView::setAxes(SweepFigure x, SweepFigure y) {
    m_axesChosen = true;
    m_x = x;
    m_y = y;
    {
        const QSignalBlocker bx(m_xChoice), by(m_yChoice);
        m_xChoice->setCurrentIndex(m_xChoice->findData(static_cast<int>(x)));
        m_yChoice->setCurrentIndex(m_yChoice->findData(static_cast<int>(y)));
    }
    updateScatter();
}

void SweepView::updateScatter() {
    const SweepTable& t = m_model->table();
    const std::vector<bool> front = paretoRows(t, m_x, m_y);
    m_model->setFront(front, m_x, m_y);

    // Display units: accuracy in %, memory in the unit its largest value reads best in.
    double largestMemory = 0;
    for (const SweepTableRow& r : t.rows)
        largestMemory = std::max(largestMemory, figureValue(r, SweepFigure::peakMemory));
    double memoryUnit = 1024;
    QString memoryName = QStringLiteral("KiB");
    if (largestMemory >= 1024.0 * 1024 * 1024)
        memoryUnit = 1024.0 * 1024 * 1024, memoryName = QStringLiteral("GiB");
    else if (largestMemory >= 1024.0 * 1024)
        memoryUnit = 1024.0 * 1024, memoryName = QStringLiteral("MiB");
    const auto scaleOf = [&](SweepFigure f) {
        return f == SweepFigure::testAccuracy ? 100.0 : f == SweepFigure::peakMemory ? 1.0 / memoryUnit : 1.0;
    };
    const auto axisOf = [&](SweepFigure f) {
        SweepScatter::Axis a;
        a.label = QString::fromStdString(figureName(f));
        if (f == SweepFigure::testAccuracy) a.label += QStringLiteral(" (%)");
        if (f == SweepFigure::peakMemory) a.label += QStringLiteral(" (%1)").arg(memoryName);
        a.higherBetter = higherIsBetter(f);
        const double scale = scaleOf(f);
        a.format = [this, f, scale](double v) { return m_model->formatFigure(f, v / scale); };
        if (f == SweepFigure::testAccuracy) a.emptyRange = QCPRange(0, 100);  // no run yet: the whole scale
        return a;
    };
    std::vector<SweepScatter::Point> points;
    int notRun = 0, notCompleted = 0, lacking = 0;
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const SweepTableRow& r = t.rows[i];
        const double x = figureValue(r, m_x), y = figureValue(r, m_y);
        if (!r.run)
            ++notRun;
        else if (!r.completed())
            ++notCompleted;
        else if (!std::isfinite(x) || !std::isfinite(y))
            ++lacking;
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        points.push_back({x * scaleOf(m_x), y * scaleOf(m_y), static_cast<int>(i),
                          QString::fromStdString(t.hasRecipes ? r.recipe : r.label), front[i]});
    }
    const int onFront = static_cast<int>(std::count(front.begin(), front.end(), true));
    if (points.empty())
        m_scatter->setEmptyNote(t.rows.empty() ? tr("No runs yet")
                                : notRun + notCompleted == static_cast<int>(t.rows.size())
                                    ? tr("No completed runs yet")
                                    : tr("No completed run has both figures"));
    m_scatter->setPoints(std::move(points), axisOf(m_x), axisOf(m_y));
    m_scatter->setSelectedRows(selectedRows());
    QStringList missing;
    if (notRun > 0) missing << tr("%n not run", nullptr, notRun);
    if (notCompleted > 0) missing << tr("%n not completed", nullptr, notCompleted);
    if (lacking > 0) missing << tr("%n without both figures", nullptr, lacking);
    QString caption = tr("★ The Pareto front of %1 against %2: %3 of %4 drawn runs, no other at least as good in both "
                         "and better in one.")
                          .arg(QString::fromStdString(figureName(m_y)), QString::fromStdString(figureName(m_x)))
                          .arg(onFront)
                          .arg(m_scatter->points().size());
    if (!missing.isEmpty()) caption += QLatin1Char(' ') + tr("Not drawn: %1.").arg(missing.join(QStringLiteral(", ")));
    m_caption->setText(t.rows.empty() ? QString() : caption);
}

std::vector<int> SweepView::selectedRows() const {
    auto indexes = m_view->selectionModel()->selectedRows();
    std::sort(indexes.begin(), indexes.end(),
              [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
    std::vector<int> rows;
    for (const QModelIndex& i : indexes) rows.push_back(i.data(SweepTableModel::RowRole).toInt());
    return rows;
}

void SweepView::selectRows(const std::vector<int>& rows) {
    QItemSelection selection;
    for (int r : rows) {
        const QModelIndex index = m_proxy->mapFromSource(m_model->index(r, 0));
        if (index.isValid()) selection.select(index, index);
    }
    m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    if (!selection.isEmpty()) m_view->scrollTo(selection.indexes().front());
}

void SweepView::onScatterClicked(int row, bool add) {
    const QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!index.isValid()) return;
    const auto flags =
        (add ? QItemSelectionModel::Toggle : QItemSelectionModel::ClearAndSelect) | QItemSelectionModel::Rows;
    m_view->selectionModel()->select(index, flags);
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::NoUpdate);
    m_view->scrollTo(index);
}

std::vector<std::int64_t> SweepView::compareIds() const {
    const auto& rows = m_model->table().rows;
    std::vector<std::int64_t> selected, all;
    for (int r : selectedRows())
        if (rows[static_cast<std::size_t>(r)].run) selected.push_back(rows[static_cast<std::size_t>(r)].run->id);
    for (const SweepTableRow& r : rows)
        if (r.run) all.push_back(r.run->id);
    return selected.size() >= static_cast<std::size_t>(CompareView::minRuns) ? selected : all;
}

CompareView* SweepView::compare() {
    if (!m_store) {
        reportError(tr("No run store is open."));
        return nullptr;
    }
    const auto ids = compareIds();
    if (ids.size() > static_cast<std::size_t>(CompareView::maxRuns)) {
        reportError(tr("This sweep has %1 recorded runs, more than can be told apart on one chart: select %2 to %3 of "
                       "its rows to compare them.")
                        .arg(ids.size())
                        .arg(CompareView::minRuns)
                        .arg(CompareView::maxRuns));
        return nullptr;
    }
    if (const QString why = CompareView::checkRunCount(ids.size()); !why.isEmpty()) {
        reportError(why);
        return nullptr;
    }
    QString error;
    auto* view = CompareView::open(m_store, ids, error);
    if (!view) {
        reportError(error);
        return nullptr;
    }
    view->setWindowTitle(tr("Mantissa — sweep %1 compared").arg(m_sweepId));
    m_compares.removeAll(nullptr);
    m_compares << view;
    view->show();
    return view;
}

void SweepView::updateActions() {
    m_compareAction->setEnabled(m_store && compareIds().size() >= static_cast<std::size_t>(CompareView::minRuns));
    m_refreshAction->setEnabled(m_store != nullptr);
}

void SweepView::reportError(const QString& message) {
    m_lastError = message;
    m_notice->showNotice(message.toHtmlEscaped());
    emit errorOccurred(message);
}

}  // namespace mantissa::ui
