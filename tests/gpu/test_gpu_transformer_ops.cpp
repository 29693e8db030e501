// The CUDA backend's transformer ops against the CPU backend (the reference), with the same
// inputs, as docs/numerics.md ("Transformer ops") states them:
//   - batched_matmul within atol + |ref|·eps (the FP32 accumulation order differs), per compute
//     format (fp32, tf32, fp16, bf16), through the views attention uses: Q·Kᵀ read straight out of
//     a packed (B·T, 3·dim) QKV tensor into the scores, P·V written into the heads' columns of a
//     (B·T, dim) tensor, and the backward's transposed views (dV = Pᵀ·dY, dQ = dS·K, dK = dSᵀ·Q);
//     both AlphaPoints; operands already in the compute format (read in place) or not (packed);
//     a view with no unit stride (packed and scattered); an empty sum (k = 0); C's elements
//     outside its view unchanged;
//   - softmax forward and backward within atol + |ref|·eps (expf and the row sums' order), causal
//     or not, masked entries exactly +0, the statistics (amax exact, the non-finite count equal),
//     -inf, inf and NaN inputs, the backward's extra scale rounding, in place;
//   - layernorm's saved statistics and dβ within 1 FP32 ulp (double sums in another order), y,
//     dx and dγ within the bound that follows, the smallest variance;
//   - embedding forward and backward bit-identical (copies; FP32 sums in the CPU's order), with
//     repeated ids, accumulate on and off.
// Every test skips with the reason when there is no usable GPU (or the build has no CUDA).
#include <QtTest>

#include <bit>
#include <cmath>

#include "error.h"
#include "gpu_compare.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace gpu_test;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::AlphaPoint)

namespace {

// Attention's shapes: S samples of T positions, H heads of HD values.
constexpr std::int64_t S = 3, T = 17, H = 4, HD = 16, DIM = H * HD;

struct BmmCase {
    const char* name;
    BatchedMatmul op;
    StridedMatrix a, b, c;
    std::int64_t a_rows, a_cols, b_rows, b_cols, c_rows, c_cols;  // the tensors
};

BatchedMatmul attention_op(std::int64_t m, std::int64_t n, std::int64_t k) {
    BatchedMatmul op;
    op.outer_count = S;
    op.inner_count = H;
    op.m = m;
    op.n = n;
    op.k = k;
    return op;
}

std::vector<BmmCase> bmm_cases() {
    const std::int64_t bt = S * T, bht = S * H * T;
    std::vector<BmmCase> cases = {
        {"q-kT", attention_op(T, T, HD), head_view(T, 3 * DIM, 0, HD), head_view(T, 3 * DIM, DIM, HD, true),
         packed_view(T, T, H), bt, 3 * DIM, bt, 3 * DIM, bht, T},
        {"p-v", attention_op(T, HD, T), packed_view(T, T, H), head_view(T, 3 * DIM, 2 * DIM, HD),
         head_view(T, DIM, 0, HD), bht, T, bt, 3 * DIM, bt, DIM},
        {"pT-dy", attention_op(T, HD, T), packed_view(T, T, H, true), head_view(T, DIM, 0, HD),
         head_view(T, 3 * DIM, 2 * DIM, HD), bht, T, bt, DIM, bt, 3 * DIM},
        {"dy-vT", attention_op(T, T, HD), head_view(T, DIM, 0, HD), head_view(T, 3 * DIM, 2 * DIM, HD, true),
         packed_view(T, T, H), bt, DIM, bt, 3 * DIM, bht, T},
        {"ds-k", attention_op(T, HD, T), packed_view(T, T, H), head_view(T, 3 * DIM, DIM, HD),
         head_view(T, 3 * DIM, 0, HD), bht, T, bt, 3 * DIM, bt, 3 * DIM},
        {"dsT-q", attention_op(T, HD, T), packed_view(T, T, H, true), head_view(T, 3 * DIM, 0, HD),
         head_view(T, 3 * DIM, DIM, HD), bht, T, bt, 3 * DIM, bt, 3 * DIM},
    };
    // No unit stride anywhere: packed operands, C through the workspace.
    BatchedMatmul op = attention_op(5, 6, 7);
    cases.push_back({"no-unit-stride", op, StridedMatrix{1, 1200, 100, 14, 2}, StridedMatrix{0, 1200, 120, 2, 16},
                     StridedMatrix{3, 1200, 100, 13, 2}, 40, 100, 40, 100, 40, 100});
    // An empty sum.
    BatchedMatmul empty = attention_op(T, T, 0);
    cases.push_back({"k0", empty, head_view(T, 3 * DIM, 0, HD), head_view(T, 3 * DIM, DIM, HD, true),
                     packed_view(T, T, H), bt, 3 * DIM, bt, 3 * DIM, bht, T});
    return cases;
}

// The positions a causal (T × T)-block softmax never reads (row i of a block sees 0..i).
bool masked(std::int64_t index, std::int64_t cols) {
    return index % cols > (index / cols) % cols;
}

QString masked_not_zero(const std::vector<float>& v, std::int64_t cols) {
    for (std::size_t i = 0; i < v.size(); ++i)
        if (masked(static_cast<std::int64_t>(i), cols) && std::bit_cast<std::uint32_t>(v[i]) != 0u)
            return QString("masked entry %1 is %2, not +0").arg(i).arg(v[i]);
    return {};
}

double epsilon_of(Format f) {
    return f == Format::fp32 ? 1e-5 : format_info(f).epsilon;
}

}  // namespace

class TestGpuTransformerOps : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> m_cpu, m_gpu;
    std::string m_reason;

#define REQUIRE_GPU() GPU_TEST_REQUIRE(m_gpu, m_reason)

    void same_bits(Twin& t, const char* what) {
        const QString diff = compare_bits(read(*m_cpu, t.c()), read(*m_gpu, t.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(QString(what) + ": " + diff));
    }
    void close(Twin& t, double atol, double eps, const char* what) {
        const QString diff = compare_close(read(*m_cpu, t.c()), read(*m_gpu, t.g()), atol, eps);
        QVERIFY2(diff.isEmpty(), qPrintable(QString(what) + ": " + diff));
    }

private slots:
    void initTestCase() {
        m_cpu = make_backend("cpu");
        m_gpu = cuda_backend(m_reason);
        if (!m_gpu) QSKIP(qPrintable(gpu_test::suite_skipped(m_reason)));
        qInfo("GPU: %s", m_gpu->device_name().c_str());
    }
    void cleanupTestCase() { m_gpu.reset(); }

    void supports_the_cpu_formats() {
        REQUIRE_GPU();
        for (BackendOp op : {BackendOp::softmax, BackendOp::layernorm, BackendOp::embedding})
            for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) QVERIFY(m_gpu->supports(op, f));
        QVERIFY(m_gpu->supports(BackendOp::bmm, Format::fp32));
        QVERIFY(!m_gpu->supports(BackendOp::bmm, Format::fp8_e4m3));
    }

    // ---- batched matmul

    void batched_matmul_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<bool>("operands_in_compute");
        QTest::addColumn<AlphaPoint>("point");
        QTest::addColumn<int>("which");
        const auto cases = bmm_cases();
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
            for (bool in_compute : {true, false})
                for (AlphaPoint p : {AlphaPoint::accumulator, AlphaPoint::output})
                    for (int i = 0; i < static_cast<int>(cases.size()); ++i)
                        QTest::addRow("%s-%s-%s-%s", std::string(format_name(f)).c_str(),
                                      in_compute ? "operands-in-compute" : "operands-fp32",
                                      p == AlphaPoint::output ? "alpha-output" : "alpha-acc",
                                      cases[static_cast<std::size_t>(i)].name)
                            << f << in_compute << p << i;
    }
    void batched_matmul() {
        REQUIRE_GPU();
        QFETCH(Format, compute);
        QFETCH(bool, operands_in_compute);
        QFETCH(AlphaPoint, point);
        QFETCH(int, which);
        if (!m_gpu->supports(BackendOp::bmm, compute)) QSKIP(m_gpu->unsupported(BackendOp::bmm, compute).c_str());
        BmmCase cc = bmm_cases()[static_cast<std::size_t>(which)];
        cc.op.compute = compute;
        cc.op.alpha_point = point;
        cc.op.alpha = 1.0f / std::sqrt(static_cast<float>(HD)) * 1.1f;  // not a power of two: rounds
        const Format operands = operands_in_compute ? compute : Format::fp32;
        // C in the autocast type (fp32 for fp32 and tf32), and tf32 once (never written directly).
        const Format cf = compute == Format::tf32 && operands_in_compute ? Format::tf32 : output_format(compute);
        Twin a = twin(*m_cpu, *m_gpu, desc("a", cc.a_rows, cc.a_cols, operands),
                      random_values(cc.a_rows * cc.a_cols, 1.0f, 61, 0.02));
        Twin b = twin(*m_cpu, *m_gpu, desc("b", cc.b_rows, cc.b_cols, operands),
                      random_values(cc.b_rows * cc.b_cols, 1.0f, 62, 0.02));
        Twin c = twin(*m_cpu, *m_gpu, desc("c", cc.c_rows, cc.c_cols, cf),
                      random_values(cc.c_rows * cc.c_cols, 3.0f, 63));  // elements outside the view stay
        m_cpu->batched_matmul(cc.op, a.c(), cc.a, b.c(), cc.b, c.c(), cc.c);
        m_gpu->batched_matmul(cc.op, a.g(), cc.a, b.g(), cc.b, c.g(), cc.c);
        // Bound: the FP32 sums of k exact products (O(1) inputs, k <= 17) differ in order only: a
        // few FP32 ulps of Σ|terms| (atol); then one rounding to C's format, two with alpha at
        // the output (eps: twice its epsilon).
        const double eps = cf == Format::fp32 ? 1e-5 : 2 * format_info(cf).epsilon;
        close(c, 1e-4, eps, "C");
    }

    // ---- softmax

    void softmax_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<bool>("causal");
        QTest::addColumn<int>("cols");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
            for (bool causal : {false, true})
                for (int cols : {1, 7, 33, 200})
                    QTest::addRow("%s-%s-T%d", std::string(format_name(f)).c_str(), causal ? "causal" : "full", cols)
                        << f << causal << cols;
    }
    void softmax() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        QFETCH(bool, causal);
        QFETCH(int, cols);
        const std::int64_t rows = 3 * cols, n = rows * cols;  // three T×T blocks
        std::vector<float> xv = random_values(n, 3.0f, 71);
        if (n > 60) {  // -inf (a masked_fill), then a row with +inf, one with NaN: every row of those is NaN
            xv[static_cast<std::size_t>(n - 1)] = -INFINITY;
            xv[static_cast<std::size_t>(n - 2)] = -INFINITY;
            xv[static_cast<std::size_t>(cols * (cols + 1))] = INFINITY;                // row cols+1, column 0
            xv[static_cast<std::size_t>(cols * (2 * cols + 2) + 1)] = NAN;             // row 2·cols+2, column 1
        }
        Twin x = twin(*m_cpu, *m_gpu, desc("x", rows, cols, Format::fp32), xv);
        Twin y = twin(*m_cpu, *m_gpu, desc("y", rows, cols, format));
        SoftmaxStats sc, sg;
        m_cpu->softmax_forward(x.c(), y.c(), rows, causal, &sc);
        m_gpu->softmax_forward(x.g(), y.g(), rows, causal, &sg);
        // expf within 2 ulps and the row sum in another order: a few FP32 ulps, then y's rounding.
        const double eps = format == Format::fp32 ? 1e-5 : 2 * format_info(format).epsilon;
        close(y, 1e-7, eps, "y");
        QCOMPARE(sg.amax, sc.amax);
        QCOMPARE(sg.nonfinite, sc.nonfinite);
        const std::vector<float> yg = read(*m_gpu, y.g());
        if (causal) {
            const QString m = masked_not_zero(yg, cols);
            QVERIFY2(m.isEmpty(), qPrintable(m));
        }

        // The backward, with and without the extra scale, from y's values on each backend's own y
        // (the CPU's, uploaded to both, so only the backward is compared).
        const std::vector<float> yc = read(*m_cpu, y.c());
        m_gpu->upload(y.g(), yc.data(), n);
        Twin dy = twin(*m_cpu, *m_gpu, desc("dy", rows, cols, format), random_values(n, 0.5f, 72, 0.05));
        Twin dx = twin(*m_cpu, *m_gpu, desc("dx", rows, cols, format));
        for (float scale : {1.0f, 0.3f}) {
            m_cpu->softmax_backward(y.c(), dy.c(), dx.c(), rows, causal, scale);
            m_gpu->softmax_backward(y.g(), dy.g(), dx.g(), rows, causal, scale);
            // Σ dy·y in another order: a few ulps of |dy| ≤ 2, which y·(dy − Σ) keeps where the
            // difference cancels (atol); then dx's roundings (eps).
            close(dx, 2e-6, 2 * epsilon_of(format), scale == 1.0f ? "dx" : "dx scaled");
            if (causal) {
                const QString m = masked_not_zero(read(*m_gpu, dx.g()), cols);
                QVERIFY2(m.isEmpty(), qPrintable(m));
            }
        }
        // In place: dx is dy, then y is x.
        m_cpu->softmax_backward(y.c(), dy.c(), dy.c(), rows, causal, 0.5f);
        m_gpu->softmax_backward(y.g(), dy.g(), dy.g(), rows, causal, 0.5f);
        close(dy, 2e-6, 2 * epsilon_of(format), "dx in place");
        Twin z = twin(*m_cpu, *m_gpu, desc("z", rows, cols, format), xv);
        m_cpu->softmax_forward(z.c(), z.c(), rows, causal, nullptr);
        m_gpu->softmax_forward(z.g(), z.g(), rows, causal, nullptr);
        close(z, 1e-7, 2 * epsilon_of(format), "y in place");
    }

    // ---- layernorm

    void layernorm_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("rows");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            for (int dim : {7, 64, 200})
                for (int rows : {1, 37, 150})
                    QTest::addRow("%s-d%d-r%d", std::string(format_name(f)).c_str(), dim, rows) << f << dim << rows;
    }
    void layernorm() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        QFETCH(int, dim);
        QFETCH(int, rows);
        const std::int64_t n = static_cast<std::int64_t>(rows) * dim;
        auto vec = [&](const char* name, std::vector<float> v) {
            return twin(*m_cpu, *m_gpu, desc(name, 1, dim, Format::fp32), v);
        };
        Twin gamma = vec("ln.weight", random_values(dim, 0.5f, 81)), beta = vec("ln.bias", random_values(dim, 0.2f, 82));
        Twin gg = vec("ln.grad_weight", {}), gb = vec("ln.grad_bias", {});
        Twin sm = twin(*m_cpu, *m_gpu, desc("ln.saved_mean", rows, 1, Format::fp32));
        Twin si = twin(*m_cpu, *m_gpu, desc("ln.saved_invstd", rows, 1, Format::fp32));
        std::vector<float> xv = random_values(n, 1.5f, 83);
        for (float& v : xv) v += 0.75f;  // a mean away from zero
        if (rows > 1)
            for (int j = 0; j < dim; ++j) xv[static_cast<std::size_t>(dim + j)] = 2.5f;  // a constant row: variance 0
        Twin x = twin(*m_cpu, *m_gpu, desc("x", rows, dim, format), xv);
        Twin y = twin(*m_cpu, *m_gpu, desc("y", rows, dim, format));
        Twin dy = twin(*m_cpu, *m_gpu, desc("dy", rows, dim, format), random_values(n, 0.1f, 84));
        Twin dx = twin(*m_cpu, *m_gpu, desc("dx", rows, dim, format));
        auto tensors = [&](bool g) {
            LayerNormTensors l;
            l.dim = dim;
            l.weight = gamma.on(g);
            l.bias = beta.on(g);
            l.grad_weight = gg.on(g);
            l.grad_bias = gb.on(g);
            l.saved_mean = sm.on(g);
            l.saved_invstd = si.on(g);
            return l;
        };
        LayerNormTensors lc = tensors(false), lg = tensors(true);
        LayerNormStats stc, stg;
        m_cpu->layernorm_forward(lc, x.c(), y.c(), rows, &stc);
        m_gpu->layernorm_forward(lg, x.g(), y.g(), rows, &stg);
        // Statistics: double sums in another order, rounded to FP32 once: at most 1 ulp apart.
        // y and dx: a statistic 1 ulp off moves (x - μ)·invstd by about 2^-23·|x|·invstd, then
        // the output's rounding: atol 1e-5 (O(1) values) + the format's epsilon relative.
        for (Twin* t : {&sm, &si}) {
            const QString diff = compare_ulps(read(*m_cpu, t->c()), read(*m_gpu, t->g()), 1);
            QVERIFY2(diff.isEmpty(), qPrintable(QString::fromStdString(t->c().desc().name) + ": " + diff));
        }
        QVERIFY2(compare_ulps({stc.min_variance}, {stg.min_variance}, 1).isEmpty(),
                 qPrintable(QString("min variance %1 vs %2").arg(stg.min_variance).arg(stc.min_variance)));
        if (rows > 1) QCOMPARE_EXACT(stg.min_variance, 0.0f);
        const double eps = epsilon_of(format);
        close(y, 1e-5, eps, "y");
        // The backward from the same saved statistics on both (the CPU's).
        for (Twin* t : {&sm, &si}) {
            const std::vector<float> v = read(*m_cpu, t->c());
            m_gpu->upload(t->g(), v.data(), rows);
        }
        m_cpu->layernorm_backward(lc, x.c(), dy.c(), dx.c(), rows);
        m_gpu->layernorm_backward(lg, x.g(), dy.g(), dx.g(), rows);
        close(dx, 1e-5, eps, "dx");
        close(gg, 1e-5, 1e-5, "dgamma");
        const QString diff = compare_ulps(read(*m_cpu, gb.c()), read(*m_gpu, gb.g()), 1);  // Σdy in double
        QVERIFY2(diff.isEmpty(), qPrintable("dbeta: " + diff));
        // In place: dx is dy.
        m_cpu->layernorm_backward(lc, x.c(), dy.c(), dy.c(), rows);
        m_gpu->layernorm_backward(lg, x.g(), dy.g(), dy.g(), rows);
        close(dy, 1e-5, eps, "dx in place");
    }

    // ---- embedding

    void embedding_data() {
        QTest::addColumn<Format>("weight_format");
        QTest::addColumn<Format>("y_format");
        for (Format w : {Format::fp32, Format::fp16, Format::bf16})
            for (Format y : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                QTest::addRow("%s-into-%s", std::string(format_name(w)).c_str(), std::string(format_name(y)).c_str())
                    << w << y;
    }
    void embedding() {
        REQUIRE_GPU();
        QFETCH(Format, weight_format);
        QFETCH(Format, y_format);
        const std::int64_t vocab = 50, dim = 300, rows = 97;
        std::vector<std::int32_t> ids(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) ids[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 7) % 23);
        ids[5] = ids[60] = ids[96] = 49;  // repeated ids, the last row of the vocabulary
        Twin w = twin(*m_cpu, *m_gpu, desc("wte", vocab, dim, weight_format), random_values(vocab * dim, 0.5f, 91));
        Twin y = twin(*m_cpu, *m_gpu, desc("y", rows, dim, y_format));
        m_cpu->embedding_forward(w.c(), ids.data(), y.c(), rows);
        m_gpu->embedding_forward(w.g(), ids.data(), y.g(), rows);
        same_bits(y, "y");

        Twin dy = twin(*m_cpu, *m_gpu, desc("dy", rows, dim, y_format), random_values(rows * dim, 0.3f, 92, 0.05));
        // Written: the rows no id names are zeroed (start from other values to see it).
        Twin gw = twin(*m_cpu, *m_gpu, desc("wte.grad", vocab, dim, weight_format), random_values(vocab * dim, 1.0f, 93));
        m_cpu->embedding_backward(ids.data(), dy.c(), gw.c(), rows, false);
        m_gpu->embedding_backward(ids.data(), dy.g(), gw.g(), rows, false);
        same_bits(gw, "grad");
        // Accumulated onto a tied weight's first gradient (the LM head's), another set of ids.
        std::vector<std::int32_t> ids2(ids.rbegin(), ids.rend());
        ids2[0] = 3;
        m_cpu->embedding_backward(ids2.data(), dy.c(), gw.c(), rows, true);
        m_gpu->embedding_backward(ids2.data(), dy.g(), gw.g(), rows, true);
        same_bits(gw, "grad accumulated");
        // No rows: zeroed, or kept with accumulate.
        m_cpu->embedding_backward(ids.data(), dy.c(), gw.c(), 0, true);
        m_gpu->embedding_backward(ids.data(), dy.g(), gw.g(), 0, true);
        same_bits(gw, "no rows, accumulate");
        m_cpu->embedding_backward(ids.data(), dy.c(), gw.c(), 0, false);
        m_gpu->embedding_backward(ids.data(), dy.g(), gw.g(), 0, false);
        same_bits(gw, "no rows");
    }
};

QTEST_GUILESS_MAIN(TestGpuTransformerOps)
#include "test_gpu_transformer_ops.moc"
