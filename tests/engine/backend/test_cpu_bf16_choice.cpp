// The CPU backend's matmul path for bf16 operands (engine/backend/cpu/cpu_bf16_choice.h):
// - the decision from timings: medians, and bf16 only when at least 10% faster;
// - the measurement made once per process is what a CpuMatmul takes, and its numbers are real;
// - MANTISSA_CPU_BF16_MATMUL=0/1 overrides it (never the bf16 primitive where oneDNN has none);
// - both paths give the same products up to summation order, and exactly on small sums;
// - operands that are not bf16 values the bf16 primitive multiplies exactly take the FP32 one;
// - the path is in the backend's device name and set by name (what a checkpoint restores).
#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "error.h"

using namespace mantissa;

namespace {

// Unsets MANTISSA_CPU_BF16_MATMUL while alive, or sets it, and puts the old value back.
class EnvOverride {
public:
    explicit EnvOverride(const char* value) {
        if (const char* old = std::getenv(name)) m_old = old, m_had = true;
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~EnvOverride() {
        if (m_had)
            setenv(name, m_old.c_str(), 1);
        else
            unsetenv(name);
    }

private:
    static constexpr const char* name = "MANTISSA_CPU_BF16_MATMUL";
    std::string m_old;
    bool m_had = false;
};

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

}  // namespace

class TestCpuBf16Choice : public QObject {
    Q_OBJECT
private slots:
    void decidesByMediansAndTheMargin_data() {
        QTest::addColumn<std::vector<double>>("fp32");
        QTest::addColumn<std::vector<double>>("bf16");
        QTest::addColumn<bool>("chosen");
        QTest::newRow("bf16 twice as slow") << std::vector<double>{1, 1, 1} << std::vector<double>{2, 2, 2} << false;
        QTest::newRow("bf16 5% faster: not clear")
            << std::vector<double>{1, 1, 1} << std::vector<double>{0.95, 0.95, 0.95} << false;
        QTest::newRow("bf16 20% faster") << std::vector<double>{1, 1, 1} << std::vector<double>{0.8, 0.8, 0.8} << true;
        QTest::newRow("one slow outlier in fp32 does not decide")
            << std::vector<double>{1, 9, 1} << std::vector<double>{0.95, 0.95, 0.95} << false;
        QTest::newRow("one fast outlier in bf16 does not decide")
            << std::vector<double>{1, 1, 1} << std::vector<double>{2, 0.1, 2} << false;
    }
    void decidesByMediansAndTheMargin() {
        QFETCH(std::vector<double>, fp32);
        QFETCH(std::vector<double>, bf16);
        QFETCH(bool, chosen);
        const Bf16MatmulChoice c = decide_bf16_matmul(fp32, bf16);
        QCOMPARE(c.bf16, chosen);
        QVERIFY(c.available);
        QVERIFY2(contains(c.why, "measured: bf16 "), c.why.c_str());
    }

    void noBf16MatmulMeansFp32WithoutTiming() {
        int runs = 0;
        const Bf16MatmulChoice c = measure_bf16_matmul([&](bool bf16) {
            ++runs;
            return !bf16;
        });
        QVERIFY(!c.bf16);
        QVERIFY(!c.available);
        QCOMPARE(runs, 2);  // one FP32 warm-up, then the failed bf16 one
        QVERIFY2(contains(c.why, "no bf16 matmul"), c.why.c_str());
    }

    void theMeasuredChoiceIsTakenAndReported() {
        const EnvOverride none(nullptr);
        const auto t0 = std::chrono::steady_clock::now();
        const Bf16MatmulChoice& c = CpuMatmul::measured_bf16_choice();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        qInfo("%s: %s (FP32 %.3f ms, bf16 %.3f ms per 256x512x512 product; measured in %.0f ms)",
              CpuMatmul::isa_name().c_str(), c.why.c_str(), c.fp32_ms, c.bf16_ms, ms);
        QCOMPARE(&CpuMatmul::measured_bf16_choice(), &c);  // once per process
        QCOMPARE(c.available, CpuMatmul::bf16_available());
        if (c.available) {
            QVERIFY(c.fp32_ms > 0 && c.bf16_ms > 0);
            QCOMPARE(c.bf16, c.bf16_ms <= bf16_margin * c.fp32_ms);
        } else {
            QVERIFY(!c.bf16);
        }
        QVERIFY2(ms < 2000, "the measurement should cost well under 100 ms on an idle core");
        const CpuMatmul mm;
        QCOMPARE(mm.bf16_enabled(), c.bf16);
        const auto cpu = make_backend("cpu", 0, 1);
        QCOMPARE(cpu->bf16_matmul_path(), std::string(c.bf16 ? "bf16" : "fp32"));
        QVERIFY2(contains(cpu->device_name(), ", bf16 matmul: " + mm.bf16_path() + ")"), cpu->device_name().c_str());
    }

