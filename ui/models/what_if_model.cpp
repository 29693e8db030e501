// WhatIfModel: a statistics step's what-if numbers as a layer × format table (see what_if_model.h).
#include "models/what_if_model.h"

#include <QBrush>
#include <QFont>
#include <QGuiApplication>
#include <QLocale>
#include <QPalette>

#include <cmath>

#include "models/what_if_scale.h"

namespace mantissa::ui {

namespace {
QString name(const ComputeFormat& f) {
    return QString::fromUtf8(f.name().data(), static_cast<qsizetype>(f.name().size()));
}

constexpr WhatIfTensor tensors[] = {WhatIfTensor::input, WhatIfTensor::weight, WhatIfTensor::grad_output};
}  // namespace

WhatIfModel::WhatIfModel(QObject* parent) : QAbstractTableModel(parent) {}

void WhatIfModel::setSeries(const WhatIfSeries* series) {
    beginResetModel();
    m_series = series;
    m_follow = true;
    m_layout = series ? series->layout() : 0;
    m_revision = series ? series->revision() : 0;
    endResetModel();
    m_lastShown.reset();
    repaint();
}

void WhatIfModel::sync() {
    if (!m_series) return;
    if (m_series->layout() != m_layout) {
        if (m_series->empty()) m_follow = true;  // cleared for a new run: follow it
        beginResetModel();
        m_layout = m_series->layout();
        m_revision = m_series->revision();
        endResetModel();
        repaint();
        return;
    }
    if (m_series->revision() == m_revision) return;
    m_revision = m_series->revision();
    repaint();
}

void WhatIfModel::repaint() {
    if (rowCount() > 0 && columnCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    const std::optional<std::int64_t> shown = shownStep();
    if (shown != m_lastShown) {
        m_lastShown = shown;
        emit shownStepChanged();
    }
}

void WhatIfModel::setTensor(WhatIfTensor tensor) {
    if (tensor == m_tensor) return;
    m_tensor = tensor;
    repaint();
}

void WhatIfModel::setMetric(WhatIfMetric metric) {
    if (metric == m_metric) return;
    m_metric = metric;
    repaint();
}

void WhatIfModel::followLatest() {
    m_follow = true;
    repaint();
}

void WhatIfModel::showStep(std::int64_t step) {
    m_follow = false;
    m_step = step;
    repaint();
}

std::optional<std::size_t> WhatIfModel::shownSnapshot() const {
    if (!m_series || m_series->empty()) return std::nullopt;
    if (m_follow) return m_series->snapshots().size() - 1;
    // A step before every kept one (thinned away): the oldest kept.
    return m_series->snapshotAt(m_step).value_or(0);
}

std::optional<std::int64_t> WhatIfModel::shownStep() const {
    const auto s = shownSnapshot();
    if (!s) return std::nullopt;
    return m_series->snapshots()[*s].step;
}

int WhatIfModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_series ? 0 : static_cast<int>(m_series->layers().size());
}

int WhatIfModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_series ? 0 : static_cast<int>(m_series->formats().size());
}

QVariant WhatIfModel::data(const QModelIndex& index, int role) const {
    const auto snapshot = shownSnapshot();
    // The series may have grown (or been cleared for a new run) since the view last heard of it:
    // an index is read against the series as it is now.
    if (!index.isValid() || !snapshot || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const auto layer = static_cast<std::size_t>(index.row());
    const auto format = static_cast<std::size_t>(index.column());
    const WhatIfCell& cell = m_series->cell(*snapshot, layer, format);
    const double value = cell.measured ? cell[m_tensor].metric(m_metric) : std::nan("");
    const QPalette palette = QGuiApplication::palette();
    const QColor neutral = palette.color(QPalette::Base);
    switch (role) {
        case Qt::DisplayRole: return cell.measured ? whatif::numberText(m_metric, value) : QString();
        case Qt::ToolTipRole: return toolTip(*snapshot, layer, format);
        case Qt::BackgroundRole: return QBrush(whatif::warmColour(whatif::warmth(m_metric, value), neutral));
        case Qt::ForegroundRole:
            return QBrush(whatif::textOn(whatif::warmColour(whatif::warmth(m_metric, value), neutral), neutral,
                                         palette.color(QPalette::Text)));
        case Qt::FontRole:
            if (cell.current) {
                QFont bold;
                bold.setBold(true);
                return bold;
            }
            return {};
        case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::Alignment(Qt::AlignCenter));
        case ValueRole: return value;
        case WarmthRole: return whatif::warmth(m_metric, value);
        case CurrentFormatRole: return cell.current;
        case MeasuredRole: return cell.measured;
        default: return {};
    }
}

QString WhatIfModel::toolTip(std::size_t snapshot, std::size_t layer, std::size_t format) const {
    const WhatIfCell& cell = m_series->cell(snapshot, layer, format);
    const QString layerName = QString::fromStdString(m_series->layers()[layer]);
    const QString formatName = name(m_series->formats()[format]);
    const QLocale locale;
    QStringList lines{
        tr("%1 in %2, step %3")
            .arg(layerName, formatName, locale.toString(static_cast<qlonglong>(m_series->snapshots()[snapshot].step)))};
    if (!cell.measured) {
        lines << tr("Not measured at this step.");
        return lines.join(QLatin1Char('\n'));
    }
    for (WhatIfTensor t : tensors) {
        const WhatIfNumbers& n = cell[t];
        lines << tr("%1: SQNR %2, underflow %3, saturation %4, of %5 values")
                     .arg(whatif::tensorName(t), whatif::numberText(WhatIfMetric::sqnr_db, n.sqnr_db),
                          whatif::numberText(WhatIfMetric::underflow, n.underflow),
                          whatif::numberText(WhatIfMetric::saturation, n.saturation),
                          locale.toString(static_cast<qulonglong>(n.values)));
    }
    if (cell.current)
        lines << tr("%1 runs in %2: these are its own operands.").arg(layerName, formatName);
    else if (const auto own = m_series->currentFormat(snapshot, layer))
        lines << tr("%1 runs in %2: this is what %3 would do to its operands.")
                     .arg(layerName, name(m_series->formats()[*own]), formatName);
    return lines.join(QLatin1Char('\n'));
}

QVariant WhatIfModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (!m_series || section < 0) return {};
    const auto i = static_cast<std::size_t>(section);
    if (orientation == Qt::Vertical) {
        if (i >= m_series->layers().size() || role != Qt::DisplayRole) return {};
        return QString::fromStdString(m_series->layers()[i]);
    }
    if (i >= m_series->formats().size()) return {};
    const ComputeFormat& f = m_series->formats()[i];
    if (role == Qt::DisplayRole) return name(f);
    if (role == Qt::ToolTipRole) {
        if (f.block)
            return tr("%1: a block-scaled format, its operands quantised in blocks along each matmul's "
                      "reduction dimension, each block with a scale of its own.")
                .arg(name(f));
        if (f.format == Format::fp8_e4m3)
            return tr(
                "fp8-e4m3: FP8 scaled per tensor with delayed scaling, x and W in E4M3, dy in E5M2, as a layer "
                "in fp8-e4m3 runs.");
        return tr("%1: every value rounded to the format, no scaling (dy as the loss scale leaves it).").arg(name(f));
    }
    return {};
}

}  // namespace mantissa::ui
