// Names of event kinds as they appear in the run store and the CLI's JSON; numbers as event
// messages write them.
#include "config/telemetry.h"

#include <cmath>
#include <cstdio>

namespace mantissa {

std::string format_event_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

const char* event_kind_name(EventKind kind) {
    switch (kind) {
    case EventKind::run_started: return "run_started";
    case EventKind::run_finished: return "run_finished";
    case EventKind::run_stopped: return "run_stopped";
    case EventKind::run_failed: return "run_failed";
    case EventKind::run_interrupted: return "run_interrupted";
    case EventKind::overflow: return "overflow";
    case EventKind::scale_change: return "scale_change";
    case EventKind::setting_change: return "setting_change";
    case EventKind::divergence: return "divergence";
    case EventKind::checkpoint: return "checkpoint";
    case EventKind::evaluation: return "evaluation";
    case EventKind::paused: return "paused";
    case EventKind::resumed: return "resumed";
    case EventKind::notice: return "notice";
    }
    return "notice";
}

}  // namespace mantissa
