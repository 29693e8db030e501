// The peak arithmetic rates of this CPU, measured in the same run as the figures held against
// them (docs/benchmarks.md, "Limits"): hand-written loops of independent multiply-adds on one
// vector unit, enough accumulators in registers to hide the unit's latency, so the loop runs at
// the unit's issue rate and nothing else (no loads, no stores). Each unit is chosen at run time
// (__builtin_cpu_supports) and compiled for its ISA alone (__attribute__((target))), so the
// executable runs on any x86-64 CPU and measures what this one has:
//
//   FP32 FMA     vfmadd on 16 FP32 lanes (AVX-512F), else 8 (AVX2 + FMA): 2 FLOPs per lane
//   BF16 dot     vdpbf16ps (AVX-512 BF16): 32 bf16 pairs into 16 FP32 lanes, 64 FLOPs
//   AMX BF16     tdpbf16ps on 16×16 FP32 tiles, 32 pairs each: 16384 FLOPs per instruction
//
// N threads run N copies of the loop at once (std::thread, started together); the rate is all
// their FLOPs over the time until the last one ends. Not thread-safe against itself: one suite
// at a time measures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/report.h"

namespace mantissa::bench {

enum class PeakUnit : std::uint8_t { fp32_fma, bf16_dot, amx_bf16 };

// "FP32 FMA AVX-512" (or "FP32 FMA AVX2"), "BF16 dot AVX-512", "AMX BF16".
std::string unit_name(PeakUnit unit);
// "" when this CPU (and kernel, for AMX) runs the unit; else why not ("not on this CPU").
std::string unit_missing(PeakUnit unit);
// The vector extensions the units need, as this CPU has them: "AVX2, FMA, AVX-512F, AVX-512 BF16,
// AVX-512 FP16, no AMX".
std::string vector_extensions();

struct PeakMeasurement {
    double gflops = 0;       // median over the repetitions; NaN when the unit is missing
    double spread_pct = 0;   // (max - min) / median of the repetitions
    int repetitions = 0;
};

// `threads` copies of the unit's loop at once, `repetitions` runs of about `seconds` each.
PeakMeasurement measure_peak(PeakUnit unit, int threads, int repetitions, double seconds);

// The one-thread peaks a step is held against (GFLOP/s; NaN where the unit is missing).
struct PeakRates {
    double fp32_fma = 0;
    double bf16_dot = 0;
    double amx_bf16 = 0;
    // The limit of matmuls oneDNN runs on bf16 operands: AMX where the CPU has it, else the dot
    // product unit, else (no bf16 unit: oneDNN converts to FP32) the FMA.
    double bf16() const;
};

// Measures every unit at each thread count (1 first) and returns the table "limits"; `peaks`
// gets the one-thread figures. quick: fewer, shorter repetitions.
Table limits_table(const std::vector<int>& thread_counts, bool quick, PeakRates& peaks);

// The GFLOP/s a step of `flops` can reach on `threads` threads when `bf16_flops` of them run on
// the bf16 primitive and the rest in FP32: each part at its one-thread peak × threads, so the
// least time is Σ part / (peak × threads) and the limit is flops over it. NaN when a part's peak
// is missing or there are no FLOPs.
double limit_gflops(const PeakRates& peaks, double flops, double bf16_flops, int threads);

}  // namespace mantissa::bench
