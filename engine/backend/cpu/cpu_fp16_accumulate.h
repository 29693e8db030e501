// FP16 accumulation, emulated exactly: C = op(A)·op(B) as a matmul that adds its products in FP16
// would compute it (cuBLASLt's CUBLAS_COMPUTE_16F; docs/numerics.md, "FP16 accumulation").
//
// The model, for every output: s = +0; for k = 0 .. K-1 in order: s = rnd16(s + rnd16(a_k · b_k)).
// Each product of two fp16 values is exact in FP32 (22 bits) and rounded to FP16 once; each sum of
// two fp16 values is formed in FP32 and rounded to FP16, which is the exactly rounded sum (an FP32
// sum that is inexact is too far below half an FP16 step to move the rounding). Overflow gives
// inf, subnormals are kept: plain IEEE binary16 arithmetic, in order. A GPU's tensor cores add
// in their own order and width inside each instruction, so they agree with this in distribution,
// not bit for bit. Single-threaded (the outputs do not depend on it): a teaching path, several
// times slower than oneDNN's FP32 matmul. Training thread only.
#pragma once

#include <cstdint>
#include <vector>

namespace mantissa {

// C(M, N) = op(A)(M, K) · op(B)(K, N) with FP16 accumulation, overwriting C (its values are fp16
// values). A is stored (M, K) row-major, or (K, M) when trans_a; B is stored (K, N), or (N, K)
// when trans_b (CpuMatmul::multiply's convention). The operands' values must be fp16 values.
// `pack` is scratch kept by the caller.
void fp16_accumulate_multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, std::vector<float>& pack);

}  // namespace mantissa
