// Element and scale formats of the block-scaled formats (see element_format.h).
//
// fp8 elements go through convert.h, so an MXFP8 element and an fp8 tensor value can never round
// differently. fp6/fp4 are encoded here from the exact value of the fp32 input: |x| is scaled by a
// power of two onto the target's quantum in double (exact: 24 significant bits), rounded to an
// integer with ties to even, and only then checked against the largest code; so no value is
// rounded twice.
#include "numeric/element_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace mantissa {

namespace {

ElementFormatInfo make_small(ElementFormat f, std::string_view name, int exponent_bits, int mantissa_bits) {
    // OCP MX v1.0 fp6/fp4: IEEE-like fields, but no code is reserved for inf or NaN, so the top
    // exponent field holds finite values too.
    ElementFormatInfo i{};
    i.format = f;
    i.name = name;
    i.bits = 1 + exponent_bits + mantissa_bits;
    i.exponent_bits = exponent_bits;
    i.mantissa_bits = mantissa_bits;
    i.bias = (1 << (exponent_bits - 1)) - 1;
    i.emax = (1 << exponent_bits) - 1 - i.bias;
    i.max_finite = static_cast<float>(std::ldexp(2.0 - std::ldexp(1.0, -mantissa_bits), i.emax));
    i.min_normal = static_cast<float>(std::ldexp(1.0, 1 - i.bias));
    i.min_subnormal = static_cast<float>(std::ldexp(1.0, 1 - i.bias - mantissa_bits));
    i.has_inf = false;
    i.has_nan = false;
    return i;
}

ElementFormatInfo make_fp8(ElementFormat f, Format tensor_format) {
    const FormatInfo& t = format_info(tensor_format);
    ElementFormatInfo i{};
    i.format = f;
    i.name = t.name;
    i.bits = t.storage_bits;
    i.exponent_bits = t.exponent_bits;
    i.mantissa_bits = t.mantissa_bits;
    i.bias = t.bias;
    i.emax = t.max_exponent;
    i.max_finite = t.max_finite;
    i.min_normal = t.min_normal;
    i.min_subnormal = t.min_subnormal;
    i.has_inf = t.has_infinity;
    i.has_nan = true;
    return i;
}

// Built on first use: the fp8 rows read format.cpp's table, whose own static initialisation may
// come later than this file's.
const ElementFormatInfo* infos() {
    static const ElementFormatInfo table[] = {
        make_fp8(ElementFormat::fp8_e4m3, Format::fp8_e4m3),
        make_fp8(ElementFormat::fp8_e5m2, Format::fp8_e5m2),
        make_small(ElementFormat::fp6_e3m2, "fp6-e3m2", 3, 2),
        make_small(ElementFormat::fp6_e2m3, "fp6-e2m3", 2, 3),
        make_small(ElementFormat::fp4_e2m1, "fp4-e2m1", 2, 1),
    };
    return table;
}

std::uint8_t encode_small(const ElementFormatInfo& i, float x) {
    const int M = i.mantissa_bits;
    const std::uint32_t sign = std::signbit(x) ? (1u << (i.bits - 1)) : 0u;
    const std::uint32_t max_code = (1u << (i.bits - 1)) - 1;  // all magnitude bits set: max_finite
    if (std::isnan(x)) return static_cast<std::uint8_t>(sign);
    const float a = std::fabs(x);
    if (a == 0) return static_cast<std::uint8_t>(sign);
    if (!(a < i.max_finite)) return static_cast<std::uint8_t>(sign | max_code);  // saturate, inf too

    // The quantum of |x|'s binade in the target (or of the subnormal range below min_normal).
    int quantum_exp = std::max(std::ilogb(a), 1 - i.bias) - M;
    const double scaled = std::ldexp(static_cast<double>(a), -quantum_exp);  // exact
    double q = std::floor(scaled);
    const double rest = scaled - q;  // exact
    if (rest > 0.5 || (rest == 0.5 && std::fmod(q, 2.0) != 0)) q += 1;
    auto n = static_cast<std::uint32_t>(q);
    if (n == 0) return static_cast<std::uint8_t>(sign);
    if (n >> (M + 1)) {  // rounding carried into the next binade
        n >>= 1;
        ++quantum_exp;
    }
    if (n < (1u << M)) return static_cast<std::uint8_t>(sign | n);  // subnormal
    const int e = quantum_exp + M;
    if (e > i.emax) return static_cast<std::uint8_t>(sign | max_code);
    const std::uint32_t field = static_cast<std::uint32_t>(e + i.bias);
    return static_cast<std::uint8_t>(sign | (field << M) | (n - (1u << M)));
}

float decode_small(const ElementFormatInfo& i, std::uint8_t code) {
    const int M = i.mantissa_bits;
    const bool negative = (code >> (i.bits - 1)) & 1u;
    const std::uint32_t e = (code >> M) & ((1u << i.exponent_bits) - 1);
    const std::uint32_t m = code & ((1u << M) - 1);
    const float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - i.bias - M)
                           : std::ldexp(static_cast<float>(m | (1u << M)), static_cast<int>(e) - i.bias - M);
    return negative ? -v : v;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

const ElementFormatInfo& element_format_info(ElementFormat format) { return infos()[static_cast<int>(format)]; }

std::string_view element_format_name(ElementFormat format) { return element_format_info(format).name; }

std::optional<ElementFormat> parse_element_format(std::string_view name) {
    const std::string n = lower(name);
    struct Alias { const char* name; ElementFormat format; };
    static const Alias aliases[] = {
        {"fp8-e4m3", ElementFormat::fp8_e4m3}, {"fp8_e4m3", ElementFormat::fp8_e4m3}, {"e4m3", ElementFormat::fp8_e4m3},
        {"fp8-e5m2", ElementFormat::fp8_e5m2}, {"fp8_e5m2", ElementFormat::fp8_e5m2}, {"e5m2", ElementFormat::fp8_e5m2},
        {"fp6-e3m2", ElementFormat::fp6_e3m2}, {"fp6_e3m2", ElementFormat::fp6_e3m2}, {"e3m2", ElementFormat::fp6_e3m2},
        {"fp6-e2m3", ElementFormat::fp6_e2m3}, {"fp6_e2m3", ElementFormat::fp6_e2m3}, {"e2m3", ElementFormat::fp6_e2m3},
        {"fp4-e2m1", ElementFormat::fp4_e2m1}, {"fp4_e2m1", ElementFormat::fp4_e2m1}, {"e2m1", ElementFormat::fp4_e2m1},
        {"fp4", ElementFormat::fp4_e2m1},
    };
    for (const auto& a : aliases)
        if (n == a.name) return a.format;
    return std::nullopt;
}

std::string_view element_format_names_list() { return "fp8-e4m3, fp8-e5m2, fp6-e3m2, fp6-e2m3, fp4-e2m1"; }

std::optional<Format> element_as_format(ElementFormat format) {
    switch (format) {
    case ElementFormat::fp8_e4m3: return Format::fp8_e4m3;
    case ElementFormat::fp8_e5m2: return Format::fp8_e5m2;
    default: return std::nullopt;
    }
}

std::uint8_t encode_element(ElementFormat format, float x, Overflow overflow) {
    if (const auto f = element_as_format(format)) return static_cast<std::uint8_t>(encode(*f, x, overflow));
    return encode_small(element_format_info(format), x);
}

float decode_element(ElementFormat format, std::uint8_t code) {
    if (const auto f = element_as_format(format)) return decode(*f, code);
    const ElementFormatInfo& i = element_format_info(format);
    return decode_small(i, static_cast<std::uint8_t>(code & ((1u << i.bits) - 1)));
}

float decode_e8m0(std::uint8_t code) {
    if (code == e8m0_nan) return std::nanf("");
    return std::ldexp(1.0f, static_cast<int>(code) - e8m0_bias);
}

std::uint8_t encode_e8m0_exponent(int exponent) {
    const int e = std::clamp(exponent, e8m0_min_exponent, e8m0_max_exponent);
    return static_cast<std::uint8_t>(e + e8m0_bias);
}

std::uint8_t encode_e4m3_scale(float x) {
    return static_cast<std::uint8_t>(encode(Format::fp8_e4m3, x, Overflow::saturate));
}

float decode_e4m3_scale(std::uint8_t code) { return decode(Format::fp8_e4m3, code); }

}  // namespace mantissa
