// Conversions between FP32 and each storage format, on the device, bit-identical to the CPU's
// definition (mantissa::encode / decode / round_to in numeric/convert.h):
//   fp16  __float2half_rn        bf16  __float2bfloat16_rn
//   fp8   __nv_cvt_float_to_fp8  (saturating: __NV_SATFINITE, the scaled FP8 paths)
//   tf32  round to nearest even on the FP32 bit pattern (10 mantissa bits kept, stored in 32 bits)
// The intrinsics round to nearest even and overflow as the CPU does (inf; NaN for e4m3). Where
// CUDA's NaN encodings differ from the CPU's conventions (the fp8 NaN's sign, e5m2's NaN pattern,
// the payload FP32 gets when a NaN is widened), NaN is handled here explicitly, so a tensor holds
// the same bits on both backends.
//
// Everything here is __host__ __device__: tests/engine/cuda_host checks these exact functions on
// the CPU against numeric/convert.h, every 8- and 16-bit pattern and millions of FP32 values.
// Storage: fp32, tf32: float; fp16, bf16: 16-bit patterns; fp8: 8-bit patterns.
#pragma once

#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#ifdef __CUDACC__
#define MANTISSA_HD __host__ __device__ __forceinline__
#else
#define MANTISSA_HD inline
#endif

namespace mantissa::cuda {

// Format codes, equal to mantissa::Format's values (numeric/format.h); kernels take plain ints.
enum FormatCode : int { fmt_fp32 = 0, fmt_tf32 = 1, fmt_fp16 = 2, fmt_bf16 = 3, fmt_e4m3 = 4, fmt_e5m2 = 5 };

MANTISSA_HD std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}

MANTISSA_HD float float_of(std::uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

MANTISSA_HD bool is_nan_bits(std::uint32_t u) {
    return (u & 0x7fffffffu) > 0x7f800000u;
}

// The FP32 value of a NaN of a format with `m_bits` mantissa bits: a quiet NaN with the format's
// mantissa at the top of FP32's, as numeric/convert.cpp's decode makes it.
MANTISSA_HD float widened_nan(std::uint32_t sign, std::uint32_t mantissa, int m_bits) {
    return float_of((sign << 31) | 0x7fc00000u | (mantissa << (23 - m_bits)));
}

// ---- encode: FP32 -> stored bits

MANTISSA_HD std::uint32_t encode_tf32(float x, bool saturate) {
    const std::uint32_t u = bits_of(x);
    const std::uint32_t sign = u & 0x80000000u;
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7fffe000u;
    if (a == 0x7f800000u) return saturate ? (sign | 0x7f7fe000u) : u;
    const std::uint32_t r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    if (saturate && (r & 0x7fffffffu) == 0x7f800000u) return sign | 0x7f7fe000u;
    return r;
}

MANTISSA_HD std::uint32_t encode_fp16(float x, bool saturate) {
    if (is_nan_bits(bits_of(x))) return 0x7fffu;
    if (saturate) x = x > 65504.0f ? 65504.0f : (x < -65504.0f ? -65504.0f : x);
    const __half_raw r = static_cast<__half_raw>(__float2half_rn(x));
    return r.x;
}

MANTISSA_HD std::uint32_t encode_bf16(float x, bool saturate) {
    if (is_nan_bits(bits_of(x))) return 0x7fffu;
    if (saturate) {
        const float max = float_of(0x7f7f0000u);
        x = x > max ? max : (x < -max ? -max : x);
    }
    const __nv_bfloat16_raw r = static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x));
    return r.x;
}

MANTISSA_HD std::uint32_t encode_fp8(float x, bool saturate, bool e4m3) {
    const std::uint32_t u = bits_of(x);
    if (is_nan_bits(u)) return ((u >> 31) << 7) | (e4m3 ? 0x7fu : 0x7eu);
    return __nv_cvt_float_to_fp8(x, saturate ? __NV_SATFINITE : __NV_NOSAT, e4m3 ? __NV_E4M3 : __NV_E5M2);
}

// The bits of x stored in format `fmt` (right-aligned), as mantissa::encode.
MANTISSA_HD std::uint32_t encode_value(int fmt, float x, bool saturate) {
    switch (fmt) {
        case fmt_tf32: return encode_tf32(x, saturate);
        case fmt_fp16: return encode_fp16(x, saturate);
        case fmt_bf16: return encode_bf16(x, saturate);
        case fmt_e4m3: return encode_fp8(x, saturate, true);
        case fmt_e5m2: return encode_fp8(x, saturate, false);
        default: return bits_of(x);
    }
}

// ---- decode: stored bits -> the exact FP32 value

MANTISSA_HD float decode_fp16(std::uint32_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) return widened_nan((h >> 15) & 1u, h & 0x3ffu, 10);
    __half_raw r;
    r.x = static_cast<unsigned short>(h);
    return __half2float(__half(r));
}

MANTISSA_HD float decode_bf16(std::uint32_t b) {
    if ((b & 0x7f80u) == 0x7f80u && (b & 0x7fu)) return widened_nan((b >> 15) & 1u, b & 0x7fu, 7);
    return float_of(b << 16);
}

