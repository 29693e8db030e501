// HistogramSeries: one layer's gradient exponent histograms over a run, as the heat map draws them.
// Plain C++ (no Qt), tested alone.
//
// Each appended step keeps its non-empty bins as fractions of the step's gradient elements (so a
// step's column sums to the fraction of non-zero finite elements, and the zero fraction is kept
// beside it), and the loss scale of that step. The recorded histogram describes the *unscaled*
// gradient (the backends histogram after unscaling, in FP32); the view "as held" shifts each step
// by round(log2 loss_scale) binades, which is where those values sat in the compute format before
// unscaling (exact for power-of-two scales, which dynamic scaling always uses). Each step also keeps
// the compute format its layer ran in (LayerStepRecord::precision), so a caption can name the format
// of the steps shown, changes included (precisionSpans()), rather than the last step's alone.
//
// grid() decimates the steps into at most N columns (consecutive steps, equal counts; a column is
// the mean of its steps' fractions). Steps arrive in increasing order; a step at or before the last
// one is ignored (a follower re-reading its last step). Not thread-safe: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::ui {

struct HistogramGrid {
    int columns = 0;
    int min_exponent = 0;  // row r is the binade [2^(min_exponent + r), 2^(min_exponent + r + 1))
    int max_exponent = -1;
    std::vector<double> fraction;                     // column-major: fraction[c * rows() + r], of the step's elements
    std::vector<double> zero_fraction;                // per column
    std::vector<double> column_step;                  // per column: the mean step it covers
    std::vector<std::int64_t> first_step, last_step;  // per column

    int rows() const { return max_exponent >= min_exponent ? max_exponent - min_exponent + 1 : 0; }
    // The fraction in binade `exponent` of column c (0 outside the grid's rows).
    double at(int column, int exponent) const;
    // Of column c's elements, the fraction of non-zero values below 2^exponent.
    double massBelow(int column, int exponent) const;
    double massAtOrAbove(int column, int exponent) const;
    // The largest fraction in any cell (0 when empty).
    double maxFraction() const;
};

// Consecutive appended steps whose layer ran in one compute format (first_step..last_step are
// appended steps: a change happened somewhere after last_step and at or before the next span's first).
struct PrecisionSpan {
    std::int64_t first_step = 0, last_step = 0;
    ComputeFormat precision;
};

class HistogramSeries {
public:
    // `elements`: the step's gradient elements (0: the histogram's own total); `zero_fraction`:
    // of those elements, the zeros (LayerStepRecord::frac_zero); `precision`: the layer's compute
    // format at that step (none: not known, left out of precisionSpans()). Returns false when ignored.
    bool append(std::int64_t step, const ExponentHistogram& histogram, double loss_scale, std::int64_t elements = 0,
                double zero_fraction = 0, std::optional<ComputeFormat> precision = std::nullopt);
    void clear();

    std::size_t size() const { return m_steps.size(); }
    bool empty() const { return m_steps.empty(); }
    std::int64_t firstStep() const;  // -1 when empty
    std::int64_t lastStep() const;   // -1 when empty
    double lossScaleAt(std::size_t index) const { return m_steps[index].loss_scale; }
    // Of step `index`'s elements, the zeros.
    double zeroFractionAt(std::size_t index) const { return m_steps[index].zero_fraction; }
    // The binade shift of step `index` in the view as held: round(log2 loss_scale), 0 for a scale <= 0.
    int shiftAt(std::size_t index) const { return m_steps[index].shift; }
    // Whether any step's loss scale is not 1 (the two views differ).
    bool scaled() const { return m_anyScaled; }

    // The fraction of step `index`'s elements in binade `exponent` (as held: shifted by its scale).
    double fractionAt(std::size_t index, int exponent, bool as_held) const;

    // The occupied exponent range over all steps (min > max when nothing is occupied).
    int minExponent(bool as_held) const { return as_held ? m_minHeld : m_minRaw; }
    int maxExponent(bool as_held) const { return as_held ? m_maxHeld : m_maxRaw; }

    HistogramGrid grid(std::size_t max_columns, bool as_held) const;

    // The compute formats of the appended steps, in step order (steps without one left out): one
    // span for a layer that never changed format, none when no step said.
    const std::vector<PrecisionSpan>& precisionSpans() const { return m_precisions; }

    static int shiftFor(double loss_scale);

private:
    struct StepEntry {
        std::int64_t step;
        double loss_scale;
        int shift;
        double zero_fraction;
        std::size_t offset;  // into m_pool
        int first_bin;       // exponent of m_pool[offset]
        int bin_count;
    };
    std::vector<StepEntry> m_steps;
    std::vector<double> m_pool;  // every step's occupied bins, contiguous
    std::vector<PrecisionSpan> m_precisions;
    int m_minRaw = 1, m_maxRaw = 0, m_minHeld = 1, m_maxHeld = 0;
    bool m_anyScaled = false;
};

}  // namespace mantissa::ui
