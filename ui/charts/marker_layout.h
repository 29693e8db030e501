// Where a chart puts the labels of its vertical markers (setting changes, injected overflows):
// along the top of the plot, just right of each line, or just left of it where the label would
// run past the plot's right edge; a label that would overlap one already placed goes one row down,
// up to a number of rows (a chart's height allows); beyond that it is left out rather than drawn
// over another (its line stays, and the taller charts of the panel, which share the markers, show
// it). The chart keeps its data below the rows the labels use (ChartView reserves that band above
// the data), so labels do not hide it.
//
// Pure geometry in pixels, header-only, so it is tested without a plot. GUI thread or any.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

namespace mantissa::ui {

struct MarkerLabelSlot {
    bool visible = false;  // the label is shown: its line is inside the plot and a row had room
    bool flipped = false;  // the label is left of its line
    double left = 0;       // the label's left edge, pixels
    int row = 0;           // 0: the top row
};

// `lines`: each marker's line in pixels; `widths`: each label's width (the result is in the same
// order). The plot spans [plotLeft, plotRight]; `gap` is the room between a line and its
// label and between neighbouring labels of a row.
inline std::vector<MarkerLabelSlot> placeMarkerLabels(const std::vector<double>& lines,
                                                      const std::vector<double>& widths, double plotLeft,
                                                      double plotRight, int maxRows, double gap = 3) {
    std::vector<MarkerLabelSlot> placed(lines.size());
    maxRows = std::max(1, maxRows);
    std::vector<double> rowEnd(static_cast<std::size_t>(maxRows), -std::numeric_limits<double>::infinity());
    // Left to right, whatever order the markers came in.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < lines.size() && i < widths.size(); ++i) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lines[a] < lines[b]; });
    for (std::size_t i : order) {
        MarkerLabelSlot& s = placed[i];
        const double x = lines[i], w = widths[i];
        if (!(x >= plotLeft && x <= plotRight)) continue;
        s.visible = true;
        s.left = x + gap;
        if (s.left + w > plotRight) {  // near the right edge: left of the line
            s.flipped = true;
            s.left = std::max(plotLeft, x - gap - w);
        }
        int row = -1;
        for (int r = 0; r < maxRows && row < 0; ++r)
            if (rowEnd[static_cast<std::size_t>(r)] + gap <= s.left) row = r;
        if (row < 0) {  // every row is taken here
            s.visible = false;
            continue;
        }
        s.row = row;
        rowEnd[static_cast<std::size_t>(row)] = std::max(rowEnd[static_cast<std::size_t>(row)], s.left + w);
    }
    return placed;
}

// The rows `placed` use (0 when no label is visible).
inline int markerLabelRows(const std::vector<MarkerLabelSlot>& placed) {
    int rows = 0;
    for (const MarkerLabelSlot& s : placed)
        if (s.visible) rows = std::max(rows, s.row + 1);
    return rows;
}

}  // namespace mantissa::ui
