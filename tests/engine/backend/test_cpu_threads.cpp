// The CPU backend's passes that are not matmuls give the same bits on any thread count
// (engine/backend/cpu/cpu_parallel.h): AdamW and SGD (nearest, stochastic and Kahan-compensated
// stores, the lost-update counts), the unscale with its sum of squares, non-finite check and
// exponent histograms, the activations, the amax, and a linear layer's gradient rounding with its
// statistics, a bias gradient over several blocks of rows, and the softmax cross-entropy's loss;
// the block formats' quantiser (cpu_block_parallel.h) and the flushed weight-gradient count
// (cpu_flush_count.h), each also held to its one-call form.
// Each case runs on a backend of 1 thread and on backends of 2 and 3, on tensors large enough that
// every pass is really cut (more than 2^16 values a thread); the linear layers' matmuls stay under
// 2^21 multiply-adds, on one thread, so only the passes differ.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend_test_util.h"
#include "cpu_threads_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_block_parallel.h"
#include "backend/cpu/cpu_flush_count.h"
#include "backend/cpu/cpu_matmul.h"
#include "backend/cpu/cpu_parallel.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::backend_with;
using backend_test::read;
using backend_test::same_bits;

namespace {

std::unique_ptr<Tensor> tensor(Backend& b, std::int64_t rows, std::int64_t cols, Format f,
                               const std::vector<float>& values) {
    auto t = b.allocate(TensorDesc{"t", rows, cols, f, MemoryCategory::workspace});
    b.upload(*t, values.data(), rows * cols);
    return t;
}

// What one optimizer run leaves: the parameter, its states, its compensation, the counts of
// every step.
struct OptimizerOutcome {
    std::vector<float> p, s1, s2, comp;
    std::vector<std::int64_t> counts;
    bool operator==(const OptimizerOutcome& o) const {
        return same_bits(p, o.p) && same_bits(s1, o.s1) && same_bits(s2, o.s2) && same_bits(comp, o.comp) &&
               counts == o.counts;
    }
};

// Three steps of AdamW (or SGD with momentum) on a 600 x 500 parameter in `format`.
OptimizerOutcome optimize(int threads, Format format, WeightRounding rounding, bool sgd) {
    auto be = backend_with(threads);
    be->seed_stochastic_rounding(7);
    constexpr std::int64_t rows = 600, cols = 500, n = rows * cols;
    std::vector<float> w = random_values(n, 0.5f, 1);
    for (float& v : w) v = round_to(format, v);
    auto p = tensor(*be, rows, cols, format, w);
    auto m = tensor(*be, rows, cols, Format::fp32, std::vector<float>(n, 0.0f));
    auto v = tensor(*be, rows, cols, Format::fp32, std::vector<float>(n, 0.0f));
    auto c = tensor(*be, rows, cols, format, std::vector<float>(n, 0.0f));
    OptimizerOutcome o;
    for (int step = 1; step <= 3; ++step) {
        auto g = tensor(*be, rows, cols, Format::fp32, random_values(n, 1e-3f, 10 + step));
        OptimizerTensors t{p.get(), g.get(), m.get(), sgd ? nullptr : v.get(), rounding, c.get()};
        UpdateCounts counts;
        if (sgd) {
            SgdParams s;
            s.lr = 1e-3;
            s.momentum = 0.9;
            s.weight_decay = 1e-4;
            s.first_step = step == 1;
            counts = be->sgd_step(t, s);
        } else {
            AdamWParams a;
            a.lr = 1e-4;
            a.weight_decay = 0.01;
            a.step = step;
            counts = be->adamw_step(t, a);
        }
        o.counts.push_back(counts.nonzero_updates);
        o.counts.push_back(counts.lost_updates);
    }
    o.p = read(*be, *p);
    o.s1 = read(*be, *m);
    o.s2 = read(*be, *v);
    o.comp = read(*be, *c);
    return o;
}

// The unscale over tensors of several sizes (one of them holding an inf when `with_inf`).
struct UnscaleOutcome {
    UnscaleResult result;
    std::vector<GradientSummary> summaries;
    std::vector<std::vector<float>> values;
};

UnscaleOutcome unscale(int threads, bool with_inf) {
    auto be = backend_with(threads);
    const std::int64_t sizes[] = {300000, 7, 150000, 90000, 1};
    std::vector<std::unique_ptr<Tensor>> owned;
    std::vector<Tensor*> grads;
    unsigned seed = 30;
    for (std::int64_t n : sizes) {
        std::vector<float> values = random_values(static_cast<std::size_t>(n), 1e3f, seed++);
        values[0] = 1e-42f;  // a subnormal, for the histogram's own pass
        if (with_inf && n == 90000) values[17] = INFINITY;
        owned.push_back(tensor(*be, 1, n, Format::fp32, values));
        grads.push_back(owned.back().get());
    }
    UnscaleOutcome o;
    o.result = be->unscale_and_check(grads, 1.0f / 1024, {true, false, true, true, true}, &o.summaries);
    for (Tensor* g : grads) o.values.push_back(read(*be, *g));
    return o;
}

bool same(const UnscaleOutcome& a, const UnscaleOutcome& b) {
    if (a.result.found_nonfinite != b.result.found_nonfinite || a.result.first_nonfinite != b.result.first_nonfinite ||
        std::memcmp(&a.result.sum_squares, &b.result.sum_squares, sizeof(double)) != 0 || a.values != b.values ||
        a.summaries.size() != b.summaries.size())
        return false;
    for (std::size_t i = 0; i < a.summaries.size(); ++i)
        if (a.summaries[i].amax != b.summaries[i].amax || a.summaries[i].nonfinite != b.summaries[i].nonfinite ||
            a.summaries[i].exponents.counts != b.summaries[i].exponents.counts)
            return false;
    return true;
}

// relu and gelu forward and backward over 512 x 1024 values, outputs in bf16.
std::vector<std::vector<float>> activations(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t batch = 512, width = 1024, n = batch * width;
    auto z = tensor(*be, batch, width, Format::fp32, random_values(n, 3.0f, 40));
    auto da = tensor(*be, batch, width, Format::fp32, random_values(n, 1.0f, 41));
    auto a = tensor(*be, batch, width, Format::bf16, std::vector<float>(n, 0.0f));
    auto dz = tensor(*be, batch, width, Format::bf16, std::vector<float>(n, 0.0f));
    std::vector<std::vector<float>> out;
    for (Activation act : {Activation::relu, Activation::gelu, Activation::tanh}) {
        be->activation_forward(act, *z, *a, batch);
        be->activation_backward(act, *z, *a, *da, *dz, batch);
        out.push_back(read(*be, *a));
        out.push_back(read(*be, *dz));
    }
    return out;
}

// A bf16 linear layer of 1024 x 1024 at batch 1: forward, backward with the weight gradient's
// statistics, gradients rounded to fp16 (stochastically when asked).
struct LinearOutcome {
    std::vector<std::vector<float>> values;
    RoundingStats stats;
};

LinearOutcome linear(int threads, bool stochastic) {
    auto be = backend_with(threads);
    be->seed_stochastic_rounding(3);
    constexpr std::int64_t in = 1024, out = 1024;
    auto w = tensor(*be, out, in, Format::fp32, random_values(out * in, 0.05f, 50));
    auto b = tensor(*be, 1, out, Format::fp32, random_values(out, 0.05f, 51));
    auto gw = tensor(*be, out, in, Format::fp16, std::vector<float>(out * in, 0.0f));
    auto gb = tensor(*be, 1, out, Format::fp32, std::vector<float>(out, 0.0f));
    auto x = tensor(*be, 1, in, Format::bf16, random_values(in, 1.0f, 52));
    auto y = tensor(*be, 1, out, Format::bf16, std::vector<float>(out, 0.0f));
    auto dy = tensor(*be, 1, out, Format::fp16, random_values(out, 1e-3f, 53));
    auto dx = tensor(*be, 1, in, Format::fp16, std::vector<float>(in, 0.0f));
    auto wc = tensor(*be, out, in, Format::bf16, std::vector<float>(out * in, 0.0f));
    LinearTensors l;
    l.compute = Format::bf16;
    l.weight = w.get();
    l.weight_compute = wc.get();
    l.bias = b.get();
    l.grad_weight = gw.get();
    l.grad_bias = gb.get();
    l.stochastic_gradients = stochastic;
    LinearOutcome o;
    be->linear_forward(l, *x, *y, 1, false);
    be->linear_backward(l, *x, *dy, dx.get(), 1, &o.stats);
    o.values = {read(*be, *y), read(*be, *gw), read(*be, *gb), read(*be, *dx)};
    return o;
}

// A linear layer at batch 1600 (seven of bias_grad_order.h's blocks of 256 rows, the last short)
// with 131 outputs, then the softmax cross-entropy over its output and the backward from it: the
// bias gradient's row blocks and the loss's rows are cut over the threads (more than 2^16 values),
// the matmuls (1.7·10^6 multiply-adds) are not.
struct BatchOutcome {
    std::vector<std::vector<float>> values;  // y, dlogits, the weight and bias gradients
    double loss = 0;
    std::int64_t correct = 0;
};

constexpr std::int64_t kBatch = 1600, kIn = 8, kOut = 131;

BatchOutcome wide_batch(int threads) {
    auto be = backend_with(threads);
    auto w = tensor(*be, kOut, kIn, Format::fp32, random_values(kOut * kIn, 0.5f, 60));
    auto b = tensor(*be, 1, kOut, Format::fp32, random_values(kOut, 0.5f, 61));
    auto gw = tensor(*be, kOut, kIn, Format::fp32, std::vector<float>(kOut * kIn, 0.0f));
    auto gb = tensor(*be, 1, kOut, Format::fp32, std::vector<float>(kOut, 0.0f));
    auto x = tensor(*be, kBatch, kIn, Format::fp32, random_values(kBatch * kIn, 2.0f, 62));
    auto y = tensor(*be, kBatch, kOut, Format::fp32, std::vector<float>(kBatch * kOut, 0.0f));
    auto dlogits = tensor(*be, kBatch, kOut, Format::fp32, std::vector<float>(kBatch * kOut, 0.0f));
    LinearTensors l;
    l.compute = Format::fp32;
    l.weight = w.get();
    l.bias = b.get();
    l.grad_weight = gw.get();
    l.grad_bias = gb.get();
    std::vector<std::int32_t> labels(static_cast<std::size_t>(kBatch));
    for (std::int64_t r = 0; r < kBatch; ++r) labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r * 37 % kOut);
    be->linear_forward(l, *x, *y, kBatch, false);
    const LossResult loss = be->softmax_cross_entropy(*y, labels.data(), kBatch, 1024.0f, dlogits.get());
    be->linear_backward(l, *x, *dlogits, nullptr, kBatch, nullptr);
    return {{read(*be, *y), read(*be, *dlogits), read(*be, *gw), read(*be, *gb)}, loss.loss, loss.correct};
}

