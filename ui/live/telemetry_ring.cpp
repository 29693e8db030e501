// TelemetryRing: copies records into the rings on the training thread (see telemetry_ring.h).
#include "live/telemetry_ring.h"

namespace mantissa::ui {

TelemetryRing::TelemetryRing(std::size_t layerCount, std::size_t stepCapacity, std::size_t noteCapacity,
                             std::size_t opCapacity, std::size_t whatIfCapacity, std::size_t blockMapCapacity,
                             std::size_t blockSummaryCapacity)
    : m_steps(stepCapacity),
      m_notes(noteCapacity),
      m_ops(opCapacity),
      m_whatIf(whatIfCapacity),
      m_blockMaps(blockMapCapacity),
      m_blockSummaries(blockSummaryCapacity) {
    // Fill every slot once from this thread before any producer exists, reserving its layers.
    for (std::size_t i = 0; i < m_steps.capacity(); ++i) {
        m_steps.tryPush([&](StepPacket& p) { p.layers.reserve(layerCount); });
        m_steps.tryPop([](StepPacket&) {});
    }
}

void TelemetryRing::on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) {
    const bool pushed = m_steps.tryPush([&](StepPacket& p) {
        p.step = step;
        p.layers.clear();
        for (const auto& l : layers) p.layers.push_back(LayerSample::from(l));
    });
    if (!pushed) m_droppedSteps.fetch_add(1, std::memory_order_relaxed);
}

void TelemetryRing::on_eval(const EvalRecord& eval) {
    if (!m_notes.tryPush([&](NotePacket& p) { p = eval; }))
        m_droppedNotes.fetch_add(1, std::memory_order_relaxed);
}

void TelemetryRing::on_event(const Event& event) {
    if (!m_notes.tryPush([&](NotePacket& p) { p = event; }))
        m_droppedNotes.fetch_add(1, std::memory_order_relaxed);
}

void TelemetryRing::on_op_steps(const std::vector<OpStepRecord>& ops) {
    // Copy-assigned into the slot: its vector and strings keep their capacity, so once each slot
    // has held a step's records a steady run allocates nothing here.
    if (!m_ops.tryPush([&](OpPacket& p) { p.ops = ops; })) m_droppedOps.fetch_add(1, std::memory_order_relaxed);
}

void TelemetryRing::on_what_if(const std::vector<WhatIfRecord>& rows) {
    // As on_op_steps: the slot's rows keep their capacity (names included) from the last time.
    if (!m_whatIf.tryPush([&](WhatIfPacket& p) { p.rows = rows; }))
        m_droppedWhatIf.fetch_add(1, std::memory_order_relaxed);
}

void TelemetryRing::on_block_scales(const std::vector<BlockScaleRecord>& rows) {
    // As on_what_if: each slot keeps its exponents' capacity, so a steady run allocates nothing.
    if (m_blockMaps.tryPush([&](BlockScalePacket& p) { p.rows = rows; })) return;
    m_droppedBlockMaps.fetch_add(1, std::memory_order_relaxed);
    const bool summarised = m_blockSummaries.tryPush([&](BlockScaleSummaryPacket& p) {
        p.rows.resize(rows.size());
        for (std::size_t i = 0; i < rows.size(); ++i) p.rows[i] = BlockScaleSummary::of(rows[i]);
    });
    if (!summarised) m_droppedBlockScales.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mantissa::ui
