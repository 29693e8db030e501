// The colours that tell compared runs apart: Okabe & Ito's palette (2008), chosen to stay distinct
// for the common colour-vision deficiencies, one per run for up to eight runs. Black is replaced
// by a mid grey so it also reads on a dark background.
#pragma once

#include <QColor>

namespace mantissa::ui {

inline constexpr int runPaletteSize = 8;
QColor runColor(int index);  // index modulo runPaletteSize

}  // namespace mantissa::ui
