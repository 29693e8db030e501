// HistogramSeries (see histogram_series.h). Only the span of occupied bins of each step is kept
// (typically 20-40 of the 278), so a long run costs about 200-400 bytes per step.
#include "histogram/histogram_series.h"

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

double HistogramGrid::at(int column, int exponent) const {
    if (column < 0 || column >= columns || exponent < min_exponent || exponent > max_exponent) return 0;
    return fraction[static_cast<std::size_t>(column) * static_cast<std::size_t>(rows()) +
                    static_cast<std::size_t>(exponent - min_exponent)];
}

double HistogramGrid::massBelow(int column, int exponent) const {
    double sum = 0;
    for (int e = min_exponent; e < std::min(exponent, max_exponent + 1); ++e) sum += at(column, e);
    return sum;
}

double HistogramGrid::massAtOrAbove(int column, int exponent) const {
    double sum = 0;
    for (int e = std::max(exponent, min_exponent); e <= max_exponent; ++e) sum += at(column, e);
    return sum;
}

double HistogramGrid::maxFraction() const {
    return fraction.empty() ? 0.0 : *std::max_element(fraction.begin(), fraction.end());
}

int HistogramSeries::shiftFor(double loss_scale) {
    if (!(loss_scale > 0) || !std::isfinite(loss_scale)) return 0;
    return static_cast<int>(std::lround(std::log2(loss_scale)));
}

bool HistogramSeries::append(std::int64_t step, const ExponentHistogram& histogram, double loss_scale,
                             std::int64_t elements, double zero_fraction, std::optional<ComputeFormat> precision) {
    if (!m_steps.empty() && step <= m_steps.back().step) return false;
    const auto& counts = histogram.counts;
    int lo = 0, hi = ExponentHistogram::bins - 1;
    while (lo <= hi && counts[static_cast<std::size_t>(lo)] == 0) ++lo;
    while (hi >= lo && counts[static_cast<std::size_t>(hi)] == 0) --hi;
    double total = 0;
    for (int b = lo; b <= hi; ++b) total += counts[static_cast<std::size_t>(b)];
    const double denominator = elements > 0 ? static_cast<double>(elements) : total;

    StepEntry e;
    e.step = step;
    e.loss_scale = loss_scale;
    e.shift = shiftFor(loss_scale);
    e.zero_fraction = zero_fraction;
    e.offset = m_pool.size();
    e.first_bin = ExponentHistogram::min_exponent + lo;
    e.bin_count = hi >= lo ? hi - lo + 1 : 0;
    for (int b = lo; b <= hi; ++b)
        m_pool.push_back(denominator > 0 ? counts[static_cast<std::size_t>(b)] / denominator : 0.0);
    if (e.bin_count > 0) {
        const int first = e.first_bin, last = e.first_bin + e.bin_count - 1;
        const bool none = m_minRaw > m_maxRaw;
        m_minRaw = none ? first : std::min(m_minRaw, first);
        m_maxRaw = none ? last : std::max(m_maxRaw, last);
        m_minHeld = none ? first + e.shift : std::min(m_minHeld, first + e.shift);
        m_maxHeld = none ? last + e.shift : std::max(m_maxHeld, last + e.shift);
    }
    m_anyScaled = m_anyScaled || e.shift != 0;
    m_steps.push_back(e);
    if (precision) {
        if (!m_precisions.empty() && m_precisions.back().precision == *precision)
            m_precisions.back().last_step = step;
        else
            m_precisions.push_back({step, step, *precision});
    }
    return true;
}

void HistogramSeries::clear() {
    m_steps.clear();
    m_pool.clear();
    m_precisions.clear();
    m_minRaw = m_minHeld = 1;
    m_maxRaw = m_maxHeld = 0;
    m_anyScaled = false;
}

std::int64_t HistogramSeries::firstStep() const {
    return m_steps.empty() ? -1 : m_steps.front().step;
}
std::int64_t HistogramSeries::lastStep() const {
    return m_steps.empty() ? -1 : m_steps.back().step;
}

double HistogramSeries::fractionAt(std::size_t index, int exponent, bool as_held) const {
    const StepEntry& e = m_steps[index];
    const int bin = exponent - (as_held ? e.shift : 0) - e.first_bin;
    if (bin < 0 || bin >= e.bin_count) return 0;
    return m_pool[e.offset + static_cast<std::size_t>(bin)];
}

HistogramGrid HistogramSeries::grid(std::size_t max_columns, bool as_held) const {
    HistogramGrid g;
    const std::size_t n = m_steps.size();
    if (n == 0 || max_columns == 0) return g;
    const std::size_t columns = std::min(n, max_columns);
    g.columns = static_cast<int>(columns);
    if (minExponent(as_held) <= maxExponent(as_held)) {
        g.min_exponent = minExponent(as_held);
        g.max_exponent = maxExponent(as_held);
    }
    const auto rows = static_cast<std::size_t>(g.rows());
    g.fraction.assign(columns * rows, 0.0);
    g.zero_fraction.assign(columns, 0.0);
    g.column_step.assign(columns, 0.0);
    g.first_step.assign(columns, 0);
    g.last_step.assign(columns, 0);
    for (std::size_t c = 0; c < columns; ++c) {
        const std::size_t begin = c * n / columns, end = (c + 1) * n / columns;  // end > begin: columns <= n
        const double weight = 1.0 / static_cast<double>(end - begin);
        double step_sum = 0;
        for (std::size_t i = begin; i < end; ++i) {
            const StepEntry& e = m_steps[i];
            step_sum += static_cast<double>(e.step);
            g.zero_fraction[c] += weight * e.zero_fraction;
            const int first = e.first_bin + (as_held ? e.shift : 0);
            for (int b = 0; b < e.bin_count; ++b) {
                const auto r = static_cast<std::size_t>(first + b - g.min_exponent);
                g.fraction[c * rows + r] += weight * m_pool[e.offset + static_cast<std::size_t>(b)];
            }
        }
        g.column_step[c] = step_sum * weight;
        g.first_step[c] = m_steps[begin].step;
        g.last_step[c] = m_steps[end - 1].step;
    }
    return g;
}

}  // namespace mantissa::ui
