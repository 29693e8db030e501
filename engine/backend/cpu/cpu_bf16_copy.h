// The copies of FP32 operands into bf16 bits that the bf16 matmul path (cpu_bf16_choice.h) makes
// before oneDNN's bf16 kernels multiply them, each telling whether those kernels multiply every
// value exactly: a bf16 value (its low 16 bits zero) that is zero, normal, infinite or NaN. Not a
// subnormal: AVX-512 BF16's dot product reads a subnormal operand as zero. A copy that answers
// false leaves the product to the FP32 path, on the same values. docs/numerics.md, "The bf16
// matmul path, chosen by measurement".
#pragma once

#include <cstdint>

namespace mantissa {

// dst[i] = the high half of src[i]'s bits; whether every src[i] is such a value.
bool to_bf16_exact(const float* src, std::uint16_t* dst, std::int64_t n);

// to_bf16_exact shared out over at most max_threads (cpu_parallel.h: a thread per 2^16 values):
// each value's bits are its own, and whether all are exact is the same answer in any order.
bool to_bf16_exact_shared(const float* src, std::uint16_t* dst, std::int64_t n, int max_threads);

// dst[i] = the bf16 bits of round_to(bf16, src[i]) (numeric/convert.h); whether every rounded value
// is one the bf16 kernels multiply exactly (a value that rounds to a bf16 subnormal is not).
bool round_to_bf16_exact(const float* src, std::uint16_t* dst, std::int64_t n);

}  // namespace mantissa
