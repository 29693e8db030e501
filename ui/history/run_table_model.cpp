// RunTableModel: a store's runs as a table (see run_table_model.h).
#include "history/run_table_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <set>

#include "history/checkpoint_rules.h"
#include "history/config_summary.h"

namespace mantissa::ui {

RunTableModel::RunTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunTableModel::setRuns(std::vector<RunRow> runs, std::map<std::int64_t, std::vector<SettingChange>> changes) {
    beginResetModel();
    m_runs = std::move(runs);
    m_changes = std::move(changes);
    m_summaries.clear();
    m_idOfUuid.clear();
    for (const auto& r : m_runs) m_idOfUuid[r.uuid] = r.id;
    std::vector<double> losses;
    for (const auto& r : m_runs) {
        const auto changed = m_changes.find(r.id);
        const QString summary = QString::fromStdString(configSummary(r.config_json));
        m_summaries.push_back(changed == m_changes.end() ? summary : summaryWithChanges(summary, changed->second));
        if (r.final_loss) losses.push_back(*r.final_loss);
    }
    m_lossStyle = ColumnNumberStyle::forValues(losses);
    endResetModel();
}

const RunRow* RunTableModel::runById(std::int64_t id) const {
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_runs[static_cast<std::size_t>(row)];
}

int RunTableModel::rowOf(std::int64_t id) const {
    for (std::size_t i = 0; i < m_runs.size(); ++i)
        if (m_runs[i].id == id) return static_cast<int>(i);
    return -1;
}

bool RunTableModel::anyRunning() const {
    return std::any_of(m_runs.begin(), m_runs.end(), [](const RunRow& r) { return r.status == RunStatus::running; });
}

QStringList RunTableModel::splitTags(const std::string& tags) {
    QStringList out;
    for (const QString& t : QString::fromStdString(tags).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString s = t.trimmed();
        if (!s.isEmpty() && !out.contains(s)) out << s;
    }
    return out;
}

QStringList RunTableModel::allTags() const {
    std::set<QString> tags;
    for (const auto& r : m_runs)
        for (const QString& t : splitTags(r.tags)) tags.insert(t);
    return {tags.begin(), tags.end()};
}

QString RunTableModel::displayDate(const std::string& isoUtc) {
    QDateTime t = QDateTime::fromString(QString::fromStdString(isoUtc), Qt::ISODateWithMs);
    if (!t.isValid()) t = QDateTime::fromString(QString::fromStdString(isoUtc), Qt::ISODate);
    if (!t.isValid()) return QString::fromStdString(isoUtc);
    return t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
}

std::int64_t RunTableModel::parentId(const RunRow& run) const {
    if (run.parent_uuid.empty() || !run.parent_step) return -1;
    const auto it = m_idOfUuid.find(run.parent_uuid);
    return it == m_idOfUuid.end() ? -1 : it->second;
}

QString RunTableModel::parentText(const RunRow& run) const {
    if (run.parent_uuid.empty() || !run.parent_step) return {};
    const std::int64_t parent = parentId(run);
    const QString step = QLocale().toString(static_cast<qlonglong>(*run.parent_step));
    return parent >= 0 ? tr("#%1 @%2").arg(parent).arg(step) : tr("other store @%1").arg(step);
}

int RunTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const RunRow& r = m_runs[static_cast<std::size_t>(index.row())];
    const QString summary = m_summaries[static_cast<std::size_t>(index.row())];
    switch (role) {
    case IdRole: return QVariant::fromValue<qlonglong>(r.id);
    case ParentIdRole: return QVariant::fromValue<qlonglong>(parentId(r));
    case StatusRole: return QString::fromLatin1(run_status_name(r.status));
    case TagsRole: return splitTags(r.tags);
    case SearchRole:
        return QStringList{QString::number(r.id), QString::fromStdString(r.name), QString::fromStdString(r.notes),
                           QString::fromStdString(r.tags), summary, QString::fromStdString(r.backend),
                           QString::fromStdString(r.device), QString::fromLatin1(run_status_name(r.status)),
                           parentText(r)}
            .join(QLatin1Char('\n'));
    case Qt::ToolTipRole:
        if (index.column() == Name) {
            QString tip = QStringLiteral("#%1 %2").arg(r.id).arg(QString::fromStdString(r.name).toHtmlEscaped());
            if (!r.notes.empty()) tip += QStringLiteral("<br>") + QString::fromStdString(r.notes).toHtmlEscaped();
            return tip;
        }
        if (index.column() == Parent) return branchedFromText(r, m_runs);
        if (index.column() == Status && !r.error.empty()) return QString::fromStdString(r.error);
        if (index.column() == Backend) return QString::fromStdString(r.device);
        if (index.column() == Configuration) {
            const auto changed = m_changes.find(r.id);
            if (changed == m_changes.end() || changed->second.empty()) return summary;
            return tr("%1\n\nChanged during the run:\n%2")
                .arg(QString::fromStdString(configSummary(r.config_json)), liveChangesList(changed->second));
        }
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == Parent || index.column() == Steps || index.column() == FinalLoss ||
            index.column() == TestAccuracy)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ForegroundRole:
        if (index.column() == Status) {
            if (r.status == RunStatus::failed) return QBrush(QColor(0xd5, 0x5e, 0x00));
            if (r.status == RunStatus::running) return QBrush(QColor(0x00, 0x72, 0xb2));
        }
        return {};
    default: break;
    }
    if (role != Qt::DisplayRole && role != SortRole) return {};
    const bool sort = role == SortRole;
    switch (index.column()) {
    case Name: return QString::fromStdString(r.name);
    case Parent:
        if (!sort) return parentText(r);
        // By parent, then step; runs that are not branches first.
        return r.parent_step ? static_cast<double>(parentId(r)) * 1e12 + static_cast<double>(*r.parent_step) : -2e12;
    case Date: return sort ? QVariant(QString::fromStdString(r.created_at)) : QVariant(displayDate(r.created_at));
    case Status: return QString::fromLatin1(run_status_name(r.status));
    case Backend: return QString::fromStdString(r.backend);
    case Configuration: return summary;
    case Steps: return sort ? QVariant::fromValue<qlonglong>(r.steps) : QVariant(QLocale().toString(static_cast<qlonglong>(r.steps)));
    case FinalLoss:
        if (!r.final_loss) return sort ? QVariant(-INFINITY) : QVariant();
        return sort ? QVariant(*r.final_loss) : QVariant(m_lossStyle.format(*r.final_loss));
    case TestAccuracy:
        if (!r.test_accuracy || !std::isfinite(*r.test_accuracy)) return sort ? QVariant(-INFINITY) : QVariant();
        return sort ? QVariant(*r.test_accuracy) : QVariant(QString::number(*r.test_accuracy * 100, 'f', 1) + QStringLiteral(" %"));
    case Tags: return splitTags(r.tags).join(QStringLiteral(", "));
    default: return {};
    }
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == Parent)
        return tr("For a branch: the run it started from (#id) and the step of that run's checkpoint (@step).");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Name: return tr("Name");
    case Parent: return tr("Branch of");
    case Date: return tr("Date");
    case Status: return tr("Status");
    case Backend: return tr("Backend");
    case Configuration: return tr("Configuration");
    case Steps: return tr("Steps");
    case FinalLoss: return tr("Final loss");
    case TestAccuracy: return tr("Test acc.");
    case Tags: return tr("Tags");
    default: return {};
    }
}

}  // namespace mantissa::ui
