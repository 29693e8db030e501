// NoticeBar: the dismissible notice banner (see notice_bar.h).
#include "panels/notice_bar.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QToolButton>

namespace mantissa::ui {

NoticeBar::NoticeBar(QWidget* parent) : QFrame(parent) {
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    m_icon = new QLabel;
    m_text = new QLabel;
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton;
    close->setText(QStringLiteral("×"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Hide this notice"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 3, 3, 3);
    layout->addWidget(m_icon);
    layout->addWidget(m_text, 1);
    layout->addWidget(close);
    connect(close, &QToolButton::clicked, this, &QWidget::hide);
    hide();
}

void NoticeBar::showNotice(const QString& message, Level level) {
    m_level = level;
    // Translucent colours over the window's read on light and dark palettes: amber for a note,
    // a stronger orange-red for a warning.
    QPalette pal = parentWidget() ? parentWidget()->palette() : QApplication::palette();
    pal.setColor(QPalette::Window, level == Level::warning ? QColor(230, 90, 30, 110) : QColor(240, 170, 40, 70));
    setPalette(pal);
    const int size = style()->pixelMetric(QStyle::PM_SmallIconSize);
    m_icon->setPixmap(style()
                          ->standardIcon(level == Level::warning ? QStyle::SP_MessageBoxWarning
                                                                 : QStyle::SP_MessageBoxInformation)
                          .pixmap(size, size));
    m_text->setText(message);
    show();
}

QString NoticeBar::text() const { return m_text->text(); }

}  // namespace mantissa::ui
