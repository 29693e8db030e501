// RunTableModel: the runs of a store as a table, one row per run (list_runs()), for the run
// browser: name, date, status, backend, configuration summary, steps, final loss, test accuracy
// and tags. SortRole gives each column's value to sort by (numbers as numbers, dates as ISO text);
// IdRole the run's id. The model only shows: editing goes through the store, then setRuns().
//
// GUI thread only.
#pragma once

#include <QAbstractTableModel>

#include <vector>

#include "store/run_store.h"

namespace mantissa::ui {

class RunTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Date, Status, Backend, Configuration, Steps, FinalLoss, TestAccuracy, Tags, ColumnCount };
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int IdRole = Qt::UserRole + 2;
    static constexpr int StatusRole = Qt::UserRole + 3;   // "running", "completed", ...
    static constexpr int TagsRole = Qt::UserRole + 4;     // QStringList, trimmed, no empties
    static constexpr int SearchRole = Qt::UserRole + 5;   // all text a filter matches against

    explicit RunTableModel(QObject* parent = nullptr);

    void setRuns(std::vector<RunRow> runs);  // resets
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

private:
    std::vector<RunRow> m_runs;
    std::vector<QString> m_summaries;  // configSummary of each run, computed once per setRuns
};

}  // namespace mantissa::ui
