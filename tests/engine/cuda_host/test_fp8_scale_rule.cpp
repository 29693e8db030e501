// The CUDA kernels' FP8 scale rule and rowwise rounding (engine/backend/cuda/kernels/
// fp8_scale_rule.cuh), compiled for the host and run as the kernels run them, against the CPU's
// definitions, bit for bit: the scale of every recipe (AmaxHistory's delayed update and current
// scaling's use_amax, with margins and power-of-two scales, on amaxes from subnormal to FLT_MAX, 0,
// inf and NaN), and rowwise scaling's values and tensor amax (round_axiswise_fp8, to nearest and
// stochastically, e4m3 and e5m2, runs along rows and along strided columns, fp32 and bf16
// sources, rows of zeros, a NaN, an infinity, huge and tiny values). The GPU suite runs the kernels
// themselves (test_gpu_equivalence).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/amax_history.h"
#include "backend/cuda/kernels/fp8_scale_rule.cuh"
#include "numeric/block_format.h"
#include "numeric/format.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)

namespace {

std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}

std::vector<float> probe_amaxes() {
    std::vector<float> a = {0.0f,
                            std::ldexp(1.0f, -149),
                            std::ldexp(1.0f, -130) * 3.0f,
                            std::numeric_limits<float>::min(),
                            1e-20f,
                            0.1f,
                            1.0f,
                            3.0f,
                            448.0f,
                            57344.0f,
                            1e30f,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-140, 127);
    for (int i = 0; i < 200; ++i) a.push_back(std::ldexp(mantissa(rng), exponent(rng)));
    return a;
}

}  // namespace

class TestCudaFp8ScaleRule : public QObject {
    Q_OBJECT

private slots:
    void power_of_two_below_is_ldexp_of_ilogb() {
        for (float x : probe_amaxes()) {
            if (!(x > 0.0f) || !std::isfinite(x)) continue;
            QCOMPARE(bits(cuda::power_of_two_below(x)), bits(std::ldexp(1.0f, std::ilogb(x))));
        }
    }

    // Current scaling (use_amax: 1 where the rule gives none) and the delayed update (kept where it
    // gives none), each with margins and power-of-two scales, for both FP8 maxima.
    void scales_match_amax_history() {
        for (float fp8_max : {448.0f, 57344.0f})
            for (int margin : {0, 1, 3, -2})
                for (bool power_of_two : {false, true})
                    for (float amax : probe_amaxes()) {
                        const float device = cuda::fp8_scale_for(amax, fp8_max, margin, power_of_two);
                        AmaxHistory current(4, margin, AmaxAlgo::max, fp8_max);
                        current.set_power_of_two(power_of_two);
                        current.set_scaling(Fp8Scaling::current);
                        current.use_amax(amax);
                        QCOMPARE(bits(device > 0.0f ? device : 1.0f), bits(current.scale()));
                        QCOMPARE(bits(1.0f / (device > 0.0f ? device : 1.0f)), bits(current.scale_inv()));

                        AmaxHistory delayed(1, margin, AmaxAlgo::most_recent, fp8_max);
                        delayed.set_power_of_two(power_of_two);
                        delayed.record(amax);
                        delayed.update();
                        QCOMPARE(bits(device > 0.0f ? device : 1.0f), bits(delayed.scale()));
                    }
    }

