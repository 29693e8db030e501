// The Run toolbar's pace, single step and "pause at step" on real runs (spirals, CPU backend,
// offscreen): the pace bounds how many steps a run takes in a given time, before and during a run;
// "pause at step N" pauses after exactly N steps, logs its pause, and clears itself; a single step
// while paused takes one step and pauses again; and on every pause the status bar, the table and
// the charts show the step the run paused at; and one clock for a run's time (training time) in
// the status bar and the events. A script's hold (the screenshot's --during) stops the run at its
// step while the window goes on showing it training.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>

#include <memory>

#include "charts/charts_panel.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "main_window_fixture.h"
#include "panels/run_status_bar.h"
#include "panels/run_toolbar.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

Experiment spirals() { return window_test::endlessSpirals("pace-test", {16, 16}, 0); }

int eventsOf(const RunSeries& s, EventKind kind) {
    int n = 0;
    for (const Event& e : s.events()) n += e.kind == kind;
    return n;
}

QString stepText(std::int64_t done) { return QStringLiteral("step %1 /").arg(QLocale().toString(static_cast<qlonglong>(done))); }

}  // namespace

class TestRunPace : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

    std::unique_ptr<MainWindow> makeWindow() {
        auto w = window_test::openWindow(m_dir, {1200, 800});
        w->setExperiment(spirals());
        return w;
    }

    static void stopAndWait(MainWindow& w) { QVERIFY(window_test::stopAndWait(w)); }

    // Waits until the window has seen the run pause (stateChanged, after which its views must
    // show the step it paused at), not merely the session.
    static void waitForPause(MainWindow& w, QSignalSpy& states) {
        const auto pausedSeen = [&] {
            for (const QList<QVariant>& args : states)
                if (args.at(0).value<SessionState>() == SessionState::paused) return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(pausedSeen(), 30000);
        QCOMPARE(w.controller()->state(), SessionState::paused);
    }

    static void choosePace(MainWindow& w, double pace) {
        QComboBox* combo = w.runToolBar()->paceBox();
        const int i = combo->findData(pace);
        QVERIFY(i >= 0);
        combo->setCurrentIndex(i);
        emit combo->activated(i);  // as a person's pick
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_dir.isValid());
    }

    // The choices a class needs, in the toolbar and in Run ▸ Pace, the same list.
    void paceChoices() {
        auto w = makeWindow();
        QComboBox* combo = w->runToolBar()->paceBox();
        QVERIFY(combo->isVisibleTo(w.get()));
        QStringList texts;
        for (int i = 0; i < combo->count(); ++i) texts << combo->itemText(i);
        QCOMPARE(texts, (QStringList{"1 step/s", "2 steps/s", "5 steps/s", "10 steps/s", "20 steps/s", "50 steps/s",
                                     "100 steps/s", "200 steps/s", "as fast as possible"}));
        QCOMPARE_EXACT(w->pace(), 0.0);
        QStringList menu;
        for (QAction* a : w->runToolBar()->paceMenu()->actions()) menu << a->text();
        QCOMPARE(menu, texts);
        // A lesson's own pace is added in order and chosen.
        Experiment e = spirals();
        e.lesson.pace = 3;
        w->setExperiment(e);
        QCOMPARE(combo->currentText(), QStringLiteral("3 steps/s"));
        QCOMPARE(combo->currentIndex(), 2);
        QCOMPARE(w->pace(), 3.0);
        QVERIFY(w->runToolBar()->paceMenu()->actions().at(2)->isChecked());
        QCOMPARE(w->currentExperiment().lesson.pace, 3.0);  // and a save keeps it
    }

    // A pace chosen before Start holds from the first step; one chosen during the run applies at once.
    void paceBeforeAndDuringARun() {
        auto w = makeWindow();
        choosePace(*w, 10);
        QCOMPARE(w->controller()->pace(), 10.0);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() >= 5, 20000);
        QTest::qWait(500);
        c->drainNow();
        // At 10 steps a second a run cannot take more than one step per 100 ms since it started
        // (plus the first, which does not wait).
        const double seconds = clock.elapsed() / 1000.0;
        QVERIFY2(c->stepsDone() <= 10 * seconds + 2,
                 qPrintable(QStringLiteral("%1 steps in %2 s at 10 steps/s").arg(c->stepsDone()).arg(seconds)));
        // As fast as possible, from the menu, during the run: hundreds of steps follow.
        QAction* fastest = w->runToolBar()->paceMenu()->actions().constLast();
        QCOMPARE(fastest->text(), QStringLiteral("as fast as possible"));
        fastest->trigger();
        QCOMPARE_EXACT(w->runToolBar()->paceBox()->currentData().toDouble(), 0.0);
        const std::int64_t before = c->stepsDone();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() >= before + 300, 30000);
        stopAndWait(*w);
    }

    // One clock for a run's time wherever it is shown: the engine's training time (pauses and a
    // pace's waits left out, the final evaluation and checkpoint in). The status bar says so
    // ("training time"), agrees with the run's `finished` event to the second, and a paced run's
    // time left, a wall-clock forecast, says that it is one.
    void oneClockForARunsTime() {
        auto w = makeWindow();
        Experiment e = spirals();
        e.dataset.samples = 20000;  // a final evaluation that takes a moment
        e.train.steps = 60;
        e.train.eval_every = 30;
        w->setExperiment(e);
        choosePace(*w, 20);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() >= 20, 20000);
        w->refreshViews();
        RunStatusBar* status = w->findChild<RunStatusBar*>();
        QVERIFY(status);
        const QString running = status->elapsedLabel()->text();
        QVERIFY2(running.startsWith(QStringLiteral("training time ")), qPrintable(running));
        QVERIFY2(status->remainingLabel()->text().contains(QStringLiteral("wall clock")),
                 qPrintable(status->remainingLabel()->text()));
        // Paced at 20 steps/s the wall clock ran about a second; training took far less.
        QVERIFY(clock.elapsed() >= 900);
        QTRY_VERIFY_WITH_TIMEOUT(!c->active(), 30000);
        w->refreshViews();
        // The run's training time: the last step's clock (config/throughput.h), as `show` gives it,
        // not the `finished` event's, which the final evaluation comes before.
        const auto& lastStep = c->series().lastStep();
        QVERIFY(lastStep);
        QCOMPARE(c->session()->summary().elapsed_s, lastStep->time_s);
        QCOMPARE(status->elapsedLabel()->text(), QStringLiteral("training time ") + formatDuration(lastStep->time_s));
    }

    // "Pause at step" set before Start: the run pauses after exactly that many steps, logs the
    // pause as a person's, and the box clears itself; every view shows the step it paused at.
    // Then single steps while paused, by the action and by its key.
    void pauseAtThenSingleSteps() {
        auto w = makeWindow();
        QSpinBox* box = w->runToolBar()->pauseAtBox();
        QVERIFY(box->isVisibleTo(w.get()));
        QVERIFY(!w->stepAction()->isEnabled());
        box->setValue(40);  // as Enter in the box
        QCOMPARE(w->controller()->pauseAt(), std::int64_t{40});
        QSignalSpy states(w->controller(), &RunController::stateChanged);
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        waitForPause(*w, states);
        QCOMPARE(c->stepsDone(), std::int64_t{40});  // the views have the step it paused at
        QCOMPARE(c->series().stepCount(), std::int64_t{40});
        QVERIFY2(window_test::statusStep(*w).startsWith(stepText(40)), qPrintable(window_test::statusStep(*w)));
        QVERIFY(w->statusBar()->currentMessage().contains(QStringLiteral("Paused after 40 steps")));
        QCOMPARE(w->chartsPanel()->lossChart()->graph(0)->data()->size() > 0, true);
        QCOMPARE(box->value(), 0);  // reached: cleared
        QCOMPARE(c->pauseAt(), std::int64_t{-1});
        QCOMPARE(eventsOf(c->series(), EventKind::paused), 1);  // a person's pause is logged

        // One step, by the action: 41, paused again, views up to date, nothing more logged.
        QVERIFY(w->stepAction()->isEnabled());
        w->stepAction()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() == 41 && c->state() == SessionState::paused, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(window_test::statusStep(*w).startsWith(stepText(41)), 5000);
        QTest::qWait(300);
        c->drainNow();
        QCOMPARE(c->stepsDone(), std::int64_t{41});
        // And by its key, N.
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->activateWindow();
        QTest::keyClick(w.get(), Qt::Key_N);
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() == 42, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(window_test::statusStep(*w).startsWith(stepText(42)), 5000);
        QCOMPARE(eventsOf(c->series(), EventKind::paused), 1);
        QCOMPARE(eventsOf(c->series(), EventKind::resumed), 0);

        c->togglePause();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() > 60, 20000);
        QVERIFY(!w->stepAction()->isEnabled());
        QCOMPARE(eventsOf(c->series(), EventKind::resumed), 1);
        stopAndWait(*w);
    }

    // During a run: a step ahead pauses there; one already taken is refused with a sentence, and
    // 0 cancels a pending one.
    void pauseAtDuringARun() {
        auto w = makeWindow();
        w->setPace(50);  // slow enough to set a step ahead of the run
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() >= 5, 20000);
        QSpinBox* box = w->runToolBar()->pauseAtBox();
        box->setValue(2);  // already taken
        QCOMPARE(c->pauseAt(), std::int64_t{-1});
        QCOMPARE(box->value(), 0);
        QVERIFY2(w->statusBar()->currentMessage().contains(QStringLiteral("already taken")),
                 qPrintable(w->statusBar()->currentMessage()));
        // Cancelled before it is reached: the run goes past it.
        const std::int64_t cancelled = c->stepsDone() + 40;
        box->setValue(static_cast<int>(cancelled));
        QCOMPARE(c->pauseAt(), cancelled);
        box->setValue(0);
        QCOMPARE(c->pauseAt(), std::int64_t{-1});
        // A step ahead: the run pauses after exactly that many.
        const std::int64_t target = c->stepsDone() + 20;
        QSignalSpy states(c, &RunController::stateChanged);
        box->setValue(static_cast<int>(target));
        waitForPause(*w, states);
        QCOMPARE(c->stepsDone(), target);
        QCOMPARE(box->value(), 0);
        QVERIFY(c->stepsDone() < cancelled);
        w->setPace(0);
        c->togglePause();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() > cancelled + 10, 20000);
        QCOMPARE(eventsOf(c->series(), EventKind::paused), 1);  // the cancelled one never paused it
        stopAndWait(*w);
    }

    // A manual pause (Space) also brings every view to the step the run paused at.
    void manualPauseShowsTheStepItPausedAt() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->stepsDone() >= 30, 20000);
        QSignalSpy states(c, &RunController::stateChanged);
        c->togglePause();
        waitForPause(*w, states);
        const std::int64_t at = c->stepsDone();
        QVERIFY2(window_test::statusStep(*w).startsWith(stepText(at)), qPrintable(window_test::statusStep(*w) + " vs " + stepText(at)));
        // Nothing arrives later that the views missed: the session took no step after the pause.
        QTest::qWait(300);
        c->drainNow();
        QCOMPARE(c->stepsDone(), at);
        QCOMPARE(c->session()->summary().steps, at);
        stopAndWait(*w);
    }

    // A script's hold (RunController::holdAt, the screenshot job's --during): the run pauses after
    // exactly N steps, a fast run included, logs nothing, and the window keeps showing it training
    // at step N (no stateChanged, Step once off, no "Paused" message) until it is stopped there.
    void holdShowsTheRunTrainingAtItsStep() {
        auto w = makeWindow();
        RunController* c = w->controller();
        c->holdAt(40);  // before Start, as the job sets it: posted before the first step
        QSignalSpy states(c, &RunController::stateChanged);
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(c->held(), 30000);
        QCOMPARE(c->session()->summary().steps, std::int64_t{40});
        c->drainNow();
        QTest::qWait(300);  // the timer's drains too: none of them tells the views of the pause
        c->drainNow();
        w->refreshViews();
        QCOMPARE(c->stepsDone(), std::int64_t{40});
        QVERIFY2(window_test::statusStep(*w).startsWith(stepText(40)), qPrintable(window_test::statusStep(*w)));
        for (const QList<QVariant>& args : states) QVERIFY(args.at(0).value<SessionState>() != SessionState::paused);
        QVERIFY(!w->stepAction()->isEnabled());
        QVERIFY2(!w->statusBar()->currentMessage().contains(QStringLiteral("Paused")),
                 qPrintable(w->statusBar()->currentMessage()));
        QCOMPARE(w->runToolBar()->pauseAtBox()->value(), 0);  // not a person's "pause at step"
        QCOMPARE(eventsOf(c->series(), EventKind::paused), 0);
        c->shutdown();
        QCOMPARE(c->state(), SessionState::stopped);
        QCOMPARE(c->session()->summary().steps, std::int64_t{40});  // stopped where it was held
        QVERIFY(!c->held());
    }

    // Run ▸ Pause at step… (Ctrl+B) puts the focus in the toolbar's box.
    void pauseAtActionFocusesTheBox() {
        auto w = makeWindow();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->activateWindow();
        QCOMPARE(w->pauseAtAction()->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_B));
        w->pauseAtAction()->trigger();
        QTRY_VERIFY(w->runToolBar()->pauseAtBox()->hasFocus());
    }
};

QTEST_MAIN(TestRunPace)
#include "test_run_pace.moc"
