// The What-if panel's numbers in words and in colour, decided in one place so the cells, their
// tooltips and the legend agree.
//
// Words: an SQNR as "23.4 dB", +inf as "exact" (every value measured is representable), -inf as
// "overflow" (a finite value would become inf), NaN as "—" (no finite non-zero value to measure);
// a fraction as a percentage, "0.31 %" ("<0.01 %" below that, so a cell never reads 0 for a loss).
//
// Colour: one ramp for every metric, from the view's neutral base colour through amber to red, so
// warm always reads "this format loses this tensor here":
//   SQNR        60 dB or more (fp16 on well-scaled values is about 68) and exact: neutral;
//               20 dB amber; 0 dB or less and overflow: red; linear in dB between.
//   underflow,  0 (and below 0.01 %): neutral; then by decades: 0.1 % light, 1 % amber, 10 % or
//   saturation  more red (the Layers table's underflow is amber from 1 %, red from 10 %).
// The amber and red are the Layers table's, opaque here so the text colour can be chosen against them.
#pragma once

#include <QColor>
#include <QString>

#include "series/what_if_series.h"

namespace mantissa::ui::whatif {

QString numberText(WhatIfMetric metric, double value);  // "23.4 dB", "exact", "0.31 %", "—"
// 0 (neutral) .. 1 (red); NaN for a value with no colour (no signal).
double warmth(WhatIfMetric metric, double value);
// The ramp's colour at `warmth` over `neutral` (the view's base colour); `neutral` for NaN.
QColor warmColour(double warmth, const QColor& neutral);
// Black or white, whichever reads on `background`; `text` (the palette's) on the neutral colour.
QColor textOn(const QColor& background, const QColor& neutral, const QColor& text);

QString metricName(WhatIfMetric metric);  // "SQNR", "underflow", "saturation"
QString tensorName(WhatIfTensor tensor);  // "x (input)", "W (weight)", "dy (output gradient)"
// The legend under the heat map for `metric`: colour swatches and what they stand for (HTML).
QString legendHtml(WhatIfMetric metric, const QColor& neutral, const QColor& text);

}  // namespace mantissa::ui::whatif