// One quantisation of a (outer, K, inner) view on `threads` threads: the values, the block
// exponents (rows, inner 1) and the largest magnitude.
struct BlockOutcome {
    std::vector<float> values;
    std::vector<std::int16_t> exponents;
    float largest = 0;
    float factor = 0;
    bool operator==(const BlockOutcome& o) const {
        return same_bits(values, o.values) && exponents == o.exponents &&
               std::memcmp(&largest, &o.largest, sizeof largest) == 0 && factor == o.factor;
    }
};

BlockOutcome quantise(int threads, BlockFormat f, const std::vector<float>& src, std::size_t outer, std::size_t K,
                      std::size_t inner, std::optional<std::uint64_t> key) {
    const float scale = block_tensor_scale(f, src.data(), src.size());
    const auto B = static_cast<std::size_t>(block_format_info(f).block_size);
    BlockOutcome o;
    o.values.resize(src.size());
    if (inner == 1) o.exponents.resize(outer * ((K + B - 1) / B));
    o.factor = cpu_detail::round_block_operand_on(threads, f, src.data(), o.values.data(), outer, K, inner, scale, key,
                                                  inner == 1 ? o.exponents.data() : nullptr, &o.largest);
    return o;
}

bool same(const RoundingStats& a, const RoundingStats& b) {
    return a.elements == b.elements && a.zeros_before == b.zeros_before && a.zeros == b.zeros &&
           a.subnormals == b.subnormals && a.nonfinite == b.nonfinite;
}

}  // namespace

