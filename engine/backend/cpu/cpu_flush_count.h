// count_flushed_weight_gradient: how many elements of a rounded weight gradient are zero while the
// FP32 reference gradient ref = dyᵀ·x (dy: the unrounded output gradient) is not, decided without
// computing ref when that can be proven, so the CPU backend's statistics steps need not run a
// second dW matmul (the "reference" of frac_underflow, cpu_linear.cpp).
//
// Why the answer is exact: ref(o, i) = Σ_b dy(b, o)·x(b, i) is what oneDNN computes in FP32, in
// an order of its own. Only whether ref(o, i) is zero matters, and only where gw(o, i) is zero:
// - when column o of dy or column i of x is all zeros, or no row b has both dy(b, o) and x(b, i)
//   non-zero (bit masks of the non-zero rows), and every input is finite, every product is ±0
//   and so is ref(o, i), in any order, with or without FMA or flush-to-zero;
// - otherwise the products are summed exactly in double (an FP32 product is exact in double):
//   S = Σ p_b and A = Σ |p_b|. Any FP32 summation of K products, in any order and tree, with the
//   products rounded or fused, differs from S by at most γ_K·A, γ_K = K·u/(1 - K·u), u = 2^-24,
//   plus at most 2K·2^-126 lost to underflow (gradual or flushed); with A == 0 every product is
//   ±0. So |S| > (2K + 2)·2^-24·A + (K + 1)·2^-124 proves ref(o, i) != 0 (an overflow gives inf
//   or NaN: not zero either), and A == 0 proves it zero.
// An element that neither test settles (near-total cancellation), a non-finite or FP32-subnormal
// input (flush-to-zero could change a product) or too many elements to decide cheaply: the
// function returns -1 and the caller computes ref with oneDNN as before. Either way the count is
// the one the reference matmul gives, bit for bit.
//
// Header-only (inline) so that it is compiled into cpu_linear.cpp and testable on its own.
// Training thread only; scratch buffers are the caller's, kept between steps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mantissa::cpu_detail {

struct FlushCountScratch {
    std::vector<std::uint32_t> x_any, dy_any;  // per column: OR of |bits| (non-zero: not all ±0)
    std::vector<std::int64_t> open_per_row;    // per row of gw: zeros the column flags leave open
    std::vector<double> x_t;                   // columns of x as contiguous rows, (in, batch)
    std::vector<unsigned char> x_t_ready;      // which columns x_t holds
    std::vector<double> dy_col;                // one column of dy, (batch)
    std::vector<std::uint64_t> x_mask, dy_mask;  // which rows of a column are not ±0, 64 a word
};

#if defined(__x86_64__) && defined(__GNUC__)
#define MANTISSA_FLUSH_ALWAYS_INLINE [[gnu::always_inline]]
#define MANTISSA_FLUSH_AVX2 [[gnu::target("avx2")]]
#define MANTISSA_FLUSH_DISPATCH 1
#else
#define MANTISSA_FLUSH_ALWAYS_INLINE
#endif

// The loops below are written to vectorise; each is compiled for baseline x86-64 and for AVX2
// (chosen at run time). Integer work and exact products only, except the two double sums of a
// dot, whose order does not matter to the bound (see the file comment).

// any[c] |= |m(r, c)| bits over all rows; returns non-zero when m holds an inf, NaN or subnormal.
MANTISSA_FLUSH_ALWAYS_INLINE inline std::uint32_t column_or_body(const std::uint32_t* m, std::int64_t rows,
                                                                 std::int64_t cols, std::uint32_t* any) {
    std::uint32_t bad = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::uint32_t* row = m + r * cols;
        for (std::int64_t c = 0; c < cols; ++c) {
            const std::uint32_t mag = row[c] & 0x7fffffffu;
            any[c] |= mag;
            bad |= static_cast<std::uint32_t>(mag - 1u < 0x007fffffu) |
                   static_cast<std::uint32_t>(mag > 0x7f7fffffu);
        }
    }
    return bad;
}

