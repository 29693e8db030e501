// The CPU backend's fused rounding passes, bit for bit against the passes they replace:
// - scale_round_array (numeric/convert.h), a per-tensor scale and the rounding in one pass (FP8
//   quantisation; by 1, a 16-bit cast that measures its input): equal to an FP32 multiply pass
//   then round_array, and its amax to the largest |src| bit pattern, over random bit patterns and
//   the edges (zeros, subnormals, inf, NaN, the saturation threshold), every format, both
//   overflow modes, lengths that leave a tail;
// - the optimizer's update of a weight's cast copy (CpuTensor write stamps): after SGD and AdamW
//   steps the forward's operand copy is what a fresh cast gives, and a write to the master
//   through the backend (poke) makes the forward cast again;
// - the operands' amaxes kept on the way (CpuBackend::keep_operand_magnitudes) for the what-if
//   statistics: the magnitudes a fresh pass gives, forgotten when the tensor is written; in a
//   block-scaled layer, from the forward's block quantiser;
// - the bf16 matmul path's copies of a linear layer's x and W, made by its forward, read again by
//   its backward, made again after a write: the bits of a backend with nothing kept.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "numeric/convert.h"

using namespace mantissa;
using backend_test::read;

Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

std::vector<float> awkward_values(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(n);
    const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, 464.0f, -465.0f, 57344.0f, 61440.0f,
                           65504.0f, 65520.0f, std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 1.0f / 512, 1.0f / 1024 / 1024};
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t r = rng();
        if (i % 5 == 0) {
            v[i] = edges[r % std::size(edges)];
        } else if (i % 5 == 1) {
            v[i] = std::bit_cast<float>(r);  // any pattern
        } else {
            // magnitudes around the FP8 range: 2^-24 .. 2^16
            const int exponent = static_cast<int>(r >> 27) - 24 + 16 * static_cast<int>((r >> 16) & 1);
            const float mantissa = 1.0f + static_cast<float>(r & 0xffff) / 65536.0f;
            v[i] = std::ldexp(mantissa, exponent) * ((r >> 20) & 1 ? -1.0f : 1.0f);
        }
    }
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::size_t* where) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) {
            *where = i;
            return false;
        }
    return true;
}

// A linear layer of `in` -> `out` on `be`: FP32 masters W (drawn from rng, then its gradient) and b
// (zero), W's cast copy in `compute`, AdamW's or SGD's state (zero), x (batch rows, left to the
// test) in `x_format`, y.
struct LinearSetup {
    std::unique_ptr<Tensor> w, wc, b, gw, gb, s1, s2, x, y;
    LinearTensors l;
    LinearSetup(CpuBackend& be, std::int64_t batch, std::int64_t in, std::int64_t out, Format compute, Format x_format,
                std::mt19937& rng) {
        w = be.allocate(TensorDesc{"w", out, in, Format::fp32, MemoryCategory::master_weights});
        wc = be.allocate(TensorDesc{"wc", out, in, compute, MemoryCategory::parameters});
        b = be.allocate(TensorDesc{"b", 1, out, Format::fp32, MemoryCategory::master_weights});
        gw = be.allocate(TensorDesc{"gw", out, in, Format::fp32, MemoryCategory::gradients});
        gb = be.allocate(TensorDesc{"gb", 1, out, Format::fp32, MemoryCategory::gradients});
        s1 = be.allocate(TensorDesc{"m", out, in, Format::fp32, MemoryCategory::optimizer_state});
        s2 = be.allocate(TensorDesc{"v", out, in, Format::fp32, MemoryCategory::optimizer_state});
        x = be.allocate(TensorDesc{"x", batch, in, x_format, MemoryCategory::activations});
        y = be.allocate(TensorDesc{"y", batch, out, Format::fp32, MemoryCategory::activations});
        std::normal_distribution<float> nd(0.0f, 0.1f);
        std::vector<float> v(static_cast<std::size_t>(out * in));
        for (float& e : v) e = nd(rng);
        be.upload(*w, v.data(), w->numel());
        for (float& e : v) e = nd(rng);
        be.upload(*gw, v.data(), gw->numel());
        be.fill(*b, 0.0f);
        be.fill(*s1, 0.0f);
        be.fill(*s2, 0.0f);
        l.weight = w.get();
        l.weight_compute = wc.get();
        l.bias = b.get();
        l.grad_weight = gw.get();
        l.grad_bias = gb.get();
        l.compute = compute;
    }
};

}  // namespace

