// FormatExplorer (see format_explorer.h). The rows are a QGridLayout, one line per format; the
// slider and the entry follow each other without echo (m_updatingSlider guards the loop).
#include "explorer/format_explorer.h"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QFontDatabase>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

#include "explorer/bit_strip.h"
#include "explorer/block_explorer.h"
#include "explorer/format_number_line.h"
#include "history/close_keys.h"

namespace mantissa::ui {

namespace {

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString childName(const char* what, Format f) {
    return QStringLiteral("%1-%2").arg(QLatin1String(what), qs(format_name(f)));
}

QString formatDescription(Format f) {
    const FormatInfo& i = format_info(f);
    return QStringLiteral("1 + %1 + %2 bits").arg(i.exponent_bits).arg(i.mantissa_bits);
}

// The shortest decimal that parses back to `v` exactly (a float needs at most 9 digits).
QString shortestText(float v) {
    for (int digits = 6; digits < 9; ++digits) {
        const QString t = QString::number(static_cast<double>(v), 'g', digits);
        if (parse_fp32(t.toStdString()) == v) return t;
    }
    return QString::number(static_cast<double>(v), 'g', 9);
}

}  // namespace

QString errorFigure(double e) {
    if (std::isnan(e)) return QStringLiteral("–");
    if (e == 0) return QStringLiteral("0");
    return QString::number(e, 'g', 3);
}

QString storedClassText(const StoredValue& s, Overflow overflow) {
    QString text = QLatin1String(float_class_name(s.cls));
    if (s.overflowed)
        text += overflow == Overflow::saturate ? QStringLiteral(" (saturated)") : QStringLiteral(" (overflow)");
    else if (s.flushed_to_zero)
        text += QStringLiteral(" (underflow)");
    return text;
}

int FormatExplorer::sliderPositionFor(double magnitude) {
    if (!(magnitude > 0)) return slider_min_exponent * slider_steps_per_octave;
    if (std::isinf(magnitude)) return slider_max_exponent * slider_steps_per_octave;
    const double pos = std::round(std::log2(magnitude) * slider_steps_per_octave);
    return static_cast<int>(std::clamp(pos, double(slider_min_exponent * slider_steps_per_octave),
                                       double(slider_max_exponent * slider_steps_per_octave)));
}

double FormatExplorer::magnitudeAt(int position) {
    return std::exp2(static_cast<double>(position) / slider_steps_per_octave);
}

FormatExplorer::FormatExplorer(QWidget* parent) : QWidget(parent) {
    setWindowTitle(tr("Format explorer — Mantissa"));
    installCloseKeys(this);  // Esc and Ctrl+W close it as a window, as they close the history's

    // ---- the value: entry, sign, slider, overflow mode
    m_entry = new QLineEdit(this);
    m_entry->setObjectName(QStringLiteral("valueEntry"));
    m_entry->setPlaceholderText(tr("a value: 0.1, -1e-8, 0x1.8p3, inf, nan"));
    m_entry->setMinimumWidth(200);
    m_entry->setClearButtonEnabled(true);

    m_sign = new QToolButton(this);
    m_sign->setObjectName(QStringLiteral("signToggle"));
    m_sign->setText(QStringLiteral("±"));
    m_sign->setToolTip(tr("Change the value's sign"));

    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setObjectName(QStringLiteral("magnitudeSlider"));
    m_slider->setRange(slider_min_exponent * slider_steps_per_octave, slider_max_exponent * slider_steps_per_octave);
    m_slider->setSingleStep(slider_steps_per_octave / 8);
    m_slider->setPageStep(slider_steps_per_octave);
    m_slider->setTickPosition(QSlider::TicksBelow);
    m_slider->setTickInterval(8 * slider_steps_per_octave);
    m_slider->setToolTip(tr("|x| on a log scale, from 2^%1 to 2^%2").arg(slider_min_exponent).arg(slider_max_exponent));
    m_slider->setMinimumWidth(240);
    auto* sliderLow = new QLabel(QStringLiteral("2^%1").arg(slider_min_exponent), this);
    auto* sliderHigh = new QLabel(QStringLiteral("2^%1").arg(slider_max_exponent), this);

    m_overflowChoice = new QComboBox(this);
    m_overflowChoice->setObjectName(QStringLiteral("overflowChoice"));
    m_overflowChoice->addItem(tr("Overflow to inf (NaN in e4m3)"), static_cast<int>(Overflow::to_inf));
    m_overflowChoice->addItem(tr("Overflow saturates (scaled FP8)"), static_cast<int>(Overflow::saturate));

    auto* valueRow = new QHBoxLayout;
    valueRow->addWidget(new QLabel(tr("Value:"), this));
    valueRow->addWidget(m_entry);
    valueRow->addWidget(m_sign);
    valueRow->addSpacing(12);
    valueRow->addWidget(sliderLow);
    valueRow->addWidget(m_slider, 1);
    valueRow->addWidget(sliderHigh);
    valueRow->addSpacing(12);
    valueRow->addWidget(m_overflowChoice);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("valueMessage"));
    m_message->setStyleSheet(QStringLiteral("color: #c0392b;"));
    m_message->setWordWrap(true);
    m_message->hide();

    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("valueSummary"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);

