// round_array (the vector kernels) against round_to (the scalar definition), bit for bit: random
// bit patterns, the edges of each format, every tail length, and both overflow modes; and the
// copying form round_array(src, dst) against the in-place form, bit for bit, NaNs included.
#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "numeric/convert.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::Overflow)

namespace {

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// Inputs that stress every path: random patterns, values around each format's thresholds.
std::vector<float> inputs(Format f, std::size_t random_count) {
    const FormatInfo& i = format_info(f);
    std::vector<float> v = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0x7f800001u), std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), 1.0f, -1.0f};
    for (float edge : {i.max_finite, i.min_normal, i.min_subnormal, i.epsilon}) {
        float x = edge;
        for (int k = 0; k < 4; ++k) {
            for (float s : {1.0f, -1.0f, 0.5f, 1.5f, 1.0f + i.epsilon / 2, 1.0f - i.epsilon / 4}) {
                v.push_back(x * s);
                v.push_back(std::nextafter(x * s, 0.0f));
                v.push_back(std::nextafter(x * s, std::numeric_limits<float>::infinity()));
            }
            x *= 2;
        }
    }
    std::mt19937 rng(42 + static_cast<unsigned>(f));
    for (std::size_t k = 0; k < random_count; ++k) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    return v;
}

}  // namespace

class TestRoundArray : public QObject {
    Q_OBJECT
private slots:
    void matchesScalar_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<Overflow>("overflow");
        for (Format f : all_formats) {
            const QByteArray name(format_name(f).data(), static_cast<int>(format_name(f).size()));
            QTest::newRow(name) << f << Overflow::to_inf;
            QTest::newRow(name + " saturating") << f << Overflow::saturate;
        }
    }
    void matchesScalar() {
        QFETCH(Format, format);
        QFETCH(Overflow, overflow);
        const std::vector<float> in = inputs(format, 2'000'000);
        std::vector<float> out = in;
        round_array(format, out.data(), out.size(), overflow);
        int failures = 0;
        for (std::size_t k = 0; k < in.size(); ++k) {
            const float want = round_to(format, in[k], overflow);
            if (bits_of(out[k]) != bits_of(want) && ++failures <= 5)
                qWarning("input 0x%08x: vector 0x%08x, scalar 0x%08x", bits_of(in[k]), bits_of(out[k]), bits_of(want));
        }
        QCOMPARE(failures, 0);
    }

    // Every length up to a few vectors, at every offset: the tails are handled, nothing outside
    // [0, n) is touched.
    void tails() {
        for (Format f : all_formats) {
            for (std::size_t n = 0; n <= 19; ++n) {
                std::vector<float> buf(n + 2, 0.3f);
                for (std::size_t k = 0; k < n; ++k) buf[k + 1] = 1.0f / static_cast<float>(k + 3);
                round_array(f, buf.data() + 1, n);
                QCOMPARE(buf.front(), 0.3f);
                QCOMPARE(buf.back(), 0.3f);
                for (std::size_t k = 0; k < n; ++k)
                    QCOMPARE(bits_of(buf[k + 1]), bits_of(round_to(f, 1.0f / static_cast<float>(k + 3))));
            }
        }
    }

    // The last values of a piece (n mod 8 of them) go through the vector kernels on a padded copy:
    // every edge value, in every tail position, both overflow modes, rounds as round_to does.
    void tailsMatchScalarOnEdges_data() { matchesScalar_data(); }
    void tailsMatchScalarOnEdges() {
        QFETCH(Format, format);
        QFETCH(Overflow, overflow);
        const std::vector<float> in = inputs(format, 200);
        int failures = 0;
        for (std::size_t length = 1; length <= 7; ++length) {
            for (std::size_t start = 0; start + length <= in.size(); ++start) {
                std::vector<float> piece(in.begin() + static_cast<std::ptrdiff_t>(start),
                                         in.begin() + static_cast<std::ptrdiff_t>(start + length));
                round_array(format, piece.data(), piece.size(), overflow);
                for (std::size_t k = 0; k < length; ++k) {
                    const float want = round_to(format, in[start + k], overflow);
                    if (bits_of(piece[k]) != bits_of(want) && ++failures <= 5)
                        qWarning("input 0x%08x at %zu of %zu: 0x%08x, scalar 0x%08x", bits_of(in[start + k]), k,
                                 length, bits_of(piece[k]), bits_of(want));
                }
            }
        }
        QCOMPARE(failures, 0);
    }

    // The copying form writes exactly what a copy followed by the in-place form gives (every bit,
    // NaN payloads and signs included) and leaves its source untouched.
    void copyingMatchesInPlace_data() { matchesScalar_data(); }
    void copyingMatchesInPlace() {
        QFETCH(Format, format);
        QFETCH(Overflow, overflow);
        const std::vector<float> in = inputs(format, 200'000);
        std::vector<float> in_place = in;
        round_array(format, in_place.data(), in_place.size(), overflow);
        const std::vector<float> src = in;
        std::vector<float> dst(in.size(), 7.0f);
        round_array(format, src.data(), dst.data(), src.size(), overflow);
        int failures = 0;
        for (std::size_t k = 0; k < in.size(); ++k) {
            if (bits_of(dst[k]) != bits_of(in_place[k]) && ++failures <= 5)
                qWarning("input 0x%08x: copying 0x%08x, in place 0x%08x", bits_of(in[k]), bits_of(dst[k]),
                         bits_of(in_place[k]));
            if (bits_of(src[k]) != bits_of(in[k])) ++failures;
        }
        QCOMPARE(failures, 0);
    }

    // The copying form's tails: every length up to a few vectors, nothing outside [0, n) of the
    // destination written; src == dst is the in-place form.
    void copyingTails() {
        for (Format f : all_formats) {
            for (std::size_t n = 0; n <= 19; ++n) {
                std::vector<float> src(n), dst(n + 2, 0.3f);
                for (std::size_t k = 0; k < n; ++k) src[k] = 1.0f / static_cast<float>(k + 3);
                round_array(f, src.data(), dst.data() + 1, n);
                QCOMPARE(dst.front(), 0.3f);
                QCOMPARE(dst.back(), 0.3f);
                std::vector<float> same = src;
                round_array(f, same.data(), same.data(), n);
                for (std::size_t k = 0; k < n; ++k) {
                    QCOMPARE(bits_of(dst[k + 1]), bits_of(round_to(f, src[k])));
                    QCOMPARE(bits_of(same[k]), bits_of(dst[k + 1]));
                }
            }
        }
    }

    // Rounding is idempotent: a rounded array rounds to itself.
    void idempotent() {
        for (Format f : all_formats) {
            std::vector<float> v = inputs(f, 100'000);
            round_array(f, v.data(), v.size());
            std::vector<float> again = v;
            round_array(f, again.data(), again.size());
            for (std::size_t k = 0; k < v.size(); ++k)
                if (!std::isnan(v[k])) QCOMPARE(bits_of(again[k]), bits_of(v[k]));
        }
    }
};

QTEST_APPLESS_MAIN(TestRoundArray)
#include "test_round_array.moc"
