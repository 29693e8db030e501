// LodSeries: the min/max pyramid (see lod_series.h for why it is built this way).
#include "series/lod_series.h"

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

void LodSeries::clear() {
    m_x.clear();
    m_y.clear();
    m_levels.clear();
}

void LodSeries::reserve(std::size_t points) {
    m_x.reserve(points);
    m_y.reserve(points);
}

void LodSeries::mergePoint(Bucket& into, std::uint32_t i) const {
    const float v = m_y[i];
    if (!std::isfinite(v)) return;
    if (into.imin == none) {
        into.imin = into.imax = i;
        return;
    }
    if (v < m_y[into.imin]) into.imin = i;
    if (v > m_y[into.imax]) into.imax = i;
}

void LodSeries::mergeInto(Bucket& into, const Bucket& from) const {
    if (from.imin == none) return;
    if (into.imin == none) {
        into = from;
        return;
    }
    if (m_y[from.imin] < m_y[into.imin]) into.imin = from.imin;
    if (m_y[from.imax] > m_y[into.imax]) into.imax = from.imax;
}

void LodSeries::append(double x, double y) {
    if (!m_x.empty() && !(x >= m_x.back())) x = m_x.back();
    const auto i = static_cast<std::uint32_t>(m_x.size());
    m_x.push_back(x);
    m_y.push_back(static_cast<float>(y));

    for (std::size_t k = 1; k <= m_levels.size(); ++k) {
        auto& level = m_levels[k - 1];
        const std::size_t b = i >> (fanOutBits * k);
        if (b == level.size()) level.emplace_back();
        mergePoint(level[b], i);
    }
    // A new level appears when the point count first passes 4^(levels+1); it is built from the
    // level below (or the raw points), which is complete up to here.
    while ((static_cast<std::size_t>(i) >> (fanOutBits * (m_levels.size() + 1))) >= 1) {
        const std::size_t k = m_levels.size() + 1;
        std::vector<Bucket> level((static_cast<std::size_t>(i) >> (fanOutBits * k)) + 1);
        if (k == 1) {
            for (std::uint32_t p = 0; p <= i; ++p) mergePoint(level[p >> fanOutBits], p);
        } else {
            const auto& below = m_levels[k - 2];
            for (std::size_t c = 0; c < below.size(); ++c) mergeInto(level[c >> fanOutBits], below[c]);
        }
        m_levels.push_back(std::move(level));
    }
}

std::size_t LodSeries::lowerIndex(double value) const {
    return static_cast<std::size_t>(std::lower_bound(m_x.begin(), m_x.end(), value) - m_x.begin());
}

std::size_t LodSeries::upperIndex(double value) const {
    return static_cast<std::size_t>(std::upper_bound(m_x.begin(), m_x.end(), value) - m_x.begin());
}

void LodSeries::appendBucket(const Bucket& b, std::vector<SeriesPoint>& out) const {
    if (b.imin == none) return;
    const std::uint32_t first = std::min(b.imin, b.imax);
    const std::uint32_t second = std::max(b.imin, b.imax);
    out.push_back({m_x[first], m_y[first]});
    if (second != first) out.push_back({m_x[second], m_y[second]});
}

namespace {
// Keeps the first and the last point of every run of equal y.
void collapseFlatRuns(std::vector<SeriesPoint>& points) {
    if (points.size() < 3) return;
    std::size_t kept = 1;
    for (std::size_t i = 1; i + 1 < points.size(); ++i) {
        const bool middleOfRun = points[i].y == points[kept - 1].y && points[i].y == points[i + 1].y;
        if (!middleOfRun) points[kept++] = points[i];
    }
    points[kept++] = points.back();
    points.resize(kept);
}
}  // namespace

bool LodSeries::query(double x0, double x1, std::size_t columns, std::vector<SeriesPoint>& out,
                      bool collapseFlat) const {
    const bool summary = queryPoints(x0, x1, columns, out);
    if (collapseFlat) collapseFlatRuns(out);
    return summary;
}

bool LodSeries::queryPoints(double x0, double x1, std::size_t columns, std::vector<SeriesPoint>& out) const {
    out.clear();
    const std::size_t n = m_x.size();
    if (n == 0 || !(x1 >= x0)) return false;
    columns = std::max<std::size_t>(columns, 1);
    // One point beyond either edge, so lines run to the window's borders.
    std::size_t a = lowerIndex(x0);
    std::size_t b = upperIndex(x1);
    if (a > 0) --a;
    if (b < n) ++b;
    if (a >= b) return false;
    const std::size_t count = b - a;
    if (count <= 2 * columns) {
        for (std::size_t i = a; i < b; ++i)
            if (std::isfinite(m_y[i])) out.push_back({m_x[i], m_y[i]});
        return false;
    }
    // Points per column; the coarsest level whose buckets hold no more than that, and how many of
    // its buckets make one column (1 to 4, rounded up so there are at most `columns` columns).
    const std::size_t perColumn = count / columns;
    std::size_t k = 0;
    while (k < m_levels.size() && (std::size_t{1} << (fanOutBits * (k + 1))) <= perColumn) ++k;
    const std::size_t unit = std::size_t{1} << (fanOutBits * k);
    const std::size_t group = std::max<std::size_t>(1, (count + columns * unit - 1) / (columns * unit));
    const std::size_t firstUnit = a >> (fanOutBits * k);
    const std::size_t lastUnit = (b - 1) >> (fanOutBits * k);
    out.reserve(2 * ((lastUnit - firstUnit) / group + 2));
    for (std::size_t u = firstUnit; u <= lastUnit; u += group) {
        Bucket column;
        const std::size_t end = std::min(u + group, lastUnit + 1);
        for (std::size_t v = u; v < end; ++v) {
            if (k == 0)
                mergePoint(column, static_cast<std::uint32_t>(v));
            else
                mergeInto(column, m_levels[k - 1][v]);
        }
        appendBucket(column, out);
    }
    // The window's first and last finite points are drawn whatever the buckets' extremes, so a line
    // or a step function spans the whole window: a flat tail's bucket gives only its first point,
    // and a step function drawn through it would stop short of the series' end.
    std::size_t first = a, last = b - 1;
    while (first < b && !std::isfinite(m_y[first])) ++first;
    while (last > first && !std::isfinite(m_y[last])) --last;
    if (first < b) {
        const SeriesPoint head{m_x[first], m_y[first]}, tail{m_x[last], m_y[last]};
        if (out.empty() || out.front().x != head.x || out.front().y != head.y) out.insert(out.begin(), head);
        if (out.back().x != tail.x || out.back().y != tail.y) out.push_back(tail);
    }
    return true;
}

std::optional<SeriesPoint> LodSeries::nearest(double x) const {
    if (m_x.empty()) return std::nullopt;
    std::size_t i = lowerIndex(x);
    if (i == m_x.size()) i = m_x.size() - 1;
    // Among equal x the earliest wins; step back to the first of a run of equal values.
    if (i > 0 && std::abs(m_x[i - 1] - x) <= std::abs(m_x[i] - x)) {
        --i;
        while (i > 0 && m_x[i - 1] == m_x[i]) --i;
    }
    return SeriesPoint{m_x[i], m_y[i]};
}

std::optional<SeriesPoint> LodSeries::atOrBefore(double x) const {
    const std::size_t i = upperIndex(x);
    if (i == 0) return std::nullopt;
    return SeriesPoint{m_x[i - 1], m_y[i - 1]};
}

std::size_t LodSeries::memoryBytes() const {
    std::size_t bytes = m_x.capacity() * sizeof(double) + m_y.capacity() * sizeof(float);
    for (const auto& level : m_levels) bytes += level.capacity() * sizeof(Bucket);
    return bytes;
}

}  // namespace mantissa::ui
