// The constants of each format, derived once from its field widths so the table cannot disagree
// with itself; tests check them against the published values (65504, 448, 57344, ...).
#include "numeric/format.h"

#include <cctype>
#include <cmath>
#include <string>

namespace mantissa {

namespace {

FormatInfo make_info(Format f, std::string_view name, int storage_bits, int exponent_bits, int mantissa_bits,
                     bool has_infinity, bool e4m3_nan_only) {
    FormatInfo i{};
    i.format = f;
    i.name = name;
    i.storage_bits = storage_bits;
    i.exponent_bits = exponent_bits;
    i.mantissa_bits = mantissa_bits;
    i.bias = (1 << (exponent_bits - 1)) - 1;
    i.min_exponent = 1 - i.bias;
    i.has_infinity = has_infinity;
    // IEEE-like formats reserve the all-ones exponent for inf/NaN. E4M3FN keeps that binade finite
    // except its all-ones mantissa, which is the NaN.
    const int top_field = (1 << exponent_bits) - 1;
    double max_significand;
    if (e4m3_nan_only) {
        i.max_exponent = top_field - i.bias;
        max_significand = 2.0 - 2.0 * std::ldexp(1.0, -mantissa_bits);  // 1.110b
    } else {
        i.max_exponent = top_field - 1 - i.bias;
        max_significand = 2.0 - std::ldexp(1.0, -mantissa_bits);        // 1.111b
    }
    i.max_finite = static_cast<float>(std::ldexp(max_significand, i.max_exponent));
    i.min_normal = static_cast<float>(std::ldexp(1.0, i.min_exponent));
    i.min_subnormal = static_cast<float>(std::ldexp(1.0, i.min_exponent - mantissa_bits));
    i.epsilon = static_cast<float>(std::ldexp(1.0, -mantissa_bits));
    return i;
}

const FormatInfo infos[] = {
    make_info(Format::fp32, "fp32", 32, 8, 23, true, false),
    make_info(Format::tf32, "tf32", 32, 8, 10, true, false),
    make_info(Format::fp16, "fp16", 16, 5, 10, true, false),
    make_info(Format::bf16, "bf16", 16, 8, 7, true, false),
    make_info(Format::fp8_e4m3, "fp8-e4m3", 8, 4, 3, false, true),
    make_info(Format::fp8_e5m2, "fp8-e5m2", 8, 5, 2, true, false),
};

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

const FormatInfo& format_info(Format format) { return infos[static_cast<int>(format)]; }

std::string_view format_name(Format format) { return format_info(format).name; }

std::optional<Format> parse_format(std::string_view name) {
    const std::string n = lower(name);
    struct Alias { const char* name; Format format; };
    static const Alias aliases[] = {
        {"fp32", Format::fp32},         {"float32", Format::fp32},     {"float", Format::fp32},
        {"tf32", Format::tf32},         {"tensorfloat32", Format::tf32},
        {"fp16", Format::fp16},         {"float16", Format::fp16},     {"half", Format::fp16},
        {"bf16", Format::bf16},         {"bfloat16", Format::bf16},
        {"fp8-e4m3", Format::fp8_e4m3}, {"fp8_e4m3", Format::fp8_e4m3}, {"e4m3", Format::fp8_e4m3},
        {"fp8-e5m2", Format::fp8_e5m2}, {"fp8_e5m2", Format::fp8_e5m2}, {"e5m2", Format::fp8_e5m2},
    };
    for (const auto& a : aliases)
        if (n == a.name) return a.format;
    return std::nullopt;
}

std::string_view format_names_list() { return "fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2"; }

}  // namespace mantissa
