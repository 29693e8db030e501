// Rich-text bit strips (see bit_strip.h). Colours are mid-tone so they read on light and dark
// palettes alike.
#include "explorer/bit_strip.h"

namespace mantissa::ui {

QColor bitFieldColor(BitField field) {
    switch (field) {
        case BitField::sign: return QColor(0xe1, 0x57, 0x59);      // red
        case BitField::exponent: return QColor(0x4e, 0x79, 0xa7);  // blue
        case BitField::mantissa: return QColor(0x59, 0xa1, 0x4f);  // green
    }
    return {};
}

namespace {
QString span(BitField field, const std::string& bits) {
    return QStringLiteral("<span style=\"color:%1; font-weight:600;\">%2</span>")
        .arg(bitFieldColor(field).name(), QString::fromStdString(bits));
}
}  // namespace

QString bitStripHtml(const StoredValue& s) {
    return QStringLiteral("<span style=\"font-family:monospace;\">%1&nbsp;%2&nbsp;%3</span>")
        .arg(span(BitField::sign, s.sign_bits), span(BitField::exponent, s.exponent_bits),
             span(BitField::mantissa, s.mantissa_bits));
}

QString bitStripPlain(const StoredValue& s) {
    return QString::fromStdString(s.sign_bits + "|" + s.exponent_bits + "|" + s.mantissa_bits);
}

QString bitLegendHtml() {
    return QStringLiteral("%1 | %2 | %3")
        .arg(span(BitField::sign, "sign"), span(BitField::exponent, "exponent"), span(BitField::mantissa, "mantissa"));
}

}  // namespace mantissa::ui
