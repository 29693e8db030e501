// LayerTableModel: one row per layer with parameters of the running model (its kind: linear,
// conv2d, batchnorm2d; its input and output shapes), with its precision setting (editable, for the
// layers that take one:
// the edit is a request that the controller posts to the session, applied at the next step) and
// the latest per-layer telemetry: gradient amax, underflow fraction, non-finite count,
// lost-update fraction and, for FP8 layers, the delayed-scaling scales of x, W and dy. Cells that
// signal trouble are coloured (amber: worth a look; red: the layer is losing its signal), with a
// tooltip saying why.
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
    void setLayers(const std::vector<LayerInfo>& layers, const std::map<std::string, LayerPrecision>& settings);
    // Before a run: the layers an experiment will train (plan_model), each with its setting and the
    // format that resolves to ("auto → fp16") and the weights' bytes in it; widths only the data
    // can tell show as "?". The same layers as now are updated in place (no reset, so an open
    // precision editor stays); others replace them.
    void setPlan(const ModelPlan& plan);
    bool showsPlan() const { return m_plan; }  // rows from setPlan, no run's telemetry
    void clear();
    // Takes the latest per-layer samples.
    void update(const RunSeries& series);

    // The setting of a layer (what the user asked for; the format in effect is in the samples).
    LayerPrecision setting(int row) const { return m_rows[static_cast<std::size_t>(row)].setting; }
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
    // Precision column, EditRole, a name ("fp16"): records the setting and emits precisionRequested.
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    void precisionRequested(const QString& layer, mantissa::LayerPrecision precision);
    void fp8ColumnsShownChanged(bool shown);

private:
    struct Row {
        LayerInfo info;
        LayerPrecision setting = LayerPrecision::automatic;
        std::optional<Format> planned;  // from setPlan: the format the setting resolves to
        std::optional<LayerSample> sample;
    };
    enum class Trouble { none, warn, bad };
    Trouble trouble(const Row& row, int column, QString* why) const;
    void noteFp8(bool seen);  // sets m_fp8Seen (reset: false) and says when it changes

    std::vector<Row> m_rows;
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
