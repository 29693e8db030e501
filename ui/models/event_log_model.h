// EventLogModel: the run's events (setting changes, overflows with their layer, scale changes,
// evaluations, run start/stop...) as a table: step, time, kind, message. It reads the events a
// RunSeries collected and appends rows as more arrive (sync()), so the view never resets during a
// run. StepRole gives a row's step, for centring the charts on it.
//
// Rows are the engine's display entries (config/event_coalesce.h, the rule `mantissa-cli show`
// uses too): an overflow or scale change repeated on consecutive steps is one row, "Overflow on
// every step from 412 to 511 (100 steps): ...", whose text says "(37 steps so far)" while a live
// run may still extend it. A row's Step, Time and StepRole are its first event's; LastStepRole and
// CountRole give the rest of its range. sync() feeds only the events that arrived, inserts the new
// rows and redraws the few rows that were still open: no work grows with the length of the log.
//
// GUI thread only.
#pragma once

#include <QAbstractTableModel>

#include "config/event_coalesce.h"

namespace mantissa::ui {

class RunSeries;

class EventLogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Step, Time, Kind, Message, ColumnCount };
    static constexpr int StepRole = Qt::UserRole + 1;
    static constexpr int KindRole = Qt::UserRole + 2;  // the engine's kind name: "overflow"
    static constexpr int LastStepRole = Qt::UserRole + 3;  // a merged row's last step (StepRole's if single)
    static constexpr int CountRole = Qt::UserRole + 4;     // events the row stands for (1 if single)

    explicit EventLogModel(QObject* parent = nullptr);

    void setSeries(const RunSeries* series);  // resets
    void sync();                              // appends rows for events that arrived since
    // Whether the run can still log events (the window's own run, a followed recording). A run
    // that ended without a closing event (killed: `interrupted`) must not say "so far" forever.
    void setLive(bool live);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void feedAll();
    const RunSeries* m_series = nullptr;
    EventCoalescer m_entries;  // over m_series->events(), fed in order
    int m_rows = 0;            // entries shown as rows (== m_entries.entries().size() between calls)
    bool m_live = true;
};

}  // namespace mantissa::ui
