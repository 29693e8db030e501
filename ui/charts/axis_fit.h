// Axis fitting: keeps a QCustomPlot value axis readable at whatever length the layout gives it.
//   - Its tick labels never come closer than a label's height: the tickers below take the axis'
//     pixel length (told them after each layout) and coarsen their step until neighbouring labels
//     are apart, so a 40-px chart shows two ticks and a 400-px one its usual four or five.
//   - A log axis keeps enough labels to read: a log10 axis over less than two decades subdivides
//     them (DecadeLogTicker), a log2 axis writes its powers as powers of two (Log2Ticker).
//   - Its label shows the longest of its forms that fits along the axis rect ("memory (MiB)",
//     then "MiB"), or nothing when none fits: a rotated label is never drawn cut.
// QCustomPlot generates ticks before it lays out (upPreparation, from the previous layout's
// length), so a plot calls fitAxis() in its afterLayout handler and, when that reports a change,
// regenerates the ticks with QCPLayoutElement::update(upPreparation) before anything is drawn.
//
// Header-only: small, and shared by ChartView and the gradient histogram view.
// GUI thread only, like the plots that own the tickers.
#pragma once

#include <QFontMetricsF>
#include <QStringList>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include <qcustomplot.h>

namespace mantissa::ui {

// The room a ticker has, in pixels. lengthPx 0: not laid out yet (no limit).
struct TickRoom {
    double lengthPx = 0;
    double labelHeightPx = 0;  // a tick label's line height: neighbouring ticks are never closer
    // What the tickers aim for: a third of a line between labels, so they read as a column.
    double comfortablePx() const { return 1.3 * labelHeightPx; }
    bool operator==(const TickRoom&) const = default;
};

// The two tickers' shared part: the room they were last told of.
class TickRoomHolder {
public:
    virtual ~TickRoomHolder() = default;
    void setRoom(TickRoom room) { m_room = room; }
    TickRoom room() const { return m_room; }

protected:
    TickRoom m_room;
};

// Linear ticks at QCustomPlot's readable steps (1, 2, 2.5, 5 × 10^k) near tickCount() per axis,
// the step raised to the next readable one until neighbouring ticks are comfortablePx() apart.
// Where that leaves a single tick but two would fit, the least step (3, 4, 6 or 8 × 10^k too)
// that gives two, comfortably apart if it can, else a label height apart: "0" alone on an axis
// says nothing of its scale.
class SpacedTicker : public QCPAxisTicker, public TickRoomHolder {
public:
    // Appended to every tick label: the value's unit ("%") where the axis label has no room for it.
    void setSuffix(const QString& suffix) { m_suffix = suffix; }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        return QCPAxisTicker::getTickLabel(tick, locale, format, precision) + m_suffix;
    }
    // One style per axis: "g" writes 1000000 as "1e+06" beside "500000" and "0". Where it would mix
    // the two and every tick is whole, every label is the whole number ("1000000"), as an axis of
    // smaller values (the live samples/s chart's "2000", "4000") already reads.
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar format,
                                       int precision) override {
        QVector<QString> labels = QCPAxisTicker::createLabelVector(ticks, locale, format, precision);
        const bool mixed = std::any_of(labels.begin(), labels.end(),
                                       [](const QString& l) { return l.contains(QLatin1Char('e')); });
        const bool whole = std::all_of(ticks.begin(), ticks.end(), [](double t) {
            return std::isfinite(t) && std::abs(t) < 1e15 && t == std::round(t);
        });
        if (!mixed || !whole) return labels;
        for (int i = 0; i < ticks.size(); ++i)
            labels[i] = locale.toString(ticks[i], 'f', 0) + m_suffix;
        return labels;
    }
    double getTickStep(const QCPRange& range) override {
        double step = QCPAxisTicker::getTickStep(range);
        if (!(m_room.lengthPx > 0) || !(step > 0) || !std::isfinite(step)) return step;
        const double comfortable = range.size() * m_room.comfortablePx() / m_room.lengthPx;
        for (int guard = 0; step < comfortable && guard < 64; ++guard) step = nextStep(step, readable);
        if (ticksIn(range, step) >= 2) return step;
        for (double spacing : {m_room.comfortablePx(), m_room.labelHeightPx}) {
            const double least = range.size() * spacing / m_room.lengthPx;
            for (double finer = nextStep(least * (1 - 1e-9), any); finer < step; finer = nextStep(finer, any))
                if (ticksIn(range, finer) >= 2) return finer;
        }
        return step;
    }

private:
    QString m_suffix;
    static constexpr double readable[] = {1.0, 2.0, 2.5, 5.0};
    static constexpr double any[] = {1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0};

    // The smallest m × 10^k (m from `mantissas`) above `step`.
    template <std::size_t N>
    static double nextStep(double step, const double (&mantissas)[N]) {
        const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
        const double mantissa = step / magnitude;  // in [1, 10)
        for (double m : mantissas)
            if (mantissa < m * (1 - 1e-9)) return m * magnitude;
        return 10 * magnitude;
    }
    double ticksIn(const QCPRange& range, double step) const {
        return std::floor((range.upper - mTickOrigin) / step + 1e-9) -
               std::ceil((range.lower - mTickOrigin) / step - 1e-9) + 1;
    }
};

