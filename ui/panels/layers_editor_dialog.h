// LayersEditorDialog: the explicit layer list of model.kind "layers" as JSON text, checked before
// it is accepted: the text must be a JSON array, and the experiment with it must describe a model
// the engine can build on the dataset's shape (plan_model), else the engine's sentence (naming the
// layer and the key) is shown and the dialog stays open. GUI thread only.
#pragma once

#include <QDialog>

#include "config/experiment.h"

class QLabel;
class QPlainTextEdit;

namespace mantissa::ui {

class LayersEditorDialog : public QDialog {
    Q_OBJECT
public:
    // `experiment` gives the dataset the list is checked against; its model.layers is the start.
    LayersEditorDialog(const Experiment& experiment, QWidget* parent = nullptr);
    // The accepted list, as compact JSON text.
    std::string layers() const { return m_layers; }
    // Checks the text now; "" when it is accepted (for tests and for OK).
    QString check();
    void setText(const QString& text);

    void accept() override;

private:
    Experiment m_experiment;
    std::string m_layers;
    QPlainTextEdit* m_text = nullptr;
    QLabel* m_problem = nullptr;
};

}  // namespace mantissa::ui
