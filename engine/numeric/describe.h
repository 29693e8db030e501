// How a value is stored in a format, described for a person: the code behind `mantissa-cli format`
// and the GUI's format explorer, so both always say the same thing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "numeric/convert.h"

namespace mantissa {

struct StoredValue {
    Format format = Format::fp32;
    std::uint32_t bits = 0;        // right-aligned, as encode() returns them
    std::string hex;               // "0x2e66" (zero-padded to the storage width)
    std::string sign_bits;         // "0"
    std::string exponent_bits;     // "01011"
    std::string mantissa_bits;     // "1001100110"
    float value = 0;               // the stored value, decoded
    std::string exact;             // the stored value as an exact decimal ("0.0999755859375", "inf", "nan")
    FloatClass cls = FloatClass::zero;
    double abs_error = 0;          // |stored - input|; NaN when either is not finite
    double rel_error = 0;          // abs_error / |input|; 0 for a zero input
    bool overflowed = false;       // a finite input became inf, NaN or (saturating) the largest value
    bool flushed_to_zero = false;  // a non-zero input became zero
};

// Parses decimal ("0.1", "-1e-8"), hex float ("0x1.8p3"), "inf", "-inf", "nan" to the nearest fp32,
// as a program's fp32 tensor would hold it. Empty when the text is not a number.
std::optional<float> parse_fp32(std::string_view text);

StoredValue describe_stored(Format format, float input, Overflow overflow = Overflow::to_inf);

// The exact decimal expansion of a float (every binary float has a finite one), or inf/-inf/nan.
std::string exact_decimal(float x);

}  // namespace mantissa
