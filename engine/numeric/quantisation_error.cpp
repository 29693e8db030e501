#include "numeric/quantisation_error.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mantissa {

namespace {

// Built for x86-64-v4 (AVX-512), AVX2 and baseline x86-64, chosen when the program loads; the file
// is built with -ffp-contract=off (CMakeLists.txt), so that the v4 clone sums energies as the others.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MANTISSA_TALLY_HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MANTISSA_TALLY_HOT
#endif

constexpr std::size_t lanes = 16;
constexpr std::size_t piece = 1024;  // values per partial sum of each lane's counts

struct PieceCounts {
    std::uint32_t nonzero = 0, underflows = 0, saturated = 0, overflows = 0;
    double signal = 0, noise = 0;
};

// One piece (n <= piece), its energies in lanes of T. Every test is an integer compare of bit
// patterns and every choice an integer mask: GCC vectorises neither a float compare feeding a
// select nor a bool turned into a float under its default -ftrapping-math.
template <class T>
MANTISSA_TALLY_HOT PieceCounts tally_piece(const float* __restrict src, const float* __restrict q, std::size_t n,
                                           float scale, std::uint32_t limit_bits) {
    std::uint32_t nonzero[lanes] = {}, under[lanes] = {}, sat[lanes] = {}, over[lanes] = {};
    T signal[lanes] = {}, noise[lanes] = {};
    constexpr std::uint32_t magnitude = 0x7fffffffu, infinity = 0x7f800000u;
    auto one = [&](std::size_t i, std::size_t lane) {
        const float x = src[i], y = q[i];
        const std::uint32_t xb = std::bit_cast<std::uint32_t>(x) & magnitude;
        const std::uint32_t yb = std::bit_cast<std::uint32_t>(y) & magnitude;
        const std::uint32_t finite = xb < infinity;
        const std::uint32_t nz = finite & (xb != 0);
        const std::uint32_t scaled = std::bit_cast<std::uint32_t>(std::bit_cast<float>(xb) * scale);  // |x|·scale ≥ 0
        nonzero[lane] += nz;
        under[lane] += nz & (yb == 0);
        sat[lane] += nz & (scaled > limit_bits);
        over[lane] += finite & (yb == infinity);
        const std::uint32_t keep = 0u - (finite & (yb < infinity));  // all ones when both are finite
        const T xv = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & keep);
        const T d = xv - static_cast<T>(std::bit_cast<float>(std::bit_cast<std::uint32_t>(y) & keep));
        signal[lane] += xv * xv;
        noise[lane] += d * d;
    };
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (std::size_t l = 0; l < lanes; ++l) one(i + l, l);
    for (std::size_t l = 0; i < n; ++i, ++l) one(i, l);
    PieceCounts c;
    for (std::size_t l = 0; l < lanes; ++l) {
        c.nonzero += nonzero[l];
        c.underflows += under[l];
        c.saturated += sat[l];
        c.overflows += over[l];
        c.signal += static_cast<double>(signal[l]);
        c.noise += static_cast<double>(noise[l]);
    }
    return c;
}

}  // namespace

QuantisationTally& QuantisationTally::operator+=(const QuantisationTally& o) {
    values += o.values;
    nonzero += o.nonzero;
    underflows += o.underflows;
    saturated += o.saturated;
    overflows += o.overflows;
    signal += o.signal;
    noise += o.noise;
    return *this;
}

double QuantisationTally::sqnr_db() const {
    if (nonzero == 0) return std::numeric_limits<double>::quiet_NaN();
    if (overflows > 0) return -std::numeric_limits<double>::infinity();
    if (noise == 0) return std::numeric_limits<double>::infinity();
    if (signal == 0) return -std::numeric_limits<double>::infinity();  // only NaN blocks held the signal
    return 10.0 * std::log10(signal / noise);
}

void tally_quantisation(const float* src, const float* q, std::size_t n, QuantisationTally& tally, float scale,
                        float limit) {
    // A magnitude above `limit` is one whose bits are above limit's: both are non-negative.
    const std::uint32_t limit_bits = std::bit_cast<std::uint32_t>(std::fabs(limit));
    for (std::size_t start = 0; start < n; start += piece) {
        const std::size_t len = std::min(piece, n - start);
        // FP32 lanes (64 terms each, a relative error of a few 1e-6: 1e-5 dB), or FP64 where a
        // square left FP32's range.
        PieceCounts c = tally_piece<float>(src + start, q + start, len, scale, limit_bits);
        if (!std::isfinite(c.signal) || !std::isfinite(c.noise))
            c = tally_piece<double>(src + start, q + start, len, scale, limit_bits);
        tally.nonzero += c.nonzero;
        tally.underflows += c.underflows;
        tally.saturated += c.saturated;
        tally.overflows += c.overflows;
        tally.signal += c.signal;
        tally.noise += c.noise;
    }
    tally.values += static_cast<std::int64_t>(n);
}

}  // namespace mantissa
