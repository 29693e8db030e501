// RunTableModel: the runs of a store as a table, one row per run (list_runs()), for the run
// browser: name, the run a branch started from and at which step ("#12 @500": the family that
// resume and branch make, checkpoint_rules.h), date, status, backend, configuration summary (and
// what was changed during the run: "fp16 · dynamic · master fp32 → fc1=fp8 at 500", the full list
// in its tooltip), steps, final loss, test accuracy and tags. Each numeric column is written in one
// style for all its rows (number_format.h). SortRole gives each column's value to sort by (numbers
// as numbers, dates as ISO text); IdRole the run's id. The model only shows: editing goes through
// the store, then setRuns().
//
// GUI thread only.
#pragma once

#include <QAbstractTableModel>

#include <map>
#include <vector>

#include "charts/number_format.h"
#include "history/live_changes.h"
#include "store/run_store.h"

namespace mantissa::ui {

class RunTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Name, Parent, Date, Status, Backend, Configuration, Steps, FinalLoss, TestAccuracy, Tags, ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int IdRole = Qt::UserRole + 2;
    static constexpr int StatusRole = Qt::UserRole + 3;   // "running", "completed", ...
    static constexpr int TagsRole = Qt::UserRole + 4;     // QStringList, trimmed, no empties
    static constexpr int SearchRole = Qt::UserRole + 5;   // all text a filter matches against
    static constexpr int ParentIdRole = Qt::UserRole + 6; // a branch's parent's id; -1: none, or in another store

    explicit RunTableModel(QObject* parent = nullptr);

    // Resets; `changes`: each run's live setting changes (LiveChangeReader), none when absent.
    void setRuns(std::vector<RunRow> runs, std::map<std::int64_t, std::vector<SettingChange>> changes = {});
    const std::vector<RunRow>& runs() const { return m_runs; }
    const RunRow* runById(std::int64_t id) const;
    int rowOf(std::int64_t id) const;  // -1 when absent
    bool anyRunning() const;
    QStringList allTags() const;       // sorted, unique

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QStringList splitTags(const std::string& tags);
    // "2026-11-29 21:04" in local time, from the store's ISO 8601 UTC text.
    static QString displayDate(const std::string& isoUtc);
    // The Parent column's text for `run`: "#12 @500" (its parent listed here), "other store @500",
    // or "" for a run that is not a branch.
    QString parentText(const RunRow& run) const;
    std::int64_t parentId(const RunRow& run) const;  // -1 when not a branch or not listed

private:
    std::vector<RunRow> m_runs;
    std::vector<QString> m_summaries;  // configSummary of each run, computed once per setRuns
    std::map<std::string, std::int64_t> m_idOfUuid;  // the listed runs' ids by uuid (branches' parents)
    std::map<std::int64_t, std::vector<SettingChange>> m_changes;
    ColumnNumberStyle m_lossStyle;     // the final loss column's, for the runs listed
};

}  // namespace mantissa::ui
