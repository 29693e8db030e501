// What the CUDA backend says it runs (engine/backend/cuda/op_support.h), how it cuts a
// convolution's batch into chunks, and how it maps a batched matmul's strided views onto
// cuBLASLt's column-major strided-batched calls: host logic, checked without a GPU. The plans are
// run here by an emulation of cuBLASLt's call (column-major, op N/T, leading dimensions, batch
// strides) on small integers, so every element they reach is checked against the product taken
// through the views directly.
#include <QtTest>

#include <numeric>
#include <random>

#include "backend/cuda/op_support.h"

using namespace mantissa;
using namespace mantissa::cuda;

namespace {

struct BmmCase {
    BatchedMatmul op;
    StridedMatrix a, b, c;
    std::int64_t a_size, b_size, c_size;  // the tensors' values
    bool a_in_place = true, b_in_place = true, c_direct = true;
};

std::int64_t view_at(const BatchedMatmul& op, const StridedMatrix& v, std::int64_t batch, std::int64_t r,
                     std::int64_t c) {
    return v.offset + (batch / op.inner_count) * v.outer_stride + (batch % op.inner_count) * v.inner_stride +
           r * v.row_stride + c * v.col_stride;
}

std::vector<double> small_integers(std::int64_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(-3, 3);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = d(rng);
    return v;
}

// C as cuBLASLt would leave it after the plan's calls (and the scatter of a workspace), or a
// message naming the first element read or written outside its buffer.
QString run_plan(const BmmCase& t, const BmmPlan& p, const std::vector<double>& a, const std::vector<double>& b,
                 std::vector<double>& c) {
    const BatchedMatmul& op = t.op;
    const std::int64_t batch = op.batch_count();
    auto pack = [&](const std::vector<double>& src, const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
        std::vector<double> out(static_cast<std::size_t>(batch * rows * cols));
        for (std::int64_t m = 0; m < batch; ++m)
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t col = 0; col < cols; ++col)
                    out[static_cast<std::size_t>((m * rows + r) * cols + col)] =
                        src[static_cast<std::size_t>(view_at(op, v, m, r, col))];
        return out;
    };
    auto source = [&](const BmmMatrix& mat) {
        const std::vector<double>& src = mat.from_b ? b : a;
        if (!mat.plain) return src;
        return mat.from_b ? pack(b, t.b, op.k, op.n) : pack(a, t.a, op.m, op.k);
    };
    const std::vector<double> sa = source(p.a), sb = source(p.b);
    std::vector<double> work(static_cast<std::size_t>(batch * op.m * op.n), 0.0);
    std::vector<double>& d = p.d.plain ? work : c;
    if (p.calls * p.batch != batch) return "the calls cover " + QString::number(p.calls * p.batch) + " matrices";
    QString error;
    auto at = [&](const std::vector<double>& buf, std::int64_t i, const char* what) {
        if (i < 0 || i >= static_cast<std::int64_t>(buf.size())) {
            if (error.isEmpty()) error = QString("%1 reads element %2 of %3").arg(what).arg(i).arg(buf.size());
            return 0.0;
        }
        return buf[static_cast<std::size_t>(i)];
    };
    for (std::int64_t call = 0; call < p.calls; ++call)
        for (std::int64_t m = 0; m < p.batch; ++m) {
            const std::int64_t ba = p.a.offset + call * p.a.call_step + m * p.a.batch_stride;
            const std::int64_t bb = p.b.offset + call * p.b.call_step + m * p.b.batch_stride;
            const std::int64_t bd = p.d.offset + call * p.d.call_step + m * p.d.batch_stride;
            // cuBLASLt's own requirements: a leading dimension covers the stored rows.
            if (p.a.layout.ld < (p.a.layout.trans ? p.k : p.m) || p.b.layout.ld < (p.b.layout.trans ? p.n : p.k) ||
                p.d.layout.ld < p.m || p.d.layout.trans)
                return "a leading dimension is below its matrix's rows";
            for (std::int64_t i = 0; i < p.m; ++i)
                for (std::int64_t j = 0; j < p.n; ++j) {
                    double sum = 0;
                    for (std::int64_t l = 0; l < p.k; ++l) {
                        const double x = at(sa, ba + (p.a.layout.trans ? l + i * p.a.layout.ld : i + l * p.a.layout.ld), "A");
                        const double y = at(sb, bb + (p.b.layout.trans ? j + l * p.b.layout.ld : l + j * p.b.layout.ld), "B");
                        sum += x * y;
                    }
                    const std::int64_t di = bd + i + j * p.d.layout.ld;
                    if (di < 0 || di >= static_cast<std::int64_t>(d.size()))
                        return QString("D writes element %1 of %2").arg(di).arg(d.size());
                    d[static_cast<std::size_t>(di)] = sum;
                }
        }
    if (p.d.plain)
        for (std::int64_t m = 0; m < batch; ++m)
            for (std::int64_t r = 0; r < op.m; ++r)
                for (std::int64_t col = 0; col < op.n; ++col)
                    c[static_cast<std::size_t>(view_at(op, t.c, m, r, col))] =
                        work[static_cast<std::size_t>((m * op.m + r) * op.n + col)];
    return error;
}

// The attention shapes: B samples of T positions, H heads of hd values, dim = H·hd.
constexpr std::int64_t S = 2, T = 5, H = 3, HD = 4, DIM = H * HD;

BatchedMatmul attention_op(std::int64_t m, std::int64_t n, std::int64_t k) {
    BatchedMatmul op;
    op.outer_count = S;
    op.inner_count = H;
    op.m = m;
    op.n = n;
    op.k = k;
    return op;
}

std::vector<std::pair<const char*, BmmCase>> bmm_cases() {
    std::vector<std::pair<const char*, BmmCase>> cases;
    const std::int64_t qkv = S * T * 3 * DIM, out = S * T * DIM, scores = S * H * T * T;
    // Q·Kᵀ from the packed QKV tensor into the scores.
    cases.push_back({"q-kT", {attention_op(T, T, HD), head_view(T, 3 * DIM, 0, HD), head_view(T, 3 * DIM, DIM, HD, true),
                              packed_view(T, T, H), qkv, qkv, scores}});
    // P·V into the heads' columns of a (B·T, dim) tensor.
    cases.push_back({"p-v", {attention_op(T, HD, T), packed_view(T, T, H), head_view(T, 3 * DIM, 2 * DIM, HD),
                             head_view(T, DIM, 0, HD), scores, qkv, out}});
    // The backward: dV = Pᵀ·dY, dP = dY·Vᵀ, dQ = dS·K, dK = dSᵀ·Q into a dQKV tensor.
    cases.push_back({"pT-dy", {attention_op(T, HD, T), packed_view(T, T, H, true), head_view(T, DIM, 0, HD),
                               head_view(T, 3 * DIM, 2 * DIM, HD), scores, out, qkv}});
    cases.push_back({"dy-vT", {attention_op(T, T, HD), head_view(T, DIM, 0, HD), head_view(T, 3 * DIM, 2 * DIM, HD, true),
                               packed_view(T, T, H), out, qkv, scores}});
    cases.push_back({"ds-k", {attention_op(T, HD, T), packed_view(T, T, H), head_view(T, 3 * DIM, DIM, HD),
                              head_view(T, 3 * DIM, 0, HD), scores, qkv, qkv}});
    cases.push_back({"dsT-q", {attention_op(T, HD, T), packed_view(T, T, H, true), head_view(T, 3 * DIM, 0, HD),
                               head_view(T, 3 * DIM, DIM, HD), scores, qkv, qkv}});
    // C written transposed (a unit row stride): no swap.
    {
        BmmCase c{attention_op(T, HD, T), packed_view(T, T, H), packed_view(T, HD, H), packed_view(HD, T, H, true),
                  scores, S * H * T * HD, S * H * T * HD};
        cases.push_back({"c-transposed", c});
    }
    // Neither unit stride anywhere: every operand packed, C through the workspace.
    {
        BatchedMatmul op = attention_op(3, 4, 5);
        StridedMatrix a{1, 200, 60, 12, 2}, b{0, 180, 50, 2, 10}, c{3, 150, 40, 9, 2};
        cases.push_back({"no-unit-stride", {op, a, b, c, 400, 400, 400}});
    }
    // Operands in another format (packed), C not writable directly (the workspace).
    {
        BmmCase c = cases[0].second;
        c.a_in_place = c.b_in_place = false;
        c.c_direct = false;
        cases.push_back({"packed-workspace", c});
    }
    // One level of the batch, a shared (stride 0) B, and degenerate rows and columns.
    {
        BatchedMatmul op;
        op.outer_count = 1;
        op.inner_count = 4;
        op.m = 3;
        op.n = 2;
        op.k = 5;
        StridedMatrix a{0, 0, 15, 5, 1}, b{0, 0, 0, 1, 5}, c{0, 0, 6, 2, 1};
        cases.push_back({"shared-b", {op, a, b, c, 60, 10, 24}});
        op.outer_count = 4;
        op.inner_count = 1;
        StridedMatrix a2{0, 15, 0, 5, 1}, b2{2, 0, 0, 1, 5}, c2{0, 6, 0, 2, 1};
        cases.push_back({"outer-only", {op, a2, b2, c2, 60, 12, 24}});
    }
    {
        BatchedMatmul op = attention_op(1, 7, 3);  // one row: its row stride is free
        StridedMatrix a{0, 40, 9, 1000, 3}, b{1, 90, 30, 7, 1}, c{0, 49, 7, 999, 1};
        cases.push_back({"one-row", {op, a, b, c, 200, 300, 200}});
        BatchedMatmul op2 = attention_op(6, 1, 1);  // one column, k = 1
        StridedMatrix a2{0, 40, 6, 1, 77}, b2{0, 3, 1, 55, 66}, c2{0, 36, 6, 1, 5};
        cases.push_back({"one-column", {op2, a2, b2, c2, 100, 10, 100}});
    }
    // Overlapping operand rows (row and column stride both 1): packed.
    {
        BatchedMatmul op = attention_op(3, 3, 3);
        StridedMatrix a{0, 10, 3, 1, 1}, b{0, 10, 3, 1, 1}, c = packed_view(3, 3, H);
        cases.push_back({"overlapping-operands", {op, a, b, c, 40, 40, S * H * 9}});
    }
    return cases;
}

}  // namespace

class TestCudaOpSupport : public QObject {
    Q_OBJECT

private slots:
    void convolutional_ops_take_the_cpu_formats() {
        const Support yes{true, {}};
        for (BackendOp op : {BackendOp::maxpool2d, BackendOp::avgpool2d, BackendOp::global_avgpool,
                             BackendOp::batchnorm2d, BackendOp::add}) {
            for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                QVERIFY(cuda_op_unsupported(op, f, yes, "GPU").empty());
            const std::string why = cuda_op_unsupported(op, Format::fp8_e4m3, yes, "GPU");
            QVERIFY(!why.empty());
            QVERIFY2(why.find(backend_op_name(op)) != std::string::npos, why.c_str());
            QVERIFY2(why.find("fp8-e4m3") != std::string::npos || why.find("fp8_e4m3") != std::string::npos,
                     why.c_str());
        }
        QVERIFY(cuda_op_unsupported(BackendOp::activation, Format::fp8_e5m2, yes, "GPU").empty());
    }

    void matmuls_follow_the_gpu() {
        const Support yes{true, {}};
        const Support no{false, "compute capability 7.5 has no bf16 tensor cores (8.0 needed)"};
        QVERIFY(cuda_op_unsupported(BackendOp::conv2d, Format::bf16, yes, "T4").empty());
        QVERIFY(cuda_op_unsupported(BackendOp::conv2d, Format::fp8_e4m3, yes, "H200").empty());
        const std::string why = cuda_op_unsupported(BackendOp::conv2d, Format::bf16, no, "T4");
        QVERIFY2(why.find("convolutions") != std::string::npos && why.find("T4") != std::string::npos &&
                     why.find(no.reason) != std::string::npos,
                 why.c_str());
        const std::string lin = cuda_op_unsupported(BackendOp::linear, Format::bf16, no, "T4");
        QVERIFY2(lin.find("linear layers") != std::string::npos, lin.c_str());
        // e5m2 is a gradient format: no convolution computes in it, whatever the GPU.
        QVERIFY(!cuda_op_unsupported(BackendOp::conv2d, Format::fp8_e5m2, yes, "H200").empty());
    }

    // The block-scaled formats run in linear layers and convolutions where the GPU multiplies
    // bf16; a precision per matmul runs in both; the FP8 recipes run.
    void block_scaled_layers_mixes_and_recipes() {
        for (BackendOp op : {BackendOp::block_scaled, BackendOp::block_scaled_conv}) {
            QCOMPARE(cuda_op_unsupported(op, Format::fp32, Support{true, {}}, "H200"), std::string());
            const std::string old = cuda_op_unsupported(op, Format::fp32, Support{false, "no bf16 tensor cores"}, "T4");
            QVERIFY2(old.find("bf16") != std::string::npos && old.find("T4") != std::string::npos &&
                         old.find("backend: cpu") != std::string::npos,
                     old.c_str());
        }
        for (BackendOp op : {BackendOp::per_gemm, BackendOp::per_gemm_conv})
            QCOMPARE(cuda_op_unsupported(op, Format::fp32, Support{true, {}}, "H200"), std::string());
        // FP8 current and rowwise scaling and power-of-two scales run (the layer's FP8 support is
        // the linear op's own question).
        QCOMPARE(cuda_op_unsupported(BackendOp::fp8_recipe, Format::fp8_e4m3, Support{true, {}}, "H200"),
                 std::string());
    }

    // Gradients (a linear layer's and a convolution's) and weights rounded stochastically,
    // Kahan-compensated updates and FP16 accumulation run on both backends.
    void rounding_and_accumulation() {
        const Support yes{true, {}};
        for (BackendOp op : {BackendOp::stochastic_gradients, BackendOp::stochastic_conv_gradients,
                             BackendOp::stochastic_weights}) {
            const std::string why = cuda_op_unsupported(op, Format::fp32, yes, "H200");
            QVERIFY2(why.empty(), why.c_str());
        }
        const std::string kahan = cuda_op_unsupported(BackendOp::kahan_updates, Format::fp32, yes, "H200");
        QVERIFY2(kahan.empty(), kahan.c_str());
        const std::string acc = cuda_op_unsupported(BackendOp::fp16_accumulation, Format::fp16, yes, "H200");
        QVERIFY2(acc.empty(), acc.c_str());
    }

    void operand_statistics_read_after_the_step() {
        // What-if statistics, block-scale views and accumulation errors: the pipeline copies the
        // operands out with the step (cuda_step_pipeline.h), on any GPU the backend runs on.
        const std::string why = cuda_op_unsupported(BackendOp::what_if, Format::fp32, Support{false, "no bf16"}, "T4");
        QVERIFY2(why.empty(), why.c_str());
    }

    void transformer_ops_take_the_cpu_formats() {
        const Support yes{true, {}};
        for (BackendOp op : {BackendOp::softmax, BackendOp::layernorm, BackendOp::embedding, BackendOp::bmm}) {
            for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                QVERIFY(cuda_op_unsupported(op, f, yes, "GPU").empty());
            for (Format f : {Format::fp8_e4m3, Format::fp8_e5m2}) {
                const std::string why = cuda_op_unsupported(op, f, yes, "GPU");
                QVERIFY2(!why.empty() && why.find("fp16") != std::string::npos, why.c_str());
            }
        }
        // bmm multiplies: a GPU without the format's tensor cores refuses it, naming itself and why.
        const Support no{false, "bf16 needs BF16 tensor cores (Ampere), compute capability 8.0 or newer; this GPU has 7.5"};
        const std::string why = cuda_op_unsupported(BackendOp::bmm, Format::bf16, no, "T4");
        QVERIFY2(why.find("batched matmuls") != std::string::npos && why.find("T4") != std::string::npos &&
                     why.find(no.reason) != std::string::npos,
                 why.c_str());
        QVERIFY(cuda_op_unsupported(BackendOp::softmax, Format::bf16, no, "T4").empty());  // not a matmul
    }

    void column_major_forms() {
        StridedMatrix v;
        v.row_stride = 1;
        v.col_stride = 7;  // (5, 3) stored column-major with ld 7
        auto f = column_major(v, 5, 3);
        QVERIFY(f && !f->trans && f->ld == 7);
        v.row_stride = 9;
        v.col_stride = 1;  // row-major: the transpose of a column-major (3, 5)
        f = column_major(v, 5, 3);
        QVERIFY(f && f->trans && f->ld == 9);
        v.row_stride = 2;  // rows overlap: no form
        QVERIFY(!column_major(v, 5, 3));
        v.row_stride = 4;
        v.col_stride = 2;  // no unit stride
        QVERIFY(!column_major(v, 5, 3));
        QVERIFY(column_major(v, 1, 1));  // one element: any strides
    }

