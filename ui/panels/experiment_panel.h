// ExperimentPanel: the form for what a run trains (dataset, model, optimizer and schedule, budget,
// seed, backend with its GPU and its CPU threads; a text dataset's vocabulary and context, a gpt
// model's blocks, heads, width, context, MLP ratio and tied embeddings) and the buttons that
// open/save the experiment file and start, pause/resume and stop a run. It holds the whole Experiment it was given, so keys without a control here (the
// lesson, FP8 details, eval_every...) survive an open/edit/save round trip; the precision part is
// the PrecisionPanel's.
//
// While a run is going the form is read-only, except the learning rate, which the session can
// change live (learningRateEdited). GUI thread only.
#pragma once

#include <QWidget>

#include "config/experiment.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;
class QToolButton;
class QGroupBox;
class QLabel;
class QFormLayout;
class QPushButton;

namespace mantissa::ui {

class ExperimentPanel : public QWidget {
    Q_OBJECT
public:
    explicit ExperimentPanel(QWidget* parent = nullptr);

    void setExperiment(const Experiment& experiment);
    // The given experiment with this form's values; its precision is left as it was.
    Experiment experiment() const;

    // Buttons for the main window's actions (which carry the shortcuts).
    void setActions(QAction* open, QAction* save, QAction* start, QAction* pause, QAction* stop);
    void setRunning(bool running);
    // Classroom mode shows only the name and the run buttons: the lesson's file sets the rest.
    void setClassroomMode(bool on);
    bool classroomMode() const { return m_classroom; }
    // A sentence about the data a run will really use (the dataset folder lacks its files, so a
    // run trains on spirals), shown under the run buttons in every mode; empty hides it.
    void setDatasetNote(const QString& note);
    QString datasetNote() const;

signals:
    void learningRateEdited(double lr);  // while running: apply it live
    // Before a run: a person changed what the model's layers depend on (dataset kind or path,
    // samples, the model's kind and its parameters, the layer list).
    void modelEdited();

private:
    void updateDatasetControls();
    void updateModelControls();  // the rows the model kind uses
    void browseDataset();
    void editLayers();

    Experiment m_experiment;
    bool m_running = false;
    bool m_filling = false;  // setExperiment is filling the controls
    QLineEdit* m_name = nullptr;
    QComboBox* m_datasetKind = nullptr;
    QLineEdit* m_datasetPath = nullptr;
    QToolButton* m_browse = nullptr;
    QSpinBox* m_samples = nullptr;
    QFormLayout* m_dataForm = nullptr;
    QComboBox* m_vocabulary = nullptr;   // text: dataset.vocabulary
    QSpinBox* m_textContext = nullptr;   // text: dataset.context
    QSpinBox* m_depth = nullptr;         // gpt: model.layers (blocks)
    QSpinBox* m_heads = nullptr;         // gpt: model.heads
    QSpinBox* m_dim = nullptr;           // gpt: model.dim
    QSpinBox* m_modelContext = nullptr;  // gpt: model.context
    QSpinBox* m_mlpRatio = nullptr;      // gpt: model.mlp_ratio
    QCheckBox* m_tieEmbeddings = nullptr;  // gpt: model.tie_embeddings
    QComboBox* m_modelKind = nullptr;
    QLineEdit* m_hidden = nullptr;
    QComboBox* m_activation = nullptr;
    QLineEdit* m_channels = nullptr;
    QSpinBox* m_blocks = nullptr;
    QPushButton* m_editLayers = nullptr;
    QFormLayout* m_modelForm = nullptr;
    QComboBox* m_optimizer = nullptr;
    QLineEdit* m_lr = nullptr;
    QComboBox* m_schedule = nullptr;
    QSpinBox* m_batch = nullptr;
    QSpinBox* m_epochs = nullptr;
    // Each of these holds its key's whole range (docs/experiment.md), so that a file's value is
    // never changed by being shown: steps up to 10^12 (exact in a double), a seed of 64 bits.
    QDoubleSpinBox* m_steps = nullptr;
    QLineEdit* m_seed = nullptr;
    QComboBox* m_backend = nullptr;
    QSpinBox* m_device = nullptr;
    QSpinBox* m_threads = nullptr;       // backend.threads: 0 "auto", else 1..the hardware threads
    QList<QWidget*> m_setupControls;  // disabled while a run is going
    QList<QWidget*> m_advancedGroups; // hidden in classroom mode
    QLabel* m_classroomNote = nullptr;
    QLabel* m_datasetNote = nullptr;
    bool m_classroom = false;
    QToolButton* m_buttons[5] = {};
};

}  // namespace mantissa::ui
