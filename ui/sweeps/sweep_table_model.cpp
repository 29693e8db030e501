// SweepTableModel: a sweep's recipe table (see sweep_table_model.h).
#include "sweeps/sweep_table_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QLocale>

#include <cmath>

#include "config/telemetry.h"

namespace mantissa::ui {
namespace {

// The figure as the table shows it: any recorded run's (the CLI's table too), not only a completed
// one's as the front takes them. NaN: blank.
double shownFigure(const SweepTableRow& r, SweepFigure f) {
    const double none = std::nan("");
    if (!r.run) return none;
    switch (f) {
        case SweepFigure::finalLoss: return r.run->final_loss.value_or(none);
        case SweepFigure::testAccuracy: return r.run->test_accuracy.value_or(none);
        case SweepFigure::samplesPerS: return r.totals.samples_per_s.value_or(none);
        case SweepFigure::peakMemory:
            return r.totals.peak_memory_bytes > 0 ? static_cast<double>(r.totals.peak_memory_bytes) : none;
        case SweepFigure::skippedSteps: return static_cast<double>(r.totals.skipped_steps);
    }
    return none;
}

bool isNumber(const std::string& s) {
    bool ok = false;
    QString::fromStdString(s).toDouble(&ok);
    return ok;
}

}  // namespace

SweepTableModel::SweepTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SweepTableModel::setTable(SweepTable table) {
    beginResetModel();
    m_table = std::move(table);
    m_front.assign(m_table.rows.size(), false);
    m_columns.clear();
    m_columns.push_back({Kind::index});
    if (m_table.hasRecipes || (m_table.keys.empty() && !m_table.seedsVary)) m_columns.push_back({Kind::recipe});
    for (std::size_t k = 0; k < m_table.keys.size(); ++k) {
        bool numeric = true;
        for (const SweepTableRow& r : m_table.rows) numeric = numeric && k < r.values.size() && isNumber(r.values[k]);
        m_columns.push_back({Kind::gridKey, static_cast<int>(k), SweepFigure::finalLoss, numeric});
    }
    if (m_table.seedsVary) m_columns.push_back({Kind::seed});
    m_columns.push_back({Kind::front});  // beside what names the run, where a narrow table still shows it
    m_columns.push_back({Kind::status});
    m_columns.push_back({Kind::steps});
    for (SweepFigure f : sweepFigures) m_columns.push_back({Kind::figure, -1, f});
    m_columns.push_back({Kind::run});
    std::vector<double> losses;
    for (const SweepTableRow& r : m_table.rows)
        if (r.run && r.run->final_loss) losses.push_back(*r.run->final_loss);
    m_lossStyle = ColumnNumberStyle::forValues(losses);
    endResetModel();
}

void SweepTableModel::setFront(std::vector<bool> front, SweepFigure x, SweepFigure y) {
    front.resize(m_table.rows.size(), false);
    m_front = std::move(front);
    m_frontX = x;
    m_frontY = y;
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    emit headerDataChanged(Qt::Horizontal, 0, columnCount() - 1);
}

bool SweepTableModel::onFront(int row) const {
    return row >= 0 && static_cast<std::size_t>(row) < m_front.size() && m_front[static_cast<std::size_t>(row)];
}

int SweepTableModel::columnOf(SweepFigure f) const {
    for (std::size_t c = 0; c < m_columns.size(); ++c)
        if (m_columns[c].kind == Kind::figure && m_columns[c].figure == f) return static_cast<int>(c);
    return -1;
}

int SweepTableModel::columnOf(Kind kind) const {
    for (std::size_t c = 0; c < m_columns.size(); ++c)
        if (m_columns[c].kind == kind) return static_cast<int>(c);
    return -1;
}

int SweepTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_table.rows.size());
}

int SweepTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_columns.size());
}

QString SweepTableModel::formatFigure(SweepFigure f, double v) const {
    if (std::isnan(v)) return {};
    switch (f) {
        case SweepFigure::finalLoss: return m_lossStyle.format(v);
        case SweepFigure::testAccuracy: return QString::number(v * 100, 'f', 2) + QStringLiteral(" %");
        case SweepFigure::samplesPerS:
            return std::isfinite(v) ? QLocale().toString(static_cast<qlonglong>(std::llround(v))) : formatValue(v);
        case SweepFigure::peakMemory: return QString::fromStdString(format_byte_size(static_cast<std::int64_t>(v)));
        case SweepFigure::skippedSteps: return QLocale().toString(static_cast<qlonglong>(v));
    }
    return {};
}

QString SweepTableModel::text(int row, int column) const {
    return data(index(row, column), Qt::DisplayRole).toString();
}

QVariant SweepTableModel::sortValue(const SweepTableRow& r, const Column& c) const {
    switch (c.kind) {
        case Kind::index: return QVariant::fromValue<qlonglong>(r.index);
        case Kind::recipe: return QString::fromStdString(m_table.hasRecipes ? r.recipe : r.label);
        case Kind::gridKey: {
            const std::string& v = static_cast<std::size_t>(c.key) < r.values.size()
                                       ? r.values[static_cast<std::size_t>(c.key)]
                                       : std::string();
            return c.numeric ? QVariant(QString::fromStdString(v).toDouble()) : QVariant(QString::fromStdString(v));
        }
        case Kind::seed: return QVariant::fromValue<qulonglong>(r.seed);
        case Kind::status: return r.run ? QString::fromLatin1(run_status_name(r.run->status)) : tr("not run");
        case Kind::steps: return QVariant::fromValue<qlonglong>(r.run ? r.run->steps : -1);
        case Kind::figure: {
            const double v = shownFigure(r, c.figure);
            return std::isnan(v) ? -INFINITY : v;  // blanks first, as in the run history
        }
        case Kind::run: return QVariant::fromValue<qlonglong>(r.run ? r.run->id : -1);
        case Kind::front: return 0;  // set in data(): needs the row
    }
    return {};
}

