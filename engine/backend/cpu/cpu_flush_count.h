// count_flushed_weight_gradient: how many elements of a rounded weight gradient are zero while the
// FP32 reference gradient ref = dyᵀ·x (dy: the unrounded output gradient) is not, decided without
// computing ref when that can be proven, so the CPU backend's statistics steps need not run a
// second dW matmul (the "reference" of frac_underflow, cpu_linear.cpp).
//
// Why the answer is exact: ref(o, i) = Σ_b dy(b, o)·x(b, i) is what oneDNN computes in FP32, in
// an order of its own. Only whether ref(o, i) is zero matters, and only where gw(o, i) is zero:
// - when column o of dy or column i of x is all zeros, or no row b has both dy(b, o) and x(b, i)
//   non-zero (bit masks of the non-zero rows), and every input is finite, every product is ±0
//   and so is ref(o, i), in any order, with or without FMA or flush-to-zero; the masks are built
//   in the pass over x and dy that checks them, the zeros of gw are found eight at a time
//   (AVX2) with the all-zero columns of x left out in the same compare (such a column, a ReLU
//   unit silent for the whole batch or a background pixel, is a column of zeros in gw and in
//   ref), and only the zeros these tests leave open cost a sum of products;
// - otherwise the K products that can be non-zero (the rows where both masks are set) are summed
//   in double, each exact there (an FP32 product is), the sums' own rounding far inside the
//   margin below: S = Σ p_b and A = Σ |p_b| (A > 0: a product of finite normal FP32 values is
//   not zero in double); the other products are ±0, which leave an FP32 sum as it is. Any FP32
//   summation of the K products, in any order and tree, rounded or fused, differs from S by at
//   most γ_K·A, γ_K = K·u/(1 - K·u), u = 2^-24, plus at most 2K·2^-126 lost to underflow
//   (gradual or flushed). So |S| > (2K + 2)·2^-24·A + (K + 1)·2^-124 proves ref(o, i) != 0 (an
//   overflow gives inf or NaN: not zero either). The products are read where they lie, one set
//   bit of the two masks' overlap at a time: gathering whole columns for dot products cost more
//   than the sums (docs/benchmarks.md, 2026-12-05, later).
// An element that neither test settles (near-total cancellation), a non-finite or FP32-subnormal
// input (flush-to-zero could change a product) or more products than 1/64 of the matmul's
// multiply-adds (where nearly everything flushes, the matmul is cheaper): the function returns -1
// and the caller computes ref with oneDNN as before. Either way the count is the one the
// reference matmul gives, bit for bit.
//
// The masks are built over ranges of columns and the zeros of gw are visited over ranges of its
// rows on up to `max_threads` threads (cpu_parallel.h): the count is a sum of integers, and the
// answer is -1 exactly when some zero is undecided or the products of all rows pass the budget,
// however the rows are cut, so it is the same on any thread count.
// Header-only (inline) so that it is compiled into cpu_linear.cpp and testable on its own.
// Training thread only; scratch buffers are the caller's, kept between steps.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_flush_scratch.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace mantissa::cpu_detail {

#if defined(__x86_64__) && defined(__GNUC__)
#define MANTISSA_FLUSH_ALWAYS_INLINE [[gnu::always_inline]]
#define MANTISSA_FLUSH_AVX2 [[gnu::target("avx2")]]
#define MANTISSA_FLUSH_DISPATCH 1
#else
#define MANTISSA_FLUSH_ALWAYS_INLINE
#endif

// The loops below are written to vectorise; each is compiled for baseline x86-64 and for AVX2
// (chosen at run time). Integer work only: the sums of products are the caller's.

