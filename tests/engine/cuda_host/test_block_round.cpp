// The CUDA kernels' block-scaled operand rounding (engine/backend/cuda/kernels/block_round.cuh),
// compiled for the host and run block by block as the kernel's threads run them, against the
// CPU's round_block_operand (numeric/block_round.cpp), bit for bit: every block format, blocks
// along rows and along columns (strided), whole and partial blocks, fp32 and bf16 sources, to
// nearest and stochastically; edge blocks (all zeros, a NaN, an infinity, an amax at a power of
// two, subnormal amaxes, amaxes near FLT_MAX); NVFP4's tensor scale and its factor. The values go
// out as bf16: the test also holds that bf16 keeps every value the CPU gives, except those below
// 2^-133, which it rounds (block_round.cuh says so). The GPU suite runs the kernel itself
// (test_gpu_equivalence).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "backend/cuda/block_operand_args.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/stochastic_round.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

// A tensor's values: blocks of varied magnitude (so that block scales differ), with edge blocks
// placed along K where the shape's blocks along K start.
std::vector<float> probe_values(std::size_t outer, std::size_t K, std::size_t inner, std::uint32_t seed, bool edges) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-30, 30);
    std::vector<float> x(outer * K * inner);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t k0 = 0; k0 < K; k0 += 8) {
            const float scale = std::ldexp(1.0f, exponent(rng));
            for (std::size_t k = k0; k < std::min(K, k0 + 8); ++k)
                for (std::size_t i = 0; i < inner; ++i) x[(o * K + k) * inner + i] = normal(rng) * scale;
        }
    if (!edges || outer < 2) return x;
    const float inf = std::numeric_limits<float>::infinity();
    auto at = [&](std::size_t o, std::size_t k, std::size_t i) -> float& { return x[(o * K + k) * inner + i]; };
    for (std::size_t k = 0; k < K; ++k)
        for (std::size_t i = 0; i < inner; ++i) at(0, k, i) = 0.0f;  // all-zero blocks
    at(0, 1, 0) = -0.0f;
    at(1, 0, 0) = std::numeric_limits<float>::quiet_NaN();  // a NaN block
    if (inner > 1) at(1, 0, inner - 1) = -inf;              // an infinite one
    if (outer > 2)
        for (std::size_t k = 0; k < K; ++k)
            for (std::size_t i = 0; i < inner; ++i) {
                float& v = at(2, k, i);
                v = k % 3 == 0 ? 4.0f : std::ldexp(normal(rng), 1) * 0.99f;  // amax at a power of two, 4
                if (k >= 32) v = std::ldexp(normal(rng), -140);              // subnormal amaxes beyond 32
            }
    if (outer > 3)
        for (std::size_t k = 0; k < K; ++k)
            for (std::size_t i = 0; i < inner; ++i) at(3, k, i) = std::ldexp(normal(rng), 126);  // near FLT_MAX
    return x;
}

struct Shape {
    std::size_t outer, K, inner;
};

}  // namespace

