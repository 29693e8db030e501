// WhatIfDelegate: the framed cell of a layer's own format (see what_if_delegate.h).
#include "models/what_if_delegate.h"

#include <QPainter>

#include "models/what_if_model.h"

namespace mantissa::ui {

void WhatIfDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyledItemDelegate::paint(painter, option, index);
    if (!index.data(WhatIfModel::CurrentFormatRole).toBool()) return;
    // In the palette's text colour: it contrasts with the neutral cells in light and dark palettes,
    // and the warm ones are light or saturated enough to show it too.
    painter->save();
    QPen pen(option.palette.color(QPalette::Text), frameWidth);
    pen.setJoinStyle(Qt::MiterJoin);
    painter->setPen(pen);
    painter->setBrush(Qt::NoBrush);
    // A pen strokes on both sides of its path: half its width in, so the frame stays in the cell.
    const int inset = frameWidth / 2;
    painter->drawRect(option.rect.adjusted(inset, inset, -inset, -inset));
    painter->restore();
}

}  // namespace mantissa::ui