    void theEnvironmentOverrides() {
        {
            const EnvOverride off("0");
            const CpuMatmul mm;
            QVERIFY(!mm.bf16_enabled());
            QCOMPARE(mm.bf16_path(), std::string("FP32 on bf16 values"));
            QVERIFY(contains(make_backend("cpu", 0, 1)->device_name(), "bf16 matmul: FP32 on bf16 values"));
        }
        {
            const EnvOverride on("1");
            const CpuMatmul mm;
            QCOMPARE(mm.bf16_enabled(), CpuMatmul::bf16_available());
            if (CpuMatmul::bf16_available()) {
                QCOMPARE(mm.bf16_path(), std::string("oneDNN bf16"));
                QVERIFY(contains(make_backend("cpu", 0, 1)->device_name(), "bf16 matmul: oneDNN bf16"));
            }
        }
    }

    // Products of bf16 values are exact in FP32: sums of few small ones are exact on either path,
    // longer ones agree to FP32 rounding of the summation.
    void bothPathsGiveTheSameProducts() {
        const std::int64_t m = 48, n = 40, k = 300;
        std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
        for (std::size_t i = 0; i < a.size(); ++i)
            a[i] = std::ldexp(static_cast<float>(static_cast<int>(i * 7 % 255) - 127), -static_cast<int>(i % 9));
        for (std::size_t i = 0; i < b.size(); ++i)
            b[i] = std::ldexp(static_cast<float>(static_cast<int>(i * 5 % 251) - 125), -static_cast<int>(i % 7));
        CpuMatmul fp32, bf16;
        fp32.set_bf16_enabled(false);
        bf16.set_bf16_enabled(true);
        std::vector<float> c32(static_cast<std::size_t>(m * n)), c16(c32.size());
        fp32.multiply(a.data(), false, b.data(), false, c32.data(), m, n, k, true);
        bf16.multiply(a.data(), false, b.data(), false, c16.data(), m, n, k, true);
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double ref = 0, mag = 0;
                for (std::int64_t p = 0; p < k; ++p) {
                    const double prod =
                        double(a[static_cast<std::size_t>(i * k + p)]) * b[static_cast<std::size_t>(p * n + j)];
                    ref += prod;
                    mag += std::fabs(prod);
                }
                const std::size_t at = static_cast<std::size_t>(i * n + j);
                const double tol = 1e-6 * mag;
                QVERIFY2(std::fabs(c32[at] - ref) <= tol && std::fabs(c16[at] - ref) <= tol,
                         qPrintable(QString("(%1, %2): fp32 %3, bf16 %4, reference %5")
                                        .arg(i)
                                        .arg(j)
                                        .arg(c32[at])
                                        .arg(c16[at])
                                        .arg(ref)));
            }
        // Small integers: every partial sum exact, so the two paths agree bit for bit.
        std::vector<float> x(64 * 32, 3.0f), y(32 * 16, -2.0f), z32(64 * 16), z16(64 * 16);
        fp32.multiply(x.data(), false, y.data(), false, z32.data(), 64, 16, 32, true);
        bf16.multiply(x.data(), false, y.data(), false, z16.data(), 64, 16, 32, true);
        QCOMPARE(z16, z32);
        QCOMPARE(z32[0], -192.0f);
    }

