// The CUDA kernels' conversion functions (engine/backend/cuda/kernels/convert.cuh), compiled for
// the host, against the CPU's definition (numeric/convert.h), bit for bit: every stored pattern of
// the 8- and 16-bit formats decoded, and millions of FP32 values encoded and rounded, with and
// without saturation. The host versions of CUDA's intrinsics (__float2half_rn,
// __float2bfloat16_rn, __nv_cvt_float_to_fp8) are NVIDIA's emulations of the device
// instructions; the GPU suite checks the device itself (test_gpu_equivalence).
#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "backend/cuda/kernels/convert.cuh"
#include "numeric/convert.h"
#include "numeric/stats.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {

std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}

// FP32 patterns that exercise rounding: every exponent, mantissas near the halfway points of
// every target, the edges, and random ones.
std::vector<std::uint32_t> probe_patterns() {
    std::vector<std::uint32_t> out;
    const std::uint32_t lows[] = {
        0u,       1u,       0x7ffu,    0x800u,    0xfffu,    0x1000u,   0x1001u,
        0x7fffu,  0x8000u,  0x8001u,   0xffffu,   0x10000u,  0x17fffu,  0x18000u,
        0x3ffffu, 0x40000u, 0x7fffffu, 0x400000u, 0x0fffffu, 0x100000u, 0x0fffffu | 0x100000u};
    for (std::uint32_t sign : {0u, 0x80000000u})
        for (std::uint32_t e = 0; e < 256; ++e)
            for (std::uint32_t top = 0; top < 8; ++top)
                for (std::uint32_t low : lows)
                    out.push_back(sign | (e << 23) | (top << 20) | (low & 0xfffffu) | (low & 0x700000u));
    std::mt19937 rng(7);
    for (int i = 0; i < 3000000; ++i) out.push_back(static_cast<std::uint32_t>(rng()));
    return out;
}

}  // namespace

class TestCudaConvert : public QObject {
    Q_OBJECT
private slots:
    void decode_every_pattern_data() {
        QTest::addColumn<Format>("format");
        for (Format f : {Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2})
            QTest::newRow(std::string(format_name(f)).c_str()) << f;
    }
    void decode_every_pattern() {
        QFETCH(Format, format);
        const std::uint32_t count = format_info(format).storage_bits == 16 ? 65536u : 256u;
        for (std::uint32_t b = 0; b < count; ++b) {
            const std::uint32_t got = bits(cuda::decode_value(static_cast<int>(format), b));
            const std::uint32_t want = bits(decode(format, b));
            if (got != want)
                QFAIL(
                    qPrintable(QString("pattern 0x%1: 0x%2, CPU 0x%3").arg(b, 0, 16).arg(got, 0, 16).arg(want, 0, 16)));
        }
    }

    void encode_and_round_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<bool>("saturate");
        for (Format f : all_formats)
            for (bool s : {false, true})
                QTest::addRow("%s%s", std::string(format_name(f)).c_str(), s ? "-saturate" : "") << f << s;
    }
    void encode_and_round() {
        QFETCH(Format, format);
        QFETCH(bool, saturate);
        static const std::vector<std::uint32_t> patterns = probe_patterns();
        const Overflow overflow = saturate ? Overflow::saturate : Overflow::to_inf;
        const int fmt = static_cast<int>(format);
        for (std::uint32_t u : patterns) {
            const float x = std::bit_cast<float>(u);
            if (format != Format::fp32) {
                const std::uint32_t got = cuda::encode_value(fmt, x, saturate);
                const std::uint32_t want = encode(format, x, overflow);
                if (got != want)
                    QFAIL(qPrintable(
                        QString("encode 0x%1: 0x%2, CPU 0x%3").arg(u, 0, 16).arg(got, 0, 16).arg(want, 0, 16)));
            }
            // round_value: what a tensor of the format holds; fp32 keeps everything (as round_array).
            const std::uint32_t r = bits(cuda::round_value(fmt, x, saturate));
            const std::uint32_t want_r = format == Format::fp32 ? u : bits(round_to(format, x, overflow));
            if (r != want_r)
                QFAIL(qPrintable(QString("round 0x%1: 0x%2, CPU 0x%3").arg(u, 0, 16).arg(r, 0, 16).arg(want_r, 0, 16)));
        }
    }

    void min_normal_bits_match_the_formats() {
        for (Format f : all_formats)
            QCOMPARE(cuda::min_normal_bits(static_cast<int>(f)), bits(format_info(f).min_normal));
    }

    void exponent_of_matches() {
        for (std::uint32_t u : {1u, 2u, 3u, 0x7fffffu, 0x800000u, 0x3f800000u, 0x3fffffffu, 0x7f7fffffu, 0x00400000u,
                                0x80000001u, 0xbf800000u})
            QCOMPARE(cuda::exponent_of_value(std::bit_cast<float>(u)), exponent_of(std::bit_cast<float>(u)));
        std::mt19937 rng(3);
        for (int i = 0; i < 100000; ++i) {
            const std::uint32_t u = static_cast<std::uint32_t>(rng()) & 0x7f7fffffu;
            if ((u & 0x7fffffffu) == 0) continue;
            QCOMPARE(cuda::exponent_of_value(std::bit_cast<float>(u)), exponent_of(std::bit_cast<float>(u)));
        }
    }
};

QTEST_APPLESS_MAIN(TestCudaConvert)
#include "test_convert.moc"