QVariant SweepTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const SweepTableRow& r = m_table.rows[static_cast<std::size_t>(index.row())];
    const Column& c = m_columns[static_cast<std::size_t>(index.column())];
    const bool front = onFront(index.row());
    switch (role) {
        case RowRole: return index.row();
        case RunIdRole: return QVariant::fromValue<qlonglong>(r.run ? r.run->id : -1);
        case SortRole: return c.kind == Kind::front ? QVariant(front ? 1 : 0) : sortValue(r, c);
        case Qt::FontRole:
            if (front) {
                QFont bold;
                bold.setBold(true);
                return bold;
            }
            return {};
        case Qt::TextAlignmentRole:
            if (c.kind == Kind::recipe || c.kind == Kind::status || (c.kind == Kind::gridKey && !c.numeric)) return {};
            if (c.kind == Kind::front) return QVariant(Qt::AlignCenter);
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        case Qt::ForegroundRole:
            if (c.kind == Kind::status && r.run) {
                if (r.run->status == RunStatus::failed) return QBrush(QColor(0xd5, 0x5e, 0x00));
                if (r.run->status == RunStatus::running) return QBrush(QColor(0x00, 0x72, 0xb2));
            }
            if (c.kind == Kind::front) return QBrush(QColor(0xe6, 0x9f, 0x00));
            return {};
        case Qt::ToolTipRole: {
            QString tip = QString::fromStdString(r.label);
            if (r.run)
                tip += tr("\nrun %1: %2").arg(r.run->id).arg(QString::fromStdString(r.run->name));
            else
                tip += tr("\nnot run yet: mantissa-cli sweep run %1 runs it").arg(m_table.sweep.id);
            if (r.run && !r.run->error.empty()) tip += QLatin1Char('\n') + QString::fromStdString(r.run->error);
            if (front)
                tip +=
                    tr("\nOn the Pareto front of %1 against %2: no other completed run is at least as good in both and "
                       "better in one.")
                        .arg(QString::fromStdString(figureName(m_frontY)),
                             QString::fromStdString(figureName(m_frontX)));
            return tip;
        }
        case Qt::DisplayRole: break;
        default: return {};
    }
    switch (c.kind) {
        case Kind::index: return QString::number(r.index);
        case Kind::recipe: return QString::fromStdString(m_table.hasRecipes ? r.recipe : r.label);
        case Kind::gridKey:
            return static_cast<std::size_t>(c.key) < r.values.size()
                       ? QString::fromStdString(r.values[static_cast<std::size_t>(c.key)])
                       : QString();
        case Kind::seed: return QString::number(r.seed);
        case Kind::status: return r.run ? QString::fromLatin1(run_status_name(r.run->status)) : tr("not run");
        case Kind::steps: return r.run ? QLocale().toString(static_cast<qlonglong>(r.run->steps)) : QString();
        case Kind::figure: return formatFigure(c.figure, shownFigure(r, c.figure));
        case Kind::run: return r.run ? QString::number(r.run->id) : QString();
        case Kind::front: return front ? QStringLiteral("★") : QString();
    }
    return {};
}

QVariant SweepTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
    const Column& c = m_columns[static_cast<std::size_t>(section)];
    if (role == Qt::ToolTipRole) {
        switch (c.kind) {
            case Kind::index: return tr("The run's place in the sweep's plan, from 0.");
            case Kind::steps: return tr("Steps recorded.");
            case Kind::figure:
                if (c.figure == SweepFigure::samplesPerS)
                    return tr("The mean over the run: samples trained / training time.");
                if (c.figure == SweepFigure::peakMemory)
                    return tr("The largest memory of a step (parameters, gradients, optimizer state, activations).");
                if (c.figure == SweepFigure::skippedSteps) return tr("Steps skipped for an overflow (loss scaling).");
                return {};
            case Kind::run: return tr("The run's id in the store (the latest run of this index).");
            case Kind::front:
                return tr("★: on the Pareto front of %1 against %2 (the scatter's axes): no other completed run is at "
                          "least as good in both and better in one.")
                    .arg(QString::fromStdString(figureName(m_frontY)), QString::fromStdString(figureName(m_frontX)));
            default: return {};
        }
    }
    if (role != Qt::DisplayRole) return {};
    switch (c.kind) {
        case Kind::index: return QStringLiteral("#");
        case Kind::recipe: return m_table.hasRecipes ? tr("Recipe") : tr("Run");
        case Kind::gridKey: return QString::fromStdString(m_table.keys[static_cast<std::size_t>(c.key)]);
        case Kind::seed: return tr("Seed");
        case Kind::status: return tr("Status");
        case Kind::steps: return tr("Steps");
        case Kind::figure:
            switch (c.figure) {
                case SweepFigure::finalLoss: return tr("Final loss");
                case SweepFigure::testAccuracy: return tr("Test acc.");
                case SweepFigure::samplesPerS: return tr("Samples/s");
                case SweepFigure::peakMemory: return tr("Peak memory");
                case SweepFigure::skippedSteps: return tr("Skipped");
            }
            return {};
        case Kind::run: return tr("Run id");
        case Kind::front: return tr("Front");
    }
    return {};
}

}  // namespace mantissa::ui
