// EventsPanel: the run's event log (EventLogModel) with a text filter. Clicking an event emits
// stepActivated with its step (a row of merged repeats: its first step), which the main window uses
// to centre the charts on it. New rows keep the view at the bottom unless the user has scrolled up;
// a merged row that grows in place ("37 steps so far") needs no scrolling.
#pragma once

#include <QWidget>

#include <cstdint>

class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace mantissa::ui {

class EventLogModel;

class EventsPanel : public QWidget {
    Q_OBJECT
public:
    explicit EventsPanel(EventLogModel* model, QWidget* parent = nullptr);
    QTableView* view() const { return m_view; }

signals:
    void stepActivated(std::int64_t step);

private:
    QTableView* m_view = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QLineEdit* m_filter = nullptr;
};

}  // namespace mantissa::ui
