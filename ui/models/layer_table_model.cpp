// LayerTableModel: the layers table (see layer_table_model.h).
#include "models/layer_table_model.h"

#include <QColor>
#include <QFont>

#include <cmath>

#include "numeric/format.h"
#include "series/run_series.h"

namespace mantissa::ui {

namespace {
QString formatText(const ComputeFormat& f) {
    const std::string_view name = f.name();
    return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

// The scaled tensor of an FP8 scale column, and what a person calls it.
const Fp8TensorScaling& scaledTensor(const Fp8LayerScaling& f, int column) {
    return column == LayerTableModel::XScale ? f.input : column == LayerTableModel::WScale ? f.weight : f.grad_output;
}

// What an attention op row computes, from its name's last part.
QString opDescription(const std::string& name) {
    const std::string op = name.substr(name.rfind('.') + 1);
    if (op == "scores") return LayerTableModel::tr("the attention logits S = Q·Kᵀ/√d, a batched matmul");
    if (op == "softmax") return LayerTableModel::tr("P = softmax(S) over the earlier positions");
    if (op == "pv") return LayerTableModel::tr("the heads' outputs P·V, a batched matmul");
    return QString::fromStdString(op);
}

// Why an op runs in its format, in a sentence, from op_table's reason.
QString formatWhyTooltip(const OpRow& op) {
    const QString format = QString::fromStdString(op.format);
    const std::string& r = op.reason;
    if (r == "autocast's FP32 list")
        return LayerTableModel::tr("%1: PyTorch's autocast keeps softmax and layer norm in FP32 whatever their input, "
                                   "because their sums and exponentials lose too much in 16 bits. The Precision "
                                   "panel's softmax and layernorm settings override that, which autocast itself never "
                                   "allows.")
            .arg(format);
    if (r == "autocast")
        return LayerTableModel::tr("%1: autocast runs matmuls (linear layers, the attention's batched matmuls) in its "
                                   "type.")
            .arg(format);
    if (r == "autocast off")
        return LayerTableModel::tr("%1: with autocast off, the op writes the format of its input.").arg(format);
    if (r.rfind("autocast off", 0) == 0)
        return LayerTableModel::tr("%1: with autocast off, the attention's matmuls run in the format the qkv "
                                   "projection writes.")
            .arg(format);
    if (r.rfind("precision.ops.", 0) == 0)
        return LayerTableModel::tr("%1: set by %2 in the Precision panel, overriding autocast's FP32 list for every "
                                   "such op.")
            .arg(format, QString::fromStdString(r));
    if (r.rfind("precision.layers.", 0) == 0)
        return LayerTableModel::tr("%1: set by this row's Precision (%2), overriding autocast.")
            .arg(format, QString::fromStdString(r));
    return QStringLiteral("%1: %2.").arg(format, QString::fromStdString(r));
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

std::vector<LayerTableModel::Row> LayerTableModel::makeRows(const std::vector<LayerInfo>& layers) const {
    // op_table lists every layer in order, with an attention's op rows after its qkv projection.
    std::vector<Row> rows;
    std::size_t next = 0;
    for (OpRow& op : op_table(layers, m_precision)) {
        Row row;
        if (next < layers.size() && op.name == layers[next].name) {
            row.info = layers[next];
            row.layer = static_cast<int>(next++);
        } else {
            row.info.name = op.name;
            row.info.kind = op.op;
        }
        row.op = std::move(op);
        rows.push_back(std::move(row));
    }
    for (; next < layers.size(); ++next) {  // a layer op_table did not list (none today): still a row
        Row row;
        row.info = layers[next];
        row.layer = static_cast<int>(next);
        rows.push_back(std::move(row));
    }
    return rows;
}

void LayerTableModel::applyOpTable() {
    // The rows' own settings are what the table shows: they win over the spec's copy.
    PrecisionSpec p = m_precision;
    std::vector<LayerInfo> layers;
    for (const Row& row : m_rows) {
        if (row.layer < 0) continue;
        layers.push_back(row.info);
        if (row.info.takes_precision) {
            if (row.setting == LayerSetting{}) p.layers.erase(row.info.name);
            else p.layers[row.info.name] = row.setting;
        }
    }
    std::vector<OpRow> table = op_table(layers, p);
    if (table.size() != m_rows.size()) return;  // the rows came from op_table: cannot happen
    for (std::size_t i = 0; i < m_rows.size(); ++i) m_rows[i].op = std::move(table[i]);
}

void LayerTableModel::noteOps() {
    bool ops = false;
    for (const Row& row : m_rows)
        ops = ops || row.layer < 0 ||
              (row.info.kind != "linear" && row.info.kind != "conv2d" && row.info.kind != "batchnorm2d");
    m_showsOps = ops;
    emit opsShownChanged(ops);
}

void LayerTableModel::setPrecision(const PrecisionSpec& precision) {
    m_precision = precision;
    if (m_rows.empty()) return;
    applyOpTable();
    emit dataChanged(index(0, Precision), index(rowCount() - 1, FormatWhy));
}

QString LayerTableModel::opFormat(int row) const {
    return QString::fromStdString(m_rows[static_cast<std::size_t>(row)].op.format);
}

QString LayerTableModel::opReason(int row) const {
    return QString::fromStdString(m_rows[static_cast<std::size_t>(row)].op.reason);
}

bool LayerTableModel::hasOpKind(const std::string& kind) const {
    for (const Row& row : m_rows)
        if (row.info.kind == kind) return true;
    return false;
}

void LayerTableModel::setLayers(const std::vector<LayerInfo>& layers,
                                const std::map<std::string, LayerSetting>& settings) {
    beginResetModel();
    m_rows = makeRows(layers);
    for (Row& row : m_rows)
        if (auto it = settings.find(row.info.name); row.layer >= 0 && it != settings.end()) row.setting = it->second;
    applyOpTable();
    m_plan = false;
    endResetModel();
    bool fp8 = false;
    for (const Row& row : m_rows) fp8 = fp8 || row.setting.uses(LayerPrecision::fp8_e4m3);
    m_fp8Seen = fp8;
    emit fp8ColumnsShownChanged(fp8);  // after every reset, so a view always follows the new model
    noteOps();
}

void LayerTableModel::setPlan(const ModelPlan& plan) {
    std::vector<LayerInfo> layers;
    for (const PlannedLayer& p : plan.layers) layers.push_back(p.info);
    std::vector<Row> rows = makeRows(layers);
    bool fp8 = false;
    for (Row& row : rows) {
        if (row.layer < 0) continue;
        const PlannedLayer& p = plan.layers[static_cast<std::size_t>(row.layer)];
        row.setting = p.setting;
        row.planned = p.compute;
        fp8 = fp8 || p.compute == Format::fp8_e4m3;
    }
    bool same = m_plan && rows.size() == m_rows.size();
    for (std::size_t i = 0; same && i < m_rows.size(); ++i) same = m_rows[i].info.name == rows[i].info.name;
    if (!same) beginResetModel();
    m_rows = std::move(rows);
    applyOpTable();
    m_plan = true;
    if (!same) {
        endResetModel();
        m_fp8Seen = fp8;
        emit fp8ColumnsShownChanged(fp8);
        noteOps();
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
    noteOps();
}

void LayerTableModel::update(const RunSeries& series) {
    if (m_plan) return;  // a plan's rows are not a run's layers
    const auto& latest = series.latestLayers();
    bool changed = false;
    for (Row& row : m_rows) {
        const auto i = static_cast<std::size_t>(row.layer);
        if (row.layer < 0 || i >= latest.size() || !latest[i]) continue;
        if (!row.sample || row.sample->step != latest[i]->step) {
            row.sample = latest[i];
            changed = true;
            if (latest[i]->precision == Format::fp8_e4m3 && !m_fp8Seen) noteFp8(true);
        }
    }
    if (changed && !m_rows.empty())
        emit dataChanged(index(0, Precision), index(rowCount() - 1, ColumnCount - 1));
}

bool LayerTableModel::mixesKinds() const {
    for (const Row& row : m_rows)
        if (row.info.kind != m_rows.front().info.kind) return true;
    return false;
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

    // An op row (an attention's scores, softmax, P·V) has no parameters, shape or telemetry.
    const bool opRow = row.layer < 0;
    if (opRow && role == Qt::DisplayRole && column != Name && column != Kind && column != Precision &&
        column != FormatWhy)
        return QString();
    if (opRow && role == Qt::FontRole) {
        QFont italic;
        italic.setItalic(true);
        return italic;
    }
    if (role == Qt::DisplayRole) {
        switch (column) {
        case Name: return QString::fromStdString(row.info.name);
        case Kind: return QString::fromStdString(row.info.kind);
        case Shape: {
            // A width the dataset sets is "?" until it is loaded (a plan before Start); an image is
            // channels×height×width, a flat sample its width.
            const auto shape = [](const SampleShape& s, std::int64_t features) {
                return features > 0 ? QString::fromStdString(s.text()) : QStringLiteral("?");
            };
            return QStringLiteral("%1 → %2").arg(shape(row.info.in_shape, row.info.in_features),
                                                 shape(row.info.out_shape, row.info.out_features));
        }
        case Parameters:
            // 0: a count only the data tells (a plan's width, or its vocabulary's rows) until Start.
            if (row.info.parameters <= 0) return QStringLiteral("—");
            return QLocale().toString(static_cast<qlonglong>(row.info.parameters));
        case FormatWhy:
            if (row.op.format.empty()) return QString();
            return QStringLiteral("%1 — %2").arg(QString::fromStdString(row.op.format),
                                                 QString::fromStdString(row.op.reason));
        case Precision: {
            if (!row.info.takes_precision && m_showsOps) {
                // An op class's setting (precision.ops) and what it resolves to, as "auto → bf16"
                // reads for a layer; ops that follow autocast alone read the same.
                const QString format = QString::fromStdString(row.op.format);
                const std::string& kind = row.info.kind;
                if (kind == "layernorm" || kind == "softmax") {
                    const OpPrecision setting = kind == "softmax" ? m_precision.ops.softmax : m_precision.ops.layernorm;
                    if (setting != OpPrecision::automatic) return QLatin1String(op_precision_name(setting));
                    return tr("auto → %1").arg(format);
                }
                if (kind == "bmm") return tr("auto → %1").arg(format);
            }
            if (!row.info.takes_precision) return tr("fp32 (fixed)");
            const QString setting = QString::fromStdString(layer_setting_text(row.setting));
            if (!row.setting.uniform()) return setting;  // per matmul: the three, as asked for
            if (!s && row.planned && row.setting == LayerSetting{})
                return tr("auto → %1").arg(formatText(*row.planned));
            if (!s) return setting;
            const QString effective = formatText(s->precision);
            if (row.setting == LayerSetting{}) return tr("auto → %1").arg(effective);
            if (effective != setting)  // asked for, not yet applied (it applies at the next step)
                return tr("%1 (now %2)").arg(setting, effective);
            return setting;
        }
        case Memory:
            // Weight storage in the format in effect: the layer's parameter count (from the
            // engine) times the bytes one value of that format takes on a device.
            if (!s && row.planned && row.info.parameters > 0)
                return formatBytes(static_cast<double>(row.info.parameters) * row.planned->bytes_per_value());
            if (!s) return QStringLiteral("—");
            return formatBytes(static_cast<double>(row.info.parameters) * s->precision.bytes_per_value());
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
    if (role == Qt::EditRole && column == Precision) return QLatin1String(layer_precision_name(row.setting.forward));
    if (role == SettingRole && column == Precision) return QVariant::fromValue(row.setting);
    if (role == Qt::TextAlignmentRole && column != Name && column != Kind && column != Precision && column != Shape &&
        column != FormatWhy)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::BackgroundRole || role == Qt::ToolTipRole) {
        QString why;
        const Trouble t = trouble(row, column, &why);
        if (role == Qt::ToolTipRole) {
            if (!why.isEmpty()) return why;
            if (column == FormatWhy) return formatWhyTooltip(row.op);
            if (column == Name && opRow)
                return tr("An op of %1 without parameters, so no layer of its own: %2. It computes in the format the "
                          "next column gives.")
                    .arg(QString::fromStdString(row.info.name.substr(0, row.info.name.rfind('.'))), opDescription(row.info.name));
            if (column == Precision && (row.info.kind == "layernorm" || row.info.kind == "softmax") && m_showsOps)
                return tr("Follows the Precision panel's %1 setting (precision.ops.%1): auto is what autocast does, FP32 "
                          "under autocast; fp32, fp16 or bf16 override it for every %1 of the model.")
                    .arg(QString::fromStdString(row.info.kind));
            if (column == Precision && row.info.kind == "bmm")
                return tr("A batched matmul of the attention: it runs in the autocast type (with autocast off, in the "
                          "format the qkv projection writes); it has no setting of its own.");
            if (column == Precision && (row.info.kind == "embedding" || row.info.kind == "position_embedding"))
                return tr("An embedding looks rows up in its FP32 table; autocast leaves it alone, and it takes no "
                          "precision setting.");
            if (column == Precision && !row.info.takes_precision)
                return tr("A %1 layer keeps its statistics and its parameters in FP32 and writes its output in its "
                          "input's format, whatever autocast says (as cuDNN does under PyTorch's autocast); it takes "
                          "no precision setting.")
                    .arg(QString::fromStdString(row.info.kind));
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
        case Kind: return tr("Kind");
        case Shape: return tr("Shape");
        case Parameters: return tr("Params");
        case Precision: return tr("Precision");
        case FormatWhy: return tr("Format (why)");
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
        case Name: return tr("The layer's name, as PyTorch's state dict names it; precision.layers and --set use it.");
        case Kind: return tr("The layer's type: linear, conv2d, batchnorm2d, layernorm or embedding (the layers with "
                             "parameters); in italics, an attention's ops without parameters (bmm, softmax).");
        case Shape: return tr("One sample in → one sample out: channels×height×width for images, a width for flat "
                              "features.");
        case Parameters: return tr("Weights and biases of the layer.");
        case Precision: return tr("The setting (auto follows autocast) and the format in effect at the last step.");
        case FormatWhy:
            return tr("Autocast, op by op: the format each op computes and writes in, and the rule that chose it "
                      "(docs/numerics.md). Matmuls (linear, the attention's Q·Kᵀ and P·V) run in the autocast type; "
                      "softmax and layer norm are on autocast's FP32 list; an embedding stays in its FP32 table. A "
                      "row's Precision, or the Precision panel's softmax and layernorm, override the rule. Follows "
                      "every change at once: what the op runs in from the next step.");
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
    if (index.isValid() && index.column() == Precision && index.row() < rowCount() &&
        m_rows[static_cast<std::size_t>(index.row())].info.takes_precision)
        f |= Qt::ItemIsEditable;
    return f;
}

void LayerTableModel::setSetting(int row, const LayerSetting& setting) {
    if (row < 0 || row >= rowCount() || !m_rows[static_cast<std::size_t>(row)].info.takes_precision) return;
    m_rows[static_cast<std::size_t>(row)].setting = setting;
    applyOpTable();
    emit dataChanged(index(0, Precision), index(rowCount() - 1, FormatWhy));
    if (setting.uses(LayerPrecision::fp8_e4m3) && !m_fp8Seen) noteFp8(true);
}

bool LayerTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if ((role != Qt::EditRole && role != SettingRole) || !index.isValid() || index.column() != Precision ||
        index.row() >= rowCount())
        return false;
    LayerSetting setting;
    if (role == SettingRole) {
        if (!value.canConvert<LayerSetting>()) return false;
        setting = value.value<LayerSetting>();
    } else {
        const auto precision = parse_layer_precision(value.toString().toStdString());
        if (!precision) return false;
        setting = *precision;  // the combo sets all three matmuls
    }
    Row& row = m_rows[static_cast<std::size_t>(index.row())];
    if (!row.info.takes_precision) return false;
    if (row.setting == setting) return true;
    row.setting = setting;
    applyOpTable();  // this row's Format (why), and its attention's ops when autocast is off
    emit dataChanged(this->index(0, Precision), this->index(rowCount() - 1, FormatWhy));
    if (setting.uses(LayerPrecision::fp8_e4m3) && !m_fp8Seen) noteFp8(true);
    emit precisionRequested(QString::fromStdString(row.info.name), setting);
    return true;
}

}  // namespace mantissa::ui
