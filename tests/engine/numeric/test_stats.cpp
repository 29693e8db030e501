// The gradient statistics' blocked and incremental forms against their one-shot definitions:
// round_array_with_stats (counting and rounding fused block by block) against counting, rounding
// and counting again over the whole array; ExponentTally fed in uneven pieces against one
// exponent_histogram call and against the definition (floor(log2|x|) per value).
#include <QtTest>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "numeric/convert.h"
#include "numeric/stats.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {

constexpr int min_exponent = -40;
constexpr int bins = 48;
using Histogram = std::array<std::uint32_t, bins>;

// Gradient-like values (normal, spread over many binades) with zeros, subnormals of fp32 and of
// the narrow formats, and a few non-finite values.
std::vector<float> gradient_like(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> mant(0.0f, 1.0f);
    std::uniform_int_distribution<int> expo(-40, 6);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned kind = rng() % 100;
        if (kind < 8) v[i] = 0.0f;
        else if (kind < 10) v[i] = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x807fffffu);
        else v[i] = std::ldexp(mant(rng), expo(rng));
    }
    v[n / 3] = std::numeric_limits<float>::infinity();
    v[n / 2] = std::numeric_limits<float>::quiet_NaN();
    return v;
}

}  // namespace

class TestStats : public QObject {
    Q_OBJECT
private slots:
    void roundingStatsBlockedMatchesWhole_data() {
        QTest::addColumn<Format>("format");
        for (Format f : all_formats) QTest::newRow(format_name(f).data()) << f;
    }
    void roundingStatsBlockedMatchesWhole() {
        QFETCH(Format, format);
        for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{2048}, std::size_t{2049}, std::size_t{100'003}}) {
            const std::vector<float> v = n ? gradient_like(n, 11 + static_cast<unsigned>(n)) : std::vector<float>{};
            std::vector<float> whole = v;
            RoundingStats want;
            want.zeros_before = count_zeros(whole.data(), n);
            round_array(format, whole.data(), n);
            count_classes(format, whole.data(), n, want);
            std::vector<float> fused = v;
            RoundingStats got;
            round_array_with_stats(format, fused.data(), n, got);
            QCOMPARE(got.elements, want.elements);
            QCOMPARE(got.zeros_before, want.zeros_before);
            QCOMPARE(got.zeros, want.zeros);
            QCOMPARE(got.subnormals, want.subnormals);
            QCOMPARE(got.nonfinite, want.nonfinite);
            for (std::size_t k = 0; k < n; ++k)
                QCOMPARE(std::bit_cast<std::uint32_t>(fused[k]), std::bit_cast<std::uint32_t>(whole[k]));
        }
    }

    // same_zeros: the zeros' positions compared, -0 as 0, one differing index anywhere (in the
    // first piece, the last, a tail) found; other values may differ freely.
    void sameZerosComparesPositions() {
        for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{4097}, std::size_t{50'001}}) {
            const std::vector<float> a = gradient_like(n, 3 + static_cast<unsigned>(n));
            std::vector<float> b = a;
            for (float& x : b)
                if (x != 0.0f) x *= 1.5f;  // the values move, the zeros stay
            QVERIFY(same_zeros(a.data(), b.data(), n));
            for (std::size_t k : {std::size_t{0}, n / 2, n - 1}) {
                std::vector<float> c = b;
                c[k] = a[k] == 0.0f ? 1.0f : 0.0f;
                QVERIFY(!same_zeros(a.data(), c.data(), n));
                c[k] = a[k] == 0.0f ? -0.0f : -a[k];  // a sign does not change a zero's position
                QVERIFY(same_zeros(a.data(), c.data(), n));
            }
        }
        QVERIFY(same_zeros(nullptr, nullptr, 0));
    }

