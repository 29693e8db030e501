// A stored run loaded onto the live charts as an overlay (see run_overlay.h).
#include "history/run_overlay.h"

#include <QFile>
#include <QFileInfo>

#include "charts/charts_panel.h"
#include "history/run_loader.h"
#include "series/run_series.h"

namespace mantissa::ui {

QString overlayStoredRun(ChartsPanel& panel, const QString& storePath, std::int64_t runId, const QString& name,
                         OverlayRole role) {
    if (!QFileInfo::exists(storePath))
        return QObject::tr("There is no run store at %1; choose a run from the run history.").arg(storePath);
    std::shared_ptr<RunStore> store;
    try {
        store = std::make_shared<RunStore>(QFile::encodeName(storePath).toStdString(), StoreAccess::read);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return overlayStoredRun(panel, std::move(store), runId, name, role);
}

QString overlayStoredRun(ChartsPanel& panel, std::shared_ptr<RunStore> store, std::int64_t runId, const QString& name,
                         OverlayRole role) {
    if (!store) return QObject::tr("No run store is open.");
    auto series = std::make_shared<RunSeries>();
    RunCursor cursor;
    RunRow run;
    try {
        run = store->run(runId);
        loadNewRows(*store, runId, *series, cursor);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    const QString shown =
        name.isEmpty() ? QObject::tr("%1 (run %2)").arg(QString::fromStdString(run.name)).arg(runId) : name;
    RunFollower* follower = nullptr;
    if (run.status == RunStatus::running) {
        // Owned by the overlay: it goes when the overlay does. The series outlives it there.
        follower = new RunFollower(store, runId, series.get(), cursor);
        QObject::connect(follower, &RunFollower::rowsAdded, &panel, [&panel] { panel.refresh(); });
        QObject::connect(follower, &RunFollower::finished, &panel, [&panel] { panel.refresh(); });
        follower->start();
    }
    panel.addOverlay(shown, std::move(series), follower, role);
    return {};
}

}  // namespace mantissa::ui
