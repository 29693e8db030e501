// Stochastic rounding (engine/numeric/stochastic_round.h) against a reference written here from
// the definition alone: the two neighbours of x are found by searching the format's decoded
// values (every positive code of fp16, bf16, the fp8s and the MX elements; tf32 by its mantissa
// grid), and a round-up must happen with probability (|x| - lo) / (hi - lo) exactly: for the
// grid formats the decision is u < fraction with u the top 24 random bits over 2^24, so the
// threshold on u is ceil(fraction · 2^24); for bf16 and tf32 the dropped bits L carry with the top
// `dropped` random bits R iff R >= 2^dropped - L. Each decision is checked on both sides of its
// threshold. Then: the arrays agree with the scalar function value by value (specials included),
// the counter-based bits make a pass reproducible and independent of where it starts, many keys
// average to x, and the block formats' stochastic pass rounds every element to one of its two
// grid neighbours under the scale the nearest pass chooses.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/element_format.h"
#include "numeric/stochastic_round.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

const float inf = std::numeric_limits<float>::infinity();
const float qnan = std::numeric_limits<float>::quiet_NaN();

// The positive finite values of a format, ascending, 0 first (every code decoded).
std::vector<double> positive_values(Format f) {
    std::vector<double> v;
    if (f == Format::tf32) {  // 2^19 codes: the fp32 values whose low 13 mantissa bits are zero
        for (std::uint32_t e = 0; e < 255; ++e)
            for (std::uint32_t m = 0; m < 1024; ++m)
                v.push_back(std::bit_cast<float>((e << 23) | (m << 13)));
        return v;
    }
    const int bits = f == Format::fp16 || f == Format::bf16 ? 16 : 8;
    for (std::uint32_t code = 0; code < (1u << (bits - 1)); ++code) {
        const float x = decode(f, code);
        if (std::isfinite(x)) v.push_back(x);
    }
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<double> positive_values(ElementFormat f) {
    std::vector<double> v;
    const int bits = element_format_info(f).bits;
    for (std::uint32_t code = 0; code < (1u << (bits - 1)); ++code) {
        const float x = decode_element(f, static_cast<std::uint8_t>(code));
        if (std::isfinite(x)) v.push_back(x);
    }
    std::sort(v.begin(), v.end());
    return v;
}

// lo <= |x| < hi, neighbours on the grid (hi is +inf beyond the largest value).
struct Neighbours {
    double lo, hi;
};
Neighbours neighbours(const std::vector<double>& grid, double a) {
    const auto it = std::upper_bound(grid.begin(), grid.end(), a);
    const double lo = *(it - 1);
    return {lo, it == grid.end() ? inf : *it};
}

bool bit_pattern_format(Format f) { return f == Format::bf16 || f == Format::tf32; }
int dropped_bits(Format f) { return 23 - format_info(f).mantissa_bits; }

// Random bits that put the decision just below (want_up) or at its threshold, or none when the
// fraction makes one side impossible.
std::optional<std::uint32_t> bits_for(Format f, float x, const Neighbours& n, bool want_up) {
    const double a = std::fabs(static_cast<double>(x));
    if (bit_pattern_format(f)) {
        const int d = dropped_bits(f);
        const std::uint32_t low = std::bit_cast<std::uint32_t>(x) & ((1u << d) - 1u);
        if (low == 0) return want_up ? std::nullopt : std::optional<std::uint32_t>(0xFFFFFFFFu);
        const std::uint32_t threshold = (1u << d) - low;  // R >= threshold carries
        const std::uint32_t r = want_up ? threshold : threshold - 1;
        return r << (32 - d) | ((1u << (32 - d)) - 1u) * static_cast<std::uint32_t>(!want_up);
    }
    const double fraction = (a - n.lo) / (n.hi - n.lo);
    const double t = std::ceil(fraction * 16777216.0);  // u = j / 2^24 < fraction iff j < t
    if (want_up) return t >= 1 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(t - 1) << 8) : std::nullopt;
    return t <= 16777215 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(t) << 8 | 0xFFu) : std::nullopt;
}

