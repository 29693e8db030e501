// ChartView: one QCustomPlot chart whose graphs are drawn from LodSeries, re-queried for the
// visible step window at the axis rect's pixel width, so a redraw costs the same at 10^3 or 10^6
// points. It adds what every Mantissa chart has: y that fits the visible data, a crosshair with a
// read-out of each graph's value at the hovered step (wrapped to the plot's width, cleared when
// the mouse leaves; the values of one axis in one number style, number_format.h), labelled
// vertical markers for setting changes and injected overflows (labels along the top, kept inside
// the plot and above the data: marker_layout.h), and colours from the system palette (light or
// dark). However short the chart, its value axes keep their tick labels apart and show their
// labels whole or not at all (axis_fit.h). Every chart numbers its step axis, so a chart scrolled
// apart from the others still says where it is.
//
// What is drawn is always what the series hold at the plot's real size: the graphs are queried
// for the x range and the axis rect's width they are drawn at, and queried again after any layout
// that changed either (a chart filled before it was shown, at no width, would otherwise draw its
// whole run as the two or three points of one column until the next zoom).
//
// The x axis is the training step; ChartsPanel keeps the charts' x ranges in step. Zoom (wheel)
// and pan (drag) act on x only; y always fits what is visible.
//
// GUI thread only. The LodSeries a graph draws from must outlive it (or removeAllSeries()).
#pragma once

#include <functional>
#include <vector>

#include <qcustomplot.h>

#include "series/lod_series.h"
#include "series/run_series.h"

class QMenu;

namespace mantissa::ui {

enum class GraphStyle {
    line,       // a line through the points
    dashedLine, // the same, dashed (a second stat of the same op: a layer's weight-gradient sums)
    faintLine,  // a thin translucent line (raw data under its smoothed version)
    steps,      // a step function: the value holds until the next point (loss scale)
    points,     // circles, no line (evaluations)
    markers,    // red triangles, no line (overflows)
    stacked,    // a line filled down to the previous stacked graph (or to zero)
    overlay,       // another run drawn faintly over the live ones: a thin translucent dashed line
    overlaySteps,  // the same as a step function (loss scale)
};

class ChartView : public QCustomPlot {
    Q_OBJECT
public:
    explicit ChartView(const QString& valueLabel, QWidget* parent = nullptr);

    // Adds a graph drawing `series` (scaled by `factor` for display: fraction -> %, bytes -> MiB).
    QCPGraph* addSeries(const LodSeries* series, const QString& name, const QColor& color, GraphStyle style,
                        bool rightAxis = false, double factor = 1);
    // Replaces the default read-out of a graph (its value at the hovered step).
    void setReadout(QCPGraph* graph, std::function<QString(double step)> readout);
    void setFactor(QCPGraph* graph, double factor);
    void removeAllSeries();

    // The left axis' label, and shorter forms (longest first) shown when the plot is too short for
    // it ("memory (MiB)", {"MiB"}); none fitting, no label: the legend still says what is drawn.
    void setValueLabel(const QString& label, const QStringList& shorter = {});
    // The values' unit on the left axis' tick labels and in the read-out ("%"), for a linear axis:
    // it stays readable when the axis label is shortened or hidden.
    void setValueSuffix(const QString& suffix);
    QString valueLabel() const { return m_leftLabels.value(0); }
    // Every form of `axis`' label (yAxis or yAxis2), the full one first; the axis shows one of them.
    QStringList labelForms(const QCPAxis* axis) const;
    // A small note above the plot, left of the legend (empty: none), e.g. that figures are modelled.
    // Shown where it fits beside the legend.
    void setNote(const QString& note);
    // At most this many legend items a row (6); fewer, in more rows, where the chart is too narrow
    // for them: an item is never cut.
    void setLegendColumns(int columns);
    // Logarithmic left axis with ticks at powers of `base` (2 for the loss scale, 10 for loss).
    void setLogarithmic(bool on, double base = 10);
    bool logarithmic() const { return yAxis->scaleType() == QCPAxis::stLogarithmic; }
    // Linear left axis always shows 0 (memory, throughput, underflow). Data that touches 0 is drawn
    // a few pixels above the axis, not on it; all zeros keep the empty chart's 0..1.
    void setIncludeZero(bool on) { m_includeZero = on; }
    // A horizontal reference line at `value` on the left axis (dash-dotted), always in the fitted
    // range: how far the data is from a limit. Its label ("FP16 max 65504") is the legend's last
    // entry, in the header above the plot, so it never covers the data drawn near the line; the
    // legend is shown for it even while the chart has no graphs. NaN removes it.
    void setReferenceLine(double value, const QString& label);
    double referenceValue() const { return m_referenceValue; }
    bool hasReferenceLine() const { return m_referenceLine != nullptr; }
    // The reference line's label as last laid out, in widget pixels (empty: none, or not shown).
    QRect referenceLabelRect() const;
    QString referenceLabelText() const;
    // The right axis shows `range` fixed (accuracy 0..100 %) and is labelled (shorter forms as above).
    void setRightAxis(const QString& label, QCPRange range, const QStringList& shorter = {});
    // The step axis' tick labels shown or not, and with them its label (setXLabel, "step" unless
    // told) where `labelled`: the charts of a panel number their steps on each chart and name the
    // axis on the bottom one.
    void setXTickLabels(bool on, bool labelled = true);
    void setXLabel(const QString& label);
    QString xLabel() const { return m_xLabel; }
    // Left and right margins in pixels, equal on every chart so the step axes line up.
    void setSideMargins(int left, int right);