// Zeros of gw row `row` (n values) whose column is flagged in x_any.
MANTISSA_FLUSH_ALWAYS_INLINE inline std::int64_t open_in_row_body(const std::uint32_t* row,
                                                                   const std::uint32_t* x_any,
                                                                   std::int64_t n) {
    std::uint32_t open = 0;  // n < 2^32 per row
    for (std::int64_t i = 0; i < n; ++i)
        open += static_cast<std::uint32_t>((row[i] & 0x7fffffffu) == 0) &
                static_cast<std::uint32_t>(x_any[i] != 0);
    return open;
}

// S = Σ a[b]·x[b] and A = Σ |a[b]·x[b]| (products exact: the inputs are FP32 values), in 4 lanes.
MANTISSA_FLUSH_ALWAYS_INLINE inline void dot_body(const double* a, const double* x, std::int64_t n,
                                                  double& sum, double& magnitude) {
    double s[4] = {0, 0, 0, 0}, m[4] = {0, 0, 0, 0};
    const std::int64_t full = n - n % 4;
    for (std::int64_t b = 0; b < full; b += 4)
        for (int k = 0; k < 4; ++k) {
            const double p = a[b + k] * x[b + k];
            s[k] += p;
            m[k] += std::fabs(p);
        }
    for (std::int64_t b = full; b < n; ++b) {
        const double p = a[b] * x[b];
        s[0] += p;
        m[0] += std::fabs(p);
    }
    sum = (s[0] + s[1]) + (s[2] + s[3]);
    magnitude = (m[0] + m[1]) + (m[2] + m[3]);
}

#ifdef MANTISSA_FLUSH_DISPATCH
MANTISSA_FLUSH_AVX2 inline std::uint32_t column_or_avx2(const std::uint32_t* m, std::int64_t rows,
                                                        std::int64_t cols, std::uint32_t* any) {
    return column_or_body(m, rows, cols, any);
}
MANTISSA_FLUSH_AVX2 inline std::int64_t open_in_row_avx2(const std::uint32_t* row, const std::uint32_t* x_any,
                                                         std::int64_t n) {
    return open_in_row_body(row, x_any, n);
}
MANTISSA_FLUSH_AVX2 inline void dot_avx2(const double* a, const double* x, std::int64_t n, double& sum,
                                         double& magnitude) {
    dot_body(a, x, n, sum, magnitude);
}
inline bool flush_count_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif

inline std::uint32_t column_or(const std::uint32_t* m, std::int64_t rows, std::int64_t cols,
                               std::uint32_t* any) {
#ifdef MANTISSA_FLUSH_DISPATCH
    if (flush_count_has_avx2()) return column_or_avx2(m, rows, cols, any);
#endif
    return column_or_body(m, rows, cols, any);
}

inline std::int64_t open_in_row(const std::uint32_t* row, const std::uint32_t* x_any, std::int64_t n) {
#ifdef MANTISSA_FLUSH_DISPATCH
    if (flush_count_has_avx2()) return open_in_row_avx2(row, x_any, n);
#endif
    return open_in_row_body(row, x_any, n);
}

inline void dot_exact_products(const double* a, const double* x, std::int64_t n, double& sum,
                               double& magnitude) {
#ifdef MANTISSA_FLUSH_DISPATCH
    if (flush_count_has_avx2()) return dot_avx2(a, x, n, sum, magnitude);
#endif
    dot_body(a, x, n, sum, magnitude);
}

