// RunFilterProxy: text, tag and status filters over the run table (see run_filter_proxy.h).
#include "history/run_filter_proxy.h"

#include "history/run_table_model.h"

namespace mantissa::ui {

RunFilterProxy::RunFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(RunTableModel::SortRole);
    setSortCaseSensitivity(Qt::CaseInsensitive);
    setDynamicSortFilter(true);
}

void RunFilterProxy::setText(const QString& text) {
    m_text = text;
    m_words = text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    invalidateFilter();
}

void RunFilterProxy::setTag(const QString& tag) {
    m_tag = tag.trimmed();
    invalidateFilter();
}

void RunFilterProxy::setStatus(const QString& status) {
    m_status = status;
    invalidateFilter();
}

bool RunFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    if (!m_status.isEmpty() && index.data(RunTableModel::StatusRole).toString() != m_status) return false;
    if (!m_tag.isEmpty() && !index.data(RunTableModel::TagsRole).toStringList().contains(m_tag, Qt::CaseInsensitive))
        return false;
    if (!m_words.isEmpty()) {
        const QString text = index.data(RunTableModel::SearchRole).toString();
        for (const QString& w : m_words)
            if (!text.contains(w, Qt::CaseInsensitive)) return false;
    }
    return true;
}

}  // namespace mantissa::ui
