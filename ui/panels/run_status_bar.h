// RunStatusBar: the permanent part of the main window's status bar: backend and device, step (of
// the budget), epoch, samples/s (mean over the run so far: samples trained / training time, the
// figure the CLI's summary and `show` give, config/throughput.h), elapsed and remaining time; for
// a language model, its last test loss in nats per token and the perplexity e^loss. Every
// figure comes from the engine (its step records and the session's summary); remaining time
// extrapolates the recent pace.
#pragma once

#include <QWidget>

class QLabel;

namespace mantissa::ui {

class RunController;

class RunStatusBar : public QWidget {
    Q_OBJECT
public:
    explicit RunStatusBar(QWidget* parent = nullptr);
    void update(const RunController& controller);
    void clear();

private:
    QLabel* m_device = nullptr;
    QLabel* m_step = nullptr;
    QLabel* m_epoch = nullptr;
    QLabel* m_rate = nullptr;
    QLabel* m_elapsed = nullptr;
    QLabel* m_remaining = nullptr;
    QLabel* m_test = nullptr;  // a language model's last test loss and perplexity
};

// "1:02:03" or "2:03".
QString formatDuration(double seconds);

}  // namespace mantissa::ui