std::vector<float> probe_values(Format f, std::uint32_t seed, int count) {
    std::mt19937 rng(seed);
    const FormatInfo& info = format_info(f);
    std::uniform_real_distribution<double> exponent(info.min_exponent - info.mantissa_bits - 3, info.max_exponent + 0.9);
    std::vector<float> v;
    for (int i = 0; i < count; ++i) {
        float x = static_cast<float>(std::exp2(exponent(rng)) * (rng() % 2 ? -1 : 1));
        x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) ^ static_cast<std::uint32_t>(rng() & 0x7FFu));  // low bits set
        if (std::fabs(x) < info.max_finite) v.push_back(x);
    }
    return v;
}

}  // namespace

class TestStochasticRound : public QObject {
    Q_OBJECT
private slots:
    void goesToANeighbourWithTheExactProbability_data() {
        QTest::addColumn<Format>("format");
        for (Format f : {Format::fp16, Format::bf16, Format::tf32, Format::fp8_e4m3, Format::fp8_e5m2})
            QTest::newRow(format_name(f).data()) << f;
    }
    void goesToANeighbourWithTheExactProbability() {
        QFETCH(Format, format);
        const std::vector<double> grid = positive_values(format);
        int checked = 0;
        for (float x : probe_values(format, 7, 4000)) {
            const Neighbours n = neighbours(grid, std::fabs(static_cast<double>(x)));
            for (bool up : {false, true}) {
                const auto r = bits_for(format, x, n, up);
                if (!r) continue;
                const float got = round_stochastic(format, x, *r);
                const double want = std::copysign(up ? n.hi : n.lo, static_cast<double>(x));
                if (static_cast<double>(got) != want)
                    QFAIL(qPrintable(QString("%1: x=%2 bits=%3 gave %4, expected %5 (the %6 neighbour)")
                                         .arg(format_name(format).data()).arg(double(x), 0, 'g', 9)
                                         .arg(*r, 8, 16, QChar('0')).arg(double(got), 0, 'g', 9)
                                         .arg(want, 0, 'g', 9).arg(up ? "upper" : "lower")));
                ++checked;
            }
        }
        QVERIFY(checked > 4000);
        // A value of the format never moves, whatever the bits.
        for (double v : {0.0, grid[1], grid[grid.size() / 2], grid.back()})
            for (std::uint32_t r : {0u, 0x80000000u, 0xFFFFFFFFu})
                QCOMPARE(round_stochastic(format, static_cast<float>(-v), r), static_cast<float>(-v));
    }

    void overflowAndSpecials() {
        for (Format f : {Format::fp16, Format::bf16, Format::fp8_e5m2, Format::fp8_e4m3}) {
            const float max = format_info(f).max_finite;
            const float beyond = max * 2.0f;
            const float overflow = format_info(f).has_infinity ? inf : qnan;
            for (std::uint32_t r : {0u, 0xFFFFFFFFu}) {
                const float to_inf = round_stochastic(f, beyond, r);
                QVERIFY(std::isnan(overflow) ? std::isnan(to_inf) : to_inf == overflow);
                QCOMPARE(round_stochastic(f, -beyond, r, Overflow::saturate), -max);
                QVERIFY(std::isnan(round_stochastic(f, qnan, r)));
                QCOMPARE(round_stochastic(f, inf, r, Overflow::saturate), max);
                QCOMPARE(round_stochastic(f, max, r), max);
            }
        }
        QCOMPARE(round_stochastic(Format::fp32, 0.1f, 0xFFFFFFFFu), 0.1f);
    }

