// WhatIfSeries: a run's what-if statistics in snapshots per step (see what_if_series.h).
#include "series/what_if_series.h"

#include <algorithm>
#include <limits>

namespace mantissa::ui {

WhatIfNumbers WhatIfNumbers::from(const QuantisationStats& s) {
    constexpr auto most = std::numeric_limits<std::uint32_t>::max();
    WhatIfNumbers n;
    n.underflow = static_cast<float>(s.underflow);
    n.saturation = static_cast<float>(s.saturation);
    n.sqnr_db = static_cast<float>(s.sqnr_db);
    n.values = s.values <= 0                                 ? 0
               : s.values >= static_cast<std::int64_t>(most) ? most
                                                             : static_cast<std::uint32_t>(s.values);
    return n;
}

double WhatIfNumbers::metric(WhatIfMetric m) const {
    switch (m) {
        case WhatIfMetric::sqnr_db: return sqnr_db;
        case WhatIfMetric::underflow: return underflow;
        case WhatIfMetric::saturation: return saturation;
    }
    return std::numeric_limits<double>::quiet_NaN();
}

// Three snapshots are the least thinning can work with: it keeps the oldest and the latest.
WhatIfSeries::WhatIfSeries(std::size_t maxSnapshots) : m_max(std::max<std::size_t>(maxSnapshots, 2)) {}

void WhatIfSeries::clear() {
    m_layers.clear();
    m_layerNames.clear();
    m_precision.clear();
    m_formats.clear();
    m_snapshots.clear();
    ++m_layout;
    ++m_revision;
}

std::size_t WhatIfSeries::layerRow(std::int32_t layer, const std::string& name) {
    for (std::size_t i = 0; i < m_layers.size(); ++i)
        if (m_layers[i].name == name) return i;
    // In the model's order; a layer seen for the first time after others gets an empty row in the
    // snapshots already kept.
    const auto at = std::upper_bound(m_layers.begin(), m_layers.end(), layer,
                                     [](std::int32_t l, const LayerKey& k) { return l < k.index; });
    const auto row = static_cast<std::size_t>(at - m_layers.begin());
    m_layers.insert(at, {layer, name});
    m_layerNames.insert(m_layerNames.begin() + static_cast<std::ptrdiff_t>(row), name);
    const std::size_t columns = m_formats.size();
    for (WhatIfSnapshot& s : m_snapshots)
        s.cells.insert(s.cells.begin() + static_cast<std::ptrdiff_t>(row * columns), columns, WhatIfCell{});
    ++m_layout;
    return row;
}

std::size_t WhatIfSeries::formatColumn(const ComputeFormat& format) {
    for (std::size_t i = 0; i < m_formats.size(); ++i)
        if (m_formats[i] == format) return i;
    // After the others: the run lists its formats in one order, and the first step gives it.
    const std::size_t columns = m_formats.size();
    m_formats.push_back(format);
    for (WhatIfSnapshot& s : m_snapshots) {
        std::vector<WhatIfCell> cells;
        cells.reserve(m_layers.size() * (columns + 1));
        for (std::size_t r = 0; r < m_layers.size(); ++r) {
            const auto from = s.cells.begin() + static_cast<std::ptrdiff_t>(r * columns);
            cells.insert(cells.end(), from, from + static_cast<std::ptrdiff_t>(columns));
            cells.emplace_back();
        }
        s.cells = std::move(cells);
    }
    ++m_layout;
    return columns;
}

WhatIfSnapshot& WhatIfSeries::snapshotFor(std::int64_t step) {
    const auto at = std::lower_bound(m_snapshots.begin(), m_snapshots.end(), step,
                                     [](const WhatIfSnapshot& s, std::int64_t v) { return s.step < v; });
    if (at != m_snapshots.end() && at->step == step) return *at;
    WhatIfSnapshot s;
    s.step = step;
    s.cells.resize(m_layers.size() * m_formats.size());
    return *m_snapshots.insert(at, std::move(s));
}

std::optional<std::size_t> WhatIfSeries::snapshotAt(std::int64_t step) const {
    const auto after = std::upper_bound(m_snapshots.begin(), m_snapshots.end(), step,
                                        [](std::int64_t v, const WhatIfSnapshot& s) { return v < s.step; });
    if (after == m_snapshots.begin()) return std::nullopt;
    return static_cast<std::size_t>(after - m_snapshots.begin()) - 1;
}

void WhatIfSeries::markCurrent(WhatIfSnapshot& s, std::size_t row) {
    const auto p = m_precision.find(m_layers[row].name);
    if (p == m_precision.end()) return;
    // Only the format noted at this very step: a layer's format can change between steps.
    const auto& history = p->second;
    const auto at = std::lower_bound(history.begin(), history.end(), s.step,
                                     [](const Precision& q, std::int64_t v) { return q.step < v; });
    if (at == history.end() || at->step != s.step) return;
    const std::size_t columns = m_formats.size();
    for (std::size_t c = 0; c < columns; ++c) s.cells[row * columns + c].current = m_formats[c] == at->format;
}

void WhatIfSeries::addRows(const std::vector<WhatIfRecord>& rows) {
    if (rows.empty()) return;
    // Every row and column first, so the grid is final before a cell is written.
    for (const WhatIfRecord& r : rows) {
        layerRow(r.layer, r.name);
        formatColumn(r.format);
    }
    const std::size_t columns = m_formats.size();
    std::vector<std::int64_t> steps;
    for (const WhatIfRecord& r : rows) {
        WhatIfSnapshot& s = snapshotFor(r.step);  // the same as the row before's, nearly always
        WhatIfCell& cell = s.cells[layerRow(r.layer, r.name) * columns + formatColumn(r.format)];
        cell.tensors = {WhatIfNumbers::from(r.input), WhatIfNumbers::from(r.weight),
                        WhatIfNumbers::from(r.grad_output)};
        cell.measured = true;
        if (steps.empty() || steps.back() != r.step) steps.push_back(r.step);
    }
    for (std::int64_t step : steps)
        for (std::size_t row = 0; row < m_layers.size(); ++row) markCurrent(m_snapshots[*snapshotAt(step)], row);
    thin();
    ++m_revision;
}

void WhatIfSeries::notePrecision(std::int64_t step, const std::string& name, const ComputeFormat& format) {
    auto& history = m_precision[name];
    const auto place = std::lower_bound(history.begin(), history.end(), step,
                                        [](const Precision& q, std::int64_t v) { return q.step < v; });
    if (place != history.end() && place->step == step)
        place->format = format;
    else
        history.insert(place, {step, format});  // at the end, but for a store read's stragglers
    if (history.size() > precisionHistory) history.pop_front();
    const auto at = snapshotAt(step);
    if (!at || m_snapshots[*at].step != step) return;  // its rows come later: they are marked then
    for (std::size_t row = 0; row < m_layers.size(); ++row)
        if (m_layers[row].name == name) {
            markCurrent(m_snapshots[*at], row);
            ++m_revision;
        }
}

std::optional<std::size_t> WhatIfSeries::currentFormat(std::size_t snapshot, std::size_t layer) const {
    for (std::size_t c = 0; c < m_formats.size(); ++c)
        if (cell(snapshot, layer, c).current) return c;
    return std::nullopt;
}

void WhatIfSeries::thin() {
    // Every other snapshot of the older half goes (the oldest stays); the newer half and so the
    // latest are kept whole. Past the limit by one, a thinning removes a quarter.
    while (m_snapshots.size() > m_max) {
        const std::size_t older = (m_snapshots.size() + 1) / 2;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < m_snapshots.size(); ++i)
            if (i >= older || i % 2 == 0) {
                if (kept != i) m_snapshots[kept] = std::move(m_snapshots[i]);
                ++kept;
            }
        m_snapshots.resize(kept);
    }
}

}  // namespace mantissa::ui
