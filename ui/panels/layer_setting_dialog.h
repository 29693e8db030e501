// LayerSettingDialog: one layer's precision per matmul (forward, dgrad, wgrad, as Transformer
// Engine names them) and its accumulation, the setting the Layers table's combo box offers as
// "per matmul…" (LayerSetting, docs/numerics.md "Precision per matmul" and "FP16 accumulation").
// It only edits the value: the engine decides whether the layer can run it and says why when it
// cannot (a refused change is an event; the table keeps what runs). GUI thread only.
#pragma once

#include <QDialog>

#include "config/experiment.h"

class QCheckBox;
class QComboBox;

namespace mantissa::ui {

class LayerSettingDialog : public QDialog {
    Q_OBJECT
public:
    LayerSettingDialog(const QString& layer, const LayerSetting& setting, QWidget* parent = nullptr);
    LayerSetting setting() const;
    // The three matmuls' combo boxes and the accumulation box, for tests.
    QComboBox* gemmBox(int i) const { return m_gemm[i]; }  // 0 forward, 1 dgrad, 2 wgrad
    QCheckBox* fp16AccumulationBox() const { return m_fp16; }

private:
    QComboBox* m_gemm[3] = {};
    QCheckBox* m_fp16 = nullptr;
};

}  // namespace mantissa::ui
