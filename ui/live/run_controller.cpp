// RunController: session, ring, recorder and timer of one run, new, continued or branched (see
// run_controller.h).
#include "live/run_controller.h"

#include <QFile>

#include <cmath>
#include <exception>
#include <memory>
#include <variant>

#include <nlohmann/json.hpp>

#include "error.h"
#include "history/checkpoint_rules.h"
#include "history/run_loader.h"
#include "live/telemetry_ring.h"
#include "store/run_store.h"
#include "train/checkpoint.h"
#include "weights/checkpoint_info.h"

namespace mantissa::ui {

namespace {
bool finishedState(SessionState s) {
    return s == SessionState::completed || s == SessionState::stopped || s == SessionState::failed;
}

RunStatus statusOf(SessionState s) {
    switch (s) {
    case SessionState::completed: return RunStatus::completed;
    case SessionState::failed: return RunStatus::failed;
    default: return RunStatus::stopped;
    }
}

QString text(const std::exception& e) { return QString::fromStdString(e.what()); }

// A checkpoint the store lists for `run` must be that run's (a folder changed by hand is not).
void checkOwner(const Checkpoint& checkpoint, const CheckpointRow& row, const RunRow& run) {
    const std::string& owner = checkpoint.info().run_uuid;
    if (!owner.empty() && owner != run.uuid)
        throw Error(row.file + " is a checkpoint of another run (" + owner + "), not of run " + std::to_string(run.id) +
                    " (\"" + run.name + "\"); the store's checkpoint folder was changed by hand.");
}
}  // namespace

RunController::RunController(QObject* parent) : QObject(parent) {
    m_timer.setInterval(drainIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, &RunController::drainNow);
}

RunController::~RunController() { shutdown(); }

void RunController::setStorePath(const QString& path) {
    if (path == m_storePath) return;
    m_storePath = path;
    m_store.reset();
}

bool RunController::openStore() {
    if (m_store) return true;
    try {
        auto store = std::make_unique<RunStore>(m_storePath.toStdString());
        if (store->read_only()) {
            emit noticeRaised(tr("The run store %1 can only be read, so this run will not be recorded; "
                                 "choose a writable location with --db.")
                                  .arg(m_storePath));
            return false;
        }
        m_store = std::move(store);
        return true;
    } catch (const std::exception& e) {
        emit noticeRaised(tr("This run will not be recorded: %1").arg(text(e)));
        return false;
    }
}

bool RunController::start(const Experiment& experiment, const std::vector<Command>& first) {
    if (active()) {
        emit errorOccurred(tr("A run is already in progress; stop it before starting another."));
        return false;
    }
    std::unique_ptr<Session> session;
    try {
        session = std::make_unique<Session>(experiment);
    } catch (const Error& e) {
        emit errorOccurred(text(e));
        return false;
    } catch (const std::exception& e) {
        emit errorOccurred(tr("The run could not be set up: %1").arg(text(e)));
        return false;
    }
    auto ring = std::make_shared<TelemetryRing>(session->layers().size());
    session->add_sink(ring);

    std::shared_ptr<Recorder> recorder;
    std::int64_t runId = -1;
    if (!m_storePath.isEmpty() && openStore()) {
        try {
            RunInfo info;
            info.name = experiment.name;
            info.backend = session->backend_name();
            info.device = session->device_name();
            info.config_json = experiment_to_json(experiment).dump();
            info.layers = session->layers();
            recorder = m_store->start_run(info);
            runId = recorder->run_id();
            session->add_sink(recorder);
            // Its checkpoints beside the store, named by the run's uuid (as mantissa-cli train does).
            const std::string uuid = m_store->run(runId).uuid;
            session->set_checkpoint_folder(checkpoint_folder(m_store->path(), uuid), uuid);
        } catch (const std::exception& e) {
            recorder.reset();
            runId = -1;
            emit noticeRaised(tr("This run will not be recorded: %1").arg(text(e)));
        }
    }
    return launch(std::move(session), std::move(ring), std::move(recorder), runId,
                  runId >= 0 ? m_storePath : QString(), RunKind::fresh, first, {});
}

RunStore* RunController::writableStore(const QString& path) {
    if (path.isEmpty()) {
        emit errorOccurred(tr("No run store is open, so there is no stored run to continue or branch."));
        return nullptr;
    }
    if (path == m_storePath && m_store) return m_store.get();
    try {
        // An existing store only: a continuation or a branch needs its run there.
        auto store = std::make_unique<RunStore>(QFile::encodeName(path).toStdString(), StoreAccess::read);
        if (store->read_only()) {
            emit errorOccurred(tr("The run store %1 can only be read (check its permissions), so a continued or "
                                  "branched run could not be recorded in it.")
                                   .arg(path));
            return nullptr;
        }
        if (path == m_storePath) {
            m_store = std::move(store);
            return m_store.get();
        }
        m_otherStore = std::move(store);
        return m_otherStore.get();
    } catch (const std::exception& e) {
        emit errorOccurred(text(e));
        return nullptr;
    }
}

bool RunController::resumeRun(const QString& storePath, std::int64_t runId, const std::vector<Command>& first) {
    if (active()) {
        emit errorOccurred(tr("A run is already in progress; stop it before continuing another."));
        return false;
    }
    RunStore* store = writableStore(storePath);
    if (!store) return false;
    std::unique_ptr<Session> session;
    std::shared_ptr<TelemetryRing> ring;
    std::shared_ptr<Recorder> recorder;
    try {
        const RunRow run = store->run(runId);
        const std::vector<CheckpointRow> checkpoints = store->checkpoints(runId);
        if (const QString why = resumeRefusal(run, checkpoints); !why.isEmpty()) {
            emit errorOccurred(why);
            return false;
        }
        // Everything that can refuse does so before the store drops the steps after the checkpoint.
        const CheckpointRow& from = checkpoints.back();
        // Checked whole (header, metadata, every tensor's checksum), once: the session restores
        // from this opened file.
        const auto checkpoint = std::make_shared<const Checkpoint>(from.file);
        checkOwner(*checkpoint, from, run);
        SessionOptions options;
        options.resume_from = checkpoint;
        options.parent_name = runLabel(run).toStdString();
        session = std::make_unique<Session>(checkpoint->info().experiment, options);  // restores the state
        // A checkpoint at the run's last step: the run took all its steps but died before it
        // recorded its end, which the session now records (as mantissa-cli resume does).
        ring = std::make_shared<TelemetryRing>(session->layers().size());
        session->add_sink(ring);
        recorder = store->continue_run(runId, from.step);  // refuses a run another process records
        session->add_sink(recorder);
        session->set_checkpoint_folder(checkpoint_folder(store->path(), run.uuid), run.uuid);
    } catch (const std::exception& e) {
        emit errorOccurred(checkpointErrorText(e));
        return false;
    }
    // The run's steps before the checkpoint, as the store now holds them, then the live ones.
    auto history = [this, store, runId] {
        RunCursor cursor;
        cursor.started = true;  // the series is reset for the session's layers already
        cursor.blockScales = true;
        try {
            loadNewRows(*store, runId, m_series, cursor);
        } catch (const std::exception& e) {
            emit noticeRaised(tr("The run's steps before its checkpoint could not be read for the charts (%1); the "
                                 "store still has them.")
                                  .arg(text(e)));
        }
    };
    return launch(std::move(session), std::move(ring), std::move(recorder), runId, storePath, RunKind::continued, first,
                  history);
}

bool RunController::startBranch(const QString& storePath, std::int64_t runId, std::int64_t step,
                                const Experiment& experiment, const std::vector<Command>& first) {
    if (active()) {
        emit errorOccurred(tr("A run is already in progress; stop it before starting a branch."));
        return false;
    }
    RunStore* store = writableStore(storePath);
    if (!store) return false;
    std::unique_ptr<Session> session;
    std::shared_ptr<TelemetryRing> ring;
    std::shared_ptr<Recorder> recorder;
    std::int64_t branchId = -1;
    try {
        const RunRow run = store->run(runId);
        const std::vector<CheckpointRow> checkpoints = store->checkpoints(runId);
        if (const QString why = branchRefusal(run, checkpoints); !why.isEmpty()) {
            emit errorOccurred(why);
            return false;
        }
        const CheckpointRow* from = checkpointAt(checkpoints, step);
        if (!from) {
            emit errorOccurred(tr("Run %1 (“%2”) has no checkpoint at step %3; its checkpoints are at steps %4.")
                                   .arg(run.id)
                                   .arg(QString::fromStdString(run.name))
                                   .arg(step)
                                   .arg(checkpointStepsText(checkpoints)));
            return false;
        }
        const auto checkpoint = std::make_shared<const Checkpoint>(from->file);  // checked whole, once
        checkOwner(*checkpoint, *from, run);
        SessionOptions options;
        options.resume_from = checkpoint;
        options.branch = true;
        options.parent_name = runLabel(run).toStdString();
        session = std::make_unique<Session>(experiment, options);  // a model the checkpoint does not fit throws here
        if (session->first_step() >= session->total_steps()) {
            emit errorOccurred(tr("The checkpoint is at step %1, the end of the branch's %2 steps; give it more steps "
                                  "(Experiment ▸ Steps) and start it again.")
                                   .arg(session->first_step())
                                   .arg(session->total_steps()));
            return false;
        }
        ring = std::make_shared<TelemetryRing>(session->layers().size());
        session->add_sink(ring);
        RunInfo info;
        info.name = experiment.name;
        info.backend = session->backend_name();
        info.device = session->device_name();
        info.config_json = experiment_to_json(experiment).dump();
        info.layers = session->layers();
        info.parent_uuid = run.uuid;
        info.parent_step = from->step;
        recorder = store->start_run(info);
        branchId = recorder->run_id();
        session->add_sink(recorder);
        const std::string uuid = store->run(branchId).uuid;
        session->set_checkpoint_folder(checkpoint_folder(store->path(), uuid), uuid);
    } catch (const std::exception& e) {
        if (recorder) recorder->finish(RunStatus::failed, e.what());
        emit errorOccurred(checkpointErrorText(e));
        return false;
    }
    return launch(std::move(session), std::move(ring), std::move(recorder), branchId, storePath, RunKind::branch, first,
                  {});
}

QString RunController::checkpointErrorText(const std::exception& e) {
    if (const auto* damaged = dynamic_cast<const DamagedCheckpointError*>(&e))
        return QString::fromStdString(damaged->with_advice(
            tr("branch from an earlier one with Run history ▸ Branch… (it lists the run's checkpoints)")
                .toStdString()));
    return text(e);
}

void RunController::resetSeries(const Session& session) {
    std::vector<std::string> names;
    for (const auto& l : session.layers()) names.push_back(l.name);
    m_series.reset(std::move(names));
    m_series.declareOpStats(opStatsOf(session.layers()));
    m_series.setTextRun(session.experiment().dataset.kind == "text");
}

bool RunController::launch(std::unique_ptr<Session> session, std::shared_ptr<TelemetryRing> ring,
                           std::shared_ptr<Recorder> recorder, std::int64_t runId, const QString& runStorePath,
                           RunKind kind, const std::vector<Command>& first, const std::function<void()>& history) {
    m_session = std::move(session);  // the previous, finished session goes here
    m_ring = std::move(ring);
    m_recorder = std::move(recorder);
    m_runId = runId;
    m_runStorePath = runId >= 0 ? runStorePath : QString();
    m_runKind = kind;
    m_reportedDrops = 0;
    m_lastState = SessionState::created;
    resetSeries(*m_session);
    if (history) history();
    for (const auto& n : m_session->notices()) emit runNoticeRaised(QString::fromStdString(n));

    try {
        m_session->post(command::SetPace{m_pace});
        if (m_pauseAt >= 0) m_session->post(command::PauseAt{m_pauseAt, false});
        if (m_holdAt >= 0) m_session->post(command::PauseAt{m_holdAt, true});
        for (const Command& c : first) m_session->post(c);
        m_session->start();
    } catch (const std::exception& e) {
        if (m_recorder) m_recorder->finish(RunStatus::failed, e.what());
        m_recorder.reset();
        m_session.reset();
        emit errorOccurred(tr("The run could not start: %1").arg(text(e)));
        return false;
    }
    m_finished = false;
    m_timer.start();
    emit runStarted();
    return true;
}

void RunController::post(const Command& command) {
    if (active()) m_session->post(command);
}

void RunController::togglePause() {
    if (!active()) return;
    if (m_session->state() == SessionState::paused)
        post(command::Resume{});
    else
        post(command::Pause{});
}

void RunController::stop() { post(command::Stop{}); }

void RunController::stepOnce() {
    if (active() && m_session->state() == SessionState::paused) post(command::StepOnce{});
}

void RunController::setPace(double stepsPerSecond) {
    m_pace = std::isfinite(stepsPerSecond) && stepsPerSecond > 0 ? stepsPerSecond : 0;
    post(command::SetPace{m_pace});
}

void RunController::setPauseAt(std::int64_t step) {
    const std::int64_t wanted = step >= 0 ? step : -1;
    if (wanted == m_pauseAt) return;
    m_pauseAt = wanted;
    post(command::PauseAt{m_pauseAt, false});  // -1: the pending one is dropped
    emit pauseAtChanged(m_pauseAt);
}

void RunController::holdAt(std::int64_t step) {
    if (step < 0) return;
    m_holdAt = step;
    post(command::PauseAt{m_holdAt, true});  // quiet: a script's means, not a person's pause
}

bool RunController::held() const {
    // The session's own count, not the views': the steps before a pause are all reported by then,
    // even one the live ring had no room for.
    return active() && m_holdAt >= 0 && m_session->state() == SessionState::paused &&
           m_session->summary().steps >= m_holdAt;
}

bool RunController::clearRun() {
    if (active()) return false;
    m_session.reset();
    m_ring.reset();
    m_recorder.reset();
    m_runId = -1;
    m_runStorePath.clear();
    m_runKind = RunKind::fresh;
    m_reportedDrops = 0;
    m_lastState = SessionState::created;
    m_series.reset({});
    return true;
}

bool RunController::active() const { return m_session && !m_finished; }

SessionState RunController::state() const {
    if (!m_session) return SessionState::created;
    return held() ? SessionState::running : m_session->state();
}

const std::vector<LayerInfo>& RunController::layers() const {
    static const std::vector<LayerInfo> none;
    return m_session ? m_session->layers() : none;
}

std::int64_t RunController::firstStep() const { return m_session ? m_session->first_step() : 0; }

std::int64_t RunController::stepsDone() const {
    const auto& last = m_series.lastStep();
    return last ? last->step + 1 : 0;
}

std::int64_t RunController::droppedSteps() const { return m_ring ? m_ring->droppedSteps() : 0; }
std::int64_t RunController::droppedWhatIfSteps() const { return m_ring ? m_ring->droppedWhatIf() : 0; }
std::int64_t RunController::droppedBlockMaps() const { return m_ring ? m_ring->droppedBlockMaps() : 0; }
std::int64_t RunController::droppedBlockScaleSteps() const { return m_ring ? m_ring->droppedBlockScales() : 0; }

bool RunController::drainRing() {
    if (!m_ring) return false;
    std::size_t n = m_ring->drainSteps([this](StepPacket& p) {
        m_series.addStep(p.step);
        for (const LayerSample& l : p.layers) m_series.addLayerSample(l);
    });
    // After the steps: a step's op statistics arrive after its on_step, so its step is in by now.
    n += m_ring->drainOps([this](OpPacket& p) { m_series.addOpSteps(p.ops); });
    // Then the what-if rows. Their step's layer samples (which say each layer's own format) are
    // nearly always in by now, but a packet published between the two drains can come a tick
    // before them: WhatIfSeries takes them in either order.
    n += m_ring->drainWhatIf([this](WhatIfPacket& p) { m_series.addWhatIf(p.rows); });
    // The block-scale views, with their maps or (a step that found the maps' ring full) without:
    // BlockScaleSeries takes the two in any order of steps.
    n += m_ring->drainBlockScales([this](BlockScalePacket& p) { m_series.addBlockScales(p.rows); });
    n += m_ring->drainBlockScaleSummaries(
        [this](BlockScaleSummaryPacket& p) { m_series.addBlockScaleSummaries(p.rows); });
    n += m_ring->drainNotes([this](NotePacket& p) {
        if (auto* eval = std::get_if<EvalRecord>(&p))
            m_series.addEval(*eval);
        else
            m_series.addEvent(std::get<Event>(p));
    });
    const std::int64_t drops = m_ring->droppedSteps();
    if (drops > 0 && m_reportedDrops == 0)
        emit noticeRaised(tr("The live view is skipping steps because the window fell behind the training; "
                             "every step is still recorded in the store."));
    m_reportedDrops = drops;
    return n > 0;
}

void RunController::drainNow() {
    bool arrived = drainRing();
    if (!active()) {
        if (arrived) emit telemetryArrived();
        return;
    }
    const SessionState sessionState = m_session->state();
    // The steps before a pause are in the ring before the state says paused: drain once more so
    // the views that follow stateChanged show the step the run paused at, not one a tick earlier.
    if (sessionState != m_lastState) arrived = drainRing() || arrived;
    // Held (holdAt): to the views the run is still training, as it was at the hold's step.
    const SessionState state = held() ? SessionState::running : sessionState;
    if (arrived) emit telemetryArrived();
    if (state != m_lastState) {
        m_lastState = state;
        if (state == SessionState::paused && m_pauseAt >= 0 && stepsDone() >= m_pauseAt) {
            const std::int64_t reached = m_pauseAt;
            m_pauseAt = -1;
            emit pauseAtChanged(-1);
            emit pauseAtReached(reached);
        }
        emit stateChanged(state);
    }
    if (finishedState(state)) finishRun();
}

void RunController::shutdown() {
    if (!active()) return;
    m_session->request_stop();
    finishRun();
}

void RunController::finishRun() {
    m_timer.stop();
    m_session->wait();  // the training thread has ended or ends after its current step
    m_finished = true;
    m_holdAt = -1;
    if (m_pauseAt >= 0) {  // a pause the run ended before
        m_pauseAt = -1;
        emit pauseAtChanged(-1);
    }
    if (drainRing()) emit telemetryArrived();
    const SessionState state = m_session->state();
    const RunSummary summary = m_session->summary();
    if (m_recorder) {
        try {
            m_recorder->finish(statusOf(state), summary.error);
            if (!m_recorder->error().empty())
                emit noticeRaised(tr("Recording stopped early: %1").arg(QString::fromStdString(m_recorder->error())));
        } catch (const std::exception& e) {
            emit noticeRaised(tr("The run's recording could not be completed: %1").arg(text(e)));
        }
        m_recorder.reset();
    }
    if (state != m_lastState) {
        m_lastState = state;
        emit stateChanged(state);
    }
    emit runFinished(state, QString::fromStdString(summary.error));
}

}  // namespace mantissa::ui