    // rounding_may_flush: true exactly when a non-zero magnitude lies below the format's smallest
    // subnormal, so whenever round_array could turn a non-zero value into zero.
    void roundingMayFlushBelowTheSmallestSubnormal() {
        for (Format f : all_formats) {
            const float tiny = format_info(f).min_subnormal;
            std::vector<float> v = {1.0f, -3.0f, 0.0f, -0.0f, tiny, -tiny, std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN()};
            QVERIFY2(!rounding_may_flush(f, v.data(), v.size()), format_name(f).data());
            std::vector<float> rounded = v;
            round_array(f, rounded.data(), rounded.size());
            QCOMPARE(count_zeros(rounded.data(), rounded.size()), count_zeros(v.data(), v.size()));
            if (f == Format::fp32) continue;  // nothing lies below FP32's smallest subnormal
            for (float below : {std::nextafter(tiny, 0.0f), -tiny / 2, std::numeric_limits<float>::denorm_min()}) {
                std::vector<float> w = v;
                w.push_back(below);
                QVERIFY2(rounding_may_flush(f, w.data(), w.size()), format_name(f).data());
            }
            // And wherever round_array does flush, the test said it may.
            const std::vector<float> g = gradient_like(10'000, 17);
            std::vector<float> r = g;
            round_array(f, r.data(), r.size());
            if (count_zeros(r.data(), r.size()) != count_zeros(g.data(), g.size()))
                QVERIFY(rounding_may_flush(f, g.data(), g.size()));
        }
    }

    // Pieces of uneven sizes (including empty ones and ones that cross the tally's internal
    // blocks) give what one call over the whole array gives, which is the definition.
    void tallyInPiecesMatchesHistogram() {
        const std::vector<float> v = gradient_like(50'001, 5);
        Histogram whole{}, pieces{}, definition{};
        double amax_whole = 0, amax_pieces = 0, amax_def = 0;
        std::int64_t bad_whole = 0, bad_pieces = 0, bad_def = 0;
        exponent_histogram(v.data(), v.size(), 1.0f, min_exponent, whole.data(), bins, &amax_whole, &bad_whole);
        ExponentTally tally;
        std::size_t at = 0;
        for (std::size_t len : {std::size_t{0}, std::size_t{3}, std::size_t{2048}, std::size_t{4099}, std::size_t{1}}) {
            tally.add(v.data() + at, len);
            at += len;
        }
        tally.add(v.data() + at, v.size() - at);
        tally.finish(min_exponent, pieces.data(), bins, &amax_pieces, &bad_pieces);
        for (float x : v) {
            if (!std::isfinite(x)) {
                ++bad_def;
                continue;
            }
            if (x == 0.0f) continue;
            amax_def = std::max(amax_def, static_cast<double>(std::abs(x)));
            const int e = static_cast<int>(std::floor(std::log2(static_cast<double>(std::abs(x)))));
            ++definition[static_cast<std::size_t>(std::clamp(e - min_exponent, 0, bins - 1))];
        }
        QVERIFY(pieces == whole);
        QVERIFY(whole == definition);
        QCOMPARE(amax_pieces, amax_def);
        QCOMPARE(amax_whole, amax_def);
        QCOMPARE(bad_pieces, bad_def);
        QCOMPARE(bad_whole, bad_def);
        QCOMPARE(bad_def, std::int64_t{2});

        // reset() starts over; finish() adds to what the caller's histogram holds.
        tally.reset();
        const float one[] = {1.0f, 0.5f};
        tally.add(one, 2);
        Histogram h{};
        h[static_cast<std::size_t>(0 - min_exponent)] = 5;
        double amax = 3.0;
        std::int64_t bad = 1;
        tally.finish(min_exponent, h.data(), bins, &amax, &bad);
        QCOMPARE(h[static_cast<std::size_t>(0 - min_exponent)], 6u);
        QCOMPARE(h[static_cast<std::size_t>(-1 - min_exponent)], 1u);
        QCOMPARE(amax, 3.0);
        QCOMPARE(bad, std::int64_t{1});
    }
};

QTEST_APPLESS_MAIN(TestStats)
#include "test_stats.moc"