    // Below FP32's normal range (docs/numerics.md, "The bf16 matmul path, chosen by measurement"):
    // a subnormal operand, which the CPU's bf16 dot product would read as zero, sends the call to
    // the FP32 primitive, so both paths keep it; a subnormal product of normal operands the FP32
    // path keeps and the bf16 one may flush, giving nothing but the exact value or zero.
    void subnormalOperandsTakeFp32AndSubnormalProductsAreExactOrZero() {
        const std::int64_t m = 16, n = 16, k = 64;
        CpuMatmul fp32, bf16;
        fp32.set_bf16_enabled(false);
        bf16.set_bf16_enabled(true);
        // a's first column times b's first row: one product per output, the rest zeros.
        for (const auto& [a_value, b_value, bf16_exact] :
             {std::tuple{std::ldexp(1.0f, -130), 1.0f, true},                     // a subnormal operand
              std::tuple{-std::ldexp(3.0f, -128), 1.0f, true},                    // a negative one
              std::tuple{std::ldexp(1.0f, -140), std::ldexp(1.0f, 10), true},     // below bf16's subnormals
              std::tuple{std::ldexp(1.0f, -70), std::ldexp(1.0f, -60), false}}) { // a subnormal product
            std::vector<float> a(static_cast<std::size_t>(m * k), 0.0f), b(static_cast<std::size_t>(k * n), 0.0f);
            for (std::int64_t i = 0; i < m; ++i) a[static_cast<std::size_t>(i * k)] = a_value;
            for (std::int64_t j = 0; j < n; ++j) b[static_cast<std::size_t>(j)] = b_value;
            std::vector<float> c32(static_cast<std::size_t>(m * n)), c16(c32.size());
            fp32.multiply(a.data(), false, b.data(), false, c32.data(), m, n, k, true);
            bf16.multiply(a.data(), false, b.data(), false, c16.data(), m, n, k, true);
            const auto exact = static_cast<float>(double(a_value) * double(b_value));
            // Compared with ==: QCOMPARE takes any subnormal as equal to zero.
            for (std::size_t i = 0; i < c32.size(); ++i) {
                QVERIFY2(c32[i] == exact, qPrintable(QString("FP32 path: %1, not %2").arg(c32[i]).arg(exact)));
                QVERIFY2(c16[i] == exact || (!bf16_exact && c16[i] == 0.0f),
                         qPrintable(QString("bf16 path: %1, not %2").arg(c16[i]).arg(exact)));
            }
        }
    }

    // Operands promised as bf16 values that are not (one value with bits below bf16's, in A or in
    // B; A's copy kept for the next product) are multiplied by the FP32 primitive: the FP32 path's
    // bits, not those of truncated copies. A next product on exact values gives the
    // same bits again (which path it took, the test cannot see: small sums are exact on both).
    void operandsThatAreNotBf16ValuesTakeTheFp32Primitive() {
        const std::int64_t m = 24, n = 20, k = 40;
        std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 11) - 5) * 0.25f;
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.5f;
        CpuMatmul fp32, bf16;
        fp32.set_bf16_enabled(false);
        bf16.set_bf16_enabled(true);
        std::vector<float> c32(static_cast<std::size_t>(m * n)), c16(c32.size());
        auto both = [&](bool a_unchanged) {
            fp32.multiply(a.data(), false, b.data(), false, c32.data(), m, n, k, true);
            bf16.multiply(a.data(), false, b.data(), false, c16.data(), m, n, k, true, a_unchanged);
            QCOMPARE(c16, c32);
        };
        a[5] = 1.0f + std::ldexp(1.0f, -12);  // A not a bf16 value (13 significant bits)
        both(false);
        both(true);  // A's copy kept, and known not to be exact
        a[5] = 1.0f;
        b[7] = 0.5f + std::ldexp(1.0f, -10);  // B not a bf16 value
        both(false);
        // A truncated copy would have lost b[7]'s low bit, a[0] · 2^-10 = -1.25 · 2^-10 in c[0, 7];
        // the product keeps it (to FP32 rounding of the sum, far below it).
        double with_low_bits = 0;
        for (std::int64_t p = 0; p < k; ++p)
            with_low_bits += double(a[static_cast<std::size_t>(p)]) * b[static_cast<std::size_t>(p * n + 7)];
        QVERIFY2(std::fabs(c16[7] - with_low_bits) < 1e-5,
                 qPrintable(QString("c[0, 7] = %1, not %2").arg(c16[7]).arg(with_low_bits)));
        b[7] = 0.5f;
        both(false);  // exact values again: the same bits on either path
    }

    void theBackendSetsThePathByName() {
        const auto cpu = make_backend("cpu", 0, 1);
        cpu->set_bf16_matmul_path("fp32");
        QCOMPARE(cpu->bf16_matmul_path(), std::string("fp32"));
        cpu->set_bf16_matmul_path("bf16");
        QCOMPARE(cpu->bf16_matmul_path(), std::string(CpuMatmul::bf16_available() ? "bf16" : "fp32"));
        QVERIFY_THROWS_EXCEPTION(Error, cpu->set_bf16_matmul_path("amx"));
    }
};

QTEST_GUILESS_MAIN(TestCpuBf16Choice)
#include "test_cpu_bf16_choice.moc"
