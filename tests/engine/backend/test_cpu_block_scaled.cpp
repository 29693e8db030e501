// The CPU backend's block-scaled linear and conv2d layers (LinearTensors::block, ConvTensors::block)
// against references written here: each matmul's operands quantised along its own reduction
// dimension by a quantiser that gathers every run of K values into one array (each run padded
// with zeros to whole blocks, so one round_blocks call sees the runs' blocks and NVFP4's tensor
// amax of the whole tensor), then multiplied in double. The shapes leave partial blocks on
// every axis, and the values grow along rows and columns at different rates so that quantising
// along the wrong axis gives a different answer, which the narrow formats check too (a test that
// the references tell the axes apart). docs/numerics.md, "Block-scaled formats in training".
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "numeric/block_format.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::read;
using conv_test::make;
using conv_test::make_with;
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

// v viewed as (outer, K, inner): every run of K values at stride `inner` quantised in blocks.
std::vector<double> quantised_along(BlockFormat f, const std::vector<float>& v, std::int64_t outer, std::int64_t K,
                                    std::int64_t inner) {
    const std::int64_t B = block_format_info(f).block_size, padded = (K + B - 1) / B * B;
    std::vector<float> runs(static_cast<std::size_t>(outer * inner * padded), 0.0f);
    auto at = [&](std::int64_t o, std::int64_t k, std::int64_t i) {
        return static_cast<std::size_t>((o * K + k) * inner + i);
    };
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i)
            for (std::int64_t k = 0; k < K; ++k)
                runs[static_cast<std::size_t>((o * inner + i) * padded + k)] = v[at(o, k, i)];
    round_blocks(f, runs.data(), runs.data(), runs.size());
    std::vector<double> out(v.size());
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i)
            for (std::int64_t k = 0; k < K; ++k) out[at(o, k, i)] = runs[static_cast<std::size_t>((o * inner + i) * padded + k)];
    return out;
}

// Values of normal(0, 1) scaled by 2^(r mod 7) along rows and 2^(3·(c mod 4)) along columns: a
// block along a row spans columns of very different size, a block along a column rows of
// similar size, so the two quantisations differ.
std::vector<float> graded_values(std::int64_t rows, std::int64_t cols, unsigned seed) {
    std::vector<float> v = random_values(static_cast<std::size_t>(rows * cols), 1.0f, seed);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            v[static_cast<std::size_t>(r * cols + c)] *= std::ldexp(1.0f, static_cast<int>(r % 7 + 3 * (c % 4)) - 6);
    return v;
}

// C(m, n) = Σ_k A(m, k)·B(k, n) with A and B read through index functions, and Σ|terms|.
struct Product {
    std::vector<double> value, magnitude;
};
template <class A, class B>
Product product(std::int64_t m, std::int64_t n, std::int64_t k, A a, B b) {
    Product p{std::vector<double>(static_cast<std::size_t>(m * n)), std::vector<double>(static_cast<std::size_t>(m * n))};
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double s = 0, mag = 0;
            for (std::int64_t l = 0; l < k; ++l) {
                const double t = a(i, l) * b(l, j);
                s += t;
                mag += std::abs(t);
            }
            p.value[static_cast<std::size_t>(i * n + j)] = s;
            p.magnitude[static_cast<std::size_t>(i * n + j)] = mag;
        }
    return p;
}

// got holds FP32 sums of the exact products: within a few FP32 roundings of Σ|terms|.
QString off_reference(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                      const std::vector<double>& magnitude) {
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= 1e-5 * magnitude[i] + 1e-30))
            return QStringLiteral("%1[%2] = %3, reference %4").arg(what).arg(i).arg(double(got[i]), 0, 'g', 9).arg(want[i], 0, 'g', 9);
    return {};
}

// Whether quantising along another axis changes values for this format with graded_values: MX
// scales are powers of two, so a value that stays in the element's normal range rounds the same
// under any block's scale; only the narrow elements (fp6, fp4: a few binades) flush or lose bits
// differently, and NVFP4's scales are not powers of two.
bool axis_shows(BlockFormat f) { return f != BlockFormat::mxfp8_e4m3 && f != BlockFormat::mxfp8_e5m2; }

