// SweepScatter: a sweep's runs on two figures with their Pareto front (see sweep_scatter.h).
#include "sweeps/sweep_scatter.h"

#include <QHelpEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "history/run_palette.h"

namespace mantissa::ui {
namespace {

constexpr double pickRadiusPx = 10;
constexpr double samePixelPx = 5;  // points this close share a label

QColor frontColor() {
    return runColor(1);
}  // orange
QColor otherColor() {
    return runColor(0);
}  // blue

// [lo, hi] with a margin, never empty.
QCPRange padded(double lo, double hi) {
    double span = hi - lo;
    if (!(span > 0)) span = std::abs(hi) > 0 ? std::abs(hi) * 0.1 : 1;
    return {lo - 0.12 * span, hi + 0.12 * span};
}

}  // namespace

SweepScatter::SweepScatter(QWidget* parent) : QCustomPlot(parent) {
    setNoAntialiasingOnDrag(true);
    m_step = new QCPCurve(xAxis, yAxis);
    m_step->setName(tr("Pareto front"));
    m_step->setScatterStyle(QCPScatterStyle::ssNone);
    m_others = addGraph();
    m_others->setLineStyle(QCPGraph::lsNone);
    m_frontPoints = addGraph();
    m_frontPoints->setLineStyle(QCPGraph::lsNone);
    m_selection = addGraph();
    m_selection->setLineStyle(QCPGraph::lsNone);
    for (QCPAbstractPlottable* p :
         {static_cast<QCPAbstractPlottable*>(m_step), static_cast<QCPAbstractPlottable*>(m_others),
          static_cast<QCPAbstractPlottable*>(m_frontPoints), static_cast<QCPAbstractPlottable*>(m_selection)})
        p->setSelectable(QCP::stNone);
    for (int i = 0; i < maxLabelledPoints; ++i) {
        auto* label = new QCPItemText(this);
        label->position->setType(QCPItemPosition::ptAbsolute);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setClipToAxisRect(true);
        label->setSelectable(false);
        label->setVisible(false);
        m_labels.push_back(label);
    }
    m_emptyNote = new QCPItemText(this);
    m_emptyNote->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyNote->position->setCoords(0.5, 0.5);
    m_emptyNote->setPositionAlignment(Qt::AlignCenter);
    m_emptyNote->setSelectable(false);
    m_emptyNote->setText(tr("No completed runs yet"));
    connect(this, &QCustomPlot::afterLayout, this, &SweepScatter::placeLabels);
    applyPalette();
}

void SweepScatter::applyPalette() {
    const QPalette pal = palette();
    const QColor base = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
    setBackground(base);
    axisRect()->setBackground(base);
    QColor grid = text;
    grid.setAlpha(40);
    for (QCPAxis* a : {xAxis, yAxis}) {
        a->setLabelColor(text);
        a->setTickLabelColor(text);
        a->setBasePen(QPen(text));
        a->setTickPen(QPen(text));
        a->setSubTickPen(QPen(text));
        a->grid()->setPen(QPen(grid, 1, Qt::DotLine));
        a->grid()->setZeroLinePen(Qt::NoPen);
    }
    m_others->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, otherColor(), otherColor(), 8));
    m_frontPoints->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDisc, frontColor().darker(130), frontColor(), 10));
    m_selection->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(text, 2), Qt::NoBrush, 18));
    m_step->setPen(QPen(frontColor(), 2));
    for (QCPItemText* l : m_labels) l->setColor(text);
    QColor faint = text;
    faint.setAlpha(160);
    m_emptyNote->setColor(faint);
}

void SweepScatter::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyPalette();
        replot(rpQueuedReplot);
    }
}

