// LayerTableModel: one row per layer with parameters of the running model (its kind: linear,
// conv2d, batchnorm2d; its input and output shapes), with its precision setting (editable, for the
// layers that take one:
// the edit is a request that the controller posts to the session, applied at the next step) and
// the latest per-layer telemetry: gradient amax, underflow fraction, non-finite count,
// lost-update fraction and, for FP8 layers, the delayed-scaling scales of x, W and dy. Cells that
// signal trouble are coloured (amber: worth a look; red: the layer is losing its signal), with a
// tooltip saying why.
//
// Autocast, op by op (docs/numerics.md): for a model with ops that have no precision setting of
// their own (layer norms, embeddings, a transformer's attention), every row also says the format
// its op computes in and the rule that chose it ("fp32 — autocast's FP32 list", "bf16 —
// autocast"), from the engine's op_table, recomputed whenever the precision changes (setPrecision,
// a row's edit); and each attention's three ops without parameters (scores = Q·Kᵀ/√d, softmax,
// P·V) are rows of their own under its qkv projection, in italics, with no telemetry. An MLP's or
// a CNN's table has neither (showsOps()).
//
// GUI thread only. Live columns are refreshed from a RunSeries by update(), which emits
// dataChanged for the live columns only.
#pragma once

#include <QAbstractTableModel>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "live/layer_sample.h"
#include "model/model_plan.h"
#include "model/op_table.h"
#include "config/experiment.h"
#include "train/session.h"

namespace mantissa::ui {

class RunSeries;

class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Name,
        Kind,
        Shape,
        Parameters,
        Precision,
        FormatWhy,  // models with op-class ops: "fp32 — autocast's FP32 list"
        Memory,
        GradAmax,
        Underflow,
        NonFinite,
        LostUpdates,
        XScale,   // FP8 layers: the delayed-scaling scale of x, W and dy after the last measured
        WScale,   //   step (blank for other layers)
        DyScale,
        ColumnCount
    };

    // Thresholds for the trouble colours (fractions).
    static constexpr double underflowWarn = 0.01, underflowBad = 0.10;
    static constexpr double lostWarn = 0.10, lostBad = 0.50;

    explicit LayerTableModel(QObject* parent = nullptr);

    // A new model: its layers and the precision each was started with (absent: auto).
    void setLayers(const std::vector<LayerInfo>& layers, const std::map<std::string, LayerSetting>& settings);
    // Before a run: the layers an experiment will train (plan_model), each with its setting and the
    // format that resolves to ("auto → fp16") and the weights' bytes in it; widths only the data
    // can tell show as "?". The same layers as now are updated in place (no reset, so an open
    // precision editor stays); others replace them.
    void setPlan(const ModelPlan& plan);
    bool showsPlan() const { return m_plan; }  // rows from setPlan, no run's telemetry
    // The precision the Format (why) column and the op rows are computed from (the experiment's,
    // with its live changes): what each op will run in from the next step. Kept across
    // setLayers/setPlan; a row's own edit updates it too.
    void setPrecision(const PrecisionSpec& precision);
    const PrecisionSpec& precision() const { return m_precision; }
    // Whether the model has ops without a precision setting of their own beside its linear,
    // conv2d and batch norm layers (a transformer's layer norms, embeddings and attention): the
    // Format (why) column says something only then.
    bool showsOps() const { return m_showsOps; }
    // Whether `row` is an op without parameters (an attention's scores, softmax or P·V), not a layer.
    bool isOpRow(int row) const { return m_rows[static_cast<std::size_t>(row)].layer < 0; }
    // The op's format and reason as op_table gives them ("fp32", "autocast's FP32 list").
    QString opFormat(int row) const;
    QString opReason(int row) const;
    // Whether an op of this kind is in the table ("softmax", "layernorm", "bmm").
    bool hasOpKind(const std::string& kind) const;
    void clear();
    // Takes the latest per-layer samples.
    void update(const RunSeries& series);

    // The setting of a layer (what the user asked for; the format in effect is in the samples).
    LayerSetting setting(int row) const { return m_rows[static_cast<std::size_t>(row)].setting; }
    QString layerName(int row) const;
    int rowOf(const QString& layer) const;  // -1 when absent
    // Whether the FP8 scale columns have anything to show: some layer has been set to or has
    // computed in fp8-e4m3 since setLayers. Stays true for the rest of the run once true, so
    // switching a layer off FP8 does not make columns vanish under the pointer.
    bool showsFp8Columns() const { return m_fp8Seen; }
    // Whether the layers are of more than one kind (a CNN: conv2d, batchnorm2d, linear): the Kind
    // column says something only then.
    bool mixesKinds() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    // A row's setting as a live change or the file gives it (one per matmul included), shown at
    // once; no signal (the caller applies it).
    void setSetting(int row, const LayerSetting& setting);
    // Precision column: EditRole, a name ("fp16"), sets the three matmuls; SettingRole, a
    // LayerSetting (per matmul, its accumulation). Records the setting and emits precisionRequested.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    // The Precision column's whole LayerSetting (data and setData).
    static constexpr int SettingRole = Qt::UserRole + 1;

signals:
    void precisionRequested(const QString& layer, const mantissa::LayerSetting& setting);
    void fp8ColumnsShownChanged(bool shown);
    void opsShownChanged(bool shown);  // after every reset, as fp8ColumnsShownChanged

private:
    struct Row {
        LayerInfo info;   // an op row: its name and op ("blocks.0.attn.softmax", "softmax")
        int layer = -1;   // index into the model's layers (and the run's samples); -1: an op row
        LayerSetting setting;  // one precision, or one per matmul (set in the file or with --set)
        std::optional<ComputeFormat> planned;  // from setPlan: the format the setting resolves to
        std::optional<LayerSample> sample;
        OpRow op;         // op_table's format and reason
    };
    // The rows of `layers`: each layer, and the op rows op_table puts after an attention's qkv.
    std::vector<Row> makeRows(const std::vector<LayerInfo>& layers) const;
    void applyOpTable();  // op formats and reasons of every row from m_precision and the settings
    void noteOps();       // m_showsOps from the rows, after a reset
    enum class Trouble { none, warn, bad };
    Trouble trouble(const Row& row, int column, QString* why) const;
    void noteFp8(bool seen);  // sets m_fp8Seen (reset: false) and says when it changes

    std::vector<Row> m_rows;
    PrecisionSpec m_precision;
    bool m_showsOps = false;
    bool m_fp8Seen = false;
    bool m_plan = false;
};

// Human-readable bytes: "12.5 KiB".
QString formatBytes(double bytes);
// An FP8 scale, in one style for the whole column: as a power of two, since a scale shifts values
// by binades: "2^3" when it is one exactly, else its exponent to one decimal ("2^7.8" for 222,
// "2^27.6" for 2.1e8, "2^-0.5"); a scale that is not positive and finite as a number.
QString formatScale(double scale);
// A gradient's largest magnitude, in one style for the whole column: 3 significant digits in
// scientific notation with a short exponent ("1.23e-5", "4.00e0").
QString formatAmax(double amax);

}  // namespace mantissa::ui

Q_DECLARE_METATYPE(mantissa::LayerSetting)
