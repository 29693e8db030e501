// What recording a run costs training: the same training loop timed with no sink and with a
// Recorder on a fresh store, alternating, best of `repeats` each (the machine is shared, so the
// best time is the one least disturbed).
//
// This is the hook for measuring real training: pass a function that trains a fixed number of
// steps and hands its telemetry to `sink` (nullptr: recording off), e.g. a Session with the sink
// added when non-null. bench_store uses a synthetic loop until the lead plugs the Session in.
#pragma once

#include <functional>
#include <string>

#include "train/telemetry.h"

namespace mantissa::bench {

struct RecordingCost {
    double without_s = 0;  // best time with recording off
    double with_s = 0;     // best time with recording on (including finish(): the last flush)
    double slowdown() const { return with_s / without_s - 1.0; }
};

// `train` must do the same work every call. Each recorded repeat uses a new store file in `dir`.
RecordingCost measure_recording_cost(const std::function<void(TelemetrySink* sink)>& train, const std::string& dir,
                                     int repeats);

}  // namespace mantissa::bench
