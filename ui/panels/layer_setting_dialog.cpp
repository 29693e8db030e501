// See layer_setting_dialog.h.
#include "panels/layer_setting_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace mantissa::ui {

LayerSettingDialog::LayerSettingDialog(const QString& layer, const LayerSetting& setting, QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("%1: precision per matmul").arg(layer));
    auto* form = new QFormLayout;
    const char* names[3] = {"forward", "dgrad", "wgrad"};
    const QString tips[3] = {tr("y = x·Wᵀ: its precision also decides the layer's output, gradient and stored-weight "
                                "formats."),
                             tr("dX = dy·W: the input gradient's matmul."),
                             tr("dW = dyᵀ·x: the weight gradient's matmul. Transformer Engine keeps this one out of "
                                "FP8 when asked (DisableFP8GEMM).")};
    const LayerPrecision values[3] = {setting.forward, setting.dgrad, setting.wgrad};
    for (int i = 0; i < 3; ++i) {
        auto* combo = new QComboBox;
        for (LayerPrecision p : all_layer_precisions)
            combo->addItem(QLatin1String(layer_precision_name(p)), static_cast<int>(p));
        combo->setCurrentIndex(std::max(0, combo->findData(static_cast<int>(values[i]))));
        combo->setToolTip(tips[i]);
        combo->setObjectName(QLatin1String(names[i]));
        m_gemm[i] = combo;
        form->addRow(QLatin1String(names[i]), combo);
    }
    m_fp16 = new QCheckBox(tr("Accumulate in FP16"));
    m_fp16->setObjectName(QStringLiteral("accumulateFp16"));
    m_fp16->setChecked(setting.accumulate == Accumulation::fp16);
    m_fp16->setToolTip(tr("Add the matmuls' products in FP16 instead of FP32 (cuBLAS's CUBLAS_COMPUTE_16F), for a "
                          "linear layer whose three matmuls are fp16: a long sum stops taking small products once "
                          "it is 2048 times larger. With train.accumulation_error on (lesson 15), the accumulation-error "
                          "chart shows what the layer's sums lose; watch the loss against an FP32-accumulating run."));
    form->addRow(m_fp16);
    auto* note = new QLabel(tr("A change applies at the next step; one the layer cannot run is refused with a "
                               "sentence in the Events panel."));
    note->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(buttons);
}

LayerSetting LayerSettingDialog::setting() const {
    LayerSetting s;
    s.forward = static_cast<LayerPrecision>(m_gemm[0]->currentData().toInt());
    s.dgrad = static_cast<LayerPrecision>(m_gemm[1]->currentData().toInt());
    s.wgrad = static_cast<LayerPrecision>(m_gemm[2]->currentData().toInt());
    s.accumulate = m_fp16->isChecked() ? Accumulation::fp16 : Accumulation::fp32;
    return s;
}

}  // namespace mantissa::ui
