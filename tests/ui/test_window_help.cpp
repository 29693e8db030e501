// What the main window offers a person finding their way (offscreen, no training): long tooltips
// wrap to a readable width (ToolTipWrapper, on widgets and on an item view's model tooltips);
// Help ▸ Keyboard shortcuts lists every menu action's keys, and docs/gui.md names each of them;
// Help ▸ Documentation opens the docs folder.
#include <QtTest>

#include <QComboBox>
#include <QDesktopServices>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QPushButton>
#include <QScrollBar>
#include <QTableView>
#include <QTableWidget>
#include <QToolTip>

#include <memory>

#include "explorer/format_explorer.h"
#include "history/run_browser.h"
#include "main_window.h"
#include "main_window_fixture.h"
#include "models/layer_table_model.h"
#include "panels/layers_panel.h"
#include "panels/run_toolbar.h"
#include "shortcuts_dialog.h"
#include "tooltip_wrap.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// The label Qt shows a tooltip in, while one is shown.
QLabel* toolTipLabel() {
    for (QWidget* w : QApplication::topLevelWidgets())
        if (w->objectName() == QLatin1String("qtooltip_label") && w->isVisible()) return qobject_cast<QLabel*>(w);
    return nullptr;
}

// Asks `widget` for its tooltip at `pos` as the mouse resting there would.
void hover(QWidget* widget, QPoint pos) {
    QHelpEvent event(QEvent::ToolTip, pos, widget->mapToGlobal(pos));
    QApplication::sendEvent(widget, &event);
}

}  // namespace

// Receives what QDesktopServices would hand the desktop.
class UrlCatcher : public QObject {
    Q_OBJECT
public:
    QList<QUrl> urls;
public slots:
    void open(const QUrl& url) { urls << url; }
};

