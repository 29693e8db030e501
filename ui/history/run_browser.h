// RunBrowser: every run in a store as a sortable, filterable table (name, the run a branch came
// from, date, status, backend, configuration summary, steps, final loss, test accuracy, tags), with
// a details pane to rename a run and edit its tags and notes, and actions to open runs (a RunViewer
// each, following runs still recording), compare 2..8 of them (a CompareView), overlay them on the
// live charts (a signal the main window answers), export a run and delete runs (confirmed). The
// configuration column says what was changed during each run (live_changes.h). For the selected
// run, "Resume" continues it from its latest checkpoint and "Branch…" starts a new run from a
// checkpoint picked by step (the rules and their sentences: checkpoint_rules.h); the browser only
// checks and asks, the main window runs them (resumeRequested, branchRequested). The "Branch of"
// column and the details pane show the family: a branch's parent and step, a run's checkpoints and
// its branches. "Sweep" opens the recipe table of the selected run's sweep (ui/sweeps/sweep_view.h).
// Esc and Ctrl+W close the browser when it is a window of its own (close_keys.h), and so do they a
// run's window and a comparison.
// "Open store…" switches to another store file; a file that is not a store is refused with one
// sentence and the browser keeps the store it had. An error's banner lasts until its cause is gone
// (a store opens, the list is read again after a failed read) or the window is closed: reopened
// later, the browser does not greet a good store with an old refusal. A read-only store is browsed with the editing
// actions disabled (their tooltips say why). While any listed run is `running`, the list refreshes
// itself every few seconds.
//
// A QWidget, for a window or a dock. Every action is also a function taking its arguments
// (paths, names, ids), so the main window and the tests can drive it without dialogs; the signals
// let the main window react as well. GUI thread only.
#pragma once

#include <QList>
#include <QPointer>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "history/live_changes.h"
#include "history/run_export.h"
#include "store/run_store.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableView;
class QToolButton;

namespace mantissa::ui {

class CompareView;
class NoticeBar;
class RunFilterProxy;
class RunTableModel;
class RunViewer;

class RunBrowser : public QWidget {
    Q_OBJECT
public:
    static constexpr int autoRefreshMs = 2000;  // while a listed run is running

    explicit RunBrowser(QWidget* parent = nullptr);
    ~RunBrowser() override;

    // Opens the store at `path` and lists its runs. A missing file is refused unless
    // createIfMissing (the default store, before any run). False (and lastError(), shown in the
    // notice bar) when it cannot be opened; the previous store stays.
    bool openStore(const QString& path, bool readOnly = false, bool createIfMissing = false);
    // Shows a file dialog, then openStore().
    void openStoreWithDialog();
    std::shared_ptr<RunStore> store() const { return m_store; }
    QString storePath() const;
    bool readOnly() const;
    QString lastError() const { return m_lastError; }

    // Reads the list again, keeping the selection.
    void refresh();
    bool autoRefreshing() const { return m_autoRefresh.isActive(); }  // a listed run is running

    RunTableModel* model() const { return m_model; }
    RunFilterProxy* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    std::vector<std::int64_t> selectedRunIds() const;  // in the view's order
    void selectRuns(const std::vector<std::int64_t>& ids);

    // Filters (also set by the controls): free text, one tag, one status ("" = all).
    void setTextFilter(const QString& text);
    void setTagFilter(const QString& tag);
    void setStatusFilter(const QString& status);
    int visibleRunCount() const;

    // Editing through the store; false with lastError() when the store refuses (read-only, ...).
    bool renameRun(std::int64_t id, const QString& name);
    bool setRunNotes(std::int64_t id, const QString& notes);
    bool setRunTags(std::int64_t id, const QString& tags);
    // Asks (the confirm handler; a dialog by default), then removes. False when declined or refused.
    bool deleteRuns(const std::vector<std::int64_t>& ids);
    // Replaces the delete confirmation (tests): gets the question, returns yes/no.
    void setConfirmHandler(std::function<bool(const QString& question)> confirm);

    // Opens a viewer window for the run (raising it when already open). nullptr with lastError()
    // when the run cannot be read. When opensWindows is off, only runOpened is emitted.
    RunViewer* openRun(std::int64_t id);
    // A comparison window of 2..8 runs; nullptr with lastError() otherwise (too many: refused).
    CompareView* compareRuns(const std::vector<std::int64_t>& ids);
    void setOpensWindows(bool on) { m_opensWindows = on; }
    QList<RunViewer*> openViewers() const;

    // Asks the main window to continue run `id` from its latest checkpoint (resumeRequested); false
    // with lastError() when the run cannot be (checkpoint_rules.h's sentence).
    bool resumeRun(std::int64_t id);
    // Asks the main window to branch run `id` from its checkpoint at `step` (branchRequested);
    // false with lastError() when there is no such checkpoint.
    bool branchRun(std::int64_t id, std::int64_t step);
    // Lets a person pick one of the run's checkpoints by step (the latest offered first), then
    // branchRun().
    void branchWithDialog(std::int64_t id);
    // The selected run's checkpoints, as the actions and the details pane last read them.
    const std::vector<CheckpointRow>& selectedCheckpoints() const { return m_checkpoints; }
    QString detailsText() const;  // the details pane's heading, plain

