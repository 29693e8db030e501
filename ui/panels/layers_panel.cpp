// LayersPanel: a table view over LayerTableModel (see layers_panel.h).
#include "panels/layers_panel.h"

#include <QHeaderView>
#include <QHelpEvent>
#include <QScrollBar>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

#include "models/layer_table_model.h"
#include "models/precision_delegate.h"

namespace mantissa::ui {

namespace {

// The measured columns: dimmed, without their trouble colour, for a row the panel says shows the
// last run's numbers under another setting.
class MeasuredDelegate : public QStyledItemDelegate {
public:
    MeasuredDelegate(const LayersPanel* panel, QObject* parent) : QStyledItemDelegate(parent), m_panel(panel) {}

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
        QStyledItemDelegate::initStyleOption(option, index);
        if (!m_panel->showsLastRun(index.row())) return;
        option->backgroundBrush = Qt::NoBrush;
        const QColor dim = option->palette.color(QPalette::Disabled, QPalette::Text);
        option->palette.setColor(QPalette::Text, dim);
        option->palette.setColor(QPalette::HighlightedText, dim);
        option->font.setItalic(true);
    }

private:
    const LayersPanel* m_panel;
};

}  // namespace

LayersPanel::LayersPanel(LayerTableModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
    m_view = new QTableView;
    m_view->setModel(model);
    m_view->setItemDelegateForColumn(LayerTableModel::Precision, new PrecisionDelegate(m_view));
    auto* measured = new MeasuredDelegate(this, m_view);
    for (int column = 0; column < LayerTableModel::ColumnCount; ++column)
        if (isMeasuredColumn(column)) m_view->setItemDelegateForColumn(column, measured);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                            QAbstractItemView::EditKeyPressed);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(LayerTableModel::Precision, QHeaderView::Interactive);
    m_view->horizontalHeader()->setSectionResizeMode(LayerTableModel::FormatWhy, QHeaderView::Interactive);
    m_view->horizontalHeader()->setStretchLastSection(false);  // a coloured cell stays cell-sized
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->setWordWrap(false);
    m_view->setAlternatingRowColors(true);
    m_view->setToolTip(tr("Double-click a layer's precision to change it live."));
    m_view->viewport()->installEventFilter(this);  // tooltips: an elided cell's whole text first
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
    // A setting or autocast changed after the run: the row's measured cells are redrawn dimmed (the
    // model says only its Precision and Format (why) cells changed).
    connect(model, &QAbstractItemModel::dataChanged, this, [this] {
        if (m_finished) m_view->viewport()->update();
    });
    connect(model, &QAbstractItemModel::modelReset, this, [this] { setFinishedRun(false); });
    // The columns follow their texts (once a batch of changes is in) and the table's width. A
    // ResizeToContents section is refitted by Qt on a layout, not when a cell's text grows.
    m_fitTimer = new QTimer(this);
    m_fitTimer->setSingleShot(true);
    m_fitTimer->setInterval(0);
    connect(m_fitTimer, &QTimer::timeout, this, &LayersPanel::fitColumns);
    const auto refit = [this] { m_fitTimer->start(); };
    connect(model, &QAbstractItemModel::dataChanged, this, refit);
    connect(model, &QAbstractItemModel::modelReset, this, refit);
    connect(model, &QAbstractItemModel::rowsInserted, this, refit);
    connect(model, &QAbstractItemModel::layoutChanged, this, refit);
    connect(model, &LayerTableModel::fp8ColumnsShownChanged, this, refit);
    connect(model, &LayerTableModel::opsShownChanged, this, refit);
    fitColumns();
    // Never fewer than three rows in view (with the header and a horizontal scroll bar), however
    // short the window or far the splitter is dragged: a lesson's three layers stay readable.
    const int row = std::max(m_view->verticalHeader()->defaultSectionSize(), m_view->fontMetrics().height() + 8);
    m_view->setMinimumHeight(m_view->horizontalHeader()->sizeHint().height() + minimumRows * row +
                             2 * m_view->frameWidth() + m_view->horizontalScrollBar()->sizeHint().height());
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
}

int LayersPanel::precisionColumnWidth() const {
    return m_view->fontMetrics().horizontalAdvance(QStringLiteral("auto → mxfp8-e4m3")) + 16;
}

