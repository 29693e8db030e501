// GradientHistogramView: a layer's gradient exponent histograms over a run as a heat map (x: step,
// y: log2 binade of |g|, colour: the fraction of that step's gradient elements, on a log scale so
// the tails show), with the representable ranges of fp16, bf16, fp8-e4m3 and fp8-e5m2 drawn across
// it (smallest subnormal, smallest normal, largest finite; labelled), and a bottom row for the
// elements that are zero. One sees gradients fall under fp16's subnormal floor and loss scaling
// lift them back.
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
// than overlap or be cut).
#pragma once

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
    static constexpr int usableWidth = 760;   // the row of controls at its natural size

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

    // Rebuilds the map from the series now (otherwise coalesced on a zero-delay timer).
    void rebuildNow();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void scheduleRebuild();
    void rebuild();
    void rebuildBounds(double yLow, double yHigh);
    // The y ticks (every 4, 8, 16 … binades, and "zero") spaced for the axis rect's height, and the
    // bound labels placed in its size.
    void fitToHeight();
    double pixelsPerBinade() const;
    // After each plot layout: ticks and axis labels for the axis rect's height (charts/axis_fit.h).
    void fitAxesToHeight();
    void onLayersChanged(const QStringList& layers);

    HistogramFeed m_feed;
    HistogramGrid m_grid;
    QComboBox* m_layerChoice = nullptr;
    QComboBox* m_viewChoice = nullptr;
    QList<QCheckBox*> m_formatChecks;
    QLabel* m_caption = nullptr;
    QLabel* m_status = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QList<double> m_boundYs;
    int m_yLow = -26, m_yHigh = 18, m_zeroExp = -28;  // the y span drawn, in binades
    QSize m_fittedSize;                               // the axis rect size fitToHeight() last saw
    bool m_asHeld = true;
    bool m_rebuildQueued = false;
};

}  // namespace mantissa::ui
