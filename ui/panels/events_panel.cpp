// EventsPanel: the filtered event table (see events_panel.h).
#include "panels/events_panel.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "models/event_log_model.h"

namespace mantissa::ui {

EventsPanel::EventsPanel(EventLogModel* model, QWidget* parent) : QWidget(parent) {
    m_proxy = new QSortFilterProxyModel(this);
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
    // Fixed row heights and column widths: sizing to contents would visit every row on each
    // insert. (A run without loss scaling can log an overflow per step; the model merges those
    // repeats into one growing row, but other long logs remain possible.)
    const QFontMetrics fm = m_view->fontMetrics();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_view->verticalHeader()->setDefaultSectionSize(fm.height() + 6);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setColumnWidth(EventLogModel::Step, fm.horizontalAdvance(QStringLiteral("0000000")) + 16);
    m_view->setColumnWidth(EventLogModel::Time, fm.horizontalAdvance(QStringLiteral("00000.0 s")) + 16);
    m_view->setColumnWidth(EventLogModel::Kind, fm.horizontalAdvance(QStringLiteral("interrupted")) + 16);
    m_view->setWordWrap(false);
    m_view->setToolTip(tr("Click an event to centre the charts on its step (for repeats merged into one row, "
                          "the first)."));

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

}  // namespace mantissa::ui
