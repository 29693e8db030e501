// The CPU backend's passes that are not matmuls (the optimizers, the unscale and its statistics,
// activations, roundings, amaxes and counts, and the layers' own passes: convolution, batch
// norm, pools, layer norm, softmax, the batched matmul's epilogue, embedding), spread over the
// backend's threads.
//
// Only passes whose result cannot depend on how the work is split are spread: each element is
// computed from its own inputs alone (a stochastic rounding draws by the element's index), and
// what the pass gathers is a maximum, a minimum or an integer count, which come out the same in
// any order. A floating-point sum is never split; where a pass has one, it is cut over
// independent outputs that each keep their own sum in its usual order (a layer norm's columns, a
// batch norm's channels), or the tensors go to the threads whole (the unscale's sum of squares,
// the sums then added in tensor order). So a run's results do not depend on the thread count
// through these passes (docs/numerics.md, "Threads").
//
// A pass takes one thread per `min_per_thread` elements, at most the backend's count: below that
// a fork and join (a few microseconds to wake a passive OpenMP worker) would cost more than it
// saves. Ranges start at multiples of `align` elements, so a pass that works in blocks keeps its
// blocks whole. Training thread only.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <omp.h>

#include "numeric/stats.h"

namespace mantissa::cpu_detail {

// A thread per 2^16 values for a pass at memory speed (a fraction of a nanosecond a value: tens
// of microseconds a thread), and at most kMaxPassThreads for a pass that keeps per-thread counts.
constexpr std::int64_t elementwise_min_per_thread = std::int64_t{1} << 16;
constexpr int kMaxPassThreads = 64;

// The threads a pass over n elements takes, at most max_threads (>= 1).
inline int pass_threads(std::int64_t n, std::int64_t min_per_thread, int max_threads) {
    return static_cast<int>(std::clamp<std::int64_t>(n / std::max<std::int64_t>(1, min_per_thread), 1,
                                                     std::max(1, max_threads)));
}

// fn(begin, end, range) over [0, n) cut into `threads` contiguous ranges (the last may be short,
// some may be empty), range in [0, threads): the index of per-range state, whichever thread runs
// it; on the calling thread alone when threads is 1.
template <class Fn>
void for_ranges(std::int64_t n, int threads, std::int64_t align, Fn&& fn) {
    if (threads <= 1 || n <= align) {
        fn(std::int64_t{0}, n, 0);
        return;
    }
    const std::int64_t blocks = (n + align - 1) / align;
    const std::int64_t per = (blocks + threads - 1) / threads;
    // OpenMP may start fewer threads than asked (a thread limit, a nested region): each thread
    // then takes every team-th range, so every range is still done once, under its own index.
#pragma omp parallel num_threads(threads)
    {
        const int team = omp_get_num_threads();
        for (int w = omp_get_thread_num(); w < threads; w += team) {
            const std::int64_t begin = std::min(n, w * per * align);
            const std::int64_t end = std::min(n, (w + 1) * per * align);
            if (begin < end) fn(begin, end, w);
        }
    }
}

// fn(begin, end) over [first, last) in pieces of at most kPieceValues (8 KiB, a multiple of 8),
// for a pass that writes values and then rounds, scales or counts them: each piece is done while
// it is still in the L1 cache, where a thread's whole range (megabytes in a transformer's MLP)
// would be read back from memory. Elementwise, so the blocking changes no value; a pass that
// keys its rounding by index keys each piece by its first one. A range cut with align
// kPieceValues keeps its pieces where a whole-array pass has them.
constexpr std::int64_t kPieceValues = 2048;
template <class Fn>
void for_pieces(std::int64_t first, std::int64_t last, Fn&& fn) {
    for (std::int64_t begin = first; begin < last; begin += kPieceValues) fn(begin, std::min(last, begin + kPieceValues));
}

// fn(i, worker) for each i in [0, count) (whole items, e.g. tensors), the items shared out as
// threads free up; each item's work is the same whichever thread does it.
template <class Fn>
void for_items(std::int64_t count, int threads, Fn&& fn) {
    if (threads <= 1 || count <= 1) {
        for (std::int64_t i = 0; i < count; ++i) fn(i, 0);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t i = 0; i < count; ++i) fn(i, omp_get_thread_num());
}

// max_abs (numeric/stats.h) over ranges on up to `max_threads` threads: the magnitudes' bit
// patterns order as the values do (NaN above inf), so the largest pattern of the ranges is the
// whole array's, whatever the cut.
inline float max_abs_on(int max_threads, const float* data, std::int64_t n) {
    const int threads = std::min(kMaxPassThreads, pass_threads(n, elementwise_min_per_thread, max_threads));
    std::array<std::uint32_t, kMaxPassThreads> bits{};
    for_ranges(n, threads, 64, [&](std::int64_t begin, std::int64_t end, int w) {
        bits[static_cast<std::size_t>(w)] =
            std::bit_cast<std::uint32_t>(max_abs(data + begin, static_cast<std::size_t>(end - begin)));
    });
    return std::bit_cast<float>(*std::max_element(bits.begin(), bits.begin() + threads));
}

// The largest finite |data[i]| of data[0, n), given their max_abs `amax`: amax itself when it is
// finite, else a pass of its own over the finite values (a rare tensor with an inf or a NaN).
inline float finite_max_abs(const float* data, std::int64_t n, float amax) {
    if (amax <= std::numeric_limits<float>::max()) return amax;
    float finite = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const float m = std::fabs(data[i]);
        if (m <= std::numeric_limits<float>::max()) finite = std::max(finite, m);
    }
    return finite;
}

}  // namespace mantissa::cpu_detail