// Over m (rows, cols) with rows `stride` apart: any[c] |= |m(r, c)| bits, and bit r % 64 of
// mask[(r / 64) * stride + c] set where m(r, c) is not ±0 (both zeroed by the caller). Returns
// non-zero when m holds an inf, NaN or subnormal.
MANTISSA_FLUSH_ALWAYS_INLINE inline std::uint32_t column_flags_body(const std::uint32_t* m, std::int64_t rows,
                                                                    std::int64_t cols, std::int64_t stride,
                                                                    std::uint32_t* any, std::uint64_t* mask) {
    std::uint32_t bad = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::uint32_t* row = m + r * stride;
        std::uint64_t* word = mask + (r / 64) * stride;
        const std::uint64_t bit = std::uint64_t{1} << (r % 64);
        for (std::int64_t c = 0; c < cols; ++c) {
            const std::uint32_t mag = row[c] & 0x7fffffffu;
            any[c] |= mag;
            word[c] |= mag != 0 ? bit : std::uint64_t{0};
            bad |= static_cast<std::uint32_t>(mag - 1u < 0x007fffffu) |
                   static_cast<std::uint32_t>(mag > 0x7f7fffffu);
        }
    }
    return bad;
}

// Calls visit(i) for each i in [0, n) where row[i] is ±0 and any[i] is not 0 (column i of x is
// not all ±0), in increasing order.
template <class Visit>
MANTISSA_FLUSH_ALWAYS_INLINE inline void for_each_open_zero_body(const std::uint32_t* row, const std::uint32_t* any,
                                                                 std::int64_t n, Visit& visit) {
    for (std::int64_t i = 0; i < n; ++i)
        if ((row[i] & 0x7fffffffu) == 0 && any[i] != 0) visit(i);
}

// #{i : ref[i] is not ±0 and gw[i] is ±0} (the count from the reference product).
MANTISSA_FLUSH_ALWAYS_INLINE inline std::int64_t flushed_against_body(const std::uint32_t* ref,
                                                                      const std::uint32_t* gw,
                                                                      std::int64_t n) {
    std::uint64_t flushed = 0;
    for (std::int64_t i = 0; i < n; ++i)
        flushed += static_cast<std::uint64_t>((ref[i] & 0x7fffffffu) != 0) &
                   static_cast<std::uint64_t>((gw[i] & 0x7fffffffu) == 0);
    return static_cast<std::int64_t>(flushed);
}

#ifdef MANTISSA_FLUSH_DISPATCH
MANTISSA_FLUSH_AVX2 inline std::uint32_t column_flags_avx2(const std::uint32_t* m, std::int64_t rows,
                                                           std::int64_t cols, std::int64_t stride,
                                                           std::uint32_t* any, std::uint64_t* mask) {
    return column_flags_body(m, rows, cols, stride, any, mask);
}
// Eight elements a compare; the open zeros' positions from the sign mask.
template <class Visit>
MANTISSA_FLUSH_AVX2 inline void for_each_open_zero_avx2(const std::uint32_t* row, const std::uint32_t* any,
                                                        std::int64_t n, Visit& visit) {
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
    const __m256i zero = _mm256_setzero_si256();
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i)), magnitude);
        const __m256i dead = _mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(any + i)), zero);
        const __m256i open = _mm256_andnot_si256(dead, _mm256_cmpeq_epi32(v, zero));
        auto bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(open)));
        for (; bits != 0; bits &= bits - 1) visit(i + __builtin_ctz(bits));
    }
    for (; i < n; ++i)
        if ((row[i] & 0x7fffffffu) == 0 && any[i] != 0) visit(i);
}
MANTISSA_FLUSH_AVX2 inline std::int64_t flushed_against_avx2(const std::uint32_t* ref, const std::uint32_t* gw,
                                                             std::int64_t n) {
    return flushed_against_body(ref, gw, n);
}
#endif

inline std::uint32_t column_flags(const std::uint32_t* m, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                                  std::uint32_t* any, std::uint64_t* mask) {
#ifdef MANTISSA_FLUSH_DISPATCH
    if (cpu_detail::cpu_has_avx2()) return column_flags_avx2(m, rows, cols, stride, any, mask);
#endif
    return column_flags_body(m, rows, cols, stride, any, mask);
}