    void batched_matmul_plans_data() {
        QTest::addColumn<int>("which");
        const auto cases = bmm_cases();
        for (int i = 0; i < static_cast<int>(cases.size()); ++i)
            QTest::newRow(cases[static_cast<std::size_t>(i)].first) << i;
    }
    void batched_matmul_plans() {
        QFETCH(int, which);
        const auto [name, t] = bmm_cases()[static_cast<std::size_t>(which)];
        const BmmPlan p = plan_batched_matmul(t.op, t.a, t.a_in_place, t.b, t.b_in_place, t.c, t.c_direct);
        const std::vector<double> a = small_integers(t.a_size, 1), b = small_integers(t.b_size, 2);
        std::vector<double> c = small_integers(t.c_size, 3);
        std::vector<double> expected = c;
        for (std::int64_t m = 0; m < t.op.batch_count(); ++m)
            for (std::int64_t i = 0; i < t.op.m; ++i)
                for (std::int64_t j = 0; j < t.op.n; ++j) {
                    double sum = 0;
                    for (std::int64_t l = 0; l < t.op.k; ++l)
                        sum += a[static_cast<std::size_t>(view_at(t.op, t.a, m, i, l))] *
                               b[static_cast<std::size_t>(view_at(t.op, t.b, m, l, j))];
                    expected[static_cast<std::size_t>(view_at(t.op, t.c, m, i, j))] = sum;
                }
        const QString error = run_plan(t, p, a, b, c);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (std::size_t i = 0; i < c.size(); ++i)
            QVERIFY2(c[i] == expected[i], qPrintable(QString("%1: element %2 is %3, %4 expected")
                                                          .arg(name).arg(i).arg(c[i]).arg(expected[i])));

        // What each attention product costs: read in place, written directly, one call per
        // sample when the heads sit side by side in a row, one call for the packed scores.
        const std::string n = name;
        if (n == "q-kT" || n == "p-v" || n == "pT-dy" || n == "dy-vT" || n == "ds-k" || n == "dsT-q") {
            QVERIFY(!p.a.plain && !p.b.plain && !p.d.plain);
            QCOMPARE(p.calls, S);
            QCOMPARE(p.batch, H);
        }
        if (n == "no-unit-stride") QVERIFY(p.a.plain && p.b.plain && p.d.plain);
        if (n == "packed-workspace") {
            QVERIFY(p.a.plain && p.b.plain && p.d.plain);
            QCOMPARE(p.calls, std::int64_t{1});  // plain copies step evenly: one call
        }
        if (n == "c-transposed") QVERIFY(!p.swapped && !p.d.plain);
        if (n == "q-kT") QVERIFY(p.swapped);
        if (n == "overlapping-operands") QVERIFY(p.a.plain && p.b.plain);
    }

    void chunks_cover_the_batch_within_the_bound() {
        for (std::int64_t batch : {1, 7, 64, 1000})
            for (std::int64_t positions : {1, 9, 49, 196, 784, 1024})
                for (std::int64_t widest : {1, 27, 288, 4608})
                    for (std::int64_t max_values : {std::int64_t{1} << 12, std::int64_t{1} << 18, conv_column_values}) {
                        const std::int64_t n = conv_chunk_samples(batch, positions, widest, max_values);
                        QVERIFY(n >= 1 && n <= batch);
                        // Within the bound, unless one sample alone exceeds it.
                        QVERIFY(n == 1 || n * positions * widest <= max_values);
                        if (n < batch) {
                            // Not needlessly small: another step of samples would not fit.
                            const std::int64_t step = 16 / std::gcd(positions, std::int64_t{16});
                            QVERIFY(n >= step ? (n + step) * positions * widest > max_values
                                              : (n + 1) * positions * widest > max_values);
                            // Rows a multiple of 16 whenever the step fits (FP8's native shapes).
                            if (n >= step) QCOMPARE((n * positions) % 16, std::int64_t{0});
                        }
                    }
        QCOMPARE(conv_chunk_samples(0, 49, 27, conv_column_values), std::int64_t{0});
        QCOMPARE(conv_chunk_samples(128, 784, 288, conv_column_values), std::int64_t{74});  // 2^24 / 225792 = 74 (784 positions: any count of samples is 16 rows)
        QCOMPARE(conv_chunk_samples(5, 10, 10, 1000), std::int64_t{5});
        QCOMPARE(conv_chunk_samples(100, 9, 10, 2000), std::int64_t{16});  // 22 fit; 9 positions: steps of 16
    }
};

QTEST_APPLESS_MAIN(TestCudaOpSupport)
#include "test_op_support.moc"
