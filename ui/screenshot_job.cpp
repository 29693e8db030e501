// ScreenshotJob: run, wait, grab, save (see screenshot_job.h).
#include "screenshot_job.h"

#include <QDateTime>
#include <QPixmap>

#include <cstdio>

#include "classroom/reference_run.h"
#include "live/run_controller.h"
#include "main_window.h"

namespace mantissa::ui {

ScreenshotJob::ScreenshotJob(MainWindow* window, Options options, QObject* parent)
    : QObject(parent),
      m_window(window),
      m_options(std::move(options)),
      m_schedule(m_options.actions, [this](const std::string& a) { applyScheduled(a); }) {
    m_poll.setInterval(50);
    connect(&m_poll, &QTimer::timeout, this, &ScreenshotJob::poll);
    // The run's length, set now rather than at start(): a lesson's reference (of the same length)
    // is prepared on the event loop after the window is shown, so only the one this picture
    // compares with is trained and recorded (main_window.h, referenceRun).
    if (!m_options.duringRun) {
        Experiment e = m_window->currentExperiment();
        e.train.steps = m_options.steps;
        m_window->setExperiment(e);
    }
}

void ScreenshotJob::start() {
    // The picture's step, held by the session itself: the GUI thread polls and draws a tick or more
    // behind the training thread, so a run merely watched for N steps is past N by the time the
    // window is grabbed. The controller posts the hold before the schedule's first pause, which
    // replaces it until the last change is made (applyScheduled).
    if (m_options.duringRun) m_window->controller()->holdAt(m_options.steps);
    if (!m_window->startRun(m_schedule.first_commands())) {
        fail(m_window->lastError());
        return;
    }
    m_deadline = QDateTime::currentMSecsSinceEpoch() + 1000LL * m_options.timeoutSeconds;
    // Actions follow the telemetry (every drain) and the poll, the capture check the poll.
    connect(m_window->controller(), &RunController::telemetryArrived, this, &ScreenshotJob::applyDueActions);
    m_poll.start();
}

void ScreenshotJob::applyScheduled(const std::string& assignment) {
    m_window->applyLiveSetting(assignment);
    // After the last change, the hold again: ChangeSchedule::poll posts its Resume after this, so
    // the hold is pending before the run takes another step, however fast it goes.
    if (++m_applied == m_options.actions.size() && m_options.duringRun) m_window->controller()->holdAt(m_options.steps);
}

void ScreenshotJob::applyDueActions() {
    RunController* c = m_window->controller();
    if (m_failed || !c->active()) return;
    try {
        m_schedule.poll(*c->session());
    } catch (const std::exception& e) {
        m_failed = true;
        m_poll.stop();
        c->shutdown();
        fail(QString::fromStdString(e.what()));
    }
}

void ScreenshotJob::poll() {
    RunController* c = m_window->controller();
    applyDueActions();
    if (m_failed) return;
    // During a run: once it is held at its N steps (they are all reported by then, and no step
    // follows until it is stopped after the grab).
    const bool enough = m_options.duringRun && c->held();
    // A lesson's reference still training: the picture waits for its overlay (and the store keeps
    // it whole, not cut short when the window closes).
    const bool referenceReady = !m_window->referenceRun()->training();
    if ((enough || !c->active()) && referenceReady) {
        m_poll.stop();
        capture();
        return;
    }
    if (QDateTime::currentMSecsSinceEpoch() > m_deadline) {
        m_poll.stop();
        const bool runDone = enough || !c->active();
        c->shutdown();
        fail(runDone ? tr("the lesson's reference did not finish within %1 s").arg(m_options.timeoutSeconds)
                     : tr("the run did not reach %1 steps within %2 s").arg(m_options.steps).arg(m_options.timeoutSeconds));
    }
}

void ScreenshotJob::capture() {
    RunController* c = m_window->controller();
    c->drainNow();
    if (c->state() == SessionState::failed) {
        fail(tr("the run failed: %1").arg(QString::fromStdString(c->session()->summary().error)));
        return;
    }
    m_window->refreshViews();
    // What the views arrange on the event loop after new data (the Layers dock following its
    // columns, the events' wrapped rows measured at their final width) settles first; nothing
    // here spins the loop itself (main.cpp may delete the job between two events).
    QTimer::singleShot(settleMs, this, &ScreenshotJob::save);
}

void ScreenshotJob::save() {
    RunController* c = m_window->controller();
    m_window->refreshViews();
    const QPixmap shot = m_window->grab();
    const std::int64_t shown = c->stepsDone();  // the status bar's step count in the picture
    if (m_options.duringRun) c->shutdown();  // from the hold: no step is taken after the one shown
    if (shot.isNull() || !shot.save(m_options.file, "PNG", 0)) {
        fail(tr("could not write %1").arg(m_options.file));
        return;
    }
    std::fprintf(stderr, "mantissa: saved %s (%dx%d, %lld %s)\n", qPrintable(m_options.file), shot.width(),
                 shot.height(), static_cast<long long>(shown), shown == 1 ? "step" : "steps");
    emit finished(0);
}

void ScreenshotJob::fail(const QString& message) {
    std::fprintf(stderr, "mantissa --screenshot: %s\n", qPrintable(message));
    emit finished(1);
}

}  // namespace mantissa::ui