class TestCpuThreads : public QObject {
    Q_OBJECT
private slots:
    void optimizersAreTheSameOnAnyThreadCount_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("rounding");
        QTest::addColumn<bool>("sgd");
        QTest::newRow("adamw fp32") << int(Format::fp32) << int(WeightRounding::nearest) << false;
        QTest::newRow("adamw bf16 nearest") << int(Format::bf16) << int(WeightRounding::nearest) << false;
        QTest::newRow("adamw bf16 stochastic") << int(Format::bf16) << int(WeightRounding::stochastic) << false;
        QTest::newRow("adamw bf16 kahan") << int(Format::bf16) << int(WeightRounding::kahan) << false;
        QTest::newRow("sgd fp16 nearest") << int(Format::fp16) << int(WeightRounding::nearest) << true;
        QTest::newRow("sgd fp16 kahan") << int(Format::fp16) << int(WeightRounding::kahan) << true;
    }
    void optimizersAreTheSameOnAnyThreadCount() {
        QFETCH(int, format);
        QFETCH(int, rounding);
        QFETCH(bool, sgd);
        const auto f = static_cast<Format>(format);
        const auto r = static_cast<WeightRounding>(rounding);
        const OptimizerOutcome one = optimize(1, f, r, sgd);
        QVERIFY(one.counts[0] > 0);
        if (f != Format::fp32 && r != WeightRounding::kahan) QVERIFY(one.counts[1] > 0);  // lost updates counted
        for (int threads : {2, 3}) QVERIFY2(optimize(threads, f, r, sgd) == one, qPrintable(QString::number(threads)));
    }

    void unscaleIsTheSameOnAnyThreadCount() {
        for (bool with_inf : {false, true}) {
            const UnscaleOutcome one = unscale(1, with_inf);
            QCOMPARE(one.result.found_nonfinite, with_inf);
            if (with_inf) QCOMPARE(one.result.first_nonfinite, 3);
            for (int threads : {2, 3}) QVERIFY(same(unscale(threads, with_inf), one));
        }
    }

    void activationsAreTheSameOnAnyThreadCount() {
        const auto one = activations(1);
        for (int threads : {2, 3}) {
            const auto many = activations(threads);
            for (std::size_t i = 0; i < one.size(); ++i) QVERIFY2(same_bits(many[i], one[i]), qPrintable(QString::number(i)));
        }
    }

    void amaxIsTheSameOnAnyThreadCount() {
        // The largest magnitude in each range in turn, then an inf, then a NaN beside it.
        std::vector<float> v = random_values(400000, 1.0f, 60);
        for (std::int64_t at : {10, 150000, 399999}) {
            v[static_cast<std::size_t>(at)] = -7.5f - static_cast<float>(at);
            for (int threads : {1, 2, 3, 5})
                QCOMPARE(cpu_detail::max_abs_on(threads, v.data(), 400000), 7.5f + static_cast<float>(at));
        }
        v[200000] = -INFINITY;
        for (int threads : {1, 2, 3}) QCOMPARE(cpu_detail::max_abs_on(threads, v.data(), 400000), INFINITY);
        v[5] = NAN;
        for (int threads : {1, 2, 3}) QVERIFY(std::isnan(cpu_detail::max_abs_on(threads, v.data(), 400000)));
        QCOMPARE_EXACT(cpu_detail::max_abs_on(3, v.data(), 0), 0.0f);
    }

    void biasGradientAndLossAreTheSameOnAnyThreadCount() {
        const BatchOutcome one = wide_batch(1);
        // The bias gradient in bias_grad_order.h's order, written out here: each block of 256
        // rows summed in row order from +0, the block sums added in block order.
        const std::vector<float>& dlogits = one.values[1];
        for (std::int64_t c = 0; c < kOut; ++c) {
            float db = 0.0f;
            for (std::int64_t r0 = 0; r0 < kBatch; r0 += 256) {
                float block = 0.0f;
                for (std::int64_t r = r0; r < std::min(kBatch, r0 + 256); ++r)
                    block += dlogits[static_cast<std::size_t>(r * kOut + c)];
                db += block;
            }
            QCOMPARE_EXACT(one.values[3][static_cast<std::size_t>(c)], db);
        }
        QVERIFY(one.loss > 0 && one.correct > 0 && one.correct < kBatch);
        for (int threads : {2, 3}) {
            const BatchOutcome many = wide_batch(threads);
            QCOMPARE(std::memcmp(&many.loss, &one.loss, sizeof(double)), 0);
            QCOMPARE(many.correct, one.correct);
            for (std::size_t i = 0; i < one.values.size(); ++i)
                QVERIFY2(same_bits(many.values[i], one.values[i]), qPrintable(QString::number(i)));
        }
    }

    // Rows (a linear layer's forward operands, with their block exponents), one tile cut by its
    // rows of blocks (a weight gradient's operands, the blocks along the batch), and slices of
    // tiles (a convolution's dy along its channels); partial blocks at the ends of rows and
    // tiles; to nearest and stochastically (each value's bits by its index in the whole tensor).
    void blockQuantisationIsTheSameOnAnyThreadCount_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("outer");
        QTest::addColumn<int>("K");
        QTest::addColumn<int>("inner");
        for (BlockFormat f : {BlockFormat::mxfp4, BlockFormat::nvfp4, BlockFormat::mxfp8_e4m3}) {
            const std::string n(block_format_name(f));
            QTest::addRow("%s rows", n.c_str()) << int(f) << 300 << 784 << 1;
            QTest::addRow("%s tile", n.c_str()) << int(f) << 1 << 250 << 300;
            QTest::addRow("%s slices", n.c_str()) << int(f) << 40 << 70 << 49;
        }
    }
    void blockQuantisationIsTheSameOnAnyThreadCount() {
        QFETCH(int, format);
        QFETCH(int, outer);
        QFETCH(int, K);
        QFETCH(int, inner);
        const auto f = static_cast<BlockFormat>(format);
        const auto o = static_cast<std::size_t>(outer), k = static_cast<std::size_t>(K), in = static_cast<std::size_t>(inner);
        std::vector<float> src = random_values(outer * K * inner, 1.0f, 70);
        src[7] = 0.0f;
        src[src.size() / 2] = 40.0f;  // the largest magnitude in a middle range
        for (std::optional<std::uint64_t> key : {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{0x5eed}}) {
            // The one-call quantiser (numeric/block_format.h) is the reference.
            BlockOutcome whole;
            whole.values.resize(src.size());
            const auto B = static_cast<std::size_t>(block_format_info(f).block_size);
            if (in == 1) whole.exponents.resize(o * ((k + B - 1) / B));
            const float scale = block_tensor_scale(f, src.data(), src.size());
            whole.factor = round_block_operand(f, src.data(), whole.values.data(), o, k, in, scale, key,
                                               in == 1 ? whole.exponents.data() : nullptr, &whole.largest);
            QCOMPARE(whole.largest, 40.0f);
            for (int threads : {1, 2, 3, 4})
                QVERIFY2(quantise(threads, f, src, o, k, in, key) == whole,
                         qPrintable(QString("%1 threads%2").arg(threads).arg(key ? ", stochastic" : "")));
        }
    }

    // The flushed count of an fp16 weight gradient with every 97th row far below fp16's range (in
    // every thread's range of rows), a third of x exact zeros: the masks' columns and gw's rows
    // cut over the threads, the same count as the reference's.
    void flushedCountIsTheSameOnAnyThreadCount() {
        constexpr std::int64_t batch = 96, out = 1280, in = 640;  // 819,200 elements of gw: three ranges
        std::vector<float> dy = random_values(batch * out, 1.0f, 80), x = random_values(batch * in, 1.0f, 81);
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t o = 0; o < out; o += 97) dy[static_cast<std::size_t>(b * out + o)] *= 0x1p-30f;
        for (std::size_t i = 0; i < x.size(); i += 3) x[i] = 0.0f;
        CpuMatmul mm;
        mm.set_threads(1);
        std::vector<float> ref(static_cast<std::size_t>(out * in)), gw;
        mm.multiply(dy.data(), true, x.data(), false, ref.data(), out, in, batch, false);
        gw = ref;
        round_array(Format::fp16, gw.data(), gw.size());
        const std::int64_t expected = cpu_detail::count_flushed_against_reference(ref.data(), gw.data(), out * in);
        QVERIFY(expected > 1000 && expected < out * in / 2);
        for (int threads : {1, 2, 3}) {
            cpu_detail::FlushCountScratch scratch;
            QCOMPARE(cpu_detail::count_flushed_weight_gradient(dy.data(), x.data(), gw.data(), batch, out, in, scratch,
                                                               threads),
                     expected);
        }
    }

    void linearGradientRoundingIsTheSameOnAnyThreadCount() {
        for (bool stochastic : {false, true}) {
            const LinearOutcome one = linear(1, stochastic);
            QVERIFY(one.stats.elements == 1024 * 1024);
            QVERIFY(one.stats.zeros > one.stats.zeros_before);  // fp16 flushes some products of 1e-3 and 0.05
            for (int threads : {2, 3}) {
                const LinearOutcome many = linear(threads, stochastic);
                QVERIFY(same(many.stats, one.stats));
                for (std::size_t i = 0; i < one.values.size(); ++i)
                    QVERIFY2(same_bits(many.values[i], one.values[i]), qPrintable(QString::number(i)));
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestCpuThreads)
#include "test_cpu_threads.moc"
