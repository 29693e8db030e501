// FormatNumberLine: one format's range on a log2 scale of |x|, painted: the subnormal stretch
// (lighter) from the smallest subnormal to the smallest normal value, the normal stretch up to the
// largest finite value, each bound labelled, and a marker where |x| falls. A value outside the
// drawn span (or zero, or infinite) becomes an arrow at that end; NaN has no place and says so.
//
// The bounds come from format_info(); the marker's colour from the class describe_stored() gave
// (normal, subnormal, flushed or overflowed), so the line never disagrees with the row beside it.
// GUI thread only.
#pragma once

#include <QWidget>

#include "numeric/describe.h"

namespace mantissa::ui {

class FormatNumberLine : public QWidget {
    Q_OBJECT
public:
    enum class Placement { inside, belowRange, aboveRange, zero, infinite, notANumber };

    explicit FormatNumberLine(Format format, QWidget* parent = nullptr);

    // The input value (as fp32) and how this format stored it.
    void setValue(float input, const StoredValue& stored);

    Format format() const { return m_format; }
    Placement placement() const { return m_placement; }
    // The drawn span, in log2 |x| (a margin beyond the smallest subnormal and the largest finite value).
    double spanLow() const { return m_lo; }
    double spanHigh() const { return m_hi; }
    // log2 |input| (NaN for zero, inf and NaN inputs).
    double valueLog2() const { return m_log2; }

    QSize sizeHint() const override { return {280, 46}; }
    QSize minimumSizeHint() const override { return {160, 46}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    double xFor(double log2_value, double left, double right) const;

    Format m_format;
    double m_lo = 0, m_hi = 1;
    double m_log2 = 0;
    float m_input = 0;
    StoredValue m_stored;
    Placement m_placement = Placement::zero;
};

// The label a number line puts under a bound: "2^-24" for powers of two, else 3 digits ("65504", "3.4e+38").
QString boundLabel(float value);

}  // namespace mantissa::ui