    // Export without a dialog: "" or one sentence.
    QString exportRun(std::int64_t id, const ExportChoice& choice, const QString& path);

    // The actions, for the main window's menus and toolbars.
    QAction* openStoreAction() const { return m_openStoreAction; }
    QAction* refreshAction() const { return m_refreshAction; }
    QAction* openRunAction() const { return m_openRunAction; }
    QAction* compareAction() const { return m_compareAction; }
    // "Overlay on live charts": emits overlayRequested for each selected run (1..8 of them).
    QAction* overlayAction() const { return m_overlayAction; }
    void overlayRuns(const std::vector<std::int64_t>& ids);
    QAction* deleteAction() const { return m_deleteAction; }
    // "Resume": enabled for one stopped, interrupted or failed run with a checkpoint, in a store
    // that can be written; its tooltip says why not otherwise. "Branch…": one run with a checkpoint.
    QAction* resumeAction() const { return m_resumeAction; }
    QAction* branchAction() const { return m_branchAction; }
    // "Sweep": enabled for one run recorded by a sweep; emits sweepRequested for the main window,
    // which opens the recipe table (ui/sweeps/sweep_view.h) on its row.
    QAction* sweepAction() const { return m_sweepAction; }
    QPushButton* saveDetailsButton() const { return m_saveDetails; }
    NoticeBar* noticeBar() const { return m_notice; }

signals:
    void storeChanged(const QString& path);
    void runOpened(qint64 runId);                   // after openRun succeeded (or was asked, windows off)
    void compareRequested(const QList<qint64>& ids);  // a valid 2..8 selection was compared
    // The user asked to draw run `runId` of the store at `storePath` over the live charts, named
    // `name` ("fp16-baseline (run 12)"); history/run_overlay.h does it in one call.
    void overlayRequested(const QString& storePath, qint64 runId, const QString& name);
    void runsChanged();                             // the list was re-read (edits, deletes, refresh)
    // Continue run `runId` of the store at `storePath` from its latest checkpoint, as the same run.
    void resumeRequested(const QString& storePath, qint64 runId);
    // Start a new run from run `runId`'s checkpoint at `step`, with settings a person changes first.
    void branchRequested(const QString& storePath, qint64 runId, qint64 step);
    // Show the recipe table of the sweep with uuid `sweepUuid` (of the store at `storePath`) with
    // run `runId`'s row selected.
    void sweepRequested(const QString& storePath, const QString& sweepUuid, qint64 runId);
    void errorOccurred(const QString& message);

protected:
    void hideEvent(QHideEvent* event) override;

private:
    void buildActions();
    void updateActions();
    void updateResumeActions(const RunRow* run);
    void updateDetails();
    void readCheckpoints(const RunRow* run);  // m_checkpoints for the selected run
    void saveDetails();
    void reportError(const QString& message);
    void updateFilterChoices();
    bool editAllowed();
    // The run `id` and its checkpoints, for Resume and Branch; null (the reason reported) when
    // editing is not allowed, the run is not in the store or its checkpoints cannot be read.
    const RunRow* runWithCheckpoints(std::int64_t id, std::vector<CheckpointRow>& checkpoints);
    static QString readOnlyReason();  // the editing actions' tooltip on a read-only store

    std::shared_ptr<RunStore> m_store;
    RunTableModel* m_model = nullptr;
    RunFilterProxy* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    NoticeBar* m_notice = nullptr;
    QLabel* m_storeLabel = nullptr;
    QLineEdit* m_filter = nullptr;
    QComboBox* m_tagFilter = nullptr;
    QComboBox* m_statusFilter = nullptr;
    QLabel* m_detailsTitle = nullptr;
    QLineEdit* m_nameEdit = nullptr;
    QLineEdit* m_tagsEdit = nullptr;
    QPlainTextEdit* m_notesEdit = nullptr;
    QPushButton* m_saveDetails = nullptr;
    QToolButton* m_exportButton = nullptr;
    QAction* m_openStoreAction = nullptr;
    QAction* m_refreshAction = nullptr;
    QAction* m_openRunAction = nullptr;
    QAction* m_compareAction = nullptr;
    QAction* m_overlayAction = nullptr;
    LiveChangeReader m_changes;  // each listed run's live setting changes
    QAction* m_deleteAction = nullptr;
    QAction* m_resumeAction = nullptr;
    QAction* m_branchAction = nullptr;
    QAction* m_sweepAction = nullptr;
    std::vector<CheckpointRow> m_checkpoints;  // the selected run's (empty: none, or not one run)
    QString m_checkpointError;                  // why they could not be read, else empty
    QTimer m_autoRefresh;
    bool m_refreshing = false;  // the model is being re-read: selection changes are not the user's
    // The run the details pane shows and the values it loaded, so a refresh keeps unsaved edits.
    std::int64_t m_detailsId = -1;
    QString m_loadedName, m_loadedTags, m_loadedNotes;
    QString m_lastError;
    bool m_bannerIsListError = false;  // the banner says the list could not be read (refresh() clears it)
    bool m_opensWindows = true;
    std::function<bool(const QString&)> m_confirm;
    QList<QPointer<RunViewer>> m_viewers;
    QList<QPointer<CompareView>> m_compares;
};

}  // namespace mantissa::ui
