// LayersPanel: the layers table (LayerTableModel) with its precision combo-box delegate; the
// Format (why) column and the attention's op rows only for a model that has such ops. Picking a
// precision applies it to the running session at the next step (through the model's
// precisionRequested signal, which the main window routes to the controller).
#pragma once

#include <QWidget>

class QTableView;

namespace mantissa::ui {

class LayerTableModel;

class LayersPanel : public QWidget {
    Q_OBJECT
public:
    static constexpr int minimumRows = 3;  // rows the table always has room for

    explicit LayersPanel(LayerTableModel* model, QWidget* parent = nullptr);
    QTableView* view() const { return m_view; }

private:
    QTableView* m_view = nullptr;
};

}  // namespace mantissa::ui