// column_flags over the whole (rows, cols) matrix, its columns in ranges of 64 on `threads`
// threads (each column's flags are its own).
inline std::uint32_t column_flags_on(int threads, const std::uint32_t* m, std::int64_t rows, std::int64_t cols,
                                     std::uint32_t* any, std::uint64_t* mask) {
    std::array<std::uint32_t, kMaxPassThreads> bad{};
    for_ranges(cols, threads, 64, [&](std::int64_t c0, std::int64_t c1, int w) {
        bad[static_cast<std::size_t>(w)] = column_flags(m + c0, rows, c1 - c0, cols, any + c0, mask + c0);
    });
    std::uint32_t any_bad = 0;
    for (int w = 0; w < threads; ++w) any_bad |= bad[static_cast<std::size_t>(w)];
    return any_bad;
}

template <class Visit>
inline void for_each_open_zero(const std::uint32_t* row, const std::uint32_t* any, std::int64_t n, Visit& visit) {
#ifdef MANTISSA_FLUSH_DISPATCH
    if (cpu_detail::cpu_has_avx2()) return for_each_open_zero_avx2(row, any, n, visit);
#endif
    for_each_open_zero_body(row, any, n, visit);
}

// The reference count, from the reference product `ref` and the rounded gw (n values each).
inline std::int64_t count_flushed_against_reference(const float* ref, const float* gw, std::int64_t n) {
    const auto* rb = reinterpret_cast<const std::uint32_t*>(ref);
    const auto* gb = reinterpret_cast<const std::uint32_t*>(gw);
#ifdef MANTISSA_FLUSH_DISPATCH
    if (cpu_detail::cpu_has_avx2()) return flushed_against_avx2(rb, gb, n);
#endif
    return flushed_against_body(rb, gb, n);
}

