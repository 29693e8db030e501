// Where Mantissa's own files are when the window needs them: the default experiment (the one
// ./mantissa.sh run opens, shown when the window starts with nothing else to show) and the
// documentation (Help ▸ Documentation). Looked for beside the executable as installed
// (bin/mantissa, share/mantissa/experiments/, share/doc/mantissa/), then in the source tree the
// executable was built from (a build folder's executable), then in the system's data folders
// (XDG_DATA_DIRS). GUI thread or any other: nothing here holds state.
#pragma once

#include <QString>

namespace mantissa::ui {

QString findDefaultExperiment();  // the path of default.json, or empty when there is none
QString findDocumentation();      // the folder holding the docs (gui.md, experiment.md, ...), or empty

}  // namespace mantissa::ui
