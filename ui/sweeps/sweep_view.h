// SweepView: the GUI's recipe table (docs/gui.md, "Sweeps: the recipe table"). On the left the
// store's sweeps, newest first; for the chosen one a sortable table with one row per planned run
// (sweep_table_model.h: the columns and figures of `mantissa-cli sweep show`) beside a scatter of
// two of its figures (sweep_scatter.h; by default peak memory across and test accuracy up, the
// CLI's front) with the Pareto front of those two drawn as a step line and starred in the table.
// Changing an axis changes the front. Selecting rows rings their points; clicking a point selects
// its row. "Compare" overlays the sweep's runs in a CompareView (the selected rows when two or
// more are, else every recorded run; at most CompareView::maxRuns).
//
// The store is read when a sweep is chosen, on Refresh (F5) and, while a run of the shown sweep is
// still running, every few seconds; never per frame (sweep_rows.h says what a read costs). The
// view shares the run history's store (the main window hands it over, and a new one when "Open
// store…" picks another). Every action is also a function, for the main window and the tests.
// GUI thread only.
#pragma once

#include <QPointer>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "sweeps/sweep_rows.h"

class QAction;
class QComboBox;
class QLabel;
class QListWidget;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;

namespace mantissa::ui {

class CompareView;
class NoticeBar;
class SweepScatter;
class SweepTableModel;

class SweepView : public QWidget {
    Q_OBJECT
public:
    static constexpr int autoRefreshMs = 3000;  // while a run of the shown sweep is running

    explicit SweepView(QWidget* parent = nullptr);
    ~SweepView() override;

    // Lists the store's sweeps and shows the newest (none: an empty table and a sentence).
    void setStore(std::shared_ptr<RunStore> store);
    std::shared_ptr<RunStore> store() const { return m_store; }
    // Reads the list and the shown sweep again, keeping the sweep, the selection and the axes.
    void refresh();
    // Shows sweep `id`; false with lastError() (shown in the notice bar) when it cannot be read.
    bool showSweep(std::int64_t id);
    // Shows the sweep with this uuid and selects the row of run `runId` (-1: none); false with a
    // sentence when this store holds no such sweep (a Slurm task's store names its main store's).
    bool showSweepOfRun(const std::string& sweepUuid, std::int64_t runId = -1);
    std::int64_t sweepId() const { return m_sweepId; }  // -1: none shown
    const SweepTable& table() const;

    // The scatter's axes (and so the front the table stars). Until they are set, each sweep opens on
    // the CLI's front: peak memory against test accuracy, or final loss for a regression.
    void setAxes(SweepFigure x, SweepFigure y);
    SweepFigure xFigure() const { return m_x; }
    SweepFigure yFigure() const { return m_y; }

    // Rows of table().rows (the model's), as selected in the view, in the view's order.
    std::vector<int> selectedRows() const;
    void selectRows(const std::vector<int>& rows);

    // What Compare overlays: the selected rows' runs when two or more, else every recorded run.
    std::vector<std::int64_t> compareIds() const;
    // Opens a CompareView of compareIds(); nullptr with lastError() when it cannot (too many runs).
    CompareView* compare();

    SweepTableModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    SweepScatter* scatter() const { return m_scatter; }
    QListWidget* sweepList() const { return m_list; }
    QComboBox* xChoice() const { return m_xChoice; }
    QComboBox* yChoice() const { return m_yChoice; }
    QLabel* caption() const { return m_caption; }  // under the scatter: the front and what is not drawn
    QAction* compareAction() const { return m_compareAction; }
    QAction* refreshAction() const { return m_refreshAction; }
    NoticeBar* noticeBar() const { return m_notice; }
    QString lastError() const { return m_lastError; }

signals:
    void errorOccurred(const QString& message);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void fitTable();  // the columns to their contents, the table as wide as they need
    void fillSweepList();
    void readShownSweep();  // m_sweepId's table into the model, keeping what can be kept
    void updateScatter();   // the front for the axes, into the model and the scatter
    void updateActions();
    void onScatterClicked(int row, bool add);
    void reportError(const QString& message);

    std::shared_ptr<RunStore> m_store;
    std::int64_t m_sweepId = -1;
    SweepFigure m_x = SweepFigure::peakMemory, m_y = SweepFigure::testAccuracy;
    bool m_axesChosen = false;  // setAxes was called: a sweep shown next keeps them
    SweepTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    QSplitter* m_split = nullptr;  // the table | the scatter
    SweepScatter* m_scatter = nullptr;
    QListWidget* m_list = nullptr;
    QComboBox* m_xChoice = nullptr;
    QComboBox* m_yChoice = nullptr;
    QLabel* m_storeLabel = nullptr;
    QLabel* m_heading = nullptr;
    QLabel* m_caption = nullptr;
    NoticeBar* m_notice = nullptr;
    QAction* m_compareAction = nullptr;
    QAction* m_refreshAction = nullptr;
    QTimer m_autoRefresh;
    bool m_syncing = false;  // the selection is being set from the other side
    QString m_lastError;
    QList<QPointer<CompareView>> m_compares;
};

}  // namespace mantissa::ui
