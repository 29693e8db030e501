// ScreenshotJob: the work behind `mantissa --screenshot FILE.png [--steps N] [--during]`. It starts
// the window's experiment, waits (on the event loop, never blocking it) until the run has finished
// its N steps, or, with `during`, until the run is held once N steps are taken, while it still
// has steps to go, then redraws everything, saves a PNG of the whole main window and reports an
// exit code. The hold (RunController::holdAt) is a quiet pause of the session before step N that
// the views are not told of, so the picture shows the run training, at N steps exactly: its last
// point, the status bar's step and the count printed agree, and the run, stopped after the grab,
// records N steps. The GUI thread never waits on the training for it: it polls the hold. A lesson's
// reference (main_window.h, referenceRun) is trained at the picture's length, the only one it
// records, and the picture waits for it to be drawn. Scripted live changes (--at STEP:KEY=VALUE)
// let a screenshot show setting markers and overflows; each lands at its step exactly, on a run of
// any speed: the session pauses before that step (command::PauseAt, posted before the first step
// for the first one), the job makes the changes as the panels would, asks for the pause before
// the next action's step and resumes. Works under the offscreen platform and under Xvfb, so the
// GUI can be reviewed without a display.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/live_change.h"

namespace mantissa::ui {

class MainWindow;

class ScreenshotJob : public QObject {
    Q_OBJECT
public:
    struct Options {
        QString file;
        std::int64_t steps = 300;
        bool duringRun = false;   // hold the run (its own budget) at exactly `steps`, capture, stop it
        int timeoutSeconds = 600;
        // Live changes made before their step (0-based, so their events are at that step), as a
        // person would make them (MainWindow::applyLiveSetting), in step order as
        // check_scheduled_changes returns them. Steps the run never reaches are not made.
        std::vector<ScheduledChange> actions;
    };
    // Sets the window's experiment to the steps to run (unless duringRun), so make it after the
    // experiment is opened and before the event loop runs.
    ScreenshotJob(MainWindow* window, Options options, QObject* parent = nullptr);

    void start();

signals:
    void finished(int exitCode);  // 0: saved; 1: the run or the save failed (said on stderr)

private:
    void applyScheduled(const std::string& assignment);  // a --at change, as the panels would make it
    void applyDueActions();
    void poll();
    void capture();  // the run's data into the views, then save() once their layout has settled
    void save();
    void fail(const QString& message);
    static constexpr int settleMs = 100;

    MainWindow* m_window;
    Options m_options;
    QTimer m_poll;
    qint64 m_deadline = 0;
    ChangeSchedule m_schedule;  // m_options.actions, made through the window
    std::size_t m_applied = 0;  // --at changes made so far
    bool m_failed = false;
};

}  // namespace mantissa::ui