    // ---- one row per format
    m_table = new QFrame(this);
    auto* grid = new QGridLayout(m_table);
    grid->setHorizontalSpacing(14);
    grid->setVerticalSpacing(6);
    const QStringList headers = {tr("Format"), tr("Bits: ") + bitLegendHtml(),
                                 tr("Stored value (exact) and rounding error"), tr("Class"),
                                 tr("Range (log2 |x|): subnormal, normal")};
    for (int c = 0; c < headers.size(); ++c) {
        auto* h = new QLabel(QStringLiteral("<b>%1</b>").arg(headers[c]), m_table);
        grid->addWidget(h, 0, c);
    }
    auto* rule = new QFrame(m_table);
    rule->setFrameShape(QFrame::HLine);
    rule->setFrameShadow(QFrame::Sunken);
    grid->addWidget(rule, 1, 0, 1, headers.size());

    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    int gridRow = 2;
    for (Format f : all_formats) {
        Row& r = row(f);
        auto* name = new QLabel(
            QStringLiteral("<b>%1</b><br><small>%2</small>").arg(qs(format_name(f)), formatDescription(f)), m_table);

        auto* bitsBox = new QWidget(m_table);
        auto* bitsLayout = new QVBoxLayout(bitsBox);
        bitsLayout->setContentsMargins(0, 0, 0, 0);
        bitsLayout->setSpacing(1);
        r.bits = new QLabel(bitsBox);
        r.bits->setObjectName(childName("bits", f));
        r.bits->setTextFormat(Qt::RichText);
        r.bits->setFont(mono);
        r.hex = new QLabel(bitsBox);
        r.hex->setObjectName(childName("hex", f));
        r.hex->setFont(mono);
        r.hex->setTextInteractionFlags(Qt::TextSelectableByMouse);
        bitsLayout->addWidget(r.bits);
        bitsLayout->addWidget(r.hex);

        auto* valueBox = new QWidget(m_table);
        auto* valueLayout = new QVBoxLayout(valueBox);
        valueLayout->setContentsMargins(0, 0, 0, 0);
        valueLayout->setSpacing(1);
        r.stored = new QLineEdit(valueBox);  // read-only: long exact decimals scroll and copy
        r.stored->setObjectName(childName("stored", f));
        r.stored->setReadOnly(true);
        r.stored->setFrame(false);
        r.stored->setFont(mono);
        r.stored->setMinimumWidth(260);
        r.error = new QLabel(valueBox);
        r.error->setObjectName(childName("error", f));
        valueLayout->addWidget(r.stored);
        valueLayout->addWidget(r.error);

        r.cls = new QLabel(m_table);
        r.cls->setObjectName(childName("class", f));
        r.cls->setMinimumWidth(120);

        r.line = new FormatNumberLine(f, m_table);
        r.line->setObjectName(childName("line", f));

        grid->addWidget(name, gridRow, 0);
        grid->addWidget(bitsBox, gridRow, 1);
        grid->addWidget(valueBox, gridRow, 2);
        grid->addWidget(r.cls, gridRow, 3);
        grid->addWidget(r.line, gridRow, 4);
        ++gridRow;
    }
    grid->setColumnStretch(2, 2);
    grid->setColumnStretch(4, 3);

    auto* note = new QLabel(tr("Each format stores the fp32 value above, rounding to nearest (ties to even). "
                               "Subnormal values keep the range going below the smallest normal value, with fewer "
                               "significant bits; below half the smallest subnormal a value becomes zero."),
                            this);
    note->setWordWrap(true);
    note->setEnabled(false);  // secondary text

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(valueRow);
    layout->addWidget(m_message);
    layout->addWidget(m_summary);
    layout->addWidget(m_table);
    layout->addWidget(note);
    auto* blocks = new QLabel(tr("<b>Block-scaled formats</b>: a block of values shares one scale, and each value "
                                 "keeps a small element (docs/numerics.md, \"Block-scaled formats\")."),
                              this);
    layout->addWidget(blocks);
    m_blocks = new BlockExplorer(this);
    layout->addWidget(m_blocks, 1);

