// ReferenceRun: the run a lesson compares itself with ("more slowly than an FP32 run"), ready in
// the store and overlaid on the live charts before the class presses Start.
//
// A lesson may name its reference (lesson.reference in docs/experiment.md): the same experiment
// with the settings it lists. prepare() looks for a completed run of exactly that experiment in
// the store (experiment_from_json of each run's config, compared with lesson_reference_experiment:
// key order and spelling do not matter); when there is none it trains one at full speed, recorded
// in the store like any run, on a session of its own, and says how far it has come. Either way it
// ends with ready(storePath, runId, label), and the window overlays that run; a later prepare() of
// the same lesson finds it and trains nothing.
//
// The reference trains beside anything else the window does (it is a separate Session, with its
// own training thread and recorder); the GUI thread only polls it on a timer. cancel() (a new file
// opened, the window closing) stops it after its current step and records it `stopped`, so it is
// trained again next time. GUI thread only.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <memory>

#include "config/experiment.h"

namespace mantissa {
class Recorder;
class RunStore;
class Session;
}  // namespace mantissa

namespace mantissa::ui {

class ReferenceRun : public QObject {
    Q_OBJECT
public:
    static constexpr int pollIntervalMs = 200;

    explicit ReferenceRun(QObject* parent = nullptr);
    ~ReferenceRun() override;  // cancels a reference still training

    // Starts finding or training the reference `lesson` names, in the store at `storePath`; does
    // nothing (and returns false) when the lesson names none. Cancels whatever it was doing.
    bool prepare(const Experiment& lesson, const QString& storePath);
    void cancel();
    bool training() const { return m_session != nullptr; }
    QString label() const { return m_label; }

signals:
    void progress(std::int64_t steps, std::int64_t totalSteps);  // while training it
    void ready(const QString& storePath, std::int64_t runId, const QString& label);
    void failed(const QString& message);  // one sentence: why there is no reference to overlay

private:
    void poll();
    // Joins the training thread and finishes the recording; the recorder's error, if any.
    QString finishTraining();

    QString m_storePath;
    QString m_label;
    std::unique_ptr<RunStore> m_store;
    std::unique_ptr<Session> m_session;
    std::shared_ptr<Recorder> m_recorder;
    QTimer m_timer;
};

// The id of a completed run in `store` whose experiment is exactly `reference`, the most recent
// when there are several; -1 when there is none. Runs whose stored configuration this build
// cannot read are passed over.
std::int64_t findCompletedRun(RunStore& store, const Experiment& reference);

}  // namespace mantissa::ui
