// Descriptions of stored values (see describe.h).
#include "numeric/describe.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <string>

namespace mantissa {

std::optional<float> parse_fp32(std::string_view text) {
    const std::string s(text);
    if (s.empty() || std::isspace(static_cast<unsigned char>(s.front())) ||
        std::isspace(static_cast<unsigned char>(s.back())))
        return std::nullopt;
    // strtof rounds to the nearest fp32 directly (no double rounding through double).
    char* end = nullptr;
    errno = 0;
    const float v = std::strtof(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    // "nan(...)" payload syntax and "infinity" are accepted by strtof; so are we.
    return v;
}

std::string exact_decimal(float x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    // glibc prints the exact binary value when asked for enough digits; a float needs at most
    // 112 significant digits (2^-149), and %g drops the trailing zeros.
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.120g", static_cast<double>(x));
    return buf;
}

StoredValue describe_stored(Format format, float input, Overflow overflow) {
    StoredValue s;
    s.format = format;
    s.bits = encode(format, input, overflow);
    s.value = decode(format, s.bits);
    s.cls = classify(format, s.bits);
    s.exact = exact_decimal(s.value);

    const FormatInfo& info = format_info(format);
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%0*x", info.storage_bits / 4, s.bits);
    s.hex = hex;
    auto bit_string = [&](int first, int count) {  // `count` bits starting at bit `first` from the top
        std::string out;
        for (int k = 0; k < count; ++k) out += ((s.bits >> (info.storage_bits - 1 - first - k)) & 1u) ? '1' : '0';
        return out;
    };
    // tf32 shows its 10 real mantissa bits; the 13 zero bits below them are storage, not precision.
    s.sign_bits = bit_string(0, 1);
    s.exponent_bits = bit_string(1, info.exponent_bits);
    s.mantissa_bits = bit_string(1 + info.exponent_bits, info.mantissa_bits);

    const bool input_finite = std::isfinite(input);
    if (input_finite && std::isfinite(s.value)) {
        s.abs_error = std::fabs(static_cast<double>(s.value) - static_cast<double>(input));
        s.rel_error = input == 0 ? 0.0 : s.abs_error / std::fabs(static_cast<double>(input));
    } else if (std::isinf(input) && input == s.value) {
        s.abs_error = s.rel_error = 0;
    } else {
        s.abs_error = s.rel_error = std::nan("");
    }
    // Overflow is a property of the value, whatever the mode made of it (inf, NaN, or saturated).
    s.overflowed = input_finite && !std::isfinite(round_to(format, input, Overflow::to_inf));
    s.flushed_to_zero = input_finite && input != 0 && s.value == 0;
    return s;
}

}  // namespace mantissa
