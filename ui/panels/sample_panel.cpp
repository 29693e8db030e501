// SamplePanel: a language model's latest sample (see sample_panel.h).
#include "panels/sample_panel.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QTextCursor>
#include <QTextEdit>
#include <QVBoxLayout>

#include <cmath>

#include "series/language_figures.h"
#include "series/run_series.h"
#include "store/run_text.h"

namespace mantissa::ui {

SamplePanel::SamplePanel(QWidget* parent) : QWidget(parent) {
    m_pick = new QComboBox;
    m_pick->setObjectName(QStringLiteral("sampleStep"));
    m_pick->setToolTip(tr("The evaluation whose sample is shown; the newest is shown as they arrive until you pick "
                          "an earlier one (pick the newest to follow again)."));
    m_pick->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_pick->setMinimumContentsLength(11);  // "step 100,000" whole, whichever step is listed first
    m_header = new QLabel;
    m_header->setObjectName(QStringLiteral("sampleHeader"));
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Wrapped: on one line its figures would set the dock's minimum width, which the Layers dock
    // beside it would give up when a language model's run starts (dock_layout.h).
    m_header->setWordWrap(true);
    m_header->setToolTip(tr("The test loss is the mean negative log-likelihood of the next token, in nats per token; "
                            "the perplexity e^loss is the number of equally likely tokens that loss amounts to (the "
                            "vocabulary's size for a model that knows nothing, 1 for one that is always sure and "
                            "right). The accuracy counts the test tokens the model ranks first."));
    m_empty = new QLabel;
    m_empty->setObjectName(QStringLiteral("sampleEmpty"));
    m_empty->setWordWrap(true);
    m_empty->setEnabled(false);  // drawn as secondary text
    m_text = new QTextEdit;
    m_text->setObjectName(QStringLiteral("sampleText"));
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QTextEdit::WidgetWidth);
    m_text->setToolTip(tr("Grey: the prompt, taken from the test text. Normal: what the model wrote after it, one "
                          "token at a time, sampled from its predictions (at the temperature above: lower is more "
                          "predictable)."));

    auto* top = new QHBoxLayout;
    top->addWidget(m_pick);
    top->addWidget(m_header, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_empty);
    layout->addWidget(m_text, 1);

    connect(m_pick, &QComboBox::activated, this, [this](int index) {
        m_follow = index == m_pick->count() - 1;
        showSample(index);
    });
    showEmpty();
}

void SamplePanel::setSeries(const RunSeries* series) {
    m_series = series;
    m_listed = 0;
    m_follow = true;
    m_pick->clear();
    sync();
    if (m_listed == 0) showEmpty();
}

void SamplePanel::sync() {
    if (!m_series) return;
    const auto& samples = m_series->textSamples();
    if (samples.size() < m_listed) {  // the series was reset under us
        setSeries(m_series);
        return;
    }
    if (samples.size() == m_listed) {
        if (m_listed == 0) showEmpty();  // the run may have become a text run
        return;
    }
    for (std::size_t i = m_listed; i < samples.size(); ++i)
        m_pick->addItem(tr("step %1").arg(QLocale().toString(static_cast<qlonglong>(samples[i].step))));
    m_listed = samples.size();
    if (m_follow || m_pick->currentIndex() < 0) {
        m_pick->setCurrentIndex(static_cast<int>(m_listed) - 1);
        showSample(static_cast<int>(m_listed) - 1);
    }
}

void SamplePanel::showEmpty() {
    const bool text = m_series && m_series->textRun();
    m_empty->setText(text ? tr("The model's first sample appears at the first evaluation (train.eval_every steps, and "
                               "at the end): it continues a prompt from the test text.")
                          : tr("Samples are written by language models only (dataset kind text, model kind gpt)."));
    m_empty->show();
    m_pick->hide();
    m_header->clear();
    m_text->clear();
    m_text->hide();
    m_prompt.clear();
    m_continuation.clear();
}

void SamplePanel::showSample(int index) {
    if (!m_series || index < 0 || static_cast<std::size_t>(index) >= m_series->textSamples().size()) return;
    const TextSample& t = m_series->textSamples()[static_cast<std::size_t>(index)];
    m_empty->hide();
    m_pick->show();
    m_text->show();
    QStringList parts{tr("test loss %1 nats/token").arg(natsPerTokenText(t.loss)), tr("perplexity %1").arg(figureOrDash(t.perplexity, 2))};
    if (std::isfinite(t.accuracy)) parts << tr("next-token accuracy %1 %").arg(figureOrDash(t.accuracy * 100, 1));
    if (std::isfinite(t.temperature)) parts << tr("temperature %1").arg(QString::number(t.temperature, 'g', 3));
    m_header->setText(parts.join(QStringLiteral(" · ")));
    // As `mantissa-cli show` prints it: control bytes escaped (\x08, \u009d), not empty boxes.
    m_prompt = QString::fromStdString(store::printable_generated_text(t.prompt));
    m_continuation = QString::fromStdString(store::printable_generated_text(t.continuation));
    // Plain text in two colours: inserted, not HTML, so every character (tabs, '<') is the model's own.
    m_text->clear();
    QTextCursor cursor(m_text->document());
    QColor grey = palette().color(QPalette::Text);
    grey.setAlpha(120);  // muted on light and dark palettes alike
    QTextCharFormat muted;
    muted.setForeground(grey);
    QTextCharFormat normal;
    normal.setForeground(palette().color(QPalette::Text));
    cursor.insertText(m_prompt, muted);
    cursor.insertText(m_continuation, normal);
    if (!t.stopped.empty()) {  // the engine's sentence, set apart from the model's text
        QTextCharFormat note = muted;
        note.setFontItalic(true);
        cursor.insertText(QStringLiteral("\n\n") + QString::fromStdString(t.stopped), note);
    }
    m_text->moveCursor(QTextCursor::Start);
}

QString SamplePanel::headerText() const { return m_header->text(); }

}  // namespace mantissa::ui