// Whether got is far from want somewhere: more than 100 times the tolerance above.
bool far_from(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude) {
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::abs(got[i] - want[i]) > 1e-3 * magnitude[i] + 1e-30) return true;
    return false;
}

void add_format_rows() {
    QTest::addColumn<BlockFormat>("format");
    for (BlockFormat f : all_block_formats) QTest::newRow(std::string(block_format_name(f)).c_str()) << f;
}

}  // namespace

class TestCpuBlockScaled : public QObject {
    Q_OBJECT

private slots:
    void linearQuantisesEachMatmulAlongItsReduction_data() { add_format_rows(); }
    void linearQuantisesEachMatmulAlongItsReduction() {
        QFETCH(BlockFormat, format);
        CpuBackend be;
        const std::int64_t batch = 40, in = 70, out = 36;  // 40 = 32 + 8, 70 = 2·32 + 6, 36 = 32 + 4
        const std::vector<float> xv = graded_values(batch, in, 1), wv = graded_values(out, in, 2),
                                 dyv = graded_values(batch, out, 3), bv = random_values(static_cast<std::size_t>(out), 0.5f, 4);
        auto x = make_with(be, batch, in, Format::fp32, xv, "x"), w = make_with(be, out, in, Format::fp32, wv, "fc.weight"),
             b = make_with(be, 1, out, Format::fp32, bv, "fc.bias"), dy = make_with(be, batch, out, Format::fp32, dyv, "dy");
        auto y = make(be, batch, out, Format::fp32, "y"), dx = make(be, batch, in, Format::fp32, "dx"),
             gw = make(be, out, in, Format::fp32, "fc.grad_weight"), gb = make(be, 1, out, Format::fp32, "fc.grad_bias");
        LinearTensors t;
        t.weight = w.get(), t.bias = b.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.block = format;

        be.linear_forward(t, *x, *y, batch, true);
        {
            const std::vector<double> xq = quantised_along(format, xv, batch, in, 1), wq = quantised_along(format, wv, out, in, 1);
            Product p = product(batch, out, in, [&](auto r, auto k) { return xq[std::size_t(r * in + k)]; },
                                [&](auto k, auto o) { return wq[std::size_t(o * in + k)]; });
            for (std::int64_t r = 0; r < batch; ++r)
                for (std::int64_t o = 0; o < out; ++o) p.value[std::size_t(r * out + o)] += bv[std::size_t(o)];
            const QString bad = off_reference("y", read(be, *y), p.value, p.magnitude);
            QVERIFY2(bad.isEmpty(), qPrintable(bad));
        }

        be.linear_backward(t, *x, *dy, dx.get(), batch, nullptr);
        // dgrad: dX = dy·W over out: dy along its rows, W along its columns.
        const std::vector<double> dy_rows = quantised_along(format, dyv, batch, out, 1),
                                  w_cols = quantised_along(format, wv, 1, out, in);
        const Product dx_ref = product(batch, in, out, [&](auto r, auto o) { return dy_rows[std::size_t(r * out + o)]; },
                                       [&](auto o, auto k) { return w_cols[std::size_t(o * in + k)]; });
        const std::vector<float> dx_got = read(be, *dx);
        QString bad = off_reference("dx", dx_got, dx_ref.value, dx_ref.magnitude);
        QVERIFY2(bad.isEmpty(), qPrintable(bad));
        // wgrad: dW = dyᵀ·x over the batch: dy and x along their columns.
        const std::vector<double> dy_cols = quantised_along(format, dyv, 1, batch, out),
                                  x_cols = quantised_along(format, xv, 1, batch, in);
        const Product gw_ref = product(out, in, batch, [&](auto o, auto r) { return dy_cols[std::size_t(r * out + o)]; },
                                       [&](auto r, auto k) { return x_cols[std::size_t(r * in + k)]; });
        const std::vector<float> gw_got = read(be, *gw);
        bad = off_reference("grad_weight", gw_got, gw_ref.value, gw_ref.magnitude);
        QVERIFY2(bad.isEmpty(), qPrintable(bad));
        // dB from the unquantised dy.
        const std::vector<float> gb_got = read(be, *gb);
        for (std::int64_t o = 0; o < out; ++o) {
            double s = 0, mag = 0;
            for (std::int64_t r = 0; r < batch; ++r) s += dyv[std::size_t(r * out + o)], mag += std::abs(dyv[std::size_t(r * out + o)]);
            QVERIFY2(std::abs(gb_got[std::size_t(o)] - s) <= 1e-5 * mag, qPrintable(QString::number(o)));
        }

        // The references tell the axes apart: W along its rows for dgrad, or dy along its rows
        // for wgrad, would be far from what the backend computed.
        const std::vector<double> w_rows = quantised_along(format, wv, out, in, 1);
        const Product dx_wrong = product(batch, in, out, [&](auto r, auto o) { return dy_rows[std::size_t(r * out + o)]; },
                                         [&](auto o, auto k) { return w_rows[std::size_t(o * in + k)]; });
        if (axis_shows(format)) QVERIFY(far_from(dx_got, dx_wrong.value, dx_wrong.magnitude));
        const Product gw_wrong = product(out, in, batch, [&](auto o, auto r) { return dy_rows[std::size_t(r * out + o)]; },
                                         [&](auto r, auto k) { return x_cols[std::size_t(r * in + k)]; });
        if (axis_shows(format)) QVERIFY(far_from(gw_got, gw_wrong.value, gw_wrong.magnitude));
    }

