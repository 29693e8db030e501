// RunController: session, ring, recorder and timer of one run (see run_controller.h).
#include "live/run_controller.h"

#include <cmath>
#include <exception>
#include <variant>

#include <nlohmann/json.hpp>

#include "error.h"
#include "live/telemetry_ring.h"
#include "store/run_store.h"

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
        } catch (const std::exception& e) {
            recorder.reset();
            emit noticeRaised(tr("This run will not be recorded: %1").arg(text(e)));
        }
    }

    m_session = std::move(session);  // the previous, finished session goes here
    m_ring = std::move(ring);
    m_recorder = std::move(recorder);
    m_runId = runId;
    m_reportedDrops = 0;
    m_lastState = SessionState::created;
    std::vector<std::string> names;
    for (const auto& l : m_session->layers()) names.push_back(l.name);
    m_series.reset(std::move(names));
    m_series.declareOpStats(opStatsOf(m_session->layers()));
    m_series.setTextRun(experiment.dataset.kind == "text");
    for (const auto& n : m_session->notices()) emit runNoticeRaised(QString::fromStdString(n));

    try {
        m_session->post(command::SetPace{m_pace});
        if (m_pauseAt >= 0) m_session->post(command::PauseAt{m_pauseAt, false});
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

bool RunController::clearRun() {
    if (active()) return false;
    m_session.reset();
    m_ring.reset();
    m_recorder.reset();
    m_runId = -1;
    m_reportedDrops = 0;
    m_lastState = SessionState::created;
    m_series.reset({});
    return true;
}

bool RunController::active() const { return m_session && !m_finished; }

SessionState RunController::state() const { return m_session ? m_session->state() : SessionState::created; }

const std::vector<LayerInfo>& RunController::layers() const {
    static const std::vector<LayerInfo> none;
    return m_session ? m_session->layers() : none;
}

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
    const SessionState state = m_session->state();
    // The steps before a pause are in the ring before the state says paused: drain once more so
    // the views that follow stateChanged show the step the run paused at, not one a tick earlier.
    if (state != m_lastState) arrived = drainRing() || arrived;
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
