// EventsPanel: the run's event log (EventLogModel) with a text filter. Clicking an event emits
// stepActivated with its step, which the main window uses to centre the charts on it. New events
// keep the view at the bottom unless the user has scrolled up.
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
