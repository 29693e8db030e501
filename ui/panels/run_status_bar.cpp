// RunStatusBar: labels fed from the controller's series (see run_status_bar.h).
#include "panels/run_status_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QResizeEvent>

#include <algorithm>
#include <cmath>

#include "live/run_controller.h"
#include "series/language_figures.h"

namespace mantissa::ui {

QString formatDuration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("—");
    const auto s = static_cast<long long>(std::llround(seconds));
    const long long h = s / 3600, m = (s / 60) % 60, sec = s % 60;
    if (h > 0) return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QLatin1Char('0')).arg(sec, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(sec, 2, 10, QLatin1Char('0'));
}

QString elideWords(const QString& text, const QFontMetrics& metrics, int width) {
    if (metrics.horizontalAdvance(text) <= width) return text;
    const QString ellipsis(QChar(0x2026));
    // Cut at the last space that leaves room for the ellipsis, never inside a word; punctuation
    // left hanging before the cut (a comma, an opening bracket, a middle dot) goes with it.
    qsizetype cut = text.size();
    while ((cut = text.lastIndexOf(QLatin1Char(' '), cut - 1)) > 0) {
        QString head = text.left(cut);
        while (!head.isEmpty() && !head.back().isLetterOrNumber() && head.back() != QLatin1Char(')'))
            head.chop(1);
        if (!head.isEmpty() && metrics.horizontalAdvance(head + ellipsis) <= width) return head + ellipsis;
    }
    const qsizetype space = text.indexOf(QLatin1Char(' '));
    return space < 0 ? text : text.left(space) + ellipsis;
}

void WordElidedLabel::setFullText(const QString& text) {
    if (text == m_full && !text.isEmpty()) return;  // the status bar sets it a few times a second
    m_full = text;
    updateGeometry();
    elide();
}

void WordElidedLabel::setBaseToolTip(const QString& tip) {
    m_baseTip = tip;
    elide();
}

QSize WordElidedLabel::sizeHint() const {
    const QSize hint = QLabel::sizeHint();
    const QMargins m = contentsMargins();
    return {fontMetrics().horizontalAdvance(m_full) + m.left() + m.right() + 2 * margin(), hint.height()};
}

QSize WordElidedLabel::minimumSizeHint() const {
    const QMargins m = contentsMargins();
    const QString first = elideWords(m_full, fontMetrics(), 0);
    return {fontMetrics().horizontalAdvance(first) + m.left() + m.right() + 2 * margin(),
            QLabel::minimumSizeHint().height()};
}

void WordElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    elide();
}

void WordElidedLabel::elide() {
    const QString shown = elideWords(m_full, fontMetrics(), contentsRect().width() - 2 * margin());
    if (shown != text()) setText(shown);
    if (shown == m_full)
        setToolTip(m_baseTip);
    else
        setToolTip(m_baseTip.isEmpty() ? m_full : m_full + QStringLiteral("\n\n") + m_baseTip);
}

RunStatusBar::RunStatusBar(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(16);
    // The device takes what the figures leave, down to its first word; the figures keep their width.
    m_device = new WordElidedLabel;
    layout->addWidget(m_device, 1);
    for (QLabel** l : {&m_step, &m_epoch, &m_test, &m_rate, &m_elapsed, &m_remaining}) {
        *l = new QLabel;
        layout->addWidget(*l);
    }
    m_device->setBaseToolTip(tr("The backend and device training runs on."));
    m_rate->setToolTip(tr("Samples trained so far divided by the training time so far (pauses and paced "
                          "waits left out): the figure mantissa-cli's summary and `show` give for the run."));
    m_elapsed->setToolTip(tr("Training time up to the last step taken: pauses and the waits of a pace are left out, "
                             "evaluations between steps are in. The samples/s is over this time, and mantissa-cli "
                             "show gives the same."));
    m_test->setToolTip(tr("A language model's last evaluation: the test loss in nats per token (the mean negative "
                          "log-likelihood of the next token) and its perplexity e^loss."));
    m_remaining->setToolTip(tr("Wall-clock time until the last step, at the pace of the last few hundred steps or "
                               "at the Pace chosen in the Run toolbar when that is slower. Unlike the training time, "
                               "it counts a pace's waits."));
    clear();
}

void RunStatusBar::clear() {
    m_device->setFullText(tr("no run"));
    for (QLabel* l : {m_step, m_epoch, m_test, m_rate, m_elapsed, m_remaining}) l->clear();
}

void RunStatusBar::update(const RunController& c) {
    const Session* session = c.session();
    if (!session) {
        clear();
        return;
    }
    const QLocale locale;
    m_device->setFullText(QStringLiteral("%1 · %2").arg(QString::fromStdString(session->backend_name()),
                                                  QString::fromStdString(session->device_name())));
    const RunSeries& s = c.series();
    const RunSummary summary = session->summary();
    const std::int64_t total = session->total_steps();
    const auto& last = s.lastStep();
    const std::int64_t done = last ? last->step + 1 : 0;
    m_step->setText(tr("step %1 / %2").arg(locale.toString(static_cast<qlonglong>(done)),
                                           locale.toString(static_cast<qlonglong>(total))));
    const std::int64_t perEpoch = std::max<std::int64_t>(1, session->steps_per_epoch());
    const std::int64_t epochs = (total + perEpoch - 1) / perEpoch;
    m_epoch->setText(last ? tr("epoch %1 / %2").arg(last->epoch + 1).arg(epochs) : QString());
    const LodSeries& test = s.testLoss();
    m_test->setText(s.textRun() && !test.empty()
                        ? tr("test %1 nats/token · perplexity %2")
                              .arg(natsPerTokenText(test.lastY()), perplexityText(test.lastY()))
                        : QString());
    m_rate->setText(last ? tr("%1 samples/s (mean over the run)")
                               .arg(locale.toString(summary.samples_per_s, 'f', 0))
                         : QString());
    // The run's training time, the last step's time_s (the summary's elapsed_s): the time the
    // samples/s is over (config/throughput.h).
    m_elapsed->setText(last ? tr("training time %1").arg(formatDuration(summary.elapsed_s)) : QString());
    auto left = s.remainingSeconds(total);
    if (c.pace() > 0) {  // a paced run takes at least a step per 1/pace seconds, whatever the machine does
        const double paced = static_cast<double>(std::max<std::int64_t>(0, total - done)) / c.pace();
        left = left ? std::max(*left, paced) : paced;
    }
    m_remaining->setText(c.active() && left ? tr("%1 to go (wall clock)").arg(formatDuration(*left)) : QString());
}

}  // namespace mantissa::ui
