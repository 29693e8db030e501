// CpuBackend: the batched matmul of attention and the row softmax, forward and backward, with
// docs/numerics.md's rounding points ("Transformer ops").
//
// batched_matmul: an operand whose tensor holds values of the compute format (rounding would
// change nothing) and whose view has a unit row or column stride is read in place through its
// view; any other is copied into scratch and rounded there (the rounding the product needs
// anyway): in one pass with its layout kept when its matrices lie one after another, row by row
// or column by column (the probabilities, the transpose of them), else gathered into a plain
// (batch, rows, cols) copy. C is written in place through its view when it has a
// unit stride, else through a plain scratch that is scattered. oneDNN multiplies
// (CpuBatchedMatmul); when it refuses a layout, every operand is packed and it multiplies plain
// matrices. On the bf16 matmul path (cpu_bf16_choice.h) bf16 products copy both operands into
// bf16 bits instead (pack_bf16) for oneDNN's bf16 matmul, at about twice the FP32 rate on an
// AVX-512 BF16 core, and keep each copy in the ledger until its tensor is written
// (bf16_operand); a view without a unit stride, or a value those kernels would not multiply
// exactly, leaves the product on the FP32 path. The epilogue (alpha, the rounding to C's format)
// runs on each of C's elements, over the view's longest contiguous spans, rounding in the
// registers where the CPU can (cpu_rounded_store.h):
//   accumulator  C = rnd_C(alpha·acc)        output  C = rnd_C(alpha·rnd_C(acc))
// With gradient tracing on, C keeps no shadow (a previous one is dropped): the backward that
// reads C counts its own rounding only.
//
// softmax: per row, in FP32 from x's values: m = max (NaN when a NaN is seen), e_j = exp(x_j − m)
// (the engine's exp, numeric/elementary.h, vectorised),
// s = Σ e_j in column order from +0, y_j = e_j / s (PyTorch's CUDA kernels divide), rounded to
// y's format; masked entries (causal: columns after the row's position in its T×T block) are
// never read and written +0. The backward g_j = y_j·(dy_j − Σ_k dy_k·y_k), the sum in FP32 in
// column order, dx = rnd_dx(g), then rnd_dx(dx·scale) when scale is not 1; masked entries +0.
// It is linear in dy: with gradient tracing on, dx's shadow is the same backward of dy's shadow
// (unrounded, scaled).
//
// Threads (cpu_parallel.h, a thread per 2^16 values): the packing, the scatter and the epilogue
// share whole matrices or rows out, softmax its rows, each element computed as on one thread
// (the softmax's amax gathered as a maximum, its non-finite count as an integer sum), so the bits
// do not depend on the thread count; the products are oneDNN's (docs/numerics.md, "Threads").
//
// Scratch (kept between steps): the packed A, B and C (slots 10 to 12); the bf16 copies live in
// the ledger with their tensors (CpuLedger::bf16_copies). Training thread only.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_bf16_copy.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_rounded_store.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "error.h"
#include "numeric/convert.h"
#include "numeric/elementary.h"

namespace mantissa {

namespace {

enum Slot { slot_a = 10, slot_b = 11, slot_c = 12 };

// Calls f(element index in the tensor, position in the plain (batch, rows, cols) order) for every
// element of the matrices [b0, b1) of view v (matrix b: outer b / inner_count, inner
// b % inner_count), in that order.
template <class F>
void for_each_element(const BatchedMatmul& op, const StridedMatrix& v, std::int64_t rows, std::int64_t cols,
                      std::int64_t b0, std::int64_t b1, F f) {
    std::int64_t p = b0 * rows * cols;
    for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t o = b / op.inner_count, i = b % op.inner_count;
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t base = v.offset + o * v.outer_stride + i * v.inner_stride + r * v.row_stride;
            for (std::int64_t c = 0; c < cols; ++c) f(base + c * v.col_stride, p++);
        }
    }
}

// fn(b0, b1) over the matrices [0, batch) of a pass that touches `per_matrix` values of each,
// cut into ranges of whole matrices on up to max_threads threads.
template <class Fn>
void for_matrices(std::int64_t batch, std::int64_t per_matrix, int max_threads, Fn&& fn) {
    const int threads =
        cpu_detail::pass_threads(batch * per_matrix, cpu_detail::elementwise_min_per_thread, max_threads);
    cpu_detail::for_ranges(batch, threads, 1, [&](std::int64_t b0, std::int64_t b1, int) { fn(b0, b1); });
}

