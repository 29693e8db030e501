// LodSeries: one chart series (x non-decreasing, usually the step) with a min/max level-of-detail
// pyramid, so drawing any x window at a given pixel width costs O(width), not O(points).
//
// Why this shape: a chart a thousand pixels wide shows at most a thousand columns; a line through
// each column's smallest and largest value draws the same picture as all of its points (the M4/
// min-max idea PlotJuggler and most scopes use). The pyramid keeps, per level k >= 1, one bucket
// per 4^k consecutive points holding the indices of its minimum and maximum; a query picks the
// level whose buckets are just finer than the requested resolution, merges a bounded number of them
// per output column, and returns each column's min and max in x order. Appends update one bucket
// per level (O(log4 n)); the raw points stay, for zoomed-in views and exact read-outs.
//
// Non-finite y values (an overflowed loss) are kept in the raw data for read-outs but never drawn
// and never enter a bucket's min/max.
//
// Plain C++ with no Qt, so it can be tested and benchmarked alone. Not thread-safe: the GUI thread
// owns every series.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mantissa::ui {

struct SeriesPoint {
    double x = 0;
    double y = 0;
};

class LodSeries {
public:
    // Appends a point; x must be >= the last x (steps only grow). A smaller x is clamped to the
    // last x so the invariant holds even if a producer misbehaves.
    void append(double x, double y);
    void clear();
    void reserve(std::size_t points);

    std::size_t size() const { return m_x.size(); }
    bool empty() const { return m_x.empty(); }
    double x(std::size_t i) const { return m_x[i]; }
    double y(std::size_t i) const { return m_y[i]; }
    double lastX() const { return m_x.empty() ? 0.0 : m_x.back(); }
    double lastY() const { return m_y.empty() ? 0.0 : m_y.back(); }

    // The points to draw for the window [x0, x1] at `columns` output columns: the finite raw points
    // when there are few enough, otherwise each column's minimum and maximum in x order (so at most
    // 2 * columns points, plus one point on either side of the window so lines reach its edges;
    // a summary always starts and ends at the window's first and last finite points).
    // Cost: O(log n + columns * 4), independent of how many points lie in the window.
    // collapseFlat: of a run of consecutive points with the same y keep only the first and the
    // last; a line through them is the same line (memory, loss scale and zero underflow are mostly
    // flat), but markers would be lost, so point styles leave it off.
    // Returns true when `out` is a min/max summary, false when it holds the raw points.
    bool query(double x0, double x1, std::size_t columns, std::vector<SeriesPoint>& out,
               bool collapseFlat = false) const;

    // The raw point whose x is nearest to `x` (ties: the earlier one); empty for an empty series.
    std::optional<SeriesPoint> nearest(double x) const;
    // The last raw point with x <= `x`, for step-function series (loss scale); empty if none.
    std::optional<SeriesPoint> atOrBefore(double x) const;

    // Bytes held (raw points and pyramid), for the benchmark's report.
    std::size_t memoryBytes() const;

private:
    static constexpr std::uint32_t none = 0xffffffffu;  // a bucket with no finite point
    static constexpr int fanOutBits = 2;                 // 4 children per bucket
    struct Bucket {
        std::uint32_t imin = none;  // raw index of the smallest finite y
        std::uint32_t imax = none;  // raw index of the largest finite y
    };

    void mergeInto(Bucket& into, const Bucket& from) const;
    void mergePoint(Bucket& into, std::uint32_t i) const;
    void appendBucket(const Bucket& b, std::vector<SeriesPoint>& out) const;
    bool queryPoints(double x0, double x1, std::size_t columns, std::vector<SeriesPoint>& out) const;
    // First raw index with x >= value, and first with x > value.
    std::size_t lowerIndex(double value) const;
    std::size_t upperIndex(double value) const;

    std::vector<double> m_x;
    std::vector<float> m_y;                  // float: a chart needs 7 digits, halves the memory
    std::vector<std::vector<Bucket>> m_levels;  // m_levels[k-1]: buckets of 4^k points
};

}  // namespace mantissa::ui
