// PrecisionPanel: autocast, the op classes autocast keeps in FP32 (softmax and layernorm, shown
// only for a model that has them: precision.ops), FP32 master weights, the rounding of weights
// and gradients (precision.rounding), FP8 scaling, loss scaling (mode and parameters) and "Inject
// overflow". Before a run it edits the experiment's precision; during a run every change is also
// sent to the session as a command (commandRequested), applied at the next step and recorded there
// as a setting_change event. Each control's tooltip says in one sentence what it does and what to
// watch on the charts.
//
// It holds the whole PrecisionSpec (per-layer settings, FP8 and min/max scale included), so what
// has no control here survives. GUI thread only.
#pragma once

#include <QWidget>

#include "train/session.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;

namespace mantissa::ui {

class PrecisionPanel : public QWidget {
    Q_OBJECT
public:
    explicit PrecisionPanel(QWidget* parent = nullptr);

    void setPrecision(const PrecisionSpec& precision);
    PrecisionSpec precision() const { return m_spec; }
    // Keeps the per-layer table's edits in the spec, so they are saved and reused.
    void setLayerPrecision(const std::string& layer, const LayerSetting& precision);

    // live: changes are also sent as commands. Layers: the choices for "Inject overflow".
    void setLive(bool live, const std::vector<std::string>& layers = {});

    // Which op-class controls the model needs: softmax for a model with attention, layernorm for
    // one with layer norms (a transformer); both hidden for an MLP or a CNN.
    void setOpClasses(bool softmax, bool layernorm);
    bool showsOpClass(const char* opClass) const;  // "softmax", "layernorm"

    // Classroom mode hides the dynamic scaler's tuning (growth, backoff, interval): the lesson's
    // file sets them, and a class changes only what the lesson is about.
    void setClassroomMode(bool on);
    bool classroomMode() const { return m_classroom; }

signals:
    void commandRequested(const mantissa::Command& command);
    // A person changed autocast, an op class, master weights, a rounding, FP8 scaling or the
    // loss-scaling mode (live or not).
    void edited();

private:
    void readControls();         // controls -> m_spec
    void updateScalingControls();
    void updateClassroomRows();  // the FP8 and rounding rows classroom mode shows
    void sendScaling();
    void inject();

    PrecisionSpec m_spec;
    bool m_live = false;
    bool m_updating = false;     // true while setPrecision fills the controls
    QComboBox* m_autocast = nullptr;
    QComboBox* m_softmax = nullptr;    // precision.ops.softmax
    QComboBox* m_layernorm = nullptr;  // precision.ops.layernorm
    bool m_hasSoftmax = false, m_hasLayerNorm = false;
    QCheckBox* m_master = nullptr;
    QComboBox* m_fp8Scaling = nullptr;
    QComboBox* m_weightRounding = nullptr;    // precision.rounding.weights
    QComboBox* m_gradientRounding = nullptr;  // precision.rounding.gradients
    QFormLayout* m_computeForm = nullptr;
    QComboBox* m_mode = nullptr;
    QLabel* m_scaleLabel = nullptr;
    QDoubleSpinBox* m_scale = nullptr;
    QDoubleSpinBox* m_growth = nullptr;
    QDoubleSpinBox* m_backoff = nullptr;
    QSpinBox* m_interval = nullptr;
    QComboBox* m_injectLayer = nullptr;
    QComboBox* m_injectValue = nullptr;
    QPushButton* m_inject = nullptr;
    QFormLayout* m_scalingForm = nullptr;  // the loss-scaling group's rows
    bool m_classroom = false;
};

}  // namespace mantissa::ui
