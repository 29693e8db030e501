// WrappingRow: a row of widgets that wraps onto more rows where it is narrower than their size
// hints in a row, as words do, each widget at its size hint (cut to the row's width where even
// alone it is wider), at most maxRows() rows: its minimum width is the least that keeps to them,
// its minimum height that of the rows its last width took. So the gradient histogram view
// (gradient_histogram_view.h) asks for no more width than its widest group of controls where it
// has the height for the rows (a side-scrolling dock would cut the caption and the plot at its
// edge). No height-for-width: a QScrollArea would take the view's preferred height for its
// minimum.
#pragma once

#include <QLayout>
#include <QList>

namespace mantissa::ui {

class WrappingRow : public QLayout {
public:
    WrappingRow(int spacingX, int spacingY);
    ~WrappingRow() override;
    void addItem(QLayoutItem* item) override { m_items.append(item); }
    int count() const override { return static_cast<int>(m_items.size()); }
    QLayoutItem* itemAt(int i) const override { return m_items.value(i); }
    QLayoutItem* takeAt(int i) override { return i >= 0 && i < m_items.size() ? m_items.takeAt(i) : nullptr; }
    Qt::Orientations expandingDirections() const override { return {}; }
    QSize sizeHint() const override;
    QSize minimumSize() const override;
    void setGeometry(const QRect& rect) override;
    // 0: as many as the width needs.
    void setMaxRows(int rows);
    int rowsAt(int width) const;
    // The height of `rows` rows, and the least width that needs no more than `rows` (0: any number).
    int heightOfRows(int rows) const;
    int leastWidth(int rows) const;

private:
    int oneRowWidth() const;
    // Lays the items out in `rect` (when `apply`); returns the height they take.
    int arrange(const QRect& rect, bool apply, int* rowCount = nullptr) const;

    QList<QLayoutItem*> m_items;
    int m_dx, m_dy;
    int m_width = 0;    // the width of the last geometry, 0 before any
    int m_maxRows = 0;  // 0: no limit
};

}  // namespace mantissa::ui
