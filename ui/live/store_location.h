// Where the GUI records runs by default: the run store shared with mantissa-cli,
// $XDG_DATA_HOME/mantissa/runs.sqlite (~/.local/share/mantissa/runs.sqlite when XDG_DATA_HOME is
// unset or relative), as docs/schema.md fixes it; and the check a store path given on the command line passes
// before the window opens.
#pragma once

#include <QString>

namespace mantissa::ui {

QString defaultStorePath();

// Why `path` cannot be a run store (a FIFO, a device, a link loop, a name too long: the engine's
// sentence, store/store_files.h); empty when it is a regular file or absent. Looks with stat()
// only, so it is safe while the process holds connections to the store.
QString storePathProblem(const QString& path);

}  // namespace mantissa::ui
