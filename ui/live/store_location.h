// Where the GUI records runs by default: the run store shared with mantissa-cli,
// $XDG_DATA_HOME/mantissa/runs.sqlite (~/.local/share/mantissa/runs.sqlite when XDG_DATA_HOME is
// unset), as DESIGN.md fixes it.
#pragma once

#include <QString>

namespace mantissa::ui {

QString defaultStorePath();

}  // namespace mantissa::ui
