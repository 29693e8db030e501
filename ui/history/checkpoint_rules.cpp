// What a stored run's checkpoints allow, and why not (see checkpoint_rules.h).
#include "history/checkpoint_rules.h"

#include <QAction>
#include <QCoreApplication>
#include <QLocale>
#include <QMenu>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("CheckpointRules", text); }

QString name(const RunRow& run) { return QString::fromStdString(run.name); }

QString stepText(std::int64_t step) { return QLocale().toString(static_cast<qlonglong>(step)); }

}  // namespace

QString runLabel(const RunRow& run) {
    return tr("run %1 (“%2”)").arg(run.id).arg(name(run));
}

QString resumeRefusal(const RunRow& run, const std::vector<CheckpointRow>& checkpoints) {
    switch (run.status) {
    case RunStatus::running:  // the store reports a run whose recording process died as interrupted
        if (run.pid > 0)
            return tr("Run %1 (“%2”) is still being recorded by process %3 on %4; stop it before continuing it "
                      "from a checkpoint.")
                .arg(run.id)
                .arg(name(run))
                .arg(run.pid)
                .arg(QString::fromStdString(run.host));
        return tr("Run %1 (“%2”) is still being recorded; stop it before continuing it from a checkpoint.")
            .arg(run.id)
            .arg(name(run));
    case RunStatus::completed:
        return tr("Run %1 (“%2”) completed its steps, so nothing is left to continue; to train it further, branch it "
                  "(Branch…) with more steps.")
            .arg(run.id)
            .arg(name(run));
    default: break;
    }
    if (checkpoints.empty())
        return tr("Run %1 (“%2”) has no checkpoint to continue from: it stopped before its first one, or was "
                  "recorded before Mantissa kept them (train.checkpoint_every).")
            .arg(run.id)
            .arg(name(run));
    return {};
}

QString branchRefusal(const RunRow& run, const std::vector<CheckpointRow>& checkpoints) {
    if (checkpoints.empty())
        return tr("Run %1 (“%2”) has no checkpoint to branch from: it stopped before its first one, or was recorded "
                  "before Mantissa kept them (train.checkpoint_every).")
            .arg(run.id)
            .arg(name(run));
    return {};
}

const CheckpointRow* checkpointAt(const std::vector<CheckpointRow>& checkpoints, std::int64_t step) {
    const auto it = std::find_if(checkpoints.begin(), checkpoints.end(),
                                 [&](const CheckpointRow& c) { return c.step == step; });
    return it == checkpoints.end() ? nullptr : &*it;
}

const CheckpointRow* checkpointAtOrBefore(const std::vector<CheckpointRow>& checkpoints, double step) {
    const CheckpointRow* best = nullptr;
    if (!std::isfinite(step)) return best;
    for (const CheckpointRow& c : checkpoints)  // by step, as the store lists them; not assumed
        if (static_cast<double>(c.step) <= step && (!best || c.step > best->step)) best = &c;
    return best;
}

QString checkpointStepsText(const std::vector<CheckpointRow>& checkpoints) {
    QString s;
    for (std::size_t i = 0; i < checkpoints.size(); ++i) {
        if (i > 0) s += i + 1 == checkpoints.size() ? tr(" and ") : QStringLiteral(", ");
        s += stepText(checkpoints[i].step);
    }
    return s;
}

QString branchedFromText(const RunRow& run, const std::vector<RunRow>& runs) {
    if (run.parent_uuid.empty() || !run.parent_step) return {};
    const auto parent =
        std::find_if(runs.begin(), runs.end(), [&](const RunRow& r) { return r.uuid == run.parent_uuid; });
    if (parent == runs.end())
        return tr("Branched from a run of another store (%1…) at step %2")
            .arg(QString::fromStdString(run.parent_uuid.substr(0, 8)), stepText(*run.parent_step));
    return tr("Branched from run %1 (“%2”) at step %3").arg(parent->id).arg(name(*parent), stepText(*run.parent_step));
}

void addBranchMenuEntry(QMenu& menu, double step, const std::vector<CheckpointRow>& checkpoints,
                        std::function<void(std::int64_t)> branch) {
    const std::int64_t at = std::isfinite(step) ? std::max<std::int64_t>(0, std::llround(std::floor(step))) : 0;
    const CheckpointRow* from = checkpointAtOrBefore(checkpoints, static_cast<double>(at));
    if (!from) {
        QAction* none =
            menu.addAction(checkpoints.empty() ? tr("Branch: this run has no checkpoints")
                                               : tr("Branch: no checkpoint at or before step %1 (the first is at %2)")
                                                     .arg(stepText(at), stepText(checkpoints.front().step)));
        none->setEnabled(false);
        return;
    }
    QAction* a = menu.addAction(
        tr("Branch from the checkpoint at step ≤ %1 (step %2)…").arg(stepText(at), stepText(from->step)));
    a->setToolTip(tr("Start a new run from this run's checkpoint at step %1, with settings you change first: its "
                     "experiment goes into the main window's panels, and Start trains the branch.")
                      .arg(stepText(from->step)));
    const std::int64_t chosen = from->step;
    QObject::connect(a, &QAction::triggered, &menu, [branch = std::move(branch), chosen] { branch(chosen); });
}

}  // namespace mantissa::ui
