// The run browser's column widths. Each column starts at the width its usual contents need and
// keeps it: the figures (steps, final loss, test accuracy) and the short texts beside them are
// what a person compares runs by, so they never give up width. The Configuration column (a run's
// settings and what changed live, the widest text) takes the width the others leave, its text
// elided at the right and whole in its tooltip (RunTableModel), down to configurationMinimumWidth
// (autocast, loss scaling and master weights, the part every summary starts with). Where even that
// leaves no room, the table scrolls sideways anyway, and the column then takes what the widest
// summary listed needs (at least a typical one's width, at most half as much again): once there is
// a scroll bar, reading the summaries whole costs only a longer scroll.
// A Stretch section could not keep such a minimum: with the other columns' widths filling the
// table it was squeezed to a sliver. Holding the widest summary whole at every width pushed the
// test accuracy and the tags out of a 1440 px browser instead.
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
