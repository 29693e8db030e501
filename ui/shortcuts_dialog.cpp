// ShortcutsDialog: the shortcuts of the window's menu actions (see shortcuts_dialog.h).
#include "shortcuts_dialog.h"

#include <algorithm>

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QScreen>
#include <QTableWidget>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {
QString plainText(QString text) {
    static const QRegularExpression mnemonic(QStringLiteral("&(?!&)"));
    return text.remove(mnemonic).replace(QStringLiteral("&&"), QStringLiteral("&"));
}

// An action's name in the table: without its mnemonic, and without the "…" a menu puts after an
// entry that opens a window (in a table it reads as text cut short).
QString actionName(const QAction* a) {
    QString text = plainText(a->text());
    if (text.endsWith(QChar(0x2026)))
        text.chop(1);
    else if (text.endsWith(QStringLiteral("...")))
        text.chop(3);
    return text;
}

void collect(const QMenu* menu, const QString& path, QList<ShortcutEntry>& out) {
    for (QAction* a : menu->actions()) {
        if (a->isSeparator()) continue;
        if (a->menu()) {
            collect(a->menu(), path + QStringLiteral(" ▸ ") + plainText(a->menu()->title()), out);
            continue;
        }
        const QList<QKeySequence> keys = a->shortcuts();
        if (keys.isEmpty()) continue;
        QStringList texts;
        for (const QKeySequence& k : keys) texts << k.toString(QKeySequence::NativeText);
        const QString joined = texts.join(QStringLiteral(", "));
        QString purpose = a->toolTip();
        // Tooltips end with their keys in parentheses ("... (Ctrl+R)"); the table has a column for them.
        const QString suffix = QStringLiteral(" (") + keys.first().toString(QKeySequence::NativeText) + QLatin1Char(')');
        if (purpose.endsWith(suffix)) purpose.chop(suffix.size());
        if (purpose == plainText(a->text())) purpose.clear();  // Qt's default tooltip: the text again
        const Qt::KeyboardModifiers mods = keys.first()[0].keyboardModifiers();
        const bool single = !(mods & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier));
        out.append({path, actionName(a), joined, purpose, single});
    }
}
}  // namespace

QList<ShortcutEntry> collectShortcuts(const QMenuBar* bar) {
    QList<ShortcutEntry> out;
    if (!bar) return out;
    for (QAction* top : bar->actions())
        if (top->menu()) collect(top->menu(), plainText(top->menu()->title()), out);
    return out;
}

ShortcutsDialog::ShortcutsDialog(const QMenuBar* bar, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Keyboard shortcuts — Mantissa"));
    m_entries = collectShortcuts(bar);
    m_table = new QTableWidget(static_cast<int>(m_entries.size()), 4, this);
    m_table->setObjectName(QStringLiteral("shortcutsTable"));
    m_table->setHorizontalHeaderLabels({tr("Keys"), tr("Action"), tr("Menu"), tr("What it does")});
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(true);
    m_table->setAlternatingRowColors(true);
    for (int row = 0; row < m_entries.size(); ++row) {
        const ShortcutEntry& e = m_entries[row];
        const QString cells[] = {e.keys, e.action, e.menu, e.purpose};
        for (int column = 0; column < 4; ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            item->setToolTip(cells[column]);
            m_table->setItem(row, column, item);
        }
    }
    QHeaderView* header = m_table->horizontalHeader();
    for (int column = 0; column < 3; ++column) header->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(3, QHeaderView::Stretch);
    // Rows follow the columns: sized once here, they would be measured against the stretched
    // column's width before the dialog has one, and come out several lines tall.
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    QStringList single;
    for (const ShortcutEntry& e : m_entries)
        if (e.singleKey) single << e.keys;
    QString text = tr("On the charts: the wheel zooms, dragging pans, hovering shows the values at a step.");
    if (!single.isEmpty())
        text.prepend(tr("Single keys (%1) act when the keyboard focus is not in a text field. ")
                         .arg(single.join(QStringLiteral(", "))));
    auto* note = new QLabel(text, this);
    note->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_table, 1);
    layout->addWidget(note);
    layout->addWidget(buttons);
    resize(820, 520);
}

void ShortcutsDialog::showEvent(QShowEvent* event) {
    // Laid out now, before the window appears: the rows have their heights for the real column
    // widths. Taller where they need it, so every shortcut shows without scrolling, up to the screen.
    m_table->resizeRowsToContents();
    const int missing = m_table->verticalHeader()->length() - m_table->viewport()->height();
    if (missing > 0) {
        int tallest = height() + missing;
        if (const QScreen* s = screen()) tallest = std::min(tallest, s->availableGeometry().height() * 9 / 10);
        if (tallest > height()) resize(width(), tallest);
    }
    QDialog::showEvent(event);
}

}  // namespace mantissa::ui
