// Which formats a GPU can multiply in, per compute capability, and the reasons it gives when it
// cannot (engine/backend/cuda/format_support.h): a table of every format on every generation.
#include <QtTest>

#include "backend/cuda/format_support.h"

using namespace mantissa;
using namespace mantissa::cuda;
Q_DECLARE_METATYPE(mantissa::Format)

class TestCudaFormatSupport : public QObject {
    Q_OBJECT
private slots:
    void matmul_data() {
        QTest::addColumn<int>("major");
        QTest::addColumn<int>("minor");
        QTest::addColumn<Format>("format");
        QTest::addColumn<bool>("supported");
        QTest::addColumn<QString>("reasonPart");  // a part of the reason when refused
        struct Gpu {
            const char* name;
            int major, minor;
        };
        const Gpu gpus[] = {{"volta", 7, 0}, {"turing", 7, 5}, {"ampere", 8, 0},     {"ga10x", 8, 6}, {"orin", 8, 7},
                            {"ada", 8, 9},   {"hopper", 9, 0}, {"blackwell", 10, 0}, {"rtx50", 12, 0}};
        for (const Gpu& g : gpus) {
            const int cc = g.major * 10 + g.minor;
            for (Format f : all_formats) {
                bool ok = cc >= 75;
                QString reason = "needs 7.5";
                if (ok && (f == Format::tf32 || f == Format::bf16)) {
                    ok = cc >= 80;
                    reason = "compute capability 8.0 or newer";
                }
                if (ok && (f == Format::fp8_e4m3 || f == Format::fp8_e5m2)) {
                    ok = cc >= 89;
                    reason = "FP8 tensor cores";
                }
                QTest::addRow("%s-%s", g.name, std::string(format_name(f)).c_str())
                    << g.major << g.minor << f << ok << (ok ? QString() : reason);
            }
        }
    }
    void matmul() {
        QFETCH(int, major);
        QFETCH(int, minor);
        QFETCH(Format, format);
        QFETCH(bool, supported);
        QFETCH(QString, reasonPart);
        const Support s = matmul_support(format, {major, minor});
        QCOMPARE(s.supported, supported);
        if (supported) {
            QVERIFY(s.reason.empty());
        } else {
            const QString reason = QString::fromStdString(s.reason);
            QVERIFY2(reason.contains(reasonPart), qPrintable(reason));
            // The reason names this GPU's capability, so a person knows why.
            QVERIFY2(reason.contains(QString("%1.%2").arg(major).arg(minor)), qPrintable(reason));
        }
    }

    void device() {
        QVERIFY(!device_support({7, 0}).supported);
        QVERIFY(QString::fromStdString(device_support({7, 0}).reason).contains("7.5"));
        QVERIFY(device_support({7, 5}).supported);
        QVERIFY(device_support({12, 1}).supported);
    }

    void lists() {
        QCOMPARE(QString::fromStdString(format_list_text(supported_matmul_formats({7, 5}))), QString("fp32, fp16"));
        QCOMPARE(QString::fromStdString(format_list_text(supported_matmul_formats({8, 6}))),
                 QString("fp32, tf32, fp16, bf16"));
        QCOMPARE(QString::fromStdString(format_list_text(supported_matmul_formats({9, 0}))),
                 QString("fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2"));
        QVERIFY(supported_matmul_formats({6, 1}).empty());
    }

    void capability_text() {
        const ComputeCapability cc{8, 9};
        QCOMPARE(cc.value(), 89);
        QCOMPARE(QString::fromStdString(cc.text()), QString("8.9"));
        QCOMPARE(QString::fromStdString(cc.sm()), QString("sm_89"));
    }
};

QTEST_APPLESS_MAIN(TestCudaFormatSupport)
#include "test_format_support.moc"
