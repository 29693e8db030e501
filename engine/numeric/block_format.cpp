// Quantisation to the block-scaled formats (see block_format.h and docs/numerics.md).
//
// Everything is built on quantise_block()/dequantise_block(), one block at a time, so the array
// calls and describe_block() cannot disagree; the one-pass fake quantisation training runs
// (round_blocks, round_blocks_along) is written for speed in block_round.cpp and held equal to
// them bit for bit by the tests. Scaling by an MX
// scale is exact in FP32 (a power of two, and results that would round are far below half the
// element's smallest subnormal), so an MX element is the spec's RNE of value / 2^e with no double
// rounding. NVFP4 follows the reference recipe's FP32 operations step by step, in its order.
#include "numeric/block_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "error.h"

namespace mantissa {

namespace {

constexpr float fp32_max = std::numeric_limits<float>::max();
constexpr float nvfp4_e4m3_max = 448.0f;  // largest E4M3 value, the block scale's range
constexpr float nvfp4_e2m1_max = 6.0f;    // largest e2m1 value

BlockFormatInfo make(BlockFormat f, std::string_view name, ElementFormat e, int block_size, ScaleKind s) {
    const int element_bits = element_format_info(e).bits;
    return {f, name, e, block_size, s, element_bits + 8.0 / block_size};
}

// Built on first use, after element_format.cpp's table (see there).
const BlockFormatInfo* infos() {
    static const BlockFormatInfo table[] = {
    make(BlockFormat::mxfp8_e4m3, "mxfp8-e4m3", ElementFormat::fp8_e4m3, 32, ScaleKind::e8m0),
    make(BlockFormat::mxfp8_e5m2, "mxfp8-e5m2", ElementFormat::fp8_e5m2, 32, ScaleKind::e8m0),
    make(BlockFormat::mxfp6_e3m2, "mxfp6-e3m2", ElementFormat::fp6_e3m2, 32, ScaleKind::e8m0),
    make(BlockFormat::mxfp6_e2m3, "mxfp6-e2m3", ElementFormat::fp6_e2m3, 32, ScaleKind::e8m0),
    make(BlockFormat::mxfp4, "mxfp4", ElementFormat::fp4_e2m1, 32, ScaleKind::e8m0),
    make(BlockFormat::nvfp4, "nvfp4", ElementFormat::fp4_e2m1, 16, ScaleKind::e4m3_with_tensor_scale),
    };
    return table;
}

constexpr int max_block_size = 32;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_nan_scale(BlockFormat f, std::uint8_t code) {
    if (block_format_info(f).scale == ScaleKind::e8m0) return code == e8m0_nan;
    return (code & 0x7Fu) == e4m3_nan;
}

// Largest finite |x[i]| and whether a NaN or an infinity is present.
float finite_amax(const float* x, std::size_t n, bool& special) {
    float amax = 0;
    special = false;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (!(a <= fp32_max)) special = true;  // NaN or inf
        else if (a > amax) amax = a;
    }
    return amax;
}

}  // namespace

BlockStats& BlockStats::operator+=(const BlockStats& o) {
    blocks += o.blocks;
    values += o.values;
    flushed_to_zero += o.flushed_to_zero;
    saturated += o.saturated;
    nan_blocks += o.nan_blocks;
    return *this;
}

const BlockFormatInfo& block_format_info(BlockFormat format) { return infos()[static_cast<int>(format)]; }

std::string_view block_format_name(BlockFormat format) { return block_format_info(format).name; }

std::optional<BlockFormat> parse_block_format(std::string_view name) {
    const std::string n = lower(name);
    struct Alias { const char* name; BlockFormat format; };
    static const Alias aliases[] = {
        {"mxfp8-e4m3", BlockFormat::mxfp8_e4m3}, {"mxfp8_e4m3", BlockFormat::mxfp8_e4m3}, {"mxfp8", BlockFormat::mxfp8_e4m3},
        {"mxfp8-e5m2", BlockFormat::mxfp8_e5m2}, {"mxfp8_e5m2", BlockFormat::mxfp8_e5m2},
        {"mxfp6-e3m2", BlockFormat::mxfp6_e3m2}, {"mxfp6_e3m2", BlockFormat::mxfp6_e3m2}, {"mxfp6", BlockFormat::mxfp6_e3m2},
        {"mxfp6-e2m3", BlockFormat::mxfp6_e2m3}, {"mxfp6_e2m3", BlockFormat::mxfp6_e2m3},
        {"mxfp4", BlockFormat::mxfp4},           {"mxfp4-e2m1", BlockFormat::mxfp4},        {"mxfp4_e2m1", BlockFormat::mxfp4},
        {"nvfp4", BlockFormat::nvfp4},
    };
    for (const auto& a : aliases)
        if (n == a.name) return a.format;
    return std::nullopt;
}

std::string_view block_format_names_list() { return "mxfp8-e4m3, mxfp8-e5m2, mxfp6-e3m2, mxfp6-e2m3, mxfp4, nvfp4"; }

float nvfp4_tensor_scale(float amax) {
    // The reference recipe's global encode scale: 448 * 6 / amax in FP32, capped at FLT_MAX (a tiny
    // amax), and 1 for an all-zero tensor (and an infinite amax, which cannot reach here).
    if (amax == 0 || !std::isfinite(amax)) return 1.0f;
    const float s = std::min(nvfp4_e4m3_max * nvfp4_e2m1_max / amax, fp32_max);
    return s == 0 ? 1.0f : s;
}

float block_decode_factor(BlockFormat format, std::uint8_t scale_code, float tensor_scale) {
    if (block_format_info(format).scale == ScaleKind::e8m0) return decode_e8m0(scale_code);
    return decode_e4m3_scale(scale_code) * (1.0f / tensor_scale);
}