    // Right-click offers "Export chart…" (PNG, SVG or PDF at a chosen size, ChartExportDialog) under
    // `name` ("loss"), and "Export all charts…" stacked in one file when the chart is one of a
    // group (`group` returns the group's charts at the moment of the export).
    void setExportName(const QString& name) { m_exportName = name; }
    void setExportGroup(std::function<QList<QCustomPlot*>()> group) { m_exportGroup = std::move(group); }
    // Entries of the chart's owner after the export ones (a stored run's "Branch from the
    // checkpoint at step ≤ N…"): `extend` gets the menu and the step under the cursor. Empty: none.
    using MenuExtension = std::function<void(QMenu& menu, double step)>;
    void setMenuExtension(MenuExtension extend) { m_menuExtension = std::move(extend); }
    // Fills `menu` as a right-click at `pos` (widget pixels) shows it; public for tests.
    void fillContextMenu(QMenu& menu, const QPoint& pos);

    // Re-queries every graph for the current x range and fits y; then a queued (or immediate) replot.
    void refreshData(bool immediate = false);
    void setXRange(const QCPRange& range);   // programmatic: does not emit userChangedRange
    void setCrosshair(double step);          // NaN hides it
    bool crosshairShown() const { return m_crosshair->visible(); }
    QString readoutShown() const;            // the read-out's text while it is shown, else ""
    void setMarkers(const std::vector<ChartMarker>& markers);
    std::size_t markerCount() const { return m_markers.size(); }
    // Marker i's label as last laid out: its text and its rectangle in widget pixels (empty when
    // its line is outside the plot).
    QString markerLabelText(std::size_t i) const;
    QRectF markerLabelRect(std::size_t i) const;
    int markerLabelRows() const { return m_markerRows; }

    // Exports (ui/export) draw the chart as a reader sees it without a mouse over it: no crosshair
    // or read-out, and its step axis labelled even where the panel shows it only on the bottom
    // chart (labelXAxis). endExport() restores what the screen showed.
    void beginExport(bool labelXAxis);
    void endExport();

    // A value as this chart's read-out writes it alone: powers of two on a log2 axis ("2^17
    // (131072)"), otherwise 4 significant digits (ReadoutNumberStyle), and the axis' unit
    // (setValueSuffix). Beside other values of its axis it takes their shared style.
    QString formatReadoutValue(double value) const;
    // The min/max columns the graphs were last queried for (one per two pixels of the plot's width
    // once it is laid out): for tests.
    int queriedColumns() const { return m_queriedColumns; }
    // The points the graphs currently draw (for tests and the benchmark).
    int drawnPoints() const;
    // What the crosshair read-out says at `step`: "step 120   loss 0.41   smoothed 0.43".
    QString readoutText(double step) const;
    // The same, as the read-out shows it: wrapped into lines that fit the plot's width, a value
    // never split.
    QString readoutLines(double step) const;
    QString noteText() const;  // as set (setNote), whether or not it fits beside the legend now

