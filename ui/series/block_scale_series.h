// BlockScaleSeries: a run's block-scale views (config/telemetry.h, BlockScaleRecord) as the Block
// scales panel shows them: for each matmul operand viewed in a block format (a "tensor": a layer's
// x, W or dy), at every statistics step, how its blocks' scale exponents are distributed, and for
// the recent steps the exponent of every block (the map).
//
// Memory. A map is rows × blocks_per_row exponents of 2 bytes (32 KB for a tensor at the engine's
// default train.block_scales.max_blocks, 16384), so maps are kept only within a budget
// (defaultMapBudget, 32 MiB, overhead included): when a new step's maps would pass it, the maps
// held longest go first, never those of the step just added. Live that keeps the newest steps'
// maps; a reopened run that reads an older step again (RunViewer, through run_loader.h) keeps that
// one. The distribution of every step is kept: 64 bytes a step and 4 a distinct exponent, so 10^4
// statistics steps of 9 tensors, each spanning a dozen exponents, take about 10 MB, as the charts'
// own points grow with the run. A step whose map is not held says why (mapState): pushed out by
// the budget, or never delivered (the live ring had no room for it, telemetry_ring.h).
//
// The distribution is the engine's (block_scale_histogram): counted once, where the record
// arrives, never recounted here. Counts are kept as 32 bits: a tensor of 2^32 blocks would be
// 2^37 values, far past anything a statistics step samples.
//
// Plain C++ (no Qt), so it is tested alone. GUI thread only (RunSeries owns one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::ui {

// A record without its exponents, with their distribution: what the live ring carries for a step
// whose maps found no room (telemetry_ring.h), and what the series keeps of every step.
struct BlockScaleSummary {
    std::int64_t step = 0;
    std::int32_t layer = 0;
    std::string name;
    MatmulOperand operand = MatmulOperand::input;
    BlockFormat format = BlockFormat::mxfp8_e4m3;
    bool own = false;
    std::int64_t rows_total = 0, rows = 0, row_length = 0, blocks_per_row = 0;
    BlockScaleHistogram histogram;

    static BlockScaleSummary of(const BlockScaleRecord& record);  // counts with block_scale_histogram
};

// One viewed operand: a layer's x, W or dy.
struct BlockScaleTensor {
    std::int32_t layer = 0;  // BlockScaleRecord::layer: the model's order
    std::string name;        // "fc1"
    MatmulOperand operand = MatmulOperand::input;
};

// One statistics step of one tensor, as kept for every step.
struct BlockScaleStep {
    std::int64_t step = 0;
    std::int64_t rows_total = 0, rows = 0, row_length = 0, blocks_per_row = 0;
    BlockFormat format = BlockFormat::mxfp8_e4m3;
    bool own = false;
    bool mapDelivered = false;  // its exponents reached the series (they may be gone since)
    std::int16_t minExponent = 0;
    std::uint16_t exponentCount = 0;  // distinct exponents from minExponent; 0: no finite scale
    std::uint32_t zeroBlocks = 0, nanBlocks = 0;
    std::uint32_t countsAt = 0;  // where its counts start in the tensor's pool
};

// Why a step's map is or is not there.
enum class BlockMapState { held, evicted, notDelivered, noStep };

// A tensor's distribution over the steps, laid out for a colour map (BlockScalePanel): columns
// of equal width in steps (one statistics step each when they fit, else several merged), rows of
// exponents minExponent..maxExponent. Cells with no block are NaN.
struct BlockScaleGrid {
    int columns = 0;
    std::int64_t firstStep = 0;  // column c covers steps [firstStep + c·stepsPerColumn, + stepsPerColumn)
    std::int64_t stepsPerColumn = 1;
    int minExponent = 0, maxExponent = -1;          // no row when maxExponent < minExponent
    std::vector<double> fraction;                   // columns × exponents, column-major: [c * rows() + (e - min)]
    std::vector<double> zeroFraction, nanFraction;  // per column; NaN for an empty column
    std::vector<std::int64_t> blocks;               // per column, every block counted (0: empty)
    int rows() const { return maxExponent >= minExponent ? maxExponent - minExponent + 1 : 0; }
    double at(int column, int exponent) const {
        return fraction[static_cast<std::size_t>(column) * static_cast<std::size_t>(rows()) +
                        static_cast<std::size_t>(exponent - minExponent)];
    }
};

class BlockScaleSeries {
public:
    static constexpr std::size_t defaultMapBudget = std::size_t{32} << 20;  // bytes
    static constexpr std::size_t mapOverhead = 64;  // bytes a held map costs beside its exponents

