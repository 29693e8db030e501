// ExperimentPanel: the experiment form (see experiment_panel.h).
#include "panels/experiment_panel.h"

#include <charconv>
#include <cmath>
#include <optional>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

#include "panels/layers_editor_dialog.h"

namespace mantissa::ui {

namespace {
const QStringList datasetKinds = {"fashion-mnist", "mnist", "cifar10", "idx", "csv", "spirals", "blobs", "sine", "text"};
bool usesPath(const QString& kind) {
    return kind == "fashion-mnist" || kind == "mnist" || kind == "cifar10" || kind == "idx" || kind == "csv" ||
           kind == "text";
}
const QStringList modelKinds = {"mlp", "cnn", "resnet", "gpt", "layers"};
int hardwareThreads() { return std::max(1, QThread::idealThreadCount()); }

// A seed as typed: a whole number of at most 64 bits, or none.
std::optional<std::uint64_t> seedOf(const QString& text) {
    const QByteArray digits = text.trimmed().toLatin1();
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (digits.isEmpty() || error != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return seed;
}

QSpinBox* spin(int lo, int hi, const QString& tip) {
    auto* box = new QSpinBox;
    box->setRange(lo, hi);
    box->setToolTip(tip);
    return box;
}

QString widthsText(const std::vector<int>& widths) {
    QStringList t;
    for (int w : widths) t << QString::number(w);
    return t.join(QStringLiteral(", "));
}
std::vector<int> widthsOf(const QString& text) {
    std::vector<int> widths;
    for (const QString& w : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (const int v = w.trimmed().toInt(); v > 0) widths.push_back(v);
    return widths;
}

template <typename Enum>
void addEnumItem(QComboBox* combo, const char* name, Enum value) {
    combo->addItem(QString::fromLatin1(name), static_cast<int>(value));
}
template <typename Enum>
void selectEnum(QComboBox* combo, Enum value) {
    combo->setCurrentIndex(std::max(0, combo->findData(static_cast<int>(value))));
}
template <typename Enum>
Enum selectedEnum(const QComboBox* combo) {
    return static_cast<Enum>(combo->currentData().toInt());
}
void selectText(QComboBox* combo, const QString& text) {
    int i = combo->findText(text);
    if (i < 0 && combo->isEditable()) {
        combo->addItem(text);
        i = combo->count() - 1;
    }
    combo->setCurrentIndex(std::max(0, i));
}
}  // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
    m_name = new QLineEdit;
    m_name->setObjectName(QStringLiteral("name"));
    m_name->setToolTip(tr("The run's name in the store and in the run list."));

    m_datasetKind = new QComboBox;
    m_datasetKind->addItems(datasetKinds);
    m_datasetKind->setToolTip(tr("Fashion-MNIST/MNIST/IDX read image files; CIFAR-10 reads the folder of its binary "
                                 "version; CSV reads a table; spirals, blobs and sine are generated from the seed."));
    m_datasetPath = new QLineEdit;
    m_datasetPath->setToolTip(tr("The dataset's folder (IDX kinds, CIFAR-10) or file (CSV); for text, a UTF-8 file or "
                                 "a folder of fortune files."));
    m_browse = new QToolButton;
    m_browse->setText(QStringLiteral("…"));
    m_browse->setToolTip(tr("Choose the dataset's folder or file."));
    m_samples = new QSpinBox;
    m_samples->setRange(10, 10'000'000);
    m_samples->setToolTip(tr("Number of samples a synthetic dataset generates."));

    m_vocabulary = new QComboBox;
    m_vocabulary->addItems({QStringLiteral("chars"), QStringLiteral("bytes")});
    m_vocabulary->setToolTip(tr("Text: a token is a character of the text (chars: the characters it uses) or a byte "
                                "of its UTF-8 (bytes: 256 tokens)."));
    m_textContext = spin(1, 4096, tr("Text: the tokens of one sample; the model predicts each one's next token "
                                     "(at most the model's context)."));
    m_depth = spin(1, 64, tr("gpt: transformer blocks (model.layers), each a layer norm, causal self-attention, a "
                             "layer norm and an MLP."));
    m_heads = spin(1, 256, tr("gpt: attention heads per block; they must divide the width."));
    m_dim = spin(1, 65536, tr("gpt: the width of the residual stream (the embeddings' size)."));
    m_modelContext = spin(1, 4096, tr("gpt: the positions the model has embeddings for (at least the dataset's "
                                      "context)."));
    m_mlpRatio = spin(1, 64, tr("gpt: the MLP's width as a multiple of the model's width."));
    m_tieEmbeddings = new QCheckBox(tr("Tie embeddings"));
    m_tieEmbeddings->setToolTip(tr("gpt: the head multiplies by the token embedding (wte) instead of a weight of its "
                                   "own, as GPT-2 does."));

    m_hidden = new QLineEdit;
    m_hidden->setValidator(new QRegularExpressionValidator(
        QRegularExpression(QStringLiteral(R"(^\s*(\d+\s*(,\s*\d+\s*)*)?$)")), m_hidden));
    m_hidden->setToolTip(tr("Widths of the hidden layers, comma-separated (\"256, 128\"); empty: a linear model."));
    m_activation = new QComboBox;
    for (Activation a : {Activation::relu, Activation::gelu, Activation::tanh})
        addEnumItem(m_activation, activation_name(a), a);
    m_modelKind = new QComboBox;
    m_modelKind->addItems(modelKinds);
    m_modelKind->setToolTip(tr("mlp: linear layers; cnn: convolution stages, then linear layers; resnet: a small "
                               "ResNet of basic blocks; gpt: a decoder-only transformer over text (dataset kind "
                               "text); layers: a list you write (Edit…)."));
    m_channels = new QLineEdit;
    m_channels->setValidator(new QRegularExpressionValidator(
        QRegularExpression(QStringLiteral(R"(^\s*\d+\s*(,\s*\d+\s*)*$)")), m_channels));
    m_channels->setToolTip(tr("Channels of each stage, comma-separated (\"32, 64\"): cnn, a conv-batchnorm-relu-pool "
                              "stage each; resnet, a stage of basic blocks each."));
    m_blocks = new QSpinBox;
    m_blocks->setRange(1, 16);
    m_blocks->setToolTip(tr("Basic blocks per stage of the ResNet."));
    m_editLayers = new QPushButton(tr("Edit…"));
    m_editLayers->setToolTip(tr("Write the network as a JSON list of layers; it is checked against the dataset's shape."));

    m_optimizer = new QComboBox;
    for (OptimizerKind o : {OptimizerKind::adamw, OptimizerKind::sgd}) addEnumItem(m_optimizer, optimizer_name(o), o);
    m_lr = new QLineEdit;
    auto* lrValidator = new QDoubleValidator(1e-12, 100.0, 12, m_lr);
    lrValidator->setNotation(QDoubleValidator::ScientificNotation);
    lrValidator->setLocale(QLocale::c());
    m_lr->setValidator(lrValidator);
    m_lr->setToolTip(tr("Learning rate (e.g. 0.001 or 1e-3); during a run, Enter applies it at the next step."));
    m_schedule = new QComboBox;
    addEnumItem(m_schedule, "constant", LrSchedule::constant);
    addEnumItem(m_schedule, "cosine", LrSchedule::cosine);
    m_batch = new QSpinBox;
    m_batch->setRange(1, 65536);
    m_epochs = new QSpinBox;
    m_epochs->setRange(1, 1'000'000);
    m_steps = new QDoubleSpinBox;
    m_steps->setDecimals(0);
    m_steps->setRange(0, 1e12);
    m_steps->setSpecialValueText(tr("use epochs"));
    m_steps->setToolTip(tr("Optimizer steps to run; 0 runs the number of epochs instead."));
    m_seed = new QLineEdit;
    m_seed->setObjectName(QStringLiteral("seed"));
    m_seed->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), m_seed));
    m_seed->setToolTip(tr("Seeds initialisation, shuffling and synthetic data: the same seed gives the same run "
                          "(0 to 18446744073709551615)."));
    // A number beyond 64 bits, or none, shows the seed the run will take again.
    connect(m_seed, &QLineEdit::editingFinished, this, [this] {
        if (!seedOf(m_seed->text())) m_seed->setText(QString::number(m_experiment.train.seed));
    });
    m_backend = new QComboBox;
    m_backend->addItems({"auto", "cpu", "cuda"});
    m_backend->setToolTip(tr("auto uses the GPU when one is usable and the CPU otherwise."));
    m_device = new QSpinBox;
    m_device->setRange(0, 255);
    m_device->setToolTip(tr("The GPU's index (CUDA backend)."));
    m_threads = spin(0, hardwareThreads(),
                     tr("The threads the CPU backend's matrix products may use (backend.threads). auto: every "
                        "hardware thread but one, which the window keeps for drawing and recording (or "
                        "MANTISSA_CPU_THREADS, or OMP_NUM_THREADS, when set). Results depend on the count, through "
                        "the order of the sums. It applies when a run starts; the CUDA backend does not use it."));
    m_threads->setObjectName(QStringLiteral("cpuThreads"));
    m_threads->setSpecialValueText(tr("auto"));

    for (int i = 0; i < 5; ++i) {
        m_buttons[i] = new QToolButton;
        m_buttons[i]->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        m_buttons[i]->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    }
    auto* runRow = new QHBoxLayout;
    for (int i = 2; i < 5; ++i) runRow->addWidget(m_buttons[i]);
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(m_buttons[0]);
    fileRow->addWidget(m_buttons[1]);

    auto* pathRow = new QHBoxLayout;
    pathRow->setContentsMargins(0, 0, 0, 0);
    pathRow->addWidget(m_datasetPath, 1);
    pathRow->addWidget(m_browse);

    auto* data = new QGroupBox(tr("Dataset"));
    auto* dataForm = new QFormLayout(data);
    dataForm->addRow(tr("Kind"), m_datasetKind);
    dataForm->addRow(tr("Path"), pathRow);
    dataForm->addRow(tr("Samples"), m_samples);
    dataForm->addRow(tr("Vocabulary"), m_vocabulary);
    dataForm->addRow(tr("Context"), m_textContext);
    m_dataForm = dataForm;

    auto* model = new QGroupBox(tr("Model"));
    m_modelForm = new QFormLayout(model);
    m_modelForm->addRow(tr("Kind"), m_modelKind);
    m_modelForm->addRow(tr("Channels"), m_channels);
    m_modelForm->addRow(tr("Blocks"), m_blocks);
    m_modelForm->addRow(tr("Blocks"), m_depth);
    m_modelForm->addRow(tr("Heads"), m_heads);
    m_modelForm->addRow(tr("Width"), m_dim);
    m_modelForm->addRow(tr("Context"), m_modelContext);
    m_modelForm->addRow(tr("MLP ratio"), m_mlpRatio);
    m_modelForm->addRow(m_tieEmbeddings);
    m_modelForm->addRow(tr("Hidden"), m_hidden);
    m_modelForm->addRow(tr("Activation"), m_activation);
    m_modelForm->addRow(tr("Layers"), m_editLayers);

    auto* train = new QGroupBox(tr("Training"));
    auto* trainForm = new QFormLayout(train);
    trainForm->addRow(tr("Optimizer"), m_optimizer);
    trainForm->addRow(tr("Learning rate"), m_lr);
    trainForm->addRow(tr("Schedule"), m_schedule);
    trainForm->addRow(tr("Batch size"), m_batch);
    trainForm->addRow(tr("Epochs"), m_epochs);
    trainForm->addRow(tr("Steps"), m_steps);
    trainForm->addRow(tr("Seed"), m_seed);

    auto* backend = new QGroupBox(tr("Backend"));
    auto* backendForm = new QFormLayout(backend);
    backendForm->addRow(tr("Backend"), m_backend);
    backendForm->addRow(tr("Device"), m_device);
    backendForm->addRow(tr("CPU threads"), m_threads);

    auto* nameForm = new QFormLayout;
    nameForm->addRow(tr("Name"), m_name);

    m_classroomNote = new QLabel(tr("Classroom mode: the lesson's file sets the dataset, the model and the "
                                    "training. View ▸ Classroom mode shows them."));
    m_classroomNote->setWordWrap(true);
    m_classroomNote->setEnabled(false);  // drawn as secondary text
    m_classroomNote->hide();
    m_datasetNote = new QLabel;
    m_datasetNote->setObjectName(QStringLiteral("datasetNote"));
    m_datasetNote->setWordWrap(true);
    m_datasetNote->setTextFormat(Qt::PlainText);
    m_datasetNote->setFrameShape(QFrame::StyledPanel);
    m_datasetNote->setAutoFillBackground(true);
    QPalette amber = m_datasetNote->palette();
    amber.setColor(QPalette::Window, QColor(240, 170, 40, 70));  // as the notice bar: light and dark palettes
    m_datasetNote->setPalette(amber);
    m_datasetNote->setMargin(4);
    m_datasetNote->hide();

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(runRow);
    layout->addLayout(fileRow);
    layout->addLayout(nameForm);
    layout->addWidget(m_classroomNote);
    layout->addWidget(m_datasetNote);
    layout->addWidget(data);
    layout->addWidget(model);
    layout->addWidget(train);
    layout->addWidget(backend);
    layout->addStretch(1);
    m_advancedGroups = {data, model, train, backend};

    m_setupControls = {m_name,      m_datasetKind, m_datasetPath, m_browse,     m_samples, m_modelKind,
                       m_channels,  m_blocks,      m_hidden,      m_activation, m_editLayers, m_optimizer,
                       m_schedule,  m_batch,       m_epochs,      m_steps,      m_seed,    m_backend,
                       m_device,    m_vocabulary,  m_textContext, m_depth,      m_heads,   m_dim,
                       m_modelContext, m_mlpRatio, m_tieEmbeddings, m_threads};

    connect(m_datasetKind, &QComboBox::currentTextChanged, this, &ExperimentPanel::updateDatasetControls);
    connect(m_backend, &QComboBox::currentTextChanged, this, &ExperimentPanel::updateDatasetControls);
    connect(m_browse, &QToolButton::clicked, this, &ExperimentPanel::browseDataset);
    // What the layers depend on: the table before Start follows it.
    const auto edited = [this] {
        if (!m_running && !m_filling) emit modelEdited();
    };
    connect(m_datasetKind, &QComboBox::activated, this, edited);
    connect(m_activation, &QComboBox::activated, this, edited);
    connect(m_datasetPath, &QLineEdit::editingFinished, this, edited);
    connect(m_hidden, &QLineEdit::editingFinished, this, edited);
    connect(m_channels, &QLineEdit::editingFinished, this, edited);
    connect(m_blocks, &QSpinBox::editingFinished, this, edited);
    for (QSpinBox* box : {m_textContext, m_depth, m_heads, m_dim, m_modelContext, m_mlpRatio})
        connect(box, &QSpinBox::editingFinished, this, edited);
    connect(m_vocabulary, &QComboBox::activated, this, edited);
    connect(m_tieEmbeddings, &QCheckBox::toggled, this, edited);
    connect(m_modelKind, &QComboBox::activated, this, [this, edited] {
        updateModelControls();
        edited();
    });
    connect(m_editLayers, &QPushButton::clicked, this, &ExperimentPanel::editLayers);
    connect(m_lr, &QLineEdit::editingFinished, this, [this] {
        bool ok = false;
        const double lr = QLocale::c().toDouble(m_lr->text(), &ok);
        if (m_running && ok && lr > 0) emit learningRateEdited(lr);
    });
    setExperiment(Experiment{});
}

