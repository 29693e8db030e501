// Gradient statistics for the telemetry: what rounding a gradient to its format did (zeros
// before and after, subnormals, non-finite values), the largest magnitude and the log2 exponent
// histogram. Kept apart from convert.h because they count rather than convert; they run on the
// CPU backend's FP32 arrays and are the reference a GPU backend's fused kernels are tested
// against.
//
// Definitions (docs/numerics.md): an element "underflows" when it is non-zero before the rounding
// and zero after; since rounding never turns a zero into a non-zero, underflows = zeros after -
// zeros before. "Subnormal" is relative to the format the values are stored in.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "numeric/convert.h"
#include "numeric/format.h"

namespace mantissa {

struct RoundingStats {
    std::int64_t elements = 0;
    std::int64_t zeros_before = 0;  // exact zeros before the rounding
    std::int64_t zeros = 0;         // after the rounding
    std::int64_t subnormals = 0;    // after: non-zero and below the format's smallest normal
    std::int64_t nonfinite = 0;     // after: inf or NaN
    std::int64_t underflows() const { return zeros - zeros_before; }
    RoundingStats& operator+=(const RoundingStats& o);
};

// max |data[i]| over data[0..n): NaN when any is NaN, inf when any is infinite (0 for n = 0).
float max_abs(const float* data, std::size_t n);

// Counts exact zeros (either sign) in data[0..n).
std::int64_t count_zeros(const float* data, std::size_t n);

// Whether a[0..n) and b[0..n) hold their exact zeros (either sign) at the same indices.
bool same_zeros(const float* a, const float* b, std::size_t n);

// Whether rounding data[0..n) to `format` may turn a non-zero value into zero: some non-zero
// magnitude is below the format's smallest subnormal. Conservative on purpose: round to nearest
// flushes only at or below half of it, stochastic rounding anywhere below it.
bool rounding_may_flush(Format format, const float* data, std::size_t n);

// Adds to `stats` the zeros, subnormals (relative to `format`) and non-finite values of
// data[0..n), and n to elements. zeros_before is not touched.
void count_classes(Format format, const float* data, std::size_t n, RoundingStats& stats);

// Rounds data[0..n) in place to `format` (mantissa::round_array) and adds what that did to
// `stats`: zeros before, and the classes after. One pass over memory: the counting and the
// rounding run block by block while a block is in the L1 cache.
void round_array_with_stats(Format format, float* data, std::size_t n, RoundingStats& stats,
                            Overflow overflow = Overflow::to_inf);

// floor(log2 |x|) for a finite non-zero fp32 value, exact for subnormals (-149 .. 127). Inline:
// the block quantiser (block_round.cpp, below this header's library) takes it per block too.
inline int exponent_of(float x) {
    const std::uint32_t m = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
    const int biased = static_cast<int>(m >> 23);
    if (biased != 0) return biased - 127;
    return -149 + (31 - std::countl_zero(m));  // subnormal: fraction · 2^-149
}

// Over data[0..n) multiplied by `multiplier` in FP32 (1: as they are): the largest finite
// magnitude goes into *amax (max with its current value), the count of inf/NaN is added to
// *nonfinite, and each finite non-zero value adds one to counts[clamp(exponent - min_exponent,
// 0, bins - 1)].
void exponent_histogram(const float* data, std::size_t n, float multiplier, int min_exponent,
                        std::uint32_t* counts, int bins, double* amax, std::int64_t* nonfinite);

// exponent_histogram with multiplier 1, fed in pieces: a fused pass (the CPU backend's unscale)
// adds each block while it is in cache, then finish() adds the result to the caller's histogram.
// The same counts, amax and non-finite count as one exponent_histogram call over the
// concatenated pieces. Any sizes. About 6 KiB: keep one and reset() it rather than make one per
// call in a loop.
class ExponentTally {
public:
    ExponentTally() { reset(); }
    void reset();
    void add(const float* data, std::size_t n);
    // counts[clamp(e - min_exponent, 0, bins - 1)] += ..., *amax = max(*amax, ...),
    // *nonfinite += ...; does not reset the tally.
    void finish(int min_exponent, std::uint32_t* counts, int bins, double* amax,
                std::int64_t* nonfinite) const;

private:
    void flush();
    std::uint64_t m_fields[256];       // counts of the exponent field (field 0: zeros, subnormals)
    std::uint32_t m_tables[4][256];    // the same, 32-bit and interleaved, not yet in m_fields
    std::size_t m_pending = 0;         // values counted in m_tables (flushed before 2^24)
    std::uint64_t m_subnormal[23];     // subnormal values by exponent, -149 .. -127
    std::uint32_t m_amax_bits = 0;     // the largest finite magnitude's bits
};

}  // namespace mantissa