void SweepScatter::setPoints(std::vector<Point> points, Axis x, Axis y) {
    m_points = std::move(points);
    m_x = std::move(x);
    m_y = std::move(y);
    xAxis->setLabel(m_x.label + (m_x.higherBetter ? tr("  → better") : tr("  ← better")));
    yAxis->setLabel(m_y.label + (m_y.higherBetter ? tr("  ↑ better") : tr("  ↓ better")));

    QVector<double> ox, oy, fx, fy;
    std::vector<QPointF> front;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (const Point& p : m_points) {
        (p.front ? fx : ox).push_back(p.x);
        (p.front ? fy : oy).push_back(p.y);
        if (p.front) front.emplace_back(p.x, p.y);
        xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
    }
    m_others->setData(ox, oy);
    m_frontPoints->setData(fx, fy);

    // The step line: from the left, each pair of neighbours joined through the corner that holds
    // the worse y of the two (the left one's when lower x is better, else the right one's).
    std::sort(front.begin(), front.end(),
              [](const QPointF& a, const QPointF& b) { return a.x() < b.x() || (a.x() == b.x() && a.y() < b.y()); });
    front.erase(std::unique(front.begin(), front.end()), front.end());
    m_frontLine.clear();
    for (std::size_t i = 0; i < front.size(); ++i) {
        if (i > 0) {
            const QPointF& a = front[i - 1];
            const QPointF& b = front[i];
            m_frontLine.push_back(m_x.higherBetter ? QPointF(a.x(), b.y()) : QPointF(b.x(), a.y()));
        }
        m_frontLine.push_back(front[i]);
    }
    QVector<double> sx, sy;
    for (const QPointF& p : m_frontLine) sx << p.x(), sy << p.y();
    m_step->setData(sx, sy);

    m_emptyNote->setVisible(m_points.empty());
    if (m_points.empty()) {
        xAxis->setRange(m_x.emptyRange);
        yAxis->setRange(m_y.emptyRange);
    } else {
        xAxis->setRange(padded(xlo, xhi));
        yAxis->setRange(padded(ylo, yhi));
    }
    setSelectedRows(m_selected);
}

void SweepScatter::setSelectedRows(const std::vector<int>& rows) {
    m_selected = rows;
    QVector<double> x, y;
    for (const Point& p : m_points)
        if (std::find(rows.begin(), rows.end(), p.row) != rows.end()) x << p.x, y << p.y;
    m_selection->setData(x, y);
    replot(rpQueuedReplot);
}

QPointF SweepScatter::pixelOf(int row) const {
    for (const Point& p : m_points)
        if (p.row == row) return {xAxis->coordToPixel(p.x), yAxis->coordToPixel(p.y)};
    return {-1, -1};
}

int SweepScatter::rowAt(const QPointF& pixel) const {
    int best = -1;
    double bestDistance = pickRadiusPx;
    for (const Point& p : m_points) {
        const QPointF at(xAxis->coordToPixel(p.x), yAxis->coordToPixel(p.y));
        const double d = std::hypot(at.x() - pixel.x(), at.y() - pixel.y());
        if (d <= bestDistance) best = p.row, bestDistance = d;
    }
    return best;
}

QString SweepScatter::toolTipAt(const QPointF& pixel) const {
    QStringList lines;
    for (const Point& p : m_points) {
        const QPointF at(xAxis->coordToPixel(p.x), yAxis->coordToPixel(p.y));
        if (std::hypot(at.x() - pixel.x(), at.y() - pixel.y()) > pickRadiusPx) continue;
        lines << tr("%1: %2 %3, %4 %5%6")
                     .arg(p.label, m_x.label, m_x.format ? m_x.format(p.x) : QString::number(p.x), m_y.label,
                          m_y.format ? m_y.format(p.y) : QString::number(p.y),
                          p.front ? tr(" (on the front)") : QString());
    }
    return lines.join(QLatin1Char('\n'));
}

bool SweepScatter::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QCustomPlot::event(event);
}

void SweepScatter::mousePressEvent(QMouseEvent* event) {
    QCustomPlot::mousePressEvent(event);
    if (event->button() != Qt::LeftButton) return;
    const int row = rowAt(event->position());
    if (row >= 0) emit rowClicked(row, event->modifiers() & Qt::ControlModifier);
}

void SweepScatter::setEmptyNote(const QString& note) {
    m_emptyNote->setText(note);
    replot(rpQueuedReplot);
}

QString SweepScatter::emptyNoteShown() const {
    return m_emptyNote->visible() ? m_emptyNote->text() : QString();
}

