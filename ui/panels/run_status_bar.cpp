// RunStatusBar: labels fed from the controller's series (see run_status_bar.h).
#include "panels/run_status_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>

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

RunStatusBar::RunStatusBar(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(16);
    for (QLabel** l : {&m_device, &m_step, &m_epoch, &m_test, &m_rate, &m_elapsed, &m_remaining}) {
        *l = new QLabel;
        layout->addWidget(*l);
    }
    m_device->setToolTip(tr("The backend and device training runs on."));
    m_rate->setToolTip(tr("Samples trained so far divided by the training time so far (pauses and paced "
                          "waits left out): the figure mantissa-cli's summary and `show` give for the run."));
    m_elapsed->setToolTip(tr("Training time so far: pauses and the waits of a pace are left out, as on the charts' "
                             "time axis."));
    m_test->setToolTip(tr("A language model's last evaluation: the test loss in nats per token (the mean negative "
                          "log-likelihood of the next token) and its perplexity e^loss."));
    m_remaining->setToolTip(tr("Time left at the pace of the last few hundred steps, or at the Pace chosen in the "
                               "Run toolbar when that is slower."));
    clear();
}

void RunStatusBar::clear() {
    m_device->setText(tr("no run"));
    for (QLabel* l : {m_step, m_epoch, m_test, m_rate, m_elapsed, m_remaining}) l->clear();
}

void RunStatusBar::update(const RunController& c) {
    const Session* session = c.session();
    if (!session) {
        clear();
        return;
    }
    const QLocale locale;
    m_device->setText(QStringLiteral("%1 · %2").arg(QString::fromStdString(session->backend_name()),
                                                  QString::fromStdString(session->device_name())));
    const RunSeries& s = c.series();
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
                               .arg(locale.toString(session->summary().samples_per_s, 'f', 0))
                         : QString());
    m_elapsed->setText(last ? tr("elapsed %1").arg(formatDuration(last->time_s)) : QString());
    auto left = s.remainingSeconds(total);
    if (c.pace() > 0) {  // a paced run takes at least a step per 1/pace seconds, whatever the machine does
        const double paced = static_cast<double>(std::max<std::int64_t>(0, total - done)) / c.pace();
        left = left ? std::max(*left, paced) : paced;
    }
    m_remaining->setText(c.active() && left ? tr("remaining %1").arg(formatDuration(*left)) : QString());
}

}  // namespace mantissa::ui
