// Rounding checked against an independent, straightforward reference: the sorted table of every
// non-negative value a format can hold (built from its field widths alone, not from the engine),
// searched for the nearest value, ties broken toward the even mantissa, with one extra entry past
// the largest finite value standing for overflow. 10^6 random fp32 inputs per format, spread over
// the whole exponent range, plus a hand-written table of edges (ties, subnormals, the overflow
// thresholds 65504 + 16, 448 + 16, 57344 + 4096, signed zeros, infinities, NaN).
#include <QtTest>

#include <algorithm>
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

struct Entry {
    long double value;
    bool even;       // mantissa field's lowest bit is 0
    bool overflow;   // the virtual entry past the largest finite value
};

// The non-negative values of a format with e exponent bits and m mantissa bits, from first
// principles: subnormals k * 2^(1-bias-m), normals (2^m + k) * 2^(E-bias-m).
struct ReferenceFormat {
    int e, m;
    bool e4m3;
    std::vector<Entry> table;

    ReferenceFormat(int e_, int m_, bool e4m3_) : e(e_), m(m_), e4m3(e4m3_) {
        const int bias = (1 << (e - 1)) - 1;
        const int top = (1 << e) - 1;
        const int last_exponent = e4m3 ? top : top - 1;
        for (long k = 0; k < (1L << m); ++k)
            table.push_back({std::ldexp(static_cast<long double>(k), 1 - bias - m), k % 2 == 0, false});
        for (int E = 1; E <= last_exponent; ++E) {
            for (long k = 0; k < (1L << m); ++k) {
                if (e4m3 && E == top && k == (1L << m) - 1) break;  // the NaN
                table.push_back({std::ldexp(static_cast<long double>((1L << m) + k), E - bias - m), k % 2 == 0, false});
            }
        }
        // One step past the largest finite value: rounding to it means overflow.
        const Entry& last = table.back();
        const long double ulp = std::ldexp(1.0L, last_exponent - bias - m);
        table.push_back({last.value + ulp, !last.even, true});
    }

    // {value, overflowed} for a finite non-negative input.
    std::pair<long double, bool> nearest(long double a) const {
        auto it = std::upper_bound(table.begin(), table.end(), a,
                                   [](long double v, const Entry& en) { return v < en.value; });
        if (it == table.end()) return {0, true};  // beyond the virtual entry: overflow
        const Entry& hi = *it;
        const Entry& lo = *(it - 1);
        if (a == lo.value) return {lo.value, lo.overflow};
        const long double dlo = a - lo.value, dhi = hi.value - a;
        const Entry& pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo.even ? lo : hi);
        return {pick.value, pick.overflow};
    }
};

const ReferenceFormat& reference(Format f) {
    static const ReferenceFormat fp16(5, 10, false), bf16(8, 7, false), tf32(8, 10, false),
        e4m3(4, 3, true), e5m2(5, 2, false);
    switch (f) {
    case Format::fp16: return fp16;
    case Format::bf16: return bf16;
    case Format::tf32: return tf32;
    case Format::fp8_e4m3: return e4m3;
    default: return e5m2;
    }
}

