// BlockScalePanel: a tensor's block-scale exponents over the run and one step's blocks (see
// block_scale_panel.h).
#include "block_scales/block_scale_panel.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QStackedWidget>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "block_scales/block_distribution_plot.h"
#include "block_scales/block_map_plot.h"
#include "block_scales/block_plot_style.h"

namespace mantissa::ui {

using namespace blockscale;

BlockScalePanel::BlockScalePanel(QWidget* parent) : QWidget(parent) {
    m_picker = new QComboBox;
    m_picker->setObjectName(QStringLiteral("blockScaleTensor"));
    m_picker->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_picker->setToolTip(
        tr("The matmul operand shown: a layer's input x or weight W as the forward matmul reads them, or "
           "its output gradient dy (scaled by the loss scale) as the input-gradient matmul reads it. "
           "own: quantised in that format by the layer itself; as if: in train.block_scales.format, "
           "for a layer that runs another format."));
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setObjectName(QStringLiteral("blockScaleStep"));
    m_slider->setMinimumWidth(120);
    m_slider->setToolTip(
        tr("The statistics step whose blocks are shown. At the right end the panel follows the run; drag "
           "left (or click the distribution) to look at an earlier step."));
    m_latest = new QToolButton;
    m_latest->setText(tr("Latest"));
    m_latest->setToolTip(tr("Show the newest statistics step and follow the run again."));
    m_stepLabel = new QLabel;
    m_stepLabel->setObjectName(QStringLiteral("blockScaleStepText"));

    m_caption = new QLabel;
    m_caption->setObjectName(QStringLiteral("blockScaleCaption"));
    m_caption->setWordWrap(true);
    m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_distribution = new BlockDistributionPlot;
    m_map = new BlockMapPlot;
    m_missing = new QLabel;
    m_missing->setObjectName(QStringLiteral("blockScaleMissing"));
    m_missing->setWordWrap(true);
    m_missing->setAlignment(Qt::AlignCenter);
    m_missing->setMargin(12);
    m_missing->setEnabled(false);  // drawn as secondary text
    m_mapStack = new QStackedWidget;
    m_mapStack->addWidget(m_map);
    m_mapStack->addWidget(m_missing);
    auto* plots = new QSplitter(Qt::Horizontal);
    plots->setChildrenCollapsible(false);
    plots->addWidget(m_distribution);
    plots->addWidget(m_mapStack);
    plots->setStretchFactor(0, 1);
    plots->setStretchFactor(1, 1);

    m_legend = new QLabel;
    m_legend->setObjectName(QStringLiteral("blockScaleLegend"));
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setWordWrap(true);
    m_empty = new QLabel(emptySentence(m_expectation));
    m_empty->setObjectName(QStringLiteral("blockScaleEmpty"));
    m_empty->setWordWrap(true);
    m_empty->setEnabled(false);

    auto* top = new QHBoxLayout;
    top->addWidget(m_picker);
    top->addSpacing(8);
    top->addWidget(m_slider, 1);
    top->addWidget(m_latest);
    top->addWidget(m_stepLabel);
    m_content = new QWidget;
    auto* content = new QVBoxLayout(m_content);
    content->setContentsMargins(0, 0, 0, 0);
    content->setSpacing(2);
    content->addLayout(top);
    content->addWidget(m_caption);
    content->addWidget(plots, 1);
    content->addWidget(m_legend);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_empty);
    layout->addWidget(m_content, 1);

    connect(m_picker, &QComboBox::activated, this, [this](int i) {
        if (i >= 0) setTensor(static_cast<std::size_t>(i));
    });
    connect(m_slider, &QSlider::valueChanged, this, &BlockScalePanel::onSliderMoved);
    connect(m_latest, &QToolButton::clicked, this, &BlockScalePanel::followLatest);
    connect(m_distribution, &BlockDistributionPlot::stepClicked, this, &BlockScalePanel::showStep);
    updateLegend();
    sync();
}

void BlockScalePanel::setSeries(const BlockScaleSeries* series) {
    m_series = series;
    m_following = true;
    m_layoutSeen = m_revisionSeen = ~std::uint64_t{0};
    m_loadTried.reset();
    m_mapShown.reset();
    sync();
}

void BlockScalePanel::setExpectation(Expectation expectation) {
    m_expectation = expectation;
    m_empty->setText(emptySentence(expectation));
}

void BlockScalePanel::setMapLoader(MapLoader loader) {
    m_loader = std::move(loader);
    m_loadTried.reset();
}

