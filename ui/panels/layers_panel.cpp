// LayersPanel: a table view over LayerTableModel (see layers_panel.h).
#include "panels/layers_panel.h"

#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "models/layer_table_model.h"
#include "models/precision_delegate.h"

namespace mantissa::ui {

LayersPanel::LayersPanel(LayerTableModel* model, QWidget* parent) : QWidget(parent) {
    m_view = new QTableView;
    m_view->setModel(model);
    m_view->setItemDelegateForColumn(LayerTableModel::Precision, new PrecisionDelegate(m_view));
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                            QAbstractItemView::EditKeyPressed);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(false);  // a coloured cell stays cell-sized
    m_view->setAlternatingRowColors(true);
    m_view->setToolTip(tr("Double-click a layer's precision to change it live."));
    // The FP8 scale columns only where a layer is or was FP8: otherwise three empty columns.
    const auto showFp8 = [this](bool shown) {
        for (int column : {LayerTableModel::XScale, LayerTableModel::WScale, LayerTableModel::DyScale})
            m_view->setColumnHidden(column, !shown);
    };
    showFp8(model->showsFp8Columns());
    connect(model, &LayerTableModel::fp8ColumnsShownChanged, this, showFp8);
    // Format (why) only for a model with ops that take no setting (a transformer's layer norms,
    // embeddings and attention): for an MLP or a CNN it would repeat the Precision column.
    const auto showOps = [this](bool shown) { m_view->setColumnHidden(LayerTableModel::FormatWhy, !shown); };
    showOps(model->showsOps());
    connect(model, &LayerTableModel::opsShownChanged, this, showOps);
    // The Kind column only for a model of several kinds: an MLP's rows are all "linear".
    const auto showKind = [this, model] { m_view->setColumnHidden(LayerTableModel::Kind, !model->mixesKinds()); };
    showKind();
    connect(model, &QAbstractItemModel::modelReset, this, showKind);
    // Never fewer than three rows in view (with the header and a horizontal scroll bar), however
    // short the window or far the splitter is dragged: a lesson's three layers stay readable.
    const int row = std::max(m_view->verticalHeader()->defaultSectionSize(), m_view->fontMetrics().height() + 8);
    m_view->setMinimumHeight(m_view->horizontalHeader()->sizeHint().height() + minimumRows * row +
                             2 * m_view->frameWidth() + m_view->horizontalScrollBar()->sizeHint().height());
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
}

}  // namespace mantissa::ui
