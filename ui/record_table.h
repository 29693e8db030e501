// The look and behaviour every table of recorded runs shares (the run history, a sweep's recipe
// table): sortable, whole rows selected (several with Ctrl and Shift), read-only, alternating
// rows, one line a row, no row numbers, interactive column widths.
#pragma once

class QTableView;

namespace mantissa::ui {

void setUpRecordTable(QTableView* view);

}  // namespace mantissa::ui
