// RunFilterProxy: the run browser's sorting and filtering over a RunTableModel: free text (name,
// notes, tags, configuration, backend, id; every word must match), one tag, one status. Sorts by
// RunTableModel::SortRole, so numbers sort as numbers.
//
// GUI thread only.
#pragma once

#include <QSortFilterProxyModel>

namespace mantissa::ui {

class RunFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit RunFilterProxy(QObject* parent = nullptr);

    void setText(const QString& text);      // empty: no text filter
    void setTag(const QString& tag);        // empty: any tag
    void setStatus(const QString& status);  // run_status_name ("running"); empty: any status
    QString text() const { return m_text; }
    QString tag() const { return m_tag; }
    QString status() const { return m_status; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    QString m_text, m_tag, m_status;
    QStringList m_words;
};

}  // namespace mantissa::ui
