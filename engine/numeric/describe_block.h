// How one block of values shares one scale, described for a person: the code the CLI's
// `format` command and the GUI's format explorer show for the block-scaled formats (see
// docs/numerics.md, "Block-scaled formats"). Built on quantise_block(), so what it shows is exactly
// what quantise_blocks() and round_blocks() store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numeric/block_format.h"

namespace mantissa {

struct DescribedElement {
    float input = 0;               // the fp32 value given
    std::uint8_t code = 0;         // element code, right-aligned (encode_element)
    std::string hex;               // "0x1d"
    std::string sign_bits;         // "0"
    std::string exponent_bits;     // "11"
    std::string mantissa_bits;     // "101"
    float element_value = 0;       // decode_element(code): the value before the scale is applied
    float value = 0;               // the stored value: element_value * the block's decode factor
    double abs_error = 0;          // |value - input|; NaN when either is not finite
    double rel_error = 0;          // abs_error / |input|; 0 for a zero input
    bool saturated = false;        // |input| scaled exceeded the element max and was clamped
    bool flushed_to_zero = false;  // a finite non-zero input is stored as zero
    FloatClass cls = FloatClass::zero;  // of the element code: zero, subnormal or normal (inf, NaN: fp8)
};

struct BlockDescription {
    BlockFormat format = BlockFormat::mxfp8_e4m3;
    int block_size = 0;            // of the format; the description holds elements.size() <= block_size values
    float amax = 0;                // largest finite |input| of the block
    bool nan_block = false;        // a NaN or inf in the block: the scale is NaN, every value NaN

    // The block scale: E8M0 for MX, E4M3 for NVFP4.
    std::uint8_t scale_code = 0;
    std::string scale_hex;         // "0x7a"
    std::string scale_bits;        // all 8 bits: "01111010"
    int scale_exponent = 0;        // E8M0: code - 127. E4M3: floor(log2(scale value)); 0 for a zero or NaN scale
    float scale_value = 0;         // the scale code's value: 2^scale_exponent for E8M0, the E4M3 value for NVFP4

    float tensor_scale = 1;        // NVFP4's FP32 encode scale S (1 for MX)
    float decode_factor = 0;       // what each element is multiplied by: block_decode_factor(); NaN for a NaN block

    std::vector<DescribedElement> elements;
    BlockStats stats;
};

// Describes values[0, n) as one block (1 <= n <= block_size of the format, else mantissa::Error; a
// shorter block behaves as if padded with zeros). For NVFP4 the tensor scale comes from
// tensor_amax when given (the block seen as part of a larger tensor: it must be finite, >= 0 and at
// least the block's amax, else mantissa::Error), otherwise from the block itself (the block seen as
// the whole tensor). MX formats ignore tensor_amax.
BlockDescription describe_block(BlockFormat format, const float* values, std::size_t n,
                                std::optional<float> tensor_amax = std::nullopt);

// One value stored as a bare element, without a block scale (what `mantissa-cli format --to
// fp4-e2m1` shows): encode_element's saturating conversion, so a value beyond ±max, or ±inf, is
// ±max (saturated), and a NaN, which fp6 and fp4 cannot hold, is a zero of its sign
// (flushed_to_zero stays false: nothing finite was lost). fp8 elements are better shown as the
// tensor formats of describe_stored(), which keep their inf and NaN.
DescribedElement describe_element(ElementFormat format, float input);

}  // namespace mantissa
