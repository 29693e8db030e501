// What was changed while a run trained, for the run history: its setting_change events as short
// labels ("fc1=fp8 at 500", the labels the charts' markers carry), a one-line summary that names
// the first three and counts the rest ("fc1=fp8 at 500, autocast=bf16 at 900, scaling=off at 1200,
// +2 more"), and the full list for a tooltip. The configuration a run was recorded with is its
// configuration at the start; these say what it became.
//
// LiveChangeReader keeps each run's changes for a browser that re-reads its list every few
// seconds: a finished run's events are read once, a running run's only from the last step read.
//
// GUI thread only (RunStore's connection).
#pragma once

#include <QString>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace mantissa::ui {

struct SettingChange {
    std::int64_t step = 0;
    std::string label;  // "fc1=fp8", "autocast=bf16", "lr=0.01"
    bool operator==(const SettingChange&) const = default;
};

// The setting changes among `events`, in their order.
std::vector<SettingChange> liveChanges(const std::vector<Event>& events);

// "fc1=fp8 at 500, autocast=bf16 at 900" with at most `shown` changes, then "+N more"; "" for none.
QString liveChangesText(const std::vector<SettingChange>& changes, int shown = 3);
// Every change on a line of its own, "step 500: fc1=fp8"; "" for none.
QString liveChangesList(const std::vector<SettingChange>& changes);
// A configuration summary followed by what changed: "fp16 · dynamic · master fp32 → fc1=fp8 at
// 500, autocast=bf16 at 900"; the summary alone when nothing changed.
QString summaryWithChanges(const QString& summary, const std::vector<SettingChange>& changes, int shown = 3);

class LiveChangeReader {
public:
    // Reads the changes of `runs` it has not read (new runs, and what running ones recorded since).
    // A run the store cannot give keeps what was read. Forgets runs no longer listed.
    void update(RunStore& store, const std::vector<RunRow>& runs);
    void clear() { m_runs.clear(); }
    // The changes read for run `id` (empty when none).
    const std::vector<SettingChange>& changes(std::int64_t id) const;
    std::map<std::int64_t, std::vector<SettingChange>> all() const;

private:
    struct Run {
        std::string uuid;
        std::vector<SettingChange> changes;
        std::int64_t lastStep = -1;    // the last step whose events were read
        std::int64_t seenAtLast = 0;   // events of that step read (they may arrive in two commits)
        bool complete = false;         // read after the run had ended: nothing more will come
    };
    std::map<std::int64_t, Run> m_runs;
};

}  // namespace mantissa::ui
