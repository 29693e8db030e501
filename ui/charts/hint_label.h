// HintLabel: a one-line hint made of parts ("wheel: zoom", "drag: pan", "hover: values") that
// shows as many of them, from the first, as its width holds, each whole: a narrow window drops
// the last parts rather than cut the line mid-word (a right-aligned QLabel that gives way clips
// its left edge: "rag: pan · hover: values"). The whole hint is its tooltip. Its minimum width is
// nothing, so it never holds the bar it sits in wider. The charts' hint bar (charts_panel.cpp).
// GUI thread only.
#pragma once

#include <QLabel>
#include <QStringList>

namespace mantissa::ui {

class HintLabel : public QLabel {
public:
    HintLabel(const QStringList& parts, QWidget* parent = nullptr);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    // The parts shown at `width` px, joined by " · "; empty when not even the first fits.
    QString textFor(int width) const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    QStringList m_parts;
};

}  // namespace mantissa::ui