void ExperimentPanel::setActions(QAction* open, QAction* save, QAction* start, QAction* pause, QAction* stop) {
    QAction* actions[5] = {open, save, start, pause, stop};
    for (int i = 0; i < 5; ++i) m_buttons[i]->setDefaultAction(actions[i]);
}

void ExperimentPanel::setDatasetNote(const QString& note) {
    m_datasetNote->setText(note);
    m_datasetNote->setVisible(!note.isEmpty());
}

QString ExperimentPanel::datasetNote() const { return m_datasetNote->text(); }

void ExperimentPanel::setExperiment(const Experiment& e) {
    m_filling = true;
    m_experiment = e;
    m_name->setText(QString::fromStdString(e.name));
    m_datasetKind->setCurrentIndex(std::max(0, static_cast<int>(datasetKinds.indexOf(QString::fromStdString(e.dataset.kind)))));
    m_datasetPath->setText(QString::fromStdString(e.dataset.path));
    m_samples->setValue(static_cast<int>(std::min<std::int64_t>(e.dataset.samples, m_samples->maximum())));
    m_modelKind->setCurrentIndex(std::max(0, static_cast<int>(modelKinds.indexOf(QString::fromStdString(e.model.kind)))));
    m_hidden->setText(widthsText(e.model.hidden));
    m_channels->setText(widthsText(e.model.channels));
    m_blocks->setValue(e.model.blocks);
    m_vocabulary->setCurrentIndex(std::max(0, m_vocabulary->findText(QString::fromStdString(e.dataset.vocabulary))));
    m_textContext->setValue(e.dataset.context);
    m_depth->setValue(e.model.depth);
    m_heads->setValue(e.model.heads);
    m_dim->setValue(e.model.dim);
    m_modelContext->setValue(e.model.context);
    m_mlpRatio->setValue(e.model.mlp_ratio);
    m_tieEmbeddings->setChecked(e.model.tie_embeddings);
    selectEnum(m_activation, e.model.activation);
    updateModelControls();
    selectEnum(m_optimizer, e.train.optimizer);
    m_lr->setText(QLocale::c().toString(e.train.lr, 'g', QLocale::FloatingPointShortest));
    selectEnum(m_schedule, e.train.schedule);
    m_batch->setValue(e.train.batch_size);
    m_epochs->setValue(e.train.epochs);  // 0 (allowed with steps) shows as 1 and is kept unless edited
    m_steps->setValue(static_cast<double>(e.train.steps));
    m_seed->setText(QString::number(e.train.seed));
    selectText(m_backend, QString::fromStdString(e.backend));
    m_device->setValue(e.device);
    m_threads->setMaximum(std::max(hardwareThreads(), e.threads));  // a file's count for a larger machine kept
    m_threads->setValue(e.threads);
    updateDatasetControls();
    m_filling = false;
}

