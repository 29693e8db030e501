// EventsPanel: the filtered event table (see events_panel.h).
#include "panels/events_panel.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "models/event_log_model.h"

namespace mantissa::ui {

namespace {
// The filter, with the Time column's header saying which time it is: the engine's clock, as the
// status bar's "training time" (run_status_bar.h). The header's word stays short ("Time"), since
// the message column needs the width; its tooltip gives the definition.
class EventFilterModel : public QSortFilterProxyModel {
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
        if (orientation == Qt::Horizontal && section == EventLogModel::Time) {
            if (role == Qt::ToolTipRole)
                return EventsPanel::tr("Training time since Start when the event happened: pauses and the waits of "
                                       "a pace are left out, as in the status bar and on the charts' time axis.");
        }
        return QSortFilterProxyModel::headerData(section, orientation, role);
    }
};
}  // namespace

EventsPanel::EventsPanel(EventLogModel* model, QWidget* parent) : QWidget(parent) {
    m_proxy = new EventFilterModel(this);
    m_proxy->setSourceModel(model);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_proxy->setFilterKeyColumn(-1);  // any column: kind or message

    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter (e.g. overflow, fc2, setting)"));
    m_filter->setClearButtonEnabled(true);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);

    m_view = new QTableView;
    m_view->setModel(m_proxy);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->verticalHeader()->setVisible(false);
    // Fixed column widths; the message takes the rest and wraps at word boundaries, its row as tall
    // as its lines up to maxMessageLines (the last one elided; the tooltip has it whole, with its
    // details). Rows are measured as they arrive or change, never all at once on an insert
    // (ResizeToContents would visit every row each time): a run without loss scaling can log an
    // overflow per step, which the model merges into one growing row, but other long logs remain
    // possible. A change of the message column's width or of the filter measures them all again,
    // once, after the resizing; beyond wrappedRowLimit rows that is left out and rows keep the
    // height they had.
    const QFontMetrics fm = m_view->fontMetrics();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->verticalHeader()->setDefaultSectionSize(fm.height() + 6);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->horizontalHeader()->setStretchLastSection(true);
    const auto fit = [&](const QString& widest, int column) {
        const QString header = m_proxy->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString();
        return std::max(fm.horizontalAdvance(widest), fm.horizontalAdvance(header)) + 12;
    };
    m_view->setColumnWidth(EventLogModel::Step, fit(QStringLiteral("000000"), EventLogModel::Step));
    m_view->setColumnWidth(EventLogModel::Time, fit(QStringLiteral("0000.0 s"), EventLogModel::Time));
    m_view->setColumnWidth(EventLogModel::Kind, fit(QStringLiteral("interrupted"), EventLogModel::Kind));
    m_view->setWordWrap(true);
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->setToolTip(tr("Click an event to centre the charts on its step (for repeats merged into one row, "
                          "the first)."));
    m_measureAll = new QTimer(this);
    m_measureAll->setSingleShot(true);
    m_measureAll->setInterval(0);
    connect(m_measureAll, &QTimer::timeout, this, [this] {
        if (m_proxy->rowCount() > wrappedRowLimit) return;
        for (int row = 0; row < m_proxy->rowCount(); ++row) measureRow(row);
    });
    const auto measureRows = [this](int first, int last) {
        if (m_measureAll->isActive()) return;  // all of them, in a moment
        for (int row = first; row <= last; ++row) measureRow(row);
    };
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this,
            [measureRows](const QModelIndex&, int first, int last) { measureRows(first, last); });
    connect(m_proxy, &QAbstractItemModel::dataChanged, this,
            [measureRows](const QModelIndex& topLeft, const QModelIndex& bottomRight) {
                measureRows(topLeft.row(), bottomRight.row());
            });
    const auto measureAll = [this] { m_measureAll->start(); };
    connect(m_proxy, &QAbstractItemModel::modelReset, this, measureAll);
    connect(m_proxy, &QAbstractItemModel::layoutChanged, this, measureAll);
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, measureAll);
    connect(m_view->horizontalHeader(), &QHeaderView::sectionResized, this, [measureAll](int column) {
        if (column == EventLogModel::Message) measureAll();
    });

    connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& index) {
        emit stepActivated(index.data(EventLogModel::StepRole).toLongLong());
    });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& index) {
        emit stepActivated(index.data(EventLogModel::StepRole).toLongLong());
    });
    // Follow new events while the view is at the bottom.
    connect(m_proxy, &QAbstractItemModel::rowsAboutToBeInserted, this, [this] {
        QScrollBar* bar = m_view->verticalScrollBar();
        m_view->setProperty("followTail", bar->value() >= bar->maximum() - 2);
    });
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, [this] {
        if (m_view->property("followTail").toBool()) m_view->scrollToBottom();
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_filter);
    layout->addWidget(m_view);
}

void EventsPanel::measureRow(int row) {
    m_view->resizeRowToContents(row);
    const int most = maxMessageLines * m_view->fontMetrics().lineSpacing() + 6;
    if (m_view->rowHeight(row) > most) m_view->setRowHeight(row, most);
}

}  // namespace mantissa::ui
