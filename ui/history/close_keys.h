// Esc and the platform's Close keys (Ctrl+W, Ctrl+F4: QKeySequence::Close) close the history's
// windows (the run browser, a run's window, a comparison), as they close a document or a dialog.
// The shortcuts are window-scoped and live only while the widget is a window of its own: embedded
// in another window (a dock, a tab) it leaves those keys to its host.
//
// GUI thread only.
#pragma once

class QWidget;

namespace mantissa::ui {

// Installs the shortcuts on `widget` (owned by it).
void installCloseKeys(QWidget* widget);

}  // namespace mantissa::ui
