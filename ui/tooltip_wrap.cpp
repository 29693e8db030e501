// ToolTipWrapper: long plain tooltips shown wrapped (see tooltip_wrap.h).
#include "tooltip_wrap.h"

#include <QAbstractItemView>
#include <QFontMetrics>
#include <QApplication>
#include <QHeaderView>
#include <QHelpEvent>
#include <QTextDocument>
#include <QToolTip>

#include <algorithm>

namespace mantissa::ui {

QString wrappedToolTip(const QString& plain) {
    // The lines' width: the longest line's, at most about wrapFromChars characters of the
    // tooltip's font. A one-cell table of that width sets the width Qt's rich-text tooltip label
    // takes (left alone, it chooses a near-square block, narrow for a long sentence); pre-wrap
    // wraps at spaces and keeps the text's own line breaks.
    const QFontMetrics fm(QToolTip::font());
    int longest = 0;
    for (QStringView line : QStringView(plain).split(QLatin1Char('\n')))
        longest = std::max(longest, fm.horizontalAdvance(line.toString()));
    const int width = std::min(longest, fm.averageCharWidth() * ToolTipWrapper::wrapFromChars);
    return QStringLiteral("<table width=%1 cellspacing=0 cellpadding=0><tr><td style='white-space:pre-wrap'>%2</td></tr>"
                          "</table>")
        .arg(width)
        .arg(plain.toHtmlEscaped());
}

bool toolTipNeedsWrapping(const QString& text) {
    if (text.isEmpty() || Qt::mightBeRichText(text)) return false;
    for (QStringView line : QStringView(text).split(QLatin1Char('\n')))
        if (line.size() > ToolTipWrapper::wrapFromChars) return true;
    return false;
}

ToolTipWrapper::ToolTipWrapper(QObject* parent) : QObject(parent) {}

void ToolTipWrapper::install(QCoreApplication* app) {
    if (!app || app->findChild<ToolTipWrapper*>(QString(), Qt::FindDirectChildrenOnly)) return;
    app->installEventFilter(new ToolTipWrapper(app));
}

bool ToolTipWrapper::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() != QEvent::ToolTip || !watched->isWidgetType()) return false;
    auto* widget = static_cast<QWidget*>(watched);
    auto* help = static_cast<QHelpEvent*>(event);
    QString text;
    QRect area;  // where the tooltip stays up; null: the whole widget
    // An item view's tooltips come from its model, for the item or the header section under the
    // pointer (the events arrive at the view's viewport).
    if (auto* view = qobject_cast<QAbstractItemView*>(widget->parentWidget()); view && view->viewport() == widget) {
        if (auto* header = qobject_cast<QHeaderView*>(view)) {
            const int section = header->logicalIndexAt(help->pos());
            if (section < 0 || !header->model()) return false;
            text = header->model()->headerData(section, header->orientation(), Qt::ToolTipRole).toString();
            const int start = header->sectionViewportPosition(section);
            area = header->orientation() == Qt::Horizontal ? QRect(start, 0, header->sectionSize(section), widget->height())
                                                           : QRect(0, start, widget->width(), header->sectionSize(section));
        } else {
            const QModelIndex index = view->indexAt(help->pos());
            if (!index.isValid()) return false;
            text = index.data(Qt::ToolTipRole).toString();
            area = view->visualRect(index);
        }
    } else {
        text = widget->toolTip();
    }
    if (!toolTipNeedsWrapping(text)) return false;  // Qt shows it as it is (or shows nothing)
    QToolTip::showText(help->globalPos(), wrappedToolTip(text), widget, area, widget->toolTipDuration());
    return true;
}

}  // namespace mantissa::ui
