// MANTISSA_HOT marks a CPU backend loop worth building twice, for AVX2 and for the baseline x86-64
// (SSE2), the better one chosen when the program loads (GCC's target_clones). Neither clone may
// contract a·b + c into a fused multiply-add (the avx2 target does not enable FMA), so both give
// the same bits.
//
// MANTISSA_HOT_WIDE adds an AVX-512 clone, for loops bound by arithmetic rather than memory
// (GELU's and the softmax's polynomials: 1.1-1.2x on the GPT's bf16 step; the memory-bound passes
// gained nothing, docs/benchmarks.md, "Tried and not kept"). GCC's avx512f target enables FMA, so
// a source that uses it must be compiled with -ffp-contract=off (engine/backend/CMakeLists.txt),
// or that clone would round differently from the others.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_HOT __attribute__((target_clones("avx2", "default")))
#define MANTISSA_HOT_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MANTISSA_HOT
#define MANTISSA_HOT_WIDE
#endif

#if defined(__x86_64__) && defined(__GNUC__)
namespace mantissa::cpu_detail {
// Whether this CPU runs AVX2, asked once: the hand-written AVX2 kernels (intrinsics under
// target("avx2"), not clones) take it, the plain loops beside them otherwise.
inline bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
}  // namespace mantissa::cpu_detail
#endif
