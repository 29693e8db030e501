// WhatIfPanel: the layer × format heat map of what-if statistics (see what_if_panel.h).
#include "panels/what_if_panel.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QSignalBlocker>
#include <QSlider>
#include <QTableView>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "models/what_if_delegate.h"
#include "models/what_if_model.h"
#include "models/what_if_scale.h"

namespace mantissa::ui {

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
    m_model = new WhatIfModel(this);

    m_tensor = new QComboBox;
    m_tensor->setObjectName(QStringLiteral("whatIfTensor"));
    for (WhatIfTensor t : {WhatIfTensor::input, WhatIfTensor::weight, WhatIfTensor::grad_output})
        m_tensor->addItem(whatif::tensorName(t), static_cast<int>(t));
    m_tensor->setToolTip(
        tr("The matmul operand the cells describe: the layer's input x and weight W as the forward "
           "matmul reads them, or its output gradient dy (scaled by the loss scale) as the "
           "input-gradient matmul reads it."));
    m_metric = new QComboBox;
    m_metric->setObjectName(QStringLiteral("whatIfMetric"));
    m_metric->addItem(tr("SQNR (dB)"), static_cast<int>(WhatIfMetric::sqnr_db));
    m_metric->addItem(tr("underflow (%)"), static_cast<int>(WhatIfMetric::underflow));
    m_metric->addItem(tr("saturation (%)"), static_cast<int>(WhatIfMetric::saturation));
    m_metric->setToolTip(
        tr("SQNR: signal to quantisation noise in dB, how much of the tensor the format keeps "
           "(about 6 dB per mantissa bit). Underflow: the non-zero values that would become 0. "
           "Saturation: the values beyond the format's largest."));
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setObjectName(QStringLiteral("whatIfStep"));
    m_slider->setMinimumWidth(120);
    m_slider->setToolTip(
        tr("The statistics step shown. At the right end the panel follows the run; drag left to "
           "look at an earlier step (older steps of a long run are thinned)."));
    m_latest = new QToolButton;
    m_latest->setText(tr("Latest"));
    m_latest->setToolTip(tr("Show the latest statistics step and follow the run again."));
    m_step = new QLabel;
    m_step->setObjectName(QStringLiteral("whatIfStepText"));

    m_view = new QTableView;
    m_view->setObjectName(QStringLiteral("whatIfTable"));
    m_view->setModel(m_model);
    m_view->setItemDelegate(new WhatIfDelegate(m_view));
    m_view->setSelectionMode(QAbstractItemView::NoSelection);  // a selection's colour would hide the cell's
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setShowGrid(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_view->horizontalHeader()->setMinimumSectionSize(
        m_view->fontMetrics().horizontalAdvance(QStringLiteral("overflow")) + 16);
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    m_legend = new QLabel;
    m_legend->setObjectName(QStringLiteral("whatIfLegend"));
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setWordWrap(true);
    m_empty = new QLabel(emptySentence());
    m_empty->setObjectName(QStringLiteral("whatIfEmpty"));
    m_empty->setWordWrap(true);
    m_empty->setEnabled(false);  // drawn as secondary text

    // No labels before the pickers: their items say what they are ("x (input)", "SQNR (dB)"), and
    // the dock, a tab beside the events, is often narrow.
    auto* top = new QHBoxLayout;
    top->addWidget(m_tensor);
    top->addWidget(m_metric);
    top->addSpacing(8);
    top->addWidget(m_slider, 1);
    top->addWidget(m_latest);
    top->addWidget(m_step);
    m_content = new QWidget;
    auto* content = new QVBoxLayout(m_content);
    content->setContentsMargins(0, 0, 0, 0);
    content->addLayout(top);
    content->addWidget(m_view, 1);
    content->addWidget(m_legend);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_empty);
    layout->addWidget(m_content, 1);

    connect(m_tensor, &QComboBox::activated, this,
            [this](int i) { setTensor(static_cast<WhatIfTensor>(m_tensor->itemData(i).toInt())); });
    connect(m_metric, &QComboBox::activated, this,
            [this](int i) { setMetric(static_cast<WhatIfMetric>(m_metric->itemData(i).toInt())); });
    connect(m_slider, &QSlider::valueChanged, this, &WhatIfPanel::onSliderMoved);
    connect(m_latest, &QToolButton::clicked, this, [this] {
        m_model->followLatest();
        updateControls();
    });
    updateLegend();
    updateControls();
}

QString WhatIfPanel::emptySentence() {
    return tr("What-if statistics appear at statistics steps when train.what_if lists formats.");
}

void WhatIfPanel::setSeries(const WhatIfSeries* series) {
    m_model->setSeries(series);
    updateControls();
}

void WhatIfPanel::sync() {
    m_model->sync();
    updateControls();
}

void WhatIfPanel::setTensor(WhatIfTensor tensor) {
    m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(tensor)));
    m_model->setTensor(tensor);
}

void WhatIfPanel::setMetric(WhatIfMetric metric) {
    m_metric->setCurrentIndex(m_metric->findData(static_cast<int>(metric)));
    m_model->setMetric(metric);
    updateLegend();
}

void WhatIfPanel::onSliderMoved(int value) {
    const WhatIfSeries* series = m_model->series();
    if (!series || series->empty()) return;
    // The right end follows the run; any other position holds its step while steps arrive.
    if (value >= m_slider->maximum())
        m_model->followLatest();
    else
        m_model->showStep(series->snapshots()[static_cast<std::size_t>(std::max(value, 0))].step);
    updateControls();
}

void WhatIfPanel::updateControls() {
    const WhatIfSeries* series = m_model->series();
    const bool empty = !series || series->empty();
    m_empty->setVisible(empty);
    m_content->setVisible(!empty);
    if (empty) {
        m_step->clear();
        return;
    }
    const auto& snapshots = series->snapshots();
    const auto shown = m_model->shownSnapshot();
    {
        const QSignalBlocker block(m_slider);  // positions set here are not a person's choice
        m_slider->setRange(0, static_cast<int>(snapshots.size()) - 1);
        m_slider->setValue(static_cast<int>(shown.value_or(0)));
    }
    m_latest->setEnabled(!m_model->following());
    const QString step = QLocale().toString(static_cast<qlonglong>(*m_model->shownStep()));
    m_step->setText(m_model->following() ? tr("step %1 (latest)").arg(step) : tr("step %1").arg(step));
}

void WhatIfPanel::updateLegend() {
    m_legend->setText(
        whatif::legendHtml(m_model->metric(), palette().color(QPalette::Base), palette().color(QPalette::Text)));
}

void WhatIfPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) updateLegend();
}

bool WhatIfPanel::showsEmptyState() const {
    return !m_empty->isHidden();
}
QString WhatIfPanel::emptyText() const {
    return showsEmptyState() ? m_empty->text() : QString();
}
QString WhatIfPanel::stepText() const {
    return m_step->text();
}

QString WhatIfPanel::legendText() const {
    QTextDocument doc;
    doc.setHtml(m_legend->text());
    return doc.toPlainText();
}

}  // namespace mantissa::ui
