// HintLabel: as many whole parts of the hint as the width holds (see hint_label.h).
#include "charts/hint_label.h"

#include <QResizeEvent>

namespace mantissa::ui {

namespace {
const QString separator = QStringLiteral(" · ");
}

HintLabel::HintLabel(const QStringList& parts, QWidget* parent)
    : QLabel(parts.join(separator), parent), m_parts(parts) {
    setToolTip(parts.join(separator));
    setTextFormat(Qt::PlainText);
}

QSize HintLabel::sizeHint() const {
    const QMargins m = contentsMargins();
    return {fontMetrics().horizontalAdvance(m_parts.join(separator)) + m.left() + m.right() + 2 * margin(),
            QLabel::sizeHint().height()};
}

QSize HintLabel::minimumSizeHint() const {
    return {0, QLabel::minimumSizeHint().height()};
}

QString HintLabel::textFor(int width) const {
    const QFontMetrics fm = fontMetrics();
    QString shown;
    for (const QString& part : m_parts) {
        const QString longer = shown.isEmpty() ? part : shown + separator + part;
        if (fm.horizontalAdvance(longer) > width) break;
        shown = longer;
    }
    return shown;
}

void HintLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    setText(textFor(contentsRect().width() - 2 * margin()));
}

}  // namespace mantissa::ui
