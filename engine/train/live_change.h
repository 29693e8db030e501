// Live changes: what it takes to make "KEY=VALUE" true in a running session, and changes
// scheduled at steps ("STEP:KEY=VALUE", the --at of both executables).
//
// plan_live_change parses the assignment with the experiment file's dotted keys (apply_setting,
// as --set does), then compares it with the experiment as it stands: each layer whose precision
// setting changed (the GUI applies those through its layers table, as a pick there would) and a
// command for everything else. "inject=LAYER" injects an overflow. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "train/session.h"

namespace mantissa {

struct LiveChange {
    Experiment after;                                            // the experiment with the change made
    std::vector<std::pair<std::string, LayerSetting>> layers;  // per-layer settings that changed
    std::vector<Command> commands;                               // the other changes, as commands
};

// `layers`: the running model's layer names. Throws mantissa::Error for a bad assignment, an
// unknown layer, or a key that cannot change during a run (the dataset, the model...).
LiveChange plan_live_change(const Experiment& current, const std::vector<std::string>& layers,
                            const std::string& assignment);

// Every command that makes the change, the layers' included, in the order a session applies them.
std::vector<Command> live_change_commands(const LiveChange& change);

struct ScheduledChange {
    std::int64_t step = 0;   // the first step the change applies to (its event's step)
    std::string assignment;  // KEY=VALUE or inject=LAYER
};

// "STEP:KEY=VALUE" -> {STEP, "KEY=VALUE"}; throws mantissa::Error naming `option` otherwise.
ScheduledChange parse_scheduled_change(const std::string& text, const std::string& option);

// The changes in the order they are made (by step, then as given), each checked against the
// experiment as the earlier ones leave it, on the layers the experiment's model will have. Throws
// mantissa::Error naming the first that cannot apply, before anything trains.
std::vector<ScheduledChange> check_scheduled_changes(const Experiment& experiment,
                                                     std::vector<ScheduledChange> changes,
                                                     const std::string& option);

// Throws mantissa::Error for the first change at a step a run of `run_steps` steps never reaches
// (it takes steps 0 to run_steps - 1), naming the change and the run's length, rather than leave
// it to be dropped without a word. After check_scheduled_changes, once the run's length is known.
void check_scheduled_steps(const std::vector<ScheduledChange>& changes, std::int64_t run_steps,
                           const std::string& option);

// Makes checked scheduled changes on a Session at their steps exactly, however fast it runs: the
// session pauses before each step that has changes (a quiet command::PauseAt, which logs no
// paused/resumed events), the changes are made while it is paused (so their events carry that
// step), and it resumes. Used by a caller that watches
// the session now and then from another thread: mantissa-cli train, and the GUI's screenshot job.
class ChangeSchedule {
public:
    // Makes a change as the caller's controls would (the GUI: through its panels, so they show
    // it); throws mantissa::Error when it cannot.
    using Apply = std::function<void(const std::string& assignment)>;

    // The changes are planned against `experiment` and posted to the session as commands.
    ChangeSchedule(std::vector<ScheduledChange> checked, Experiment experiment);
    ChangeSchedule(std::vector<ScheduledChange> checked, Apply apply);

    // What to post before start() (a fast run would be past the first step otherwise).
    std::vector<Command> first_commands() const;
    void arm(Session& session);  // posts first_commands()
    // When the session is paused at the next scheduled step: makes that step's changes, asks for
    // the next pause and resumes. True when it acted. Throws what a change throws.
    bool poll(Session& session);
    bool done() const { return m_next >= m_changes.size(); }

private:
    std::vector<ScheduledChange> m_changes;  // in step order
    std::size_t m_next = 0;
    Apply m_apply;         // empty: plan against m_current and post the commands
    Experiment m_current;  // as the changes made so far leave it (without m_apply)
};

}  // namespace mantissa
