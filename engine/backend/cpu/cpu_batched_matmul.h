// CpuBatchedMatmul: C[b] = A[b]·B[b] in FP32 accumulation over a two-level batch of matrices
// read and written through strided views, by oneDNN's matmul primitive on 4-D memory
// descriptors (outer, inner, rows, cols) with the views' strides: the attention heads are read
// out of a packed QKV tensor and written into a (batch·T, dim) one without copies.
//
// As CpuMatmul (cpu_matmul.h): one primitive per shape and strides, created on first use and
// kept with its scratchpad; operands are FP32 arrays whose values the caller has already rounded
// to the compute format (products exact in FP32), or bf16 bits for oneDNN's bf16 matmul (the bf16
// matmul path, cpu_bf16_choice.h: products exact, FP32 accumulation); the thread count is set per
// product the same way. A layout oneDNN refuses is reported (multiply returns false) and the
// caller packs the operands into plain matrices or takes the FP32 path. Training thread only.
#pragma once

#include <cstdint>
#include <memory>

namespace mantissa {

// Element (b = outer·inner_count + inner, i, j) of a view lies at
// data[outer·outer_stride + inner·inner_stride + i·row_stride + j·col_stride].
struct CpuStrided {
    std::int64_t outer_stride = 0, inner_stride = 0, row_stride = 0, col_stride = 1;
};

class CpuBatchedMatmul {
public:
    CpuBatchedMatmul();
    ~CpuBatchedMatmul();
    CpuBatchedMatmul(const CpuBatchedMatmul&) = delete;
    CpuBatchedMatmul& operator=(const CpuBatchedMatmul&) = delete;

    // C(m, n) = A(m, k)·B(k, n) for every matrix of outer × inner, overwriting C's viewed
    // elements; all counts positive. False (nothing written) when oneDNN has no matmul for these
    // strides.
    bool multiply(std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n, std::int64_t k,
                  const float* a, const CpuStrided& as, const float* b, const CpuStrided& bs, float* c,
                  const CpuStrided& cs, int threads);
    // The same with A and B as bf16 bits (each a value the bf16 kernels multiply exactly: the
    // caller checks, cpu_bf16_copy.h); C in FP32.
    bool multiply(std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n, std::int64_t k,
                  const std::uint16_t* a, const CpuStrided& as, const std::uint16_t* b, const CpuStrided& bs,
                  float* c, const CpuStrided& cs, int threads);

private:
    bool run(bool bf16, std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n, std::int64_t k,
             const void* a, const CpuStrided& as, const void* b, const CpuStrided& bs, float* c,
             const CpuStrided& cs, int threads);

    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa
