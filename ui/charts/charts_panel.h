// ChartsPanel: the live charts of a run on one shared step axis, with their controls.
//   loss        raw (faint) and smoothed (TensorBoard's debiased EMA, user weight), test loss and
//               accuracy as points, log y on demand
//   loss scale  log2 axis, overflows as red markers
//   memory      bytes by category, stacked (modelled on the CPU backend)
//   throughput  samples/s
//   underflow   fraction of each layer's gradient flushed to zero by rounding, per layer
//   attention logits  a transformer's largest |QKᵀ/√d| per attention layer (log y), with FP16's
//               largest value, 65504, as a reference line
//   layer norm variance  a transformer's smallest row variance per layer norm (log y)
//   accumulation error  with train.accumulation_error, each matmul layer's sums against FP64
//               (log y; solid: the forward's, dashed: a linear layer's weight gradient's), with
//               FP16's unit roundoff, 2^-11, as a reference line; a layer keeps its underflow colour
// The op charts come after the loss scale, and only for a run that reports them
// (RunSeries::opStats) or, before it starts, for the one the experiment plans
// (setPlannedOpStats): empty, with their axes and reference lines. A reference line is named in
// its chart's legend, never over the data. Every chart numbers the steps under it (the charts
// scroll where the window is short, and a chart scrolled away from the bottom one still says
// where it is); the lowest one shown also names the axis. A language model's loss axis says
// nats/token. The memory read-out writes its categories in one number style.
// Every setting change and injected overflow is a labelled vertical marker on every chart. Zoom
// (wheel) or pan (drag) on any chart moves them all and stops following the run; "Reset view"
// follows it again.
//
// Overlays: recorded runs drawn faintly over the live one, dashed, each in one colour and named in
// the legends: its smoothed loss, loss scale, smoothed throughput and mean underflow over layers
// (not memory, which is the live run's model). A reference (a lesson's) is always grey; other
// runs take the first colour of the overlay palette that no overlay shown holds, from its grey,
// so the first overlay after clearOverlays() is grey whatever was overlaid before. They share the
// step axis, stay through live redraws and setSeries(), and follow the live run's range (the steps
// it has reached); with no live run, or before its first step, they show their own.
// history/run_overlay.h loads one from a store (and keeps following a run that is still
// recording).
//
// GUI thread only. It draws a RunSeries it does not own (the RunController's, or a recorded run's);
// it shares the ownership of its overlays' series.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "charts/chart_view.h"

class QCheckBox;
class QLabel;
class QSlider;

namespace mantissa::ui {

class RunSeries;

// What an overlaid run is to the live one: a reference (a lesson's: what the run should come
// close to) or any other recorded run.
enum class OverlayRole { run, reference };

class ChartsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ChartsPanel(QWidget* parent = nullptr);
    ~ChartsPanel() override;

    // Draws `series` (nullptr: nothing); rebuilds the graphs for its layers and follows it.
    void setSeries(RunSeries* series);
    // The op statistics the next run will report, as RunSeries::declareOpStats takes them (name,
    // stat; opStatsOf and accumulationStatsOf of the experiment's plan): their charts are shown
    // from now on, empty until the run reports, instead of appearing at its first statistics
    // step. Kept until set again (setSeries keeps them); empty: only what the series reports.
    void setPlannedOpStats(std::vector<std::pair<std::string, std::string>> stats);
    // Live update, called as data arrives: redraws the charts if anything changed, one chart per
    // event-loop turn (so input is never held up for a whole round), and no more often than keeps
    // the redrawing to liveCpuShare of one core (a slow machine redraws less often, not slower).
    void refresh();
    // Redraws everything now: for interaction (zoom, pan, smoothing) with queued replots that
    // coalesce, or synchronously (screenshots, the benchmark, tests).
    void redrawNow(bool synchronous = false);
    static constexpr double liveCpuShare = 0.05;   // of one core, for live redraws
    static constexpr int minRoundIntervalMs = 33;  // at most ~30 redraws a second

    void centerOn(std::int64_t step);  // keeps the zoom, stops following
    void resetView();                  // follow the whole run again
    bool following() const { return m_follow; }
    QCPRange xRange() const { return m_range; }

