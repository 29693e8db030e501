// count_flushed_weight_gradient (backend/cpu/cpu_flush_count.h): the CPU backend's count of weight
// gradient elements flushed to zero, decided without the FP32 reference matmul where that can be
// proven. Every answer it gives must equal the count from the reference product that oneDNN
// computes (CpuMatmul, the path it replaces); where it cannot decide it must say so (-1):
// exact cancellations, non-finite and subnormal inputs, too many open elements.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_flush_count.h"
#include "backend/cpu/cpu_matmul.h"
#include "numeric/convert.h"

using namespace mantissa;

namespace {

struct Problem {
    std::int64_t batch, out, in;
    std::vector<float> dy, x;  // (batch, out), (batch, in)
};

// The weight gradient as the backend stores it: dy rounded to `format` (where small values
// flush), times x in FP32, rounded to `format`.
std::vector<float> rounded_gradient(CpuMatmul& mm, const Problem& p, Format format) {
    std::vector<float> dy_op(p.dy.size()), gw(static_cast<std::size_t>(p.out * p.in));
    round_array(format, p.dy.data(), dy_op.data(), dy_op.size());
    mm.multiply(dy_op.data(), true, p.x.data(), false, gw.data(), p.out, p.in, p.batch);
    round_array(format, gw.data(), gw.size());
    return gw;
}

// The count the reference matmul gives (what cpu_linear.cpp computed before).
std::int64_t reference_count(CpuMatmul& mm, const Problem& p, const std::vector<float>& gw) {
    std::vector<float> ref(gw.size());
    mm.multiply(p.dy.data(), true, p.x.data(), false, ref.data(), p.out, p.in, p.batch);
    std::int64_t n = 0;
    for (std::size_t i = 0; i < gw.size(); ++i) {
        std::uint32_t r, g;
        std::memcpy(&r, &ref[i], 4);
        std::memcpy(&g, &gw[i], 4);
        n += (r & 0x7fffffffu) != 0 && (g & 0x7fffffffu) == 0;
    }
    return n;
}

// Gradients spread over `decades` orders of magnitude below `top`, a share of them zero; x with
// whole zero columns (as constant pixels give) and relu-like zeros, `x_zeros` of the rest.
Problem random_problem(std::int64_t batch, std::int64_t out, std::int64_t in, float top, float decades,
                       unsigned seed, float x_zeros = 0.25f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    Problem p{batch, out, in, std::vector<float>(static_cast<std::size_t>(batch * out)),
              std::vector<float>(static_cast<std::size_t>(batch * in))};
    for (float& v : p.dy) {
        const float mag = top * std::pow(10.0f, -decades * u(rng));
        v = u(rng) < 0.1f ? 0.0f : (u(rng) < 0.5f ? -mag : mag);
    }
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t i = 0; i < in; ++i) {
            const bool dead_column = i % 7 == 3;
            const float v = u(rng) < x_zeros ? 0.0f : 0.01f + u(rng) * 1.5f;
            p.x[static_cast<std::size_t>(b * in + i)] = dead_column ? 0.0f : v;
        }
    return p;
}

}  // namespace

class TestCpuFlushCount : public QObject {
    Q_OBJECT
private slots:
    // Random problems with fp16 and fp8 rounding: every decided answer matches the reference.
    // Dense x makes each zero's sum long; sparse x (as block formats and relu leave it) leaves
    // a few rows that both masks share, in one 64-row word or two; "mixed" has both kinds.
    void matchesReference_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("out");
        QTest::addColumn<int>("in");
        QTest::addColumn<float>("top");
        QTest::addColumn<float>("decades");
        QTest::addColumn<int>("format");
        QTest::addColumn<float>("xZeros");
        QTest::addColumn<bool>("mustDecide");
        const int fp16 = static_cast<int>(Format::fp16);
        const int e5m2 = static_cast<int>(Format::fp8_e5m2);
        const int bf16 = static_cast<int>(Format::bf16);
        QTest::newRow("fp16 few flushes") << 64 << 48 << 40 << 1e-3f << 3.0f << fp16 << 0.25f << true;
        QTest::newRow("fp16 no loss scale") << 128 << 64 << 56 << 1e-5f << 4.0f << fp16 << 0.25f << false;
        QTest::newRow("fp16 odd sizes") << 37 << 29 << 53 << 1e-4f << 3.0f << fp16 << 0.25f << false;
        QTest::newRow("e5m2 gradients") << 64 << 32 << 48 << 1e-2f << 4.0f << e5m2 << 0.25f << false;
        QTest::newRow("bf16 nothing flushes") << 32 << 16 << 24 << 1.0f << 2.0f << bf16 << 0.25f << true;
        QTest::newRow("batch of one") << 1 << 16 << 16 << 1e-4f << 3.0f << fp16 << 0.25f << false;
        QTest::newRow("sparse x, few rows overlap") << 128 << 64 << 96 << 1e-5f << 3.0f << fp16 << 0.97f << true;
        QTest::newRow("sparse x, two words") << 100 << 40 << 72 << 1e-6f << 2.0f << fp16 << 0.95f << true;
        QTest::newRow("mixed overlaps") << 128 << 48 << 64 << 1e-6f << 2.0f << fp16 << 0.88f << false;
    }
    void matchesReference() {
        QFETCH(int, batch);
        QFETCH(int, out);
        QFETCH(int, in);
        QFETCH(float, top);
        QFETCH(float, decades);
        QFETCH(int, format);
        QFETCH(float, xZeros);
        QFETCH(bool, mustDecide);
        CpuMatmul mm;
        mm.set_threads(1);
        cpu_detail::FlushCountScratch scratch;
        int decided = 0;
        std::int64_t flushed = 0;
        for (unsigned seed = 1; seed <= 6; ++seed) {
            const Problem p = random_problem(batch, out, in, top, decades, seed, xZeros);
            const auto gw = rounded_gradient(mm, p, static_cast<Format>(format));
            const std::int64_t got = cpu_detail::count_flushed_weight_gradient(
                p.dy.data(), p.x.data(), gw.data(), batch, out, in, scratch);
            if (got < 0) continue;
            ++decided;
            QCOMPARE(got, reference_count(mm, p, gw));
            flushed += got;
        }
        if (mustDecide) QCOMPARE(decided, 6);
        // The sparse rows flush: their few-row sums are really taken, not all trivially zero.
        if (xZeros > 0.5f) QVERIFY(flushed > 0);
    }

    // Whole zero columns of x and of dy settle their elements without a dot product.
    void zeroColumnsAreZero() {
        CpuMatmul mm;
        Problem p{4, 3, 5, std::vector<float>(12, 0.0f), std::vector<float>(20, 1.0f)};
        for (std::int64_t b = 0; b < 4; ++b) {
            p.x[static_cast<std::size_t>(b * 5 + 2)] = 0.0f;              // column 2 of x
            p.dy[static_cast<std::size_t>(b * 3 + 0)] = 1e-9f;            // column 0: flushes
            p.dy[static_cast<std::size_t>(b * 3 + 1)] = 0.5f;             // column 1: survives
        }                                                                  // column 2 of dy: zero
        const auto gw = rounded_gradient(mm, p, Format::fp16);
        cpu_detail::FlushCountScratch scratch;
        const std::int64_t got = cpu_detail::count_flushed_weight_gradient(
            p.dy.data(), p.x.data(), gw.data(), 4, 3, 5, scratch);
        QCOMPARE(got, std::int64_t{4});  // row 0, the four columns of x that are not zero
        QCOMPARE(got, reference_count(mm, p, gw));
    }

    // Products that cancel exactly cannot be settled by a bound: the caller must compute.
    void exactCancellationIsLeftOpen() {
        Problem p{2, 1, 1, {1e-9f, -1e-9f}, {1.0f, 1.0f}};
        const std::vector<float> gw = {0.0f};
        cpu_detail::FlushCountScratch scratch;
        QCOMPARE(cpu_detail::count_flushed_weight_gradient(p.dy.data(), p.x.data(), gw.data(), 2, 1, 1,
                                                          scratch),
                 std::int64_t{-1});
    }

    // Inputs on which flush-to-zero or inf/NaN arithmetic could change a product: left open.
    void unusualInputsAreLeftOpen_data() {
        QTest::addColumn<float>("value");
        QTest::newRow("inf") << std::numeric_limits<float>::infinity();
        QTest::newRow("nan") << std::numeric_limits<float>::quiet_NaN();
        QTest::newRow("subnormal") << std::numeric_limits<float>::denorm_min() * 5;
    }
    void unusualInputsAreLeftOpen() {
        QFETCH(float, value);
        Problem p{2, 2, 2, {1e-9f, 1e-9f, 1e-9f, 1e-9f}, {1.0f, 1.0f, 1.0f, 1.0f}};
        const std::vector<float> gw = {0.0f, 0.0f, 0.0f, 0.0f};
        cpu_detail::FlushCountScratch scratch;
        QCOMPARE(cpu_detail::count_flushed_weight_gradient(p.dy.data(), p.x.data(), gw.data(), 2, 2, 2,
                                                          scratch),
                 std::int64_t{4});
        p.x[3] = value;
        QCOMPARE(cpu_detail::count_flushed_weight_gradient(p.dy.data(), p.x.data(), gw.data(), 2, 2, 2,
                                                          scratch),
                 std::int64_t{-1});
        p.x[3] = 1.0f;
        p.dy[0] = value;
        QCOMPARE(cpu_detail::count_flushed_weight_gradient(p.dy.data(), p.x.data(), gw.data(), 2, 2, 2,
                                                          scratch),
                 std::int64_t{-1});
    }

    // Mostly-zero gradients would take more products than the budget: the matmul is cheaper.
    void manyOpenElementsAreLeftToTheMatmul() {
        CpuMatmul mm;
        Problem p = random_problem(32, 64, 64, 1e-12f, 1.0f, 3);  // everything flushes in fp16
        const auto gw = rounded_gradient(mm, p, Format::fp16);
        cpu_detail::FlushCountScratch scratch;
        QCOMPARE(cpu_detail::count_flushed_weight_gradient(p.dy.data(), p.x.data(), gw.data(), 32, 64, 64,
                                                          scratch),
                 std::int64_t{-1});
        QVERIFY(reference_count(mm, p, gw) > 0);
    }
};

QTEST_GUILESS_MAIN(TestCpuFlushCount)
#include "test_cpu_flush_count.moc"
