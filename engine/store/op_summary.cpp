// Summaries of a run's op statistics; see op_summary.h. One pass over the rows, with a small map
// from (name, stat) to its summary (a model has a few dozen ops at most).
#include "store/op_summary.h"

#include <cmath>
#include <map>
#include <utility>

namespace mantissa {

bool op_stat_larger_is_worse(std::string_view stat) {
    return stat != "min_variance";
}

std::vector<OpStatSummary> summarize_op_steps(const std::vector<OpStepRecord>& rows) {
    std::vector<OpStatSummary> out;
    std::map<std::pair<std::string, std::string>, std::size_t> index;  // (name, stat) -> out[i]
    for (const OpStepRecord& r : rows) {
        auto [it, added] = index.try_emplace({r.name, r.stat}, out.size());
        if (added) {
            OpStatSummary s;
            s.name = r.name;
            s.stat = r.stat;
            s.last_step = r.step;
            s.last = r.value;
            out.push_back(std::move(s));
        }
        OpStatSummary& s = out[it->second];
        ++s.steps;
        if (r.step >= s.last_step) {
            s.last_step = r.step;
            s.last = r.value;
        }
        if (std::isnan(r.value)) {
            ++s.nan_steps;
            continue;
        }
        const bool larger = op_stat_larger_is_worse(s.stat);
        const bool beyond = std::isnan(s.extreme) || (larger ? r.value > s.extreme : r.value < s.extreme) ||
                            (r.value == s.extreme && r.step < s.extreme_step);
        if (beyond) {
            s.extreme = r.value;
            s.extreme_step = r.step;
        }
    }
    return out;
}

}  // namespace mantissa