void BlockScalePanel::sync() {
    const bool empty = !m_series || m_series->empty();
    m_empty->setVisible(empty);
    m_content->setVisible(!empty);
    if (empty) {
        // A new run (the series was cleared) is followed from its first step.
        if (m_tensor) {
            m_tensor.reset();
            m_following = true;
            m_picker->clear();
            m_distribution->showTensor(nullptr, std::nullopt);
            m_map->clearMap();
            m_mapShown.reset();
        }
        m_layoutSeen = m_revisionSeen = ~std::uint64_t{0};
        return;
    }
    if (m_series->layout() != m_layoutSeen) rebuildPicker();
    if (m_series->revision() == m_revisionSeen) return;
    m_revisionSeen = m_series->revision();
    // A tensor's format can change during a run (a layer switched): its label says the latest.
    for (std::size_t i = 0; i < m_series->tensors().size(); ++i)
        m_picker->setItemText(static_cast<int>(i), tensorLabel(m_series->tensors()[i], m_series->steps(i).back()));
    refresh(true);
}

void BlockScalePanel::rebuildPicker() {
    m_layoutSeen = m_series->layout();
    m_mapShown.reset();  // a cleared series (a new run) may bring the same tensors and steps again
    const QSignalBlocker block(m_picker);
    m_picker->clear();
    const auto& tensors = m_series->tensors();
    for (std::size_t i = 0; i < tensors.size(); ++i)
        m_picker->addItem(tensorLabel(tensors[i], m_series->steps(i).back()));
    const auto kept = m_tensor ? m_series->tensorIndex(m_tensorName, m_tensorOperand) : std::nullopt;
    m_tensor = kept.value_or(0);
    m_tensorName = tensors[*m_tensor].name;
    m_tensorOperand = tensors[*m_tensor].operand;
    m_picker->setCurrentIndex(static_cast<int>(*m_tensor));
    m_revisionSeen = ~std::uint64_t{0};  // the distribution is redrawn
}

void BlockScalePanel::setTensor(std::size_t index) {
    if (!m_series || index >= m_series->tensors().size()) return;
    m_tensor = index;
    m_tensorName = m_series->tensors()[index].name;
    m_tensorOperand = m_series->tensors()[index].operand;
    {
        const QSignalBlocker block(m_picker);
        m_picker->setCurrentIndex(static_cast<int>(index));
    }
    m_loadTried.reset();
    refresh(true);
}

std::optional<std::int64_t> BlockScalePanel::shownStep() const {
    if (!m_series || !m_tensor) return std::nullopt;
    const auto& steps = m_series->steps(*m_tensor);
    if (m_following) return steps.back().step;
    const auto at = m_series->stepAtOrBefore(*m_tensor, m_step);
    return steps[at.value_or(0)].step;
}

void BlockScalePanel::showStep(std::int64_t step) {
    if (!m_series || !m_tensor) return;
    if (step >= m_series->steps(*m_tensor).back().step) {
        followLatest();
        return;
    }
    m_following = false;
    m_step = step;
    refresh(false);
}

void BlockScalePanel::followLatest() {
    m_following = true;
    refresh(false);
}

void BlockScalePanel::onSliderMoved(int value) {
    if (!m_series || !m_tensor) return;
    const auto& steps = m_series->steps(*m_tensor);
    // The right end follows the run; any other position holds its step while steps arrive.
    if (value >= m_slider->maximum())
        followLatest();
    else
        showStep(steps[static_cast<std::size_t>(std::clamp(value, 0, static_cast<int>(steps.size()) - 1))].step);
}

void BlockScalePanel::refresh(bool redrawDistribution) {
    if (!m_series || !m_tensor) return;
    const auto& steps = m_series->steps(*m_tensor);
    const std::size_t index = m_following ? steps.size() - 1 : m_series->stepAtOrBefore(*m_tensor, m_step).value_or(0);
    {
        const QSignalBlocker block(m_slider);  // positions set here are not a person's choice
        m_slider->setRange(0, static_cast<int>(steps.size()) - 1);
        m_slider->setValue(static_cast<int>(index));
    }
    m_latest->setEnabled(!m_following);
    const QString step = QLocale().toString(static_cast<qlonglong>(steps[index].step));
    m_stepLabel->setText(m_following ? tr("step %1 (latest)").arg(step) : tr("step %1").arg(step));
    const QString text = caption(m_series->tensors()[*m_tensor], steps[index], m_series->histogram(*m_tensor, index));
    m_caption->setText(text);
    m_caption->setToolTip(text);
    m_heldText = blockscale::heldText(*m_series);
    updateLegend();
    // The plots only while they can be seen (a tab behind the events is not): setDrawing catches up.
    m_distributionStale = m_distributionStale || redrawDistribution;
    if (m_drawing && isVisible()) drawPlots();
}

void BlockScalePanel::setDrawing(bool drawing) {
    m_drawing = drawing;
    if (drawing && isVisible()) drawPlots();
}

void BlockScalePanel::drawPlots() {
    if (!m_series || !m_tensor) return;
    if (m_distributionStale) m_distribution->showTensor(m_series, m_tensor);
    m_distributionStale = false;
    m_distribution->setMarker(shownStep());
    showShownMap();
}

void BlockScalePanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_drawing) drawPlots();
}

void BlockScalePanel::showShownMap() {
    const std::size_t tensor = *m_tensor;
    const std::int64_t step = *shownStep();
    BlockMapState state = m_series->mapState(tensor, step);
    if (state != BlockMapState::held && m_loader && m_loadTried != std::make_pair(tensor, step)) {
        // Once per map asked for: a failed read is not tried again on every sync.
        m_loadTried = std::make_pair(tensor, step);
        m_loadError = m_loader(step);
        state = m_series->mapState(tensor, step);
    }
    const auto index = m_series->stepIndex(tensor, step);
    if (state == BlockMapState::held && index) {
        // The same map as on screen is not drawn again (live, every sync would).
        const MapShown want{m_tensorName, m_tensorOperand, step};
        if ((m_mapShown == want && m_map->hasMap()) || m_map->showMap(*m_series, tensor, *index)) {
            m_mapShown = want;
            m_mapStack->setCurrentWidget(m_map);
            return;
        }
    }
    m_mapShown.reset();
    QString why;
    const QString at = QLocale().toString(static_cast<qlonglong>(step));
    if (m_loader && !m_loadError.isEmpty())
        why = tr("The block map of step %1 could not be read from the run store: %2").arg(at, m_loadError);
    else if (m_loader)
        why = tr("The run store holds no block map of step %1.").arg(at);
    else
        why = missingMapSentence(step, state, m_series->mapBudget(), m_series->heldSteps());
    m_missing->setText(why);
    m_map->clearMap();
    m_mapStack->setCurrentWidget(m_missing);
}

void BlockScalePanel::updateLegend() {
    const auto swatch = [](const QColor& c) {
        return QStringLiteral("<span style=\"background-color:%1; color:%1\">&nbsp;&nbsp;&nbsp;&nbsp;</span>")
            .arg(c.name());
    };
    QString text = tr("%1 a block of zeros &nbsp; %2 a block with a NaN or an infinity &nbsp;·&nbsp; a block's "
                      "scale is 2<sup>e</sup>; left, the share of blocks at each e")
                       .arg(swatch(zeroBlockColor()), swatch(nanBlockColor()));
    // The maps held within the budget, in the secondary text colour, after the legend (wrapping
    // with it in a narrow dock).
    if (!m_heldText.isEmpty())
        text += QStringLiteral(" &nbsp;·&nbsp; <span style=\"color:%1\">%2</span>")
                    .arg(palette().color(QPalette::Disabled, QPalette::WindowText).name(), m_heldText.toHtmlEscaped());
    m_legend->setText(text);
    m_legend->setToolTip(
        tr("Right: the blocks of the step shown, each coloured by its scale exponent e (the block's "
           "values are stored as elements times 2^e). Left: at every statistics step, the fraction "
           "of the tensor's blocks at each e, on a log scale; the rows 'zero' and 'NaN', when "
           "shown, count the blocks of zeros and those with a NaN or an infinity. The window "
           "keeps every step's distribution, and the maps of the newest steps within the budget "
           "said after the legend; a run reopened from Run history reads older maps again."));
}

void BlockScalePanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        stylePlot(m_distribution, nullptr);
        stylePlot(m_map, nullptr);
        updateLegend();
    }
}

bool BlockScalePanel::showsEmptyState() const {
    return !m_empty->isHidden();
}
QString BlockScalePanel::emptyText() const {
    return showsEmptyState() ? m_empty->text() : QString();
}
QString BlockScalePanel::captionText() const {
    return m_caption->text();
}
QString BlockScalePanel::stepText() const {
    return m_stepLabel->text();
}
QString BlockScalePanel::heldText() const {
    return m_heldText;
}
QString BlockScalePanel::missingMapText() const {
    return m_mapStack->currentWidget() == m_missing ? m_missing->text() : QString();
}

QString BlockScalePanel::legendText() const {
    QTextDocument doc;
    doc.setHtml(m_legend->text());
    return doc.toPlainText();
}

}  // namespace mantissa::ui
