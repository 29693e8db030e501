// PrecisionPanel: the live precision controls (see precision_panel.h).
#include "panels/precision_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <limits>
#include <string_view>
#include <utility>

#include "model/layer_formats.h"

namespace mantissa::ui {

PrecisionPanel::PrecisionPanel(QWidget* parent) : QWidget(parent) {
    m_autocast = new QComboBox;
    for (Autocast a : {Autocast::off, Autocast::fp16, Autocast::bf16})
        m_autocast->addItem(QString::fromLatin1(autocast_name(a)), static_cast<int>(a));
    m_autocast->setToolTip(tr("Runs the layers set to auto (their matmuls) in FP16 or BF16 while softmax, losses "
                              "and norms stay FP32; watch the loss, the underflow chart and the memory chart."));

    // The op classes autocast keeps in FP32 (model/op_classes.h): a choice PyTorch does not offer,
    // here so a class can see what it would cost to run them narrow.
    const auto opCombo = [](const char* name, const QString& tip) {
        auto* combo = new QComboBox;
        for (OpPrecision p : {OpPrecision::automatic, OpPrecision::fp32, OpPrecision::fp16, OpPrecision::bf16})
            combo->addItem(QString::fromLatin1(op_precision_name(p)), static_cast<int>(p));
        combo->setObjectName(QString::fromLatin1(name));
        combo->setToolTip(tip);
        return combo;
    };
    m_softmax = opCombo("opSoftmax",
                        tr("The attention's softmax (precision.ops.softmax). auto: FP32, as autocast always runs it: the "
                           "softmax reads the scores cast to FP32, so no logit is too large for it. Autocast never lets "
                           "you change this; the lesson does, so you can see it: set fp16 and the scores are cast to "
                           "FP16 first, where a logit beyond 65504 becomes inf and its row NaN. Watch the "
                           "attention-logits chart (its line marks 65504) and the loss."));
    m_layernorm = opCombo("opLayerNorm",
                          tr("Every layer norm (precision.ops.layernorm). auto: FP32, as autocast always runs it: each row "
                             "is normalised from its FP32 values. Autocast never lets you change this; the lesson does, "
                             "so you can see it: set fp16 or bf16 and each row is cast to it first, so a value beyond "
                             "the format's range is inf and deviations smaller than its spacing are lost. Watch the "
                             "layer-norm variance chart and the loss."));

    m_master = new QCheckBox(tr("FP32 master weights"));
    m_master->setToolTip(tr("Keeps an FP32 copy of the weights for the optimizer so small updates are not rounded "
                            "away; watch the Lost updates column and the master-weights band on the memory chart."));

    m_weightRounding = new QComboBox;
    for (WeightRounding w : {WeightRounding::nearest, WeightRounding::stochastic, WeightRounding::kahan})
        m_weightRounding->addItem(QString::fromLatin1(weight_rounding_name(w)), static_cast<int>(w));
    m_weightRounding->setObjectName(QStringLiteral("weightRounding"));
    m_weightRounding->setToolTip(tr("How weights stored without FP32 masters take their updates "
                                    "(precision.rounding.weights): nearest loses an update smaller than half a step; "
                                    "stochastic rounds up or down at random so the weight moves by it on average; "
                                    "kahan keeps what each rounding drops in a compensation buffer of the weights' "
                                    "format and adds it back. Watch the Lost updates column and the loss."));
    m_gradientRounding = new QComboBox;
    for (GradientRounding g : {GradientRounding::nearest, GradientRounding::stochastic})
        m_gradientRounding->addItem(QString::fromLatin1(gradient_rounding_name(g)), static_cast<int>(g));
    m_gradientRounding->setObjectName(QStringLiteral("gradientRounding"));
    m_gradientRounding->setToolTip(tr("How a layer's backward narrows its gradients (precision.rounding.gradients): "
                                      "stochastic rounds dy's FP8 or block-scaled copy, dX and dW up or down at "
                                      "random, unbiased on average, as the MXFP4 and NVFP4 recipes do. Watch the loss "
                                      "and the underflow chart."));

    m_fp8Scaling = new QComboBox;
    // The experiment file's and the events' words first (precision.fp8.scaling: delayed, none), so
    // the combo, the file and the Events panel say the same thing.
    m_fp8Scaling->addItem(tr("%1 (per tensor)").arg(QLatin1String(fp8_scaling_name(Fp8Scaling::delayed))),
                          static_cast<int>(Fp8Scaling::delayed));
    m_fp8Scaling->addItem(tr("%1 (scale 1)").arg(QLatin1String(fp8_scaling_name(Fp8Scaling::none))),
                          static_cast<int>(Fp8Scaling::none));
    m_fp8Scaling->addItem(tr("%1 (this step's amax)").arg(QLatin1String(fp8_scaling_name(Fp8Scaling::current))),
                          static_cast<int>(Fp8Scaling::current));
    m_fp8Scaling->addItem(tr("%1 (a scale per row)").arg(QLatin1String(fp8_scaling_name(Fp8Scaling::rowwise))),
                          static_cast<int>(Fp8Scaling::rowwise));
    m_fp8Scaling->setObjectName(QStringLiteral("fp8Scaling"));
    m_fp8Scaling->setToolTip(tr("FP8 layers: delayed multiplies each input, weight and output gradient by its own "
                                "scale, taken from its recent maxima, before the cast; none casts the values as they "
                                "are (every scale 1), so small ones flush to zero; current takes each tensor's scale "
                                "from its own maximum at this step (one more pass over it; no lag when the values "
                                "jump); rowwise gives every row along a matmul's reduction its own current scale (linear layers). "
                                "Watch the loss and the underflow chart."));

    m_mode = new QComboBox;
    for (LossScalingMode m : {LossScalingMode::off, LossScalingMode::fixed, LossScalingMode::dynamic})
        m_mode->addItem(QString::fromLatin1(loss_scaling_mode_name(m)), static_cast<int>(m));
    m_mode->setToolTip(tr("Multiplies the loss before backward so small low-precision gradients stay representable "
                          "(dynamic backs off after overflows); watch the loss-scale and underflow charts."));
    m_scaleLabel = new QLabel;
    m_scale = new QDoubleSpinBox;
    m_scale->setDecimals(0);
    m_scale->setRange(1, 4294967296.0);  // 2^32
    m_scale->setToolTip(tr("The fixed scale (static) or the starting scale (dynamic); too large overflows (red "
                           "markers), too small lets gradients underflow."));
    m_growth = new QDoubleSpinBox;
    m_growth->setDecimals(2);
    m_growth->setRange(1.01, 64);
    m_growth->setToolTip(tr("Dynamic scaling multiplies the scale by this after a run of clean steps; watch the "
                            "scale chart climb in steps."));
    m_backoff = new QDoubleSpinBox;
    m_backoff->setDecimals(3);
    m_backoff->setRange(0.001, 0.999);
    m_backoff->setSingleStep(0.05);
    m_backoff->setToolTip(tr("Dynamic scaling multiplies the scale by this after an overflow and skips that step; "
                             "watch the red markers and the drops on the scale chart."));
    m_interval = new QSpinBox;
    m_interval->setRange(1, 10'000'000);
    m_interval->setToolTip(tr("Clean steps dynamic scaling waits before growing the scale; shorter means more "
                              "probing overflows on the scale chart."));

    m_injectLayer = new QComboBox;
    m_injectLayer->setToolTip(tr("The layer whose weight gradient receives the injected value."));
    m_injectValue = new QComboBox;
    m_injectValue->addItem(QStringLiteral("inf"), std::numeric_limits<double>::infinity());
    m_injectValue->addItem(QStringLiteral("NaN"), std::numeric_limits<double>::quiet_NaN());
    m_injectValue->setToolTip(tr("The non-finite value to inject."));
    m_inject = new QPushButton(tr("Inject overflow"));
    m_inject->setToolTip(tr("Puts an inf or NaN into the chosen layer's gradient at the next step, as a real "
                            "overflow would; watch for the red marker, the skipped step and the scale halving."));
    m_inject->setEnabled(false);
    m_inject->setObjectName(QStringLiteral("injectOverflow"));
    m_injectLayer->setObjectName(QStringLiteral("injectLayer"));
    m_autocast->setObjectName(QStringLiteral("autocast"));
    m_mode->setObjectName(QStringLiteral("lossScalingMode"));

    auto* compute = new QGroupBox(tr("Compute"));
    auto* computeForm = new QFormLayout(compute);
    computeForm->addRow(tr("Autocast"), m_autocast);
    computeForm->addRow(tr("Softmax"), m_softmax);
    computeForm->addRow(tr("Layer norm"), m_layernorm);
    computeForm->addRow(m_master);
    computeForm->addRow(tr("Weight rounding"), m_weightRounding);
    computeForm->addRow(tr("Gradient rounding"), m_gradientRounding);
    computeForm->addRow(tr("FP8 scaling"), m_fp8Scaling);
    m_computeForm = computeForm;

    auto* scaling = new QGroupBox(tr("Loss scaling"));
    auto* scalingForm = new QFormLayout(scaling);
    m_scalingForm = scalingForm;
    scalingForm->addRow(tr("Mode"), m_mode);
    scalingForm->addRow(m_scaleLabel, m_scale);
    scalingForm->addRow(tr("Growth factor"), m_growth);
    scalingForm->addRow(tr("Backoff factor"), m_backoff);
    scalingForm->addRow(tr("Growth interval"), m_interval);

    auto* demo = new QGroupBox(tr("Demonstrate an overflow"));
    auto* demoLayout = new QVBoxLayout(demo);
    auto* pick = new QHBoxLayout;
    pick->addWidget(m_injectLayer, 1);
    pick->addWidget(m_injectValue);
    demoLayout->addLayout(pick);
    demoLayout->addWidget(m_inject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(compute);
    layout->addWidget(scaling);
    layout->addWidget(demo);
    layout->addStretch(1);

    connect(m_autocast, &QComboBox::activated, this, [this] {
        readControls();
        if (m_live) emit commandRequested(command::SetAutocast{m_spec.autocast});
        emit edited();
    });
    for (const auto& entry : {std::pair{m_softmax, "softmax"}, std::pair{m_layernorm, "layernorm"}}) {
        QComboBox* combo = entry.first;
        const char* opClass = entry.second;
        connect(combo, &QComboBox::activated, this, [this, combo, opClass] {
            readControls();
            if (m_live)
                emit commandRequested(
                    command::SetOpPrecision{opClass, static_cast<OpPrecision>(combo->currentData().toInt())});
            emit edited();
        });
    }
    connect(m_master, &QCheckBox::toggled, this, [this] {
        if (m_updating) return;
        readControls();
        updateClassroomRows();
        if (m_live) emit commandRequested(command::SetMasterWeights{m_spec.master_weights});
        emit edited();
    });
    for (QComboBox* combo : {m_weightRounding, m_gradientRounding})
        connect(combo, &QComboBox::activated, this, [this] {
            readControls();
            if (m_live) emit commandRequested(command::SetRounding{m_spec.rounding});
            emit edited();
        });
    connect(m_fp8Scaling, &QComboBox::activated, this, [this] {
        readControls();
        if (m_live) emit commandRequested(command::SetFp8Scaling{m_spec.fp8.scaling});
        emit edited();
    });
    connect(m_mode, &QComboBox::activated, this, [this] {
        readControls();
        updateScalingControls();
        sendScaling();
        emit edited();
    });
    for (QAbstractSpinBox* box : {static_cast<QAbstractSpinBox*>(m_scale), static_cast<QAbstractSpinBox*>(m_growth),
                                  static_cast<QAbstractSpinBox*>(m_backoff), static_cast<QAbstractSpinBox*>(m_interval)})
        connect(box, &QAbstractSpinBox::editingFinished, this, [this] {
            const LossScalingSpec before = m_spec.loss_scaling;
            readControls();
            const LossScalingSpec& after = m_spec.loss_scaling;
            if (before.init_scale != after.init_scale || before.growth_factor != after.growth_factor ||
                before.backoff_factor != after.backoff_factor || before.growth_interval != after.growth_interval)
                sendScaling();
        });
    connect(m_inject, &QPushButton::clicked, this, &PrecisionPanel::inject);
    setOpClasses(false, false);
    setPrecision(PrecisionSpec{});
}

void PrecisionPanel::setPrecision(const PrecisionSpec& precision) {
    m_updating = true;
    m_spec = precision;
    m_autocast->setCurrentIndex(std::max(0, m_autocast->findData(static_cast<int>(precision.autocast))));
    m_softmax->setCurrentIndex(std::max(0, m_softmax->findData(static_cast<int>(precision.ops.softmax))));
    m_layernorm->setCurrentIndex(std::max(0, m_layernorm->findData(static_cast<int>(precision.ops.layernorm))));
    m_master->setChecked(precision.master_weights);
    m_fp8Scaling->setCurrentIndex(std::max(0, m_fp8Scaling->findData(static_cast<int>(precision.fp8.scaling))));
    m_weightRounding->setCurrentIndex(
        std::max(0, m_weightRounding->findData(static_cast<int>(precision.rounding.weights))));
    m_gradientRounding->setCurrentIndex(
        std::max(0, m_gradientRounding->findData(static_cast<int>(precision.rounding.gradients))));
    const LossScalingSpec& s = precision.loss_scaling;
    m_mode->setCurrentIndex(std::max(0, m_mode->findData(static_cast<int>(s.mode))));
    m_scale->setValue(s.init_scale);
    m_growth->setValue(s.growth_factor);
    m_backoff->setValue(s.backoff_factor);
    m_interval->setValue(static_cast<int>(std::min<std::int64_t>(s.growth_interval, m_interval->maximum())));
    updateScalingControls();
    updateClassroomRows();
    m_updating = false;
}

void PrecisionPanel::setLayerPrecision(const std::string& layer, const LayerSetting& precision) {
    if (precision == LayerSetting{})
        m_spec.layers.erase(layer);
    else
        m_spec.layers[layer] = precision;
    updateClassroomRows();
}

void PrecisionPanel::setLive(bool live, const std::vector<std::string>& layers) {
    m_live = live;
    const QString current = m_injectLayer->currentText();
    m_injectLayer->clear();
    for (const auto& l : layers) m_injectLayer->addItem(QString::fromStdString(l));
    if (const int i = m_injectLayer->findText(current); i >= 0) m_injectLayer->setCurrentIndex(i);
    m_inject->setEnabled(live && !layers.empty());
    m_injectLayer->setEnabled(live);
    m_injectValue->setEnabled(live);
}

void PrecisionPanel::readControls() {
    if (m_updating) return;
    m_spec.autocast = static_cast<Autocast>(m_autocast->currentData().toInt());
    m_spec.ops.softmax = static_cast<OpPrecision>(m_softmax->currentData().toInt());
    m_spec.ops.layernorm = static_cast<OpPrecision>(m_layernorm->currentData().toInt());
    m_spec.master_weights = m_master->isChecked();
    m_spec.fp8.scaling = static_cast<Fp8Scaling>(m_fp8Scaling->currentData().toInt());
    m_spec.rounding.weights = static_cast<WeightRounding>(m_weightRounding->currentData().toInt());
    m_spec.rounding.gradients = static_cast<GradientRounding>(m_gradientRounding->currentData().toInt());
    LossScalingSpec& s = m_spec.loss_scaling;
    s.mode = static_cast<LossScalingMode>(m_mode->currentData().toInt());
    s.init_scale = m_scale->value();
    s.growth_factor = m_growth->value();
    s.backoff_factor = m_backoff->value();
    s.growth_interval = m_interval->value();
}

void PrecisionPanel::setOpClasses(bool softmax, bool layernorm) {
    m_hasSoftmax = softmax;
    m_hasLayerNorm = layernorm;
    m_computeForm->setRowVisible(m_softmax, softmax);
    m_computeForm->setRowVisible(m_layernorm, layernorm);
}

bool PrecisionPanel::showsOpClass(const char* opClass) const {
    return std::string_view(opClass) == "softmax" ? m_hasSoftmax : m_hasLayerNorm;
}

void PrecisionPanel::setClassroomMode(bool on) {
    m_classroom = on;
    for (QWidget* w : {static_cast<QWidget*>(m_growth), static_cast<QWidget*>(m_backoff),
                       static_cast<QWidget*>(m_interval)})
        m_scalingForm->setRowVisible(w, !on);
    updateClassroomRows();
}

// Classroom mode shows FP8 scaling only to a lesson with an FP8 layer.
void PrecisionPanel::updateClassroomRows() {
    bool anyFp8 = false;
    for (const auto& [name, s] : m_spec.layers) anyFp8 = anyFp8 || s.uses(LayerPrecision::fp8_e4m3);
    m_computeForm->setRowVisible(m_fp8Scaling, !m_classroom || anyFp8);
    // Classroom mode shows a rounding where it can matter: the weights' without FP32 masters, the
    // gradients' with a layer in FP8 or a block format (or where the lesson chose one).
    bool narrowGradients = false;
    for (const auto& [name, s] : m_spec.layers)
        for (LayerPrecision p : {s.forward, s.dgrad, s.wgrad})
            narrowGradients = narrowGradients || p == LayerPrecision::fp8_e4m3 || block_format_of(p).has_value();
    m_computeForm->setRowVisible(m_weightRounding, !m_classroom || !m_spec.master_weights ||
                                                       m_spec.rounding.weights != WeightRounding::nearest);
    m_computeForm->setRowVisible(m_gradientRounding, !m_classroom || narrowGradients ||
                                                         m_spec.rounding.gradients != GradientRounding::nearest);
}

void PrecisionPanel::updateScalingControls() {
    const auto mode = static_cast<LossScalingMode>(m_mode->currentData().toInt());
    m_scaleLabel->setText(mode == LossScalingMode::fixed ? tr("Scale") : tr("Initial scale"));
    m_scale->setEnabled(mode != LossScalingMode::off);
    for (QWidget* w : {static_cast<QWidget*>(m_growth), static_cast<QWidget*>(m_backoff),
                       static_cast<QWidget*>(m_interval)})
        w->setEnabled(mode == LossScalingMode::dynamic);
}

void PrecisionPanel::sendScaling() {
    if (m_live) emit commandRequested(command::SetLossScaling{m_spec.loss_scaling});
}

void PrecisionPanel::inject() {
    if (!m_live || m_injectLayer->currentIndex() < 0) return;
    emit commandRequested(command::InjectNonFinite{m_injectLayer->currentText().toStdString(),
                                                   static_cast<float>(m_injectValue->currentData().toDouble())});
}

}  // namespace mantissa::ui
