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

// The scaled tensor of an FP8 scale column, and what a person calls it.
const Fp8TensorScaling& scaledTensor(const Fp8LayerScaling& f, int column) {
    return column == LayerTableModel::XScale ? f.input : column == LayerTableModel::WScale ? f.weight : f.grad_output;
}

bool isScaleColumn(int column) {
    return column == LayerTableModel::XScale || column == LayerTableModel::WScale || column == LayerTableModel::DyScale;
}
}  // namespace

QString formatScale(double scale) {
    if (!std::isfinite(scale) || scale <= 0) return QString::number(scale, 'g', 3);
    int exponent = 0;
    if (std::frexp(scale, &exponent) == 0.5) return QStringLiteral("2^%1").arg(exponent - 1);
    QString power = QString::number(std::log2(scale), 'f', 1);
    if (power == QLatin1String("-0.0")) power = QStringLiteral("0.0");
    return QStringLiteral("2^") + power;
}

QString formatAmax(double amax) {
    if (!std::isfinite(amax)) return QString::number(amax);
    // "1.23e-05" -> "1.23e-5", "4.00e+00" -> "4.00e0": the column stays narrow.
    QString text = QString::number(amax, 'e', 2);
    const qsizetype e = text.indexOf(QLatin1Char('e'));
    QString power = text.mid(e + 1);
    const bool negative = power.startsWith(QLatin1Char('-'));
    power.remove(0, 1);
    while (power.size() > 1 && power.startsWith(QLatin1Char('0'))) power.remove(0, 1);
    return text.left(e + 1) + (negative ? QStringLiteral("-") : QString()) + power;
}

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
    m_plan = false;
    endResetModel();
    bool fp8 = false;
    for (const Row& row : m_rows) fp8 = fp8 || row.setting == LayerPrecision::fp8_e4m3;
    m_fp8Seen = fp8;
    emit fp8ColumnsShownChanged(fp8);  // after every reset, so a view always follows the new model
}

void LayerTableModel::setPlan(const ModelPlan& plan) {
    bool same = m_plan && plan.layers.size() == m_rows.size();
    for (std::size_t i = 0; same && i < m_rows.size(); ++i) same = m_rows[i].info.name == plan.layers[i].name;
    if (!same) beginResetModel();
    m_rows.resize(plan.layers.size());
    bool fp8 = false;
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
        const PlannedLayer& p = plan.layers[i];
        Row& row = m_rows[i];
        row.info = LayerInfo{p.name, "linear", {p.in, 1, 1}, {p.out, 1, 1}, p.in, p.out, p.parameters(), true};
        row.setting = p.setting;
        row.planned = p.compute;
        row.sample.reset();
        fp8 = fp8 || p.compute == Format::fp8_e4m3;
    }
    m_plan = true;
    if (!same) {
        endResetModel();
        m_fp8Seen = fp8;
        emit fp8ColumnsShownChanged(fp8);
    } else {
        if (!m_rows.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        if (fp8 != m_fp8Seen) noteFp8(fp8);
    }
}

void LayerTableModel::noteFp8(bool seen) {
    if (seen == m_fp8Seen) return;
    m_fp8Seen = seen;
    emit fp8ColumnsShownChanged(seen);
}

void LayerTableModel::clear() {
    beginResetModel();
    m_rows.clear();
    m_plan = false;
    endResetModel();
    noteFp8(false);
}