    connect(m_entry, &QLineEdit::textChanged, this, &FormatExplorer::onTextEdited);
    connect(m_slider, &QSlider::valueChanged, this, &FormatExplorer::onSliderMoved);
    connect(m_sign, &QToolButton::clicked, this, &FormatExplorer::onSignToggled);
    connect(m_overflowChoice, &QComboBox::currentIndexChanged, this, [this](int) {
        m_overflow = static_cast<Overflow>(m_overflowChoice->currentData().toInt());
        refresh();
    });

    setValueText(QStringLiteral("0.1"));
}

bool FormatExplorer::setValueText(const QString& text) {
    if (m_entry->text() == text)
        onTextEdited();  // no textChanged: parse again all the same
    else
        m_entry->setText(text);  // textChanged -> onTextEdited
    return m_value.has_value();
}

QString FormatExplorer::valueText() const {
    return m_entry->text();
}

QString FormatExplorer::message() const {
    return m_message->isHidden() ? QString() : m_message->text();
}

void FormatExplorer::setOverflow(Overflow overflow) {
    m_overflowChoice->setCurrentIndex(m_overflowChoice->findData(static_cast<int>(overflow)));
}

std::optional<StoredValue> FormatExplorer::described(Format format) const {
    return row(format).shown;
}

const FormatNumberLine* FormatExplorer::numberLine(Format format) const {
    return row(format).line;
}

void FormatExplorer::onTextEdited() {
    const QString text = m_entry->text().trimmed();
    const std::optional<float> v = text.isEmpty() ? std::nullopt : parse_fp32(text.toStdString());
    if (!v) {
        m_value.reset();
        m_message->setText(text.isEmpty() ? tr("Type a value to see how each format stores it.")
                                          : tr("'%1' is not a number: type a decimal (0.1, -1e-8), a hex float "
                                               "(0x1.8p3), inf, -inf or nan.")
                                                .arg(text));
        m_message->show();
        m_table->setEnabled(false);  // the last valid value stays, greyed
        return;
    }
    m_value = v;
    m_message->clear();
    m_message->hide();
    m_table->setEnabled(true);
    if (!m_updatingSlider) {
        const QSignalBlocker block(m_slider);
        m_slider->setValue(sliderPositionFor(std::fabs(static_cast<double>(*v))));
    }
    refresh();
    emit valueChanged(*v);
}

void FormatExplorer::onSliderMoved(int position) {
    const bool negative = m_value && std::signbit(*m_value);
    const auto magnitude = static_cast<float>(magnitudeAt(position));
    m_updatingSlider = true;
    m_entry->setText(shortestText(negative ? -magnitude : magnitude));
    m_updatingSlider = false;
}

void FormatExplorer::onSignToggled() {
    QString text = m_entry->text().trimmed();
    if (text.isEmpty()) return;
    if (text.startsWith(QLatin1Char('-')))
        text.remove(0, 1);
    else if (text.startsWith(QLatin1Char('+')))
        text[0] = QLatin1Char('-');
    else
        text.prepend(QLatin1Char('-'));
    setValueText(text);
}

void FormatExplorer::refresh() {
    if (!m_value) return;
    const float x = *m_value;
    const StoredValue fp32 = describe_stored(Format::fp32, x, m_overflow);
    m_summary->setText(tr("<b>%1</b> is held in fp32 as %2 = %3; each format below stores that value.")
                           .arg(m_entry->text().trimmed().toHtmlEscaped(), qs(fp32.hex), qs(fp32.exact)));
    for (Format f : all_formats) {
        Row& r = row(f);
        const StoredValue s = describe_stored(f, x, m_overflow);
        r.shown = s;
        r.bits->setText(bitStripHtml(s));
        r.bits->setToolTip(bitStripPlain(s));
        r.hex->setText(qs(s.hex));
        r.stored->setText(qs(s.exact));
        r.stored->setCursorPosition(0);
        r.stored->setToolTip(qs(s.exact));
        r.error->setText(tr("abs error %1 · rel error %2").arg(errorFigure(s.abs_error), errorFigure(s.rel_error)));
        r.cls->setText(storedClassText(s, m_overflow));
        const bool bad = s.overflowed || s.flushed_to_zero || s.cls == FloatClass::nan;
        r.cls->setStyleSheet(bad                              ? QStringLiteral("color: #d62728; font-weight: 600;")
                             : s.cls == FloatClass::subnormal ? QStringLiteral("color: #e07b00;")
                                                              : QString());
        r.line->setValue(x, s);
    }
}

}  // namespace mantissa::ui
