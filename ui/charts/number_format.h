// How the charts and the run history write numbers: one style per axis, read-out or table column,
// so a read-out or a column never mixes "6.659e-05" with "0.0001008" and a loss scale reads as the
// power of two it is ("2^17 (131072)", not "1.311e+05").
//
// Header-only and small; GUI thread or any (pure functions).
#pragma once

#include <QString>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mantissa::ui {

// A value in a read-out: 4 significant digits, "NaN", "inf", "-inf".
inline QString formatValue(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(v, 'g', 4);
}

// One style for the values a chart's read-out shows together (those of one value axis at the
// hovered step, or a memory chart's categories): 4 significant digits for the largest of them and
// the same decimals for every other, so "0.897 MiB" never stands beside "0.7627 MiB" (it reads
// "0.8970"); scientific with 4 significant digits where the largest is below 1e-3 or at or above
// 1e6 ("3.512e-04" beside "2.900e-08"). Zeros alone: "0".
struct ReadoutNumberStyle {
    bool scientific = false;
    int decimals = 0;

    static ReadoutNumberStyle forLargest(double largest) {
        ReadoutNumberStyle style;
        const double a = std::abs(largest);
        if (!std::isfinite(a) || a == 0) return style;
        if (a < 1e-3 || a >= 1e6) {
            style.scientific = true;
            style.decimals = 3;
            return style;
        }
        style.decimals = std::clamp(3 - static_cast<int>(std::floor(std::log10(a))), 0, 6);
        return style;
    }
    static ReadoutNumberStyle forValues(const std::vector<double>& values) {
        double largest = 0;
        for (double v : values)
            if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
        return forLargest(largest);
    }

    QString format(double v) const {
        if (!std::isfinite(v)) return formatValue(v);
        return QString::number(v, scientific ? 'e' : 'f', decimals);
    }
};

// A loss scale: "2^17 (131072)" for a power of two (fractions too: "2^-3 (0.125)"); any other
// value in full (up to 9 significant digits).
inline QString formatPowerOfTwo(double v) {
    if (!std::isfinite(v) || !(v > 0)) return formatValue(v);
    int exponent = 0;
    const double mantissa = std::frexp(v, &exponent);  // v = mantissa * 2^exponent, mantissa in [0.5, 1)
    if (mantissa != 0.5) return QString::number(v, 'g', 9);
    return QStringLiteral("2^%1 (%2)").arg(exponent - 1).arg(QString::number(v, 'g', 12));
}

// One style for a whole column of numbers (the run history's final loss): scientific with 4
// significant digits when the column holds a value below 1e-3 or at or above 1e4, otherwise fixed
// with as many decimals as give its smallest value 4 significant digits (2 to 6), so the decimal
// points line up and every row reads the same way.
struct ColumnNumberStyle {
    bool scientific = false;
    int decimals = 4;

    static ColumnNumberStyle forValues(const std::vector<double>& values) {
        double smallest = std::numeric_limits<double>::infinity(), largest = 0;
        for (double v : values) {
            const double a = std::abs(v);
            if (!std::isfinite(a) || a == 0) continue;
            smallest = std::min(smallest, a);
            largest = std::max(largest, a);
        }
        ColumnNumberStyle style;
        if (!std::isfinite(smallest)) return style;  // zeros or nothing: fixed, 4 decimals
        if (smallest < 1e-3 || largest >= 1e4) {
            style.scientific = true;
            style.decimals = 3;
            return style;
        }
        style.decimals = std::clamp(3 - static_cast<int>(std::floor(std::log10(smallest))), 2, 6);
        return style;
    }

    QString format(double v) const {
        if (!std::isfinite(v)) return formatValue(v);
        return QString::number(v, scientific ? 'e' : 'f', decimals);
    }
};

}  // namespace mantissa::ui
