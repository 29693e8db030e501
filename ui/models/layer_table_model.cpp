// LayerTableModel: the layers table (see layer_table_model.h).
#include "models/layer_table_model.h"

#include <QColor>

#include <cmath>

#include "numeric/format.h"
#include "series/run_series.h"

namespace mantissa::ui {

namespace {
QString formatText(Format f) {
    const std::string_view name = format_name(f);
    return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}
}  // namespace

QString formatBytes(double bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return u == 0 ? QStringLiteral("%1 B").arg(bytes, 0, 'f', 0)
                  : QStringLiteral("%1 %2").arg(bytes, 0, 'f', bytes < 10 ? 2 : 1).arg(QLatin1String(units[u]));
}

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setLayers(const std::vector<LayerInfo>& layers,
                                const std::map<std::string, LayerPrecision>& settings) {
    beginResetModel();
    m_rows.clear();
    for (const auto& info : layers) {
        Row row;
        row.info = info;
        if (auto it = settings.find(info.name); it != settings.end()) row.setting = it->second;
        m_rows.push_back(std::move(row));
    }
    endResetModel();
}

void LayerTableModel::clear() {
    beginResetModel();
    m_rows.clear();
    endResetModel();
}

void LayerTableModel::update(const RunSeries& series) {
    const auto& latest = series.latestLayers();
    bool changed = false;
    for (std::size_t i = 0; i < m_rows.size() && i < latest.size(); ++i) {
        if (!latest[i]) continue;
        if (!m_rows[i].sample || m_rows[i].sample->step != latest[i]->step) {
            m_rows[i].sample = latest[i];
            changed = true;
        }
    }
    if (changed && !m_rows.empty())
        emit dataChanged(index(0, Precision), index(rowCount() - 1, ColumnCount - 1));
}

QString LayerTableModel::layerName(int row) const {
    return QString::fromStdString(m_rows[static_cast<std::size_t>(row)].info.name);
}

int LayerTableModel::rowOf(const QString& layer) const {
    for (std::size_t i = 0; i < m_rows.size(); ++i)
        if (QString::fromStdString(m_rows[i].info.name) == layer) return static_cast<int>(i);
    return -1;
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

LayerTableModel::Trouble LayerTableModel::trouble(const Row& row, int column, QString* why) const {
    if (!row.sample) return Trouble::none;
    const LayerSample& s = *row.sample;
    auto verdict = [&](double v, double warn, double bad, const QString& text) {
        if (v >= warn) *why = text;
        return v >= bad ? Trouble::bad : v >= warn ? Trouble::warn : Trouble::none;
    };
    switch (column) {
    case Underflow:
        return verdict(s.frac_underflow, underflowWarn, underflowBad,
                       tr("Gradient values this small become zero in %1: raise the loss scale or use a wider format.")
                           .arg(formatText(s.precision)));
    case NonFinite:
        if (s.frac_nonfinite > 0) {
            *why = tr("This layer's gradient held inf or NaN at the last measured step: the step overflowed.");
            return Trouble::bad;
        }
        return Trouble::none;
    case LostUpdates:
        return verdict(s.frac_lost_updates, lostWarn, lostBad,
                       tr("Weight updates this small are rounded away: turn on FP32 master weights or raise the "
                          "learning rate."));
    default: return Trouble::none;
    }
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const Row& row = m_rows[static_cast<std::size_t>(index.row())];
    const std::optional<LayerSample>& s = row.sample;
    const int column = index.column();

    if (role == Qt::DisplayRole) {
        switch (column) {
        case Name: return QString::fromStdString(row.info.name);
        case Shape: return QStringLiteral("%1 → %2").arg(row.info.in_features).arg(row.info.out_features);
        case Parameters: return QLocale().toString(static_cast<qlonglong>(row.info.parameters));
        case Precision: {
            const QString setting = QLatin1String(layer_precision_name(row.setting));
            if (!s) return setting;
            const QString effective = formatText(s->precision);
            if (row.setting == LayerPrecision::automatic) return tr("auto → %1").arg(effective);
            if (effective != setting)  // asked for, not yet applied (it applies at the next step)
                return tr("%1 (now %2)").arg(setting, effective);
            return setting;
        }
        case Memory:
            // Weight storage in the format in effect: the layer's parameter count (from the
            // engine) times the bytes one value of that format takes on a device.
            if (!s) return QStringLiteral("—");
            return formatBytes(static_cast<double>(row.info.parameters) * format_bytes(s->precision));
        case GradAmax: return s ? QString::number(s->grad_amax, 'g', 3) : QStringLiteral("—");
        case Underflow: return s ? QStringLiteral("%1 %").arg(s->frac_underflow * 100, 0, 'f', 2) : QStringLiteral("—");
        case NonFinite:
            return s ? QLocale().toString(static_cast<qlonglong>(
                           std::llround(s->frac_nonfinite * static_cast<double>(s->grad_elements))))
                     : QStringLiteral("—");
        case LostUpdates:
            return s ? QStringLiteral("%1 %").arg(s->frac_lost_updates * 100, 0, 'f', 2) : QStringLiteral("—");
        default: return {};
        }
    }
    if (role == Qt::EditRole && column == Precision) return QLatin1String(layer_precision_name(row.setting));
    if (role == Qt::TextAlignmentRole && column != Name && column != Precision && column != Shape)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::BackgroundRole || role == Qt::ToolTipRole) {
        QString why;
        const Trouble t = trouble(row, column, &why);
        if (role == Qt::ToolTipRole) {
            if (!why.isEmpty()) return why;
            if (column == Precision) return tr("Double-click to change this layer's precision; it applies at the next step.");
            return {};
        }
        if (t == Trouble::none) return {};
        // Translucent fills read on light and dark palettes alike.
        return t == Trouble::bad ? QColor(225, 60, 60, 110) : QColor(240, 170, 40, 110);
    }
    return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Name: return tr("Layer");
        case Shape: return tr("Shape");
        case Parameters: return tr("Params");
        case Precision: return tr("Precision");
        case Memory: return tr("Memory");
        case GradAmax: return tr("Grad amax");
        case Underflow: return tr("Underflow");
        case NonFinite: return tr("Non-finite");
        case LostUpdates: return tr("Lost updates");
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Shape: return tr("Input features → output features of the linear layer.");
        case Parameters: return tr("Weights and biases of the layer.");
        case Precision: return tr("The setting (auto follows autocast) and the format in effect at the last step.");
        case Memory: return tr("Bytes the layer's weights take in the format in effect (modelled on the CPU backend).");
        case GradAmax: return tr("Largest |gradient| of the layer's weights at the last measured step (unscaled).");
        case Underflow:
            return tr("Share of weight-gradient values that were non-zero in FP32 and became zero in the layer's format.");
        case NonFinite: return tr("Weight-gradient values that were inf or NaN at the last measured step.");
        case LostUpdates: return tr("Share of weights whose non-zero update was rounded away, leaving them unchanged.");
        default: return {};
        }
    }
    return {};
}

Qt::ItemFlags LayerTableModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == Precision) f |= Qt::ItemIsEditable;
    return f;
}

bool LayerTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !index.isValid() || index.column() != Precision || index.row() >= rowCount())
        return false;
    const auto precision = parse_layer_precision(value.toString().toStdString());
    if (!precision) return false;
    Row& row = m_rows[static_cast<std::size_t>(index.row())];
    if (row.setting == *precision) return true;
    row.setting = *precision;
    emit dataChanged(index, index);
    emit precisionRequested(QString::fromStdString(row.info.name), *precision);
    return true;
}

}  // namespace mantissa::ui
