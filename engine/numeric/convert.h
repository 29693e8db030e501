// Conversions between fp32 and every format: encoding to bits, decoding, classification, and the
// in-place rounding of float arrays that the CPU backend applies at each rounding point.
//
// Encoding rounds to nearest, ties to even, exactly as CUDA's __float2half_rn,
// __float2bfloat16_rn and __nv_cvt_float_to_fp8 do (tf32 also rounds to nearest even, which is
// what cuBLAS's TF32 conversion of fp32 inputs models). A value whose rounded magnitude exceeds the
// largest finite value overflows: to infinity for fp16, bf16 and e5m2, to NaN for e4m3 (which has
// no infinity), or to the largest finite value when Overflow::saturate is asked for (the scaled
// FP8 paths). NaN stays NaN (a canonical quiet NaN; payloads are not kept). Subnormals of the
// target are produced, never flushed; fp32 subnormal inputs are honoured.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numeric/format.h"

namespace mantissa {

enum class Overflow : std::uint8_t { to_inf, saturate };  // to_inf: inf, or NaN for e4m3

enum class FloatClass : std::uint8_t { zero, subnormal, normal, inf, nan };
const char* float_class_name(FloatClass c);  // "zero", "subnormal", ...

// Bits of `x` in `format`, right-aligned (fp16: 16 bits, fp8: 8 bits, tf32/fp32: 32 bits).
std::uint32_t encode(Format format, float x, Overflow overflow = Overflow::to_inf);

// The value that `bits` (right-aligned, as from encode) hold in `format`, exactly, as fp32.
float decode(Format format, std::uint32_t bits);

FloatClass classify(Format format, std::uint32_t bits);

// decode(encode(x)): the value a tensor of this format holds after storing x.
float round_to(Format format, float x, Overflow overflow = Overflow::to_inf);

// Rounds every element of data[0..n) to `format` in place: the CPU backend's hot path.
// Vectorised (F16C/AVX2 where the CPU has them, chosen at run time); bit-identical to round_to.
void round_array(Format format, float* data, std::size_t n, Overflow overflow = Overflow::to_inf);

// dst[i] = round_to(format, src[i]) for i in [0, n): the copy and the rounding in one pass, bit for
// bit what a copy followed by the in-place form gives. src == dst is the in-place form; otherwise
// the arrays must not overlap. fp32 is a plain copy.
void round_array(Format format, const float* src, float* dst, std::size_t n,
                 Overflow overflow = Overflow::to_inf);

// dst[i] = round_to(format, src[i] * scale, overflow), the product taken in FP32, in one pass (FP8
// quantisation with a per-tensor scale; with scale 1, a cast that measures what it reads: the
// what-if statistics' amaxes); returns amax = max |src[i]| (the unscaled input; NaN
// when src holds a NaN, as the order of bit patterns puts it above inf). The arrays must not
// overlap. Bit for bit a multiply pass followed by round_array.
float scale_round_array(Format format, const float* src, float* dst, std::size_t n, float scale,
                        Overflow overflow = Overflow::to_inf);

}  // namespace mantissa
