// BlockDistributionPlot: one tensor's block-scale exponents over the run as a colour map (x:
// statistics step, y: exponent, colour: the fraction of the step's blocks at that exponent, on a
// log scale so a single block shows; empty cells blank), with a row "zero" under the exponents
// for blocks of zeros and a row "NaN" over them for blocks with a NaN or an infinity, each shown
// only when the tensor has such blocks. A dashed vertical line marks the step the map beside it
// shows. One column per statistics step while they fit in one per two pixels, else several merged.
// Hover: the step (or steps), the exponent, its scale and the blocks there; click: that step.
// GUI thread only; it reads a BlockScaleSeries it does not own.
#pragma once

#include <qcustomplot.h>

#include <cstdint>
#include <optional>

#include "series/block_scale_series.h"

namespace mantissa::ui {

class BlockDistributionPlot : public QCustomPlot {
    Q_OBJECT
public:
    explicit BlockDistributionPlot(QWidget* parent = nullptr);

    // Draws `tensor` of `series` (nullptr or nullopt: nothing). Call again after the series grew.
    void showTensor(const BlockScaleSeries* series, std::optional<std::size_t> tensor);
    void setMarker(std::optional<std::int64_t> step);

    const BlockScaleGrid& grid() const { return m_grid; }
    std::optional<std::int64_t> marker() const { return m_markerStep; }
    // The rows drawn for blocks of zeros and of NaNs (y in exponent units), when drawn.
    std::optional<int> zeroRow() const { return m_zeroRow; }
    std::optional<int> nanRow() const { return m_nanRow; }
    // What hovering at `pos` (widget pixels) says; empty off the data. For the tooltip and tests.
    QString toolTipAt(const QPointF& pos) const;
    // The statistics step nearest x pixel `x`; what a click there picks.
    std::optional<std::int64_t> stepAtPixel(double x) const;

signals:
    void stepClicked(std::int64_t step);

protected:
    bool event(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    bool valid() const;  // the tensor shown is still in the series
    void rebuild();
    void fitTicks();  // after a layout: the ticks for the axis rect's size

    const BlockScaleSeries* m_series = nullptr;
    std::optional<std::size_t> m_tensor;
    BlockScaleGrid m_grid;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemStraightLine* m_line = nullptr;
    std::optional<std::int64_t> m_markerStep;
    std::optional<int> m_zeroRow, m_nanRow;
    int m_yLow = 0, m_yHigh = 0;  // the rows drawn, in exponent units (zero and NaN rows included)
    QSize m_fitted;               // the axis rect's size the ticks were made for
    int m_builtWidth = -1;
};

}  // namespace mantissa::ui
