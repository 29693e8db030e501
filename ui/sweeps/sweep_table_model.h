// SweepTableModel: a sweep's recipe table (sweep_rows.h) for a QTableView, one row per planned run
// in plan order: #, recipe, one column per grid key that varies, seed (when repeated), a ★ on the
// Pareto front of the two figures the scatter draws (its rows also in bold), status, steps, final
// loss, test accuracy, samples/s, peak memory, skipped steps and run id. The columns and their
// figures are `mantissa-cli sweep show`'s (app/cli/sweep_table.cpp; its `*` comes last there, here
// beside the run's name so a narrow table still shows it); the numbers are written as the
// run history writes them: the final loss in one style for the column (number_format.h), test
// accuracy with two decimals (recipes often differ by less than a tenth of a percent), samples/s
// whole with the locale's separators, peak memory in binary units (format_byte_size, the CLI's).
// A figure the run lacks, or a row not run, is blank.
//
// SortRole gives each column's value to sort by (numbers as numbers; a grid column as numbers when
// every value is one); RowRole the row's place in the table, which the scatter's points name.
// GUI thread only.
#pragma once

#include <QAbstractTableModel>

#include <vector>

#include "charts/number_format.h"
#include "sweeps/sweep_rows.h"

namespace mantissa::ui {

class SweepTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum class Kind { index, recipe, gridKey, seed, status, steps, figure, run, front };
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int RowRole = Qt::UserRole + 2;    // int: the row in table().rows
    static constexpr int RunIdRole = Qt::UserRole + 3;  // qlonglong; -1 when not run

    explicit SweepTableModel(QObject* parent = nullptr);

    void setTable(SweepTable table);
    const SweepTable& table() const { return m_table; }
    // The front the ★ column marks (paretoRows for the scatter's axes).
    void setFront(std::vector<bool> front, SweepFigure x, SweepFigure y);
    const std::vector<bool>& front() const { return m_front; }
    bool onFront(int row) const;

    // The column of a figure, of a kind (the first), -1 when absent.
    int columnOf(SweepFigure f) const;
    int columnOf(Kind kind) const;
    // The cell text as shown, for tests and the tooltip.
    QString text(int row, int column) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // How the table and the scatter write a figure: "0.1475", "92.00 %", "103,346", "1.3 MiB", "0".
    QString formatFigure(SweepFigure f, double value) const;

private:
    struct Column {
        Kind kind;
        int key = -1;  // gridKey: its place in table().keys
        SweepFigure figure = SweepFigure::finalLoss;
        bool numeric = false;  // gridKey: every value is a number
    };
    QVariant sortValue(const SweepTableRow& r, const Column& c) const;

    SweepTable m_table;
    std::vector<Column> m_columns;
    std::vector<bool> m_front;
    SweepFigure m_frontX = SweepFigure::peakMemory, m_frontY = SweepFigure::testAccuracy;
    ColumnNumberStyle m_lossStyle;
};

}  // namespace mantissa::ui