    // Draws `series` (a stored run, loaded) over the charts under `name`, replacing an overlay of
    // that name. `owned` (optional: what keeps the series growing, a RunFollower) is deleted with
    // the overlay. A null series is ignored.
    void addOverlay(const QString& name, std::shared_ptr<RunSeries> series, QObject* owned = nullptr,
                    OverlayRole role = OverlayRole::run);
    bool removeOverlay(const QString& name);  // false when there is none of that name
    void clearOverlays();
    QStringList overlays() const;  // names, in the order added
    std::shared_ptr<const RunSeries> overlaySeries(const QString& name) const;
    static constexpr int maxOverlays = 8;  // more than this cannot be told apart: the oldest goes
    // A reference overlay's colour (grey, drawn dashed as every overlay is).
    static QColor referenceOverlayColor();
    // The most layers whose underflow lines the legend names; past it, the hover read-out does.
    static constexpr std::size_t underflowLegendLayers = 8;

    // The same right-click entries on every chart (ChartView::setMenuExtension); empty: none.
    void setMenuExtension(const ChartView::MenuExtension& extend);

    void setSmoothingWeight(double weight);
    double smoothingWeight() const;
    void setLogLoss(bool on);

    ChartView* lossChart() const { return m_loss; }
    ChartView* scaleChart() const { return m_scale; }
    ChartView* memoryChart() const { return m_memory; }
    ChartView* throughputChart() const { return m_throughput; }
    ChartView* underflowChart() const { return m_underflow; }
    ChartView* logitsChart() const { return m_logits; }
    ChartView* varianceChart() const { return m_variance; }
    ChartView* accumulationChart() const { return m_accumulation; }
    std::vector<ChartView*> charts() const {
        return {m_loss, m_scale, m_logits, m_variance, m_accumulation, m_memory, m_throughput, m_underflow};
    }
    // The most op lines (attention layers, layer norms) an op chart's legend names.
    static constexpr std::size_t opLegendLines = 12;
    static constexpr double fp16Max = 65504;  // the logits chart's reference line
    static constexpr double fp16UnitRoundoff = 1.0 / 2048;  // the accumulation chart's: 2^-11

private:
    bool dirty() const;
    void prepareRound();          // the shared step range, memory unit and markers
    void drawNextChartOfRound();
    void buildGraphs();
    void buildLiveGraphs();
    // An op chart's lines: one stat of every op that has it, named "op" + suffix.
    struct OpLine {
        const char* stat;
        const char* suffix = nullptr;
        GraphStyle style = GraphStyle::line;
    };
    void buildOpGraphs(ChartView* chart, std::initializer_list<OpLine> kinds);
    void updateStepAxes();  // every chart shown numbers its steps; the lowest one names the axis
    bool planned(const char* stat) const;
    // The first colour of the overlay palette that no overlay holds, nor `taken`.
    QColor freeOverlayColor(const QColor& taken = QColor()) const;
    void applyRange(const QCPRange& range, ChartView* except = nullptr);
    void updateMemoryUnit();
    void onUserRange(ChartView* source, const QCPRange& range);
    void onCrosshair(double step);
    void addOverlayGraphs();
    std::uint64_t revision() const;  // the live run's and the overlays', summed (each only grows)

    struct Overlay {
        QString name;
        std::shared_ptr<RunSeries> series;
        QColor color;
        QObject* owned = nullptr;
        OverlayRole role = OverlayRole::run;
    };

    RunSeries* m_series = nullptr;
    std::vector<Overlay> m_overlays;
    std::uint64_t m_overlayGeneration = 0;  // grows when overlays are added or removed
    std::vector<std::pair<std::string, std::string>> m_plannedOpStats;
    ChartView* m_loss = nullptr;
    ChartView* m_scale = nullptr;
    ChartView* m_memory = nullptr;
    ChartView* m_throughput = nullptr;
    ChartView* m_underflow = nullptr;
    ChartView* m_logits = nullptr;
    ChartView* m_variance = nullptr;
    ChartView* m_accumulation = nullptr;
    std::uint64_t m_builtOpLayout = ~std::uint64_t{0};  // the series' opStatLayout() the graphs show
    QSlider* m_smoothing = nullptr;
    QLabel* m_smoothingValue = nullptr;
    QCheckBox* m_logLoss = nullptr;
    std::vector<QCPGraph*> m_memoryGraphs;
    double m_memoryUnit = 0;       // bytes per displayed unit
    bool m_follow = true;
    QCPRange m_range{0, 100};
    std::uint64_t m_drawnRevision = ~std::uint64_t{0};
    std::uint64_t m_roundRevision = 0;
    bool m_rangeDirty = true;
    // The live redraw round: chart m_roundChart is drawn next (-1: no round), one per turn.
    QTimer m_roundTimer;
    QTimer m_deferTimer;          // starts the next round when the CPU share allows
    QElapsedTimer m_clock;
    qint64 m_nextRoundMs = 0;
    int m_roundChart = -1;
    double m_roundCostMs = 0;     // ms spent drawing this round so far
};

}  // namespace mantissa::ui
