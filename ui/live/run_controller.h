// RunController: the GUI's side of one training run. It owns the Session (which trains on its own
// thread), the TelemetryRing it drains, the Recorder that writes the run to the store, and the
// RunSeries the views draw.
//
// Data flow (docs/architecture.md, "Threads and data flow"):
//   GUI thread --post(Command)--> session's control queue --> training thread
//   training thread --records--> TelemetryRing (lock-free, never blocks) --~30 Hz timer--> RunSeries
//   training thread --records--> Recorder --> its writer thread --> SQLite
// The GUI thread never waits on a step: it only drains what is there. The one deliberate wait is
// shutdown() (closing the window during a run), which asks the session to stop after its current
// step, joins it, and finishes the recording as `stopped`.
//
// A store that cannot be opened does not prevent training: the run goes on unrecorded and
// noticeRaised says why. A recorded run writes its checkpoints (train.checkpoint_every) to the
// folder beside its store (checkpoint_folder), as mantissa-cli train does; resumeRun() continues a
// stored run from its latest checkpoint as the same run, and startBranch() starts a new run from
// any checkpoint with changed settings (the rules of app/cli/cmd_resume.cpp); each opens and checks
// the checkpoint file once and hands the opened file to the Session. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "series/run_series.h"
#include "train/session.h"

namespace mantissa {
class RunStore;
class Recorder;
}  // namespace mantissa

namespace mantissa::ui {

class TelemetryRing;

class RunController : public QObject {
    Q_OBJECT
public:
    static constexpr int drainIntervalMs = 33;  // ~30 Hz

    explicit RunController(QObject* parent = nullptr);
    ~RunController() override;  // shuts a running session down cleanly

    // Where runs are recorded; empty: not recorded. Opened at the next start().
    void setStorePath(const QString& path);
    QString storePath() const { return m_storePath; }

    // How the current run began.
    enum class RunKind { fresh, continued, branch };

    // Builds the session (loads the dataset, builds the model) and starts it. On bad input emits
    // errorOccurred with the engine's sentence and returns false; the previous run's data stays.
    // `first` is posted before the first step (a PauseAt for a script that acts at exact steps).
    bool start(const Experiment& experiment, const std::vector<Command>& first = {});
    // Continues run `runId` of the store at `storePath` (this controller's or another) from its
    // latest checkpoint, with the experiment as it stood there, recorded as the same run: the store
    // drops what the run recorded after the checkpoint, and the series holds the run's earlier
    // steps, read from the store, before the live ones. Only a stopped, interrupted or failed run
    // with a checkpoint (checkpoint_rules.h); the checkpoint file is checked, and the session
    // built from it, before the store is changed. False, with errorOccurred's sentence, otherwise.
    bool resumeRun(const QString& storePath, std::int64_t runId, const std::vector<Command>& first = {});
    // Starts a new run from run `runId`'s checkpoint at `step` (in the store at `storePath`, where
    // the branch is recorded too, with the run as its parent and `step`): `experiment` is the
    // checkpoint's (Checkpoint::info().experiment) with a person's changes. Its steps start at
    // `step`. False, with errorOccurred's sentence, for a missing or damaged checkpoint, a changed
    // model the checkpoint does not fit, or a step budget the checkpoint has already reached.
    bool startBranch(const QString& storePath, std::int64_t runId, std::int64_t step, const Experiment& experiment,
                     const std::vector<Command>& first = {});
    void post(const Command& command);   // applied by the session before its next step
    void togglePause();
    void stop();                        // asks to stop; runFinished follows from the timer
    // While paused: one step, then paused again (StepOnce). Ignored otherwise.
    void stepOnce();

    // The pace a person chose, in steps per second (0: as fast as possible). Kept between runs:
    // start() posts it before the first step; during a run it is posted at once (SetPace).
    void setPace(double stepsPerSecond);
    double pace() const { return m_pace; }
    // A person's "pause at step N": the run pauses once N steps are taken (a PauseAt that logs its
    // paused/resumed events). -1 cancels. Kept until reached (pauseAtReached), cancelled or the run
    // ends; one set before Start is posted by start(). A session holds one pending PauseAt, so a
    // script's quiet one (the screenshot job's --at) replaces it.
    void setPauseAt(std::int64_t step);
    std::int64_t pauseAt() const { return m_pauseAt; }
    // A script's hold, for a picture of the run as it trains (the screenshot job's --during): the
    // run pauses once `step` (>= 0) steps are taken, through a quiet PauseAt (no paused/resumed
    // events), and the views are not told of that pause (no stateChanged): they go on showing the
    // run training, at that step, until it is stopped. Posted at once during a run; set before
    // Start, start() posts it before its `first` commands, so a script's own PauseAt given there
    // (a ChangeSchedule's) replaces it, and the script holds again after its last change. Like
    // setPauseAt, it is the session's one pending PauseAt. Ends with the run.
    void holdAt(std::int64_t step);
    // The run is paused at its hold (every step before it taken and reported); the views have
    // every one the live ring kept once drainNow() has run.
    bool held() const;

