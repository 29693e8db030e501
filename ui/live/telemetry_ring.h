// TelemetryRing: the GUI's TelemetrySink. The training thread copies each record into a slot of a
// bounded lock-free ring and returns; the GUI thread drains the rings on its ~30 Hz timer.
//
// Never blocks training: when a ring is full (the GUI thread was stalled for thousands of steps),
// the record is dropped and counted; droppedSteps() says how many so the window can say so. The
// run store's Recorder is a separate sink and keeps every row, so a drop only thins the live view.
// Steps (with their layer samples) and the rare evaluations/events travel in separate rings, so a
// burst of steps never pushes out an event. A transformer's op statistics (on_op_steps: attention
// logits, layer norm variances; only on the steps that measure per-layer statistics) have a third
// ring: they arrive after their step's on_step, which is already published by then. The what-if
// statistics (on_what_if: one step's rows, layers × formats, on statistics steps of a run that asks
// for them) have a fourth, for the same reason, and a small one because a packet of them is large
// (300 rows, ~45 KB, for 50 layers × 6 formats; a slot's rows are allocated when first filled): 256
// holds a quarter second of a small model's statistics at every step of 1000 steps/s, or minutes
// of a large model's, and a drop there only thins the What-if panel's history.
// The block-scale views (on_block_scales: one step's records, each with every block's exponent)
// are larger still (32 KB a tensor at the engine's default sample), so their maps get a ring of
// only 8 steps, and a step that finds it full sends its distributions instead (counted here, on
// the training thread: one pass over the exponents) through a ring of 1024 small packets. So the
// Block scales panel keeps every step's distribution at any speed, and the maps of the steps the
// window had time for; only a step that finds both full is lost (counted; the store has it).
//
// Threads: on_step/on_eval/on_event/on_op_steps/on_what_if/on_block_scales on the training thread
// (the one producer); drain* and the counters on the GUI thread (the one consumer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "live/layer_sample.h"
#include "live/spsc_ring.h"
#include "series/block_scale_series.h"
#include "config/telemetry.h"

namespace mantissa::ui {

struct StepPacket {
    StepRecord step;
    std::vector<LayerSample> layers;  // empty on steps without per-layer statistics
};

using NotePacket = std::variant<EvalRecord, Event>;

struct OpPacket {
    std::vector<OpStepRecord> ops;  // one step's op statistics
};

struct WhatIfPacket {
    std::vector<WhatIfRecord> rows;  // one step's what-if statistics, one row per (layer, format)
};

struct BlockScalePacket {
    std::vector<BlockScaleRecord> rows;  // one step's block-scale views, maps included
};

struct BlockScaleSummaryPacket {
    std::vector<BlockScaleSummary> rows;  // one step's, when its maps found no room
};

class TelemetryRing final : public TelemetrySink {
public:
    // layerCount sizes each slot's layer vector up front, so steady-state pushes do not allocate.
    explicit TelemetryRing(std::size_t layerCount, std::size_t stepCapacity = 4096, std::size_t noteCapacity = 4096,
                           std::size_t opCapacity = 1024, std::size_t whatIfCapacity = 256,
                           std::size_t blockMapCapacity = 8, std::size_t blockSummaryCapacity = 1024);

    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) override;
    void on_eval(const EvalRecord& eval) override;
    void on_event(const Event& event) override;
    void on_op_steps(const std::vector<OpStepRecord>& ops) override;
    void on_what_if(const std::vector<WhatIfRecord>& rows) override;
    void on_block_scales(const std::vector<BlockScaleRecord>& rows) override;

    // GUI thread. The callbacks get each packet by reference and may move out of it.
    template <typename F>
    std::size_t drainSteps(F&& f) { return m_steps.drain(f); }
    template <typename F>
    std::size_t drainNotes(F&& f) { return m_notes.drain(f); }
    template <typename F>
    std::size_t drainOps(F&& f) { return m_ops.drain(f); }
    template <typename F>
    std::size_t drainWhatIf(F&& f) { return m_whatIf.drain(f); }
    template <typename F>
    std::size_t drainBlockScales(F&& f) { return m_blockMaps.drain(f); }
    template <typename F>
    std::size_t drainBlockScaleSummaries(F&& f) { return m_blockSummaries.drain(f); }

    std::int64_t droppedSteps() const { return m_droppedSteps.load(std::memory_order_relaxed); }
    std::int64_t droppedNotes() const { return m_droppedNotes.load(std::memory_order_relaxed); }
    std::int64_t droppedOps() const { return m_droppedOps.load(std::memory_order_relaxed); }
    std::int64_t droppedWhatIf() const { return m_droppedWhatIf.load(std::memory_order_relaxed); }  // steps
    // Steps whose block maps found no room (their distributions were sent), and steps lost whole.
    std::int64_t droppedBlockMaps() const { return m_droppedBlockMaps.load(std::memory_order_relaxed); }
    std::int64_t droppedBlockScales() const { return m_droppedBlockScales.load(std::memory_order_relaxed); }
    std::size_t stepCapacity() const { return m_steps.capacity(); }

private:
    SpscRing<StepPacket> m_steps;
    SpscRing<NotePacket> m_notes;
    SpscRing<OpPacket> m_ops;
    SpscRing<WhatIfPacket> m_whatIf;
    SpscRing<BlockScalePacket> m_blockMaps;
    SpscRing<BlockScaleSummaryPacket> m_blockSummaries;
    std::atomic<std::int64_t> m_droppedSteps{0};
    std::atomic<std::int64_t> m_droppedNotes{0};
    std::atomic<std::int64_t> m_droppedOps{0};
    std::atomic<std::int64_t> m_droppedWhatIf{0};
    std::atomic<std::int64_t> m_droppedBlockMaps{0};
    std::atomic<std::int64_t> m_droppedBlockScales{0};
};

}  // namespace mantissa::ui
