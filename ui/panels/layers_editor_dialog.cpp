// LayersEditorDialog: a JSON editor for model.layers that accepts only a model the engine builds.
#include "panels/layers_editor_dialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "model/model_plan.h"

namespace mantissa::ui {

namespace {

// One layer a line: short enough to read, one object per row to edit.
QString pretty(const std::string& compact) {
    nlohmann::json list = nlohmann::json::parse(compact, nullptr, false);
    if (!list.is_array()) return QString::fromStdString(compact);
    QString text = QStringLiteral("[\n");
    for (std::size_t i = 0; i < list.size(); ++i)
        text += QStringLiteral("  ") + QString::fromStdString(list[i].dump()) + (i + 1 < list.size() ? ",\n" : "\n");
    return text + QStringLiteral("]");
}

}  // namespace

LayersEditorDialog::LayersEditorDialog(const Experiment& experiment, QWidget* parent)
    : QDialog(parent), m_experiment(experiment), m_layers(experiment.model.layers) {
    setWindowTitle(tr("Model layers"));
    auto* help = new QLabel(tr("The network, input to output, as a JSON array: each layer an object with \"type\" "
                               "(linear, conv2d, batchnorm2d, relu, gelu, tanh, maxpool2d, avgpool2d, "
                               "global_avgpool, flatten, residual; over text: embedding, position_embedding, layernorm, "
                               "causal_self_attention, tied_head), an optional \"name\", and the type's keys "
                               "(docs/experiment.md, \"Models\")."));
    help->setWordWrap(true);
    m_text = new QPlainTextEdit;
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setPlainText(pretty(m_layers));
    m_text->setMinimumSize(560, 280);
    m_problem = new QLabel;
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #b03030;"));
    m_problem->hide();
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &LayersEditorDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &LayersEditorDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(help);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_problem);
    layout->addWidget(buttons);
}

void LayersEditorDialog::setText(const QString& text) { m_text->setPlainText(text); }

QString LayersEditorDialog::check() {
    const nlohmann::json list = nlohmann::json::parse(m_text->toPlainText().toStdString(), nullptr, false);
    if (list.is_discarded()) return tr("The text is not valid JSON: it must be an array such as [{\"type\": \"relu\"}].");
    if (!list.is_array()) return tr("The layers must be a JSON array (between [ and ]).");
    Experiment e = m_experiment;
    e.model.kind = "layers";
    e.model.layers = list.dump();
    try {
        const ModelPlan plan = plan_model(e);
        if (plan.layers.empty() && !plan.dataset_note.empty()) return QString::fromStdString(plan.dataset_note);
    } catch (const std::exception& error) {
        return QString::fromStdString(error.what());
    }
    m_layers = e.model.layers;
    return {};
}

void LayersEditorDialog::accept() {
    const QString problem = check();
    m_problem->setText(problem);
    m_problem->setVisible(!problem.isEmpty());
    if (problem.isEmpty()) QDialog::accept();
}

}  // namespace mantissa::ui