    // The GUI's sentence for what went wrong in opening a stored run's checkpoint: the engine's as it
    // is, and for a damaged checkpoint (DamagedCheckpointError) with what to do instead, in the GUI's
    // terms (the run browser's Branch…) where mantissa-cli names its own command.
    static QString checkpointErrorText(const std::exception& e);

    // Forgets the finished run (its session, series and telemetry): the views show nothing until
    // the next start. Refused (false) while a run is active.
    bool clearRun();
    // Stops a running session and waits for it (its current step, then the recording's flush).
    void shutdown();

    bool active() const;                // started and not yet finished
    SessionState state() const;         // as the views show it: running while held (holdAt)
    RunSeries& series() { return m_series; }
    const RunSeries& series() const { return m_series; }
    const Session* session() const { return m_session.get(); }
    Session* session() { return m_session.get(); }  // e.g. a ChangeSchedule's pauses and commands
    const std::vector<LayerInfo>& layers() const;
    std::int64_t runId() const { return m_runId; }   // in the store; -1 when not recorded
    // The store the run is recorded in: storePath() for a new run, the stored run's for a
    // continuation or a branch; empty when not recorded.
    QString runStorePath() const { return m_runStorePath; }
    RunKind runKind() const { return m_runKind; }
    // The step the session started from: 0, or a continuation's or a branch's checkpoint step.
    std::int64_t firstStep() const;
    std::int64_t droppedSteps() const;               // records the live view lost (the store has all)
    // Statistics steps whose what-if rows the live view lost (a fast run outpacing the ~30 Hz drain
    // of their small ring): the What-if panel's slider skips them; the store has them. No notice:
    // the heat map shows the latest step all the same.
    std::int64_t droppedWhatIfSteps() const;
    // Statistics steps whose block maps the live view did not get (their distributions came), and
    // steps whose block-scale views it lost whole; the store has both.
    std::int64_t droppedBlockMaps() const;
    std::int64_t droppedBlockScaleSteps() const;
    // Steps the run has taken as far as the views know (the last step drained, plus one).
    std::int64_t stepsDone() const;

    // The timer's work, public so tests can drain without waiting: moves everything in the ring
    // into the series, then notices state changes and the end of the run.
    void drainNow();

signals:
    void runStarted();
    void telemetryArrived();
    void stateChanged(mantissa::SessionState state);
    void runFinished(mantissa::SessionState state, const QString& error);
    void errorOccurred(const QString& message);  // the user must read it (a dialog)
    void noticeRaised(const QString& message);   // worth saying, not blocking (status bar, log)
    // A session's notices (the dataset fell back to spirals), the whole sentence, at start.
    void runNoticeRaised(const QString& message);
    void pauseAtReached(std::int64_t step);      // the run paused at the step setPauseAt asked for
    void pauseAtChanged(std::int64_t step);      // -1: none pending

private:
    bool openStore();
    // The store at `path`, writable: this controller's own (opened as openStore does) or another
    // (kept until the next one is asked for). nullptr after errorOccurred.
    RunStore* writableStore(const QString& path);
    // Takes over a built session and its recording (either may be null) and starts it.
    // `history` fills the reset series before the first live step (a continuation's earlier steps).
    bool launch(std::unique_ptr<Session> session, std::shared_ptr<TelemetryRing> ring,
                std::shared_ptr<Recorder> recorder, std::int64_t runId, const QString& runStorePath, RunKind kind,
                const std::vector<Command>& first, const std::function<void()>& history);
    // The series reset for the session's layers, before its first step.
    void resetSeries(const Session& session);
    bool drainRing();   // true when anything arrived
    void finishRun();

    QString m_storePath;
    std::unique_ptr<RunStore> m_store;
    std::unique_ptr<RunStore> m_otherStore;  // a continued or branched run's store, when not m_store's
    QString m_runStorePath;
    RunKind m_runKind = RunKind::fresh;
    std::unique_ptr<Session> m_session;
    std::shared_ptr<TelemetryRing> m_ring;
    std::shared_ptr<Recorder> m_recorder;
    RunSeries m_series;
    QTimer m_timer;
    SessionState m_lastState = SessionState::created;
    std::int64_t m_runId = -1;
    std::int64_t m_reportedDrops = 0;
    bool m_finished = true;  // no session, or its end has been handled
    double m_pace = 0;
    std::int64_t m_pauseAt = -1;
    std::int64_t m_holdAt = -1;  // holdAt's step, -1 when none
};

}  // namespace mantissa::ui