CpuStrided strides_of(const StridedMatrix& v) { return {v.outer_stride, v.inner_stride, v.row_stride, v.col_stride}; }

CpuStrided plain_strides(std::int64_t inner, std::int64_t rows, std::int64_t cols) {
    return {inner * rows * cols, rows * cols, cols, 1};
}

bool unit_stride(const StridedMatrix& v) { return v.row_stride == 1 || v.col_stride == 1; }

// One matrix operand as the product reads it.
struct Operand {
    const float* data = nullptr;
    CpuStrided strides;
    bool packed = false;
};

// How a view's matrices are copied into plain bf16 bits for the bf16 matmul path
// (cpu_bf16_choice.h): row by row when its rows are contiguous, else column by column when its
// columns are (a transposed operand); nothing without a unit stride. A matrix is `lines` runs of
// `run` contiguous values, `line_stride` apart, and the copy holds them in that order, so a view
// and its transpose (V and Vᵀ, P and Pᵀ) make the same copy.
struct Bf16Layout {
    bool usable = false, by_rows = false;
    std::int64_t lines = 0, run = 0, line_stride = 0;

    Bf16Layout(const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
        by_rows = v.col_stride == 1;
        usable = by_rows || v.row_stride == 1;
        lines = by_rows ? rows : cols;
        run = by_rows ? cols : rows;
        line_stride = by_rows ? v.row_stride : v.col_stride;
    }
};

// The copy of view v's matrices into dst, the values rounded to bf16 on the way where the
// tensor's format does not hold them (`round`: the FP32 probabilities), and whether every value
// is one the bf16 kernels multiply exactly. One pass that reads only the view's values (a head
// view reads a third of its QKV tensor) and writes half their bytes.
bool pack_bf16(const BatchedMatmul& op, const float* src, bool round, const StridedMatrix& v, const Bf16Layout& l,
               std::uint16_t* dst, int max_threads) {
    const std::int64_t size = l.lines * l.run;
    const bool dense = l.line_stride == l.run && v.inner_stride == size && v.outer_stride == op.inner_count * size;
    const auto copy = round ? round_to_bf16_exact : to_bf16_exact;
    std::atomic<bool> exact{true};
    for_matrices(op.batch_count(), size, max_threads, [&](std::int64_t b0, std::int64_t b1) {
        bool ok = true;
        if (dense) {
            ok = copy(src + v.offset + b0 * size, dst + b0 * size, (b1 - b0) * size);
        } else {
            for (std::int64_t b = b0; b < b1; ++b) {
                const float* matrix =
                    src + v.offset + (b / op.inner_count) * v.outer_stride + (b % op.inner_count) * v.inner_stride;
                for (std::int64_t i = 0; i < l.lines; ++i)
                    ok = copy(matrix + i * l.line_stride, dst + b * size + i * l.run, l.run) && ok;
            }
        }
        if (!ok) exact.store(false, std::memory_order_relaxed);
    });
    return exact.load(std::memory_order_relaxed);
}

#ifdef MANTISSA_ROUND_LANES
// The epilogue on n contiguous values with the rounding in the registers: one pass over C where
// the two-pass form reads and writes it up to three times (rounded, scaled, rounded again), the
// same product (no FMA) and round_output's bits.
template <lanes::Method M>
MANTISSA_LANES_TARGET inline __m256 epilogue8(__m256 v, __m256 alpha, bool round_first, const lanes::Rounding& r) {
    if (round_first) v = lanes::round8<M>(v, r);
    return lanes::round8<M>(_mm256_mul_ps(v, alpha), r);
}

template <lanes::Method M>
MANTISSA_LANES_TARGET void epilogue_lanes(float* row, std::int64_t n, float alpha, bool round_first,
                                          const lanes::Rounding& rounding) {
    const lanes::Rounding r = rounding;
    const __m256 a = _mm256_set1_ps(alpha);
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(row + j, epilogue8<M>(_mm256_loadu_ps(row + j), a, round_first, r));
    if (j < n) {
        const __m256i tail = lanes::first_lanes(n - j);
        _mm256_maskstore_ps(row + j, tail, epilogue8<M>(_mm256_maskload_ps(row + j, tail), a, round_first, r));
    }
}
#endif

