// BlockMapPlot: one tensor's blocks at one statistics step as a heat map: x the block's index
// along the reduction dimension, y the row (top to bottom; a sample's rows labelled by their real
// index), colour the block's scale exponent on a colour bar spanning the tensor's exponents over
// the whole run (so moving the step does not repaint the scale), blocks of zeros and blocks with a
// NaN or an infinity in flat colours of their own (block_plot_style.h). Hover: the row, the block
// and the values k0…k1 it covers, its exponent and scale (for NVFP4, what that scale is).
// It keeps a copy of the map it draws, so the series may drop its own meanwhile.
// GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "series/block_scale_series.h"

namespace mantissa::ui {

class BlockMapPlot : public QCustomPlot {
    Q_OBJECT
public:
    explicit BlockMapPlot(QWidget* parent = nullptr);

    // Draws the map of steps(tensor)[stepIndex] when the series holds it; false (and an empty
    // plot) when it does not.
    bool showMap(const BlockScaleSeries& series, std::size_t tensor, std::size_t stepIndex);
    void clearMap();

    bool hasMap() const { return !m_exponents.empty(); }
    const BlockScaleStep& step() const { return m_step; }
    // The exponents the colour bar spans (the tensor's over the run); nullopt with no map.
    std::optional<std::pair<int, int>> colourRange() const { return m_range; }
    // The pixel at the centre of a block's cell (widget coordinates), and what hovering there says.
    QPointF cellCentre(std::int64_t row, std::int64_t block) const;
    QString toolTipAt(const QPointF& pos) const;

protected:
    bool event(QEvent* event) override;

private:
    void fitTicks();  // after a layout: ticks for the axis rect's size

    QCPColorMap* m_values = nullptr;   // the exponents
    QCPColorMap* m_special = nullptr;  // 0: a block of zeros, 1: a NaN block, NaN: neither
    QCPColorScale* m_scale = nullptr;
    BlockScaleStep m_step;
    std::vector<std::int16_t> m_exponents;
    std::optional<std::pair<int, int>> m_range;
    QSize m_fitted;
};

}  // namespace mantissa::ui
