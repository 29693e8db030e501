// Okabe-Ito colours for compared runs (see run_palette.h).
#include "history/run_palette.h"

#include <array>

namespace mantissa::ui {

QColor runColor(int index) {
    static const std::array<QColor, runPaletteSize> colors = {
        QColor(0x00, 0x72, 0xb2),  // blue
        QColor(0xe6, 0x9f, 0x00),  // orange
        QColor(0x00, 0x9e, 0x73),  // bluish green
        QColor(0xd5, 0x5e, 0x00),  // vermillion
        QColor(0xcc, 0x79, 0xa7),  // reddish purple
        QColor(0x56, 0xb4, 0xe9),  // sky blue
        QColor(0xf0, 0xe4, 0x42),  // yellow
        QColor(0x80, 0x80, 0x80),  // grey (black in the original)
    };
    const int i = ((index % runPaletteSize) + runPaletteSize) % runPaletteSize;
    return colors[static_cast<std::size_t>(i)];
}

}  // namespace mantissa::ui