std::uint8_t block_scale_code(BlockFormat format, float tensor_scale, float amax) {
    if (block_format_info(format).scale == ScaleKind::e8m0) {
        // OCP MX v1.0: shared exponent floor(log2(amax)) - emax_elem, clamped to E8M0's range. An
        // all-zero block takes the smallest scale (log2(0) = -inf clamps to -127).
        const int emax = element_format_info(block_format_info(format).element).emax;
        return encode_e8m0_exponent(amax == 0 ? e8m0_min_exponent : std::ilogb(amax) - emax);
    }
    // NVFP4, the reference recipe's operations in its order, each rounded to FP32.
    const float block_scale = std::min(amax * (tensor_scale * (1.0f / nvfp4_e2m1_max)), fp32_max);
    return encode_e4m3_scale(block_scale);  // rounds to nearest even, saturates at 448
}

std::uint8_t quantise_block(BlockFormat format, float tensor_scale, const float* x, std::size_t count,
                            std::uint8_t* codes, BlockStats* stats) {
    const BlockFormatInfo& info = block_format_info(format);
    const ElementFormatInfo& el = element_format_info(info.element);
    const std::uint32_t magnitude_mask = (1u << (el.bits - 1)) - 1;
    if (count == 0 || count > static_cast<std::size_t>(info.block_size))
        throw Error("A " + std::string(info.name) + " block holds 1 to " + std::to_string(info.block_size) +
                    " values, not " + std::to_string(count) + "; split the array into blocks first.");
    BlockStats s;
    s.blocks = 1;
    s.values = count;

    bool special = false;
    const float amax = finite_amax(x, count, special);
    const bool mx = info.scale == ScaleKind::e8m0;
    if (special) {
        // A NaN or inf has no finite scale: the block's scale is NaN and so is every value in it.
        std::fill(codes, codes + count, std::uint8_t{0});
        s.nan_blocks = 1;
        if (stats) *stats += s;
        return mx ? e8m0_nan : e4m3_nan;
    }

    const std::uint8_t scale_code = block_scale_code(format, tensor_scale, amax);
    if (mx) {
        const int shared = static_cast<int>(scale_code) - e8m0_bias;
        for (std::size_t i = 0; i < count; ++i) {
            const float scaled = std::ldexp(x[i], -shared);  // exact where it matters (see the top)
            if (std::fabs(scaled) > el.max_finite) ++s.saturated;
            codes[i] = encode_element(info.element, scaled, Overflow::saturate);
            if (x[i] != 0 && (codes[i] & magnitude_mask) == 0) ++s.flushed_to_zero;
        }
    } else {
        const float decoded = decode_e4m3_scale(scale_code);
        const float encode_factor = std::min(1.0f / (decoded * (1.0f / tensor_scale)), fp32_max);
        for (std::size_t i = 0; i < count; ++i) {
            const float scaled = x[i] * encode_factor;
            // A block scale that rounded to zero decodes every value as zero, whatever the codes
            // (the reference still writes ±6 there): those values are flushed, not saturated.
            if (decoded != 0 && std::fabs(scaled) > nvfp4_e2m1_max) ++s.saturated;
            codes[i] = encode_element(ElementFormat::fp4_e2m1, scaled, Overflow::saturate);
            if (x[i] != 0 && (decoded == 0 || (codes[i] & magnitude_mask) == 0)) ++s.flushed_to_zero;
        }
    }
    if (stats) *stats += s;
    return scale_code;
}

void dequantise_block(BlockFormat format, float tensor_scale, std::uint8_t scale_code, const std::uint8_t* codes,
                      std::size_t count, float* dst) {
    const ElementFormat element = block_format_info(format).element;
    if (is_nan_scale(format, scale_code)) {
        std::fill(dst, dst + count, std::numeric_limits<float>::quiet_NaN());
        return;
    }
    const float factor = block_decode_factor(format, scale_code, tensor_scale);
    for (std::size_t i = 0; i < count; ++i) dst[i] = decode_element(element, codes[i]) * factor;
}

BlockStats quantise_blocks(BlockFormat format, const float* x, std::size_t n, BlockQuantised& out) {
    const auto B = static_cast<std::size_t>(block_format_info(format).block_size);
    out.format = format;
    out.elements.resize(n);
    out.scales.resize((n + B - 1) / B);
    out.tensor_scale = 1;
    if (format == BlockFormat::nvfp4) {
        bool special = false;
        out.tensor_scale = nvfp4_tensor_scale(finite_amax(x, n, special));
    }
    BlockStats stats;
    for (std::size_t b = 0, first = 0; first < n; ++b, first += B) {
        const std::size_t count = std::min(B, n - first);
        out.scales[b] = quantise_block(format, out.tensor_scale, x + first, count, out.elements.data() + first, &stats);
    }
    return stats;
}

void dequantise_blocks(const BlockQuantised& q, float* dst) {
    const auto B = static_cast<std::size_t>(block_format_info(q.format).block_size);
    const std::size_t n = q.elements.size();
    if (q.scales.size() != (n + B - 1) / B)
        throw Error("A " + std::string(block_format_name(q.format)) + " array of " + std::to_string(n) +
                    " values needs " + std::to_string((n + B - 1) / B) + " block scales but has " +
                    std::to_string(q.scales.size()) + "; quantise it again with quantise_blocks.");
    for (std::size_t b = 0, first = 0; first < n; ++b, first += B)
        dequantise_block(q.format, q.tensor_scale, q.scales[b], q.elements.data() + first, std::min(B, n - first),
                         dst + first);
}

}  // namespace mantissa
