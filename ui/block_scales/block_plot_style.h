// What the Block scales panel's two plots share: their look in the window's palette, their colour
// gradients, and integer axes whose labels stay apart at any plot size.
//
// Colours. The distribution's fraction of blocks uses viridis (dark for rare, bright for common),
// as the gradient histogram does. The map's exponent uses plasma (dark blue for small scales,
// yellow for large), continuous, so a block's colour is the colour bar's at its exponent's tick.
// Neither holds grey or green, the flat colours of a block of zeros and of a block with a NaN or
// an infinity. GUI thread only.
#pragma once

#include <QColor>
#include <QSharedPointer>
#include <QPoint>
#include <QString>

#include <functional>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPAxis;
class QCPAxisTickerText;
class QCPColorGradient;
class QCPColorScale;

namespace mantissa::ui::blockscale {

QCPColorGradient fractionGradient();
QCPColorGradient exponentGradient();
QColor zeroBlockColor();  // mid grey
QColor nanBlockColor();   // green

// Base background, text-coloured axes and labels, no grid; the colour scale's axis too.
void stylePlot(QCustomPlot* plot, QCPColorScale* scale);

// Answers a QEvent::ToolTip on `plot` with textAt(the pointer's position), hiding the tooltip where
// that is empty; false for any other event (the plot handles it).
bool answerToolTip(QWidget* plot, QEvent* event, const std::function<QString(QPoint)>& textAt);

// Ticks on whole numbers lo..hi every 1, 2, 5, 10, 20 … so that labels are at least a label
// height and a third apart along `lengthPx` (0: not laid out yet, as if 200 px); `label` writes
// each. `extra` ticks (a "zero" row, say) come first and the others keep clear of them.
QSharedPointer<QCPAxisTickerText> integerTicker(int lo, int hi, double lengthPx, double labelPx,
                                                const std::function<QString(int)>& label,
                                                const std::vector<std::pair<int, QString>>& extra = {});

}  // namespace mantissa::ui::blockscale