Experiment ExperimentPanel::experiment() const {
    Experiment e = m_experiment;
    const QString name = m_name->text().trimmed();
    if (!name.isEmpty()) e.name = name.toStdString();
    e.dataset.kind = m_datasetKind->currentText().toStdString();
    e.dataset.path = m_datasetPath->text().trimmed().toStdString();
    e.dataset.samples = m_samples->value();
    if (e.dataset.kind != "csv") e.dataset.shape.reset();  // only a CSV declares its shape (docs/datasets.md)
    e.model.kind = m_modelKind->currentText().toStdString();
    e.model.hidden = widthsOf(m_hidden->text());
    if (const std::vector<int> channels = widthsOf(m_channels->text()); !channels.empty()) e.model.channels = channels;
    e.model.blocks = m_blocks->value();
    e.dataset.vocabulary = m_vocabulary->currentText().toStdString();
    e.dataset.context = m_textContext->value();
    e.model.depth = m_depth->value();
    e.model.heads = m_heads->value();
    e.model.dim = m_dim->value();
    e.model.context = m_modelContext->value();
    e.model.mlp_ratio = m_mlpRatio->value();
    e.model.tie_embeddings = m_tieEmbeddings->isChecked();
    e.model.activation = selectedEnum<Activation>(m_activation);
    e.train.optimizer = selectedEnum<OptimizerKind>(m_optimizer);
    bool ok = false;
    const double lr = QLocale::c().toDouble(m_lr->text(), &ok);
    if (ok && lr > 0) e.train.lr = lr;
    e.train.schedule = selectedEnum<LrSchedule>(m_schedule);
    e.train.batch_size = m_batch->value();
    if (!(m_experiment.train.epochs == 0 && m_epochs->value() == 1)) e.train.epochs = m_epochs->value();
    e.train.steps = static_cast<std::int64_t>(std::llround(m_steps->value()));
    e.train.seed = seedOf(m_seed->text()).value_or(m_experiment.train.seed);
    e.backend = m_backend->currentText().toStdString();
    e.device = m_device->value();
    e.threads = m_threads->value();
    return e;
}