    void arraysAgreeWithTheScalarFunction() {
        std::mt19937 rng(3);
        std::vector<float> x(5003);
        for (float& v : x) v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
        x[0] = qnan, x[1] = -inf, x[2] = 0.0f, x[3] = -0.0f, x[4] = 1e-42f, x[5] = 70000.0f;
        for (Format f : all_formats)
            for (Overflow o : {Overflow::to_inf, Overflow::saturate}) {
                std::vector<float> y(x.size());
                round_array_stochastic(f, x.data(), y.data(), x.size(), 99, 5, o);
                for (std::size_t i = 0; i < x.size(); ++i) {
                    const float want = round_stochastic(f, x[i], stochastic_bits(99, 5 + i), o);
                    if (std::bit_cast<std::uint32_t>(want) != std::bit_cast<std::uint32_t>(y[i]) &&
                        !(std::isnan(want) && std::isnan(y[i])))
                        QFAIL(qPrintable(QString("%1 [%2]: %3 vs %4").arg(format_name(f).data()).arg(i)
                                             .arg(double(y[i])).arg(double(want))));
                }
            }
        // Scaled, as the FP8 gradient quantisation runs it, and its amax.
        std::vector<float> small(x.begin() + 6, x.begin() + 1006), q(small.size());
        for (float& v : small) v = std::isfinite(v) ? std::fmod(v, 1000.0f) : 1.0f;
        const float amax = scale_round_array_stochastic(Format::fp8_e5m2, small.data(), q.data(), small.size(), 8.0f,
                                                        41, Overflow::saturate);
        float want_amax = 0;
        for (std::size_t i = 0; i < small.size(); ++i) {
            want_amax = std::max(want_amax, std::fabs(small[i]));
            QCOMPARE(q[i], round_stochastic(Format::fp8_e5m2, small[i] * 8.0f, stochastic_bits(41, i), Overflow::saturate));
        }
        QCOMPARE(amax, want_amax);
    }

    void passesAreReproducibleAndKeyed() {
        std::vector<float> x(1000, 1.0f + 0x1p-10f);  // an eighth of a bf16 step above 1
        std::vector<float> a(x.size()), b(x.size()), c(x.size());
        round_array_stochastic(Format::bf16, x.data(), a.data(), x.size(), 1234);
        round_array_stochastic(Format::bf16, x.data(), b.data(), x.size(), 1234);
        round_array_stochastic(Format::bf16, x.data(), c.data(), x.size(), 1235);
        QVERIFY(a == b);
        QVERIFY(a != c);
        // A pass split in two (first_index) is the whole pass.
        std::vector<float> split(x.size());
        round_array_stochastic(Format::bf16, x.data(), split.data(), 300, 1234, 0);
        round_array_stochastic(Format::bf16, x.data() + 300, split.data() + 300, 700, 1234, 300);
        QVERIFY(split == a);
        QVERIFY(stochastic_key(1, 0) != stochastic_key(1, 1));
        QVERIFY(stochastic_key(1, 0) != stochastic_key(2, 0));
    }

    void averagesToTheValue() {
        // 1 + 2^-10 lies an eighth of a bf16 step above 1 (the step is 2^-7): nearest always gives
        // 1, stochastic rounding averages to the value.
        const float x = 1.0f + 0x1p-10f;
        const int n = 200000;
        std::vector<float> v(n, x), y(n);
        round_array_stochastic(Format::bf16, v.data(), y.data(), v.size(), 5);
        double sum = 0;
        for (float r : y) sum += r;
        const double mean = sum / n;
        // The count of round-ups is binomial(n, 1/8): its standard deviation is 148, of a step 2^-7.
        QVERIFY2(std::fabs(mean - x) < 5 * 148.0 / n * 0x1p-7, qPrintable(QString::number(mean - x)));
        QCOMPARE(round_to(Format::bf16, x), 1.0f);
        // fp16 below its smallest subnormal: 0 or 2^-24, averaging to x.
        const float tiny = 0x1p-27f;
        std::vector<float> t(n, tiny);
        round_array_stochastic(Format::fp16, t.data(), t.data(), t.size(), 6);
        double tiny_sum = 0;
        for (float r : t) {
            QVERIFY(r == 0.0f || r == 0x1p-24f);
            tiny_sum += r;
        }
        QVERIFY(std::fabs(tiny_sum / n - tiny) < 5 * std::sqrt(n / 8.0 * 7 / 8) / n * 0x1p-24);
    }

    void blockElementsGoToTheirGridNeighbours_data() {
        QTest::addColumn<BlockFormat>("format");
        for (BlockFormat f : all_block_formats) QTest::newRow(block_format_name(f).data()) << f;
    }
    void blockElementsGoToTheirGridNeighbours() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        const std::vector<double> grid = positive_values(info.element);
        std::mt19937 rng(17);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const std::size_t outer = 3, K = 96, inner = 5;  // blocks along the strided K
        std::vector<float> x(outer * K * inner);
        for (float& v : x) v = normal(rng) * std::exp2(static_cast<float>(rng() % 20) - 10.0f);
        const float ts = block_tensor_scale(format, x.data(), x.size());
        std::vector<float> sr(x.size()), nearest(x.size());
        const BlockStats s = round_blocks_along_stochastic(format, x.data(), sr.data(), outer, K, inner, ts, 77);
        round_blocks_along(format, x.data(), nearest.data(), outer, K, inner, ts);
        QCOMPARE(s.values, x.size());
        const auto B = static_cast<std::size_t>(info.block_size);
        std::vector<float> block(B);
        std::vector<std::uint8_t> codes(B);
        int differ = 0;
        for (std::size_t o = 0; o < outer; ++o)
            for (std::size_t first = 0; first < K; first += B)
                for (std::size_t i = 0; i < inner; ++i) {
                    const std::size_t count = std::min(B, K - first);
                    for (std::size_t k = 0; k < count; ++k) block[k] = x[(o * K + first + k) * inner + i];
                    const std::uint8_t code = quantise_block(format, ts, block.data(), count, codes.data());
                    float decode = block_decode_factor(format, code, ts);
                    // An MX block the OCP scale would clip takes the next power of two.
                    float amax = 0;
                    for (std::size_t k = 0; k < count; ++k) amax = std::max(amax, std::fabs(block[k]));
                    if (format != BlockFormat::nvfp4 && amax / decode > element_format_info(info.element).max_finite)
                        decode *= 2;
                    // The element is x times the block's encoding factor 1 / decode (FP32, as the
                    // library scales), the result that element times decode.
                    const float encode = std::min(1.0f / decode, std::numeric_limits<float>::max());
                    for (std::size_t k = 0; k < count; ++k) {
                        const std::size_t at = (o * K + first + k) * inner + i;
                        const double q = std::fabs(x[at] * encode);
                        const Neighbours n = neighbours(grid, std::min(q, grid.back()));
                        const float got = std::fabs(sr[at]);
                        const bool ok = got == static_cast<float>(n.lo) * decode ||
                                        (std::isfinite(n.hi) && got == static_cast<float>(n.hi) * decode);
                        if (!ok)
                            QFAIL(qPrintable(QString("value %1: %2 (element %3) is neither %4 nor %5")
                                                 .arg(at).arg(double(x[at])).arg(double(got / decode)).arg(n.lo)
                                                 .arg(n.hi)));
                        differ += sr[at] != nearest[at];
                    }
                }
        QVERIFY(differ > 0);  // it is not the nearest pass
    }

    // Rowwise FP8: the scales are the nearest pass's, each x · s rounded as round_stochastic rounds it
    // (saturating, with the bits of its index), along contiguous runs and along strided ones.
    void rowwiseFp8RoundsStochastically() {
        std::mt19937 rng(23);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t inner : {std::size_t{1}, std::size_t{6}}) {
            const std::size_t outer = 4, K = 50;
            std::vector<float> x(outer * K * inner), y(x.size());
            for (float& v : x) v = normal(rng) * 1e-3f;
            const float amax = round_axiswise_fp8_stochastic(Format::fp8_e5m2, x.data(), y.data(), outer, K, inner, 0,
                                                             false, 31);
            float want_amax = 0;
            for (float v : x) want_amax = std::max(want_amax, std::fabs(v));
            QCOMPARE(amax, want_amax);
            const float fp8_max = format_info(Format::fp8_e5m2).max_finite;
            for (std::size_t o = 0; o < outer; ++o)
                for (std::size_t i = 0; i < inner; ++i) {
                    float run_amax = 0;
                    for (std::size_t k = 0; k < K; ++k) run_amax = std::max(run_amax, std::fabs(x[(o * K + k) * inner + i]));
                    const float s = (fp8_max / run_amax) / 1.0f;
                    for (std::size_t k = 0; k < K; ++k) {
                        const std::size_t at = (o * K + k) * inner + i;
                        const float want =
                            round_stochastic(Format::fp8_e5m2, x[at] * s, stochastic_bits(31, at), Overflow::saturate) *
                            (1.0f / s);
                        if (y[at] != want)
                            QFAIL(qPrintable(QString("inner %1, value %2: %3, expected %4").arg(inner).arg(at)
                                                 .arg(double(y[at])).arg(double(want))));
                    }
                }
        }
    }

    void mxBlocksAreNotClippedWhenRoundingStochastically() {
        // A block like a row of the loss's gradient: one large value the OCP scale clips (0.95 is
        // 7.6 elements of 2^-3, beyond e2m1's 6), small ones of the other sign. Rounded
        // stochastically, every value, the largest included, averages to itself.
        std::vector<float> x = {0.001f, 0.002f, -0.95f, 0.3f, 0.0005f, 0.01f, 0.02f, 0.005f, 0.0001f, 0.6f};
        std::vector<float> nearest(x.size()), y(x.size());
        round_blocks_along(BlockFormat::mxfp4, x.data(), nearest.data(), 1, x.size(), 1, 1.0f);
        QCOMPARE(nearest[2], -0.75f);  // to nearest, clipped to 6 · 2^-3
        std::vector<double> sum(x.size(), 0.0);
        const int keys = 20000;
        for (int k = 0; k < keys; ++k) {
            round_blocks_along_stochastic(BlockFormat::mxfp4, x.data(), y.data(), 1, x.size(), 1, 1.0f,
                                          stochastic_key(3, static_cast<std::uint64_t>(k)));
            for (std::size_t i = 0; i < x.size(); ++i) sum[i] += y[i];
        }
        for (std::size_t i = 0; i < x.size(); ++i)  // steps of at most 0.5 (2^-2 scale, e2m1's 2)
            QVERIFY2(std::fabs(sum[i] / keys - x[i]) < 5 * 0.5 / 2 / std::sqrt(keys),
                     qPrintable(QString("%1: mean %2").arg(double(x[i])).arg(sum[i] / keys)));
    }

    void blockRoundingAveragesToTheValue() {
        // One MXFP4 block of values between grid points, rounded under many keys.
        std::vector<float> x(32);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f + 0.17f * static_cast<float>(i);  // amax 5.37
        std::vector<double> sum(x.size(), 0.0);
        std::vector<float> y(x.size());
        const int keys = 20000;
        for (int k = 0; k < keys; ++k) {
            round_blocks_along_stochastic(BlockFormat::mxfp4, x.data(), y.data(), 1, x.size(), 1, 1.0f,
                                          stochastic_key(8, static_cast<std::uint64_t>(k)));
            for (std::size_t i = 0; i < x.size(); ++i) sum[i] += y[i];
        }
        // The block's scale is 2^0 (floor(log2 5.37) - emax 2), so the e2m1 steps are 0.5, 1 and 2:
        // the mean of `keys` roundings deviates from x by at most step / 2 / sqrt(keys) per sigma.
        for (std::size_t i = 0; i < x.size(); ++i)
            QVERIFY2(std::fabs(sum[i] / keys - x[i]) < 5 * 2.0 / 2 / std::sqrt(keys),
                     qPrintable(QString("%1: mean %2").arg(double(x[i])).arg(sum[i] / keys)));
    }
};

QTEST_APPLESS_MAIN(TestStochasticRound)
#include "test_stochastic_round.moc"
