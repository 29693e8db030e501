// The What-if panel's words and colour ramp (see what_if_scale.h).
#include "models/what_if_scale.h"

#include <algorithm>
#include <cmath>

namespace mantissa::ui::whatif {

namespace {
// The Layers table's amber and red (layer_table_model.cpp), opaque.
const QColor amber(240, 170, 40);
const QColor red(215, 48, 39);
constexpr double amberAt = 2.0 / 3.0;  // the ramp's middle stop: 20 dB, 1 %

QColor mix(const QColor& a, const QColor& b, double t) {
    const auto lerp = [t](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * t)); };
    return QColor(lerp(a.red(), b.red()), lerp(a.green(), b.green()), lerp(a.blue(), b.blue()));
}

QString swatch(const QColor& c) {
    return QStringLiteral("<span style=\"background-color:%1\">&nbsp;&nbsp;&nbsp;&nbsp;</span>").arg(c.name());
}
}  // namespace

QString numberText(WhatIfMetric metric, double value) {
    if (std::isnan(value)) return QStringLiteral("—");
    if (metric == WhatIfMetric::sqnr_db) {
        if (std::isinf(value)) return value > 0 ? QStringLiteral("exact") : QStringLiteral("overflow");
        const double tenths = std::round(value * 10) / 10;
        return QStringLiteral("%1 dB").arg(QString::number(tenths == 0 ? 0.0 : tenths, 'f', 1));  // never "-0.0"
    }
    const double percent = value * 100;
    if (percent == 0) return QStringLiteral("0 %");
    if (percent < 0.01) return QStringLiteral("<0.01 %");
    return QStringLiteral("%1 %").arg(QString::number(percent, 'g', 3));
}

double warmth(WhatIfMetric metric, double value) {
    if (std::isnan(value)) return std::nan("");
    if (metric == WhatIfMetric::sqnr_db) {
        if (std::isinf(value)) return value > 0 ? 0.0 : 1.0;
        return std::clamp((60 - value) / 60, 0.0, 1.0);
    }
    if (value <= 0) return 0;
    return std::clamp((std::log10(value * 100) + 2) / 3, 0.0, 1.0);  // 0.01 % → 0, 1 % → 2/3, 10 % → 1
}

QColor warmColour(double w, const QColor& neutral) {
    if (std::isnan(w)) return neutral;
    w = std::clamp(w, 0.0, 1.0);
    return w <= amberAt ? mix(neutral, amber, w / amberAt) : mix(amber, red, (w - amberAt) / (1 - amberAt));
}

QColor textOn(const QColor& background, const QColor& neutral, const QColor& text) {
    if (background == neutral) return text;
    // Relative luminance (sRGB weights, close enough for a choice between black and white).
    const double y = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return y > 0.5 ? QColor(Qt::black) : QColor(Qt::white);
}

QString metricName(WhatIfMetric metric) {
    switch (metric) {
        case WhatIfMetric::sqnr_db: return QStringLiteral("SQNR");
        case WhatIfMetric::underflow: return QStringLiteral("underflow");
        case WhatIfMetric::saturation: return QStringLiteral("saturation");
    }
    return {};
}

QString tensorName(WhatIfTensor tensor) {
    switch (tensor) {
        case WhatIfTensor::input: return QStringLiteral("x (input)");
        case WhatIfTensor::weight: return QStringLiteral("W (weight)");
        case WhatIfTensor::grad_output: return QStringLiteral("dy (output gradient)");
    }
    return {};
}

QString legendHtml(WhatIfMetric metric, const QColor& neutral, const QColor& text) {
    const auto stop = [&](double value, const QString& label) {
        return swatch(warmColour(warmth(metric, value), neutral)) + QStringLiteral("&nbsp;") + label;
    };
    QStringList stops;
    QString what;
    if (metric == WhatIfMetric::sqnr_db) {
        stops << stop(60, QStringLiteral("≥ 60 dB or exact")) << stop(40, QStringLiteral("40 dB"))
              << stop(20, QStringLiteral("20 dB")) << stop(0, QStringLiteral("≤ 0 dB or overflow"));
        what = QStringLiteral("SQNR: signal to quantisation noise, in dB; higher keeps more of the tensor.");
    } else {
        stops << stop(0, QStringLiteral("0 %")) << stop(0.001, QStringLiteral("0.1 %"))
              << stop(0.01, QStringLiteral("1 %")) << stop(0.1, QStringLiteral("≥ 10 %"));
        what = metric == WhatIfMetric::underflow
                   ? QStringLiteral("Underflow: of the non-zero values, those that would become 0.")
                   : QStringLiteral(
                         "Saturation: of the non-zero values, those beyond the format's largest "
                         "(clamped, or inf in fp16 and bf16).");
    }
    return QStringLiteral(
               "<span style=\"color:%1\">%2 &nbsp; (— no values to measure)<br>%3 "
               "A frame marks the format each layer runs in: those are its own operands.</span>")
        .arg(text.name(), stops.join(QStringLiteral(" &nbsp; ")), what.toHtmlEscaped());
}

}  // namespace mantissa::ui::whatif