    explicit BlockScaleSeries(std::size_t mapBudget = defaultMapBudget);

    void clear();
    // Records of one or more steps, in any order; a step's records may also come in parts, and a
    // record already held replaces the one before (the same numbers, read again). The maps they
    // bring are the newest held: older maps go until the budget is kept.
    void addRecords(const std::vector<BlockScaleRecord>& records);
    // Steps whose maps did not come (TelemetryRing's summaries): the distribution only.
    void addSummaries(const std::vector<BlockScaleSummary>& summaries);

    bool empty() const { return m_tensors.empty(); }
    // Model order, then x, W, dy.
    const std::vector<BlockScaleTensor>& tensors() const { return m_tensors; }
    std::optional<std::size_t> tensorIndex(const std::string& name, MatmulOperand operand) const;
    // The tensor's steps, oldest first, and one step's distribution (the engine's type, so its
    // median and range are the engine's definitions).
    const std::vector<BlockScaleStep>& steps(std::size_t tensor) const { return m_data[tensor].steps; }
    BlockScaleHistogram histogram(std::size_t tensor, std::size_t stepIndex) const;
    // The index of `step` in steps(tensor), or of the latest step before it; nullopt when none.
    std::optional<std::size_t> stepAtOrBefore(std::size_t tensor, std::int64_t step) const;
    std::optional<std::size_t> stepIndex(std::size_t tensor, std::int64_t step) const;  // exactly
    // The tensor's exponents over every step (the colour scales' span); nullopt when none is finite.
    std::optional<std::pair<int, int>> exponentRange(std::size_t tensor) const;
    BlockScaleGrid grid(std::size_t tensor, int maxColumns) const;

    // The block exponents of `step` (rows × blocks_per_row, row-major, with the record's zero_block
    // and nan_block), or nullptr when not held.
    const std::vector<std::int16_t>* map(std::size_t tensor, std::int64_t step) const;
    BlockMapState mapState(std::size_t tensor, std::int64_t step) const;
    // The bytes a step's maps take over every tensor (0 for a step none has), known from its
    // distribution even when its maps are not held: what reading it back would cost.
    std::size_t mapBytesOfStep(std::int64_t step) const;
    // Every step of any tensor, oldest first.
    std::vector<std::int64_t> allSteps() const;

    std::size_t mapBudget() const { return m_budget; }
    void setMapBudget(std::size_t bytes);  // drops the maps held longest until it is kept
    std::size_t mapBytes() const { return m_mapBytes; }
    std::size_t mapsHeld() const { return m_fifo.size() - m_stale; }
    // The oldest and newest steps any held map is of; nullopt when none is held.
    std::optional<std::pair<std::int64_t, std::int64_t>> heldSteps() const;

    // Grows on every change; layout() grows when a tensor is added (pickers rebuild).
    std::uint64_t revision() const { return m_revision; }
    std::uint64_t layout() const { return m_layout; }

private:
    struct HeldMap {
        std::uint64_t call = 0;  // the add call that brought it: the newest call's maps stay
        std::vector<std::int16_t> exponents;
    };
    struct TensorData {
        std::vector<BlockScaleStep> steps;  // by step
        std::vector<std::uint32_t> counts;  // the steps' counts, each step's at its countsAt
        std::map<std::int64_t, HeldMap> maps;
        int minExponent = 0, maxExponent = -1;  // over every step; none while max < min
    };
    struct Held {               // a map, in the order maps were added
        std::size_t tensorKey;  // index into m_keys (stable while tensors are inserted)
        std::int64_t step;
        std::uint64_t call;
    };

    std::size_t tensorFor(std::int32_t layer, const std::string& name, MatmulOperand operand);
    BlockScaleStep& upsertStep(std::size_t tensor, const BlockScaleSummary& s, bool withMap);
    void keepBudget();
    static std::size_t bytesOf(std::size_t exponents) { return exponents * sizeof(std::int16_t) + mapOverhead; }

    std::size_t m_budget;
    std::vector<BlockScaleTensor> m_tensors;  // sorted: layer, then operand
    std::vector<TensorData> m_data;           // parallel to m_tensors
    std::vector<std::size_t> m_keyOf;         // parallel to m_tensors: its stable key
    std::vector<std::size_t> m_indexOfKey;    // key -> index into m_tensors
    std::deque<Held> m_fifo;                  // held maps, oldest first; entries of replaced maps are stale
    std::size_t m_stale = 0;                  // stale entries in m_fifo
    std::size_t m_mapBytes = 0;
    std::uint64_t m_call = 0;
    std::uint64_t m_revision = 0;
    std::uint64_t m_layout = 0;
};

}  // namespace mantissa::ui
