// ElidingLabel: plain text on as many lines as the label's height holds, the last one elided
// ("…") when there is more (its owner sets the whole text as its tooltip). Its minimum is one
// line, its size hint every line at its width, or at most setMaxHintLines() of them: a short dock
// shows one line, a tall one the whole sentence, one between the lines that leave the plot its
// room, and none is ever cut through. The gradient histogram view's caption
// (gradient_histogram_view.h).
#pragma once

#include <QLabel>

#include <utility>
#include <vector>

namespace mantissa::ui {

class ElidingLabel : public QLabel {
public:
    explicit ElidingLabel(QWidget* parent);
    QSize minimumSizeHint() const override { return {0, fontMetrics().height()}; }
    QSize sizeHint() const override;
    // 0: no limit.
    void setMaxHintLines(int lines);

protected:
    void resizeEvent(QResizeEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    // (start, length) of each wrapped line of the text at `width` px.
    std::vector<std::pair<int, int>> lines(int width) const;

    int m_maxHintLines = 0;
};

}  // namespace mantissa::ui
