// The run browser's column widths (see run_table_columns.h).
#include "history/run_table_columns.h"

#include <QAbstractProxyModel>
#include <QEvent>
#include <QHeaderView>
#include <QTableView>

#include <algorithm>

#include "history/run_table_model.h"

namespace mantissa::ui {

namespace {

// The model the view shows, under its filter proxy: all the runs listed, whatever a filter hides.
const QAbstractItemModel* listedRuns(const QTableView* view) {
    const QAbstractItemModel* model = view->model();
    if (const auto* proxy = qobject_cast<const QAbstractProxyModel*>(model)) model = proxy->sourceModel();
    return model;
}

// The widest text of `column` among the runs listed, in pixels.
int widestText(const QTableView* view, int column) {
    const QAbstractItemModel* model = listedRuns(view);
    const QFontMetrics fm = view->fontMetrics();
    int widest = 0;
    for (int r = 0; model && r < model->rowCount(); ++r)
        widest = std::max(widest, fm.horizontalAdvance(model->index(r, column).data().toString()));
    return widest;
}

// Gives Configuration the room the other columns leave (at least configurationMinimumWidth; the
// readable width when not even that is left, see run_table_columns.h) whenever the table's width or
// another column's changes. A drag of Configuration itself stands until then.
class ConfigurationFit : public QObject {
public:
    explicit ConfigurationFit(QTableView* view) : QObject(view), m_view(view) {
        view->viewport()->installEventFilter(this);
        connect(view->horizontalHeader(), &QHeaderView::sectionResized, this, [this](int column) {
            if (column != RunTableModel::Configuration) fit();
        });
        if (const QAbstractItemModel* model = listedRuns(view)) {
            connect(model, &QAbstractItemModel::modelReset, this, &ConfigurationFit::measure);
            connect(model, &QAbstractItemModel::rowsInserted, this, &ConfigurationFit::measure);
        }
        measure();
    }

    void measure() {
        const int typical =
            m_view->fontMetrics().horizontalAdvance(QStringLiteral("fp16 · dynamic · master fp32 · fc3=fp32")) + 20;
        const int readable =
            std::clamp(widestText(m_view, RunTableModel::Configuration) + 20, typical, typical * 3 / 2);
        if (readable == m_readable) return;
        m_readable = readable;
        fit();
    }

    void fit() {
        const QHeaderView* header = m_view->horizontalHeader();
        int others = 0;
        for (int c = 0; c < header->count(); ++c)
            if (c != RunTableModel::Configuration && !header->isSectionHidden(c)) others += header->sectionSize(c);
        const int room = m_view->viewport()->width() - others;
        m_view->setColumnWidth(RunTableModel::Configuration,
                               room >= configurationMinimumWidth(m_view) ? room : std::max(room, m_readable));
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Resize) fit();
        return QObject::eventFilter(watched, event);
    }

private:
    QTableView* m_view;
    int m_readable = 0;
};

// Sizes the Name column to the longest name listed (all the runs, not only those a filter shows,
// so typing a filter does not move the columns), within its usual width and nameMaximumWidth.
// Only a change of that width resizes it: a drag stands through refreshes.
class NameFit : public QObject {
public:
    NameFit(QTableView* view, int usualWidth) : QObject(view), m_view(view), m_usual(usualWidth) {
        if (const QAbstractItemModel* model = listedRuns(view)) {
            connect(model, &QAbstractItemModel::modelReset, this, &NameFit::fit);
            connect(model, &QAbstractItemModel::rowsInserted, this, &NameFit::fit);
            connect(model, &QAbstractItemModel::dataChanged, this, &NameFit::fit);
        }
    }

    void fit() {
        // The cell's text margins and the sort indicator's room, as the header's sample widths have.
        const int width = std::clamp(widestText(m_view, RunTableModel::Name) + 20, m_usual,
                                     std::max(m_usual, nameMaximumWidth(m_view)));
        if (width == m_fitted) return;
        m_fitted = width;
        m_view->setColumnWidth(RunTableModel::Name, width);
    }

private:
    QTableView* m_view;
    int m_usual;
    int m_fitted = -1;
};

}  // namespace

void MiddleElideDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const {
    QStyledItemDelegate::initStyleOption(option, index);
    option->textElideMode = Qt::ElideMiddle;
}

int nameMaximumWidth(const QTableView* view) {
    // A lesson's name whole, and its reference run's elided in the middle: wider would take the
    // room the Configuration column reads in.
    return view->fontMetrics().horizontalAdvance(QStringLiteral("lesson-fp16-accumulation-xx")) + 20;
}

int configurationMinimumWidth(const QTableView* view) {
    // The summary's first three parts, which every run has (config_summary.h).
    return view->fontMetrics().horizontalAdvance(QStringLiteral("fp16 · dynamic · master fp32")) + 20;
}

void setUpRunColumns(QTableView* view) {
    QHeaderView* header = view->horizontalHeader();
    header->setStretchLastSection(false);
    const QFontMetrics fm = view->fontMetrics();
    const auto width = [&](const char* sample) { return fm.horizontalAdvance(QString::fromUtf8(sample)) + 20; };
    view->setItemDelegateForColumn(RunTableModel::Name, new MiddleElideDelegate(view));
    view->setTextElideMode(Qt::ElideRight);  // Configuration's: its first parts matter most
    (new NameFit(view, width("fmnist-fp16-dynamic-x")))->fit();
    view->setColumnWidth(RunTableModel::Parent, width("Branch of"));
    view->setColumnWidth(RunTableModel::Date, width("2026-11-29 20:00"));
    view->setColumnWidth(RunTableModel::Status, width("interrupted"));
    view->setColumnWidth(RunTableModel::Backend, width("backend"));
    view->setColumnWidth(RunTableModel::Steps, width("100,000"));
    view->setColumnWidth(RunTableModel::FinalLoss, width("Final loss"));
    view->setColumnWidth(RunTableModel::TestAccuracy, width("Test acc."));
    view->setColumnWidth(RunTableModel::Tags, width("lesson, baseline"));
    new ConfigurationFit(view);
}

}  // namespace mantissa::ui
