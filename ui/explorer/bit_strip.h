// The bits of a stored value as rich text, coloured sign | exponent | mantissa, for the format
// explorer's rows and legend. The bit strings come from describe_stored() unchanged; only colour
// and spacing are added here.
#pragma once

#include <QColor>
#include <QString>

#include "numeric/describe.h"

namespace mantissa::ui {

enum class BitField { sign, exponent, mantissa };
QColor bitFieldColor(BitField field);

// "<span ...>0</span> <span ...>01011</span> <span ...>1001100110</span>" in a monospace font.
QString bitStripHtml(const StoredValue& s);
// The same bits as plain text, fields separated by '|': "0|01011|1001100110" (as the CLI prints).
QString bitStripPlain(const StoredValue& s);
// A one-line coloured legend: "sign | exponent | mantissa".
QString bitLegendHtml();

}  // namespace mantissa::ui
