// CpuMatmul: C = op(A)·op(B) in FP32 accumulation through oneDNN's matmul primitive.
//
// One primitive per shape (M, N, K, transposes, operand type), created on first use and reused,
// with its scratchpad allocated once: no allocation on the steady-state training step. Operands
// are FP32 arrays whose values are already rounded to the layer's operand format; the products of
// two such values are exact in FP32. For bf16, fp8 and block-scaled operands (whose values bf16 holds
// exactly) the bf16 primitive with FP32 accumulation is used when a measurement once per process
// found it clearly faster on this CPU (cpu_bf16_choice.h; MANTISSA_CPU_BF16_MATMUL=0/1 overrides):
// same products, a different summation order, different speed. The copy into bf16 checks every
// value on the way: one it would not multiply exactly (not a bf16 value, or a subnormal, which
// AVX-512 BF16's dot product reads as zero; an MX block with a scale near 2^-127) sends that call
// to the FP32 primitive. What stays different: that dot product also flushes a subnormal FP32
// result (below 2^-126) to zero where the FP32 primitive keeps it. bf16_path() names the path
// taken; the backend puts it in its device name and a checkpoint keeps it
// (Backend::bf16_matmul_path).
//
// Threads: oneDNN runs on OpenMP. A product gets one thread per 2^20 multiply-adds (about 15 us
// of work at AVX2 speed, well above a fork/join), at most threads(). So a product of fewer than
// 2^21 multiply-adds runs on the calling thread alone, and the reference model's fc2 (4.2 M) on at
// most four threads however many cores there are. threads() is set by the backend's maker from
// the experiment's backend.threads (make_backend, engine/backend/backend.h); its default, and
// what backend.threads 0 ("auto") means, is default_threads(spare): MANTISSA_CPU_THREADS, else
// OMP_NUM_THREADS, else every hardware thread but `spare` (at least one). mantissa-cli keeps none
// spare; the GUI keeps one for drawing and recording. Both start with OMP_WAIT_POLICY=passive
// (app/passive_openmp_waits.h), because libgomp's threads otherwise spin while they wait (it
// reads the policy when it is loaded; it cannot be changed from inside), and on an oversubscribed
// machine a step then costs many times what it costs on one thread (measured on 2 shared cores
// under load, the reference step: 80 ms on 2 spinning threads, 5.5-6.7 ms on one, 6.9-7.4 ms on 2
// passive ones). The count is set on the calling thread only. Results depend on the thread count
// (summation order), not on timing: a machine and a setting give the same bits every run.
// Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/cpu_bf16_choice.h"

namespace mantissa {

// Bf16 copies of a product's operands that the caller already holds (CpuMatmul::multiply).
struct KeptBf16Bits {
    const std::uint16_t* a = nullptr;
    const std::uint16_t* b = nullptr;
};

class CpuMatmul {
public:
    CpuMatmul();
    ~CpuMatmul();
    CpuMatmul(const CpuMatmul&) = delete;
    CpuMatmul& operator=(const CpuMatmul&) = delete;

    // C(M, N) = op(A)(M, K) · op(B)(K, N), overwriting C. A is stored (M, K) row-major, or (K, M)
    // when trans_a; B is stored (K, N), or (N, K) when trans_b. bf16_operands: the caller
    // expects every operand value to be a bf16 value (a call with one that is not takes the FP32
    // primitive: same products). a_unchanged: the caller promises that where `a` is the previous
    // call's A (the same address and count), it still holds the same values, so the bf16 copy made
    // for that call serves again (a linear layer's dy, the A of its dgrad and then, transposed, of
    // its wgrad). `kept`: bf16 copies of A or B the caller already holds (every value one the bf16
    // kernels multiply exactly, in the operand's stored layout), used instead of copying where the
    // bf16 primitive runs (the backend keeps a linear layer's x and W from its forward for its
    // backward, CpuBackend::kept_bf16_bits).
    void multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c,
                  std::int64_t m, std::int64_t n, std::int64_t k, bool bf16_operands = false,
                  bool a_unchanged = false, KeptBf16Bits kept = {});

    // MANTISSA_CPU_THREADS, else OMP_NUM_THREADS, else the hardware threads less `spare` (>= 1).
    static int default_threads(int spare = 0);
    // Threads for a product of `multiply_adds` when up to max_threads are allowed (>= 1).
    static int threads_for(std::int64_t multiply_adds, int max_threads);
    static constexpr std::int64_t min_work_per_thread = std::int64_t{1} << 20;
    int threads() const;
    void set_threads(int n);       // >= 1
    // Whether bf16 operands take the bf16 primitive: MANTISSA_CPU_BF16_MATMUL (0/1) when set as
    // this object is made, else the measured choice. Never true where oneDNN has no bf16 matmul.
    bool bf16_enabled() const;
    void set_bf16_enabled(bool on);  // measurements, and a resumed run's path; false where none
    // "oneDNN bf16" or "FP32 on bf16 values": the path bf16 operands take, for descriptions.
    std::string bf16_path() const;
    static std::string isa_name(); // oneDNN's effective ISA: "AVX2", "AVX-512 BF16", ...
    // The bf16 primitive timed against the FP32 one (cpu_bf16_choice.h), once per process, on the
    // first call (thread-safe); 25-40 ms on an AVX-512 core, nothing where there is no bf16 matmul.
    static const Bf16MatmulChoice& measured_bf16_choice();
    // Whether this oneDNN has a bf16 matmul on this CPU (found once per process, without timing).
    static bool bf16_available();
    // How many operands this object has copied into bf16 itself (not those the caller kept):
    // tests of the kept copies.
    std::int64_t bf16_operand_copies() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa
