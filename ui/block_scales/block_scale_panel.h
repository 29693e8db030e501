// BlockScalePanel: the block scales of a block-quantised matmul operand (MXFP8/MXFP6/MXFP4 with
// 32-value blocks and a power-of-two E8M0 scale, NVFP4 with 16-value blocks), from the engine's
// block-scale views (train.block_scales; docs/gui.md, "Block scales"):
//   - a picker of the tensors that have views ("fc1 · x (mxfp4, own)");
//   - a caption line: the format, rows and blocks, the exponents' range and median, zero and NaN
//     blocks, at the step shown;
//   - left, the distribution of the tensor's block exponents at every statistics step
//     (BlockDistributionPlot), a dashed line at the step shown; a click there picks a step;
//   - right, that step's blocks (BlockMapPlot), with a legend line for the flat colours of blocks
//     of zeros and of NaN blocks, and the maps held within the budget;
//   - a step slider: at its right end (or after Latest) the panel follows the newest step; moved
//     left it stays on its step while the run goes on.
// A step whose map the series no longer holds (block_scale_series.h) is read again through the
// map loader when there is one (a run reopened from the store); otherwise, live, the panel says
// in a sentence why it is not there. Without views, one sentence says why (Expectation).
//
// It reads a BlockScaleSeries (RunSeries::blockScales), so the live window and a reopened run show
// the same thing. GUI thread only.
#pragma once

#include <QWidget>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "block_scales/block_scale_text.h"
#include "series/block_scale_series.h"

class QComboBox;
class QLabel;
class QSlider;
class QSplitter;
class QStackedWidget;
class QToolButton;

namespace mantissa::ui {

class BlockDistributionPlot;
class BlockMapPlot;

class BlockScalePanel : public QWidget {
    Q_OBJECT
public:
    // The height at which the two plots are read without squinting (a plot of about 200 px):
    // DockLayout gives the bottom docks this when the panel's tab is raised.
    static constexpr int usableHeight = 320;

    // Reads the maps of `step` (and its neighbours) into the series again; returns an error
    // sentence, or empty when the read went through.
    using MapLoader = std::function<QString(std::int64_t step)>;

    explicit BlockScalePanel(QWidget* parent = nullptr);

    // Shows `series` (nullptr: none), following its newest step.
    void setSeries(const BlockScaleSeries* series);
    // After new telemetry: new tensors, the newest step when following, the slider's range.
    void sync();
    // What the run gives, for the sentence shown while there are no views.
    void setExpectation(blockscale::Expectation expectation);
    void setMapLoader(MapLoader loader);
    // Whether the plots can be seen (a dock's tab behind another cannot, though Qt calls it visible):
    // while not, sync() keeps the words and the slider and leaves the plots, which catch up here.
    void setDrawing(bool drawing);
    bool drawing() const { return m_drawing && isVisible(); }

    void setTensor(std::size_t index);  // an index into the series' tensors()
    // Shows `step` (or the tensor's latest step before it); follows again when it is the newest.
    void showStep(std::int64_t step);
    void followLatest();
    bool following() const { return m_following; }
    std::optional<std::size_t> shownTensor() const { return m_tensor; }
    std::optional<std::int64_t> shownStep() const;

    QComboBox* tensorPicker() const { return m_picker; }
    QSlider* stepSlider() const { return m_slider; }
    QToolButton* latestButton() const { return m_latest; }
    BlockDistributionPlot* distributionPlot() const { return m_distribution; }
    BlockMapPlot* mapPlot() const { return m_map; }
    // What is on screen (for tests): the empty state's sentence when shown, the caption, the step
    // line, the legend line (plain text), the maps held, the sentence shown instead of a missing map.
    bool showsEmptyState() const;
    QString emptyText() const;
    QString captionText() const;
    QString stepText() const;
    QString legendText() const;
    QString heldText() const;
    QString missingMapText() const;

protected:
    void changeEvent(QEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void rebuildPicker();
    void refresh(bool redrawDistribution);  // slider, step line, caption, legend, both plots
    void drawPlots();                       // the distribution (when stale), its marker and the map of the step shown
    void showShownMap();
    void updateLegend();
    void onSliderMoved(int value);

    const BlockScaleSeries* m_series = nullptr;
    blockscale::Expectation m_expectation = blockscale::Expectation::none;
    MapLoader m_loader;
    std::optional<std::size_t> m_tensor;
    std::string m_tensorName;  // the shown tensor, by name and operand: indices move as tensors come
    MatmulOperand m_tensorOperand = MatmulOperand::input;
    bool m_following = true;
    std::int64_t m_step = -1;  // the step shown when not following
    std::uint64_t m_layoutSeen = ~std::uint64_t{0};
    std::uint64_t m_revisionSeen = ~std::uint64_t{0};
    std::optional<std::pair<std::size_t, std::int64_t>> m_loadTried;  // the last map asked of the loader
    struct MapShown {
        std::string name;
        MatmulOperand operand;
        std::int64_t step;
        bool operator==(const MapShown&) const = default;
    };
    std::optional<MapShown> m_mapShown;  // what the map plot draws
    QString m_loadError;
    QString m_heldText;               // "Maps held: …", ending the legend line
    bool m_distributionStale = true;  // the series changed while the plots were hidden
    bool m_drawing = true;

    QComboBox* m_picker = nullptr;
    QSlider* m_slider = nullptr;
    QToolButton* m_latest = nullptr;
    QLabel* m_stepLabel = nullptr;
    QLabel* m_caption = nullptr;
    BlockDistributionPlot* m_distribution = nullptr;
    QStackedWidget* m_mapStack = nullptr;
    BlockMapPlot* m_map = nullptr;
    QLabel* m_missing = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_empty = nullptr;
    QWidget* m_content = nullptr;
};

}  // namespace mantissa::ui
