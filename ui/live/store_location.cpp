// The default run store location (see store_location.h).
#include "live/store_location.h"

#include <QDir>
#include <QStandardPaths>

namespace mantissa::ui {

QString defaultStorePath() {
    // GenericDataLocation is $XDG_DATA_HOME, or ~/.local/share when it is unset.
    const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(data).filePath(QStringLiteral("mantissa/runs.sqlite"));
}

}  // namespace mantissa::ui
