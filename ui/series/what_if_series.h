// WhatIfSeries: a run's what-if statistics (config/telemetry.h, WhatIfRecord) as the What-if panel
// shows them: at each statistics step, for every layer with parameters (rows, in model order) and
// every format asked about (columns, in the run's order), what quantising the layer's input x,
// weight W and output gradient dy to that format would do: underflow and saturation fractions and
// the SQNR in dB, with the values measured; and which column is the layer's own format that step
// (LayerStepRecord::precision), whose numbers are then the layer's real ones.
//
// Memory: a run can have 10^4 statistics steps of 50 layers × 6 formats. Each step is one snapshot,
// a grid of cells holding the nine numbers as floats and the counts as 32 bits (52 bytes a cell;
// a float's seven digits are more than a cell or its tooltip shows, and inf/NaN keep their
// meaning). At most `maxSnapshots` are kept: past that the older half is thinned to every other
// snapshot, so the recent steps stay at full resolution, older ones grow sparser with age, and the
// latest is always there. At the default 512 that is at most 8 MB for 50 × 6 cells.
//
// Plain C++ (no Qt), so it is tested alone. GUI thread only (RunSeries owns one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::ui {

enum class WhatIfTensor : int { input, weight, grad_output };  // x, W, dy
enum class WhatIfMetric : int { sqnr_db, underflow, saturation };
inline constexpr int whatIfTensorCount = 3;

// One tensor's numbers in one cell (QuantisationStats, narrowed).
struct WhatIfNumbers {
    float underflow = 0;       // fraction 0..1
    float saturation = 0;      // fraction 0..1
    float sqnr_db = 0;         // +inf exact, -inf a value would overflow to inf, NaN no signal
    std::uint32_t values = 0;  // the values measured (saturates at 2^32 - 1)

    static WhatIfNumbers from(const QuantisationStats& s);
    double metric(WhatIfMetric m) const;
};

struct WhatIfCell {
    std::array<WhatIfNumbers, whatIfTensorCount> tensors;  // by WhatIfTensor

    bool measured = false;  // a row for this (layer, format) arrived at this step
    bool current = false;   // the layer ran in this format at this step: its own operands
    const WhatIfNumbers& operator[](WhatIfTensor t) const { return tensors[static_cast<std::size_t>(t)]; }
};

struct WhatIfSnapshot {
    std::int64_t step = 0;
    std::vector<WhatIfCell> cells;  // layers × formats, row-major
};

class WhatIfSeries {
public:
    static constexpr std::size_t defaultMaxSnapshots = 512;
    // A what-if packet is at most the telemetry ring's what-if capacity (256) statistics steps
    // behind its layer samples; twice that leaves room.
    static constexpr std::size_t precisionHistory = 512;

    explicit WhatIfSeries(std::size_t maxSnapshots = defaultMaxSnapshots);

    void clear();
    // Rows of one or more steps, in any order (a step's rows may also come in parts, as a store
    // read that met a step half committed gives them). A new layer or format gets its row or column.
    void addRows(const std::vector<WhatIfRecord>& rows);
    // The format layer `name` ran in at `step` (from its LayerStepRecord). Either order works: live,
    // the steps' ring is drained before the what-if ring, so a tick can bring several steps' samples
    // before the first of their what-if rows, or a step's rows before its samples (the next tick).
    // So each layer keeps its last `precisionHistory` samples, not just the latest.
    void notePrecision(std::int64_t step, const std::string& name, const ComputeFormat& format);

    bool empty() const { return m_snapshots.empty(); }
    const std::vector<std::string>& layers() const { return m_layerNames; }  // model order
    const std::vector<ComputeFormat>& formats() const { return m_formats; }  // the run's order
    // Kept snapshots, oldest first (see the header comment for which are kept).
    const std::vector<WhatIfSnapshot>& snapshots() const { return m_snapshots; }
    const WhatIfCell& cell(std::size_t snapshot, std::size_t layer, std::size_t format) const {
        return m_snapshots[snapshot].cells[layer * m_formats.size() + format];
    }
    // The snapshot of `step`, or of the latest kept step before it (a thinned step); nullopt when
    // none is at or before it.
    std::optional<std::size_t> snapshotAt(std::int64_t step) const;
    // The column of the format a layer ran in at a snapshot's step; nullopt when it is not a column
    // (or not known).
    std::optional<std::size_t> currentFormat(std::size_t snapshot, std::size_t layer) const;
    std::size_t maxSnapshots() const { return m_max; }

    // Grows on every change; layout() grows when rows or columns are added (models reset).
    std::uint64_t revision() const { return m_revision; }
    std::uint64_t layout() const { return m_layout; }

private:
    std::size_t layerRow(std::int32_t layer, const std::string& name);  // adds a row when new
    std::size_t formatColumn(const ComputeFormat& format);              // adds a column when new
    WhatIfSnapshot& snapshotFor(std::int64_t step);                     // adds one in step order when new
    void markCurrent(WhatIfSnapshot& s, std::size_t row);
    void thin();

    struct LayerKey {
        std::int32_t index;  // WhatIfRecord::layer: the model's order
        std::string name;
    };
    struct Precision {
        std::int64_t step = -1;
        ComputeFormat format;
    };
    std::size_t m_max;
    std::vector<LayerKey> m_layers;
    std::vector<std::string> m_layerNames;
    // By layer name: the samples' formats, by step, the last precisionHistory of them.
    std::unordered_map<std::string, std::deque<Precision>> m_precision;
    std::vector<ComputeFormat> m_formats;
    std::vector<WhatIfSnapshot> m_snapshots;
    std::uint64_t m_revision = 0;
    std::uint64_t m_layout = 0;
};

}  // namespace mantissa::ui
