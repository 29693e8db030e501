// EventLogModel: the run's events (setting changes, overflows with their layer, scale changes,
// evaluations, run start/stop...) as a table: step, time, kind, message. It reads the events a
// RunSeries collected and appends rows as more arrive (sync()), so the view never resets during a
// run. StepRole gives an event's step, for centring the charts on it.
//
// GUI thread only.
#pragma once

#include <QAbstractTableModel>

namespace mantissa::ui {

class RunSeries;

class EventLogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Step, Time, Kind, Message, ColumnCount };
    static constexpr int StepRole = Qt::UserRole + 1;
    static constexpr int KindRole = Qt::UserRole + 2;  // the engine's kind name: "overflow"

    explicit EventLogModel(QObject* parent = nullptr);

    void setSeries(const RunSeries* series);  // resets
    void sync();                              // appends rows for events that arrived since

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const RunSeries* m_series = nullptr;
    int m_rows = 0;
};

}  // namespace mantissa::ui
