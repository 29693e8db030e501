// FormatExplorer: how one value is stored in every format Mantissa trains in. A value is typed
// (anything parse_fp32 reads: 0.1, -1e-8, 0x1.8p3, inf, nan) or dragged on a log-scale slider
// (2^-40 .. 2^24, with a sign toggle); for each format a row shows the bits (coloured sign |
// exponent | mantissa) and their hex, the exact stored value, the absolute and relative rounding
// error, the class (with overflow or flush to zero), and a number line of the format's range with
// the value placed on it. Overflow can go to inf (NaN for e4m3) or saturate, as the scaled FP8
// paths do.
//
// Every figure comes from describe_stored() (numeric/describe.h), the code behind
// `mantissa-cli format`; this widget only lays them out.
//
// Under the rows, a BlockExplorer shows how a block of values shares one scale in the block-scaled
// formats (MX, NVFP4).
//
// Wiring: a window or dock of its own (Tools → Format explorer); setValueText() seeds it. As a
// window it closes with Esc and Ctrl+W (history/close_keys.h), as the history's windows do.
// Child widgets carry object names per format for tests and accessibility: "bits-fp16",
// "hex-fp16", "stored-fp16", "error-fp16", "class-fp16", "line-fp16". GUI thread only.
#pragma once

#include <array>
#include <optional>

#include <QWidget>

#include "numeric/describe.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSlider;
class QToolButton;

namespace mantissa::ui {

class BlockExplorer;
class FormatNumberLine;

class FormatExplorer : public QWidget {
    Q_OBJECT
public:
    // The slider's span in log2 |x| and its resolution (positions per octave).
    static constexpr int slider_min_exponent = -40;
    static constexpr int slider_max_exponent = 24;
    static constexpr int slider_steps_per_octave = 64;

    explicit FormatExplorer(QWidget* parent = nullptr);

    // Shows `text` as if typed; returns whether it parsed.
    bool setValueText(const QString& text);
    QString valueText() const;
    // The parsed fp32 value; empty while the text is not a number.
    std::optional<float> value() const { return m_value; }
    // The inline message under the entry (empty when the text parsed).
    QString message() const;

    void setOverflow(Overflow overflow);
    Overflow overflow() const { return m_overflow; }

    // What a row shows, as the engine described it (empty before the first valid value).
    std::optional<StoredValue> described(Format format) const;
    const FormatNumberLine* numberLine(Format format) const;
    // The block-scaled formats' part, under the rows: a block of values and the scale they share.
    BlockExplorer* blockExplorer() const { return m_blocks; }

    // Slider position for a magnitude (clamped to the slider's span) and back.
    static int sliderPositionFor(double magnitude);
    static double magnitudeAt(int position);

    QSize sizeHint() const override { return {1240, 800}; }

signals:
    void valueChanged(float value);

private:
    struct Row {
        QLabel* bits = nullptr;
        QLabel* hex = nullptr;
        QLineEdit* stored = nullptr;
        QLabel* error = nullptr;
        QLabel* cls = nullptr;
        FormatNumberLine* line = nullptr;
        std::optional<StoredValue> shown;
    };

    void onTextEdited();
    void onSliderMoved(int position);
    void onSignToggled();
    void refresh();
    Row& row(Format format) { return m_rows[static_cast<std::size_t>(format)]; }
    const Row& row(Format format) const { return m_rows[static_cast<std::size_t>(format)]; }

    QLineEdit* m_entry = nullptr;
    QLabel* m_message = nullptr;
    QLabel* m_summary = nullptr;
    QSlider* m_slider = nullptr;
    QToolButton* m_sign = nullptr;
    QComboBox* m_overflowChoice = nullptr;
    QWidget* m_table = nullptr;
    BlockExplorer* m_blocks = nullptr;
    std::array<Row, all_formats.size()> m_rows;
    std::optional<float> m_value;
    Overflow m_overflow = Overflow::to_inf;
    bool m_updatingSlider = false;
};

// How a row names a stored value's class: "normal", "subnormal", "zero (underflow)",
// "inf (overflow)", "nan (overflow)", "normal (saturated)". Starts with float_class_name().
QString storedClassText(const StoredValue& s, Overflow overflow);
// "1.49e-09" (3 significant digits), "0" when exact, "–" when undefined (NaN).
QString errorFigure(double e);

}  // namespace mantissa::ui
