// LayersPanel: the layers table (LayerTableModel) with its precision combo-box delegate; the
// Format (why) column and the attention's op rows only for a model that has such ops. Picking a
// precision applies it to the running session at the next step (through the model's
// precisionRequested signal, which the main window routes to the controller).
//
// After a run has ended its table stays, and a person may already change a layer's precision for
// the next one: that row's measured cells (weight bytes, gradient amax, underflow, non-finite, lost
// updates, the FP8 scales) were measured under the old setting, so they are drawn dimmed, without
// their trouble colour, and their tooltip says they are the last run's. The same holds for a row
// left on auto when autocast has changed since. A new run or a plan (the table cleared) ends it.
//
// Column widths: a number is never cut. Every column but the two of words (Precision and Format
// (why)) is as wide as its widest text, refitted as the run's figures arrive (a column sized for
// "—" before Start would cut "6.77e-05" to "6.77e-"). The two text columns get their texts' whole
// width when the table has room for it; when it has not they take the squeeze, down to
// precisionColumnWidth() (about "auto → mxfp8-e4m3") each, elided, whole in their tooltips, so a
// per-matmul setting ("forward fp8-e4m3, dgrad fp8-e4m3, wgrad bf16") does not push the columns
// after it (Lost updates) out of the dock; past that the table scrolls sideways. GUI thread only.
#pragma once

#include <QWidget>

#include <map>

#include "config/experiment.h"

class QTableView;
class QTimer;

namespace mantissa::ui {

class LayerTableModel;

class LayersPanel : public QWidget {
    Q_OBJECT
public:
    static constexpr int minimumRows = 3;  // rows the table always has room for

    explicit LayersPanel(LayerTableModel* model, QWidget* parent = nullptr);
    QTableView* view() const { return m_view; }

    // A run has ended (its table stays): remembers each layer's setting and the autocast it ended
    // with, to mark the rows changed since. false: a run started or the table shows a plan.
    void setFinishedRun(bool finished);
    // Whether `row`'s measured cells are the finished run's under a setting that has changed since.
    bool showsLastRun(int row) const;
    static bool isMeasuredColumn(int column);
    // The narrowest a text column (Precision, Format (why)) is squeezed to (px) when the table has
    // no room for its whole texts; a person may drag it wider.
    int precisionColumnWidth() const;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void fitColumns();  // the numbers' columns to their texts, the text columns to what is left

    LayerTableModel* m_model = nullptr;
    int m_fittedFor = -1;  // the viewport width and texts the text columns were last fitted for
    QString m_fittedTexts;
    QTableView* m_view = nullptr;
    QTimer* m_fitTimer = nullptr;
    bool m_finished = false;
    std::map<QString, LayerSetting> m_runSettings;  // each layer's setting when the run ended
    Autocast m_runAutocast = Autocast::off;
};

}  // namespace mantissa::ui
