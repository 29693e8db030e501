// WrappingRow (see wrapping_row.h).
#include "histogram/wrapping_row.h"

#include <algorithm>

#include <QTimer>

namespace mantissa::ui {

WrappingRow::WrappingRow(int spacingX, int spacingY) : m_dx(spacingX), m_dy(spacingY) { setContentsMargins(0, 0, 0, 0); }

WrappingRow::~WrappingRow() {
    while (QLayoutItem* item = takeAt(0)) delete item;
}

QSize WrappingRow::sizeHint() const {
    const int width = oneRowWidth();
    return {width, arrange(QRect(0, 0, m_width > 0 ? std::max(m_width, leastWidth(m_maxRows)) : width, 0), false)};
}

QSize WrappingRow::minimumSize() const {
    const int width = leastWidth(m_maxRows);
    return {width, arrange(QRect(0, 0, m_width > 0 ? std::max(m_width, width) : oneRowWidth(), 0), false)};
}

void WrappingRow::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    const int before = minimumSize().height();
    m_width = rect.width();
    const int height = arrange(rect, true);
    // Another number of rows: the parent lays out again for the new height (not from here,
    // inside its own layout pass).
    if (height != before) QTimer::singleShot(0, this, [this] { invalidate(); });
}

void WrappingRow::setMaxRows(int rows) {
    if (rows == m_maxRows) return;
    m_maxRows = rows;
    invalidate();
}

int WrappingRow::rowsAt(int width) const {
    int rows = 0;
    arrange(QRect(0, 0, width, 0), false, &rows);
    return rows;
}

int WrappingRow::heightOfRows(int rows) const {
    int height = 0;
    for (QLayoutItem* item : m_items)
        if (!item->isEmpty()) height = std::max(height, item->sizeHint().height());
    return rows > 0 ? rows * height + (rows - 1) * m_dy : 0;
}

int WrappingRow::leastWidth(int rows) const {
    int low = 0;
    for (QLayoutItem* item : m_items)
        if (!item->isEmpty()) low = std::max(low, item->minimumSize().width());
    int high = std::max(low, oneRowWidth());
    if (rows <= 0 || rowsAt(low) <= rows) return low;
    while (high - low > 1) {  // rowsAt(low) > rows >= rowsAt(high)
        const int mid = (low + high) / 2;
        (rowsAt(mid) > rows ? low : high) = mid;
    }
    return high;
}

int WrappingRow::oneRowWidth() const {
    int width = 0;
    for (QLayoutItem* item : m_items)
        if (!item->isEmpty()) width += (width > 0 ? m_dx : 0) + item->sizeHint().width();
    return width;
}

int WrappingRow::arrange(const QRect& rect, bool apply, int* rowCount) const {
    int y = rect.y(), rows = 0;
    for (qsizetype i = 0; i < m_items.size();) {
        int x = 0, height = 0;
        qsizetype end = i;
        for (bool first = true; end < m_items.size(); ++end) {
            QLayoutItem* item = m_items[end];
            if (item->isEmpty()) continue;
            const int w = std::max(std::min(item->sizeHint().width(), rect.width()), item->minimumSize().width());
            if (!first && x + m_dx + w > rect.width()) break;
            x += (first ? 0 : m_dx) + w;
            height = std::max(height, item->sizeHint().height());
            first = false;
        }
        if (apply) {
            int left = rect.x();
            for (qsizetype j = i; j < end; ++j) {
                QLayoutItem* item = m_items[j];
                if (item->isEmpty()) continue;
                const QSize hint = item->sizeHint();
                const int w = std::max(std::min(hint.width(), rect.width()), item->minimumSize().width());
                item->setGeometry(QRect(left, y + (height - hint.height()) / 2, w, hint.height()));
                left += w + m_dx;
            }
        }
        if (height > 0) {
            y += height + m_dy;
            ++rows;
        }
        i = end;
    }
    if (rowCount) *rowCount = rows;
    return rows > 0 ? y - m_dy - rect.y() : 0;
}

}  // namespace mantissa::ui
