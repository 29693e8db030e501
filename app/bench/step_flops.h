// What a timed training step is held against (docs/benchmarks.md, "Limits"): the FLOPs of its
// matmuls (model/matmul_flops.h) at the trainer's batch, split by the oneDNN primitive the CPU
// backend runs each on, and the CPU backend's thread count the limit is multiplied by.
#pragma once

#include <string>

#include "bench/peak_rate.h"
#include "model/matmul_flops.h"
#include "train/trainer.h"

namespace mantissa::bench {

struct StepFlops {
    double total = 0;  // every matmul of a step: forward, dgrad, wgrad; 2 FLOPs per multiply-add
    double bf16 = 0;   // those the CPU backend runs on the bf16 primitive (its bf16 path on)
    double fp32() const { return total - bf16; }
    // "fma" (all on the FP32 primitive), "bf16" (all on bf16), "mixed".
    std::string basis() const;
};

// The rule is CpuLinear's and CpuConv's `bf16_ok` (engine/backend/cpu/cpu_linear.cpp): operands
// that bf16 holds exactly (bf16, per-tensor fp8-e4m3 with e5m2 gradients, the block formats: an
// element times its block's scale, NVFP4's tensor scales on the accumulator) take the bf16
// primitive when CpuMatmul's bf16 path is on, and so do attention's batched products in bf16
// (cpu_attention.cpp); tf32, fp16 and fp32 take the FP32 one. (A matmul that meets a subnormal
// operand, an MX one a block scale near 2^-127, falls back to FP32: not counted.)
// (FP8 scaled per row, a recipe the suites do not time, decodes in FP32 too and is counted as
// bf16 here.) On another backend, bf16 is 0.
StepFlops step_flops(Trainer& trainer);
// The rule for one matmul: whether it runs on the bf16 primitive when the bf16 path is on.
bool on_bf16_primitive(const MatmulFlops& m);

// The CPU backend's thread count (CpuMatmul::threads); 0 on another backend.
int cpu_threads(Trainer& trainer);

// GFLOP/s of a step and its share of the limit on `threads` threads, in percent (NaN when there
// is no limit: another backend, a unit missing).
double achieved_gflops(const StepFlops& flops, double seconds_per_step);
double limit_pct(const StepFlops& flops, double seconds_per_step, const PeakRates& peaks, int threads);

}  // namespace mantissa::bench