// The epilogue on n values at `row` (a stride apart): alpha at its point, rounded to C's format.
void epilogue(float* row, std::int64_t n, std::int64_t stride, const BatchedMatmul& op, const RoundedStore& out) {
    const Format format = out.format;
    const bool round_first = op.alpha_point == AlphaPoint::output && op.alpha != 1.0f;
    if (stride == 1) {
        if (format == Format::fp32 && op.alpha == 1.0f) return;
#ifdef MANTISSA_ROUND_LANES
        if (out.in_lanes)
            return lanes::with_method(out.rounding.method, [&](auto method) {
                epilogue_lanes<decltype(method)::value>(row, n, op.alpha, round_first, out.rounding);
            });
#endif
        if (round_first) round_output(format, row, n);
        if (op.alpha != 1.0f)
            for (std::int64_t j = 0; j < n; ++j) row[j] *= op.alpha;
        round_output(format, row, n);
        return;
    }
    for (std::int64_t j = 0; j < n; ++j) {
        float v = row[j * stride];
        if (round_first) v = round_to(format, v);
        row[j * stride] = round_to(format, v * op.alpha);
    }
}

// Over n values: the count of non-finite ones; when there are none, *max_out = max x_j and
// *amax_out = max |x_j| (-inf and +0 for n = 0). Eight lanes at a time in GCC's vector types (GCC
// leaves a plain loop of float maxima scalar, for NaN's sake): a maximum of finite values is the
// same in any order, but for the sign of a zero maximum, which exp(x_j - m) does not see
// (x_j - (±0) is x_j, or ±0 when x_j is a zero, and e^±0 = 1).
using Lanes = float __attribute__((vector_size(32)));
using IntLanes = std::int32_t __attribute__((vector_size(32)));

MANTISSA_HOT_WIDE std::int64_t finite_max(const float* __restrict x, std::int64_t n, float* max_out,
                                          float* amax_out) {
    constexpr float largest = std::numeric_limits<float>::max();
    constexpr float inf = std::numeric_limits<float>::infinity();
    const IntLanes abs_mask = IntLanes{} + 0x7fffffff;
    Lanes m = Lanes{} - inf, a = Lanes{}, big = Lanes{} + largest;
    IntLanes bad = IntLanes{};
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        Lanes v;
        std::memcpy(&v, x + j, sizeof v);
        const Lanes av = reinterpret_cast<Lanes>(reinterpret_cast<IntLanes>(v) & abs_mask);
        m = v > m ? v : m;
        a = av > a ? av : a;
        bad -= !(av <= big);  // a true comparison is -1 in every bit
    }
    float mx = -inf, amax = 0.0f;
    std::int64_t nonfinite = 0;
    for (int k = 0; k < 8; ++k) {
        mx = m[k] > mx ? m[k] : mx;
        amax = a[k] > amax ? a[k] : amax;
        nonfinite += bad[k];
    }
    for (; j < n; ++j) {
        const float v = x[j], av = std::fabs(v);
        mx = v > mx ? v : mx;
        amax = av > amax ? av : amax;
        nonfinite += !(av <= largest);
    }
    *max_out = mx;
    *amax_out = amax;
    return nonfinite;
}

// y_j = exp(x_j - m), each value on its own (vectorised; the row's sum is taken after, in order);
// y may be x.
MANTISSA_HOT_WIDE void exp_shifted(const float* x, float m, float* y, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) y[j] = exp_poly(x[j] - m);
}

MANTISSA_HOT void divide_by(float* y, float s, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) y[j] = y[j] / s;
}

// The softmax's row sums eight rows at a time, a row per vector lane: row i's first seen[i]
// values, in column order from +0, as a plain loop over the row would sum them. A row's sum is a
// chain of dependent adds, each waiting out the adder's latency; eight chains side by side take
// about the time of one (the whole forward on the GPT's scores: 1.83 ms a call, against 2.62-2.73
// ms with a row at a time).
// Eight columns at a time are read as a vector from each row and turned into eight column
// vectors (transpose8); the last columns one value at a time. A lane past its row's end adds +0,
// which changes no sum (one that starts at +0 never becomes -0), and the values it reads there
// (inside the row) are discarded; the lanes of rows past `count` (a last block) read row 0 and
// add nothing.
constexpr int kSumLanes = 8;

