// Esc and Ctrl+W close a history window (see close_keys.h).
#include "history/close_keys.h"

#include <QEvent>
#include <QKeySequence>
#include <QList>
#include <QShortcut>
#include <QWidget>

namespace mantissa::ui {

namespace {

// Turns the shortcuts on exactly while the widget is a window: checked when it is shown or moves
// to another parent.
class CloseKeys : public QObject {
public:
    explicit CloseKeys(QWidget* widget) : QObject(widget), m_widget(widget) {
        // Every binding the platform has for Close (Ctrl+W and Ctrl+F4 here), and Esc.
        const QList<QList<QKeySequence>> bindings = {QKeySequence::keyBindings(QKeySequence::Close),
                                                     {QKeySequence(Qt::Key_Escape)}};
        for (const QList<QKeySequence>& keys : bindings) {
            auto* shortcut = new QShortcut(widget);
            shortcut->setKeys(keys);
            shortcut->setContext(Qt::WindowShortcut);
            QObject::connect(shortcut, &QShortcut::activated, widget, [widget] {
                if (widget->isWindow()) widget->close();
            });
            m_shortcuts << shortcut;
        }
        widget->installEventFilter(this);
        update();
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == m_widget && (event->type() == QEvent::Show || event->type() == QEvent::ParentChange)) update();
        return false;
    }

private:
    void update() {
        for (QShortcut* s : m_shortcuts) s->setEnabled(m_widget->isWindow());
    }

    QWidget* m_widget;
    QList<QShortcut*> m_shortcuts;
};

}  // namespace

void installCloseKeys(QWidget* widget) {
    if (widget) new CloseKeys(widget);
}

}  // namespace mantissa::ui
