// What a stored run's checkpoints allow, in one place for the run browser, the charts' menus and
// the RunController: a continuation (the same run, from its latest checkpoint; only a stopped,
// interrupted or failed run) and a branch (a new run from any checkpoint), with the sentence that
// says why not. The rules are mantissa-cli resume's (app/cli/cmd_resume.cpp), so the window and
// the command line refuse the same runs with the same reasons; the store refuses again on its own
// (RunStore::continue_run) what only it can know, a run still being recorded.
//
// GUI thread only (the menu helper); the rest is plain functions of store rows.
#pragma once

#include <QString>

#include <cstdint>
#include <functional>
#include <vector>

#include "store/run_store.h"

class QMenu;

namespace mantissa::ui {

// "run 12 (“fp16-dynamic”)", as the sentences below name a run.
QString runLabel(const RunRow& run);

// "" when `run` can be continued from its latest checkpoint, else why not, one sentence: it is
// still being recorded (by the process and host the store names, as RunStore::continue_run says),
// it completed its steps (branch it with more steps instead), it has no checkpoint.
QString resumeRefusal(const RunRow& run, const std::vector<CheckpointRow>& checkpoints);
// "" when a branch can start from one of the run's checkpoints, else why not (it has none).
QString branchRefusal(const RunRow& run, const std::vector<CheckpointRow>& checkpoints);

// The checkpoint at `step`, or nullptr.
const CheckpointRow* checkpointAt(const std::vector<CheckpointRow>& checkpoints, std::int64_t step);
// The newest checkpoint at or before `step` (the one a branch from a chart's step starts from), or
// nullptr when every checkpoint is later.
const CheckpointRow* checkpointAtOrBefore(const std::vector<CheckpointRow>& checkpoints, double step);

// "100, 200 and 300": the steps of the checkpoints, for sentences.
QString checkpointStepsText(const std::vector<CheckpointRow>& checkpoints);
// "Branched from run 12 (“base”) at step 500", or "" for a run that is not a branch. The parent is
// looked up among `runs` by its uuid; one in another store is named by the start of its uuid.
QString branchedFromText(const RunRow& run, const std::vector<RunRow>& runs);

// Adds the chart menu's "Branch from the checkpoint at step ≤ N…" for the step under the cursor:
// enabled when a checkpoint is at or before it, calling `branch` with that checkpoint's step;
// otherwise disabled, its text saying there is none that early.
void addBranchMenuEntry(QMenu& menu, double step, const std::vector<CheckpointRow>& checkpoints,
                        std::function<void(std::int64_t checkpointStep)> branch);

}  // namespace mantissa::ui