    void rowwise_matches_the_cpu_data() {
        QTest::addColumn<Format>("element");
        QTest::addColumn<int>("shape");
        QTest::addColumn<bool>("bf16_source");
        QTest::addColumn<bool>("stochastic");
        QTest::addColumn<bool>("power_of_two");
        for (Format e : {Format::fp8_e4m3, Format::fp8_e5m2})
            for (int shape = 0; shape < 3; ++shape)
                for (bool bf16 : {false, true})
                    for (bool stochastic : {false, true})
                        for (bool p2 : {false, true})
                            QTest::addRow("%s shape %d%s%s%s", format_name(e).data(), shape, bf16 ? " bf16" : "",
                                          stochastic ? " stochastic" : "", p2 ? " pow2" : "")
                                << e << shape << bf16 << stochastic << p2;
    }
    void rowwise_matches_the_cpu() {
        QFETCH(Format, element);
        QFETCH(int, shape);
        QFETCH(bool, bf16_source);
        QFETCH(bool, stochastic);
        QFETCH(bool, power_of_two);
        struct Shape {
            std::int64_t outer, K, inner;
        };
        // Rows (the forward's x and W, dgrad's dy), columns (wgrad's dy and x, dgrad's W).
        const Shape shapes[] = {{6, 50, 1}, {1, 40, 9}, {3, 17, 5}};
        const Shape s = shapes[shape];
        const auto n = static_cast<std::size_t>(s.outer * s.K * s.inner);
        std::mt19937 rng(static_cast<std::uint32_t>(31 + shape));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_int_distribution<int> exponent(-20, 20);
        std::vector<float> x(n);
        for (float& v : x) v = std::ldexp(normal(rng), exponent(rng));
        // Edge runs: zeros, a NaN, an infinity, huge and tiny values (runs 0..4 of the first slice).
        const float inf = std::numeric_limits<float>::infinity();
        auto at = [&](std::int64_t run, std::int64_t k) -> float& {
            const std::int64_t i = run % s.inner, o = run / s.inner;
            return x[static_cast<std::size_t>((o * s.K + k) * s.inner + i)];
        };
        const std::int64_t runs = s.outer * s.inner;
        for (std::int64_t k = 0; k < s.K; ++k) {
            if (runs > 0) at(0, k) = 0.0f;
            if (runs > 3) at(3, k) = std::ldexp(normal(rng), 120);
            if (runs > 4) at(4, k) = std::ldexp(normal(rng), -135);
        }
        if (runs > 1) at(1, 2) = std::numeric_limits<float>::quiet_NaN();
        if (runs > 2) at(2, 1) = -inf;
        std::vector<std::uint16_t> source16(n);
        if (bf16_source)
            for (std::size_t i = 0; i < n; ++i) {
                source16[i] = static_cast<std::uint16_t>(cuda::encode_bf16(x[i], false));
                x[i] = cuda::decode_bf16(source16[i]);
            }

        const int margin = 1;
        const std::uint64_t key = 0x1234567887654321ull + static_cast<std::uint64_t>(shape);
        std::vector<float> expected(n);
        const float cpu_amax =
            stochastic ? round_axiswise_fp8_stochastic(element, x.data(), expected.data(),
                                                       static_cast<std::size_t>(s.outer), static_cast<std::size_t>(s.K),
                                                       static_cast<std::size_t>(s.inner), margin, power_of_two, key)
                       : round_axiswise_fp8(element, x.data(), expected.data(), static_cast<std::size_t>(s.outer),
                                            static_cast<std::size_t>(s.K), static_cast<std::size_t>(s.inner), margin,
                                            power_of_two);

        const FormatInfo& f = format_info(element);
        std::vector<float> out(n, -1.0f);
        cuda::RowwiseArgs a;
        a.src = bf16_source ? static_cast<const void*>(source16.data()) : static_cast<const void*>(x.data());
        a.src_fmt = static_cast<int>(bf16_source ? Format::bf16 : Format::fp32);
        a.dst = out.data();
        a.outer = s.outer;
        a.K = s.K;
        a.inner = s.inner;
        a.grid = {f.mantissa_bits, f.min_exponent, f.max_exponent, f.max_finite};
        a.margin = margin;
        a.power_of_two = power_of_two;
        a.key = stochastic ? &key : nullptr;
        std::uint32_t amax = 0;
        for (std::int64_t r = 0; r < a.runs(); ++r) amax = std::max(amax, cuda::round_rowwise_run(a, r, key));
        QCOMPARE(amax, bits(cpu_amax));
        int mismatches = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const bool same = bits(out[i]) == bits(expected[i]) || (std::isnan(out[i]) && std::isnan(expected[i]));
            if (!same && ++mismatches <= 5)
                qWarning("value %zu (%g): %.9g expected, %.9g from the kernel's arithmetic", i, double(x[i]),
                         double(expected[i]), double(out[i]));
        }
        QCOMPARE(mismatches, 0);
    }
};

QTEST_APPLESS_MAIN(TestCudaFp8ScaleRule)
#include "test_fp8_scale_rule.moc"
