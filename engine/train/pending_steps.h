// PendingSteps: what a statistic that reads a matmul's operands (model/operand_observer.h) asked
// of the steps in flight on a pipeline that reads operands after the step
// (StepPipeline::samples_after_step), one entry per layer observed, kept until each step is
// collected and its samples can be measured, oldest step first. Layers show their operands only
// in a statistics step's backward (model/layers/matmul_layer.h), so a step's entries are complete
// once its body has been issued.
//
// A step whose body the pipeline recorded is replayed later without the body being issued, so
// without the layers being shown to the statistics: the entries of the recorded step are kept
// and stand for each replay, which asks the same rows at the same offsets. Training thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "error.h"

namespace mantissa {

class StepPipeline;

template <class Entry>
class PendingSteps {
public:
    // The body of `step` is being issued: its layers' entries follow. Issued again (a recording
    // that failed, issued eagerly), it starts over.
    void begin(std::int64_t step) {
        if (!m_steps.empty() && m_steps.back().step == step) m_steps.back().entries.clear();
        else m_steps.push_back({step, {}});
    }
    void add(Entry e) { m_steps.back().entries.push_back(std::move(e)); }
    // The body just issued was recorded: its entries stand for the replays.
    void keep_recorded() { m_recorded = m_steps.back().entries; }
    // `step` replays the recorded body.
    void replay(std::int64_t step) { m_steps.push_back({step, m_recorded}); }
    // The entries of the oldest step, which must be `step`.
    std::vector<Entry> take(std::int64_t step, const char* statistic) {
        if (m_steps.empty() || m_steps.front().step != step)
            throw Error(std::string("The ") + statistic + " have nothing pending for step " + std::to_string(step) + ".");
        std::vector<Entry> e = std::move(m_steps.front().entries);
        m_steps.pop_front();
        return e;
    }

private:
    struct Step {
        std::int64_t step = 0;
        std::vector<Entry> entries;
    };
    std::deque<Step> m_steps;
    std::vector<Entry> m_recorded;
};

// What each such statistic keeps of its steps: the statistics step whose backward it observes
// (active from begin until its rows are taken), the pipeline that reads operands after the step
// (null: measured in the step), the rows measured in the step, and the entries pending after it.
template <class Record, class Entry>
struct StatisticSteps {
    std::int64_t step = -1;
    bool active = false;
    StepPipeline* later = nullptr;
    std::vector<Record> rows;
    PendingSteps<Entry> pending;

    void begin(std::int64_t s, StepPipeline* after_step) {
        step = s;
        active = true;
        later = after_step;
        rows.clear();
        if (later) pending.begin(s);
    }
    std::vector<Record> take() {
        active = false;
        return std::exchange(rows, {});
    }
    std::vector<Entry> take_pending(std::int64_t s, const char* statistic) {
        active = false;
        return pending.take(s, statistic);
    }
};

}  // namespace mantissa
