// How a language model's test figures are written wherever the window shows them (the status bar,
// the Sample panel), so that one figure reads the same in both: the loss in nats per token with 4
// decimals, its perplexity e^loss with 2, and "—" for a figure that is NaN or infinite (a run whose
// output went NaN) rather than "nan".
#pragma once

#include <cmath>

#include <QString>

namespace mantissa::ui {

inline QString figureOrDash(double v, int decimals) {
    return std::isfinite(v) ? QString::number(v, 'f', decimals) : QStringLiteral("—");
}
inline QString natsPerTokenText(double loss) { return figureOrDash(loss, 4); }
inline QString perplexityText(double loss) { return figureOrDash(std::exp(loss), 2); }

}  // namespace mantissa::ui
