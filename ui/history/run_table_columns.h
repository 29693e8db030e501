// The run browser's column widths. Each column starts at the width its usual contents need; the
// Configuration column (a run's settings and what changed live, the widest text) takes the width
// the others leave but never less than a typical summary reads whole
// (configurationMinimumWidth), and the table scrolls sideways when the window is narrower than that.
// A Stretch section could not keep such a minimum: with the other columns' widths filling the
// table it was squeezed to a sliver.
//
// GUI thread only; the fitting lives as long as the view (a child of it).
#pragma once

class QTableView;

namespace mantissa::ui {

// The view shows a RunTableModel (or a proxy of one).
void setUpRunColumns(QTableView* view);
int configurationMinimumWidth(const QTableView* view);

}  // namespace mantissa::ui
