// EventLogModel: the events table (see event_log_model.h).
#include "models/event_log_model.h"

#include <QColor>

#include "series/run_series.h"

namespace mantissa::ui {

namespace {
QString kindLabel(EventKind k) {
    switch (k) {
    case EventKind::setting_change: return QObject::tr("setting");
    case EventKind::scale_change: return QObject::tr("scale");
    case EventKind::run_started: return QObject::tr("started");
    case EventKind::run_finished: return QObject::tr("finished");
    case EventKind::run_stopped: return QObject::tr("stopped");
    case EventKind::run_failed: return QObject::tr("failed");
    case EventKind::run_interrupted: return QObject::tr("interrupted");
    default: return QString::fromLatin1(event_kind_name(k));
    }
}

QColor kindColor(EventKind k) {
    switch (k) {
    case EventKind::overflow:
    case EventKind::run_failed:
    case EventKind::divergence: return {0xe1, 0x57, 0x59};
    case EventKind::scale_change: return {0xb0, 0x7a, 0xa1};
    case EventKind::setting_change: return {0x4e, 0x79, 0xa7};
    case EventKind::evaluation: return {0x59, 0xa1, 0x4f};
    case EventKind::notice: return {0xf2, 0x8e, 0x2b};
    default: return {};
    }
}
}  // namespace

EventLogModel::EventLogModel(QObject* parent) : QAbstractTableModel(parent) {}

void EventLogModel::feedAll() {
    m_entries.clear();
    if (m_series)
        for (const Event& e : m_series->events()) m_entries.add(e);
    m_rows = static_cast<int>(m_entries.entries().size());
}

void EventLogModel::setSeries(const RunSeries* series) {
    beginResetModel();
    m_series = series;
    feedAll();
    endResetModel();
}

void EventLogModel::setLive(bool live) {
    if (live == m_live) return;
    m_live = live;
    if (m_rows > 0) emit dataChanged(index(0, Message), index(m_rows - 1, Message));
}

void EventLogModel::sync() {
    const std::size_t now = m_series ? m_series->events().size() : 0;
    const std::size_t fed = m_entries.events_fed();
    if (now == fed) return;
    if (now < fed) {  // the series was reset for a new run
        beginResetModel();
        feedAll();
        endResetModel();
        return;
    }
    // Only entries open before this batch can grow or stop growing ("so far"); a handful at most.
    const std::vector<std::size_t> open = m_entries.open_entries();
    const std::vector<Event>& events = m_series->events();
    for (std::size_t i = fed; i < now; ++i) m_entries.add(events[i]);
    const int before = m_rows;
    const int after = static_cast<int>(m_entries.entries().size());
    if (after > before) {
        beginInsertRows({}, before, after - 1);
        m_rows = after;
        endInsertRows();
    }
    for (const std::size_t row : open)
        if (static_cast<int>(row) < before)
            emit dataChanged(index(static_cast<int>(row), 0), index(static_cast<int>(row), ColumnCount - 1));
}

int EventLogModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }

int EventLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
    if (!m_series || !index.isValid() || index.row() >= m_rows) return {};
    const auto row = static_cast<std::size_t>(index.row());
    const EventEntry& entry = m_entries.entries()[row];
    const std::vector<Event>& events = m_series->events();
    if (entry.last >= events.size()) return {};  // the series was reset; sync() follows
    const Event& e = events[entry.first];
    const bool growing = m_live && m_entries.growing(row);
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Step: return QVariant::fromValue(static_cast<qlonglong>(e.step));
        case Time: return QStringLiteral("%1 s").arg(e.time_s, 0, 'f', 1);
        case Kind: return kindLabel(e.kind);
        case Message:
            return QString::fromStdString(event_entry_message(entry, e, events[entry.last], growing));
        default: return {};
        }
    case Qt::ForegroundRole:
        if (index.column() == Kind) {
            const QColor c = kindColor(e.kind);
            if (c.isValid()) return c;
        }
        return {};
    case Qt::ToolTipRole: {
        QString tip = QString::fromStdString(event_entry_message(entry, e, events[entry.last], growing));
        if (entry.merged())
            tip += (growing ? tr("\nSteps %1 to %2 so far: %3 events, one per step.")
                                           : tr("\nSteps %1 to %2: %3 events, one per step."))
                       .arg(entry.first_step)
                       .arg(entry.last_step)
                       .arg(entry.count) +
                   tr(" Click to centre the charts on step %1.").arg(entry.first_step);
        if (!e.data_json.empty() && e.data_json != "{}")
            tip += (entry.merged() ? tr("\nFirst: ") : QStringLiteral("\n")) + QString::fromStdString(e.data_json);
        return tip;
    }
    case Qt::TextAlignmentRole:
        if (index.column() == Step || index.column() == Time) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case StepRole: return QVariant::fromValue(static_cast<qlonglong>(e.step));
    case LastStepRole: return QVariant::fromValue(static_cast<qlonglong>(entry.last_step));
    case CountRole: return QVariant::fromValue(static_cast<qlonglong>(entry.count));
    case KindRole: return QString::fromLatin1(event_kind_name(e.kind));
    default: return {};
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Step: return tr("Step");
    case Time: return tr("Time");
    case Kind: return tr("Kind");
    case Message: return tr("Message");
    default: return {};
    }
}

}  // namespace mantissa::ui
