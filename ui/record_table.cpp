// The shared set-up of tables of recorded runs (record_table.h).
#include "record_table.h"

#include <QHeaderView>
#include <QTableView>

namespace mantissa::ui {

void setUpRecordTable(QTableView* view) {
    view->setSortingEnabled(true);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setAlternatingRowColors(true);
    view->setWordWrap(false);
    view->verticalHeader()->setVisible(false);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 8);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
}

}  // namespace mantissa::ui
