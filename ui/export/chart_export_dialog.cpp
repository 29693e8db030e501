// ChartExportDialog: a form over exportChart(). The path's suffix and the format combo follow each
// other; the last folder used is remembered for the process's lifetime (GUI thread only).
#include "export/chart_export_dialog.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

QString& lastFolder() {  // GUI thread only
    static QString folder;
    return folder;
}

QString defaultFolder() {
    if (!lastFolder().isEmpty()) return lastFolder();
    const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    return QDir(pictures).exists() ? pictures : QDir::homePath();
}

}  // namespace

ChartExportDialog::ChartExportDialog(QList<QCustomPlot*> plots, const QString& suggestedName, QWidget* parent)
    : QDialog(parent), m_plots(std::move(plots)) {
    setWindowTitle(m_plots.size() > 1 ? tr("Export charts") : tr("Export chart"));

    m_path = new QLineEdit(this);
    m_path->setObjectName(QStringLiteral("exportPath"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    auto* pathRow = new QHBoxLayout;
    pathRow->addWidget(m_path, 1);
    pathRow->addWidget(browse);

    m_format = new QComboBox(this);
    m_format->addItem(tr("PNG image"), static_cast<int>(ChartFileFormat::png));
    m_format->addItem(tr("SVG (vector)"), static_cast<int>(ChartFileFormat::svg));
    m_format->addItem(tr("PDF (vector)"), static_cast<int>(ChartFileFormat::pdf));

    int w = 0, h = 0;
    for (QCustomPlot* p : m_plots) {
        w = std::max(w, p->width());
        h = std::max(h, p->height());
    }
    m_width = new QSpinBox(this);
    m_height = new QSpinBox(this);
    for (QSpinBox* s : {m_width, m_height}) {
        s->setRange(16, 20000);
        s->setSuffix(tr(" px"));
    }
    m_width->setValue(std::max(w, 16));
    m_height->setValue(std::max(h, 16));
    auto* sizeRow = new QHBoxLayout;
    sizeRow->addWidget(m_width);
    sizeRow->addWidget(new QLabel(QStringLiteral("×"), this));
    sizeRow->addWidget(m_height);
    if (m_plots.size() > 1) sizeRow->addWidget(new QLabel(tr("each"), this));
    sizeRow->addStretch();

    m_scale = new QDoubleSpinBox(this);
    m_scale->setRange(0.25, 8);
    m_scale->setSingleStep(0.5);
    m_scale->setValue(2);  // a sharp image for slides and print
    m_scale->setToolTip(tr("Image pixels per screen pixel (PNG only)"));

    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("exportError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #c0392b;"));
    m_error->hide();

    auto* form = new QFormLayout;
    form->addRow(tr("File:"), pathRow);
    form->addRow(tr("Format:"), m_format);
    form->addRow(tr("Size:"), sizeRow);
    form->addRow(tr("Scale:"), m_scale);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_error);
    layout->addWidget(buttons);

    const QString base = suggestedName.isEmpty() ? QStringLiteral("chart") : suggestedName;
    m_path->setText(QDir(defaultFolder()).filePath(base + QStringLiteral(".png")));

    connect(browse, &QPushButton::clicked, this, &ChartExportDialog::browse);
    connect(m_path, &QLineEdit::textChanged, this, &ChartExportDialog::syncFormatFromPath);
    connect(m_format, &QComboBox::currentIndexChanged, this, &ChartExportDialog::syncPathFromFormat);
    connect(buttons, &QDialogButtonBox::accepted, this, &ChartExportDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ChartExportDialog::reject);
    updateScaleEnabled();
}

QString ChartExportDialog::exportPlot(QCustomPlot* plot, QWidget* parent, const QString& suggestedName) {
    return exportPlots({plot}, parent, suggestedName);
}

QString ChartExportDialog::exportPlots(const QList<QCustomPlot*>& plots, QWidget* parent,
                                       const QString& suggestedName) {
    ChartExportDialog dialog(plots, suggestedName, parent);
    return dialog.exec() == QDialog::Accepted ? dialog.path() : QString();
}

QString ChartExportDialog::path() const {
    return m_path->text().trimmed();
}

ChartFileFormat ChartExportDialog::format() const {
    return static_cast<ChartFileFormat>(m_format->currentData().toInt());
}

ChartExportSize ChartExportDialog::size() const {
    ChartExportSize s;
    s.width = m_width->value();
    s.height = m_height->value();
    s.scale = format() == ChartFileFormat::png ? m_scale->value() : 1.0;
    return s;
}

QString ChartExportDialog::errorText() const {
    return m_error->isHidden() ? QString() : m_error->text();
}

void ChartExportDialog::setPath(const QString& path) {
    m_path->setText(path);
}

void ChartExportDialog::setFormat(ChartFileFormat format) {
    m_format->setCurrentIndex(m_format->findData(static_cast<int>(format)));
}

void ChartExportDialog::accept() {
    QString p = path();
    if (!p.isEmpty() && QFileInfo(p).suffix().isEmpty()) p += QLatin1Char('.') + chartFormatSuffix(format());
    const QString error = m_plots.size() > 1 ? exportChartsStacked(m_plots, p, size())
                                             : exportChart(m_plots.value(0), p, format(), size());
    if (!error.isEmpty()) {
        m_error->setText(error);
        m_error->show();
        return;
    }
    m_error->clear();
    m_error->hide();
    m_path->setText(p);
    lastFolder() = QFileInfo(p).absolutePath();
    QDialog::accept();
}

void ChartExportDialog::browse() {
    const QString filter = tr("PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)");
    QString selected;
    switch (format()) {
        case ChartFileFormat::png: selected = tr("PNG image (*.png)"); break;
        case ChartFileFormat::svg: selected = tr("SVG vector image (*.svg)"); break;
        case ChartFileFormat::pdf: selected = tr("PDF document (*.pdf)"); break;
    }
    const QString chosen = QFileDialog::getSaveFileName(this, windowTitle(), path(), filter, &selected);
    if (!chosen.isEmpty()) m_path->setText(chosen);
}

void ChartExportDialog::syncFormatFromPath() {
    if (m_syncing) return;
    if (const auto f = chartFormatFromPath(path())) {
        m_syncing = true;
        setFormat(*f);
        m_syncing = false;
    }
    updateScaleEnabled();
}

void ChartExportDialog::syncPathFromFormat() {
    if (m_syncing) return;
    m_syncing = true;
    const QString p = path();
    const QFileInfo info(p);
    if (!p.isEmpty()) {
        const QString base = info.suffix().isEmpty() ? p : p.left(p.size() - info.suffix().size() - 1);
        m_path->setText(base + QLatin1Char('.') + chartFormatSuffix(format()));
    }
    m_syncing = false;
    updateScaleEnabled();
}

void ChartExportDialog::updateScaleEnabled() {
    m_scale->setEnabled(format() == ChartFileFormat::png);
}

}  // namespace mantissa::ui
