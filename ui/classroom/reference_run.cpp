// ReferenceRun: a lesson's reference found in the store or trained at full speed (see reference_run.h).
#include "classroom/reference_run.h"

#include <exception>

#include <nlohmann/json.hpp>

#include "error.h"
#include "store/run_store.h"
#include "train/session.h"

namespace mantissa::ui {

namespace {

QString text(const std::exception& e) { return QString::fromStdString(e.what()); }

RunStatus statusOf(SessionState s) {
    switch (s) {
    case SessionState::completed: return RunStatus::completed;
    case SessionState::failed: return RunStatus::failed;
    default: return RunStatus::stopped;
    }
}

bool finished(SessionState s) {
    return s == SessionState::completed || s == SessionState::stopped || s == SessionState::failed;
}

}  // namespace

std::int64_t findCompletedRun(RunStore& store, const Experiment& reference) {
    std::int64_t found = -1;
    for (const RunRow& row : store.list_runs()) {
        if (row.status != RunStatus::completed) continue;
        const auto config = nlohmann::json::parse(row.config_json, nullptr, false);
        if (config.is_discarded()) continue;
        try {
            if (experiment_from_json(config) == reference && row.id > found) found = row.id;
        } catch (const std::exception&) {
            // A configuration this build cannot read (an older or hand-edited one) is not it.
        }
    }
    return found;
}

ReferenceRun::ReferenceRun(QObject* parent) : QObject(parent) {
    m_timer.setInterval(pollIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, &ReferenceRun::poll);
}

ReferenceRun::~ReferenceRun() { cancel(); }

bool ReferenceRun::prepare(const Experiment& lesson, const QString& storePath) {
    cancel();
    if (!lesson.lesson.reference) return false;
    m_label = QString::fromStdString(lesson.lesson.reference->name);
    m_storePath = storePath;
    if (storePath.isEmpty()) {
        emit failed(tr("The lesson's reference (%1) cannot be overlaid: runs are not being recorded.").arg(m_label));
        return true;
    }
    try {
        const Experiment reference = lesson_reference_experiment(lesson);
        m_store = std::make_unique<RunStore>(storePath.toStdString());
        if (const std::int64_t id = findCompletedRun(*m_store, reference); id >= 0) {
            m_store.reset();
            emit ready(m_storePath, id, m_label);
            return true;
        }
        if (m_store->read_only())
            throw Error("the run store " + storePath.toStdString() +
                        " can only be read, so the reference cannot be trained and recorded there.");
        auto session = std::make_unique<Session>(reference);
        RunInfo info;
        info.name = reference.name;
        info.backend = session->backend_name();
        info.device = session->device_name();
        info.config_json = experiment_to_json(reference).dump();
        info.layers = session->layers();
        m_recorder = m_store->start_run(info);
        session->add_sink(m_recorder);
        session->start();  // no pace: a reference trains as fast as the machine goes
        m_session = std::move(session);
        emit progress(0, m_session->total_steps());
        m_timer.start();
    } catch (const std::exception& e) {
        m_recorder.reset();
        m_session.reset();
        m_store.reset();
        emit failed(tr("The lesson's reference (%1) cannot be overlaid: %2").arg(m_label, text(e)));
    }
    return true;
}

void ReferenceRun::cancel() {
    m_timer.stop();
    if (!m_session) return;
    m_session->request_stop();
    finishTraining();  // records it `stopped`: it is trained again next time
}

void ReferenceRun::poll() {
    if (!m_session) return;
    const SessionState state = m_session->state();
    if (!finished(state)) {
        emit progress(m_session->summary().steps, m_session->total_steps());
        return;
    }
    const std::int64_t runId = m_recorder ? m_recorder->run_id() : -1;
    const QString error = QString::fromStdString(m_session->summary().error);
    const QString recordingError = finishTraining();
    if (state != SessionState::completed)
        emit failed(tr("The lesson's reference (%1) did not finish: %2")
                        .arg(m_label, error.isEmpty() ? tr("it was stopped") : error));
    else if (!recordingError.isEmpty())
        emit failed(tr("The lesson's reference (%1) could not be recorded: %2").arg(m_label, recordingError));
    else
        emit ready(m_storePath, runId, m_label);
}

QString ReferenceRun::finishTraining() {
    m_timer.stop();
    QString error;
    if (m_session) {
        m_session->wait();
        if (m_recorder) {
            try {
                m_recorder->finish(statusOf(m_session->state()), m_session->summary().error);
                error = QString::fromStdString(m_recorder->error());
            } catch (const std::exception& e) {
                error = text(e);
            }
        }
    }
    m_recorder.reset();
    m_session.reset();
    m_store.reset();
    return error;
}

}  // namespace mantissa::ui
