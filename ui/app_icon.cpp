// appIcon: packaging/icons/mantissa.svg's 128x128 design, painted at several sizes.
#include "app_icon.h"

#include <QPainter>
#include <QPainterPath>
#include <QPixmap>

namespace mantissa::ui {

QIcon appIcon() {
    QIcon icon;
    for (int size : {16, 24, 32, 48, 64, 128, 256}) {
        QPixmap pixmap(size, size);
        pixmap.fill(Qt::transparent);
        QPainter p(&pixmap);
        p.setRenderHint(QPainter::Antialiasing);
        p.scale(size / 128.0, size / 128.0);  // the SVG's coordinates from here on
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(0x1f, 0x3b, 0x57));
        p.drawRoundedRect(QRectF(4, 4, 120, 120), 20, 20);
        p.setBrush(QColor(0xe0, 0x5d, 0x5d));
        p.drawRoundedRect(QRectF(18, 50, 12, 28), 3, 3);
        p.setBrush(QColor(0x4f, 0xa3, 0xe0));
        p.drawRoundedRect(QRectF(34, 50, 30, 28), 3, 3);
        p.setBrush(QColor(0x6c, 0xc0, 0x70));
        p.drawRoundedRect(QRectF(68, 50, 42, 28), 3, 3);
        QPainterPath curve(QPointF(18, 100));
        curve.quadTo(QPointF(44, 88), QPointF(64, 96));
        curve.quadTo(QPointF(84, 104), QPointF(110, 90));  // the SVG's "T" mirrors the control point
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(QColor(0xf5, 0xf5, 0xf5), 5, Qt::SolidLine, Qt::RoundCap));
        p.drawPath(curve);
        p.end();
        icon.addPixmap(pixmap);
    }
    return icon;
}

}  // namespace mantissa::ui