MANTISSA_HD float decode_e4m3(std::uint32_t b) {
    if ((b & 0x7fu) == 0x7fu) return widened_nan((b >> 7) & 1u, 7u, 3);
    const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), __NV_E4M3);
    return __half2float(__half(h));
}

MANTISSA_HD float decode_e5m2(std::uint32_t b) {
    if ((b & 0x7cu) == 0x7cu && (b & 0x3u)) return widened_nan((b >> 7) & 1u, b & 0x3u, 2);
    __half_raw r;  // e5m2 is the top byte of fp16
    r.x = static_cast<unsigned short>(b << 8);
    return __half2float(__half(r));
}

// The value bits of format `fmt` hold, as mantissa::decode.
MANTISSA_HD float decode_value(int fmt, std::uint32_t bits) {
    switch (fmt) {
        case fmt_fp16: return decode_fp16(bits);
        case fmt_bf16: return decode_bf16(bits);
        case fmt_e4m3: return decode_e4m3(bits);
        case fmt_e5m2: return decode_e5m2(bits);
        default: return float_of(bits);
    }
}

// x rounded to `fmt`, as mantissa::round_to (fp32: unchanged, whatever `saturate` says).
MANTISSA_HD float round_value(int fmt, float x, bool saturate) {
    if (fmt == fmt_fp32) return x;
    if (fmt == fmt_tf32) return float_of(encode_tf32(x, saturate));
    return decode_value(fmt, encode_value(fmt, x, saturate));
}

// Bit pattern of the smallest normal value of `fmt` as FP32 (format_info(f).min_normal).
MANTISSA_HD std::uint32_t min_normal_bits(int fmt) {
    switch (fmt) {
        case fmt_fp16: return 0x38800000u;  // 2^-14
        case fmt_e4m3: return 0x3c800000u;  // 2^-6
        case fmt_e5m2: return 0x38800000u;  // 2^-14
        default: return 0x00800000u;        // 2^-126: fp32, tf32, bf16
    }
}

// floor(log2 |x|) of a finite non-zero FP32 value, exact for subnormals (mantissa::exponent_of).
MANTISSA_HD int exponent_of_value(float x) {
    const std::uint32_t m = bits_of(x) & 0x7fffffffu;
    const int biased = static_cast<int>(m >> 23);
    if (biased != 0) return biased - 127;
    const std::uint32_t fraction = m & 0x7fffffu;
#ifdef __CUDA_ARCH__
    return -149 + (31 - __clz(static_cast<int>(fraction)));
#else
    return -149 + (31 - __builtin_clz(fraction));
#endif
}

// ---- element access on a tensor's storage (host and device alike, as everything here: the
// host tests run the optimizer's element updates, optimizer_update.cuh, through them)

// A value read back from a tensor whose values are "stored x multiplier" (gradients unscaled
// lazily, see CudaTensor): multiplied in FP32, NaN kept as it is (as x86 does for a quiet NaN).
MANTISSA_HD float apply_multiplier(float v, float multiplier) {
    return (multiplier == 1.0f || is_nan_bits(bits_of(v))) ? v : v * multiplier;
}

MANTISSA_HD float load_value(const void* p, int fmt, std::int64_t i) {
    switch (fmt) {
        case fmt_fp16:
        case fmt_bf16: return decode_value(fmt, static_cast<const std::uint16_t*>(p)[i]);
        case fmt_e4m3:
        case fmt_e5m2: return decode_value(fmt, static_cast<const std::uint8_t*>(p)[i]);
        default: return static_cast<const float*>(p)[i];
    }
}

MANTISSA_HD void store_value(void* p, int fmt, std::int64_t i, float x, bool saturate) {
    switch (fmt) {
        case fmt_fp32: static_cast<float*>(p)[i] = x; break;
        case fmt_tf32: static_cast<std::uint32_t*>(p)[i] = encode_tf32(x, saturate); break;
        case fmt_fp16:
        case fmt_bf16:
            static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(encode_value(fmt, x, saturate));
            break;
        default: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(encode_value(fmt, x, saturate)); break;
    }
}

// Stores x rounded to `fmt` and returns the value stored (to compare with the old one).
MANTISSA_HD float store_rounded(void* p, int fmt, std::int64_t i, float x) {
    switch (fmt) {
        case fmt_fp32: static_cast<float*>(p)[i] = x; return x;
        case fmt_tf32: {
            const std::uint32_t b = encode_tf32(x, false);
            static_cast<std::uint32_t*>(p)[i] = b;
            return float_of(b);
        }
        case fmt_fp16:
        case fmt_bf16: {
            const std::uint32_t b = encode_value(fmt, x, false);
            static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(b);
            return decode_value(fmt, b);
        }
        default: {
            const std::uint32_t b = encode_value(fmt, x, false);
            static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(b);
            return decode_value(fmt, b);
        }
    }
}

}  // namespace mantissa::cuda