class TestCudaBlockRound : public QObject {
    Q_OBJECT

private slots:
    void matches_the_cpu_data() {
        QTest::addColumn<BlockFormat>("format");
        QTest::addColumn<int>("shape");
        QTest::addColumn<bool>("bf16_source");
        QTest::addColumn<bool>("stochastic");
        for (BlockFormat f : all_block_formats)
            for (int shape = 0; shape < 4; ++shape)
                for (bool bf16 : {false, true})
                    for (bool stochastic : {false, true}) {
                        const QByteArray name = QByteArray(block_format_name(f).data()) + " shape " +
                                                QByteArray::number(shape) + (bf16 ? " bf16" : " fp32") +
                                                (stochastic ? " stochastic" : " nearest");
                        QTest::newRow(name.constData()) << f << shape << bf16 << stochastic;
                    }
    }
    // Each block as one kernel thread rounds it, against the CPU's round_block_operand.
    void matches_the_cpu() {
        QFETCH(BlockFormat, format);
        QFETCH(int, shape);
        QFETCH(bool, bf16_source);
        QFETCH(bool, stochastic);
        // Rows with whole and partial blocks (a last layer's 10 outputs; 70 = 2·32 + 6); columns
        // (blocks along a strided K: dgrad's W, wgrad's dy and x) whole and partial.
        const Shape shapes[] = {{5, 70, 1}, {4, 64, 1}, {1, 45, 7}, {4, 40, 3}};
        const Shape s = shapes[shape];
        const std::size_t n = s.outer * s.K * s.inner;
        std::vector<float> x = probe_values(s.outer, s.K, s.inner, 17u + static_cast<std::uint32_t>(shape), true);
        std::vector<std::uint16_t> source16(n);
        if (bf16_source)
            for (std::size_t i = 0; i < n; ++i) {
                source16[i] = static_cast<std::uint16_t>(cuda::encode_bf16(x[i], false));
                x[i] = cuda::decode_bf16(source16[i]);
            }
        const std::uint64_t key = 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(shape);

        const float tensor_scale = block_tensor_scale(format, x.data(), n);
        std::vector<float> expected(n);
        const float factor = round_block_operand(format, x.data(), expected.data(), s.outer, s.K, s.inner, tensor_scale,
                                                 stochastic ? std::optional<std::uint64_t>(key) : std::nullopt);

        // The kernel's tensor amax (block_tensor_amax_kernel's terms), scale and factor.
        cuda::BlockOperandArgs a = cuda::block_operand_args(format);
        std::uint32_t amax = 0;
        for (float v : x) amax = std::max(amax, cuda::finite_magnitude_bits(v));
        const float device_scale = a.nvfp4 ? cuda::nvfp4_scale_of(std::bit_cast<float>(amax)) : 1.0f;
        QCOMPARE(std::bit_cast<std::uint32_t>(device_scale), std::bit_cast<std::uint32_t>(tensor_scale));
        QCOMPARE(std::bit_cast<std::uint32_t>(1.0f / device_scale), std::bit_cast<std::uint32_t>(factor));

        std::vector<std::uint16_t> out(n, 0xFFFFu);
        a.src = bf16_source ? static_cast<const void*>(source16.data()) : static_cast<const void*>(x.data());
        a.src_fmt = static_cast<int>(bf16_source ? Format::bf16 : Format::fp32);
        a.dst = out.data();
        a.outer = static_cast<std::int64_t>(s.outer);
        a.K = static_cast<std::int64_t>(s.K);
        a.inner = static_cast<std::int64_t>(s.inner);
        const std::uint64_t device_key = key;
        a.key = stochastic ? &device_key : nullptr;
        for (std::int64_t b = 0; b < a.blocks(); ++b) cuda::round_operand_block(a, b, device_scale, device_key);

        const std::uint32_t bf16_smallest = 0x00010000u;  // 2^-133, bf16's smallest subnormal
        int mismatches = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const float got = cuda::decode_bf16(out[i]);
            const float want = expected[i];
            if (std::isnan(want)) {
                if (!std::isnan(got) && ++mismatches <= 5) qWarning("value %zu: NaN expected, got %g", i, double(got));
                continue;
            }
            const std::uint32_t magnitude = std::bit_cast<std::uint32_t>(want) & 0x7FFFFFFFu;
            // Exact wherever bf16 holds the value; below 2^-133, bf16's rounding of it.
            const float held =
                magnitude >= bf16_smallest || magnitude == 0 ? want : cuda::decode_bf16(cuda::encode_bf16(want, false));
            if (magnitude >= bf16_smallest && cuda::decode_bf16(cuda::encode_bf16(want, false)) != want)
                QFAIL(qPrintable(QString("value %1 = %2 is not a bf16 value").arg(i).arg(double(want))));
            if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(held) && ++mismatches <= 5)
                qWarning("value %zu: %.9g expected, %.9g from the kernel's arithmetic", i, double(held), double(got));
        }
        QCOMPARE(mismatches, 0);
    }

    // A convolution's block-scaled weight gradient: the CPU rounds a chunk's dy channel-major
    // (Co, rows) along its rows with the key stochastic_key(dy_key, first sample); the device holds
    // the chunk row-major (rows, Co) and rounds the (1, rows, Co) view with key_pass and the CPU's
    // random index (k_major_index): the same values, transposed.
    void conv_weight_gradient_chunk_matches_the_cpu() {
        const std::size_t channels = 5, rows = 70;
        const std::vector<float> cpu_layout = probe_values(channels, rows, 1, 23u, true);
        std::vector<float> device_layout(rows * channels);
        for (std::size_t c = 0; c < channels; ++c)
            for (std::size_t r = 0; r < rows; ++r) device_layout[r * channels + c] = cpu_layout[c * rows + r];
        const std::uint64_t dy_key = 0xC0FFEEull, first = 96;
        for (BlockFormat format : all_block_formats) {
            const float tensor_scale = block_tensor_scale(format, cpu_layout.data(), cpu_layout.size());
            std::vector<float> expected(cpu_layout.size());
            round_block_operand(format, cpu_layout.data(), expected.data(), channels, rows, 1, tensor_scale,
                                stochastic_key(dy_key, first));
            cuda::BlockOperandArgs a = cuda::block_operand_args(format);
            std::vector<std::uint16_t> out(device_layout.size());
            a.src = device_layout.data();
            a.src_fmt = static_cast<int>(Format::fp32);
            a.dst = out.data();
            a.outer = 1;
            a.K = static_cast<std::int64_t>(rows);
            a.inner = static_cast<std::int64_t>(channels);
            a.key = &dy_key;
            a.key_pass = static_cast<std::int64_t>(first);
            a.k_major_index = true;
            const std::uint64_t key = cuda::block_pass_key(a, dy_key);
            for (std::int64_t b = 0; b < a.blocks(); ++b) cuda::round_operand_block(a, b, tensor_scale, key);
            int mismatches = 0;
            for (std::size_t c = 0; c < channels; ++c)
                for (std::size_t r = 0; r < rows; ++r) {
                    const float want = expected[c * rows + r], got = cuda::decode_bf16(out[r * channels + c]);
                    const float held = cuda::decode_bf16(cuda::encode_bf16(want, false));
                    mismatches +=
                        !(std::isnan(want) ? std::isnan(got)
                                           : std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(held));
                }
            QVERIFY2(mismatches == 0,
                     qPrintable(QString("%1: %2 values differ").arg(block_format_name(format).data()).arg(mismatches)));
        }
    }

    // The scale edge cases, one block each, against the spec's rule: a block of
    // zeros takes MX's smallest scale, an amax at a power of two its own exponent minus emax, a
    // subnormal amax the clamp at -127, and NVFP4's E4M3 scale saturates at 448.
    void scale_rule_on_edge_blocks() {
        for (BlockFormat f : all_block_formats) {
            const cuda::BlockOperandArgs a = cuda::block_operand_args(f);
            const int emax = element_format_info(block_format_info(f).element).emax;
            for (float amax : {0.0f, 1.0f, 4.0f, 0.75f, 3.0e38f, std::ldexp(1.0f, -140), std::ldexp(1.0f, -126)}) {
                // (NVFP4 with a tensor scale of 1: the block scale is amax / 6 on the E4M3 grid.)
                const cuda::BlockParameters p = cuda::block_parameters(a.nvfp4, a.grid, 1.0f, amax, false, false);
                if (a.nvfp4) {
                    const float block_scale = amax * (1.0f / 6.0f);
                    QCOMPARE(p.decode, round_to(Format::fp8_e4m3, block_scale, Overflow::saturate));
                    continue;
                }
                const int e = amax == 0 || !std::isnormal(amax) ? -127 : std::max(-127, std::ilogb(amax) - emax);
                QCOMPARE(p.decode, std::ldexp(1.0f, e));
                QCOMPARE(p.encode, std::ldexp(1.0f, -e));
            }
            const cuda::BlockParameters nan = cuda::block_parameters(a.nvfp4, a.grid, 1.0f, 1.0f, true, false);
            QVERIFY(std::isnan(nan.decode));
            QCOMPARE(nan.encode, 0.0f);
        }
    }

    void nvfp4_tensor_scale_matches() {
        for (float amax :
             {0.0f, 1.0f, 2688.0f, 1.0e-30f, std::ldexp(1.0f, -149), 3.4e38f, std::numeric_limits<float>::infinity()})
            QCOMPARE(std::bit_cast<std::uint32_t>(cuda::nvfp4_scale_of(amax)),
                     std::bit_cast<std::uint32_t>(nvfp4_tensor_scale(amax)));
    }
};

QTEST_APPLESS_MAIN(TestCudaBlockRound)
#include "test_block_round.moc"