// dy: (batch, out) row-major; x: (batch, in) row-major; gw: (out, in) row-major, already rounded.
// Returns #{(o, i) : |gw(o, i)| == 0 and ref(o, i) != 0}, or -1 when it must be computed.
inline std::int64_t count_flushed_weight_gradient(const float* dy, const float* x, const float* gw,
                                                  std::int64_t batch, std::int64_t out,
                                                  std::int64_t in, FlushCountScratch& s) {
    if (batch <= 0 || out <= 0 || in <= 0) return 0;  // ref is all zeros (or empty)
    s.dy_any.assign(static_cast<std::size_t>(out), 0);
    s.x_any.assign(static_cast<std::size_t>(in), 0);
    const auto* dyb = reinterpret_cast<const std::uint32_t*>(dy);
    const auto* xb = reinterpret_cast<const std::uint32_t*>(x);
    if (column_or(dyb, batch, out, s.dy_any.data()) != 0 || column_or(xb, batch, in, s.x_any.data()) != 0)
        return -1;

    // The zeros of gw that the column flags do not settle, row by row.
    const auto* gb = reinterpret_cast<const std::uint32_t*>(gw);
    s.open_per_row.assign(static_cast<std::size_t>(out), 0);
    std::int64_t open = 0;
    for (std::int64_t o = 0; o < out; ++o) {
        if (s.dy_any[static_cast<std::size_t>(o)] == 0) continue;
        const std::int64_t n = open_in_row(gb + o * in, s.x_any.data(), in);
        s.open_per_row[static_cast<std::size_t>(o)] = n;
        open += n;
    }
    if (open == 0) return 0;
    // Deciding an element costs a dot product of length batch: beyond a few percent of the
    // elements (and a thousand) the matmul is cheaper.
    if (open > 1024 && open * 16 > out * in) return -1;

    s.x_t.resize(static_cast<std::size_t>(in * batch));
    s.x_t_ready.assign(static_cast<std::size_t>(in), 0);
    s.dy_col.resize(static_cast<std::size_t>(batch));
    const std::int64_t words = (batch + 63) / 64;
    s.x_mask.resize(static_cast<std::size_t>(in * words));
    s.dy_mask.resize(static_cast<std::size_t>(words));
    // Column c of m, (rows, cols) row-major, as doubles in `col` and a mask of its non-zeros.
    auto gather = [words](const float* m, std::int64_t rows, std::int64_t cols, std::int64_t c,
                          double* col, std::uint64_t* mask) {
        std::fill_n(mask, words, std::uint64_t{0});
        for (std::int64_t r = 0; r < rows; ++r) {
            const float v = m[r * cols + c];
            col[r] = static_cast<double>(v);
            mask[r / 64] |= static_cast<std::uint64_t>(v != 0.0f) << (r % 64);
        }
    };

    const double k = static_cast<double>(batch);
    const double relative = (2.0 * k + 2.0) * std::ldexp(1.0, -24);
    const double absolute = (k + 1.0) * std::ldexp(1.0, -124);
    std::int64_t flushed = 0;
    for (std::int64_t o = 0; o < out; ++o) {
        if (s.open_per_row[static_cast<std::size_t>(o)] == 0) continue;
        gather(dy, batch, out, o, s.dy_col.data(), s.dy_mask.data());
        const std::uint32_t* row = gb + o * in;
        for (std::int64_t i = 0; i < in; ++i) {
            if ((row[i] & 0x7fffffffu) != 0 || s.x_any[static_cast<std::size_t>(i)] == 0) continue;
            double* xi = s.x_t.data() + i * batch;
            std::uint64_t* xm = s.x_mask.data() + i * words;
            if (!s.x_t_ready[static_cast<std::size_t>(i)]) {  // column i of x, gathered once
                gather(x, batch, in, i, xi, xm);
                s.x_t_ready[static_cast<std::size_t>(i)] = 1;
            }
            // No row where both are non-zero: every product is ±0 (the inputs are finite).
            std::uint64_t overlap = 0;
            for (std::int64_t w = 0; w < words; ++w) overlap |= xm[w] & s.dy_mask[static_cast<std::size_t>(w)];
            if (overlap == 0) continue;
            double sum, magnitude;
            dot_exact_products(s.dy_col.data(), xi, batch, sum, magnitude);
            if (magnitude == 0.0) continue;  // every product is ±0: ref is zero
            if (std::fabs(sum) > relative * magnitude + absolute) {
                ++flushed;  // ref is certainly not zero
                continue;
            }
            return -1;  // cancellation too close to call
        }
    }
    return flushed;
}

}  // namespace mantissa::cpu_detail
