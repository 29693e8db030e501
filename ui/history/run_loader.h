// Loading a recorded run from the store into a RunSeries, and following one that another process
// (mantissa-cli train, or this GUI's own RunController) is still recording.
//
// The loader feeds the stored rows through RunSeries's add* in the order the live views see them
// (a step, then its layer rows; evaluations and events by step), so a reopened run's charts are
// the ones it showed live. A RunCursor remembers how far a series has read: the next load asks the
// store only for rows from there on (from_step), so a poll of a long run costs what is new, not
// the whole run.
//
// GUI thread only (RunStore's connection belongs to the thread that opened it).
#pragma once

#include <QObject>
#include <QTimer>

#include <cstdint>
#include <memory>

#include "store/run_store.h"

namespace mantissa::ui {

class RunSeries;

// How much of a run a series holds. Steps are whole rows (one primary key each); layer rows,
// evaluations and events of the last step read may arrive in two commits, so those are counted
// per step and the next read starts again at that step, skipping what it already has.
struct RunCursor {
    std::int64_t nextStep = 0;                  // first step not yet read
    std::int64_t layerStep = -1, layersAtStep = 0;  // last layer-row step read, and its rows read
    std::int64_t evalStep = -1, evalsAtStep = 0;
    std::int64_t eventStep = -1, eventsAtStep = 0;
    std::int64_t opStep = -1, opsAtStep = 0;     // op statistics (a language model's)
    std::int64_t whatIfStep = -1, whatIfAtStep = 0;  // what-if statistics (train.what_if)
    std::int64_t blockScaleStep = -1, blockScalesAtStep = 0;  // block-scale views (train.block_scales)
    // Whether to read the block-scale views at all: a RunViewer shows them; an overlay, which
    // draws only charts, leaves their maps (tens of KB a step) unread.
    bool blockScales = false;
    bool started = false;                        // the series was reset with the run's layers
};

// Appends to `series` whatever of run `runId` the cursor has not seen (the whole run the first
// time, after resetting the series with the run's layer names). Returns the number of rows added
// (steps + layer rows + evaluations + events + op statistics + what-if rows + block-scale views
// when the cursor asks for them). Throws mantissa::Error from the store.
std::int64_t loadNewRows(RunStore& store, std::int64_t runId, RunSeries& series, RunCursor& cursor);

// Reads the block maps of `step` again, with those of the statistics steps around it that fit in
// half the series' map budget (so moving the step slider near it reads nothing more), into a
// series a whole load has filled (their distributions are there: they say what each step costs).
// The store reads every view from the first of those steps on, so the cost is the rest of the
// run's views, once. Returns the records added. Throws mantissa::Error from the store.
std::int64_t loadBlockScaleMaps(RunStore& store, std::int64_t runId, std::int64_t step, RunSeries& series);

// Loads a whole recorded run into `series` (reset first). Returns the rows added.
std::int64_t loadRun(RunStore& store, std::int64_t runId, RunSeries& series);

// Polls a run that is still `running` and appends its new rows to a series, until the run ends
// (then one last read, so rows committed with the final status are not missed). Each poll reads
// only the new rows; at a few hertz that is cheap enough for the GUI thread.
class RunFollower : public QObject {
    Q_OBJECT
public:
    static constexpr int defaultIntervalMs = 333;  // ~3 Hz

    // The store is shared (the browser may switch stores while a viewer follows); the series must
    // outlive the follower. The cursor is where an initial loadNewRows left off.
    RunFollower(std::shared_ptr<RunStore> store, std::int64_t runId, RunSeries* series, RunCursor cursor,
                QObject* parent = nullptr);

    void start(int intervalMs = defaultIntervalMs);
    void stop();
    bool active() const { return m_timer.isActive(); }
    // One poll now (what the timer does): reads new rows and the run's status. Returns rows added.
    std::int64_t poll();
    RunStatus lastStatus() const { return m_status; }

signals:
    void rowsAdded(std::int64_t rows);
    void finished(mantissa::RunStatus status);  // the run is no longer running; polling stopped
    void failed(const QString& message);        // the store could not be read; polling stopped

private:
    std::shared_ptr<RunStore> m_store;
    std::int64_t m_runId;
    RunSeries* m_series;
    RunCursor m_cursor;
    RunStatus m_status = RunStatus::running;
    QTimer m_timer;
};

}  // namespace mantissa::ui