    // Narrow: a chart wraps its legend into more rows rather than widen the window (QCustomPlot
    // would ask for the legend's full width; setLegendColumns). As short as the header row (the
    // legend whole) and the axes with a small plot allow, measured at each layout: a splitter
    // never squeezes the legend's text.
    QSize minimumSizeHint() const override { return {240, m_minimumHeight}; }

signals:
    void crosshairRequested(double step);       // the mouse moved over the plot (NaN: it left)
    void userChangedRange(const QCPRange& range);

protected:
    // A chart laid out at no size (hidden in a splitter, or sent its pending resize by a grab of the
    // window) skips QCustomPlot's replot: there is nothing to draw into.
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    bool event(QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Binding {
        QCPGraph* graph = nullptr;
        const LodSeries* series = nullptr;
        GraphStyle style = GraphStyle::line;
        double factor = 1;
        QString name;
        std::function<QString(double)> readout;
        double penWidth = 1;  // when the data is sparse enough to draw smooth
    };
    struct MarkerItems {
        QCPItemStraightLine* line = nullptr;
        QCPItemText* label = nullptr;
        ChartMarker marker;
    };
    struct ExportState {
        bool active = false;
        bool crosshair = false, readout = false, xTickLabels = false;
        QString xAxisLabel;
    };

    void applyPalette();
    // Queries every graph for the current x range at the axis rect's width (no replot).
    void queryGraphs();
    int queryColumns() const;  // min/max columns for the axis rect's width (one per two pixels)
    // Places the marker labels for the current layout; true when the rows they take changed.
    bool layoutMarkerLabels();
    void styleMarker(MarkerItems& m) const;
    void fitValueAxes();
    // The left axis of a chart with nothing to draw: 0..1 (log: 1..2), or around the reference line.
    void setEmptyRange();
    // After each layout: tick spacing and label forms for the axis rect's height (axis_fit.h).
    void fitAxesToHeight();
    // After each layout: legend columns and the note for the header's width. true: re-lay out.
    bool fitHeaderToWidth();
    int legendWidth(int columns) const;  // the legend's width with `columns` items a row
    void showContextMenu(const QPoint& pos);
    Binding* binding(QCPGraph* graph);
    QStringList readoutParts(double step) const;  // "step 120", then each visible graph's value

    std::vector<Binding> m_bindings;
    std::vector<MarkerItems> m_markers;
    int m_markerRows = 0;       // rows of marker labels at the top (the band kept above the data)
    int m_queriedColumns = -1;  // what the graphs were last queried for
    int m_fittedHeight = -1;    // the plot height y was last fitted at (the label band depends on it)
    QCPRange m_queriedRange;
    bool m_powerOfTwoValues = false;  // a log2 axis: read-outs say 2^k
    QString m_xLabel;
    ExportState m_export;
    QCPItemStraightLine* m_crosshair = nullptr;
    QCPItemStraightLine* m_referenceLine = nullptr;  // setReferenceLine (null: none)
    QCPAbstractLegendItem* m_referenceItem = nullptr;  // its label, in the legend
    double m_referenceValue = qQNaN();
    QCPItemText* m_readout = nullptr;
    QCPTextElement* m_note = nullptr;   // left of the legend, in the header row
    QCPLayoutGrid* m_header = nullptr;  // the row above the plot that holds the legend
    int m_minimumHeight = 60;
    int m_legendColumns = 6;
    QString m_noteText;  // what setNote() asked for; m_note shows it only where it fits
    QStringList m_leftLabels;   // yAxis' label, full form first
    QStringList m_rightLabels;  // yAxis2's (empty: no right axis)
    QString m_valueSuffix;      // the left axis' unit on its ticks and in the read-out
    QVector<QCPGraphData> m_scratch;
    std::vector<SeriesPoint> m_points;
    bool m_includeZero = false;
    bool m_settingRange = false;
    double m_crosshairStep = qQNaN();
    QString m_exportName = QStringLiteral("chart");
    std::function<QList<QCustomPlot*>()> m_exportGroup;
    MenuExtension m_menuExtension;
};

// The qualitative colours every chart uses (Tableau 10): readable on light and dark backgrounds.
QColor seriesColor(int index);

// `parts` joined three spaces apart into lines of at most `width` pixels, broken between parts
// only; a part wider than `width` has a line of its own (and is clipped).
QString wrapReadout(const QStringList& parts, const QFontMetrics& metrics, int width);

}  // namespace mantissa::ui
