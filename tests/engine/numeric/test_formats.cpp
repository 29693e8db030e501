// The constants of each format against their published values, and format-name parsing.
#include <QtTest>

#include <cmath>

#include "numeric/convert.h"
#include "numeric/format.h"
#include "exact_compare.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)

class TestFormats : public QObject {
    Q_OBJECT
private slots:
    void constants_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("exponentBits");
        QTest::addColumn<int>("mantissaBits");
        QTest::addColumn<int>("bias");
        QTest::addColumn<double>("maxFinite");
        QTest::addColumn<double>("minNormal");
        QTest::addColumn<double>("minSubnormal");
        QTest::addColumn<double>("epsilon");
        QTest::newRow("fp32") << Format::fp32 << 8 << 23 << 127 << 3.4028234663852886e38 << std::ldexp(1.0, -126)
                              << std::ldexp(1.0, -149) << std::ldexp(1.0, -23);
        QTest::newRow("tf32") << Format::tf32 << 8 << 10 << 127 << std::ldexp(2.0 - std::ldexp(1.0, -10), 127)
                              << std::ldexp(1.0, -126) << std::ldexp(1.0, -136) << std::ldexp(1.0, -10);
        QTest::newRow("fp16") << Format::fp16 << 5 << 10 << 15 << 65504.0 << std::ldexp(1.0, -14)
                              << std::ldexp(1.0, -24) << std::ldexp(1.0, -10);
        QTest::newRow("bf16") << Format::bf16 << 8 << 7 << 127 << 3.3895313892515355e38 << std::ldexp(1.0, -126)
                              << std::ldexp(1.0, -133) << std::ldexp(1.0, -7);
        QTest::newRow("e4m3") << Format::fp8_e4m3 << 4 << 3 << 7 << 448.0 << std::ldexp(1.0, -6)
                              << std::ldexp(1.0, -9) << 0.125;
        QTest::newRow("e5m2") << Format::fp8_e5m2 << 5 << 2 << 15 << 57344.0 << std::ldexp(1.0, -14)
                              << std::ldexp(1.0, -16) << 0.25;
    }
    void constants() {
        QFETCH(Format, format);
        QFETCH(int, exponentBits);
        QFETCH(int, mantissaBits);
        QFETCH(int, bias);
        QFETCH(double, maxFinite);
        QFETCH(double, minNormal);
        QFETCH(double, minSubnormal);
        QFETCH(double, epsilon);
        const FormatInfo& i = format_info(format);
        QCOMPARE(i.exponent_bits, exponentBits);
        QCOMPARE(i.mantissa_bits, mantissaBits);
        QCOMPARE(i.bias, bias);
        // Exact (fp32's and bf16's smallest subnormals are 1e-45 and 9e-41: exact_compare.h).
        QCOMPARE_EXACT(static_cast<double>(i.max_finite), maxFinite);
        QCOMPARE_EXACT(static_cast<double>(i.min_normal), minNormal);
        QCOMPARE_EXACT(static_cast<double>(i.min_subnormal), minSubnormal);
        QCOMPARE_EXACT(static_cast<double>(i.epsilon), epsilon);
        // The constants are themselves representable, and classify as expected.
        QCOMPARE_EXACT(round_to(format, i.max_finite), i.max_finite);
        QCOMPARE(classify(format, encode(format, i.min_normal)), FloatClass::normal);
        QCOMPARE(classify(format, encode(format, i.min_subnormal)), FloatClass::subnormal);
        QCOMPARE_EXACT(round_to(format, i.min_subnormal), i.min_subnormal);
    }

    void storage() {
        QCOMPARE(format_bytes(Format::fp32), 4);
        QCOMPARE(format_bytes(Format::tf32), 4);
        QCOMPARE(format_bytes(Format::fp16), 2);
        QCOMPARE(format_bytes(Format::bf16), 2);
        QCOMPARE(format_bytes(Format::fp8_e4m3), 1);
        QCOMPARE(format_bytes(Format::fp8_e5m2), 1);
        QVERIFY(!format_info(Format::fp8_e4m3).has_infinity);
        QVERIFY(format_info(Format::fp8_e5m2).has_infinity);
    }

    void parsing_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("expected");  // -1: unknown
        QTest::newRow("fp32") << "fp32" << int(Format::fp32);
        QTest::newRow("FP16 upper") << "FP16" << int(Format::fp16);
        QTest::newRow("half") << "half" << int(Format::fp16);
        QTest::newRow("bfloat16") << "bfloat16" << int(Format::bf16);
        QTest::newRow("tf32") << "tf32" << int(Format::tf32);
        QTest::newRow("fp8-e4m3") << "fp8-e4m3" << int(Format::fp8_e4m3);
        QTest::newRow("e4m3") << "e4m3" << int(Format::fp8_e4m3);
        QTest::newRow("fp8_e5m2") << "fp8_e5m2" << int(Format::fp8_e5m2);
        QTest::newRow("unknown") << "fp12" << -1;
        QTest::newRow("empty") << "" << -1;
    }
    void parsing() {
        QFETCH(QString, name);
        QFETCH(int, expected);
        const auto f = parse_format(name.toStdString());
        QCOMPARE(f ? int(*f) : -1, expected);
        if (f) QCOMPARE(parse_format(format_name(*f)), f);
    }
};

QTEST_APPLESS_MAIN(TestFormats)
#include "test_formats.moc"
