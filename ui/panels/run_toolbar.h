// RunToolBar: the Run toolbar. Besides the window's run and file actions (start, pause, single
// step, stop, open, save) it holds the two controls that set when steps happen, for a class to
// follow a run: the pace (steps per second, or as fast as possible) and "pause at step N". Both
// work before a run (they apply from its first step) and during one; the Run menu offers the same
// (paceMenu(), and an action that focuses the step box). The toolbar only says what a person chose
// (paceChosen, pauseAtChosen); the main window passes it to the RunController. GUI thread only.
#pragma once

#include <QToolBar>

#include <cstdint>

class QActionGroup;
class QComboBox;
class QMenu;
class QSpinBox;

namespace mantissa::ui {

class RunToolBar : public QToolBar {
    Q_OBJECT
public:
    explicit RunToolBar(QWidget* parent = nullptr);
    // Lays the toolbar out: the run actions, the pace and pause-at controls, the file actions.
    void setActions(const QList<QAction*>& run, const QList<QAction*>& file);

    // The choices offered, in steps per second; 0 (as fast as possible) is the last.
    static const QList<double>& paceChoices();
    static QString paceText(double stepsPerSecond);  // "5 steps/s", "as fast as possible"

    // Shows a pace (a lesson's, which may be one the list lacks: it is added). Emits nothing.
    void setPace(double stepsPerSecond);
    double pace() const;
    // Shows the pending "pause at" step; -1 (or 0): none. Emits nothing.
    void setPauseAt(std::int64_t step);
    // Puts the keyboard focus in the step box, its number selected; false when the toolbar is hidden.
    bool focusPauseAt();

    QMenu* paceMenu() const { return m_paceMenu; }  // Run ▸ Pace, checkable, kept in step with the combo
    QComboBox* paceBox() const { return m_pace; }
    QSpinBox* pauseAtBox() const { return m_pauseAt; }

signals:
    void paceChosen(double stepsPerSecond);    // by a person: the combo or the menu
    void pauseAtChosen(std::int64_t step);     // by a person; -1: cancel

private:
    int indexOf(double stepsPerSecond);        // adds an item for a pace the list lacks
    void syncMenu();

    QComboBox* m_pace = nullptr;
    QSpinBox* m_pauseAt = nullptr;
    QMenu* m_paceMenu = nullptr;
    QActionGroup* m_paceGroup = nullptr;
    bool m_updating = false;
};

}  // namespace mantissa::ui
