// Descriptions of one block of a block-scaled format (see describe_block.h).
#include "numeric/describe_block.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "error.h"

namespace mantissa {

namespace {

std::string hex_byte(std::uint8_t code) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(code));
    return buf;
}

// `count` bits of `code` starting `first` bits below bit `top` (the highest bit of the field).
std::string bit_string(std::uint32_t code, int top, int first, int count) {
    std::string out;
    for (int k = 0; k < count; ++k) out += ((code >> (top - first - k)) & 1u) ? '1' : '0';
    return out;
}

// The fields of an element code: bits, value, class.
void describe_code(DescribedElement& e, ElementFormat format, std::uint8_t code) {
    const ElementFormatInfo& el = element_format_info(format);
    const int top = el.bits - 1;
    e.code = code;
    e.hex = hex_byte(code);
    e.sign_bits = bit_string(code, top, 0, 1);
    e.exponent_bits = bit_string(code, top, 1, el.exponent_bits);
    e.mantissa_bits = bit_string(code, top, 1 + el.exponent_bits, el.mantissa_bits);
    e.element_value = decode_element(format, code);
    const float magnitude = std::fabs(e.element_value);
    e.cls = std::isnan(magnitude)   ? FloatClass::nan
            : std::isinf(magnitude) ? FloatClass::inf
            : magnitude == 0        ? FloatClass::zero
            : magnitude < el.min_normal ? FloatClass::subnormal
                                        : FloatClass::normal;
}

void set_errors(DescribedElement& e) {
    if (std::isfinite(e.input) && std::isfinite(e.value)) {
        e.abs_error = std::fabs(static_cast<double>(e.value) - static_cast<double>(e.input));
        e.rel_error = e.input == 0 ? 0.0 : e.abs_error / std::fabs(static_cast<double>(e.input));
    } else {
        e.abs_error = e.rel_error = std::nan("");
    }
}

}  // namespace

DescribedElement describe_element(ElementFormat format, float input) {
    const ElementFormatInfo& el = element_format_info(format);
    DescribedElement e;
    e.input = input;
    describe_code(e, format, encode_element(format, input, Overflow::saturate));
    e.value = e.element_value;
    set_errors(e);
    e.saturated = std::isinf(input) || (std::isfinite(input) && std::fabs(input) > el.max_finite);
    e.flushed_to_zero = std::isfinite(input) && input != 0 && e.value == 0;
    return e;
}

BlockDescription describe_block(BlockFormat format, const float* values, std::size_t n,
                                std::optional<float> tensor_amax) {
    const BlockFormatInfo& info = block_format_info(format);
    const ElementFormatInfo& el = element_format_info(info.element);
    const std::string name(info.name);
    if (n == 0 || n > static_cast<std::size_t>(info.block_size))
        throw Error("A " + name + " block holds 1 to " + std::to_string(info.block_size) + " values, not " +
                    std::to_string(n) + "; give at most one block's values.");

    BlockDescription d;
    d.format = format;
    d.block_size = info.block_size;
    for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(values[i])) d.amax = std::max(d.amax, std::fabs(values[i]));

    if (format == BlockFormat::nvfp4) {
        float amax = d.amax;
        if (tensor_amax) {
            if (!(std::isfinite(*tensor_amax) && *tensor_amax >= d.amax))
                throw Error("The tensor amax given for an nvfp4 block must be a finite number at least the "
                            "block's own largest magnitude (" + std::to_string(d.amax) + "), not " +
                            std::to_string(*tensor_amax) + ".");
            amax = *tensor_amax;
        }
        d.tensor_scale = nvfp4_tensor_scale(amax);
    }

    std::vector<std::uint8_t> codes(n);
    d.scale_code = quantise_block(format, d.tensor_scale, values, n, codes.data(), &d.stats);
    d.nan_block = d.stats.nan_blocks != 0;
    d.scale_hex = hex_byte(d.scale_code);
    d.scale_bits = bit_string(d.scale_code, 7, 0, 8);
    if (info.scale == ScaleKind::e8m0) {
        d.scale_value = decode_e8m0(d.scale_code);
        d.scale_exponent = d.nan_block ? 0 : static_cast<int>(d.scale_code) - e8m0_bias;
    } else {
        d.scale_value = decode_e4m3_scale(d.scale_code);
        d.scale_exponent = (d.scale_value > 0 && std::isfinite(d.scale_value)) ? std::ilogb(d.scale_value) : 0;
    }
    d.decode_factor = d.nan_block ? std::numeric_limits<float>::quiet_NaN()
                                  : block_decode_factor(format, d.scale_code, d.tensor_scale);

    std::vector<float> decoded(n);
    dequantise_block(format, d.tensor_scale, d.scale_code, codes.data(), n, decoded.data());
    d.elements.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        DescribedElement e;
        e.input = values[i];
        describe_code(e, info.element, codes[i]);
        e.value = decoded[i];
        set_errors(e);
        // The per-value tests quantise_block counts, with its own scaling of the input.
        if (!d.nan_block) {
            float scaled;
            if (info.scale == ScaleKind::e8m0) {
                scaled = std::ldexp(e.input, e8m0_bias - static_cast<int>(d.scale_code));
            } else {
                const float encode_factor = std::min(1.0f / d.decode_factor, std::numeric_limits<float>::max());
                scaled = e.input * encode_factor;
            }
            e.saturated = d.decode_factor != 0 && std::fabs(scaled) > el.max_finite;
            e.flushed_to_zero = e.input != 0 && e.value == 0;
        }
        d.elements.push_back(std::move(e));
    }
    return d;
}

}  // namespace mantissa
