// PrecisionDelegate: the combo box editor of the precision column (see precision_delegate.h).
#include "models/precision_delegate.h"

#include <QComboBox>

#include "config/experiment.h"

namespace mantissa::ui {

QWidget* PrecisionDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const {
    auto* combo = new QComboBox(parent);
    for (LayerPrecision p : all_layer_precisions)
        combo->addItem(QLatin1String(layer_precision_name(p)));
    // Commit on pick: the table's edit is a live command, not a form to fill in.
    connect(combo, &QComboBox::activated, this, [this, combo](int) {
        auto* self = const_cast<PrecisionDelegate*>(this);
        emit self->commitData(combo);
        emit self->closeEditor(combo);
    });
    return combo;
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
