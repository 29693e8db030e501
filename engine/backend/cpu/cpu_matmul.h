// CpuMatmul: C = op(A)·op(B) in FP32 accumulation through oneDNN's matmul primitive.
//
// One primitive per shape (M, N, K, transposes, operand type), created on first use and reused,
// with its scratchpad allocated once: no allocation on the steady-state training step. Operands
// are FP32 arrays whose values are already rounded to the layer's operand format; the products of
// two such values are exact in FP32. For bf16 and fp8 operands (whose values bf16 holds exactly)
// the bf16 primitive with FP32 accumulation is used when it is faster on this CPU (AMX or
// AVX512-BF16; MANTISSA_CPU_BF16_MATMUL=0/1 overrides): same products, different speed.
//
// Threads: oneDNN runs on OpenMP. A product of fewer than 2^20 multiply-adds runs on one thread
// (forking costs more than it saves); larger ones on threads() threads: MANTISSA_CPU_THREADS, or
// OMP_NUM_THREADS, else all hardware threads but one. One is left to the GUI and the recorder:
// OpenMP threads spin while they wait, and on an oversubscribed machine a step then costs several
// times what it costs on one thread (measured on 2 shared cores: 29 ms against 5.5 ms). The count
// is set on the calling thread only. Results depend on the thread count (summation order), not
// on timing.
// Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mantissa {

class CpuMatmul {
public:
    CpuMatmul();
    ~CpuMatmul();
    CpuMatmul(const CpuMatmul&) = delete;
    CpuMatmul& operator=(const CpuMatmul&) = delete;

    // C(M, N) = op(A)(M, K) · op(B)(K, N), overwriting C. A is stored (M, K) row-major, or (K, M)
    // when trans_a; B is stored (K, N), or (N, K) when trans_b. bf16_operands: the caller
    // promises every operand value is exactly representable in bf16.
    void multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c,
                  std::int64_t m, std::int64_t n, std::int64_t k, bool bf16_operands = false);

    static int default_threads();
    int threads() const;
    void set_threads(int n);       // >= 1
    bool bf16_enabled() const;     // whether bf16 operands take the bf16 primitive
    void set_bf16_enabled(bool on);  // for measurements
    static std::string isa_name(); // oneDNN's effective ISA: "AVX2", "AVX-512 BF16", ...
    static bool cpu_has_fast_bf16();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa
