// BlockScaleSeries: every step's block-scale distribution, and the recent steps' maps within a
// budget (see block_scale_series.h).
#include "series/block_scale_series.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace mantissa::ui {

namespace {

std::uint32_t narrow(std::int64_t count) {
    constexpr auto most = std::numeric_limits<std::uint32_t>::max();
    return count <= 0 ? 0 : count >= static_cast<std::int64_t>(most) ? most : static_cast<std::uint32_t>(count);
}

}  // namespace

BlockScaleSummary BlockScaleSummary::of(const BlockScaleRecord& r) {
    BlockScaleSummary s;
    s.step = r.step;
    s.layer = r.layer;
    s.name = r.name;
    s.operand = r.operand;
    s.format = r.format;
    s.own = r.own;
    s.rows_total = r.rows_total;
    s.rows = r.rows;
    s.row_length = r.row_length;
    s.blocks_per_row = r.blocks_per_row;
    s.histogram = block_scale_histogram(r);
    return s;
}

BlockScaleSeries::BlockScaleSeries(std::size_t mapBudget) : m_budget(mapBudget) {}

void BlockScaleSeries::clear() {
    m_tensors.clear();
    m_data.clear();
    m_keyOf.clear();
    m_indexOfKey.clear();
    m_fifo.clear();
    m_stale = 0;
    m_mapBytes = 0;
    ++m_layout;
    ++m_revision;
}

std::optional<std::size_t> BlockScaleSeries::tensorIndex(const std::string& name, MatmulOperand operand) const {
    for (std::size_t i = 0; i < m_tensors.size(); ++i)
        if (m_tensors[i].name == name && m_tensors[i].operand == operand) return i;
    return std::nullopt;
}

std::size_t BlockScaleSeries::tensorFor(std::int32_t layer, const std::string& name, MatmulOperand operand) {
    if (const auto i = tensorIndex(name, operand)) return *i;
    // In the model's order, then x, W, dy; the held maps name tensors by a key that does not move.
    const auto before = [&](const BlockScaleTensor& t) {
        return t.layer < layer || (t.layer == layer && static_cast<int>(t.operand) < static_cast<int>(operand));
    };
    const auto at = std::partition_point(m_tensors.begin(), m_tensors.end(), before);
    const auto index = static_cast<std::size_t>(at - m_tensors.begin());
    m_tensors.insert(at, {layer, name, operand});
    m_data.insert(m_data.begin() + static_cast<std::ptrdiff_t>(index), TensorData{});
    const std::size_t key = m_indexOfKey.size();
    m_keyOf.insert(m_keyOf.begin() + static_cast<std::ptrdiff_t>(index), key);
    m_indexOfKey.push_back(index);
    for (std::size_t i = 0; i < m_keyOf.size(); ++i) m_indexOfKey[m_keyOf[i]] = i;
    ++m_layout;
    return index;
}

BlockScaleStep& BlockScaleSeries::upsertStep(std::size_t tensor, const BlockScaleSummary& s, bool withMap) {
    TensorData& d = m_data[tensor];
    const auto at = std::lower_bound(d.steps.begin(), d.steps.end(), s.step,
                                     [](const BlockScaleStep& e, std::int64_t v) { return e.step < v; });
    const bool known = at != d.steps.end() && at->step == s.step;
    BlockScaleStep& e = known ? *at : *d.steps.insert(at, BlockScaleStep{});
    const bool delivered = known && e.mapDelivered;
    const std::uint16_t hadCount = known ? e.exponentCount : 0;
    const BlockScaleHistogram& h = s.histogram;
    e.step = s.step;
    e.rows_total = s.rows_total;
    e.rows = s.rows;
    e.row_length = s.row_length;
    e.blocks_per_row = s.blocks_per_row;
    e.format = s.format;
    e.own = s.own;
    e.mapDelivered = delivered || withMap;
    e.zeroBlocks = narrow(h.zero_blocks);
    e.nanBlocks = narrow(h.nan_blocks);
    // Exponents span E8M0's [-127, 127] at most (NVFP4's quotient of scales less): 16 bits hold them.
    e.minExponent = static_cast<std::int16_t>(h.counts.empty() ? 0 : h.min_exponent);
    e.exponentCount = static_cast<std::uint16_t>(std::min<std::size_t>(h.counts.size(), 0xffff));
    // The same step read again (a reopened run's older map) keeps its place in the pool when it fits.
    if (e.exponentCount > hadCount) {
        e.countsAt = static_cast<std::uint32_t>(d.counts.size());
        d.counts.resize(d.counts.size() + e.exponentCount);
    }
    for (std::size_t i = 0; i < e.exponentCount; ++i) d.counts[e.countsAt + i] = narrow(h.counts[i]);
    if (!h.counts.empty()) {
        if (d.maxExponent < d.minExponent) {
            d.minExponent = h.min_exponent;
            d.maxExponent = h.max_exponent();
        } else {
            d.minExponent = std::min(d.minExponent, h.min_exponent);
            d.maxExponent = std::max(d.maxExponent, h.max_exponent());
        }
    }
    return e;
}

void BlockScaleSeries::addRecords(const std::vector<BlockScaleRecord>& records) {
    if (records.empty()) return;
    ++m_call;
    for (const BlockScaleRecord& r : records) {
        const std::size_t t = tensorFor(r.layer, r.name, r.operand);
        upsertStep(t, BlockScaleSummary::of(r), true);
        TensorData& d = m_data[t];
        auto [it, fresh] = d.maps.try_emplace(r.step);
        if (!fresh) {
            m_mapBytes -= bytesOf(it->second.exponents.size());
            ++m_stale;  // its entry in m_fifo now names a map that is no longer there
        }
        it->second.call = m_call;
        it->second.exponents = r.exponents;
        m_mapBytes += bytesOf(r.exponents.size());
        m_fifo.push_back({m_keyOf[t], r.step, m_call});
    }
    keepBudget();
    ++m_revision;
}

void BlockScaleSeries::addSummaries(const std::vector<BlockScaleSummary>& summaries) {
    if (summaries.empty()) return;
    for (const BlockScaleSummary& s : summaries) upsertStep(tensorFor(s.layer, s.name, s.operand), s, false);
    ++m_revision;
}

void BlockScaleSeries::setMapBudget(std::size_t bytes) {
    m_budget = bytes;
    keepBudget();
    ++m_revision;
}

void BlockScaleSeries::keepBudget() {
    while (!m_fifo.empty()) {
        const Held& h = m_fifo.front();
        TensorData& d = m_data[m_indexOfKey[h.tensorKey]];
        const auto it = d.maps.find(h.step);
        if (it == d.maps.end() || it->second.call != h.call) {  // replaced since: not this entry's map
            m_fifo.pop_front();
            --m_stale;
            continue;
        }
        if (m_mapBytes <= m_budget || h.call == m_call) return;  // within the budget, or the newest step's
        m_mapBytes -= bytesOf(it->second.exponents.size());
        d.maps.erase(it);
        m_fifo.pop_front();
    }
}

BlockScaleHistogram BlockScaleSeries::histogram(std::size_t tensor, std::size_t stepIndex) const {
    const TensorData& d = m_data[tensor];
    const BlockScaleStep& e = d.steps[stepIndex];
    BlockScaleHistogram h;
    h.min_exponent = e.minExponent;
    h.zero_blocks = e.zeroBlocks;
    h.nan_blocks = e.nanBlocks;
    h.counts.assign(d.counts.begin() + e.countsAt, d.counts.begin() + e.countsAt + e.exponentCount);
    return h;
}

std::optional<std::size_t> BlockScaleSeries::stepAtOrBefore(std::size_t tensor, std::int64_t step) const {
    const auto& s = m_data[tensor].steps;
    const auto after =
        std::upper_bound(s.begin(), s.end(), step, [](std::int64_t v, const BlockScaleStep& e) { return v < e.step; });
    if (after == s.begin()) return std::nullopt;
    return static_cast<std::size_t>(after - s.begin()) - 1;
}

std::optional<std::size_t> BlockScaleSeries::stepIndex(std::size_t tensor, std::int64_t step) const {
    const auto at = stepAtOrBefore(tensor, step);
    if (!at || m_data[tensor].steps[*at].step != step) return std::nullopt;
    return at;
}

std::optional<std::pair<int, int>> BlockScaleSeries::exponentRange(std::size_t tensor) const {
    const TensorData& d = m_data[tensor];
    if (d.maxExponent < d.minExponent) return std::nullopt;
    return std::make_pair(d.minExponent, d.maxExponent);
}

