// Axis fitting: keeps a QCustomPlot value axis readable at whatever length the layout gives it.
//   - Its tick labels never come closer than a label's height: the tickers below take the axis'
//     pixel length (told them after each layout) and coarsen their step until neighbouring labels
//     are apart, so a 40-px chart shows two ticks and a 400-px one its usual four or five.
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
#include <cmath>
#include <cstddef>

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
