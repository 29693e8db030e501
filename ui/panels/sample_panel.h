// SamplePanel: what a language model writes as it learns. At each evaluation a text run's session
// continues a prompt taken from the test text (an `evaluation` event carrying the prompt and the
// sample, Session::evaluate); this panel shows the latest one, or any earlier one picked by its
// step: the prompt in a muted colour, the model's continuation in normal text, monospaced with its
// line breaks kept, under the step, the test loss (nats per token), the perplexity e^loss and the
// next-token accuracy at that step.
//
// It reads the samples from a RunSeries (RunSeries::textSamples), so the live window (through the
// TelemetryRing's events) and a stored run reopened in the history show the same thing. A run
// that is not a language model shows a one-line explanation instead. GUI thread only.
#pragma once

#include <QWidget>

#include <cstddef>

class QComboBox;
class QLabel;
class QTextEdit;

namespace mantissa::ui {

class RunSeries;

class SamplePanel : public QWidget {
    Q_OBJECT
public:
    // The height at which a sample's lines can be read without scrolling much (DockLayout gives
    // the bottom docks this when the panel's tab is raised).
    static constexpr int usableHeight = 230;

    explicit SamplePanel(QWidget* parent = nullptr);

    // Shows `series`'s samples (nullptr: none) and follows it: the newest sample is shown until a
    // person picks an earlier one.
    void setSeries(const RunSeries* series);
    // After new telemetry: lists samples that arrived; shows the newest when following.
    void sync();

    std::size_t sampleCount() const { return m_listed; }
    // What is on screen (for tests): the header line, the prompt and the continuation.
    QString headerText() const;
    QString promptText() const { return m_prompt; }
    QString continuationText() const { return m_continuation; }
    QTextEdit* textView() const { return m_text; }
    QComboBox* stepPicker() const { return m_pick; }

private:
    void showSample(int index);  // the sample at textSamples()[index]
    void showEmpty();

    const RunSeries* m_series = nullptr;
    std::size_t m_listed = 0;  // samples in the picker
    bool m_follow = true;      // the newest is shown, and the next one will be
    QComboBox* m_pick = nullptr;
    QLabel* m_header = nullptr;
    QLabel* m_empty = nullptr;
    QTextEdit* m_text = nullptr;
    QString m_prompt, m_continuation;
};

}  // namespace mantissa::ui
