// PrecisionDelegate: edits the layers table's precision column with a combo box of the settings
// the engine accepts (auto, fp32, tf32, fp16, bf16, fp8-e4m3, the block formats), and "per
// matmul…", which opens LayerSettingDialog for a precision per matmul and the accumulation. A
// choice is committed as soon as it is picked, so the change reaches the running session at once.
#pragma once

#include <QStyledItemDelegate>

class QDialog;

namespace mantissa::ui {

class PrecisionDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    void setEditorData(QWidget* editor, const QModelIndex& index) const override;
    void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;
    // Opens the per-matmul dialog on the row at `index` and applies what it accepts (SettingRole).
    void editPerMatmul(const QModelIndex& index);

signals:
    void dialogOpened(QDialog* dialog);  // before it runs: lets a test fill it in and close it
};

}  // namespace mantissa::ui