// Logarithmic ticks at whole powers of the base, every k-th power: k as small as keeps the ticks
// near tickCount() and comfortablePx() apart (a label height apart, where that is what gives two
// ticks rather than one). Sub ticks only between neighbouring powers.
class SpacedLogTicker : public QCPAxisTickerLog, public TickRoomHolder {
protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        if (!(range.lower > 0) || !(range.upper > range.lower))
            return QCPAxisTickerLog::createTickVector(tickStep, range);
        const double lnBase = std::log(mLogBase);
        const double powers = std::log(range.upper / range.lower) / lnBase;
        const double lo = std::log(range.lower) / lnBase, hi = std::log(range.upper) / lnBase;
        const double byCount = std::ceil(powers / std::max(1, mTickCount) - 1e-9);
        auto stepFor = [&](double spacingPx) {
            const double k = m_room.lengthPx > 0
                                 ? std::max(byCount, std::ceil(powers * spacingPx / m_room.lengthPx - 1e-9))
                                 : byCount;
            return static_cast<int>(std::clamp(k, 1.0, 4096.0));
        };
        auto inRange = [&](int k) { return std::floor(hi / k + 1e-9) - std::ceil(lo / k - 1e-9) + 1; };
        m_powerStep = stepFor(m_room.comfortablePx());
        if (inRange(m_powerStep) < 2 && inRange(stepFor(m_room.labelHeightPx)) >= 2)
            m_powerStep = stepFor(m_room.labelHeightPx);
        QVector<double> ticks;
        const auto first = static_cast<int>(std::floor(lo / m_powerStep)) * m_powerStep;
        const auto last = static_cast<int>(std::ceil(hi / m_powerStep)) * m_powerStep;
        for (int p = first; p <= last; p += m_powerStep) ticks.append(std::pow(mLogBase, p));
        return ticks;
    }
    int getSubTickCount(double tickStep) override {
        return m_powerStep == 1 ? QCPAxisTickerLog::getSubTickCount(tickStep) : 0;
    }

private:
    int m_powerStep = 1;
};

// A log10 axis (the loss) with at least three labelled ticks wherever a label height allows it.
// Over two decades or more its ticks are the powers of ten, as SpacedLogTicker places them
// ("10⁻¹", "10⁻²", in the axis' own number format); a loss that spans less than that would show
// one power or none, so the ticks then subdivide each decade at 1, 2, 5 × 10^k, or at every whole
// mantissa 1..9 × 10^k, or, for a range narrower still, take evenly spaced round values (1, 2,
// 2.5, 5 × 10^k apart) as a linear axis would: the first of these that gives three ticks, each at
// least a label height from its neighbour. Subdivided ticks are all written plainly ("0.2",
// "0.5", "1"), so one axis never mixes two number styles.
class DecadeLogTicker : public SpacedLogTicker {
public:
    DecadeLogTicker() { setLogBase(10); }
    bool subdivided() const { return m_subdivided; }

protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        m_subdivided = false;
        QVector<double> powers = SpacedLogTicker::createTickVector(tickStep, range);
        if (!(range.lower > 0) || !(range.upper > range.lower) || inside(powers, range) >= 3) return powers;
        static const std::vector<double> oneTwoFive = {1, 2, 5};
        static const std::vector<double> whole = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        for (const auto* mantissas : {&oneTwoFive, &whole}) {
            QVector<double> ticks;
            const int first = static_cast<int>(std::floor(std::log10(range.lower))) - 1;
            const int last = static_cast<int>(std::ceil(std::log10(range.upper))) + 1;
            for (int k = first; k <= last; ++k)
                for (double m : *mantissas) ticks.append(m * std::pow(10.0, k));
            if (inside(ticks, range) >= 3 && apart(ticks, range)) return subdivide(ticks, range);
        }
        for (int count : {5, 4, 3}) {  // evenly spaced round values, as a linear axis has
            const double step = roundStep(range.size() / count);
            QVector<double> ticks;
            for (auto i = static_cast<long long>(std::floor(range.lower / step)); i * step <= range.upper + step; ++i)
                if (i > 0) ticks.append(static_cast<double>(i) * step);
            if (inside(ticks, range) >= 3 && apart(ticks, range)) return subdivide(ticks, range);
        }
        return powers;
    }
    int getSubTickCount(double tickStep) override {
        return m_subdivided ? 0 : SpacedLogTicker::getSubTickCount(tickStep);
    }
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        if (!m_subdivided) return SpacedLogTicker::getTickLabel(tick, locale, format, precision);
        return locale.toString(tick, m_labelFormat, m_labelPrecision);
    }

