// The application's window icon, painted at the sizes a desktop asks for. It is the design of
// packaging/icons/mantissa.svg (a float's sign | exponent | mantissa fields over a loss curve),
// drawn with QPainter because Debian's Qt 6 ships no SVG image plugin by default.
#pragma once

#include <QIcon>

namespace mantissa::ui {

QIcon appIcon();

}  // namespace mantissa::ui
