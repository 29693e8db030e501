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

void EventLogModel::setSeries(const RunSeries* series) {
    beginResetModel();
    m_series = series;
    m_rows = series ? static_cast<int>(series->events().size()) : 0;
    endResetModel();
}

void EventLogModel::sync() {
    const int now = m_series ? static_cast<int>(m_series->events().size()) : 0;
    if (now == m_rows) return;
    if (now < m_rows) {  // the series was reset for a new run
        beginResetModel();
        m_rows = now;
        endResetModel();
        return;
    }
    beginInsertRows({}, m_rows, now - 1);
    m_rows = now;
    endInsertRows();
}

int EventLogModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }

int EventLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
    if (!m_series || !index.isValid() || index.row() >= m_rows) return {};
    const Event& e = m_series->events()[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Step: return QVariant::fromValue(static_cast<qlonglong>(e.step));
        case Time: return QStringLiteral("%1 s").arg(e.time_s, 0, 'f', 1);
        case Kind: return kindLabel(e.kind);
        case Message: return QString::fromStdString(e.message);
        default: return {};
        }
    case Qt::ForegroundRole:
        if (index.column() == Kind) {
            const QColor c = kindColor(e.kind);
            if (c.isValid()) return c;
        }
        return {};
    case Qt::ToolTipRole:
        return e.data_json.empty() || e.data_json == "{}" ? QString::fromStdString(e.message)
                                                           : QString::fromStdString(e.message + "\n" + e.data_json);
    case Qt::TextAlignmentRole:
        if (index.column() == Step || index.column() == Time) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case StepRole: return QVariant::fromValue(static_cast<qlonglong>(e.step));
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