void LayerTableModel::update(const RunSeries& series) {
    if (m_plan) return;  // a plan's rows are not a run's layers
    const auto& latest = series.latestLayers();
    bool changed = false;
    for (std::size_t i = 0; i < m_rows.size() && i < latest.size(); ++i) {
        if (!latest[i]) continue;
        if (!m_rows[i].sample || m_rows[i].sample->step != latest[i]->step) {
            m_rows[i].sample = latest[i];
            changed = true;
            if (latest[i]->precision == Format::fp8_e4m3 && !m_fp8Seen) noteFp8(true);
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
        case Shape: {
            // A width the dataset sets is "?" until it is loaded (a plan before Start).
            const auto width = [](int w) { return w > 0 ? QString::number(w) : QStringLiteral("?"); };
            return QStringLiteral("%1 → %2").arg(width(row.info.in_features), width(row.info.out_features));
        }
        case Parameters:
            if (row.info.in_features <= 0 || row.info.out_features <= 0) return QStringLiteral("—");
            return QLocale().toString(static_cast<qlonglong>(row.info.parameters));
        case Precision: {
            const QString setting = QLatin1String(layer_precision_name(row.setting));
            if (!s && row.planned && row.setting == LayerPrecision::automatic)
                return tr("auto → %1").arg(formatText(*row.planned));
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
            if (!s && row.planned && row.info.parameters > 0)
                return formatBytes(static_cast<double>(row.info.parameters) * format_bytes(*row.planned));
            if (!s) return QStringLiteral("—");
            return formatBytes(static_cast<double>(row.info.parameters) * format_bytes(s->precision));
        case GradAmax: return s ? formatAmax(s->grad_amax) : QStringLiteral("—");
        case Underflow: return s ? QStringLiteral("%1 %").arg(s->frac_underflow * 100, 0, 'f', 2) : QStringLiteral("—");
        case NonFinite:
            return s ? QLocale().toString(static_cast<qlonglong>(
                           std::llround(s->frac_nonfinite * static_cast<double>(s->grad_elements))))
                     : QStringLiteral("—");
        case LostUpdates:
            return s ? QStringLiteral("%1 %").arg(s->frac_lost_updates * 100, 0, 'f', 2) : QStringLiteral("—");
        case XScale:
        case WScale:
        case DyScale:
            // Blank for layers without FP8 (and where the backend did not record the scaling).
            if (!s) return QStringLiteral("—");
            return s->fp8 ? formatScale(scaledTensor(*s->fp8, column).scale) : QString();
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
            if (isScaleColumn(column) && s && s->fp8) {
                const Fp8TensorScaling& t = scaledTensor(*s->fp8, column);
                const QString name = column == XScale ? tr("x") : column == WScale ? tr("W") : tr("dy");
                return tr("Step %1: the largest |%2| was %3 (amax); from the amax history the scale became %4 "
                          "(exactly %5), which the next step multiplies %2 by before its cast to %6.")
                    .arg(s->step)
                    .arg(name, QString::number(t.amax, 'g', 4), formatScale(t.scale), QString::number(t.scale, 'g', 9),
                         column == DyScale ? tr("E5M2") : tr("E4M3"));
            }
            if (isScaleColumn(column) && s && s->precision == Format::fp8_e4m3)
                return tr("Not recorded: this backend runs steps ahead of their reports, so the scale at a report "
                          "could be a later step's.");
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
        case XScale: return tr("x scale");
        case WScale: return tr("W scale");
        case DyScale: return tr("dy scale");
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
        case LostUpdates: return tr("Of the weights whose update would change them in FP32, the share whose stored value was left "
                                      "unchanged by rounding to the weights' format (always 0 with FP32 master weights).");
        case XScale:
        case WScale:
        case DyScale: {
            const QString tensor = section == XScale   ? tr("the input x (E4M3, largest value 448)")
                                   : section == WScale ? tr("the weight W (E4M3, largest value 448)")
                                                       : tr("the output gradient dy (E5M2, largest value 57344)");
            return tr("FP8 layers: %1 is multiplied by this scale before its cast to FP8, so that its largest value "
                      "lands near the top of the format. Delayed scaling takes the scale from the largest |values| of "
                      "recent steps (the amax history), so it trails the data by a step; shown is the scale after the "
                      "last measured step, blank for other layers, as a power of two (2^7.8 is about 222; a "
                      "cell's tooltip gives the exact value).")
                .arg(tensor);
        }
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
    if (*precision == LayerPrecision::fp8_e4m3 && !m_fp8Seen) noteFp8(true);
    emit precisionRequested(QString::fromStdString(row.info.name), *precision);
    return true;
}

}  // namespace mantissa::ui
