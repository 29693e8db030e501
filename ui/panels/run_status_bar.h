// RunStatusBar: the permanent part of the main window's status bar: backend and device, step (of
// the budget), epoch, samples/s (mean over the run so far: samples trained / training time, the
// figure the CLI's summary and `show` give, config/throughput.h), training time and the time left;
// for a language model, its last test loss in nats per token and the perplexity e^loss. Every
// figure comes from the engine (its step records and the session's summary); the time left
// extrapolates the recent pace.
//
// The training time is the run's (config/throughput.h): the engine's clock at the last step taken
// (the summary's elapsed_s, that step's time_s), pauses and a pace's waits left out, evaluations
// between steps in. It is what the samples/s beside it is over and what `mantissa-cli show` and
// the store's totals give; the final evaluation and checkpoint, after the last step, are not in
// it (the `finished` event, stamped after them, can be later). The time left is different in
// kind, a wall-clock forecast (a paced run waits between its steps), and its label says so.
//
// A narrow window elides the device's description at a word, never inside one, with the whole
// text in its tooltip; the figures keep their width.
#pragma once

#include <QLabel>
#include <QWidget>

namespace mantissa::ui {

class RunController;

// A label that shows as many whole words of its text as its width allows, then "…"; the tooltip
// then starts with the whole text. Its minimum width is its first word's.
class WordElidedLabel : public QLabel {
public:
    explicit WordElidedLabel(QWidget* parent = nullptr) : QLabel(parent) {}
    void setFullText(const QString& text);
    QString fullText() const { return m_full; }
    void setBaseToolTip(const QString& tip);  // what the label is, after the whole text when elided
    bool elided() const { return text() != m_full; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elide();
    QString m_full;
    QString m_baseTip;
};

class RunStatusBar : public QWidget {
    Q_OBJECT
public:
    explicit RunStatusBar(QWidget* parent = nullptr);
    void update(const RunController& controller);
    void clear();

    WordElidedLabel* deviceLabel() const { return m_device; }
    QLabel* elapsedLabel() const { return m_elapsed; }
    QLabel* remainingLabel() const { return m_remaining; }

private:
    WordElidedLabel* m_device = nullptr;
    QLabel* m_step = nullptr;
    QLabel* m_epoch = nullptr;
    QLabel* m_rate = nullptr;
    QLabel* m_elapsed = nullptr;
    QLabel* m_remaining = nullptr;
    QLabel* m_test = nullptr;  // a language model's last test loss and perplexity
};

// "1:02:03" or "2:03".
QString formatDuration(double seconds);
// As many whole words of `text` (split at spaces) as fit in `width` px with "…" after them; the text
// itself when it fits; the first word with "…" when not even that fits.
QString elideWords(const QString& text, const QFontMetrics& metrics, int width);

}  // namespace mantissa::ui