class TestWindowHelp : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<MainWindow> makeWindow() {
        return window_test::openWindow(m_dir);
    }
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_dir.isValid());
        ToolTipWrapper::install(qApp);
        ToolTipWrapper::install(qApp);  // once only
        QCOMPARE(qApp->findChildren<ToolTipWrapper*>().size(), 1);
    }

    void cleanup() { QToolTip::hideText(); }

    void wrappedText() {
        QVERIFY(!toolTipNeedsWrapping(QStringLiteral("Hide this notice")));
        QVERIFY(!toolTipNeedsWrapping(QStringLiteral("<b>rich</b> text is Qt's to lay out, however long it is ....")));
        const QString longLine(120, QLatin1Char('x'));
        QVERIFY(toolTipNeedsWrapping(longLine));
        QVERIFY(!toolTipNeedsWrapping(QStringLiteral("short line\nanother short line")));
        const QString wrapped = wrappedToolTip(QStringLiteral("a < b & c\nnext line"));
        QVERIFY(Qt::mightBeRichText(wrapped));
        QVERIFY(wrapped.contains(QStringLiteral("a &lt; b &amp; c\nnext line")));
        QVERIFY(wrapped.contains(QStringLiteral("pre-wrap")));
        // As wide as its longest line, up to about wrapFromChars characters.
        const QFontMetrics fm(QToolTip::font());
        QVERIFY(wrappedToolTip(QStringLiteral("ab")).contains(QStringLiteral("width=%1 ").arg(fm.horizontalAdvance(QStringLiteral("ab")))));
        QVERIFY(wrappedToolTip(longLine).contains(QStringLiteral("width=%1 ").arg(fm.averageCharWidth() * ToolTipWrapper::wrapFromChars)));
    }

    // A widget's long tooltip (here the pace combo's, about 250 characters) is shown wrapped: a few
    // hundred pixels wide and several lines tall, not one line across the screen.
    void widgetToolTipWraps() {
        auto w = makeWindow();
        QComboBox* pace = w->runToolBar()->paceBox();
        const QString text = pace->toolTip();
        QVERIFY(text.size() > 200);
        const int oneLine = pace->fontMetrics().horizontalAdvance(text);
        QVERIFY(oneLine > 1000);
        hover(pace, pace->rect().center());
        QTRY_VERIFY(toolTipLabel() != nullptr);
        QLabel* label = toolTipLabel();
        QCOMPARE(label->text(), wrappedToolTip(text));
        qInfo("tooltip %d x %d px (one line would be %d px)", label->width(), label->height(), oneLine);
        const int chars = label->fontMetrics().averageCharWidth();
        QVERIFY(label->width() <= chars * (ToolTipWrapper::wrapFromChars + 6));  // a readable line...
        QVERIFY(label->width() >= chars * (ToolTipWrapper::wrapFromChars - 10));  // ...not a narrow column
        QVERIFY(label->height() >= 3 * label->fontMetrics().height());
        // A short one stays as Qt shows it.
        QToolTip::hideText();
        auto* button = new QPushButton(QStringLiteral("x"), w.get());
        button->setToolTip(QStringLiteral("Hide this notice"));
        button->show();
        hover(button, button->rect().center());
        QTRY_VERIFY(toolTipLabel() != nullptr);
        QCOMPARE(toolTipLabel()->text(), QStringLiteral("Hide this notice"));
    }

    // A model's tooltip in an item view: the Layers table's header explains each column at length.
    void itemViewToolTipWraps() {
        auto w = makeWindow();
        QTableView* view = w->layersPanel()->view();
        QHeaderView* header = view->horizontalHeader();
        const int section = LayerTableModel::LostUpdates;
        const QString text = w->layerModel()->headerData(section, Qt::Horizontal, Qt::ToolTipRole).toString();
        QVERIFY(toolTipNeedsWrapping(text));
        const QPoint at(header->sectionViewportPosition(section) + header->sectionSize(section) / 2, header->height() / 2);
        hover(header->viewport(), at);
        QTRY_VERIFY(toolTipLabel() != nullptr);
        QCOMPARE(toolTipLabel()->text(), wrappedToolTip(text));
        QVERIFY(toolTipLabel()->width() < 700);
    }

    // Every menu action with a shortcut is in the dialog, with its keys; and docs/gui.md's key table
    // names each of them, so the documentation cannot fall behind the actions either.
    void shortcutsDialogListsEveryAction() {
        auto w = makeWindow();
        ShortcutsDialog* dialog = w->showShortcuts();
        QVERIFY(dialog && dialog->isVisible());
        QTableWidget* table = dialog->table();
        QCOMPARE(table->rowCount(), static_cast<int>(dialog->entries().size()));
        QSet<QString> listed;
        for (int row = 0; row < table->rowCount(); ++row) listed.insert(table->item(row, 0)->text());
        QFile doc(qEnvironmentVariable("MANTISSA_SOURCE_DIR") + QStringLiteral("/docs/gui.md"));
        QVERIFY(doc.open(QIODevice::ReadOnly));
        const QString docs = QString::fromUtf8(doc.readAll());
        int withKeys = 0;
        for (QAction* a : w->findChildren<QAction*>()) {
            if (a->shortcut().isEmpty() || a->associatedObjects().isEmpty()) continue;
            bool inMenu = false;
            for (QObject* o : a->associatedObjects()) inMenu = inMenu || qobject_cast<QMenu*>(o);
            if (!inMenu) continue;
            ++withKeys;
            const QString keys = a->shortcut().toString(QKeySequence::NativeText);
            bool found = false;
            for (const QString& l : listed) found = found || l.split(QStringLiteral(", ")).contains(keys);
            QVERIFY2(found, qPrintable(a->text() + " " + keys));
            QVERIFY2(docs.contains(a->shortcut().toString(QKeySequence::PortableText)),
                     qPrintable("docs/gui.md does not name " + a->shortcut().toString(QKeySequence::PortableText)));
        }
        QVERIFY2(withKeys >= 14, qPrintable(QString::number(withKeys)));
        // The purpose column reads the tooltips, without the keys they end with.
        bool startRow = false;
        for (const ShortcutEntry& e : dialog->entries())
            if (e.action == QLatin1String("Start")) {
                startRow = true;
                QCOMPARE(e.menu, QStringLiteral("Run"));
                QCOMPARE(e.purpose, QStringLiteral("Start training this experiment"));
            }
        QVERIFY(startRow);
    }

    // At its default size the dialog lists the shortcuts one line each (two where the purpose is
    // longer than its column), every name whole, and all of them without scrolling.
    void shortcutsDialogRowsAreOneLine() {
        auto w = makeWindow();
        ShortcutsDialog* dialog = w->showShortcuts();
        QVERIFY(QTest::qWaitForWindowExposed(dialog));
        QTableWidget* table = dialog->table();
        const QFontMetrics fm(table->font());
        const int margin = 2 * (table->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, table) + 1);
        const int slack = 8;  // the cell's margins and the grid line
        for (int row = 0; row < table->rowCount(); ++row) {
            int lines = 1;
            for (int column = 0; column < 4; ++column) {
                const QString text = table->item(row, column)->text();
                const bool fits = table->columnWidth(column) >= fm.horizontalAdvance(text) + margin;
                if (column < 3)  // keys, action, menu: never cut short
                    QVERIFY2(fits, qPrintable(QStringLiteral("%1: %2 px for %3 px")
                                                  .arg(text)
                                                  .arg(table->columnWidth(column))
                                                  .arg(fm.horizontalAdvance(text))));
                else if (!fits)
                    lines = 2;
            }
            QVERIFY2(table->rowHeight(row) <= lines * fm.lineSpacing() + slack,
                     qPrintable(QStringLiteral("%1: %2 px for %3 line(s) of %4 px")
                                    .arg(table->item(row, 1)->text())
                                    .arg(table->rowHeight(row))
                                    .arg(lines)
                                    .arg(fm.lineSpacing())));
            QVERIFY2(!table->item(row, 1)->text().endsWith(QChar(0x2026)), qPrintable(table->item(row, 1)->text()));
        }
        QVERIFY(table->rowCount() >= 14);
        QCOMPARE(table->verticalScrollBar()->maximum(), 0);
        const int last = table->rowCount() - 1;
        QVERIFY(table->rowViewportPosition(last) + table->rowHeight(last) <= table->viewport()->height());
    }

    // The application's name once in each window's title, as the window manager shows it: Qt
    // appends the application display name, where one is set (the GUI's main sets none: the titles
    // name Mantissa), to a title that does not end with it.
    void windowTitlesNameTheAppOnce() {
        const QString displayName = QGuiApplication::applicationDisplayName() != QCoreApplication::applicationName()
                                        ? QGuiApplication::applicationDisplayName()
                                        : QString();
        const auto shown = [&displayName](const QWidget* window) {
            QString title = window->windowTitle();
            if (!displayName.isEmpty() && !title.endsWith(displayName))
                title += (title.isEmpty() ? QString() : QStringLiteral(" — ")) + displayName;
            return title;
        };
        auto w = makeWindow();
        const QList<const QWidget*> windows = {w.get(), w->showShortcuts(), w->formatExplorer(), w->runBrowser()};
        for (const QWidget* window : windows) {
            const QString title = shown(window);
            QVERIFY2(title.count(QStringLiteral("Mantissa")) == 1, qPrintable(title));
        }
    }

    void helpMenuEntries() {
        auto w = makeWindow();
        QMenu* help = nullptr;
        for (QAction* a : w->menuBar()->actions())
            if (a->menu() && a->text() == QLatin1String("&Help")) help = a->menu();
        QVERIFY(help);
        QStringList texts;
        for (QAction* a : help->actions())
            if (!a->isSeparator()) texts << a->text();
        QCOMPARE(texts, (QStringList{"&Keyboard shortcuts", "&Documentation", "&About Mantissa"}));
    }

    // Help ▸ Documentation hands the desktop the docs folder (found in the source tree here).
    void documentationOpensTheDocsFolder() {
        auto w = makeWindow();
        UrlCatcher catcher;
        QDesktopServices::setUrlHandler(QStringLiteral("file"), &catcher, "open");
        QVERIFY(w->openDocumentation());
        QDesktopServices::unsetUrlHandler(QStringLiteral("file"));
        QCOMPARE(catcher.urls.size(), 1);
        const QString folder = catcher.urls.first().toLocalFile();
        QVERIFY2(QFileInfo(folder + QStringLiteral("/gui.md")).isFile(), qPrintable(folder));
        QVERIFY2(QFileInfo(folder + QStringLiteral("/experiment.md")).isFile(), qPrintable(folder));
    }
};

QTEST_MAIN(TestWindowHelp)
#include "test_window_help.moc"
