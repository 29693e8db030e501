// ElidingLabel (see eliding_label.h).
#include "histogram/eliding_label.h"

#include <algorithm>

#include <QPainter>
#include <QResizeEvent>
#include <QTextLayout>

namespace mantissa::ui {

ElidingLabel::ElidingLabel(QWidget* parent) : QLabel(parent) {
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the view
}

QSize ElidingLabel::sizeHint() const {
    const int w = width() > 40 ? width() : 400;
    int shown = std::max(1, static_cast<int>(lines(w).size()));
    if (m_maxHintLines > 0) shown = std::min(shown, m_maxHintLines);
    return {w, shown * fontMetrics().lineSpacing()};
}

void ElidingLabel::setMaxHintLines(int lines) {
    if (lines == m_maxHintLines) return;
    m_maxHintLines = lines;
    updateGeometry();
}

void ElidingLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    if (event->size().width() != event->oldSize().width()) updateGeometry();  // the hint follows the width
}

void ElidingLabel::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.setPen(palette().color(foregroundRole()));
    const QFontMetrics fm = fontMetrics();
    const std::vector<std::pair<int, int>> all = lines(width());
    const int shown = std::max(1, height() / fm.lineSpacing());
    for (int i = 0; i < static_cast<int>(all.size()) && i < shown; ++i) {
        const bool last = i == shown - 1 && i + 1 < static_cast<int>(all.size());
        const auto [start, length] = all[static_cast<std::size_t>(i)];
        const QString line = last ? fm.elidedText(text().mid(start).simplified(), Qt::ElideRight, width())
                                  : text().mid(start, length);
        painter.drawText(QPoint(0, i * fm.lineSpacing() + fm.ascent()), line);
    }
}

std::vector<std::pair<int, int>> ElidingLabel::lines(int width) const {
    QTextLayout layout(text(), font());
    QTextOption option;
    option.setWrapMode(QTextOption::WordWrap);
    layout.setTextOption(option);
    std::vector<std::pair<int, int>> out;
    layout.beginLayout();
    for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
        line.setLineWidth(std::max(1, width));
        out.emplace_back(line.textStart(), line.textLength());
    }
    layout.endLayout();
    return out;
}

}  // namespace mantissa::ui
