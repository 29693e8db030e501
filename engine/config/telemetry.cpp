// Names of event kinds as they appear in the run store and the CLI's JSON; numbers as event
// messages write them.
#include "config/telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace mantissa {

std::string format_byte_size(std::int64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

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

const char* matmul_operand_name(MatmulOperand operand) {
    switch (operand) {
    case MatmulOperand::input: return "x";
    case MatmulOperand::weight: return "W";
    case MatmulOperand::grad_output: return "dy";
    }
    return "x";
}

std::int64_t BlockScaleHistogram::blocks() const {
    return std::accumulate(counts.begin(), counts.end(), std::int64_t{0}) + zero_blocks + nan_blocks;
}

int BlockScaleHistogram::median_exponent() const {
    const std::int64_t finite = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
    std::int64_t seen = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        seen += counts[i];
        if (2 * seen >= finite && finite > 0) return min_exponent + static_cast<int>(i);
    }
    return 0;
}

BlockScaleHistogram block_scale_histogram(const BlockScaleRecord& record) {
    BlockScaleHistogram h;
    int lo = BlockScaleRecord::nan_block, hi = BlockScaleRecord::zero_block;
    for (std::int16_t e : record.exponents) {
        if (e == BlockScaleRecord::zero_block) ++h.zero_blocks;
        else if (e == BlockScaleRecord::nan_block) ++h.nan_blocks;
        else lo = std::min<int>(lo, e), hi = std::max<int>(hi, e);
    }
    if (lo > hi) return h;
    h.min_exponent = lo;
    h.counts.assign(static_cast<std::size_t>(hi - lo + 1), 0);
    for (std::int16_t e : record.exponents)
        if (e != BlockScaleRecord::zero_block && e != BlockScaleRecord::nan_block)
            ++h.counts[static_cast<std::size_t>(e - lo)];
    return h;
}

}  // namespace mantissa