void ExperimentPanel::setRunning(bool running) {
    m_running = running;
    for (QWidget* w : m_setupControls) w->setEnabled(!running);
    if (!running) updateDatasetControls();
}

void ExperimentPanel::setClassroomMode(bool on) {
    m_classroom = on;
    for (QWidget* group : m_advancedGroups) group->setVisible(!on);
    m_classroomNote->setVisible(on);
}

void ExperimentPanel::updateDatasetControls() {
    const QString kind = m_datasetKind->currentText();
    m_dataForm->setRowVisible(m_vocabulary, kind == QLatin1String("text"));
    m_dataForm->setRowVisible(m_textContext, kind == QLatin1String("text"));
    if (m_running) return;
    m_datasetPath->setEnabled(usesPath(kind));
    m_browse->setEnabled(usesPath(kind));
    m_samples->setEnabled(!usesPath(kind));
    m_device->setEnabled(m_backend->currentText() != QLatin1String("cpu"));
    m_threads->setEnabled(m_backend->currentText() != QLatin1String("cuda"));
}

void ExperimentPanel::updateModelControls() {
    const QString kind = m_modelKind->currentText();
    const bool mlpHead = kind == QLatin1String("mlp") || kind == QLatin1String("cnn");
    m_modelForm->setRowVisible(m_channels, kind == QLatin1String("cnn") || kind == QLatin1String("resnet"));
    m_modelForm->setRowVisible(m_blocks, kind == QLatin1String("resnet"));
    m_modelForm->setRowVisible(m_hidden, mlpHead);
    m_modelForm->setRowVisible(m_activation, mlpHead);
    m_modelForm->setRowVisible(m_editLayers, kind == QLatin1String("layers"));
    const bool gpt = kind == QLatin1String("gpt");
    for (QWidget* w : std::initializer_list<QWidget*>{m_depth, m_heads, m_dim, m_modelContext, m_mlpRatio, m_tieEmbeddings})
        m_modelForm->setRowVisible(w, gpt);
}

void ExperimentPanel::editLayers() {
    LayersEditorDialog dialog(experiment(), this);
    if (dialog.exec() != QDialog::Accepted) return;
    m_experiment.model.layers = dialog.layers();
    emit modelEdited();
}

void ExperimentPanel::browseDataset() {
    const QString current = m_datasetPath->text();
    const QString chosen =
        m_datasetKind->currentText() == QLatin1String("csv")
            ? QFileDialog::getOpenFileName(this, tr("Choose a CSV file"), current, tr("CSV files (*.csv);;All files (*)"))
        : m_datasetKind->currentText() == QLatin1String("text")
            ? QFileDialog::getOpenFileName(this, tr("Choose a text file (or type a folder of fortune files)"), current,
                                           tr("All files (*)"))
            : QFileDialog::getExistingDirectory(this, tr("Choose the dataset's folder"), current);
    if (!chosen.isEmpty()) {
        m_datasetPath->setText(chosen);
        emit modelEdited();
    }
}

}  // namespace mantissa::ui
