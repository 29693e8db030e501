// Scalar conversions: the definition of every format's rounding. round_array's vector kernels are
// tested bit for bit against these.
//
// encode() works on the exact value of the fp32 input, |x| = mant * 2^exp with an integer mant,
// so there is no double rounding: it picks the quantum of the target binade (or of the subnormal
// range), rounds mant to it with ties to even on integers, and only then checks for overflow, which
// reproduces the published thresholds (65504 + 16, 448 + 16 stays 448, 57344 + 4096).
#include "numeric/convert.h"

#include <bit>
#include <cmath>
#include <limits>

namespace mantissa {

namespace {

// Field layout of the bits that encode() returns. tf32 keeps fp32's layout: its 10 mantissa bits
// sit at the top of fp32's 23, the low 13 bits are zero.
struct Layout {
    int exponent_bits;
    int mantissa_bits;   // of the format
    int mantissa_shift;  // where the mantissa field starts (tf32: 13)
    int sign_shift;
    bool e4m3;           // no infinity; S.1111.111 is the only NaN
};

Layout layout_of(Format f) {
    const FormatInfo& i = format_info(f);
    if (f == Format::tf32) return {8, 10, 13, 31, false};
    return {i.exponent_bits, i.mantissa_bits, 0, i.storage_bits - 1, f == Format::fp8_e4m3};
}

std::uint32_t exponent_mask(const Layout& l) { return (1u << l.exponent_bits) - 1; }

std::uint32_t pack(const Layout& l, std::uint32_t sign, std::uint32_t exponent, std::uint32_t mantissa) {
    return (sign << l.sign_shift) | (exponent << (l.mantissa_bits + l.mantissa_shift)) |
           (mantissa << l.mantissa_shift);
}

std::uint32_t nan_bits(Format f, std::uint32_t sign) {
    switch (f) {
    case Format::fp16: return 0x7fffu;  // as __float2half_rn
    case Format::bf16: return 0x7fffu;  // as __float2bfloat16_rn
    case Format::tf32: return 0x7fffe000u;
    case Format::fp8_e4m3: return (sign << 7) | 0x7fu;  // as __nv_cvt_float_to_fp8
    case Format::fp8_e5m2: return (sign << 7) | 0x7eu;
    case Format::fp32: break;
    }
    return 0x7fc00000u;
}

std::uint32_t max_finite_bits(Format f, const Layout& l, std::uint32_t sign) {
    const std::uint32_t top = exponent_mask(l);
    const std::uint32_t all_ones = (1u << l.mantissa_bits) - 1;
    if (l.e4m3) return pack(l, sign, top, all_ones - 1);
    (void)f;
    return pack(l, sign, top - 1, all_ones);
}

std::uint32_t overflow_bits(Format f, const Layout& l, std::uint32_t sign, Overflow overflow) {
    if (overflow == Overflow::saturate) return max_finite_bits(f, l, sign);
    if (l.e4m3) return nan_bits(f, sign);
    return pack(l, sign, exponent_mask(l), 0);  // infinity
}

}  // namespace

const char* float_class_name(FloatClass c) {
    switch (c) {
    case FloatClass::zero: return "zero";
    case FloatClass::subnormal: return "subnormal";
    case FloatClass::normal: return "normal";
    case FloatClass::inf: return "inf";
    case FloatClass::nan: return "nan";
    }
    return "nan";
}

std::uint32_t encode(Format format, float x, Overflow overflow) {
    const std::uint32_t xb = std::bit_cast<std::uint32_t>(x);
    if (format == Format::fp32) return xb;
    const FormatInfo& info = format_info(format);
    const Layout l = layout_of(format);
    const std::uint32_t sign = xb >> 31;
    const std::uint32_t abs = xb & 0x7fffffffu;

    if (abs > 0x7f800000u) return nan_bits(format, sign);
    if (abs == 0x7f800000u) return overflow_bits(format, l, sign, overflow);
    if (abs == 0) return pack(l, sign, 0, 0);

    // |x| = mant * 2^exp exactly, mant < 2^24.
    const std::uint32_t field = abs >> 23;
    const std::uint64_t mant = field == 0 ? (abs & 0x7fffffu) : ((abs & 0x7fffffu) | 0x800000u);
    const int exp = field == 0 ? -149 : static_cast<int>(field) - 150;
    const int floor_log2 = exp + (63 - std::countl_zero(mant));
    const int M = l.mantissa_bits;
    // The target's quantum where |x| lies: its binade's ulp, or the subnormal spacing below min normal.
    int quantum_exp = std::max(floor_log2, info.min_exponent) - M;
    const int shift = quantum_exp - exp;

    std::uint64_t q;  // |x| rounded, in units of 2^quantum_exp
    if (shift <= 0) {
        q = mant << -shift;  // already a multiple of the quantum (< 2^(M+1))
    } else if (shift > 25) {
        q = 0;  // below a quarter quantum
    } else {
        q = mant >> shift;
        const std::uint64_t rem = mant & ((std::uint64_t{1} << shift) - 1);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
    }
    if (q == 0) return pack(l, sign, 0, 0);
    if (q >> (M + 1)) {  // rounding carried into the next binade
        q >>= 1;
        ++quantum_exp;
    }
    if (q < (std::uint64_t{1} << M)) return pack(l, sign, 0, static_cast<std::uint32_t>(q));  // subnormal

    const int e = quantum_exp + M;
    const std::uint32_t mantissa = static_cast<std::uint32_t>(q - (std::uint64_t{1} << M));
    const std::uint32_t max_mantissa = l.e4m3 ? (1u << M) - 2 : (1u << M) - 1;
    if (e > info.max_exponent || (e == info.max_exponent && mantissa > max_mantissa))
        return overflow_bits(format, l, sign, overflow);
    return pack(l, sign, static_cast<std::uint32_t>(e + info.bias), mantissa);
}

FloatClass classify(Format format, std::uint32_t bits) {
    const Layout l = format == Format::fp32 ? Layout{8, 23, 0, 31, false} : layout_of(format);
    const std::uint32_t e = (bits >> (l.mantissa_bits + l.mantissa_shift)) & exponent_mask(l);
    const std::uint32_t m = (bits >> l.mantissa_shift) & ((1u << l.mantissa_bits) - 1);
    const std::uint32_t all_ones = (1u << l.mantissa_bits) - 1;
    if (e == exponent_mask(l)) {
        if (l.e4m3) {
            if (m == all_ones) return FloatClass::nan;
        } else {
            return m == 0 ? FloatClass::inf : FloatClass::nan;
        }
    }
    if (e == 0) return m == 0 ? FloatClass::zero : FloatClass::subnormal;
    return FloatClass::normal;
}

float decode(Format format, std::uint32_t bits) {
    if (format == Format::fp32 || format == Format::tf32) return std::bit_cast<float>(bits);
    const FormatInfo& info = format_info(format);
    const Layout l = layout_of(format);
    const bool negative = (bits >> l.sign_shift) & 1u;
    const std::uint32_t e = (bits >> l.mantissa_bits) & exponent_mask(l);
    const std::uint32_t m = bits & ((1u << l.mantissa_bits) - 1);
    float v = 0.0f;
    switch (classify(format, bits)) {
    case FloatClass::nan:
        // A quiet NaN carrying the format's mantissa at the top of fp32's, as a widening cast does.
        return std::bit_cast<float>((negative ? 0x80000000u : 0u) | 0x7fc00000u |
                                    (m << (23 - l.mantissa_bits)));
    case FloatClass::inf: v = std::numeric_limits<float>::infinity(); break;
    case FloatClass::zero: v = 0.0f; break;
    case FloatClass::subnormal: v = std::ldexp(static_cast<float>(m), info.min_exponent - l.mantissa_bits); break;
    case FloatClass::normal:
        v = std::ldexp(static_cast<float>(m | (1u << l.mantissa_bits)),
                       static_cast<int>(e) - info.bias - l.mantissa_bits);
        break;
    }
    return negative ? -v : v;
}

float round_to(Format format, float x, Overflow overflow) {
    if (format == Format::fp32) return x;
    return decode(format, encode(format, x, overflow));
}

}  // namespace mantissa
