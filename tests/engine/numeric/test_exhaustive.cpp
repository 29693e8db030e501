// Every bit pattern of fp16, bf16, fp8-e4m3 and fp8-e5m2 (and every tf32 pattern) decodes and
// re-encodes to itself, NaN payloads aside; the class counts per format match the format's layout.
#include <QtTest>

#include <bit>
#include <cmath>

#include "numeric/convert.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {
struct Counts {
    int zero = 0, subnormal = 0, normal = 0, inf = 0, nan = 0;
};
}  // namespace

class TestExhaustive : public QObject {
    Q_OBJECT
private slots:
    void roundTrip_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("zero");
        QTest::addColumn<int>("subnormal");
        QTest::addColumn<int>("normal");
        QTest::addColumn<int>("inf");
        QTest::addColumn<int>("nan");
        QTest::newRow("fp16") << Format::fp16 << 2 << 2046 << 61440 << 2 << 2046;
        QTest::newRow("bf16") << Format::bf16 << 2 << 254 << 65024 << 2 << 254;
        QTest::newRow("e4m3") << Format::fp8_e4m3 << 2 << 14 << 238 << 0 << 2;
        QTest::newRow("e5m2") << Format::fp8_e5m2 << 2 << 6 << 240 << 2 << 6;
    }
    void roundTrip() {
        QFETCH(Format, format);
        QFETCH(int, zero);
        QFETCH(int, subnormal);
        QFETCH(int, normal);
        QFETCH(int, inf);
        QFETCH(int, nan);
        const std::uint32_t patterns = 1u << format_info(format).storage_bits;
        Counts c;
        for (std::uint32_t bits = 0; bits < patterns; ++bits) {
            const float v = decode(format, bits);
            const FloatClass cls = classify(format, bits);
            switch (cls) {
            case FloatClass::zero: ++c.zero; break;
            case FloatClass::subnormal: ++c.subnormal; break;
            case FloatClass::normal: ++c.normal; break;
            case FloatClass::inf: ++c.inf; break;
            case FloatClass::nan: ++c.nan; break;
            }
            if (cls == FloatClass::nan) {
                if (!std::isnan(v)) QFAIL(qPrintable(QString("NaN pattern 0x%1 decodes to %2").arg(bits, 0, 16).arg(v)));
                if (classify(format, encode(format, v)) != FloatClass::nan)
                    QFAIL(qPrintable(QString("NaN pattern 0x%1 does not re-encode to NaN").arg(bits, 0, 16)));
                continue;
            }
            const std::uint32_t again = encode(format, v);
            if (again != bits)
                QFAIL(qPrintable(QString("pattern 0x%1 -> %2 -> 0x%3").arg(bits, 0, 16).arg(v, 0, 'g', 12).arg(again, 0, 16)));
            // Saturation never changes a representable value.
            if (encode(format, v, Overflow::saturate) != bits && cls != FloatClass::inf)
                QFAIL(qPrintable(QString("pattern 0x%1 changes under saturation").arg(bits, 0, 16)));
        }
        QCOMPARE(c.zero, zero);
        QCOMPARE(c.subnormal, subnormal);
        QCOMPARE(c.normal, normal);
        QCOMPARE(c.inf, inf);
        QCOMPARE(c.nan, nan);
    }

    // tf32 values are fp32 bit patterns with the low 13 bits zero: all 2^19 of them round-trip.
    void tf32() {
        int nans = 0;
        for (std::uint32_t k = 0; k < (1u << 19); ++k) {
            const std::uint32_t bits = k << 13;
            const float v = decode(Format::tf32, bits);
            QCOMPARE(std::bit_cast<std::uint32_t>(v), bits);
            if (std::isnan(v)) {
                ++nans;
                QVERIFY(std::isnan(round_to(Format::tf32, v)));
                continue;
            }
            if (encode(Format::tf32, v) != bits) QFAIL(qPrintable(QString("tf32 0x%1").arg(bits, 0, 16)));
        }
        QCOMPARE(nans, 2 * 1023);
    }

    // fp32 is the identity, including signed zeros and subnormals.
    void fp32Identity() {
        for (std::uint32_t bits : {0u, 0x80000000u, 1u, 0x007fffffu, 0x3f800000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u})
            QCOMPARE(encode(Format::fp32, std::bit_cast<float>(bits)), bits);
    }
};

QTEST_APPLESS_MAIN(TestExhaustive)
#include "test_exhaustive.moc"
