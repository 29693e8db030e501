// The Block scales plots' shared look and axes (see block_plot_style.h).
#include "block_scales/block_plot_style.h"

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

namespace mantissa::ui::blockscale {

namespace {

QCPColorGradient gradientOf(std::initializer_list<std::pair<double, QColor>> stops) {
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& [at, color] : stops) g.setColorStopAt(at, color);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhTransparent);  // an empty cell is blank
    g.setLevelCount(256);
    return g;
}

}  // namespace

QCPColorGradient fractionGradient() {
    return gradientOf({{0.00, QColor(0x44, 0x01, 0x54)},
                       {0.25, QColor(0x3b, 0x52, 0x8b)},
                       {0.50, QColor(0x21, 0x91, 0x8c)},
                       {0.75, QColor(0x5e, 0xc9, 0x62)},
                       {1.00, QColor(0xfd, 0xe7, 0x25)}});
}

QCPColorGradient exponentGradient() {
    return gradientOf({{0.00, QColor(0x0d, 0x08, 0x87)},
                       {0.25, QColor(0x7e, 0x03, 0xa8)},
                       {0.50, QColor(0xcc, 0x47, 0x78)},
                       {0.75, QColor(0xf8, 0x95, 0x40)},
                       {1.00, QColor(0xf0, 0xf9, 0x21)}});
}

QColor zeroBlockColor() {
    return QColor(0x9e, 0x9e, 0x9e);
}

QColor nanBlockColor() {
    return QColor(0x00, 0xc8, 0x53);
}

void stylePlot(QCustomPlot* plot, QCPColorScale* scale) {
    const QPalette palette = plot->palette();
    const QColor base = palette.color(QPalette::Base), text = palette.color(QPalette::Text);
    plot->setBackground(base);
    plot->axisRect()->setBackground(base);
    std::vector<QCPAxis*> axes = {plot->xAxis, plot->yAxis};
    if (scale) axes.push_back(scale->axis());
    for (QCPAxis* a : axes) {
        a->setLabelColor(text);
        a->setTickLabelColor(text);
        a->setBasePen(QPen(text));
        a->setTickPen(QPen(text));
        a->setSubTickPen(QPen(text));
        a->grid()->setVisible(false);
    }
}

QSharedPointer<QCPAxisTickerText> integerTicker(int lo, int hi, double lengthPx, double labelPx,
                                                const std::function<QString(int)>& label,
                                                const std::vector<std::pair<int, QString>>& extra) {
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    ticker->setSubTickCount(0);
    const double length = lengthPx > 0 ? lengthPx : 200;
    const double spacing = 1.3 * labelPx;
    // The span drawn includes the extra rows, so pixels per unit come from all of it.
    int low = lo, high = hi;
    for (const auto& [at, text] : extra) low = std::min(low, at), high = std::max(high, at);
    const double perUnit = length / std::max(1, high - low + 1);
    int every = 1;
    for (int m = 1; m <= 1'000'000 && every * perUnit < spacing; m *= 10)
        for (int f : {1, 2, 5})
            if (every * perUnit < spacing) every = f * m;
    for (const auto& [at, text] : extra) ticker->addTick(at, text);
    const int first = static_cast<int>(std::ceil(static_cast<double>(lo) / every)) * every;
    for (int v = first; v <= hi; v += every) {
        bool clear = true;
        for (const auto& [at, text] : extra) clear = clear && std::abs(v - at) * perUnit >= spacing;
        if (clear) ticker->addTick(v, label(v));
    }
    return ticker;
}

bool answerToolTip(QWidget* plot, QEvent* event, const std::function<QString(QPoint)>& textAt) {
    if (event->type() != QEvent::ToolTip) return false;
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = textAt(help->pos());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(help->globalPos(), text, plot);
    return true;
}

}  // namespace mantissa::ui::blockscale