QStringList SweepScatter::labelTexts() const {
    QStringList out;
    for (const QCPItemText* l : m_labels)
        if (l->visible()) out << l->text();
    return out;
}

void SweepScatter::placeLabels() {
    for (QCPItemText* l : m_labels) l->setVisible(false);
    if (m_points.empty() || m_points.size() > static_cast<std::size_t>(maxLabelledPoints)) return;
    // Points on (nearly) the same pixel share a label, in the table's order.
    std::vector<QPointF> at;
    for (const Point& p : m_points) at.emplace_back(xAxis->coordToPixel(p.x), yAxis->coordToPixel(p.y));
    m_labelGroups.clear();
    std::vector<bool> grouped(m_points.size(), false);
    for (std::size_t i = 0; i < m_points.size(); ++i) {
        if (grouped[i]) continue;
        std::vector<int> group{static_cast<int>(i)};
        for (std::size_t j = i + 1; j < m_points.size(); ++j)
            if (!grouped[j] && std::hypot(at[i].x() - at[j].x(), at[i].y() - at[j].y()) <= samePixelPx) {
                group.push_back(static_cast<int>(j));
                grouped[j] = true;
            }
        m_labelGroups.push_back(std::move(group));
    }
    const QRect plotArea = axisRect()->rect();
    const QFontMetrics fm(m_labels.front()->font());
    std::vector<QRectF> taken;  // the labels placed, the points themselves and the step line's segments
    for (const QPointF& p : at) taken.emplace_back(p.x() - 6, p.y() - 6, 12, 12);
    for (std::size_t i = 1; i < m_frontLine.size(); ++i) {
        const QPointF a(xAxis->coordToPixel(m_frontLine[i - 1].x()), yAxis->coordToPixel(m_frontLine[i - 1].y()));
        const QPointF b(xAxis->coordToPixel(m_frontLine[i].x()), yAxis->coordToPixel(m_frontLine[i].y()));
        taken.push_back(QRectF(a, b).normalized().adjusted(-2, -2, 2, 2));
    }
    for (std::size_t g = 0; g < m_labelGroups.size() && g < m_labels.size(); ++g) {
        QStringList names;
        for (int i : m_labelGroups[g]) names << m_points[static_cast<std::size_t>(i)].label;
        const QString text = names.join(QStringLiteral(", "));
        const QPointF p = at[static_cast<std::size_t>(m_labelGroups[g].front())];
        const double w = fm.horizontalAdvance(text) + 4, h = fm.height();
        // Right of the point, left of it, then above or below, nudged further out until clear.
        std::vector<QRectF> candidates;
        for (double nudge : {0.0, 1.0, 2.0, 3.0}) {
            const double dy = nudge * h;
            candidates.emplace_back(p.x() + 9, p.y() - h / 2 - dy, w, h);
            candidates.emplace_back(p.x() + 9, p.y() - h / 2 + dy, w, h);
            candidates.emplace_back(p.x() - 9 - w, p.y() - h / 2 - dy, w, h);
            candidates.emplace_back(p.x() - 9 - w, p.y() - h / 2 + dy, w, h);
            candidates.emplace_back(p.x() - w / 2, p.y() - 10 - h - dy, w, h);
            candidates.emplace_back(p.x() - w / 2, p.y() + 10 + dy, w, h);
        }
        QRectF chosen = candidates.front();
        bool found = false;
        for (const QRectF& c : candidates) {
            if (!QRectF(plotArea).contains(c)) continue;
            const bool clear =
                std::none_of(taken.begin(), taken.end(), [&](const QRectF& t) { return t.intersects(c); });
            if (clear) {
                chosen = c;
                found = true;
                break;
            }
        }
        if (!found)  // crowded: the first place inside the plot, else right of the point
            for (const QRectF& c : candidates)
                if (QRectF(plotArea).contains(c)) {
                    chosen = c;
                    break;
                }
        taken.push_back(chosen);
        QCPItemText* label = m_labels[g];
        label->setText(text);
        label->position->setCoords(chosen.left() + 2, chosen.center().y());
        label->setVisible(true);
    }
}

}  // namespace mantissa::ui
