// Which of two equivalent paths CpuMatmul (cpu_matmul.h) takes for bf16 and fp8 operands (values
// bf16 holds exactly): oneDNN's bf16 matmul primitive (the operands converted to bf16 bits, FP32
// accumulation) or its FP32 primitive on the same values. The products are exact in FP32 either
// way, so the paths differ only in summation order (the last bits of a result) and in speed.
//
// Why it is measured: which one is faster is not a property of the instruction set. With oneDNN
// 2.6.3 at one thread, on an Intel Xeon with AVX-512 BF16 and no AMX the bf16 primitive ran at half
// the FP32 one's rate (1024x1024x1024: 81-85 against 163 GFLOP/s, with pre-reordered weights too:
// its kernel, not a reorder), and the reference model's bf16 step was about 1.4x faster on the
// FP32 path; on an AMD EPYC (Zen 4, also AVX-512 BF16) the bf16 step on the bf16 primitive
// (141.8k samples/s) outran the FP32 step itself (121.8k), which the FP32 path cannot. So once per process CpuMatmul times both on one
// representative product (cpu_matmul.cpp, CpuMatmul::measured_bf16_choice) and takes the bf16
// primitive only when it is clearly faster: its median time at most bf16_margin of the FP32 one.
// MANTISSA_CPU_BF16_MATMUL=0/1 overrides the choice; a checkpoint keeps the path its run took, and
// a resumed run takes it again (docs/numerics.md, "The CPU backend's speed").
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mantissa {

struct Bf16MatmulChoice {
    bool bf16 = false;                // bf16 operands take the bf16 primitive
    bool available = false;           // oneDNN has a bf16 matmul on this CPU
    double fp32_ms = 0, bf16_ms = 0;  // the measurement's medians, ms per product; 0: not measured
    std::string why;                  // one phrase: "measured: bf16 1.92x the FP32 time", ...
};

// bf16 is taken when its median time is at most this fraction of the FP32 one.
inline constexpr double bf16_margin = 0.9;

// The choice from per-run times (seconds) of the two paths: medians and the margin.
Bf16MatmulChoice decide_bf16_matmul(std::vector<double> fp32_s, std::vector<double> bf16_s);

// Times run(false) (the FP32 path) against run(true) (the bf16 path, its operand conversions
// included): each twice to warm up (creating the primitives), then `rounds` times interleaved, and
// decides. run(true) returns false when this oneDNN has no bf16 matmul (the FP32 path is chosen
// without timing). Costs 25-40 ms with a 256x512x512 product on an AVX-512 core.
Bf16MatmulChoice measure_bf16_matmul(const std::function<bool(bool bf16)>& run, int rounds = 7);

}  // namespace mantissa