    // While keep_block_exponents is on, the forward keeps the exponents its quantiser found for x
    // and W (block_decode_exponents's, with the tensor's own NVFP4 scale): what the block-scale
    // views read. Only for the tensor as it was quantised (a write forgets them), the format and
    // row length asked for, and only while kept (off by default; each step starts afresh).
    void forwardKeepsItsOperandsBlockExponents_data() { add_format_rows(); }
    void forwardKeepsItsOperandsBlockExponents() {
        QFETCH(BlockFormat, format);
        CpuBackend be;
        const std::int64_t batch = 40, in = 70, out = 36, B = block_format_info(format).block_size;
        const std::int64_t per_row = (in + B - 1) / B;
        std::vector<float> xv = graded_values(batch, in, 5);
        std::fill_n(xv.begin() + in, in, 0.0f);  // a row of zeros: zero blocks
        const std::vector<float> wv = graded_values(out, in, 6), bv(static_cast<std::size_t>(out), 0.0f);
        auto x = make_with(be, batch, in, Format::fp32, xv, "x"), w = make_with(be, out, in, Format::fp32, wv, "fc.weight"),
             b = make_with(be, 1, out, Format::fp32, bv, "fc.bias");
        auto y = make(be, batch, out, Format::fp32, "y"), gw = make(be, out, in, Format::fp32, "fc.grad_weight"),
             gb = make(be, 1, out, Format::fp32, "fc.grad_bias");
        LinearTensors t;
        t.weight = w.get(), t.bias = b.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.block = format;

        be.linear_forward(t, *x, *y, batch, true);
        QVERIFY(be.kept_block_exponents(*x, format, in).values == nullptr);  // not asked to keep

        be.keep_block_exponents(true);
        be.linear_forward(t, *x, *y, batch, true);
        const auto check = [&](const Tensor& tensor, const std::vector<float>& v, std::int64_t rows, const char* what) {
            const Backend::KeptBlockExponents kept = be.kept_block_exponents(tensor, format, in);
            QVERIFY2(kept.values != nullptr, what);
            QCOMPARE(kept.rows, rows);
            const float S = block_tensor_scale(format, v.data(), v.size());
            std::vector<std::int16_t> want(static_cast<std::size_t>(rows * per_row));
            block_decode_exponents(format, S, v.data(), static_cast<std::size_t>(rows), static_cast<std::size_t>(in),
                                   want.data());
            for (std::size_t i = 0; i < want.size(); ++i)
                QVERIFY2(kept.values[i] == want[i], qPrintable(QString("%1 block %2: %3, want %4")
                                                                   .arg(what).arg(i).arg(kept.values[i]).arg(want[i])));
        };
        check(*x, xv, batch, "x");
        check(*w, wv, out, "W");
        QCOMPARE(be.kept_block_exponents(*x, format, in).values[static_cast<std::size_t>(per_row)],
                 BlockScaleRecord::zero_block);
        // Another format or row length: not these exponents.
        const BlockFormat other = format == BlockFormat::mxfp4 ? BlockFormat::nvfp4 : BlockFormat::mxfp4;
        QVERIFY(be.kept_block_exponents(*x, other, in).values == nullptr);
        QVERIFY(be.kept_block_exponents(*x, format, in / 2).values == nullptr);
        // x written since: forgotten; W still kept. Quantised again, x's new values give their
        // own exponents (NVFP4: with the new tensor scale, not the one remembered for the old x).
        std::vector<float> xv2 = xv;
        for (float& v : xv2) v *= 12.0f;
        be.upload(*x, xv2.data(), batch * in);
        QVERIFY(be.kept_block_exponents(*x, format, in).values == nullptr);
        QVERIFY(be.kept_block_exponents(*w, format, in).values != nullptr);
        be.linear_forward(t, *x, *y, batch, true);
        check(*x, xv2, batch, "x written");
        check(*w, wv, out, "W again");
        // Off: nothing kept.
        be.keep_block_exponents(false);
        QVERIFY(be.kept_block_exponents(*w, format, in).values == nullptr);
        be.linear_forward(t, *x, *y, batch, true);
        QVERIFY(be.kept_block_exponents(*w, format, in).values == nullptr);
    }

