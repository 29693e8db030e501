// The run browser's column widths (see run_table_columns.h).
#include "history/run_table_columns.h"

#include <QEvent>
#include <QHeaderView>
#include <QTableView>

#include <algorithm>

#include "history/run_table_model.h"

namespace mantissa::ui {

namespace {

// Gives Configuration the room the other columns leave (at least its minimum) whenever the table's
// width or another column's changes. A drag of Configuration itself stands until then.
class ConfigurationFit : public QObject {
public:
    explicit ConfigurationFit(QTableView* view) : QObject(view), m_view(view) {
        view->viewport()->installEventFilter(this);
        connect(view->horizontalHeader(), &QHeaderView::sectionResized, this, [this](int column) {
            if (column != RunTableModel::Configuration) fit();
        });
    }

    void fit() {
        const QHeaderView* header = m_view->horizontalHeader();
        int others = 0;
        for (int c = 0; c < header->count(); ++c)
            if (c != RunTableModel::Configuration && !header->isSectionHidden(c)) others += header->sectionSize(c);
        const int room = m_view->viewport()->width() - others;
        m_view->setColumnWidth(RunTableModel::Configuration, std::max(room, configurationMinimumWidth(m_view)));
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Resize) fit();
        return QObject::eventFilter(watched, event);
    }

private:
    QTableView* m_view;
};

}  // namespace

int configurationMinimumWidth(const QTableView* view) {
    return view->fontMetrics().horizontalAdvance(QStringLiteral("fp16 · dynamic · master fp32 · fc3=fp32")) + 20;
}

void setUpRunColumns(QTableView* view) {
    QHeaderView* header = view->horizontalHeader();
    header->setStretchLastSection(false);
    const QFontMetrics fm = view->fontMetrics();
    const auto width = [&](const char* sample) { return fm.horizontalAdvance(QString::fromUtf8(sample)) + 20; };
    view->setColumnWidth(RunTableModel::Name, width("fmnist-fp16-dynamic-x"));
    view->setColumnWidth(RunTableModel::Parent, width("Branch of"));
    view->setColumnWidth(RunTableModel::Date, width("2026-11-29 20:00"));
    view->setColumnWidth(RunTableModel::Status, width("interrupted"));
    view->setColumnWidth(RunTableModel::Backend, width("backend"));
    view->setColumnWidth(RunTableModel::Steps, width("100,000"));
    view->setColumnWidth(RunTableModel::FinalLoss, width("Final loss"));
    view->setColumnWidth(RunTableModel::TestAccuracy, width("Test acc."));
    view->setColumnWidth(RunTableModel::Tags, width("lesson, baseline"));
    (new ConfigurationFit(view))->fit();
}

}  // namespace mantissa::ui
