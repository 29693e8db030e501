// SweepScatter: a sweep's completed runs as points on two of the recipe table's figures (one point
// per run, labelled with its recipe while there are few enough to read), with the Pareto front of
// those two figures drawn as a step line through its points: the edge of what the front's runs
// reach, each step holding the worse of two neighbours' y, so every run below or beyond it is
// dominated. Front points are orange, the others blue; the selected rows' points are ringed.
// Clicking a point (or Ctrl-clicking to add it) emits rowClicked; hovering gives the run's label and
// both figures. Points that fall on the same pixel share one label ("bf16, fp16").
//
// The view gives values in display units (accuracy in %, memory in KiB/MiB/GiB) and each point's
// place on the front (sweep_rows.h, paretoRows: the one definition); the scatter only draws. The
// labels are placed after each layout (afterLayout), in pixels, beside their point where they fit
// inside the plot and clear of each other, of the points and of the step line. With no point to
// draw, each axis shows the range its figure can take (accuracy 0..100 %, Axis::emptyRange) and
// a note in the middle of the plot says why it is empty (setEmptyNote). GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <functional>
#include <vector>

namespace mantissa::ui {

class SweepScatter : public QCustomPlot {
    Q_OBJECT
public:
    struct Point {
        double x = 0, y = 0;  // display units, finite
        int row = -1;         // the table's row
        QString label;        // the run's recipe (or label)
        bool front = false;
    };
    struct Axis {
        QString label;  // "peak memory (MiB)"
        bool higherBetter = false;
        std::function<QString(double)> format;  // a value as the tooltip writes it
        QCPRange emptyRange{0, 1};  // shown while there is no point: the figure's usual span
    };

    explicit SweepScatter(QWidget* parent = nullptr);

    void setPoints(std::vector<Point> points, Axis x, Axis y);
    const std::vector<Point>& points() const { return m_points; }
    // The step line's corners in display units, from the left: empty without a front point.
    const std::vector<QPointF>& frontLine() const { return m_frontLine; }
    // Rings the points of these rows (rows without a point are ignored).
    void setSelectedRows(const std::vector<int>& rows);
    const std::vector<int>& selectedRows() const { return m_selected; }

    // The row of the point nearest to `pixel` within 10 px; -1 when none.
    int rowAt(const QPointF& pixel) const;
    // Where row `row`'s point is drawn, in widget pixels; (-1, -1) when it has none.
    QPointF pixelOf(int row) const;
    QString toolTipAt(const QPointF& pixel) const;
    // The labels drawn, as shown ("bf16, fp16"); empty when there are too many points to label.
    QStringList labelTexts() const;
    // What the plot says while it has no point ("No completed runs yet"); the text shown, or "".
    void setEmptyNote(const QString& note);
    QString emptyNoteShown() const;

    static constexpr int maxLabelledPoints = 24;

signals:
    // A point was clicked; `add`: with Ctrl, to add it to the selection.
    void rowClicked(int row, bool add);

protected:
    bool event(QEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void applyPalette();
    void placeLabels();

    std::vector<Point> m_points;
    std::vector<QPointF> m_frontLine;
    std::vector<int> m_selected;
    Axis m_x, m_y;
    QCPGraph* m_others = nullptr;
    QCPGraph* m_frontPoints = nullptr;
    QCPGraph* m_selection = nullptr;
    QCPCurve* m_step = nullptr;
    std::vector<QCPItemText*> m_labels;
    QCPItemText* m_emptyNote = nullptr;  // centred in the plot while there is no point
    std::vector<std::vector<int>> m_labelGroups;  // indices into m_points, one group per label
};

}  // namespace mantissa::ui