private:
    bool m_subdivided = false;
    char m_labelFormat = 'f';  // of every subdivided label: 'f', or 'e' for tiny or huge ranges
    int m_labelPrecision = 1;

    // Chooses one format for all the ticks: fixed with the decimals the finest tick needs ("0.25",
    // "0.50"), or scientific with the digits it needs where fixed would be long ("2.5e-05").
    QVector<double> subdivide(const QVector<double>& ticks, const QCPRange& range) {
        m_subdivided = true;
        const bool scientific = range.lower < 1e-4 || range.upper >= 1e6;
        m_labelFormat = scientific ? 'e' : 'f';
        m_labelPrecision = 0;
        for (double t : ticks) {
            if (t < range.lower || t > range.upper) continue;
            const double scaled = scientific ? t / std::pow(10.0, std::floor(std::log10(t))) : t;
            int digits = 0;
            while (digits < 8 && std::abs(std::round(scaled * std::pow(10.0, digits)) - scaled * std::pow(10.0, digits)) >
                                     1e-6 * scaled * std::pow(10.0, digits))
                ++digits;
            m_labelPrecision = std::max(m_labelPrecision, digits);
        }
        return ticks;
    }
    // Ticks QCustomPlot will draw: strictly within the range (it trims the others).
    static int inside(const QVector<double>& ticks, const QCPRange& range) {
        int n = 0;
        for (double t : ticks) n += t >= range.lower && t <= range.upper;
        return n;
    }
    // Neighbouring ticks inside the range are at least a label height apart (on a log axis the
    // closest pair is the highest); true before the axis was laid out.
    bool apart(const QVector<double>& ticks, const QCPRange& range) const {
        if (!(m_room.lengthPx > 0)) return true;
        const double pxPerLog = m_room.lengthPx / std::log(range.upper / range.lower);
        double previous = 0;
        for (double t : ticks) {
            if (t < range.lower || t > range.upper) continue;
            if (previous > 0 && pxPerLog * std::log(t / previous) < m_room.labelHeightPx) return false;
            previous = t;
        }
        return true;
    }
    // The least of 1, 2, 2.5, 5 × 10^k at or above `step`.
    static double roundStep(double step) {
        const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
        for (double m : {1.0, 2.0, 2.5, 5.0})
            if (m * magnitude >= step * (1 - 1e-9)) return m * magnitude;
        return 10 * magnitude;
    }
};

// Tick labels of a log2 axis as powers of two ("2¹⁶"): loss scales are powers of two.
class Log2Ticker : public SpacedLogTicker {
public:
    Log2Ticker() {
        setLogBase(2);
        setSubTickCount(0);
    }

protected:
    QString getTickLabel(double tick, const QLocale&, QChar, int) override {
        static const std::array<QChar, 10> superscript = {QChar(0x2070), QChar(0x00b9), QChar(0x00b2),
                                                          QChar(0x00b3), QChar(0x2074), QChar(0x2075),
                                                          QChar(0x2076), QChar(0x2077), QChar(0x2078),
                                                          QChar(0x2079)};
        const long exponent = std::lround(std::log2(tick));
        QString digits = QString::number(std::labs(exponent));
        QString out = QStringLiteral("2");
        if (exponent < 0) out += QChar(0x207b);
        for (QChar c : digits) out += superscript[static_cast<std::size_t>(c.digitValue())];
        return out;
    }
};

// A tick label's line height on `axis` (ascent, descent and leading), in pixels.
inline double tickLabelHeight(const QCPAxis* axis) {
    return std::ceil(QFontMetricsF(axis->tickLabelFont()).height());
}

// The longest of `forms` (longest first) whose text fits in `lengthPx` in `font`; empty if none.
inline QString fittingLabel(const QStringList& forms, const QFont& font, double lengthPx) {
    const QFontMetricsF fm(font);
    for (const QString& form : forms)
        if (fm.horizontalAdvance(form) <= lengthPx) return form;
    return {};
}

// After a layout: tells a vertical axis' spaced ticker the axis rect's height and shows the
// longest label form that fits along it. true when anything changed (regenerate the ticks).
inline bool fitAxis(QCPAxis* axis, const QStringList& labelForms) {
    if (!axis || !axis->axisRect() || axis->orientation() != Qt::Vertical) return false;
    const double length = axis->axisRect()->height();
    if (!(length > 0)) return false;
    bool changed = false;
    if (auto* holder = dynamic_cast<TickRoomHolder*>(axis->ticker().data())) {
        const TickRoom room{length, tickLabelHeight(axis)};
        if (!(holder->room() == room)) {
            holder->setRoom(room);
            changed = true;
        }
    }
    if (!labelForms.isEmpty()) {
        const QString label = fittingLabel(labelForms, axis->labelFont(), length);
        if (label != axis->label()) {
            axis->setLabel(label);
            changed = true;
        }
    }
    return changed;
}

}  // namespace mantissa::ui
