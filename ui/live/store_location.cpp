// The default run store location and the store path check (see store_location.h).
#include "live/store_location.h"

#include <QFile>

#include "store/run_store.h"
#include "store/store_files.h"

namespace mantissa::ui {

QString defaultStorePath() { return QString::fromStdString(mantissa::default_store_path()); }

QString storePathProblem(const QString& path) {
    const auto why = mantissa::store::unusable_store_path(QFile::encodeName(path).toStdString());
    return why ? QString::fromStdString(*why) : QString();
}

}  // namespace mantissa::ui
