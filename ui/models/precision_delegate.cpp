// PrecisionDelegate: the combo box editor of the precision column (see precision_delegate.h).
#include "models/precision_delegate.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QPersistentModelIndex>
#include <QTimer>

#include "config/experiment.h"
#include "models/layer_table_model.h"
#include "panels/layer_setting_dialog.h"

namespace mantissa::ui {

QWidget* PrecisionDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex& index) const {
    auto* combo = new QComboBox(parent);
    for (LayerPrecision p : all_layer_precisions)
        combo->addItem(QLatin1String(layer_precision_name(p)));
    combo->addItem(tr("per matmul…"));  // the last item: the dialog
    const int perMatmul = combo->count() - 1;
    // Commit on pick: the table's edit is a live command, not a form to fill in.
    const QPersistentModelIndex at(index);
    connect(combo, &QComboBox::activated, this, [this, combo, at, perMatmul](int picked) {
        auto* self = const_cast<PrecisionDelegate*>(this);
        if (picked != perMatmul) {
            emit self->commitData(combo);
            emit self->closeEditor(combo);
            return;
        }
        emit self->closeEditor(combo);  // nothing committed: the dialog decides
        // After this signal returns (the editor is being closed), on the layer's row as it is then.
        QTimer::singleShot(0, self, [self, at] {
            if (at.isValid()) self->editPerMatmul(at);
        });
    });
    return combo;
}

void PrecisionDelegate::editPerMatmul(const QModelIndex& index) {
    auto* model = qobject_cast<LayerTableModel*>(const_cast<QAbstractItemModel*>(index.model()));
    if (!model) return;
    const QString layer = model->layerName(index.row());
    auto* view = qobject_cast<QWidget*>(parent());
    LayerSettingDialog dialog(layer, index.data(LayerTableModel::SettingRole).value<LayerSetting>(),
                              view ? view->window() : nullptr);
    emit dialogOpened(&dialog);
    if (dialog.exec() != QDialog::Accepted) return;
    // The table may have been rebuilt while the dialog was open (a run started or ended): the
    // setting goes to the layer by name, or nowhere when it is gone.
    const int row = model->rowOf(layer);
    if (row >= 0)
        model->setData(model->index(row, LayerTableModel::Precision), QVariant::fromValue(dialog.setting()),
                       LayerTableModel::SettingRole);
}

void PrecisionDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
    auto* combo = static_cast<QComboBox*>(editor);
    const int i = combo->findText(index.data(Qt::EditRole).toString());
    if (i >= 0) combo->setCurrentIndex(i);
}

void PrecisionDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const {
    model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
}

}  // namespace mantissa::ui