BlockScaleGrid BlockScaleSeries::grid(std::size_t tensor, int maxColumns) const {
    BlockScaleGrid g;
    const TensorData& d = m_data[tensor];
    if (d.steps.empty()) return g;
    const std::int64_t first = d.steps.front().step, last = d.steps.back().step;
    // The statistics interval: the least gap between steps (a dropped step leaves a blank column).
    std::int64_t stride = 0;
    for (std::size_t i = 1; i < d.steps.size(); ++i) {
        const std::int64_t gap = d.steps[i].step - d.steps[i - 1].step;
        if (gap > 0 && (stride == 0 || gap < stride)) stride = gap;
    }
    stride = std::max<std::int64_t>(stride, 1);
    const std::int64_t cells = (last - first) / stride + 1;
    const std::int64_t merge = (cells + std::max(maxColumns, 1) - 1) / std::max(maxColumns, 1);
    g.firstStep = first;
    g.stepsPerColumn = stride * merge;
    g.columns = static_cast<int>((last - first) / g.stepsPerColumn + 1);
    if (d.maxExponent >= d.minExponent) {
        g.minExponent = d.minExponent;
        g.maxExponent = d.maxExponent;
    }
    const auto rows = static_cast<std::size_t>(g.rows());
    const auto columns = static_cast<std::size_t>(g.columns);
    std::vector<double> counts(columns * rows, 0.0);
    std::vector<double> zeros(columns, 0.0), nans(columns, 0.0);
    g.blocks.assign(columns, 0);
    for (const BlockScaleStep& e : d.steps) {
        const auto c = static_cast<std::size_t>((e.step - first) / g.stepsPerColumn);
        std::int64_t blocks = std::int64_t{e.zeroBlocks} + e.nanBlocks;
        for (std::size_t i = 0; i < e.exponentCount; ++i) {
            const std::uint32_t n = d.counts[e.countsAt + i];
            counts[c * rows + static_cast<std::size_t>(e.minExponent + static_cast<int>(i) - g.minExponent)] += n;
            blocks += n;
        }
        zeros[c] += e.zeroBlocks;
        nans[c] += e.nanBlocks;
        g.blocks[c] += blocks;
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    g.fraction.assign(columns * rows, nan);
    g.zeroFraction.assign(columns, nan);
    g.nanFraction.assign(columns, nan);
    for (std::size_t c = 0; c < columns; ++c) {
        if (g.blocks[c] == 0) continue;
        const auto total = static_cast<double>(g.blocks[c]);
        for (std::size_t r = 0; r < rows; ++r)
            if (counts[c * rows + r] > 0) g.fraction[c * rows + r] = counts[c * rows + r] / total;
        g.zeroFraction[c] = zeros[c] / total;
        g.nanFraction[c] = nans[c] / total;
    }
    return g;
}

const std::vector<std::int16_t>* BlockScaleSeries::map(std::size_t tensor, std::int64_t step) const {
    const auto& maps = m_data[tensor].maps;
    const auto it = maps.find(step);
    return it == maps.end() ? nullptr : &it->second.exponents;
}

BlockMapState BlockScaleSeries::mapState(std::size_t tensor, std::int64_t step) const {
    if (map(tensor, step)) return BlockMapState::held;
    const auto at = stepIndex(tensor, step);
    if (!at) return BlockMapState::noStep;
    return m_data[tensor].steps[*at].mapDelivered ? BlockMapState::evicted : BlockMapState::notDelivered;
}

std::size_t BlockScaleSeries::mapBytesOfStep(std::int64_t step) const {
    std::size_t bytes = 0;
    for (std::size_t t = 0; t < m_tensors.size(); ++t)
        if (const auto at = stepIndex(t, step)) {
            const BlockScaleStep& e = m_data[t].steps[*at];
            bytes += bytesOf(static_cast<std::size_t>(std::max<std::int64_t>(e.rows * e.blocks_per_row, 0)));
        }
    return bytes;
}

std::vector<std::int64_t> BlockScaleSeries::allSteps() const {
    std::vector<std::int64_t> out;
    for (const TensorData& d : m_data)
        for (const BlockScaleStep& e : d.steps) out.push_back(e.step);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::optional<std::pair<std::int64_t, std::int64_t>> BlockScaleSeries::heldSteps() const {
    std::optional<std::pair<std::int64_t, std::int64_t>> out;
    for (const TensorData& d : m_data) {
        if (d.maps.empty()) continue;
        const std::int64_t lo = d.maps.begin()->first, hi = d.maps.rbegin()->first;
        out = out ? std::make_pair(std::min(out->first, lo), std::max(out->second, hi)) : std::make_pair(lo, hi);
    }
    return out;
}

}  // namespace mantissa::ui
