// The run browser's column widths. Each column starts at the width its usual contents need; the
// Configuration column (a run's settings and what changed live, the widest text) takes the width
// the others leave but never less than the widest summary listed reads whole (at least
// configurationMinimumWidth, a typical one; at most half as much again), and the table scrolls
// sideways when the window is narrower than that.
// A Stretch section could not keep such a minimum: with the other columns' widths filling the
// table it was squeezed to a sliver.
//
// The Name column is as wide as the longest name listed, between its usual width and
// nameMaximumWidth; a longer name is elided in the middle, because runs of one experiment share
// their beginning ("lesson-fp16-accumulation" and "lesson-fp16-acc…ce-fp32-accumulation" stay
// apart). The whole name is in the cell's tooltip (RunTableModel).
//
// GUI thread only; the fitting lives as long as the view (a child of it).
#pragma once

#include <QStyledItemDelegate>

class QTableView;

namespace mantissa::ui {

// The view shows a RunTableModel (or a proxy of one).
void setUpRunColumns(QTableView* view);
int configurationMinimumWidth(const QTableView* view);
int nameMaximumWidth(const QTableView* view);

// The Name column's delegate: its text elides in the middle. initStyleOption is public so a test
// can see what a cell shows.
class MiddleElideDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override;
};

}  // namespace mantissa::ui