void LayersPanel::fitColumns() {
    QHeaderView* header = m_view->horizontalHeader();
    const auto* view = static_cast<const QAbstractItemView*>(m_view);
    const auto need = [&](int column) { return std::max(header->sectionSizeHint(column), view->sizeHintForColumn(column)); };
    int others = 0;
    for (int column = 0; column < LayerTableModel::ColumnCount; ++column) {
        if (m_view->isColumnHidden(column) || column == LayerTableModel::Precision || column == LayerTableModel::FormatWhy)
            continue;
        const int width = need(column);
        if (header->sectionSize(column) != width) header->resizeSection(column, width);
        others += width;
    }
    std::vector<int> text;
    for (int column : {int(LayerTableModel::Precision), int(LayerTableModel::FormatWhy)})
        if (!m_view->isColumnHidden(column)) text.push_back(column);
    // What the text columns were fitted for; a width a person dragged stays until it changes.
    QString texts;
    int wanted = 0;
    for (int column : text) {
        wanted += need(column);
        texts += QString::number(need(column)) + QLatin1Char(' ');
    }
    const int room = m_view->viewport()->width() - others;
    if (room == m_fittedFor && texts == m_fittedTexts) return;
    m_fittedFor = room;
    m_fittedTexts = texts;
    // Their whole texts where there is room; else each gives up width in proportion to its want,
    // down to the floor, past which the table scrolls.
    const int floor = precisionColumnWidth();
    for (int column : text) {
        const int own = need(column);
        int width = own;
        if (wanted > room && wanted > 0)
            width = std::max(std::min(own, floor), static_cast<int>(static_cast<long long>(own) * std::max(room, 0) / wanted));
        m_view->setColumnWidth(column, width);
    }
}

bool LayersPanel::isMeasuredColumn(int column) {
    switch (column) {
    case LayerTableModel::Memory:
    case LayerTableModel::GradAmax:
    case LayerTableModel::Underflow:
    case LayerTableModel::NonFinite:
    case LayerTableModel::LostUpdates:
    case LayerTableModel::XScale:
    case LayerTableModel::WScale:
    case LayerTableModel::DyScale: return true;
    default: return false;
    }
}

void LayersPanel::setFinishedRun(bool finished) {
    if (!finished && !m_finished) return;
    m_finished = finished && !m_model->showsPlan();
    m_runSettings.clear();
    if (m_finished) {
        for (int row = 0; row < m_model->rowCount(); ++row)
            if (!m_model->isOpRow(row)) m_runSettings[m_model->layerName(row)] = m_model->setting(row);
        m_runAutocast = m_model->precision().autocast;
    }
    m_view->viewport()->update();
}

bool LayersPanel::showsLastRun(int row) const {
    if (!m_finished || m_model->showsPlan() || row < 0 || row >= m_model->rowCount() || m_model->isOpRow(row))
        return false;
    const auto it = m_runSettings.find(m_model->layerName(row));
    if (it == m_runSettings.end()) return false;
    const LayerSetting now = m_model->setting(row);
    if (now != it->second) return true;
    // Left on auto, the layer follows autocast, which may have changed since.
    return now.uses(LayerPrecision::automatic) && m_model->precision().autocast != m_runAutocast;
}

bool LayersPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_view->viewport() && event->type() == QEvent::Resize) m_fitTimer->start();
    if (watched != m_view->viewport() || event->type() != QEvent::ToolTip) return QWidget::eventFilter(watched, event);
    const auto* help = static_cast<QHelpEvent*>(event);
    const QModelIndex index = m_view->indexAt(help->pos());
    if (!index.isValid()) return QWidget::eventFilter(watched, event);
    QStringList tip;
    // A cell narrower than its text (a per-matmul setting in a capped column): the whole text.
    const QString text = index.data(Qt::DisplayRole).toString();
    const QRect cell = m_view->visualRect(index);
    if (!text.isEmpty() && m_view->fontMetrics().horizontalAdvance(text) + 12 > cell.width()) tip << text;
    if (isMeasuredColumn(index.column()) && showsLastRun(index.row()))
        tip << tr("Measured in the last run, with %1's setting then (%2); the setting shown has not been trained "
                  "yet. Start a run to measure it.")
                   .arg(m_model->layerName(index.row()),
                        QString::fromStdString(layer_setting_text(m_runSettings.at(m_model->layerName(index.row())))));
    const QString own = index.data(Qt::ToolTipRole).toString();
    if (!own.isEmpty()) tip << own;
    if (tip.isEmpty()) return QWidget::eventFilter(watched, event);  // the view's own tooltip
    QToolTip::showText(help->globalPos(), tip.join(QStringLiteral("\n\n")), m_view->viewport(), cell);
    return true;
}

}  // namespace mantissa::ui
