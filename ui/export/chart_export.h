// Chart export: any QCustomPlot (so any ChartView, the histogram heat map) written as PNG, SVG or
// PDF at a chosen size, alone or several stacked into one image.
//
// Every function returns an empty string on success and otherwise one sentence for a person (what
// was wrong, how to fix it); none throws. The plot is redrawn at the asked size only for the
// export: what is on screen is not changed (a queued replot restores its layout). A ChartView is
// exported as a reader sees it without a mouse over it: no hover crosshair or read-out, and its step
// axis always labelled (on a chart alone, and on the bottom chart of a stack).
//
// GUI thread only (the plots are widgets).
#pragma once

#include <optional>

#include <QList>
#include <QString>

class QCustomPlot;

namespace mantissa::ui {

enum class ChartFileFormat { png, svg, pdf };

// "png", "svg", "pdf" from a file name's suffix (case-insensitive); empty for any other suffix.
std::optional<ChartFileFormat> chartFormatFromPath(const QString& path);
QString chartFormatSuffix(ChartFileFormat format);  // "png"

struct ChartExportSize {
    int width = 0;     // logical pixels (points for PDF); 0: the plot's current width
    int height = 0;    // 0: the plot's current height
    double scale = 1;  // PNG only: device pixels per logical pixel (2: a sharp image for print)
};

// Writes `plot` to `path` in the format its suffix names.
QString exportChart(QCustomPlot* plot, const QString& path, const ChartExportSize& size = {});
// The same with the format given (the path's suffix is not checked).
QString exportChart(QCustomPlot* plot, const QString& path, ChartFileFormat format, const ChartExportSize& size);

// Several plots one above the other in one file, each `size.width` × `size.height` (0: each its own
// current size; the image is as wide as the widest).
QString exportChartsStacked(const QList<QCustomPlot*>& plots, const QString& path, const ChartExportSize& size = {});

}  // namespace mantissa::ui
