// GradientHistogramView: a layer's gradient exponent histograms over a run as a heat map (x: step,
// y: log2 binade of |g|, colour: the fraction of that step's gradient elements, on a log scale so
// the tails show), with the representable ranges of fp16, bf16, fp8-e4m3 and fp8-e5m2 drawn across
// it (smallest subnormal, smallest normal, largest finite), and a bottom row for the elements that
// are zero. One sees gradients fall under fp16's subnormal floor and loss scaling lift them back.
//
// The zero row is what an underflow lesson is about, so it never shrinks to a sliver: it is at
// least minimumZeroRowHeight px tall whatever the span of binades (the binades share what is left),
// in its own colour ramp (pale: none, deep red: all), and labelled with the last step's share.
// The range lines' labels, and the zero row's, stand in a column right of the map (the axis rect's
// right margin), each at its line's height or moved just enough to clear its neighbours, with a
// leader from its line; one that cannot fit is left out (its line stays, in its format's colour),
// so no label covers another or the data.
//
// The caption names the compute format the shown steps ran in, as the store recorded it for the
// layer at each step (layer_steps.precision), with the steps where it changed.
//
// The recorded histograms describe the unscaled gradient (both backends histogram after the
// unscale pass); the default view shifts each step by log2 of its loss scale, showing the gradient
// as the compute format held it before unscaling. A combo switches to the unscaled view; a label
// always says which is shown.
//
// Data: a HistogramFeed (store path + run id + layer; follows a running run). Steps are decimated
// into at most one column per two pixels. Wiring: a dock or tab; setRun(path, id) when a run is
// opened or recorded; plot() for "Export…". GUI thread only.
//
// Short docks: the view is usable down to minimumShortHeight px (one row of controls, a one-line
// caption that wraps onto more lines when there is room and elides otherwise, the whole sentence
// in its tooltip, and a small plot whose ticks thin out and whose axis labels shorten or go rather
// than overlap or be cut). Narrow docks: the controls wrap onto more rows rather than make the
// view wider than its dock, so a side-scrolling dock does not cut the caption or the plot. In a
// QScrollArea (the main window's dock) they wrap only onto the rows its height holds, so the view
// is never taller than the area (it would be cut, the area scrolling sideways only); where even
// two rows do not fit, the controls keep one row and the area scrolls sideways, as it did.
#pragma once

#include <QPointer>
#include <QWidget>

#include "histogram/histogram_feed.h"
#include "histogram/histogram_series.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemText;
class QCheckBox;
class QComboBox;
class QLabel;

namespace mantissa::ui {

class GradientHistogramView : public QWidget {
    Q_OBJECT
public:
    explicit GradientHistogramView(QWidget* parent = nullptr);

    // The plot's least height in px, and the bound the whole view's minimumSizeHint() keeps to
    // (with a one-line status shown as well), so a bottom dock can be short.
    static constexpr int minimumPlotHeight = 64;
    static constexpr int minimumShortHeight = 130;
    // The height a dock gives the view when it is shown (raised as a tab, or floated): a plot of
    // about 150 px, where the y ticks and the four formats' range labels have room to spread out
    // instead of piling onto one row. The main window's DockLayout keeps to it.
    static constexpr int usableHeight = 240;
    static constexpr int usableWidth = 760;  // the row of controls and the plot at their natural size
    // The zero row's least height in px (more when the label font is taller).
    static constexpr int minimumZeroRowHeight = 14;

    // Shows `runId` from the store at `storePath`; an error sentence (also shown in the view), or empty.
    QString setRun(const QString& storePath, std::int64_t runId);
    void setLayer(const QString& name);
    void clear();

    // true: as the format held it (scaled by the loss scale, before unscaling); false: unscaled.
    void setAsHeld(bool asHeld);
    bool asHeld() const { return m_asHeld; }
    void setFormatShown(Format format, bool shown);  // fp16, bf16, fp8-e4m3, fp8-e5m2

    HistogramFeed* feed() { return &m_feed; }
    QCustomPlot* plot() const { return m_plot; }
    // What the map draws now, and the sentence that says which view it is.
    const HistogramGrid& grid() const { return m_grid; }
    QString viewLabel() const;
    // The y values of the bound lines drawn (log2 of the bounds), for tests.
    QList<double> boundLines() const;
    // For tests, in the plot's pixels as last laid out: the labels drawn beside the map (the
    // ranges' and the zero row's), the zero row, and the zero row's label text ("zero 100%").
    QList<QRectF> labelRects() const;
    QRectF zeroRowRect() const;
    QString zeroRowLabel() const { return m_zeroLabel; }

    // Rebuilds the map from the series now (otherwise coalesced on a zero-delay timer).
    void rebuildNow();

protected:
    bool event(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void scheduleRebuild();
    void rebuild();
    void rebuildBounds(double yLow, double yHigh);
    // The zero row's height for the axis rect's height, the y range, the y ticks (every 4, 8, 16 …
    // binades, and "zero") spaced for it, and the labels placed in its size.
    void fitToHeight();
    double pixelsPerBinade() const;
    // After each plot layout: ticks and axis labels for the axis rect's height (charts/axis_fit.h).
    void fitAxesToHeight();
    void onLayersChanged(const QStringList& layers);
    // The rows the controls may wrap onto: as many as the enclosing scroll area's height holds
    // (with the sideways scroll bar where the width they then need is more than it has); any
    // number outside a scroll area.
    void fitControlsToRoom();

    HistogramFeed m_feed;
    HistogramGrid m_grid;
    QComboBox* m_layerChoice = nullptr;
    QComboBox* m_viewChoice = nullptr;
    QList<QCheckBox*> m_formatChecks;
    QLayout* m_controls = nullptr;   // the wrapping row of the controls
    QPointer<QWidget> m_scrollArea;  // the QScrollArea the view is the widget of, if any (watched)
    QLabel* m_caption = nullptr;
    QLabel* m_status = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorMap* m_zeroMap = nullptr;  // the zero row: its own colours, no colour scale
    QCPColorScale* m_scale = nullptr;
    QList<double> m_boundYs;
    QList<QCPItemText*> m_labels;  // beside the map: the ranges' and the zero row's (the plot owns them)
    QString m_zeroLabel;
    // The y span drawn, in binades: the map from m_yLow to m_yHigh, a gap of one binade, and below
    // it the zero row, m_zeroHeight binades tall (from m_zeroBottom), as fitToHeight() sized it.
    int m_yLow = -26, m_yHigh = 18;
    double m_zeroHeight = 1, m_zeroBottom = -28;
    QSize m_fittedSize;  // the axis rect size fitToHeight() last saw
    bool m_asHeld = true;
    bool m_rebuildQueued = false;
};

}  // namespace mantissa::ui
