// WhatIfPanel: what each format would do to each layer's matmul operands, as a heat map of layers
// (rows, model order) × formats (columns, the run's order) at one statistics step. Pickers choose
// the tensor (x input, W weight, dy output gradient) and the metric (SQNR, underflow, saturation);
// a slider goes back to an earlier statistics step (at its right end it follows the run, the
// default); a legend says what the colours mean. The cell of the format a layer runs in is framed:
// those are its real numbers, the others what-ifs (WhatIfModel, WhatIfDelegate, what_if_scale.h).
//
// It reads a WhatIfSeries (RunSeries::whatIf), so the live window (through the TelemetryRing) and a
// run reopened from the store show the same thing. A run without what-if statistics shows one
// sentence instead. GUI thread only.
#pragma once

#include <QWidget>

#include "series/what_if_series.h"

class QComboBox;
class QLabel;
class QSlider;
class QTableView;
class QToolButton;

namespace mantissa::ui {

class WhatIfModel;

class WhatIfPanel : public QWidget {
    Q_OBJECT
public:
    // The height at which a small model's heat map and its legend are read without scrolling
    // (DockLayout gives the bottom docks this when the panel's tab is raised).
    static constexpr int usableHeight = 260;

    explicit WhatIfPanel(QWidget* parent = nullptr);

    // Shows `series` (nullptr: none), following its latest step.
    void setSeries(const WhatIfSeries* series);
    // After new telemetry: the latest step when following, new rows or columns, the slider's range.
    void sync();

    void setTensor(WhatIfTensor tensor);
    void setMetric(WhatIfMetric metric);

    WhatIfModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    QComboBox* tensorPicker() const { return m_tensor; }
    QComboBox* metricPicker() const { return m_metric; }
    QSlider* stepSlider() const { return m_slider; }
    QToolButton* latestButton() const { return m_latest; }
    // What is on screen (for tests): the empty state's sentence when shown, the step line, the legend.
    bool showsEmptyState() const;
    QString emptyText() const;
    QString stepText() const;
    QString legendText() const;

    static QString emptySentence();

protected:
    void changeEvent(QEvent* event) override;

private:
    void updateControls();  // empty state, slider, step line
    void updateLegend();
    void onSliderMoved(int value);

    WhatIfModel* m_model = nullptr;
    QComboBox* m_tensor = nullptr;
    QComboBox* m_metric = nullptr;
    QSlider* m_slider = nullptr;
    QToolButton* m_latest = nullptr;
    QLabel* m_step = nullptr;
    QTableView* m_view = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_empty = nullptr;
    QWidget* m_content = nullptr;  // everything but the empty state
};

}  // namespace mantissa::ui