    // The output and gradients are rounded to their tensors' formats after the FP32 sums, as
    // for every other compute format: a bf16 output holds bf16 values.
    void linearRoundsItsOutputsToTheirFormats() {
        CpuBackend be;
        const std::int64_t batch = 8, in = 64, out = 16;
        const std::vector<float> xv = graded_values(batch, in, 5), wv = graded_values(out, in, 6);
        auto x = make_with(be, batch, in, Format::bf16, xv, "x"), w = make_with(be, out, in, Format::fp32, wv, "fc.weight"),
             b = make(be, 1, out, Format::fp32, "fc.bias"), bc = make(be, 1, out, Format::bf16, "fc.bias_compute");
        auto y = make(be, batch, out, Format::bf16, "y"), gw = make(be, out, in, Format::bf16, "fc.grad_weight"),
             gb = make(be, 1, out, Format::bf16, "fc.grad_bias");
        LinearTensors t;
        t.weight = w.get(), t.bias = b.get(), t.bias_compute = bc.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.block = BlockFormat::mxfp4;
        be.linear_forward(t, *x, *y, batch, true);
        QVERIFY(conv_test::all_in_format(Format::bf16, read(be, *y)));
        be.linear_backward(t, *x, *y, nullptr, batch, nullptr);
        QVERIFY(conv_test::all_in_format(Format::bf16, read(be, *gw)));
    }

