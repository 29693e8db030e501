// The default run store location (see store_location.h).
#include "live/store_location.h"

#include "store/run_store.h"

namespace mantissa::ui {

QString defaultStorePath() { return QString::fromStdString(mantissa::default_store_path()); }

}  // namespace mantissa::ui