class TestCpuFusedRounding : public QObject {
    Q_OBJECT
private slots:
    // The linear forward's bias epilogue rounding y in the registers before the store
    // (cpu_rounded_store.h) gives the bits of the epilogue that adds the bias, stores, and rounds
    // in a second pass: y in fp32, bf16 and fp16 (one column's bias past fp16's largest value,
    // one's below its normals), FP8 operands (the dequantisation's product before the bias),
    // widths with a tail and without; the row past the batch is left as it was. Tried: the
    // dequantisation left out of the registers' epilogue fails every FP8 row.
    void linearEpilogueInTheRegistersIsTheTwoPassesBits_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("output");
        QTest::addColumn<int>("out");
        for (int out : {13, 16, 37}) {
            QTest::addRow("fp32, %d wide", out) << Format::fp32 << Format::fp32 << out;
            QTest::addRow("bf16, %d wide", out) << Format::bf16 << Format::bf16 << out;
            QTest::addRow("fp16, %d wide", out) << Format::fp16 << Format::fp16 << out;
            QTest::addRow("fp8 to fp16, %d wide", out) << Format::fp8_e4m3 << Format::fp16 << out;
        }
    }
    void linearEpilogueInTheRegistersIsTheTwoPassesBits() {
        QFETCH(Format, compute);
        QFETCH(Format, output);
        QFETCH(int, out);
        const std::int64_t batch = 5, in = 24;
        const bool fp8 = compute == Format::fp8_e4m3;
        std::vector<float> y_of[2];
        for (bool lanes : {false, true}) {
            CpuBackend be;
            be.set_rounds_in_lanes(lanes);
            const auto make = [&](std::int64_t rows, std::int64_t cols, Format f) {
                return be.allocate(TensorDesc{"t", rows, cols, f, MemoryCategory::workspace});
            };
            std::mt19937 rng(17);
            std::normal_distribution<float> nd(0.0f, 1.0f);
            const auto values = [&](std::int64_t n, Format f) {
                std::vector<float> v(static_cast<std::size_t>(n));
                for (float& e : v) e = round_to(f, nd(rng));
                return v;
            };
            const Format x_format = fp8 ? Format::fp32 : compute;
            auto w = make(out, in, Format::fp32), b = make(1, out, Format::fp32);
            auto x = make(batch + 1, in, x_format), y = make(batch + 1, out, output);
            auto gw = make(out, in, Format::fp32), gb = make(1, out, Format::fp32);
            std::vector<float> bias = values(out, Format::fp32);
            bias[0] = 7.0e4f;
            bias[1] = 1.0e-6f;
            std::vector<float> wv = values(out * in, Format::fp32);
            for (std::int64_t k = 0; k < in; ++k) wv[static_cast<std::size_t>(in + k)] *= 1.0e-7f;  // column 1 tiny
            be.upload(*w, wv.data(), w->numel());
            be.upload(*b, bias.data(), b->numel());
            const std::vector<float> xv = values((batch + 1) * in, x_format);
            be.upload(*x, xv.data(), x->numel());
            const std::vector<float> marker(static_cast<std::size_t>((batch + 1) * out), 5.0f);
            be.upload(*y, marker.data(), y->numel());
            std::unique_ptr<Tensor> wc, xs;
            std::unique_ptr<Fp8State> state;
            LinearTensors t;
            t.compute = compute;
            t.weight = w.get();
            t.bias = b.get();
            t.grad_weight = gw.get();
            t.grad_bias = gb.get();
            if (compute != Format::fp32) {
                wc = make(out, in, compute);
                t.weight_compute = wc.get();
            }
            if (fp8) {
                xs = make(batch + 1, in, Format::fp8_e4m3);
                state = be.create_fp8_state(Fp8Recipe{4, 0, AmaxAlgo::max});
                t.saved_input = xs.get();
                t.fp8 = state.get();
            }
            be.linear_forward(t, *x, *y, batch, true);
            if (fp8) {  // the first step's scales are 1: a second forward with the measured ones
                be.update_fp8_scales(*state);
                be.linear_forward(t, *x, *y, batch, true);
            }
            y_of[lanes] = read(be, *y);
            for (std::size_t i = static_cast<std::size_t>(batch * out); i < y_of[lanes].size(); ++i)
                QCOMPARE(y_of[lanes][i], 5.0f);
        }
        std::size_t where = 0;
        QVERIFY2(same_bits(y_of[0], y_of[1], &where),
                 qPrintable(QString("y[%1]: %2 in the registers, %3 in two passes")
                                .arg(where).arg(y_of[1][where]).arg(y_of[0][where])));
    }

    void scaleRoundMatchesTwoPasses_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("saturate");
        QTest::addColumn<float>("scale");
        QTest::addColumn<int>("n");
        for (Format f : all_formats)
            for (bool sat : {false, true}) {
                const std::string name = std::string(format_name(f)) + (sat ? " saturate" : " to_inf");
                QTest::newRow((name + " scale 1").c_str()) << static_cast<int>(f) << sat << 1.0f << 4099;
                QTest::newRow((name + " scale 2^7").c_str()) << static_cast<int>(f) << sat << 128.0f << 1027;
                QTest::newRow((name + " scale 0.37").c_str()) << static_cast<int>(f) << sat << 0.37f << 13;
                QTest::newRow((name + " scale 3e5").c_str()) << static_cast<int>(f) << sat << 3e5f << 2048;
            }
    }
    void scaleRoundMatchesTwoPasses() {
        QFETCH(int, format);
        QFETCH(bool, saturate);
        QFETCH(float, scale);
        QFETCH(int, n);
        const Format f = static_cast<Format>(format);
        const Overflow o = saturate ? Overflow::saturate : Overflow::to_inf;
        for (unsigned seed = 1; seed <= 3; ++seed) {
            const auto src = awkward_values(static_cast<std::size_t>(n), seed);
            std::vector<float> expect(src.size()), got(src.size(), 7.0f);
            std::uint32_t amax_bits = 0;
            for (std::size_t i = 0; i < src.size(); ++i) {
                expect[i] = src[i] * scale;
                amax_bits = std::max(amax_bits, std::bit_cast<std::uint32_t>(src[i]) & 0x7fffffffu);
            }
            round_array(f, expect.data(), expect.size(), o);
            const float amax = scale_round_array(f, src.data(), got.data(), got.size(), scale, o);
            std::size_t where = 0;
            QVERIFY2(same_bits(expect, got, &where),
                     qPrintable(QString("element %1: %2 * %3").arg(where).arg(src[where]).arg(scale)));
            QCOMPARE(std::bit_cast<std::uint32_t>(amax), amax_bits);
        }
    }

    // The weight copy the optimizer writes equals a fresh cast, step after step; a poke on the
    // master is seen by the next forward.
    void optimizerKeepsCastCopy_data() {
        QTest::addColumn<bool>("adamw");
        QTest::addColumn<int>("format");
        QTest::newRow("sgd fp16") << false << static_cast<int>(Format::fp16);
        QTest::newRow("adamw fp16") << true << static_cast<int>(Format::fp16);
        QTest::newRow("adamw bf16") << true << static_cast<int>(Format::bf16);
    }
    void optimizerKeepsCastCopy() {
        QFETCH(bool, adamw);
        QFETCH(int, format);
        const Format f = static_cast<Format>(format);
        CpuBackend be;
        const std::int64_t in = 37, out = 11, batch = 5;
        std::mt19937 rng(5);
        LinearSetup setup(be, batch, in, out, f, f, rng);
        auto &w = setup.w, &wc = setup.wc, &gw = setup.gw, &s1 = setup.s1, &s2 = setup.s2, &x = setup.x, &y = setup.y;
        LinearTensors& l = setup.l;
        auto fresh = be.allocate(TensorDesc{"fresh", out, in, f, MemoryCategory::workspace});
        std::vector<float> xs(static_cast<std::size_t>(batch * in), 0.5f);
        be.upload(*x, xs.data(), x->numel());
        for (int step = 1; step <= 4; ++step) {
            be.linear_forward(l, *x, *y, batch, true);
            be.cast(*w, *fresh);
            QCOMPARE(read(be, *wc), read(be, *fresh));
            OptimizerTensors t{w.get(), gw.get(), s1.get(), s2.get()};
            if (adamw) {
                AdamWParams p;
                p.lr = 1e-2;
                p.step = step;
                be.adamw_step(t, p);
            } else {
                SgdParams p;
                p.lr = 1e-2;
                p.momentum = 0.9;
                p.first_step = step == 1;
                be.sgd_step(t, p);
            }
            be.cast(*w, *fresh);
            QCOMPARE(read(be, *wc), read(be, *fresh));  // updated with the master
        }
        be.poke(*w, 3, 1.2345f);  // a write the optimizer did not make
        be.linear_forward(l, *x, *y, batch, true);
        be.cast(*w, *fresh);
        QCOMPARE(read(be, *wc), read(be, *fresh));
        QCOMPARE(read(be, *wc)[3], round_to(f, 1.2345f));
    }

    // The bf16 matmul path's copies of a linear layer's x and W (CpuBackend::kept_bf16_bits): the
    // forward makes them, the backward reads them again (no copy of its own: dgrad's W, wgrad's
    // x), and a write to either (the optimizer's, an upload) makes the next forward copy that one
    // again. Every product the same bits as a fresh backend's, which has no copy to reuse: x saved
    // by the layer (autocast from FP32) and x already in bf16 (the layer reads it in place).
    void bf16CopiesOfXAndWServeTheBackwardUntilWritten_data() {
        QTest::addColumn<bool>("saved_input");
        QTest::newRow("x cast into the saved input") << true;
        QTest::newRow("x read in place") << false;
    }
    void bf16CopiesOfXAndWServeTheBackwardUntilWritten() {
        QFETCH(bool, saved_input);
        if (!CpuMatmul::bf16_available()) QSKIP("oneDNN has no bf16 matmul on this CPU: no bf16 copies");
        const std::int64_t in = 40, out = 24, batch = 9;
        struct Layer {
            CpuBackend be;
            std::mt19937 rng{7};
            LinearSetup setup;
            std::unique_ptr<Tensor> saved, dy, dx;
            Layer(bool saved_input, std::int64_t batch, std::int64_t in, std::int64_t out)
                : setup(be, batch, in, out, Format::bf16, saved_input ? Format::fp32 : Format::bf16, rng) {
                be.matmul().set_bf16_enabled(true);
                if (saved_input) {
                    saved = be.allocate(TensorDesc{"saved", batch, in, Format::bf16, MemoryCategory::activations});
                    setup.l.saved_input = saved.get();
                }
                dy = be.allocate(TensorDesc{"dy", batch, out, Format::bf16, MemoryCategory::workspace});
                dx = be.allocate(TensorDesc{"dx", batch, in, Format::fp32, MemoryCategory::workspace});
            }
            // y, dx, dW after a forward and a backward.
            std::vector<float> step(const std::vector<float>& x, const std::vector<float>& dy_values, std::int64_t b) {
                be.upload(*setup.x, x.data(), setup.x->numel());
                be.upload(*dy, dy_values.data(), dy->numel());
                const std::int64_t matmul_copies = be.matmul().bf16_operand_copies();
                be.linear_forward(setup.l, *setup.x, *setup.y, b, false);
                const std::int64_t after_forward = be.bf16_copies_made();
                be.linear_backward(setup.l, *setup.x, *dy, dx.get(), b, nullptr);
                if (be.bf16_copies_made() != after_forward) return {};  // the backward copied again
                // The matmul itself copied dy alone (dgrad's A, which wgrad reads again): x and W
                // came from the ledger, in the forward and the backward.
                if (be.matmul().bf16_operand_copies() != matmul_copies + 1) return {};
                std::vector<float> all = read(be, *setup.y);
                for (const auto* t : {dx.get(), setup.gw.get()}) {
                    const auto v = read(be, *t);
                    all.insert(all.end(), v.begin(), v.end());
                }
                return all;
            }
        };
        auto values = [](std::size_t n, float scale, unsigned seed) {
            std::vector<float> v = backend_test::random_values(n, scale, seed);
            for (float& e : v) e = round_to(Format::bf16, e);
            return v;
        };
        std::vector<float> x = values(static_cast<std::size_t>(batch * in), 1.0f, 11);
        const std::vector<float> dy = values(static_cast<std::size_t>(batch * out), 0.5f, 12);

        Layer kept(saved_input, batch, in, out);
        QCOMPARE(kept.be.bf16_copies_made(), std::int64_t{0});
        const std::vector<float> first = kept.step(x, dy, batch);
        QVERIFY2(!first.empty(), "the backward, or the matmul, made bf16 copies of its own");
        QCOMPARE(kept.be.bf16_copies_made(), std::int64_t{2});  // x and W, once

        // The optimizer writes W and its cast copy; the uploads write x (and dy) again.
        AdamWParams p;
        p.lr = 0.05;
        p.step = 1;
        kept.be.adamw_step(OptimizerTensors{kept.setup.w.get(), kept.setup.gw.get(), kept.setup.s1.get(),
                                            kept.setup.s2.get()},
                           p);
        for (float& e : x) e = round_to(Format::bf16, -0.75f * e);
        const std::vector<float> second = kept.step(x, dy, batch);
        QVERIFY2(!second.empty(), "the backward, or the matmul, made bf16 copies of its own");
        QCOMPARE(kept.be.bf16_copies_made(), std::int64_t{4});

        Layer fresh(saved_input, batch, in, out);
        fresh.be.upload(*fresh.setup.w, read(kept.be, *kept.setup.w).data(), fresh.setup.w->numel());
        QCOMPARE(fresh.step(x, dy, batch), second);
        QVERIFY(second != first);
    }

    // While keep_operand_magnitudes is on, the passes that read an operand anyway keep its amax
    // (the forward's cast of x, into scratch or into the saved input; the optimizer's write of
    // W's cast copy), and sample_rows gives what a fresh pass gives: NaN above inf above the
    // finite values, the finite amax from the finite ones. Only for the tensor as it was measured
    // (a write forgets it), and nothing is kept while off.
    void keptMagnitudesMatchAFreshPass_data() {
        QTest::addColumn<float>("special");
        QTest::addColumn<bool>("saved_input");
        for (bool saved : {false, true}) {
            const char* how = saved ? " (saved input)" : " (scratch)";
            QTest::newRow((std::string("finite") + how).c_str()) << 0.0f << saved;
            QTest::newRow((std::string("an inf") + how).c_str()) << -std::numeric_limits<float>::infinity() << saved;
            QTest::newRow((std::string("a NaN") + how).c_str()) << std::numeric_limits<float>::quiet_NaN() << saved;
        }
    }
    void keptMagnitudesMatchAFreshPass() {
        QFETCH(float, special);
        QFETCH(bool, saved_input);
        CpuBackend be;
        const std::int64_t in = 37, out = 11, batch = 5, n_x = batch * in;
        std::mt19937 rng(9);
        LinearSetup setup(be, batch, in, out, Format::bf16, Format::fp32, rng);
        auto &w = setup.w, &b = setup.b, &gw = setup.gw, &gb = setup.gb, &s1 = setup.s1, &s2 = setup.s2, &x = setup.x,
             &y = setup.y;
        LinearTensors& l = setup.l;
        auto saved = be.allocate(TensorDesc{"x saved", batch, in, Format::bf16, MemoryCategory::activations});
        if (saved_input) l.saved_input = saved.get();
        std::normal_distribution<float> nd(0.0f, 0.1f);
        std::vector<float> xv(static_cast<std::size_t>(n_x));
        for (float& e : xv) e = nd(rng) * 3.0f;
        if (special != 0.0f || std::isnan(special)) xv[7] = special;
        be.upload(*x, xv.data(), n_x);

        // What a fresh pass over the values gives.
        const auto fresh_pass = [](const std::vector<float>& v) {
            Backend::RowSample s;
            std::uint32_t bits = 0;
            for (float e : v) {
                bits = std::max(bits, std::bit_cast<std::uint32_t>(e) & 0x7fffffffu);
                if (std::isfinite(e)) s.finite_amax = std::max(s.finite_amax, std::fabs(e));
            }
            s.amax = std::bit_cast<float>(bits);
            return s;
        };
        const auto same_sample = [&](const Tensor& t, const std::vector<float>& v) {
            const Backend::RowSample got = be.sample_rows(t, static_cast<std::int64_t>(v.size()), in, {}, nullptr);
            const Backend::RowSample want = fresh_pass(v);
            QCOMPARE(std::bit_cast<std::uint32_t>(got.amax), std::bit_cast<std::uint32_t>(want.amax));
            QCOMPARE(got.finite_amax, want.finite_amax);
        };

        be.linear_forward(l, *x, *y, batch, true);
        QVERIFY(!be.kept_magnitude(*x, n_x));  // off by default
        be.keep_operand_magnitudes(true);
        be.linear_forward(l, *x, *y, batch, true);
        const std::optional<float> kept_x = be.kept_magnitude(*x, n_x);
        QVERIFY(kept_x.has_value());
        QCOMPARE(std::bit_cast<std::uint32_t>(*kept_x), std::bit_cast<std::uint32_t>(fresh_pass(xv).amax));
        QVERIFY(!be.kept_magnitude(*x, n_x - 1));  // another length: not this amax
        same_sample(*x, xv);

        // The optimizer writes W's cast copy (current since the forward) and keeps W's new amax
        // from that pass.
        AdamWParams p;
        p.lr = 1e-2;
        p.step = 1;
        be.adamw_step(OptimizerTensors{w.get(), gw.get(), s1.get(), s2.get()}, p);
        const std::vector<float> w_after = read(be, *w);
        const std::optional<float> kept_w = be.kept_magnitude(*w, w->numel());
        QVERIFY(kept_w.has_value());
        QCOMPARE(*kept_w, fresh_pass(w_after).amax);
        same_sample(*w, w_after);
        // A parameter without a cast copy (the bias): measured by a pass of its own over each block.
        std::vector<float> bias(static_cast<std::size_t>(out));
        for (float& e : bias) e = nd(rng);
        be.upload(*b, bias.data(), out);
        for (float& e : bias) e = nd(rng);
        be.upload(*gb, bias.data(), out);
        auto mb = be.allocate(TensorDesc{"mb", 1, out, Format::fp32, MemoryCategory::optimizer_state});
        auto vb = be.allocate(TensorDesc{"vb", 1, out, Format::fp32, MemoryCategory::optimizer_state});
        be.fill(*mb, 0.0f);
        be.fill(*vb, 0.0f);
        be.adamw_step(OptimizerTensors{b.get(), gb.get(), mb.get(), vb.get()}, p);
        const std::optional<float> kept_b = be.kept_magnitude(*b, out);
        QVERIFY(kept_b.has_value());
        QCOMPARE(*kept_b, fresh_pass(read(be, *b)).amax);

        // A write forgets what was kept; sample_rows measures the new values.
        be.poke(*w, 3, 9.5f);
        QVERIFY(!be.kept_magnitude(*w, w->numel()));
        std::vector<float> w_poked = w_after;
        w_poked[3] = 9.5f;
        same_sample(*w, w_poked);
        std::vector<float> xv2 = xv;
        for (float& e : xv2) e *= 0.25f;
        be.upload(*x, xv2.data(), n_x);
        QVERIFY(!be.kept_magnitude(*x, n_x));
        same_sample(*x, xv2);

        // Off: a forward keeps nothing new.
        be.keep_operand_magnitudes(false);
        be.linear_forward(l, *x, *y, batch, true);
        QVERIFY(!be.kept_magnitude(*x, n_x));
    }

    // A block-scaled layer's forward quantises x and W block by block; while
    // keep_operand_magnitudes is on, x's amax (and W's, when the optimizer kept none) comes from
    // the quantiser's own block amaxes: the largest |x| bit pattern, with partial blocks (in = 37)
    // and whole ones (in = 64), an inf, a NaN. NVFP4's tensor scale keeps what it measured.
    void blockQuantiserKeepsTheOperandsAmax_data() {
        QTest::addColumn<BlockFormat>("format");
        QTest::addColumn<std::int64_t>("in");
        QTest::addColumn<float>("special");
        for (BlockFormat f : {BlockFormat::mxfp8_e4m3, BlockFormat::mxfp4, BlockFormat::nvfp4})
            for (std::int64_t in : {37, 64})
                for (float special : {0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
                    const std::string name = std::string(block_format_info(f).name) + ", in " + std::to_string(in) +
                                             (special == 0.0f ? "" : std::isnan(special) ? ", a NaN" : ", an inf");
                    QTest::newRow(name.c_str()) << f << in << special;
                }
    }
    void blockQuantiserKeepsTheOperandsAmax() {
        QFETCH(BlockFormat, format);
        QFETCH(std::int64_t, in);
        QFETCH(float, special);
        CpuBackend be;
        const std::int64_t out = 11, batch = 5, n_x = batch * in;
        std::mt19937 rng(17);
        LinearSetup setup(be, batch, in, out, Format::fp32, Format::fp32, rng);
        setup.l.weight_compute = nullptr;
        setup.l.block = format;
        std::normal_distribution<float> nd(0.0f, 0.1f);
        std::vector<float> xv(static_cast<std::size_t>(n_x));
        for (float& e : xv) e = nd(rng);
        xv[static_cast<std::size_t>(n_x - 2)] = -7.5f;  // the largest, in the last block
        if (special != 0.0f) xv[3] = special;
        be.upload(*setup.x, xv.data(), n_x);
        const auto largest_bits = [](const std::vector<float>& v) {
            std::uint32_t bits = 0;
            for (float e : v) bits = std::max(bits, std::bit_cast<std::uint32_t>(e) & 0x7fffffffu);
            return bits;
        };

        be.keep_operand_magnitudes(true);
        be.linear_forward(setup.l, *setup.x, *setup.y, batch, true);
        const std::optional<float> kept_x = be.kept_magnitude(*setup.x, n_x);
        const std::optional<float> kept_w = be.kept_magnitude(*setup.w, setup.w->numel());
        QVERIFY(kept_x.has_value() && kept_w.has_value());
        QCOMPARE(std::bit_cast<std::uint32_t>(*kept_x), largest_bits(xv));
        QCOMPARE(std::bit_cast<std::uint32_t>(*kept_w), largest_bits(read(be, *setup.w)));
        const Backend::RowSample got = be.sample_rows(*setup.x, n_x, in, {}, nullptr);
        QCOMPARE(std::bit_cast<std::uint32_t>(got.amax), largest_bits(xv));
        QCOMPARE(got.finite_amax, 7.5f);
        be.keep_operand_magnitudes(false);
    }
};

QTEST_GUILESS_MAIN(TestCpuFusedRounding)
#include "test_cpu_fused_rounding.moc"