// The reference result of rounding x, as an fp32 value.
float reference_round(Format f, float x, Overflow overflow) {
    if (std::isnan(x)) return x;
    const ReferenceFormat& r = reference(f);
    const bool negative = std::signbit(x);
    long double value;
    bool overflowed;
    if (std::isinf(x)) {
        value = 0;
        overflowed = true;
    } else {
        std::tie(value, overflowed) = r.nearest(std::fabs(static_cast<long double>(x)));
    }
    float out;
    if (overflowed) {
        if (overflow == Overflow::saturate) out = format_info(f).max_finite;
        else out = r.e4m3 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else {
        out = static_cast<float>(value);  // exact: every table value fits in fp32
    }
    return negative ? -out : out;
}

bool same(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

QString describe(float x) {
    return QString("%1 (0x%2)").arg(static_cast<double>(x), 0, 'g', 17).arg(std::bit_cast<std::uint32_t>(x), 8, 16, QChar('0'));
}

}  // namespace

class TestReference : public QObject {
    Q_OBJECT
private slots:
    void random_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<Overflow>("overflow");
        for (Format f : {Format::fp16, Format::bf16, Format::tf32, Format::fp8_e4m3, Format::fp8_e5m2}) {
            const QByteArray name(format_name(f).data(), static_cast<int>(format_name(f).size()));
            QTest::newRow(name) << f << Overflow::to_inf;
            QTest::newRow(name + " saturating") << f << Overflow::saturate;
        }
    }
    // 10^6 inputs a format and mode: half uniform over all fp32 bit patterns (every exponent equally
    // likely), half concentrated on the format's own range, where the interesting cases are.
    void random() {
        QFETCH(Format, format);
        QFETCH(Overflow, overflow);
        const FormatInfo& info = format_info(format);
        std::mt19937_64 rng(0x6d616e74u + static_cast<unsigned>(format));
        std::uniform_int_distribution<std::uint32_t> any_bits;
        std::uniform_int_distribution<int> exponent(info.min_exponent - info.mantissa_bits - 3, info.max_exponent + 2);
        std::uniform_int_distribution<std::uint32_t> mantissa(0, (1u << 23) - 1);
        int failures = 0;
        for (int i = 0; i < 1'000'000; ++i) {
            float x;
            if (i % 2 == 0) {
                x = std::bit_cast<float>(any_bits(rng));
            } else {
                const int e = std::clamp(exponent(rng), -149, 127);
                x = std::ldexp(1.0f + std::ldexp(static_cast<float>(mantissa(rng)), -23), e);
                if (rng() & 1) x = -x;
            }
            const float got = round_to(format, x, overflow);
            const float want = reference_round(format, x, overflow);
            if (!same(got, want) && ++failures <= 5)
                qWarning("%s: %s -> %s, reference %s", format_name(format).data(), qPrintable(describe(x)),
                         qPrintable(describe(got)), qPrintable(describe(want)));
        }
        QCOMPARE(failures, 0);
    }

    void edges_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<Overflow>("overflow");
        QTest::addColumn<float>("input");
        QTest::addColumn<float>("expected");
        const float inf = std::numeric_limits<float>::infinity();
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const auto sat = Overflow::saturate;
        const auto ovf = Overflow::to_inf;
        auto p = [](double m, int e) { return static_cast<float>(std::ldexp(m, e)); };
        // fp16
        QTest::newRow("fp16 max") << Format::fp16 << ovf << 65504.0f << 65504.0f;
        QTest::newRow("fp16 just below threshold") << Format::fp16 << ovf << std::nextafter(65520.0f, 0.0f) << 65504.0f;
        QTest::newRow("fp16 65504+16 overflows") << Format::fp16 << ovf << 65520.0f << inf;
        QTest::newRow("fp16 65504+16 saturates") << Format::fp16 << sat << 65520.0f << 65504.0f;
        QTest::newRow("fp16 -65520") << Format::fp16 << ovf << -65520.0f << -inf;
        QTest::newRow("fp16 tie to even down") << Format::fp16 << ovf << p(1 + std::ldexp(1.0, -11), 0) << 1.0f;
        QTest::newRow("fp16 tie to even up") << Format::fp16 << ovf << p(1 + 3 * std::ldexp(1.0, -11), 0) << p(1 + std::ldexp(1.0, -9), 0);
        QTest::newRow("fp16 min subnormal") << Format::fp16 << ovf << p(1, -24) << p(1, -24);
        QTest::newRow("fp16 half min subnormal ties to 0") << Format::fp16 << ovf << p(1, -25) << 0.0f;
        QTest::newRow("fp16 above half min subnormal") << Format::fp16 << ovf << std::nextafter(p(1, -25), 1.0f) << p(1, -24);
        QTest::newRow("fp16 subnormal tie to even") << Format::fp16 << ovf << p(3, -25) << p(1, -23);
        QTest::newRow("fp16 largest subnormal rounds to min normal") << Format::fp16 << ovf << p(1 - std::ldexp(1.0, -12), -14) << p(1, -14);
        QTest::newRow("fp16 negative underflow keeps sign") << Format::fp16 << ovf << -p(1, -30) << -0.0f;
        QTest::newRow("fp16 -0") << Format::fp16 << ovf << -0.0f << -0.0f;
        QTest::newRow("fp16 +inf") << Format::fp16 << ovf << inf << inf;
        QTest::newRow("fp16 -inf saturates") << Format::fp16 << sat << -inf << -65504.0f;
        QTest::newRow("fp16 nan") << Format::fp16 << ovf << nan << nan;
        QTest::newRow("fp16 0.1") << Format::fp16 << ovf << 0.1f << 0.0999755859375f;
        // bf16
        QTest::newRow("bf16 tie down") << Format::bf16 << ovf << p(1 + std::ldexp(1.0, -8), 0) << 1.0f;
        QTest::newRow("bf16 tie up") << Format::bf16 << ovf << p(1 + 3 * std::ldexp(1.0, -8), 0) << p(1 + std::ldexp(1.0, -6), 0);
        QTest::newRow("bf16 FLT_MAX overflows") << Format::bf16 << ovf << std::numeric_limits<float>::max() << inf;
        QTest::newRow("bf16 FLT_MAX saturates") << Format::bf16 << sat << std::numeric_limits<float>::max() << format_info(Format::bf16).max_finite;
        QTest::newRow("bf16 fp32 subnormal flushes") << Format::bf16 << ovf << p(3, -149) << 0.0f;
        QTest::newRow("bf16 min subnormal") << Format::bf16 << ovf << p(1, -133) << p(1, -133);
        QTest::newRow("bf16 1e-40") << Format::bf16 << ovf << 1e-40f << p(1, -133);
        // fp8-e4m3
        QTest::newRow("e4m3 max") << Format::fp8_e4m3 << ovf << 448.0f << 448.0f;
        QTest::newRow("e4m3 448+16 ties to 448") << Format::fp8_e4m3 << ovf << 464.0f << 448.0f;
        QTest::newRow("e4m3 above 464 is NaN") << Format::fp8_e4m3 << ovf << std::nextafter(464.0f, 1000.0f) << nan;
        QTest::newRow("e4m3 above 464 saturates") << Format::fp8_e4m3 << sat << std::nextafter(464.0f, 1000.0f) << 448.0f;
        QTest::newRow("e4m3 inf is NaN") << Format::fp8_e4m3 << ovf << inf << nan;
        QTest::newRow("e4m3 -inf saturates") << Format::fp8_e4m3 << sat << -inf << -448.0f;
        QTest::newRow("e4m3 min subnormal") << Format::fp8_e4m3 << ovf << p(1, -9) << p(1, -9);
        QTest::newRow("e4m3 half min subnormal") << Format::fp8_e4m3 << ovf << p(1, -10) << 0.0f;
        QTest::newRow("e4m3 0.1") << Format::fp8_e4m3 << ovf << 0.1f << 0.1015625f;
        // fp8-e5m2
        QTest::newRow("e5m2 max") << Format::fp8_e5m2 << ovf << 57344.0f << 57344.0f;
        QTest::newRow("e5m2 57344+4096 overflows") << Format::fp8_e5m2 << ovf << 61440.0f << inf;
        QTest::newRow("e5m2 just below threshold") << Format::fp8_e5m2 << ovf << std::nextafter(61440.0f, 0.0f) << 57344.0f;
        QTest::newRow("e5m2 saturates") << Format::fp8_e5m2 << sat << 1e9f << 57344.0f;
        QTest::newRow("e5m2 min subnormal") << Format::fp8_e5m2 << ovf << p(1, -16) << p(1, -16);
        QTest::newRow("e5m2 half min subnormal") << Format::fp8_e5m2 << ovf << p(1, -17) << 0.0f;
        // tf32
        QTest::newRow("tf32 tie down") << Format::tf32 << ovf << p(1 + std::ldexp(1.0, -11), 0) << 1.0f;
        QTest::newRow("tf32 tie up") << Format::tf32 << ovf << p(1 + 3 * std::ldexp(1.0, -11), 0) << p(1 + std::ldexp(1.0, -9), 0);
    }
    // Each edge: the hand-written expectation, the reference, and the engine agree.
    void edges() {
        QFETCH(Format, format);
        QFETCH(Overflow, overflow);
        QFETCH(float, input);
        QFETCH(float, expected);
        const float got = round_to(format, input, overflow);
        QVERIFY2(same(got, expected), qPrintable(describe(input) + " -> " + describe(got) + ", expected " + describe(expected)));
        QVERIFY2(same(reference_round(format, input, overflow), expected), "the reference disagrees with the table");
    }
};

QTEST_APPLESS_MAIN(TestReference)
#include "test_reference.moc"
