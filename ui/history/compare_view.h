// CompareView: two to eight recorded runs overlaid on the same charts, one Okabe-Ito colour per
// run, named in a legend: loss (smoothed, raw faint), loss scale, test accuracy, throughput and
// gradient underflow (mean over layers, or one chosen layer). The x axis is the step or the
// elapsed time (a toggle); one smoothing weight applies to every run. Each chart is titled above
// its plot with what it shows and its unit, a title that stays when a short chart has no room for
// its axis label; the hover read-out gives every run's value with the unit, in one number style
// for the values shown together. Under the charts, a table of the experiment keys whose values
// differ between the runs, one column per run headed by its name: the precision keys first, the
// lesson's texts last, each value on one line (elided; whole in its tooltip).
//
// Steps are the runs' own (a branch's first step is its parent's checkpoint step S, never re-based
// to 0), so a branch compared with its parent lines up with it at S; aligned by step, a labelled
// line marks S on every chart ("#13 branched from #12").
//
// The runs are read from the store when set; a run still recording (here or by mantissa-cli) is
// followed: once a second the rows it recorded since are read and the curves redrawn, until no
// run is recording. Series are rebuilt from the rows when the x axis or the smoothing changes.
// GUI thread only.
#pragma once

#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "series/lod_series.h"
#include "store/run_store.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTableWidget;
class QCPRange;

namespace mantissa::ui {

class ChartView;

class CompareView : public QWidget {
    Q_OBJECT
public:
    static constexpr int minRuns = 2;
    static constexpr int maxRuns = 8;
    enum class XAxis { step, time };

    explicit CompareView(std::shared_ptr<RunStore> store, QWidget* parent = nullptr);
    ~CompareView() override;

    // Loads and draws the runs. Returns "" or one sentence (too few or too many runs, a run the
    // store cannot give); on an error the view keeps what it showed.
    QString setRuns(const std::vector<std::int64_t>& ids);
    static QString checkRunCount(std::size_t count);  // "" when minRuns..maxRuns, else the reason
    // A window comparing `ids`, to be shown (deleted on close); null with `error` set when the runs
    // cannot be compared (their number, a run the store lacks).
    static CompareView* open(std::shared_ptr<RunStore> store, const std::vector<std::int64_t>& ids, QString& error);

    void setXAxis(XAxis axis);
    XAxis xAxis() const { return m_xAxis; }
    void setSmoothingWeight(double weight);  // [0, 1)
    double smoothingWeight() const { return m_smoothing; }
    void setUnderflowLayer(int layer);       // -1: mean over layers
    void setLogLoss(bool on);                // the loss on a log10 axis (late-training gaps show)
    bool logLoss() const;
    int underflowLayer() const { return m_underflowLayer; }

    ChartView* lossChart() const { return m_lossChart; }
    ChartView* scaleChart() const { return m_scaleChart; }
    ChartView* accuracyChart() const { return m_accuracyChart; }
    ChartView* throughputChart() const { return m_throughputChart; }
    ChartView* underflowChart() const { return m_underflowChart; }
    std::vector<ChartView*> charts() const;
    QTableWidget* differenceTable() const { return m_diffTable; }
    QLabel* legendLabel() const { return m_legend; }
    QString differenceNote() const;  // "3 keys differ" or "No configuration key differs ..."

    // What is drawn, per run in the order given: for tests.
    struct RunCurves {
        std::int64_t id = 0;
        QString name;
        QColor color;
        LodSeries loss, lossSmoothed, lossScale, accuracy, throughput, throughputSmoothed, underflow;
    };
    const std::vector<RunCurves>& curves() const { return m_curves; }
    const std::vector<std::string>& differingKeys() const { return m_keys; }

    // Redraws every chart now (tests, screenshots).
    void redrawNow();

    // Whether some run shown is still recording and is followed; the interval (default 1000 ms).
    bool following() const { return m_follow.isActive(); }
    void setFollowInterval(int ms) { m_follow.setInterval(ms); }

public slots:
    // Reads what the running runs recorded since the last read (public: tests need not wait).
    void followRunning();

private:
    struct RunData;
    struct Readout;
    static const Readout lossReadout, throughputReadout, accuracyReadout, underflowReadout;
    // Run `run`'s part of a chart's read-out at a step: "NAME 0.512 (raw 0.466)", "NAME 82.30 %".
    std::function<QString(double)> readout(const Readout& r, std::size_t run) const;
    void updateTitles();  // each chart's title (its note), with its unit
    void rebuildSeries();
    void rebuildGraphs();
    void fillDifferenceTable();
    void elideRunNames();  // the header's run names to their columns' widths
    void applyRange(const QCPRange& range, ChartView* except);
    void updateLegend();

    std::shared_ptr<RunStore> m_store;
    std::vector<std::unique_ptr<RunData>> m_runs;
    std::vector<RunCurves> m_curves;
    std::vector<std::string> m_keys;
    XAxis m_xAxis = XAxis::step;
    double m_smoothing = 0.6;
    int m_underflowLayer = -1;

    ChartView* m_lossChart = nullptr;
    ChartView* m_scaleChart = nullptr;
    ChartView* m_accuracyChart = nullptr;
    ChartView* m_throughputChart = nullptr;
    ChartView* m_underflowChart = nullptr;
    QComboBox* m_xChoice = nullptr;
    QComboBox* m_layerChoice = nullptr;
    QCheckBox* m_logLoss = nullptr;
    QSlider* m_smoothingSlider = nullptr;
    QLabel* m_smoothingValue = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_diffNote = nullptr;
    QTableWidget* m_diffTable = nullptr;
    QTimer m_follow;
    double m_xMax = 1;  // the x range rebuildGraphs last showed: [0, m_xMax]
};

}  // namespace mantissa::ui