    // NVFP4's tensor scales multiply the FP32 accumulator, as a block-scaled GEMM's alpha does:
    // the operands are elements times their E4M3 block scales. Every run along every reduction
    // here holds the tensor's largest magnitude, so every block scale is 448 and every operand an
    // element times 448; the sums of their products are exact in FP32 in any order, and each
    // output must be fp32(sum) × fp32(fp32(1/S_a) × fp32(1/S_b)) bit for bit. Operands decoded
    // with their tensor scales (element × fp32(448 / S)) would give FP32 roundings of the
    // products instead.
    void nvfp4TensorScalesMultiplyTheAccumulator() {
        CpuBackend be;
        const std::int64_t batch = 4, in = 16, out = 8;
        const float grid[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
        std::vector<float> ex(std::size_t(batch * in)), ew(std::size_t(out * in)), edy(std::size_t(batch * out));
        unsigned state = 12345;
        auto element = [&](bool largest) {  // an e2m1 value, ±6 where the run needs its amax
            state = state * 1103515245u + 12345u;
            const float e = largest ? 6.0f : grid[(state >> 16) % 8];
            return (state >> 24) % 2 ? -e : e;
        };
        // ±6 where a row and a column both need one: x's rows (forward) and columns (wgrad), W's
        // rows (forward) and columns (dgrad), dy's rows (dgrad) and columns (wgrad).
        for (std::int64_t r = 0; r < batch; ++r)
            for (std::int64_t k = 0; k < in; ++k) ex[std::size_t(r * in + k)] = element(k % batch == r);
        for (std::int64_t o = 0; o < out; ++o)
            for (std::int64_t k = 0; k < in; ++k) ew[std::size_t(o * in + k)] = element(k % out == o);
        for (std::int64_t r = 0; r < batch; ++r)
            for (std::int64_t o = 0; o < out; ++o) edy[std::size_t(r * out + o)] = element(o % batch == r);
        const float cx = 0.3f, cw = 0.05f, cdy = 1e-3f;  // no powers of two: 1/S rounds
        auto scaled = [](const std::vector<float>& e, float c) {
            std::vector<float> v(e.size());
            for (std::size_t i = 0; i < e.size(); ++i) v[i] = e[i] * c;
            return v;
        };
        const std::vector<float> xv = scaled(ex, cx), wv = scaled(ew, cw), dyv = scaled(edy, cdy);
        auto x = make_with(be, batch, in, Format::fp32, xv, "x"), w = make_with(be, out, in, Format::fp32, wv, "fc.weight"),
             b = make(be, 1, out, Format::fp32, "fc.bias"), dy = make_with(be, batch, out, Format::fp32, dyv, "dy");
        auto y = make(be, batch, out, Format::fp32, "y"), dx = make(be, batch, in, Format::fp32, "dx"),
             gw = make(be, out, in, Format::fp32, "fc.grad_weight"), gb = make(be, 1, out, Format::fp32, "fc.grad_bias");
        LinearTensors t;
        t.weight = w.get(), t.bias = b.get(), t.grad_weight = gw.get(), t.grad_bias = gb.get();
        t.block = BlockFormat::nvfp4;
        be.linear_forward(t, *x, *y, batch, true);
        be.linear_backward(t, *x, *dy, dx.get(), batch, nullptr);

        auto inverse_scale = [](const std::vector<float>& v) {
            return 1.0f / block_tensor_scale(BlockFormat::nvfp4, v.data(), v.size());
        };
        const float qx = inverse_scale(xv), qw = inverse_scale(wv), qdy = inverse_scale(dyv);
        // fp32(Σ (a_i · 448)(b_i · 448)), exact, times the two factors' FP32 product.
        auto expect = [](double sum, float qa, float qb) { return static_cast<float>(sum * 448.0 * 448.0) * (qa * qb); };
        int differs_from_decoded = 0;
        auto check = [&](const char* what, const std::vector<float>& got, std::int64_t rows, std::int64_t cols,
                         std::int64_t k, auto a, auto bb, float qa, float qb) {
            for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t j = 0; j < cols; ++j) {
                    double sum = 0, decoded = 0;
                    for (std::int64_t l = 0; l < k; ++l) {
                        sum += double(a(i, l)) * double(bb(l, j));
                        decoded += double(a(i, l) * (448.0f * qa)) * double(bb(l, j) * (448.0f * qb));
                    }
                    const float want = expect(sum, qa, qb), g = got[std::size_t(i * cols + j)];
                    QVERIFY2(std::bit_cast<std::uint32_t>(g) == std::bit_cast<std::uint32_t>(want),
                             qPrintable(QString("%1[%2, %3] = %4, want %5").arg(what).arg(i).arg(j)
                                            .arg(double(g), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
                    differs_from_decoded += static_cast<float>(decoded) != want;
                }
        };
        check("y", read(be, *y), batch, out, in, [&](auto r, auto l) { return ex[std::size_t(r * in + l)]; },
              [&](auto l, auto o) { return ew[std::size_t(o * in + l)]; }, qx, qw);
        if (QTest::currentTestFailed()) return;
        check("dx", read(be, *dx), batch, in, out, [&](auto r, auto l) { return edy[std::size_t(r * out + l)]; },
              [&](auto l, auto k) { return ew[std::size_t(l * in + k)]; }, qdy, qw);
        if (QTest::currentTestFailed()) return;
        check("grad_weight", read(be, *gw), out, in, batch, [&](auto o, auto l) { return edy[std::size_t(l * out + o)]; },
              [&](auto l, auto k) { return ex[std::size_t(l * in + k)]; }, qdy, qx);
        if (QTest::currentTestFailed()) return;
        // The data tell the two orders of rounding apart (the sums of decoded operands, even
        // exact, round elsewhere): the test would fail for operands decoded with 1/S.
        QVERIFY(differs_from_decoded > 0);
    }

    void convQuantisesEachMatmulAlongItsReduction_data() { add_format_rows(); }
    void convQuantisesEachMatmulAlongItsReduction() {
        QFETCH(BlockFormat, format);
        CpuBackend be;
        Conv2dGeometry g;
        g.in_channels = 5, g.in_h = 5, g.in_w = 6, g.out_channels = 36, g.kernel = 3, g.stride = 1, g.padding = 1;
        const std::int64_t batch = 2, C = g.in_channels, Co = g.out_channels, H = g.in_h, W = g.in_w, k = g.kernel;
        const std::int64_t P = g.out_h() * g.out_w(), HW = H * W, patch = g.patch(), cols = batch * P;
        const std::vector<float> xv = graded_values(batch * C, HW, 7), wv = graded_values(Co, patch, 8),
                                 dyv = graded_values(batch * Co, P, 9);
        auto x = make_with(be, batch, g.in_size(), Format::fp32, xv, "x");
        auto w = make_with(be, Co, patch, Format::fp32, wv, "conv.weight");
        auto dy = make_with(be, batch, g.out_size(), Format::fp32, dyv, "dy");
        auto y = make(be, batch, g.out_size(), Format::fp32, "y"), dx = make(be, batch, g.in_size(), Format::fp32, "dx"),
             gw = make(be, Co, patch, Format::fp32, "conv.grad_weight");
        ConvTensors t;
        t.geometry = g, t.weight = w.get(), t.grad_weight = gw.get(), t.block = format;

        // The lowered GEMMs' operands, written here: COL (patch, batch·P), x under each kernel
        // offset and 0 in the padding; DY (Co, batch·P), dy channel-major.
        std::vector<float> col(static_cast<std::size_t>(patch * cols), 0.0f), dy_rows(static_cast<std::size_t>(Co * cols));
        for (std::int64_t n = 0; n < batch; ++n)
            for (std::int64_t p = 0; p < P; ++p) {
                const std::int64_t oy = p / g.out_w(), ox = p % g.out_w();
                for (std::int64_t c = 0; c < C; ++c)
                    for (std::int64_t ky = 0; ky < k; ++ky)
                        for (std::int64_t kx = 0; kx < k; ++kx) {
                            const std::int64_t iy = oy - g.padding + ky, ix = ox - g.padding + kx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            col[std::size_t(((c * k + ky) * k + kx) * cols + n * P + p)] = xv[std::size_t(n * C * HW + c * HW + iy * W + ix)];
                        }
                for (std::int64_t o = 0; o < Co; ++o) dy_rows[std::size_t(o * cols + n * P + p)] = dyv[std::size_t((n * Co + o) * P + p)];
            }

        be.conv2d_forward(t, *x, *y, batch, true);
        {  // Y = W · COL over the patch: W along its rows, COL along its columns
            const std::vector<double> wq = quantised_along(format, wv, Co, patch, 1), colq = quantised_along(format, col, 1, patch, cols);
            const Product p = product(Co, cols, patch, [&](auto o, auto j) { return wq[std::size_t(o * patch + j)]; },
                                      [&](auto j, auto c) { return colq[std::size_t(j * cols + c)]; });
            std::vector<double> want(static_cast<std::size_t>(batch * g.out_size())), magnitude(want.size());
            for (std::int64_t n = 0; n < batch; ++n)
                for (std::int64_t o = 0; o < Co; ++o)
                    for (std::int64_t q = 0; q < P; ++q) {
                        want[std::size_t((n * Co + o) * P + q)] = p.value[std::size_t(o * cols + n * P + q)];
                        magnitude[std::size_t((n * Co + o) * P + q)] = p.magnitude[std::size_t(o * cols + n * P + q)];
                    }
            const QString bad = off_reference("y", read(be, *y), want, magnitude);
            QVERIFY2(bad.isEmpty(), qPrintable(bad));
        }

        be.conv2d_backward(t, *x, *dy, dx.get(), batch, nullptr);
        {  // dgrad over the output channels: DCOL = Wᵀ · DY, then col2im
            const std::vector<double> dyq = quantised_along(format, dy_rows, 1, Co, cols), wq = quantised_along(format, wv, 1, Co, patch);
            const Product dcol = product(patch, cols, Co, [&](auto j, auto o) { return wq[std::size_t(o * patch + j)]; },
                                         [&](auto o, auto c) { return dyq[std::size_t(o * cols + c)]; });
            std::vector<double> want(static_cast<std::size_t>(batch * g.in_size())), magnitude(want.size());
            for (std::int64_t j = 0; j < patch; ++j)
                for (std::int64_t c = 0; c < cols; ++c) {
                    const std::int64_t n = c / P, q = c % P, oy = q / g.out_w(), ox = q % g.out_w();
                    const std::int64_t ch = j / (k * k), ky = j / k % k, kx = j % k;
                    const std::int64_t iy = oy - g.padding + ky, ix = ox - g.padding + kx;
                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                    const std::size_t at = std::size_t(n * C * HW + ch * HW + iy * W + ix);
                    want[at] += dcol.value[std::size_t(j * cols + c)];
                    magnitude[at] += dcol.magnitude[std::size_t(j * cols + c)];
                }
            const QString bad = off_reference("dx", read(be, *dx), want, magnitude);
            QVERIFY2(bad.isEmpty(), qPrintable(bad));
        }
        {  // wgrad over samples and positions: DY and COL along their rows
            const std::vector<double> dyq = quantised_along(format, dy_rows, Co, cols, 1), colq = quantised_along(format, col, patch, cols, 1);
            const Product ref = product(Co, patch, cols, [&](auto o, auto c) { return dyq[std::size_t(o * cols + c)]; },
                                        [&](auto c, auto j) { return colq[std::size_t(j * cols + c)]; });
            const std::vector<float> got = read(be, *gw);
            const QString bad = off_reference("grad_weight", got, ref.value, ref.magnitude);
            QVERIFY2(bad.isEmpty(), qPrintable(bad));
            // COL along its columns (the forward's axis) would give another weight gradient.
            const std::vector<double> col_patch = quantised_along(format, col, 1, patch, cols);
            const Product wrong = product(Co, patch, cols, [&](auto o, auto c) { return dyq[std::size_t(o * cols + c)]; },
                                          [&](auto c, auto j) { return col_patch[std::size_t(j * cols + c)]; });
            if (axis_shows(format)) QVERIFY(far_from(got, wrong.value, wrong.magnitude));
        }
    }

    // What the backend refuses, and its answer to supports().
    void cpuBackendRunsEveryBlockFormat() {
        CpuBackend be;
        QVERIFY(be.supports(BackendOp::block_scaled, Format::fp32));
    }
};

QTEST_GUILESS_MAIN(TestCpuBlockScaled)
#include "test_cpu_block_scaled.moc"