// dy: (batch, out) row-major; x: (batch, in) row-major; gw: (out, in) row-major, already rounded.
// Returns #{(o, i) : |gw(o, i)| == 0 and ref(o, i) != 0}, or -1 when it must be computed.
inline std::int64_t count_flushed_weight_gradient(const float* dy, const float* x, const float* gw,
                                                  std::int64_t batch, std::int64_t out,
                                                  std::int64_t in, FlushCountScratch& s, int max_threads = 1) {
    if (batch <= 0 || out <= 0 || in <= 0) return 0;  // ref is all zeros (or empty)
    const std::int64_t words = (batch + 63) / 64;
    s.dy_any.assign(static_cast<std::size_t>(out), 0);
    s.x_any.assign(static_cast<std::size_t>(in), 0);
    s.dy_mask.assign(static_cast<std::size_t>(words * out), 0);
    s.x_mask.assign(static_cast<std::size_t>(words * in), 0);
    const auto* dyb = reinterpret_cast<const std::uint32_t*>(dy);
    const auto* xb = reinterpret_cast<const std::uint32_t*>(x);
    const auto threads_for = [&](std::int64_t n) {
        return std::min(kMaxPassThreads, pass_threads(n, elementwise_min_per_thread, max_threads));
    };
    if (column_flags_on(threads_for(batch * out), dyb, batch, out, s.dy_any.data(), s.dy_mask.data()) != 0 ||
        column_flags_on(threads_for(batch * in), xb, batch, in, s.x_any.data(), s.x_mask.data()) != 0)
        return -1;

    // Each zero of gw where some row b has both dy(b, o) and x(b, i) non-zero is decided from the
    // products of those rows (elsewhere every product is ±0, the inputs being finite, and ref is
    // zero: the all-zero columns of dy and x are not even visited). The products summed are
    // counted: past 1/64 of the matmul's, the matmul is the cheaper way (everything flushed, say).
    const auto* gb = reinterpret_cast<const std::uint32_t*>(gw);
    // A thread per 2^18 elements of gw: below that (a reference MLP's fc1 has 200,704), the
    // second thread's start and the rows' uneven costs took more than it saved (docs/benchmarks.md,
    // 2026-12-07, later).
    const int threads = std::min(kMaxPassThreads, pass_threads(out * in, std::int64_t{1} << 18, max_threads));
    // Each thread's column of dy_mask in a line of its own, and its counts in local variables
    // until its range is done: written at every row or zero, either shared a cache line between
    // the threads, which then took 2 to 3 times one thread's time (docs/benchmarks.md, 2026-12-07,
    // later).
    const std::int64_t word_stride = (words + 15) / 8 * 8;  // 64 bytes or more between two threads' words
    s.dy_word.resize(static_cast<std::size_t>(word_stride * threads));
    s.x_mask_t.resize(static_cast<std::size_t>(words * in));  // a zero's words side by side
    for (std::int64_t w = 0; w < words; ++w)
        for (std::int64_t i = 0; i < in; ++i)
            s.x_mask_t[static_cast<std::size_t>(i * words + w)] = s.x_mask[static_cast<std::size_t>(w * in + i)];
    const std::uint64_t* x_mask = s.x_mask_t.data();
    const std::int64_t budget = std::max<std::int64_t>(batch * out * in / 64, 4096);  // small ones: cheap either way
    // Per range of rows o: its products, its flushed zeros, whether one was undecided. A range
    // stops early once it alone passes the budget or meets an undecided zero: -1 either way.
    std::array<std::int64_t, kMaxPassThreads> products{}, flushed{};
    std::array<char, kMaxPassThreads> undecided{};
    for_ranges(out, threads, 1, [&](std::int64_t o0, std::int64_t o1, int range) {
        std::uint64_t* dy_word = s.dy_word.data() + range * word_stride;
        std::int64_t range_products = 0, range_flushed = 0;
        bool range_undecided = false;
        std::int64_t o = o0;
        auto visit = [&](std::int64_t i) {
            const std::uint64_t* xm = x_mask + i * words;
            // The products alternate between two pairs of sums, so that each addition need not
            // wait for the previous one (four cycles): 8% off the count on a 128 x 256 x 784
            // gradient with 841 flushed zeros (a timing harness, best of 2000 calls, 91 -> 84 us).
            double sum0 = 0.0, sum1 = 0.0, magnitude0 = 0.0, magnitude1 = 0.0;
            std::int64_t K = 0;
            for (std::int64_t w = 0; w < words; ++w) {
                std::uint64_t bits = xm[w] & dy_word[w];
                K += std::popcount(bits);
                const float* dy_rows = dy + w * 64 * out + o;
                const float* x_rows = x + w * 64 * in + i;
                auto product = [&] {
                    const std::int64_t b = std::countr_zero(bits);
                    bits &= bits - 1;
                    return static_cast<double>(dy_rows[b * out]) * static_cast<double>(x_rows[b * in]);
                };
                while (bits != 0) {
                    const double p0 = product();
                    sum0 += p0;
                    magnitude0 += std::fabs(p0);
                    if (bits == 0) break;
                    const double p1 = product();
                    sum1 += p1;
                    magnitude1 += std::fabs(p1);
                }
            }
            if (K == 0) return;  // no row has both: ref is zero
            range_products += K;
            const double k = static_cast<double>(K);
            if (std::fabs(sum0 + sum1) > (2.0 * k + 2.0) * 0x1p-24 * (magnitude0 + magnitude1) + (k + 1.0) * 0x1p-124)
                ++range_flushed;  // ref is certainly not zero
            else
                range_undecided = true;  // cancellation too close to call
        };
        for (; o < o1; ++o) {
            if (s.dy_any[static_cast<std::size_t>(o)] == 0) continue;
            for (std::int64_t w = 0; w < words; ++w) dy_word[w] = s.dy_mask[static_cast<std::size_t>(w * out + o)];
            for_each_open_zero(gb + o * in, s.x_any.data(), in, visit);
            if (range_undecided || range_products > budget) break;
        }
        const auto r = static_cast<std::size_t>(range);
        products[r] = range_products;
        flushed[r] = range_flushed;
        undecided[r] = range_undecided ? 1 : 0;
    });
    std::int64_t all_products = 0, all_flushed = 0;
    for (int w = 0; w < threads; ++w) {
        const auto r = static_cast<std::size_t>(w);
        if (undecided[r]) return -1;
        all_products += products[r];
        all_flushed += flushed[r];
    }
    return all_products > budget ? -1 : all_flushed;
}

}  // namespace mantissa::cpu_detail
