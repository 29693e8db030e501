// ShortcutsDialog: Help ▸ Keyboard shortcuts. Lists every menu action that has a shortcut (menu,
// action, keys, what it does), read from the menu bar when the dialog is made, so the list cannot
// drift from the actions. GUI thread only.
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

class QMenuBar;
class QTableWidget;

namespace mantissa::ui {

struct ShortcutEntry {
    QString menu;      // "Run", or "Run ▸ Pace" for a submenu
    QString action;    // the action's text without its mnemonic or a trailing "…" ("Start", "Open")
    QString keys;      // in the platform's notation, several separated by ", "
    QString purpose;   // the action's tooltip without a trailing "(keys)"
    bool singleKey = false;  // a key without Ctrl, Alt or Meta: typing in a text field takes it first
};

// Every action with a shortcut in `bar`'s menus (and their submenus), in menu order.
QList<ShortcutEntry> collectShortcuts(const QMenuBar* bar);

class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    explicit ShortcutsDialog(const QMenuBar* bar, QWidget* parent = nullptr);
    const QList<ShortcutEntry>& entries() const { return m_entries; }
    QTableWidget* table() const { return m_table; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    QList<ShortcutEntry> m_entries;
    QTableWidget* m_table = nullptr;
};

}  // namespace mantissa::ui
