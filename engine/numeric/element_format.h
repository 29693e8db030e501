// The element formats of the block-scaled formats (OCP Microscaling "MX" v1.0 and NVIDIA's NVFP4),
// and their scale formats, E8M0 and E4M3. See docs/numerics.md, "Block-scaled formats".
//
// This is a separate, small enum rather than new members of `Format`: a block-scaled tensor is not
// a plain tensor of its element format (every value needs its block's scale to mean anything), and
// the rest of the engine switches on `Format`. The two fp8 element formats are the same as the
// tensor formats fp8-e4m3 and fp8-e5m2, and their conversions are convert.h's, bit for bit.
//
// fp6-e3m2, fp6-e2m3 and fp4-e2m1 have no infinity and no NaN: every code is a finite number. So
// encode_element() for them always saturates an overflow to ±max_finite (the spec's clamping of
// scaled elements; the Overflow argument only matters for the fp8 formats), maps ±inf to ±max, and
// maps NaN to the zero of the NaN's sign: a NaN has no code. The block quantisers never pass a NaN
// or an infinity to an element: such a block's scale is NaN instead (see block_format.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "numeric/convert.h"

namespace mantissa {

enum class ElementFormat : std::uint8_t { fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1 };

inline constexpr std::array<ElementFormat, 5> all_element_formats = {
    ElementFormat::fp8_e4m3, ElementFormat::fp8_e5m2, ElementFormat::fp6_e3m2, ElementFormat::fp6_e2m3,
    ElementFormat::fp4_e2m1};

struct ElementFormatInfo {
    ElementFormat format;
    std::string_view name;  // as in experiment files and the CLI: "fp4-e2m1"
    int bits;               // bits of one code: sign + exponent + mantissa (8, 6 or 4)
    int exponent_bits;
    int mantissa_bits;      // explicit fraction bits, without the implicit leading one
    int bias;
    int emax;               // unbiased exponent of the largest normal value (the spec's emax_elem)
    float max_finite;       // 448, 57344, 28, 7.5, 6
    float min_normal;       // 2^(1 - bias)
    float min_subnormal;    // 2^(1 - bias - mantissa_bits)
    bool has_inf;           // only fp8-e5m2
    bool has_nan;           // fp8-e4m3 (S.1111.111) and fp8-e5m2; not fp6 nor fp4
};

const ElementFormatInfo& element_format_info(ElementFormat format);
std::string_view element_format_name(ElementFormat format);

// Accepts the canonical names ("fp6-e3m2") and the forms with an underscore ("fp6_e3m2"), plus
// "e2m1"/"fp4"; case-insensitive. Empty when the name is unknown.
std::optional<ElementFormat> parse_element_format(std::string_view name);
std::string_view element_format_names_list();  // "fp8-e4m3, fp8-e5m2, ..." for error messages

// The tensor format with the same encoding (fp8 elements only).
std::optional<Format> element_as_format(ElementFormat format);

// The code of x, right-aligned in the low `bits` bits (sign at bit bits-1), rounded to nearest with
// ties to even, subnormals produced and never flushed. fp8: exactly convert.h's encode(). fp6/fp4:
// overflow (and ±inf) always saturates to ±max_finite; NaN gives the signed zero (see above).
std::uint8_t encode_element(ElementFormat format, float x, Overflow overflow = Overflow::saturate);

// The exact value of a code (only its low `bits` bits are read). NaN for the fp8 NaN codes.
float decode_element(ElementFormat format, std::uint8_t code);

// ---- scale formats

// E8M0, the MX shared scale: an unsigned power of two 2^(code - 127) for codes 0..254 (2^-127 to
// 2^127; no zero, no sign), and 0xFF is NaN. 2^-127 is an fp32 subnormal, decoded exactly.
inline constexpr std::uint8_t e8m0_nan = 0xFF;
inline constexpr int e8m0_bias = 127;
inline constexpr int e8m0_min_exponent = -127;
inline constexpr int e8m0_max_exponent = 127;
float decode_e8m0(std::uint8_t code);

// The E8M0 code of 2^exponent, the exponent clamped to [-127, 127].
std::uint8_t encode_e8m0_exponent(int exponent);

// E4M3, NVFP4's block scale: convert.h's fp8-e4m3 (OCP E4M3FN) conversions, rounding to nearest even
// and saturating at 448; 0x7F/0xFF are NaN.
inline constexpr std::uint8_t e4m3_nan = 0x7F;
std::uint8_t encode_e4m3_scale(float x);  // saturating
float decode_e4m3_scale(std::uint8_t code);

}  // namespace mantissa
