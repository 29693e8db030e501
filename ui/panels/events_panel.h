// EventsPanel: the run's event log (EventLogModel) with a text filter. Clicking an event emits
// stepActivated with its step (a row of merged repeats: its first step), which the main window uses
// to centre the charts on it. New rows keep the view at the bottom unless the user has scrolled up;
// a merged row that grows in place ("37 steps so far") needs no scrolling. The message column
// takes the width the others leave and wraps at word boundaries (three lines at most, then
// elided: the tooltip has it whole); the Time column is the run's training time (the engine's
// clock: pauses and paced waits left out), as its header's tooltip says.
#pragma once

#include <QWidget>

#include <cstdint>

class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace mantissa::ui {

class EventLogModel;

class EventsPanel : public QWidget {
    Q_OBJECT
public:
    // Above this many rows (the filter's), a change of width leaves the rows' heights as they were.
    static constexpr int wrappedRowLimit = 2000;
    static constexpr int maxMessageLines = 3;  // a longer message is elided there, whole in its tooltip

    explicit EventsPanel(EventLogModel* model, QWidget* parent = nullptr);
    QTableView* view() const { return m_view; }

signals:
    void stepActivated(std::int64_t step);

private:
    void measureRow(int row);  // its height for its wrapped message, up to maxMessageLines

    QTableView* m_view = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QLineEdit* m_filter = nullptr;
    QTimer* m_measureAll = nullptr;  // every row's height again, after a change of width or filter
};

}  // namespace mantissa::ui
