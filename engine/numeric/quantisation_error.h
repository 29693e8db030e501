// What a quantisation did to an array, from the values before and after: how many finite non-zero
// values became zero or infinite or went beyond the format's range, and the signal and error
// energies an SQNR is made of. The what-if statistics (engine/train/what_if.h) tally a tensor's
// sample with these; docs/numerics.md, "What-if statistics", defines each figure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace mantissa {

struct QuantisationTally {
    std::int64_t values = 0;      // every value tallied
    std::int64_t nonzero = 0;     // finite and non-zero before
    std::int64_t underflows = 0;  // of those, ±0 after
    std::int64_t saturated = 0;   // of those, beyond the format's range (tally_quantisation's
                                  // limit, or a block format's own count added by the caller)
    std::int64_t overflows = 0;   // finite before, infinite after (fp16, bf16: IEEE overflow)
    double signal = 0;            // Σ x² over the finite x whose q(x) is finite
    double noise = 0;             // Σ (x − q(x))² over the same values

    QuantisationTally& operator+=(const QuantisationTally& o);
    // 10·log10(signal / noise): +inf when the noise is 0 and the signal is not, -inf after an
    // overflow, NaN without a finite non-zero value.
    double sqnr_db() const;
};

// Adds src[0, n) against q[0, n) (q = the values src quantises to, decoded to FP32) to `tally`:
// a finite value whose magnitude times `scale` (in FP32) is above `limit` counts as saturated (the
// default limit counts none). A value whose q is NaN (a block format's NaN block) adds to neither
// energy. One pass, vectorised: sixteen FP32 partial sums per piece of 1024 values (FP64 for a
// piece whose squares leave FP32's range), the pieces added in FP64, in a fixed order: an SQNR
// good to about 1e-5 dB.
void tally_quantisation(const float* src, const float* q, std::size_t n, QuantisationTally& tally,
                        float scale = 1.0f, float limit = std::numeric_limits<float>::infinity());

}  // namespace mantissa
