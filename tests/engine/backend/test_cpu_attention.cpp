// The CPU backend's batched matmul and row softmax against independent references written here
// in double: products of operands rounded to the compute format (fp32, tf32, fp16, bf16) summed
// within the FP32 bound, alpha at the accumulator or after the output's rounding (checked
// exactly on integer operands, where the FP32 sum is exact), heads read straight out of a packed
// QKV tensor and written straight into a (batch·T, dim) one, views without a unit stride, the
// backward products against central finite differences, bf16 products on the bf16 matmul path
// and on the FP32 path, their bf16 copies kept until a write, the epilogue rounded in the
// registers as in two passes; the softmax's forward in fp32, bf16 and fp16, the causal mask
// (exact zeros, rows summing to 1), its telemetry (largest finite logit, non-finite count),
// non-finite rows, and its backward (with the scores' scale) against finite differences and the
// analytic gradient. docs/numerics.md, "Transformer ops".
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "numeric/convert.h"
#include "numeric/elementary.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::all_in_format;
using conv_test::make;
using conv_test::make_with;
using conv_test::mismatch;
using conv_test::rounded;
using conv_test::to_double;
using conv_test::unit_roundoff;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::AlphaPoint)

namespace {

// Element (i, j) of matrix b of a view, as an index into its tensor.
std::int64_t at(const StridedMatrix& v, std::int64_t inner_count, std::int64_t b, std::int64_t i, std::int64_t j) {
    return v.offset + (b / inner_count) * v.outer_stride + (b % inner_count) * v.inner_stride + i * v.row_stride +
           j * v.col_stride;
}

// C[b] = alpha·A[b]·B[b] in double from the values the views read; also Σ|a·b| per element (the
// scale of the FP32 sum's error).
struct BmmRef {
    std::vector<double> c, abs;
};
BmmRef bmm_ref(const BatchedMatmul& op, const std::vector<double>& a, const StridedMatrix& av,
               const std::vector<double>& b, const StridedMatrix& bv) {
    BmmRef r;
    const std::int64_t batch = op.batch_count();
    r.c.assign(static_cast<std::size_t>(batch * op.m * op.n), 0.0);
    r.abs = r.c;
    for (std::int64_t p = 0; p < batch; ++p)
        for (std::int64_t i = 0; i < op.m; ++i)
            for (std::int64_t j = 0; j < op.n; ++j) {
                double acc = 0, mag = 0;
                for (std::int64_t l = 0; l < op.k; ++l) {
                    const double t = a[static_cast<std::size_t>(at(av, op.inner_count, p, i, l))] *
                                     b[static_cast<std::size_t>(at(bv, op.inner_count, p, l, j))];
                    acc += t;
                    mag += std::abs(t);
                }
                const auto q = static_cast<std::size_t>((p * op.m + i) * op.n + j);
                r.c[q] = op.alpha * acc;
                r.abs[q] = std::abs(op.alpha) * mag;
            }
    return r;
}

// The first element of C's view (in plain order) outside the bound: `roundings` roundings to C's
// format, the FP32 sum's error, and the smallest subnormal of C's format; "" when none.
QString bmm_mismatch(const BatchedMatmul& op, const std::vector<float>& c, const StridedMatrix& cv, const BmmRef& ref,
                     Format cf, int roundings) {
    const double u = unit_roundoff(cf);
    for (std::int64_t p = 0; p < op.batch_count(); ++p)
        for (std::int64_t i = 0; i < op.m; ++i)
            for (std::int64_t j = 0; j < op.n; ++j) {
                const auto q = static_cast<std::size_t>((p * op.m + i) * op.n + j);
                const double got = c[static_cast<std::size_t>(at(cv, op.inner_count, p, i, j))];
                const double want = ref.c[q];
                const double bound = roundings * u * std::abs(want) * (1 + u) +
                                     (op.k + 2) * std::ldexp(1.0, -24) * ref.abs[q] + format_info(cf).min_subnormal;
                if (!(std::abs(got - want) <= bound))
                    return QString("C[%1](%2, %3) = %4, reference %5 (bound %6)")
                        .arg(p).arg(i).arg(j).arg(got, 0, 'g', 9).arg(want, 0, 'g', 9).arg(bound);
            }
    return {};
}

std::vector<double> operand_values(Format compute, const std::vector<float>& v) {
    return to_double(rounded(compute, v));
}

// Softmax of each row in double; causal rows see columns 0..(r mod T).
std::vector<double> softmax_ref(const std::vector<double>& x, std::int64_t rows, std::int64_t cols, bool causal) {
    std::vector<double> y(x.size(), 0.0);
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t seen = causal ? r % cols + 1 : cols;
        const double* xr = x.data() + r * cols;
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < seen; ++j) m = std::max(m, xr[j]);
        double s = 0;
        for (std::int64_t j = 0; j < seen; ++j) s += std::exp(xr[j] - m);
        for (std::int64_t j = 0; j < seen; ++j) y[static_cast<std::size_t>(r * cols + j)] = std::exp(xr[j] - m) / s;
    }
    return y;
}

// dx = y ⊙ (dy − Σ dy⊙y) per row, in double.
std::vector<double> softmax_grad_ref(const std::vector<double>& y, const std::vector<double>& dy, std::int64_t rows,
                                     std::int64_t cols) {
    std::vector<double> dx(y.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (std::int64_t j = 0; j < cols; ++j) s += dy[static_cast<std::size_t>(r * cols + j)] * y[static_cast<std::size_t>(r * cols + j)];
        for (std::int64_t j = 0; j < cols; ++j) {
            const auto q = static_cast<std::size_t>(r * cols + j);
            dx[q] = y[q] * (dy[q] - s);
        }
    }
    return dx;
}

}  // namespace

class TestCpuAttention : public QObject {
    Q_OBJECT
private slots:
    // Plain (batch·m, k) and (batch·k, n) operands stored in FP32, B read transposed from an
    // (batch·n, k) tensor too: C within the bound of its roundings from the double product of
    // the operands rounded to the compute format. With C in FP32 the bound is the FP32 sum's
    // alone, far below what skipping the operands' rounding would give.
    void bmmMatchesReference_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("out");
        QTest::addColumn<AlphaPoint>("point");
        QTest::addColumn<bool>("transposed");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
            for (Format o : {Format::fp32, f == Format::tf32 ? Format::fp32 : f})
                for (AlphaPoint p : {AlphaPoint::accumulator, AlphaPoint::output})
                    for (bool t : {false, true})
                        QTest::addRow("%s into %s, alpha at %s%s", format_name(f).data(), format_name(o).data(),
                                      p == AlphaPoint::accumulator ? "the accumulator" : "the output",
                                      t ? ", B transposed" : "")
                            << f << o << p << t;
    }
    void bmmMatchesReference() {
        QFETCH(Format, compute);
        QFETCH(Format, out);
        QFETCH(AlphaPoint, point);
        QFETCH(bool, transposed);
        CpuBackend be;
        BatchedMatmul op;
        op.outer_count = 2, op.inner_count = 3, op.m = 5, op.n = 7, op.k = 19;
        op.compute = compute, op.alpha = static_cast<float>(1 / std::sqrt(19.0)), op.alpha_point = point;
        const std::int64_t batch = op.batch_count();
        const auto av = random_values(static_cast<std::size_t>(batch * op.m * op.k), 1.0f, 11);
        const auto bv = random_values(static_cast<std::size_t>(batch * op.k * op.n), 1.0f, 12);
        auto a = make_with(be, batch * op.m, op.k, Format::fp32, av, "a");
        auto b = transposed ? make_with(be, batch * op.n, op.k, Format::fp32, bv, "bt")
                            : make_with(be, batch * op.k, op.n, Format::fp32, bv, "b");
        auto c = make(be, batch * op.m, op.n, out, "c");
        const StridedMatrix a_view = packed_view(op.m, op.k, op.inner_count);
        const StridedMatrix b_view = transposed ? packed_view(op.n, op.k, op.inner_count, true)
                                                : packed_view(op.k, op.n, op.inner_count);
        const StridedMatrix c_view = packed_view(op.m, op.n, op.inner_count);
        be.batched_matmul(op, *a, a_view, *b, b_view, *c, c_view);
        const auto got = read(be, *c);
        QVERIFY(all_in_format(out, got));
        const BmmRef ref = bmm_ref(op, operand_values(compute, av), a_view, operand_values(compute, bv), b_view);
        const int roundings = point == AlphaPoint::output ? 2 : 1;
        const QString diff = bmm_mismatch(op, got, c_view, ref, out, roundings);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // Integer operands (exact in every compute format, their FP32 sums exact): C is exactly
    // rnd_C(alpha·acc) with alpha at the accumulator and rnd_C(alpha·rnd_C(acc)) at the output,
    // the product alpha·v taken in FP32; the two differ where acc is not a value of C's format.
    void alphaPointsRoundWhereTheySay_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("out");
        QTest::newRow("fp16") << Format::fp16 << Format::fp16;
        QTest::newRow("bf16") << Format::bf16 << Format::bf16;
        QTest::newRow("tf32 into bf16") << Format::tf32 << Format::bf16;
    }
    void alphaPointsRoundWhereTheySay() {
        QFETCH(Format, compute);
        QFETCH(Format, out);
        CpuBackend be;
        BatchedMatmul op;
        op.outer_count = 1, op.inner_count = 4, op.m = 6, op.n = 6, op.k = 32;
        op.compute = compute, op.alpha = static_cast<float>(1 / std::sqrt(48.0));
        const std::int64_t batch = op.batch_count();
        std::vector<float> av(static_cast<std::size_t>(batch * op.m * op.k)), bv(av.size());
        for (std::size_t i = 0; i < av.size(); ++i) {
            av[i] = static_cast<float>(static_cast<int>((i * 37 + 11) % 129) - 64);
            bv[i] = static_cast<float>(static_cast<int>((i * 53 + 5) % 129) - 64);
        }
        auto a = make_with(be, batch * op.m, op.k, Format::fp32, av, "a");
        auto b = make_with(be, batch * op.k, op.n, Format::fp32, bv, "b");
        auto c1 = make(be, batch * op.m, op.n, out, "c_acc");
        auto c2 = make(be, batch * op.m, op.n, out, "c_out");
        const StridedMatrix a_view = packed_view(op.m, op.k, op.inner_count);
        const StridedMatrix b_view = packed_view(op.k, op.n, op.inner_count);
        const StridedMatrix c_view = packed_view(op.m, op.n, op.inner_count);
        op.alpha_point = AlphaPoint::accumulator;
        be.batched_matmul(op, *a, a_view, *b, b_view, *c1, c_view);
        op.alpha_point = AlphaPoint::output;
        be.batched_matmul(op, *a, a_view, *b, b_view, *c2, c_view);
        const auto got1 = read(be, *c1), got2 = read(be, *c2);
        const BmmRef ref = bmm_ref(BatchedMatmul{op.outer_count, op.inner_count, op.m, op.n, op.k, compute, 1.0f},
                                   to_double(av), a_view, to_double(bv), b_view);
        int differ = 0;
        for (std::size_t q = 0; q < ref.c.size(); ++q) {
            QVERIFY2(ref.abs[q] < 16777216.0, "the FP32 sum is not exact: make the operands smaller");
            const auto acc = static_cast<float>(ref.c[q]);
            const float want1 = round_to(out, op.alpha * acc);
            const float want2 = round_to(out, op.alpha * round_to(out, acc));
            QCOMPARE(got1[q], want1);
            QCOMPARE(got2[q], want2);
            differ += got1[q] != got2[q];
        }
        QVERIFY2(differ > 0, "the two alpha points gave the same results: the test does not tell them apart");
    }

    // Attention's products read the heads out of a packed (batch·T, 3·dim) fp16 QKV tensor:
    // S = Q·Kᵀ/√d into a (batch·heads·T, T) FP32 tensor, then Y = P·V written straight into a
    // (batch·T, dim) fp16 tensor's head columns (P cast to fp16 by the product). Every element of
    // Y is written; both match the double reference.
    void headsReadFromPackedQkv() {
        CpuBackend be;
        const std::int64_t batch = 2, seq = 5, heads = 3, hd = 4, dim = heads * hd;
        const auto qkv_v = rounded(Format::fp16, random_values(static_cast<std::size_t>(batch * seq * 3 * dim), 1.0f, 21));
        auto qkv = make_with(be, batch * seq, 3 * dim, Format::fp16, qkv_v, "qkv");
        auto s = make(be, batch * heads * seq, seq, Format::fp32, "scores");
        BatchedMatmul op;
        op.outer_count = batch, op.inner_count = heads, op.m = seq, op.n = seq, op.k = hd;
        op.compute = Format::fp16, op.alpha = 0.5f, op.alpha_point = AlphaPoint::output;  // 1/√4
        const StridedMatrix qv = head_view(seq, 3 * dim, 0, hd);
        const StridedMatrix kt = head_view(seq, 3 * dim, dim, hd, true);
        const StridedMatrix sv = packed_view(seq, seq, heads);
        be.batched_matmul(op, *qkv, qv, *qkv, kt, *s, sv);
        const auto qkv_d = to_double(qkv_v);
        // The reference reads Q and K by their own indexing, not through the views.
        std::vector<double> s_ref(static_cast<std::size_t>(batch * heads * seq * seq));
        for (std::int64_t n = 0; n < batch; ++n)
            for (std::int64_t h = 0; h < heads; ++h)
                for (std::int64_t i = 0; i < seq; ++i)
                    for (std::int64_t j = 0; j < seq; ++j) {
                        double acc = 0;
                        for (std::int64_t l = 0; l < hd; ++l)
                            acc += qkv_d[static_cast<std::size_t>((n * seq + i) * 3 * dim + h * hd + l)] *
                                   qkv_d[static_cast<std::size_t>((n * seq + j) * 3 * dim + dim + h * hd + l)];
                        s_ref[static_cast<std::size_t>(((n * heads + h) * seq + i) * seq + j)] = 0.5 * acc;
                    }
        QString diff = mismatch("S", read(be, *s), s_ref, 1e-6, 1e-6);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));

        std::vector<float> p_v = random_values(static_cast<std::size_t>(batch * heads * seq * seq), 1.0f, 22);
        for (float& v : p_v) v = std::abs(v);
        auto p = make_with(be, batch * heads * seq, seq, Format::fp32, p_v, "probs");
        auto y = make(be, batch * seq, dim, Format::fp16, "y");
        be.fill(*y, std::numeric_limits<float>::quiet_NaN());
        op.n = hd, op.k = seq, op.alpha = 1.0f;
        be.batched_matmul(op, *p, packed_view(seq, seq, heads), *qkv, head_view(seq, 3 * dim, 2 * dim, hd), *y,
                          head_view(seq, dim, 0, hd));
        const auto p_d = operand_values(Format::fp16, p_v);
        std::vector<double> y_ref(static_cast<std::size_t>(batch * seq * dim));
        for (std::int64_t n = 0; n < batch; ++n)
            for (std::int64_t h = 0; h < heads; ++h)
                for (std::int64_t i = 0; i < seq; ++i)
                    for (std::int64_t j = 0; j < hd; ++j) {
                        double acc = 0;
                        for (std::int64_t l = 0; l < seq; ++l)
                            acc += p_d[static_cast<std::size_t>(((n * heads + h) * seq + i) * seq + l)] *
                                   qkv_d[static_cast<std::size_t>((n * seq + l) * 3 * dim + 2 * dim + h * hd + j)];
                        y_ref[static_cast<std::size_t>((n * seq + i) * dim + h * hd + j)] = acc;
                    }
        const auto got = read(be, *y);
        QVERIFY2(std::none_of(got.begin(), got.end(), [](float v) { return std::isnan(v); }), "Y not fully written");
        QVERIFY(all_in_format(Format::fp16, got));
        diff = mismatch("Y", got, y_ref, 2 * unit_roundoff(Format::fp16), 1e-6);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // bf16 products on the bf16 matmul path (the operands copied into bf16 bits for oneDNN's bf16
    // matmul) and on the FP32 path, for each of attention's layouts: Q·Kᵀ out of a packed QKV
    // tensor (rows a stride apart, Kᵀ column by column), P·V with P's FP32 probabilities rounded on
    // the way (dense, by rows) into a head view, Pᵀ·dO (dense, column by column), and a
    // gradient's transpose times a head view. Both match the double reference of the rounded
    // operands within the FP32 sum's bound. Where there is a bf16 matmul, two products show which
    // path ran: 2⁻⁷⁰·2⁻⁶⁰ gives 0 on the bf16 path (its dot product flushes a subnormal result,
    // docs/numerics.md, "The bf16 matmul path") and 2⁻¹³⁰ on the FP32 path; an operand of 2⁻¹³⁰
    // (a bf16 subnormal, which the bf16 kernels would read as zero) sends its product to the
    // FP32 path, exact on both backends.
    void bf16PathMatchesTheFp32Path_data() {
        QTest::addColumn<int>("layout");
        QTest::newRow("Q·Kᵀ from packed QKV") << 0;
        QTest::newRow("P·V, P rounded from fp32, into a head view") << 1;
        QTest::newRow("Pᵀ·dO") << 2;
        QTest::newRow("dSᵀ·Q") << 3;
    }
    void bf16PathMatchesTheFp32Path() {
        QFETCH(int, layout);
        const std::int64_t batch = 2, seq = 24, heads = 3, hd = 8, dim = heads * hd;
        BatchedMatmul op;
        op.outer_count = batch, op.inner_count = heads, op.compute = Format::bf16, op.alpha = 1.0f;
        const auto qkv_v = rounded(Format::bf16, random_values(static_cast<std::size_t>(batch * seq * 3 * dim), 1.0f, 51));
        const auto probs_v = random_values(static_cast<std::size_t>(batch * heads * seq * seq), 1.0f, 52);
        const auto grad_v = rounded(Format::bf16, probs_v);
        const auto dout_v = rounded(Format::bf16, random_values(static_cast<std::size_t>(batch * seq * dim), 1.0f, 53));
        std::vector<float> a_vals, b_vals;
        Format a_format = Format::bf16, b_format = Format::bf16;
        StridedMatrix av, bv, cv;
        std::int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, c_rows = 0, c_cols = 0;
        switch (layout) {
        case 0:  // S = Q·Kᵀ/√d, alpha after the output's rounding, into FP32 scores
            op.m = seq, op.n = seq, op.k = hd, op.alpha = 0.25f, op.alpha_point = AlphaPoint::output;
            a_vals = b_vals = qkv_v, a_rows = b_rows = batch * seq, a_cols = b_cols = 3 * dim;
            av = head_view(seq, 3 * dim, 0, hd), bv = head_view(seq, 3 * dim, dim, hd, true);
            cv = packed_view(seq, seq, heads), c_rows = batch * heads * seq, c_cols = seq;
            break;
        case 1:  // Y = P·V into the (batch·T, dim) tensor's head columns
            op.m = seq, op.n = hd, op.k = seq;
            a_vals = probs_v, a_format = Format::fp32, a_rows = batch * heads * seq, a_cols = seq;
            b_vals = qkv_v, b_rows = batch * seq, b_cols = 3 * dim;
            av = packed_view(seq, seq, heads), bv = head_view(seq, 3 * dim, 2 * dim, hd);
            cv = head_view(seq, dim, 0, hd), c_rows = batch * seq, c_cols = dim;
            break;
        case 2:  // dV = Pᵀ·dO
            op.m = seq, op.n = hd, op.k = seq;
            a_vals = probs_v, a_format = Format::fp32, a_rows = batch * heads * seq, a_cols = seq;
            b_vals = dout_v, b_rows = batch * seq, b_cols = dim;
            av = packed_view(seq, seq, heads, true), bv = head_view(seq, dim, 0, hd);
            cv = head_view(seq, dim, 0, hd), c_rows = batch * seq, c_cols = dim;
            break;
        default:  // dK = dSᵀ·Q
            op.m = seq, op.n = hd, op.k = seq;
            a_vals = grad_v, a_rows = batch * heads * seq, a_cols = seq;
            b_vals = qkv_v, b_rows = batch * seq, b_cols = 3 * dim;
            av = packed_view(seq, seq, heads, true), bv = head_view(seq, 3 * dim, 0, hd);
            cv = head_view(seq, 3 * dim, dim, hd), c_rows = batch * seq, c_cols = 3 * dim;
            break;
        }
        const BmmRef ref = bmm_ref(op, operand_values(Format::bf16, a_vals), av, operand_values(Format::bf16, b_vals), bv);
        std::vector<std::vector<float>> results;
        for (bool bf16_path : {true, false}) {
            CpuBackend be;
            be.matmul().set_bf16_enabled(bf16_path);
            auto a = make_with(be, a_rows, a_cols, a_format, a_vals, "a");
            auto b = make_with(be, b_rows, b_cols, b_format, b_vals, "b");
            auto c = make(be, c_rows, c_cols, layout == 0 ? Format::fp32 : Format::bf16, "c");
            be.batched_matmul(op, *a, av, *b, bv, *c, cv);
            results.push_back(read(be, *c));
            const QString diff = bmm_mismatch(op, results.back(), cv, ref, c->format(), layout == 0 ? 2 : 1);
            QVERIFY2(diff.isEmpty(), qPrintable(QString(bf16_path ? "bf16 path: " : "FP32 path: ") + diff));
        }

        // The path each backend took, seen where the two differ by definition.
        if (!CpuMatmul::bf16_available()) QSKIP("oneDNN has no bf16 matmul on this CPU: the FP32 path only");
        std::vector<float> a_tiny = a_vals, b_tiny = b_vals;
        for (std::int64_t p = 0; p < op.batch_count(); ++p)
            for (std::int64_t l = 0; l < op.k; ++l) {
                a_tiny[static_cast<std::size_t>(at(av, heads, p, 0, l))] = l == 0 ? std::ldexp(1.0f, -70) : 0.0f;
                b_tiny[static_cast<std::size_t>(at(bv, heads, p, l, 0))] = l == 0 ? std::ldexp(1.0f, -60) : 0.0f;
            }
        std::vector<float> a_subnormal = a_tiny;
        a_subnormal[static_cast<std::size_t>(at(av, heads, 0, 0, 0))] = std::ldexp(1.0f, -130);
        b_tiny[static_cast<std::size_t>(at(bv, heads, 0, 0, 0))] = std::ldexp(1.0f, 20);
        for (bool bf16_path : {true, false}) {
            CpuBackend be;
            be.matmul().set_bf16_enabled(bf16_path);
            BatchedMatmul plain = op;
            plain.alpha = 1.0f;
            auto b = make_with(be, b_rows, b_cols, b_format, b_tiny, "b");
            auto a = make_with(be, a_rows, a_cols, a_format, a_tiny, "a");
            auto c = make(be, c_rows, c_cols, Format::fp32, "c");
            be.batched_matmul(plain, *a, av, *b, bv, *c, cv);
            const float tiny = read(be, *c)[static_cast<std::size_t>(at(cv, heads, 1, 0, 0))];
            QCOMPARE_EXACT(tiny, bf16_path ? 0.0f : std::ldexp(1.0f, -130));
            a = make_with(be, a_rows, a_cols, a_format, a_subnormal, "a");
            be.batched_matmul(plain, *a, av, *b, bv, *c, cv);
            QCOMPARE_EXACT(read(be, *c)[static_cast<std::size_t>(at(cv, heads, 0, 0, 0))], std::ldexp(1.0f, -110));
        }
    }

    // The bf16 copies of the operands last until their tensor is written: Q·Kᵀ copies Q and K,
    // and again finds both; dQ = dS·K copies dS alone (K's copy is Kᵀ's, the same values in the
    // same order) and dK = dSᵀ·Q copies nothing; after qkv is written (upload), Q·Kᵀ copies both
    // again and multiplies the new values. Every product matches the double reference.
    void bf16CopiesLastUntilTheTensorIsWritten() {
        if (!CpuMatmul::bf16_available()) QSKIP("oneDNN has no bf16 matmul on this CPU: no bf16 copies");
        CpuBackend be;
        be.matmul().set_bf16_enabled(true);
        const std::int64_t batch = 2, seq = 9, heads = 2, hd = 4, dim = heads * hd;
        auto qkv_v = rounded(Format::bf16, random_values(static_cast<std::size_t>(batch * seq * 3 * dim), 1.0f, 71));
        const auto ds_v = rounded(Format::bf16, random_values(static_cast<std::size_t>(batch * heads * seq * seq), 1.0f, 72));
        auto qkv = make_with(be, batch * seq, 3 * dim, Format::bf16, qkv_v, "qkv");
        auto ds = make_with(be, batch * heads * seq, seq, Format::bf16, ds_v, "dscores");
        auto s = make(be, batch * heads * seq, seq, Format::fp32, "scores");
        auto dqkv = make(be, batch * seq, 3 * dim, Format::fp32, "dqkv");
        BatchedMatmul scores;
        scores.outer_count = batch, scores.inner_count = heads, scores.m = seq, scores.n = seq, scores.k = hd;
        scores.compute = Format::bf16, scores.alpha = 1.0f;
        BatchedMatmul back = scores;
        back.n = hd, back.k = seq;
        const StridedMatrix qv = head_view(seq, 3 * dim, 0, hd), kv = head_view(seq, 3 * dim, dim, hd);
        const StridedMatrix kt = head_view(seq, 3 * dim, dim, hd, true), sv = packed_view(seq, seq, heads);
        auto check = [&](const BatchedMatmul& op, const std::vector<float>& a, const StridedMatrix& av,
                         const std::vector<float>& b, const StridedMatrix& bv, const Tensor& c, const StridedMatrix& cv) {
            const BmmRef ref = bmm_ref(op, to_double(a), av, to_double(b), bv);
            return bmm_mismatch(op, read(be, c), cv, ref, Format::fp32, 1);
        };
        QString diff;
        be.batched_matmul(scores, *qkv, qv, *qkv, kt, *s, sv);
        QCOMPARE(be.bf16_copies_made(), std::int64_t{2});
        const auto first = read(be, *s);
        be.batched_matmul(scores, *qkv, qv, *qkv, kt, *s, sv);
        QCOMPARE(be.bf16_copies_made(), std::int64_t{2});
        QCOMPARE(read(be, *s), first);
        QVERIFY2((diff = check(scores, qkv_v, qv, qkv_v, kt, *s, sv)).isEmpty(), qPrintable(diff));

        be.batched_matmul(back, *ds, sv, *qkv, kv, *dqkv, qv);  // dQ = dS·K into Q's columns
        QCOMPARE(be.bf16_copies_made(), std::int64_t{3});
        QVERIFY2((diff = check(back, ds_v, sv, qkv_v, kv, *dqkv, qv)).isEmpty(), qPrintable(diff));
        const StridedMatrix st = packed_view(seq, seq, heads, true);
        be.batched_matmul(back, *ds, st, *qkv, qv, *dqkv, kv);  // dK = dSᵀ·Q into K's columns
        QCOMPARE(be.bf16_copies_made(), std::int64_t{3});
        QVERIFY2((diff = check(back, ds_v, st, qkv_v, qv, *dqkv, kv)).isEmpty(), qPrintable(diff));

        for (float& v : qkv_v) v = -v;
        be.upload(*qkv, qkv_v.data(), static_cast<std::int64_t>(qkv_v.size()));
        be.batched_matmul(scores, *qkv, qv, *qkv, kt, *s, sv);
        QCOMPARE(be.bf16_copies_made(), std::int64_t{5});
        QVERIFY2((diff = check(scores, qkv_v, qv, qkv_v, kt, *s, sv)).isEmpty(), qPrintable(diff));
    }

    // Q·Kᵀ after each write of qkv copies Q and K again into the buffers they had: none is
    // allocated again. (Taking Q's copy once dropped K's stale one, so every step allocated K's
    // copy anew and faulted in and zeroed its pages.) Each product matches the double reference.
    void bf16CopiesKeepTheirBuffersAcrossWrites() {
        if (!CpuMatmul::bf16_available()) QSKIP("oneDNN has no bf16 matmul on this CPU: no bf16 copies");
        CpuBackend be;
        be.matmul().set_bf16_enabled(true);
        const std::int64_t batch = 2, seq = 9, heads = 2, hd = 4, dim = heads * hd;
        auto qkv_v = rounded(Format::bf16, random_values(static_cast<std::size_t>(batch * seq * 3 * dim), 1.0f, 73));
        auto qkv = make_with(be, batch * seq, 3 * dim, Format::bf16, qkv_v, "qkv");
        auto s = make(be, batch * heads * seq, seq, Format::fp32, "scores");
        BatchedMatmul scores;
        scores.outer_count = batch, scores.inner_count = heads, scores.m = seq, scores.n = seq, scores.k = hd;
        scores.compute = Format::bf16, scores.alpha = 1.0f;
        const StridedMatrix qv = head_view(seq, 3 * dim, 0, hd), kt = head_view(seq, 3 * dim, dim, hd, true);
        const StridedMatrix sv = packed_view(seq, seq, heads);
        for (std::int64_t write = 0; write < 3; ++write) {
            if (write > 0) {
                for (float& v : qkv_v) v = -v;
                be.upload(*qkv, qkv_v.data(), static_cast<std::int64_t>(qkv_v.size()));
            }
            be.batched_matmul(scores, *qkv, qv, *qkv, kt, *s, sv);
            QCOMPARE(be.bf16_copies_made(), 2 + 2 * write);
            QCOMPARE(be.bf16_copy_allocations(), std::int64_t{2});
            const BmmRef ref = bmm_ref(scores, to_double(qkv_v), qv, to_double(qkv_v), kt);
            const QString diff = bmm_mismatch(scores, read(be, *s), sv, ref, Format::fp32, 1);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
        }
    }

    // The epilogue (alpha at its point, the rounding to C's format) with the rounding in the
    // registers gives the two passes' bits (CpuBackend::set_rounds_in_lanes(false)): C's formats,
    // both alpha points, alpha 1 and not, over a whole packed view (the scores) and a head view
    // (a position's row across the heads), 7 columns a head for every tail of the lanes; values
    // past the format's range (overflow) and below its normals.
    void epilogueRoundedInTheRegistersIsTheTwoPassesBits_data() {
        QTest::addColumn<Format>("out");
        QTest::addColumn<AlphaPoint>("point");
        QTest::addColumn<float>("alpha");
        QTest::addColumn<bool>("head_view");
        for (Format f : {Format::bf16, Format::fp16, Format::fp32})
            for (AlphaPoint p : {AlphaPoint::accumulator, AlphaPoint::output})
                for (float alpha : {1.0f, 0.17677669f})
                    for (bool head : {false, true})
                        QTest::addRow("%s, alpha %g at the %s, %s", format_name(f).data(), double(alpha),
                                      p == AlphaPoint::accumulator ? "accumulator" : "output",
                                      head ? "head view" : "packed view")
                            << f << p << alpha << head;
    }
    void epilogueRoundedInTheRegistersIsTheTwoPassesBits() {
        QFETCH(Format, out);
        QFETCH(AlphaPoint, point);
        QFETCH(float, alpha);
        QFETCH(bool, head_view);
        const std::int64_t batch = 2, heads = 3, seq = 11, hd = 7, dim = heads * hd;
        BatchedMatmul op;
        op.outer_count = batch, op.inner_count = heads, op.m = seq, op.n = head_view ? hd : seq, op.k = hd;
        op.compute = Format::fp32, op.alpha = alpha, op.alpha_point = point;
        // Each row of A and each column of B scaled by its own power of two, so that the
        // elements of C spread over 2^-36 .. 2^36: past fp16's range and below its normals.
        auto spread = [](std::vector<float> v, std::int64_t group, std::int64_t period, int seed) {
            for (std::size_t i = 0; i < v.size(); ++i)
                v[i] *= std::ldexp(1.0f, static_cast<int>((static_cast<std::int64_t>(i) / group % period * 7 + seed) % 37) - 18);
            return v;
        };
        const auto a_vals =
            spread(random_values(static_cast<std::size_t>(batch * heads * seq * op.k), 1.0f, 61), op.k, 1 << 20, 1);
        const auto b_vals =
            spread(random_values(static_cast<std::size_t>(batch * heads * op.k * op.n), 1.0f, 62), 1, op.n, 5);
        std::vector<std::vector<float>> results;
        for (bool lanes : {true, false}) {
            CpuBackend be;
            be.set_rounds_in_lanes(lanes);
            auto a = make_with(be, batch * heads * seq, op.k, Format::fp32, a_vals, "a");
            auto b = make_with(be, batch * heads * op.k, op.n, Format::fp32, b_vals, "b");
            auto c = head_view ? make(be, batch * seq, dim, out, "c") : make(be, batch * heads * seq, seq, out, "c");
            be.batched_matmul(op, *a, packed_view(seq, op.k, heads), *b, packed_view(op.k, op.n, heads), *c,
                              head_view ? mantissa::head_view(seq, dim, 0, hd) : packed_view(seq, seq, heads));
            results.push_back(read(be, *c));
        }
        const QString diff = conv_test::first_bit_difference("C", results[0], results[1]);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        if (out == Format::fp16) {
            QVERIFY2(std::any_of(results[1].begin(), results[1].end(), [](float v) { return std::isinf(v); }),
                     "no product overflowed fp16: widen the operands' spread");
            QVERIFY2(std::any_of(results[1].begin(), results[1].end(),
                                 [](float v) { return v != 0.0f && std::abs(v) < std::ldexp(1.0f, -14); }),
                     "no product fell below fp16's normals: widen the operands' spread");
        }
    }

    // Views with neither a unit row nor a unit column stride (gathered and packed), and a C view
    // spread over a wider tensor (scattered): the result matches, and C's other elements keep
    // their values.
    void viewsWithoutUnitStride() {
        CpuBackend be;
        BatchedMatmul op;
        op.outer_count = 3, op.inner_count = 2, op.m = 4, op.n = 3, op.k = 5;
        op.compute = Format::bf16, op.alpha = 1.0f;
        StridedMatrix av;  // A in a (1, 400) tensor: rows 7 apart, columns 2 apart, matrices 60 / 30
        av.offset = 3, av.outer_stride = 60 * 2, av.inner_stride = 60, av.row_stride = 13, av.col_stride = 2;
        StridedMatrix bv;
        bv.offset = 1, bv.outer_stride = 80, bv.inner_stride = 40, bv.row_stride = 3, bv.col_stride = 17;
        StridedMatrix cv;  // C: columns 2 apart
        cv.offset = 1, cv.outer_stride = 60, cv.inner_stride = 30, cv.row_stride = 6, cv.col_stride = 2;
        const auto a_vals = random_values(400, 1.0f, 31), b_vals = random_values(300, 1.0f, 32);
        auto a = make_with(be, 1, 400, Format::fp32, a_vals, "a");
        auto b = make_with(be, 1, 300, Format::fp32, b_vals, "b");
        auto c = make(be, 1, 200, Format::fp32, "c");
        be.fill(*c, 5.0f);
        be.batched_matmul(op, *a, av, *b, bv, *c, cv);
        const auto got = read(be, *c);
        const BmmRef ref = bmm_ref(op, operand_values(op.compute, a_vals), av, operand_values(op.compute, b_vals), bv);
        const QString diff = bmm_mismatch(op, got, cv, ref, Format::fp32, 1);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        std::vector<bool> in_view(200, false);
        for (std::int64_t p = 0; p < op.batch_count(); ++p)
            for (std::int64_t i = 0; i < op.m; ++i)
                for (std::int64_t j = 0; j < op.n; ++j) in_view[static_cast<std::size_t>(at(cv, 2, p, i, j))] = true;
        for (std::size_t q = 0; q < 200; ++q)
            if (!in_view[q]) QCOMPARE(got[q], 5.0f);
    }

    // The backward products of S = alpha·Q·Kᵀ (dQ = alpha·dS·K, dK = alpha·dSᵀ·Q, each a batched
    // matmul through views) against central finite differences of the reference's loss
    // Σ G⊙S in double; an empty sum (k = 0) writes zeros.
    void backwardProductsMatchFiniteDifferences() {
        CpuBackend be;
        const std::int64_t heads = 2, seq = 4, hd = 3;
        const double alpha = 0.5;
        const auto q_v = random_values(static_cast<std::size_t>(heads * seq * hd), 1.0f, 41);
        const auto k_v = random_values(q_v.size(), 1.0f, 42);
        const auto g_v = random_values(static_cast<std::size_t>(heads * seq * seq), 1.0f, 43);
        auto q = make_with(be, heads * seq, hd, Format::fp32, q_v, "q");
        auto k = make_with(be, heads * seq, hd, Format::fp32, k_v, "k");
        auto g = make_with(be, heads * seq, seq, Format::fp32, g_v, "dS");
        auto dq = make(be, heads * seq, hd, Format::fp32, "dq");
        auto dk = make(be, heads * seq, hd, Format::fp32, "dk");
        BatchedMatmul op;
        op.inner_count = heads, op.m = seq, op.n = hd, op.k = seq, op.alpha = static_cast<float>(alpha);
        be.batched_matmul(op, *g, packed_view(seq, seq, heads), *k, packed_view(seq, hd, heads), *dq,
                          packed_view(seq, hd, heads));
        be.batched_matmul(op, *g, packed_view(seq, seq, heads, true), *q, packed_view(seq, hd, heads), *dk,
                          packed_view(seq, hd, heads));
        const auto gd = to_double(g_v);
        auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk) {
            BatchedMatmul f;
            f.inner_count = heads, f.m = seq, f.n = seq, f.k = hd, f.alpha = static_cast<float>(alpha);
            const BmmRef s = bmm_ref(f, qq, packed_view(seq, hd, heads), kk, packed_view(seq, hd, heads, true));
            return conv_test::dot(s.c, gd);
        };
        const auto qd = to_double(q_v), kd = to_double(k_v);
        const auto fd_q = conv_test::finite_differences(qd, [&](const std::vector<double>& v) { return loss(v, kd); }, 1e-4);
        const auto fd_k = conv_test::finite_differences(kd, [&](const std::vector<double>& v) { return loss(qd, v); }, 1e-4);
        QString diff = mismatch("dQ", read(be, *dq), fd_q, 1e-5, 1e-5);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        diff = mismatch("dK", read(be, *dk), fd_k, 1e-5, 1e-5);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));

        be.fill(*dq, 3.0f);
        op.k = 0;
        be.batched_matmul(op, *g, packed_view(seq, 0, heads), *k, packed_view(0, hd, heads), *dq,
                          packed_view(seq, hd, heads));
        for (float v : read(be, *dq)) QCOMPARE_EXACT(v, 0.0f);
    }

    // Row softmax from x in its format, y rounded to its format: within the FP32 arithmetic's
    // error and y's rounding of the double reference; causal rows see columns 0..i, the rest
    // exactly +0, and every row sums to 1 within y's rounding; the telemetry's amax and count.
    void softmaxForwardMatchesReference_data() {
        QTest::addColumn<Format>("in");
        QTest::addColumn<Format>("out");
        QTest::addColumn<bool>("causal");
        for (Format f : {Format::fp32, Format::bf16, Format::fp16})
            for (Format o : {Format::fp32, f})
                for (bool c : {false, true})
                    QTest::addRow("%s -> %s%s", format_name(f).data(), format_name(o).data(), c ? ", causal" : "")
                        << f << o << c;
    }
    void softmaxForwardMatchesReference() {
        QFETCH(Format, in);
        QFETCH(Format, out);
        QFETCH(bool, causal);
        CpuBackend be;
        const std::int64_t seq = 9, rows = 3 * seq;
        auto xv = rounded(in, random_values(static_cast<std::size_t>(rows * seq), 3.0f, 51));
        auto x = make_with(be, rows, seq, in, xv, "scores");
        auto y = make(be, rows, seq, out, "probs");
        be.fill(*y, 7.0f);
        SoftmaxStats stats;
        stats.amax = -1, stats.nonfinite = -1;
        be.softmax_forward(*x, *y, rows, causal, &stats);
        const auto got = read(be, *y);
        QVERIFY(all_in_format(out, got));
        const auto ref = softmax_ref(to_double(xv), rows, seq, causal);
        const QString diff =
            mismatch("y", got, ref, unit_roundoff(out) + 8 * seq * std::ldexp(1.0, -24), format_info(out).min_subnormal);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        double amax = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t seen = causal ? r % seq + 1 : seq;
            double sum = 0;
            for (std::int64_t j = 0; j < seq; ++j) {
                const float v = got[static_cast<std::size_t>(r * seq + j)];
                if (j >= seen) {
                    QVERIFY2(v == 0.0f && !std::signbit(v), "a masked entry is not +0");
                } else {
                    sum += v;
                    amax = std::max(amax, std::abs(static_cast<double>(xv[static_cast<std::size_t>(r * seq + j)])));
                }
            }
            QVERIFY2(std::abs(sum - 1) <= seen * unit_roundoff(out) + 1e-6, qPrintable(QString("row %1 sums to %2").arg(r).arg(sum)));
        }
        QCOMPARE(static_cast<double>(stats.amax), amax);
        QCOMPARE(stats.nonfinite, std::int64_t{0});
    }

    // The softmax's row sums, forward (Σ e_j, eight rows at a time in vector lanes: cpu_attention.cpp)
    // and backward (Σ dy_j·y_j), are each taken from +0 in column order: the bits must be those
    // of a plain loop over each row, written here, for rows of 37 columns (whole blocks of eight
    // columns and a tail), 111 rows (whole blocks of eight rows and a last one of seven), causal
    // (rows of every length) or not. The values span e^-23 to 1, so another order would change
    // the sums' last bits (checked: the reversed order does, on some rows).
    void softmaxSumsRowByRowInColumnOrder_data() {
        QTest::addColumn<bool>("causal");
        QTest::newRow("full rows") << false;
        QTest::newRow("causal") << true;
    }
    void softmaxSumsRowByRowInColumnOrder() {
        QFETCH(bool, causal);
        const std::int64_t seq = 37, rows = 3 * seq;
        std::vector<float> xv = random_values(static_cast<std::size_t>(rows * seq), 1.0f, 71);
        for (float& v : xv) v = -10.0f + 13.0f * v;  // in [-23, 3]
        const std::vector<float> gv = random_values(xv.size(), 1.0f, 72);
        CpuBackend be;
        auto x = make_with(be, rows, seq, Format::fp32, xv, "x");
        auto y = make(be, rows, seq, Format::fp32, "y");
        auto dy = make_with(be, rows, seq, Format::fp32, gv, "dy");
        auto dx = make(be, rows, seq, Format::fp32, "dx");
        be.softmax_forward(*x, *y, rows, causal, nullptr);
        be.softmax_backward(*y, *dy, *dx, rows, causal, 1.0f);
        const auto yv = read(be, *y), dxv = read(be, *dx);
        const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
        int order_matters = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t seen = causal ? r % seq + 1 : seq;
            const auto q = [&](std::int64_t j) { return static_cast<std::size_t>(r * seq + j); };
            float m = -std::numeric_limits<float>::infinity();
            for (std::int64_t j = 0; j < seen; ++j) m = std::max(m, xv[q(j)]);
            std::vector<float> e(static_cast<std::size_t>(seen));
            float sum = 0.0f, reversed = 0.0f;
            for (std::int64_t j = 0; j < seen; ++j) sum += e[static_cast<std::size_t>(j)] = exp_poly(xv[q(j)] - m);
            for (std::int64_t j = seen - 1; j >= 0; --j) reversed += e[static_cast<std::size_t>(j)];
            order_matters += bits(sum) != bits(reversed);
            float dot = 0.0f;
            for (std::int64_t j = 0; j < seen; ++j) dot += gv[q(j)] * yv[q(j)];
            for (std::int64_t j = 0; j < seen; ++j) {
                const float want_y = e[static_cast<std::size_t>(j)] / sum;
                const float want_dx = yv[q(j)] * (gv[q(j)] - dot);
                if (bits(yv[q(j)]) != bits(want_y) || bits(dxv[q(j)]) != bits(want_dx))
                    QFAIL(qPrintable(QString("row %1, column %2: y %3 (plain loop %4), dx %5 (plain loop %6)")
                                         .arg(r).arg(j).arg(yv[q(j)], 0, 'g', 9).arg(want_y, 0, 'g', 9)
                                         .arg(dxv[q(j)], 0, 'g', 9).arg(want_dx, 0, 'g', 9)));
            }
        }
        QVERIFY2(order_matters > 0, "no row's sum depends on the order: the test cannot tell orders apart");
    }

    // Non-finite inputs: a -inf entry gets probability 0 and the row stays finite; a NaN or +inf
    // makes its row NaN (as PyTorch's). The telemetry counts them and keeps amax to the finite
    // entries; masked entries are not read (a NaN there changes nothing).
    void softmaxNonFiniteInputs() {
        CpuBackend be;
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        const std::vector<float> xv = {1, -inf, 2, 0,   // row 0: -inf gets 0
                                       1, nan, 2, 0,    // row 1: NaN row
                                       1, inf, 2, 0,    // row 2: +inf: NaN row
                                       0, 0, 0, 0};     // row 3: not in the call
        auto x = make_with(be, 4, 4, Format::fp32, xv, "x");
        auto y = make(be, 4, 4, Format::fp32, "y");
        SoftmaxStats stats;
        be.softmax_forward(*x, *y, 3, false, &stats);
        auto got = read(be, *y);
        QCOMPARE_EXACT(got[1], 0.0f);
        QVERIFY(std::isfinite(got[0]) && std::isfinite(got[2]));
        for (int j = 4; j < 12; ++j) QVERIFY2(std::isnan(got[static_cast<std::size_t>(j)]), qPrintable(QString::number(j)));
        QCOMPARE(stats.nonfinite, std::int64_t{3});
        QCOMPARE(stats.amax, 2.0f);
        // Causal: row r of the block sees columns 0..r; row 3 sees all four, row 0 only x[0].
        std::vector<float> cv = {-9, nan, nan, nan, 1, 2, nan, nan, 0, 0, 0, nan, 1, 1, 1, 1};
        auto xc = make_with(be, 4, 4, Format::fp32, cv, "xc");
        be.softmax_forward(*xc, *y, 4, true, &stats);
        got = read(be, *y);
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(stats.nonfinite, std::int64_t{0});
        QCOMPARE(stats.amax, 9.0f);
        for (float v : got) QVERIFY(std::isfinite(v));
    }

    // dx = y ⊙ (dy − Σ dy⊙y): the reference's analytic gradient agrees with central finite
    // differences of Σ G⊙softmax(x) in double, and the backend's dx (from its own FP32 y) with
    // the reference within dx's rounding; the scale is applied after that rounding and rounded
    // again; causal: masked entries are +0.
    void softmaxBackward_data() {
        QTest::addColumn<Format>("out");
        QTest::addColumn<bool>("causal");
        QTest::addColumn<float>("scale");
        for (Format f : {Format::fp32, Format::bf16, Format::fp16})
            for (bool c : {false, true}) {
                QTest::addRow("%s%s", format_name(f).data(), c ? ", causal" : "") << f << c << 1.0f;
                QTest::addRow("%s%s, scale 1/sqrt(24)", format_name(f).data(), c ? ", causal" : "")
                    << f << c << static_cast<float>(1 / std::sqrt(24.0));
            }
    }
    void softmaxBackward() {
        QFETCH(Format, out);
        QFETCH(bool, causal);
        QFETCH(float, scale);
        CpuBackend be;
        const std::int64_t seq = 6, rows = 2 * seq;
        const auto xv = random_values(static_cast<std::size_t>(rows * seq), 2.0f, 61);
        const auto gv = rounded(out, random_values(xv.size(), 1.0f, 62));
        auto x = make_with(be, rows, seq, Format::fp32, xv, "x");
        auto y = make(be, rows, seq, Format::fp32, "y");
        auto dy = make_with(be, rows, seq, out, gv, "dy");
        auto dx = make(be, rows, seq, out, "dx");
        be.softmax_forward(*x, *y, rows, causal, nullptr);
        be.softmax_backward(*y, *dy, *dx, rows, causal, scale);
        const auto xd = to_double(xv), gd = to_double(gv);
        // The reference's gradient, masked columns excluded (the mask is part of the function).
        const auto yd = softmax_ref(xd, rows, seq, causal);
        auto analytic = softmax_grad_ref(yd, gd, rows, seq);
        const auto fd = conv_test::finite_differences(
            xd, [&](const std::vector<double>& v) { return conv_test::dot(softmax_ref(v, rows, seq, causal), gd); }, 1e-5);
        for (std::size_t i = 0; i < fd.size(); ++i)
            QVERIFY2(std::abs(fd[i] - analytic[i]) <= 1e-7 * (1 + std::abs(analytic[i])),
                     qPrintable(QString("reference gradient %1: %2 vs finite differences %3").arg(i).arg(analytic[i]).arg(fd[i])));
        for (double& v : analytic) v *= scale;
        const auto got = read(be, *dx);
        QVERIFY(all_in_format(out, got));
        const double u = unit_roundoff(out);
        const QString diff = mismatch("dx", got, analytic, (scale != 1.0f ? 2 : 1) * u + 64 * std::ldexp(1.0, -24),
                                      64 * std::ldexp(1.0, -24) + format_info(out).min_subnormal);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        if (causal)
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t j = r % seq + 1; j < seq; ++j) {
                    const float v = got[static_cast<std::size_t>(r * seq + j)];
                    QVERIFY2(v == 0.0f && !std::signbit(v), "a masked gradient is not +0");
                }
        // The scale's own rounding: dx = rnd(rnd(g)·scale) exactly, from the unscaled backward.
        if (scale != 1.0f) {
            auto dx1 = make(be, rows, seq, out, "dx1");
            be.softmax_backward(*y, *dy, *dx1, rows, causal, 1.0f);
            const auto unscaled = read(be, *dx1);
            for (std::size_t i = 0; i < got.size(); ++i) QCOMPARE(got[i], round_to(out, unscaled[i] * scale));
        }
    }
};

QTEST_APPLESS_MAIN(TestCpuAttention)
#include "test_cpu_attention.moc"