// The 8x8 transpose in place: r[i] holds row i's eight values, and then column i's.
inline void transpose8(Lanes* r) {
    Lanes t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; ++h) {
            u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int k = 0; k < 4; ++k) {
        r[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

MANTISSA_HOT void lane_row_sums(const float* a, std::int64_t row_stride, const std::int64_t* seen, int count,
                                float* sums) {
    const float* ra[kSumLanes];
    IntLanes length = IntLanes{};
    std::int64_t longest = 0;
    for (int i = 0; i < kSumLanes; ++i) {
        const std::int64_t row = i < count ? i : 0;
        ra[i] = a + row * row_stride;
        length[i] = i < count ? static_cast<std::int32_t>(seen[i]) : 0;
        longest = std::max<std::int64_t>(longest, length[i]);
    }
    Lanes sum = Lanes{};
    std::int64_t j = 0;
    for (; j + 8 <= longest; j += 8) {
        Lanes v[8];
        for (int i = 0; i < 8; ++i) std::memcpy(&v[i], ra[i] + j, sizeof(Lanes));
        transpose8(v);
        for (int k = 0; k < 8; ++k) sum += (IntLanes{} + static_cast<std::int32_t>(j + k)) < length ? v[k] : Lanes{};
    }
    for (; j < longest; ++j) {
        Lanes v;
        for (int i = 0; i < kSumLanes; ++i) v[i] = ra[i][j];
        sum += (IntLanes{} + static_cast<std::int32_t>(j)) < length ? v : Lanes{};
    }
    for (int i = 0; i < count; ++i) sums[i] = sum[i];
}

// g = y ⊙ (dy − Σ dy⊙y) over the first `seen` entries of a row, into dx (which may be y or dy).
// Row by row: the backward reads two tensors from memory, and eight rows' sums side by side (as
// the forward's) measured slower, 1.80 against 1.63-1.69 ms a call on the GPT's scores.
void softmax_gradient_row(const float* y, const float* dy, float* dx, std::int64_t seen) {
    float sum = 0.0f;
    for (std::int64_t j = 0; j < seen; ++j) sum += dy[j] * y[j];
    for (std::int64_t j = 0; j < seen; ++j) dx[j] = y[j] * (dy[j] - sum);
}

}  // namespace

// ---- batched matmul

void CpuBackend::batched_matmul_impl(const BatchedMatmul& op, const Tensor& a_in, const StridedMatrix& a_view,
                                     const Tensor& b_in, const StridedMatrix& b_view, Tensor& c_out,
                                     const StridedMatrix& c_view) {
    const std::int64_t batch = op.batch_count();
    if (batch == 0 || op.m == 0 || op.n == 0) return;
    if (m_tracing) {
        const auto it = m_shadows.find(&c_out);
        if (it != m_shadows.end()) it->second.valid = false;
    }
    float* c = cpu(c_out).data();
    const Format cf = c_out.format();
    const int max_threads = m_matmul.threads();

    // The plain copy of an operand, rounded to the compute format. A view whose matrices lie one
    // after another, each row by row or each column by column (the probabilities and their
    // transpose), is a dense block: rounded into the copy in one vectorised pass, its layout kept
    // unless `plain` asks for row by row (oneDNN refused the layout).
    auto pack = [&](const Tensor& t, const StridedMatrix& v, std::int64_t rows, std::int64_t cols, int slot,
                    bool plain) {
        const float* src = cpu(t).data();
        float* buf = scratch(slot, batch * rows * cols);
        const bool round = !format_contains(op.compute, t.format());
        const std::int64_t size = rows * cols;
        const bool batch_dense = v.inner_stride == size && v.outer_stride == op.inner_count * size;
        const bool by_rows = v.col_stride == 1 && v.row_stride == cols;
        const bool by_columns = !plain && v.row_stride == 1 && v.col_stride == rows;
        if (batch_dense && (by_rows || by_columns)) {
            for_matrices(batch, size, max_threads, [&](std::int64_t b0, std::int64_t b1) {
                const float* from = src + v.offset + b0 * size;
                const auto n = static_cast<std::size_t>((b1 - b0) * size);
                if (round) round_array(op.compute, from, buf + b0 * size, n);
                else std::copy(from, from + n, buf + b0 * size);
            });
            return Operand{buf, {v.outer_stride, v.inner_stride, v.row_stride, v.col_stride}, true};
        }
        for_matrices(batch, rows * cols, max_threads, [&](std::int64_t b0, std::int64_t b1) {
            for_each_element(op, v, rows, cols, b0, b1, [&](std::int64_t at, std::int64_t p) { buf[p] = src[at]; });
            if (round)
                round_array(op.compute, buf + b0 * rows * cols, static_cast<std::size_t>((b1 - b0) * rows * cols));
        });
        return Operand{buf, plain_strides(op.inner_count, rows, cols), true};
    };
    auto operand = [&](const Tensor& t, const StridedMatrix& v, std::int64_t rows, std::int64_t cols, int slot) {
        if (format_contains(op.compute, t.format()) && unit_stride(v))
            return Operand{cpu(t).data() + v.offset, strides_of(v), false};
        return pack(t, v, rows, cols, slot, false);
    };

    // The bf16 matmul path: bf16 operands copied into bf16 bits for oneDNN's bf16 matmul, where the
    // backend's linear layers take it too. The same products, in another summation order.
    auto bf16_product = [&](float* c_target, const CpuStrided& c_strides, int threads) {
        if (op.compute != Format::bf16 || !m_matmul.bf16_enabled()) return false;
        CpuStrided as, bs;
        const std::uint16_t* a16 = bf16_operand(op, a_in, a_view, op.m, op.k, as);
        const std::uint16_t* b16 = a16 ? bf16_operand(op, b_in, b_view, op.k, op.n, bs) : nullptr;
        return b16 && m_batched_matmul.multiply(op.outer_count, op.inner_count, op.m, op.n, op.k, a16, as, b16, bs,
                                                c_target, c_strides, threads);
    };

    if (op.k > 0) {
        const bool c_direct = unit_stride(c_view);
        float* c_target = c_direct ? c + c_view.offset : scratch(slot_c, batch * op.m * op.n);
        CpuStrided c_strides = c_direct ? strides_of(c_view) : plain_strides(op.inner_count, op.m, op.n);
        const int threads = CpuMatmul::threads_for(batch * op.m * op.n * op.k, m_matmul.threads());
        if (!bf16_product(c_target, c_strides, threads)) {
            Operand a = operand(a_in, a_view, op.m, op.k, slot_a);
            Operand b = operand(b_in, b_view, op.k, op.n, slot_b);
            if (!m_batched_matmul.multiply(op.outer_count, op.inner_count, op.m, op.n, op.k, a.data, a.strides,
                                           b.data, b.strides, c_target, c_strides, threads)) {
                // oneDNN has no matmul for these strides: plain matrices.
                a = pack(a_in, a_view, op.m, op.k, slot_a, true);
                b = pack(b_in, b_view, op.k, op.n, slot_b, true);
                c_target = scratch(slot_c, batch * op.m * op.n);
                c_strides = plain_strides(op.inner_count, op.m, op.n);
                if (!m_batched_matmul.multiply(op.outer_count, op.inner_count, op.m, op.n, op.k, a.data,
                                               a.strides, b.data, b.strides, c_target, c_strides, threads))
                    throw Error("oneDNN could not create a batched matmul of " + std::to_string(batch) +
                                " products (" + std::to_string(op.m) + " x " + std::to_string(op.k) + ") x (" +
                                std::to_string(op.k) + " x " + std::to_string(op.n) + ").");
            }
        }
        if (c_target != c + c_view.offset) {  // scatter the plain result into C's view
            const float* src = c_target;
            for_matrices(batch, op.m * op.n, max_threads, [&](std::int64_t b0, std::int64_t b1) {
                for_each_element(op, c_view, op.m, op.n, b0, b1,
                                 [&](std::int64_t at, std::int64_t p) { c[at] = src[p]; });
            });
        }
    } else {  // an empty sum: the accumulator is +0
        for_each_element(op, c_view, op.m, op.n, 0, batch, [&](std::int64_t at, std::int64_t) { c[at] = 0.0f; });
    }

    // The epilogue, elementwise, over C's view in its longest contiguous spans: the whole view
    // when its matrices are stored one after another (the scores), a position's row across the
    // heads when the heads sit side by side (a head view), else row by row: a rounding call per
    // 2048 values rather than per head row of 32.
    const StridedMatrix& cv = c_view;
    float* c0 = c + cv.offset;
    const RoundedStore out(cf, m_round_in_lanes);
    if (cv.col_stride == 1 && cv.row_stride == op.n && cv.inner_stride == op.m * op.n &&
        cv.outer_stride == op.inner_count * op.m * op.n) {
        const std::int64_t total = batch * op.m * op.n;
        cpu_detail::for_ranges(total, pass_threads(total, cpu_detail::elementwise_min_per_thread),
                               cpu_detail::kPieceValues, [&](std::int64_t first, std::int64_t last, int) {
            cpu_detail::for_pieces(first, last, [&](std::int64_t begin, std::int64_t end) {
                epilogue(c0 + begin, end - begin, 1, op, out);
            });
        });
    } else if (cv.col_stride == 1 && cv.inner_stride == op.n) {
        const std::int64_t rows = op.outer_count * op.m, span = op.inner_count * op.n;
        cpu_detail::for_ranges(rows, pass_threads(rows * span, cpu_detail::elementwise_min_per_thread), 1,
                               [&](std::int64_t q0, std::int64_t q1, int) {
            for (std::int64_t q = q0; q < q1; ++q)
                epilogue(c0 + (q / op.m) * cv.outer_stride + (q % op.m) * cv.row_stride, span, 1, op, out);
        });
    } else {  // row q: matrix q / m, its row q % m
        const std::int64_t rows = batch * op.m;
        cpu_detail::for_ranges(rows, pass_threads(rows * op.n, cpu_detail::elementwise_min_per_thread), 1,
                               [&](std::int64_t q0, std::int64_t q1, int) {
            for (std::int64_t q = q0; q < q1; ++q) {
                const std::int64_t b = q / op.m, r = q % op.m;
                const std::int64_t o = b / op.inner_count, i = b % op.inner_count;
                epilogue(c0 + o * cv.outer_stride + i * cv.inner_stride + r * cv.row_stride, op.n, cv.col_stride, op,
                         out);
            }
        });
    }
}

const std::uint16_t* CpuBackend::bf16_operand(const BatchedMatmul& op, const Tensor& t, const StridedMatrix& v,
                                              std::int64_t rows, std::int64_t cols, CpuStrided& strides) {
    const Bf16Layout layout(v, rows, cols);
    if (!layout.usable) return nullptr;
    const std::int64_t size = rows * cols;
    strides = layout.by_rows ? plain_strides(op.inner_count, rows, cols)
                             : CpuStrided{op.inner_count * size, size, 1, rows};
    const CpuTensor& tensor = cpu(t);
    const bool round = !format_contains(Format::bf16, t.format());
    const std::array<std::int64_t, 9> key = {v.offset,      v.outer_stride,  v.inner_stride,
                                             op.outer_count, op.inner_count, layout.lines,
                                             layout.run,     layout.line_stride, round ? 1 : 0};
    bool current = false;
    CpuBf16Copy& copy = bf16_copy_slot(tensor, key, op.batch_count() * size, current);
    if (!current) {
        copy.exact = pack_bf16(op, tensor.data(), round, v, layout, copy.bits.data(), m_matmul.threads());
    }
    return copy.exact ? copy.bits.data() : nullptr;
}

// ---- softmax

void CpuBackend::softmax_forward_impl(const Tensor& x_in, Tensor& y_out, std::int64_t rows, bool causal,
                                      SoftmaxStats* stats) {
    const std::int64_t cols = x_in.cols();
    const float* x = cpu(x_in).data();
    float* y = cpu(y_out).data();
    // Each range's amax of the finite values (>= +0, so the largest of the ranges' is the whole's)
    // and its count of non-finite ones.
    const int threads =
        std::min(cpu_detail::kMaxPassThreads, pass_threads(rows * cols, cpu_detail::elementwise_min_per_thread));
    std::array<float, cpu_detail::kMaxPassThreads> amaxes{};
    std::array<std::int64_t, cpu_detail::kMaxPassThreads> nonfinites{};
    cpu_detail::for_ranges(rows, threads, 1, [&](std::int64_t r0, std::int64_t r1, int range) {
        float amax = 0.0f;
        std::int64_t nonfinite = 0;
        for (std::int64_t r = r0; r < r1; r += kSumLanes) {  // a block of rows, for their sums
            const int count = static_cast<int>(std::min<std::int64_t>(kSumLanes, r1 - r));
            std::int64_t seen[kSumLanes];
            for (int i = 0; i < count; ++i) {
                seen[i] = causal ? (r + i) % cols + 1 : cols;
                const float* xr = x + (r + i) * cols;
                float m, row_amax;
                if (finite_max(xr, seen[i], &m, &row_amax) == 0) {
                    amax = std::max(amax, row_amax);
                } else {  // the row again, value by value: the finite ones' amax, ±inf, NaN
                    m = -std::numeric_limits<float>::infinity();
                    bool nan = false;
                    for (std::int64_t j = 0; j < seen[i]; ++j) {
                        const float v = xr[j];
                        if (std::isfinite(v)) {
                            amax = std::max(amax, std::abs(v));
                            m = std::max(m, v);
                        } else {
                            ++nonfinite;
                            if (std::isnan(v)) nan = true;
                            else if (v > m) m = v;
                        }
                    }
                    if (nan) m = std::numeric_limits<float>::quiet_NaN();
                }
                exp_shifted(xr, m, y + (r + i) * cols, seen[i]);
            }
            float sums[kSumLanes];
            lane_row_sums(y + r * cols, cols, seen, count, sums);
            for (int i = 0; i < count; ++i) {
                float* yr = y + (r + i) * cols;
                divide_by(yr, sums[i], seen[i]);
                std::fill(yr + seen[i], yr + cols, 0.0f);
                round_output(y_out.format(), yr, seen[i]);
            }
        }
        amaxes[static_cast<std::size_t>(range)] = amax;
        nonfinites[static_cast<std::size_t>(range)] = nonfinite;
    });
    if (stats) {
        stats->amax = *std::max_element(amaxes.begin(), amaxes.begin() + threads);
        stats->nonfinite = 0;
        for (int i = 0; i < threads; ++i) stats->nonfinite += nonfinites[static_cast<std::size_t>(i)];
    }
}

void CpuBackend::softmax_backward_impl(const Tensor& y_in, const Tensor& dy_in, Tensor& dx_out, std::int64_t rows,
                                       bool causal, float scale) {
    const std::int64_t cols = y_in.cols();
    const float* y = cpu(y_in).data();
    const float* dy = cpu(dy_in).data();
    const float* sdy = nullptr;
    float* sdx = trace_backward(dy_in, dx_out, rows * cols, true, &sdy);
    float* dx = cpu(dx_out).data();
    const Format f = dx_out.format();
    cpu_detail::for_ranges(rows, pass_threads(rows * cols, cpu_detail::elementwise_min_per_thread), 1,
                           [&](std::int64_t r0, std::int64_t r1, int) {
        for (std::int64_t r = r0; r < r1; ++r) {
            const std::int64_t seen = causal ? r % cols + 1 : cols;
            const std::int64_t at = r * cols;
            float* dxr = dx + at;
            softmax_gradient_row(y + at, dy + at, dxr, seen);
            if (sdx) {  // the shadow: the backward without any rounding
                float* s = sdx + at;
                if (sdy) softmax_gradient_row(y + at, sdy + at, s, seen);
                else std::memcpy(s, dxr, static_cast<std::size_t>(seen) * sizeof(float));
                if (scale != 1.0f)
                    for (std::int64_t j = 0; j < seen; ++j) s[j] *= scale;
                std::fill(s + seen, s + cols, 0.0f);
            }
            round_output(f, dxr, seen);
            if (scale != 1.0f) {
                for (std::int64_t j = 0; j < seen; ++j) dxr[j] *= scale;
                round_output(f, dxr, seen);
            }
            std::fill(dxr + seen, dxr + cols, 0.0f);
        }
    });
}

}  // namespace mantissa
