// WhatIfDelegate: paints a What-if cell as the default delegate does (its colour, its words, bold
// for the layer's own format) and frames the cell of the format the layer runs in, so the one
// column of real numbers in each row stands out from the what-ifs at a glance.
#pragma once

#include <QStyledItemDelegate>

namespace mantissa::ui {

class WhatIfDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    static constexpr int frameWidth = 2;  // px

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

}  // namespace mantissa::ui
