// FormatNumberLine painting. Layout, top to bottom: the smallest-subnormal label, the marker, the
// range bar, the smallest-normal and largest-finite labels (staggered so fp32's close -149 and -126
// labels do not collide).
#include "explorer/format_number_line.h"

#include <algorithm>
#include <cmath>

#include <QPainter>
#include <QPainterPath>

namespace mantissa::ui {

namespace {
constexpr int side_margin = 12;  // room for the end arrows

QColor markerColor(const StoredValue& s) {
    if (s.overflowed || s.flushed_to_zero || s.cls == FloatClass::nan) return QColor(0xd6, 0x27, 0x28);
    if (s.cls == FloatClass::subnormal) return QColor(0xf2, 0x8e, 0x2b);
    return QColor(0x1f, 0x77, 0xb4);
}
}  // namespace

QString boundLabel(float value) {
    int exp = 0;
    const float m = std::frexp(value, &exp);
    if (m == 0.5f) return QStringLiteral("2^%1").arg(exp - 1);
    const double v = value;
    return v >= 1e5 ? QString::number(v, 'g', 3) : QString::number(v, 'g', 6);
}

FormatNumberLine::FormatNumberLine(Format format, QWidget* parent) : QWidget(parent), m_format(format) {
    const FormatInfo& info = format_info(format);
    const double lo = std::log2(static_cast<double>(info.min_subnormal));
    const double hi = std::log2(static_cast<double>(info.max_finite));
    const double pad = std::max(2.0, 0.08 * (hi - lo));
    m_lo = lo - pad;
    m_hi = hi + pad;
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setToolTip(tr("%1 on a log2 scale of |x|: smallest subnormal %2, smallest normal %3, largest finite %4")
                   .arg(QString::fromUtf8(info.name.data(), static_cast<int>(info.name.size())),
                        boundLabel(info.min_subnormal), boundLabel(info.min_normal), boundLabel(info.max_finite)));
}

void FormatNumberLine::setValue(float input, const StoredValue& stored) {
    m_input = input;
    m_stored = stored;
    const double a = std::fabs(static_cast<double>(input));
    if (std::isnan(input)) {
        m_placement = Placement::notANumber;
        m_log2 = std::nan("");
    } else if (std::isinf(input)) {
        m_placement = Placement::infinite;
        m_log2 = std::nan("");
    } else if (a == 0) {
        m_placement = Placement::zero;
        m_log2 = std::nan("");
    } else {
        m_log2 = std::log2(a);
        m_placement = m_log2 < m_lo ? Placement::belowRange : m_log2 > m_hi ? Placement::aboveRange : Placement::inside;
    }
    update();
}

double FormatNumberLine::xFor(double log2_value, double left, double right) const {
    return left + (log2_value - m_lo) / (m_hi - m_lo) * (right - left);
}

void FormatNumberLine::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const FormatInfo& info = format_info(m_format);
    const double left = side_margin, right = width() - side_margin;
    const QFontMetrics fm(font());
    const int fh = fm.height();
    const double barTop = fh + 9, barH = 6;
    const QColor text = palette().color(QPalette::WindowText);
    QColor normal = palette().color(QPalette::Highlight);
    QColor subnormal = normal;
    subnormal.setAlphaF(0.35);
    QColor axis = text;
    axis.setAlphaF(0.35);

    const double xSub = xFor(std::log2(static_cast<double>(info.min_subnormal)), left, right);
    const double xNorm = xFor(std::log2(static_cast<double>(info.min_normal)), left, right);
    const double xMax = xFor(std::log2(static_cast<double>(info.max_finite)), left, right);

    p.setPen(QPen(axis, 1));
    p.drawLine(QPointF(left, barTop + barH / 2), QPointF(right, barTop + barH / 2));
    p.fillRect(QRectF(xSub, barTop, xNorm - xSub, barH), subnormal);
    p.fillRect(QRectF(xNorm, barTop, xMax - xNorm, barH), normal);

    // Bound ticks and labels: the subnormal floor above the bar, the other two below it.
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    const QFontMetrics sfm(small);
    // The marker shares the row above the bar with the subnormal-floor label: the label moves aside.
    const double markerX = m_placement == Placement::inside ? xFor(m_log2, left, right) : -1e9;
    auto label = [&](double x, const QString& s, bool above) {
        p.setPen(QPen(text, 1));
        p.drawLine(QPointF(x, barTop - 2), QPointF(x, barTop + barH + 2));
        const double w = sfm.horizontalAdvance(s);
        double lx = std::clamp(x - w / 2, 0.0, width() - w);
        if (above && lx < markerX + 7 && lx + w > markerX - 7)
            lx = markerX - 7 - w >= 0 ? markerX - 7 - w : markerX + 7;
        const double y = above ? barTop - 4 : barTop + barH + 3 + sfm.ascent();
        p.drawText(QPointF(lx, y), s);
    };
    label(xSub, boundLabel(info.min_subnormal), true);
    label(xNorm, boundLabel(info.min_normal), false);
    label(xMax, boundLabel(info.max_finite), false);

    // The value: a triangle pointing down onto the bar, or an arrow at an end.
    const QColor mc = markerColor(m_stored);
    p.setPen(Qt::NoPen);
    p.setBrush(mc);
    const double my = barTop - 1;
    auto arrow = [&](bool atRight) {
        const double x = atRight ? right + side_margin - 2 : 2;
        const double d = atRight ? -8 : 8;
        QPainterPath path;
        path.moveTo(x, barTop + barH / 2);
        path.lineTo(x + d, barTop + barH / 2 - 5);
        path.lineTo(x + d, barTop + barH / 2 + 5);
        path.closeSubpath();
        p.drawPath(path);
    };
    switch (m_placement) {
        case Placement::inside: {
            const double x = xFor(m_log2, left, right);
            QPainterPath path;
            path.moveTo(x, my);
            path.lineTo(x - 5, my - 8);
            path.lineTo(x + 5, my - 8);
            path.closeSubpath();
            p.drawPath(path);
            p.setPen(QPen(mc, 1.5));
            p.drawLine(QPointF(x, my), QPointF(x, barTop + barH + 1));
            break;
        }
        case Placement::belowRange: arrow(false); break;
        case Placement::aboveRange: arrow(true); break;
        case Placement::zero: arrow(false); break;  // the class column says "zero"
        case Placement::infinite: arrow(true); break;
        case Placement::notANumber: {
            p.setPen(QPen(mc, 1));
            const QString s = tr("NaN has no place on the line");
            p.drawText(QPointF((width() - sfm.horizontalAdvance(s)) / 2.0, barTop - 4), s);
            break;
        }
    }
}

}  // namespace mantissa::ui
