// planLiveChange: what it takes to make "KEY=VALUE" true in a running session. The assignment uses
// the experiment file's dotted keys and is parsed by the engine's own apply_setting (as
// mantissa-cli's --set), then compared with the experiment as it stands to find what changed:
// each layer whose precision setting changed (the window applies those through its layers table,
// as a pick in the table would) and a command for everything else. "inject=LAYER" injects an
// overflow. Plain C++; the GUI's --at and any scripted change go through here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "train/session.h"

namespace mantissa::ui {

struct LiveChange {
    Experiment after;                                            // the experiment with the change made
    std::vector<std::pair<std::string, LayerPrecision>> layers;  // per-layer settings that changed
    std::vector<Command> commands;                               // the other changes, as commands
};

// `layers`: the running model's layer names. Throws mantissa::Error for a bad assignment, an
// unknown layer, or a key that cannot change during a run (the dataset, the model...).
LiveChange planLiveChange(const Experiment& current, const std::vector<std::string>& layers,
                          const std::string& assignment);

}  // namespace mantissa::ui
