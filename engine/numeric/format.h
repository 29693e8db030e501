// The number formats Mantissa trains in, and their constants.
//
// Every format is a sign, an exponent field and a mantissa field, decoded like IEEE 754 binary
// formats, with two exceptions: tf32 is stored in 32 bits with the low 13 mantissa bits zero, and
// fp8-e4m3 (OCP FP8 "E4M3FN") has no infinities: its only NaN is S.1111.111, so the top binade
// keeps seven finite values and the largest finite value is 448.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mantissa {

enum class Format : std::uint8_t { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2 };

inline constexpr std::array<Format, 6> all_formats = {Format::fp32, Format::tf32,     Format::fp16,
                                                      Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2};

struct FormatInfo {
    Format format;
    std::string_view name;      // as in experiment files and the CLI: "fp8-e4m3"
    int storage_bits;           // bits one value takes in memory (tf32: 32)
    int exponent_bits;
    int mantissa_bits;          // explicit fraction bits, without the implicit leading one
    int bias;
    int min_exponent;           // unbiased exponent of the smallest normal value: 1 - bias
    int max_exponent;           // unbiased exponent of the largest finite value
    bool has_infinity;
    float max_finite;
    float min_normal;
    float min_subnormal;
    float epsilon;              // distance from 1 to the next larger value: 2^-mantissa_bits
};

const FormatInfo& format_info(Format format);
std::string_view format_name(Format format);

// Accepts the canonical names ("fp8-e4m3") and the common aliases ("e4m3", "float16", "half",
// "bfloat16", "float32", "fp8_e4m3"); case-insensitive. Empty when the name is unknown.
std::optional<Format> parse_format(std::string_view name);

// The list of accepted canonical names, for error messages: "fp32, tf32, fp16, ...".
std::string_view format_names_list();

// Bytes one value of the format takes on a device (fp8: 1, fp16/bf16: 2, tf32/fp32: 4).
inline constexpr int format_bytes(Format f) {
    switch (f) {
    case Format::fp16:
    case Format::bf16: return 2;
    case Format::fp8_e4m3:
    case Format::fp8_e5m2: return 1;
    default: return 4;
    }
}

}  // namespace mantissa
