// Wrapped tooltips. Qt shows a plain-text tooltip on one line however long it is (a sentence of
// Mantissa's tooltips can run to 1,000 px and more), but wraps rich text, at the width the text
// sets (wrappedToolTip: about 70 characters of the tooltip font at most). Rather than
// every tooltip being written as HTML, ToolTipWrapper, an application-wide event filter, shows a
// long plain-text tooltip as rich text at the moment it is shown: a widget's own (QWidget::toolTip,
// which tool buttons take from their actions) and an item view's or header's (the model's
// Qt::ToolTipRole). Short tooltips and those already rich are left to Qt. Newlines in a plain
// tooltip are kept.
//
// Installed once on the application by app/gui/main.cpp (and by GUI test fixtures that check
// tooltips); GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QCoreApplication;

namespace mantissa::ui {

// The rich text a plain tooltip is shown as: HTML-escaped, in a block as wide as its longest line
// up to about wrapFromChars characters, that wraps at spaces and keeps newlines.
QString wrappedToolTip(const QString& plain);
// Whether `text` is plain text with a line longer than wrapFromChars.
bool toolTipNeedsWrapping(const QString& text);

class ToolTipWrapper : public QObject {
    Q_OBJECT
public:
    static constexpr int wrapFromChars = 70;  // plain lines up to this long stay as Qt shows them

    explicit ToolTipWrapper(QObject* parent = nullptr);
    // Installs one wrapper on `app` (a second call does nothing); it lives as long as `app`.
    static void install(QCoreApplication* app);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace mantissa::ui
