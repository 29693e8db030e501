// Overlaying a recorded run on the live charts in one call: reads run `runId` from a store into a
// RunSeries (run_loader.h, the same rows a RunViewer shows) and hands it to
// ChartsPanel::addOverlay; a run still recording is followed (a RunFollower, owned by the
// overlay, appends its new rows a few times a second and the panel redraws) until it ends.
//
// The store is opened without creating or migrating anything (StoreAccess::read): overlaying is
// reading. GUI thread only.
#pragma once

#include <QString>

#include <cstdint>
#include <memory>

#include "charts/charts_panel.h"
#include "store/run_store.h"

namespace mantissa::ui {

// "" when the run is overlaid, else one sentence (no such store or run, a store that cannot be
// read). `name` empty: the run's own name and id, "fp16-baseline (run 12)". `role`: a lesson's
// reference is drawn in the reference colour (ChartsPanel::addOverlay).
QString overlayStoredRun(ChartsPanel& panel, const QString& storePath, std::int64_t runId,
                         const QString& name = {}, OverlayRole role = OverlayRole::run);
QString overlayStoredRun(ChartsPanel& panel, std::shared_ptr<RunStore> store, std::int64_t runId,
                         const QString& name = {}, OverlayRole role = OverlayRole::run);

}  // namespace mantissa::ui
