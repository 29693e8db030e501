// The CUDA kernels' stochastic rounding (engine/backend/cuda/kernels/stochastic.cuh: the gradients'
// and the weights') and the optimizer's element updates (optimizer_update.cuh), compiled for the
// host and run element by element as the kernels run them, against the CPU's definitions, bit for
// bit: the stochastic keys, random bits and roundings (to infinity and saturating) against
// numeric/stochastic_round.h; and the parameter, its Kahan compensation, the optimizer state and
// the update counts of every step against the CPU backend's optimizers (cpu_optimizer.cpp), for SGD
// (with and without momentum and weight decay) and AdamW, on FP32, BF16 and FP16 parameters,
// rounded to nearest, stochastically (the key of each step as the device draws it) or
// Kahan-compensated. The GPU suite runs the kernels themselves (test_gpu_equivalence).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/kernels/optimizer_update.cuh"
#include "numeric/convert.h"
#include "numeric/stochastic_round.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::WeightRounding)

namespace {

enum class Kind { sgd, sgd_momentum, adamw };

// A parameter as the CUDA backend stores it: its format's bits, 1, 2 or 4 bytes a value.
struct DeviceLike {
    Format format;
    std::vector<unsigned char> bytes;
    DeviceLike(Format f, const std::vector<float>& values)
        : format(f), bytes(values.size() * static_cast<std::size_t>(format_info(f).storage_bits / 8)) {
        for (std::size_t i = 0; i < values.size(); ++i)
            cuda::store_value(bytes.data(), static_cast<int>(f), static_cast<std::int64_t>(i), values[i], false);
    }
    float at(std::size_t i) const { return cuda::load_value(bytes.data(), static_cast<int>(format), static_cast<std::int64_t>(i)); }
    std::vector<float> values() const {
        std::vector<float> out(bytes.size() / static_cast<std::size_t>(format_info(format).storage_bits / 8));
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = at(i);
        return out;
    }
};

std::unique_ptr<Tensor> tensor(Backend& b, std::int64_t n, Format f, const std::vector<float>& values, const char* name) {
    auto t = b.allocate(TensorDesc{name, 1, n, f, MemoryCategory::workspace});
    b.upload(*t, values.data(), n);
    return t;
}

std::vector<float> read(Backend& b, const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    b.download(t, out.data(), t.numel());
    return out;
}

// The first element whose bits differ, as a sentence; empty when none does (NaNs compared as NaN).
QString first_difference(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(got[i]) && std::isnan(want[i])) continue;
        if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]))
            return QString("%1[%2]: kernel %3 (0x%4), CPU %5 (0x%6)")
                .arg(what)
                .arg(i)
                .arg(static_cast<double>(got[i]), 0, 'g', 9)
                .arg(std::bit_cast<std::uint32_t>(got[i]), 0, 16)
                .arg(static_cast<double>(want[i]), 0, 'g', 9)
                .arg(std::bit_cast<std::uint32_t>(want[i]), 0, 16);
    }
    return {};
}

// Weights of every size a network has, a few exact zeros; gradients from far below a BF16 step of
// the weight to far above it, with zeros of both signs, and (where asked) an infinity and a NaN.
void fill(std::vector<float>& w, std::vector<float>& g, Format format, unsigned seed, bool specials) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-30.0f, 2.0f);
    for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] = i % 97 == 0 ? 0.0f : round_to(format, normal(rng) * 0.1f);
        g[i] = i % 89 == 0 ? (i % 2 ? -0.0f : 0.0f) : normal(rng) * std::exp2(exponent(rng));
    }
    if (specials) {
        g[5] = std::numeric_limits<float>::infinity();
        g[6] = std::numeric_limits<float>::quiet_NaN();
    }
}

}  // namespace

class TestCudaOptimizerUpdate : public QObject {
    Q_OBJECT
private slots:
    // The device's keys and random bits are the CPU's, for seeds and passes of every size.
    void stochasticKeysAndBitsAsTheCpu() {
        std::mt19937_64 rng(3);
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t seed = i < 100 ? static_cast<std::uint64_t>(i) : rng();
            const std::uint64_t pass = i % 7 == 0 ? rng() : static_cast<std::uint64_t>(i % 1000);
            const std::uint64_t key = stochastic_key(seed, pass);
            QCOMPARE(cuda::stochastic_key(seed, pass), key);
            for (std::uint64_t index : {std::uint64_t{0}, std::uint64_t{1}, static_cast<std::uint64_t>(i), rng()})
                QCOMPARE(cuda::stochastic_bits(key, index), stochastic_bits(key, index));
        }
    }

    // Every format's stochastic rounding, over values of every binade, near the formats' edges
    // (subnormals, the largest finite values, beyond them), zeros, infinities and NaN, each with
    // random bits that round down, up and in between.
    // To infinity beyond the largest value (weights, dX, dW) and saturating (the FP8 gradient
    // operand).
    void stochasticRoundingAsTheCpu_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<bool>("saturate");
        for (Format f : {Format::bf16, Format::tf32, Format::fp16, Format::fp8_e4m3, Format::fp8_e5m2})
            for (bool saturate : {false, true})
                QTest::newRow((std::string(format_name(f)) + (saturate ? " saturating" : "")).c_str()) << f << saturate;
    }
    void stochasticRoundingAsTheCpu() {
        QFETCH(Format, format);
        QFETCH(bool, saturate);
        std::vector<float> values = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::denorm_min(), 65504.0f, 65519.0f, 65520.0f,
                                     70000.0f, 448.0f, 460.0f, 480.0f, 57344.0f, 61000.0f, 3.4e38f};
        std::mt19937 rng(11);
        for (int i = 0; i < 200000; ++i) {
            std::uint32_t bits = static_cast<std::uint32_t>(rng());
            if (i % 3 == 0) bits = (bits & 0x807FFFFFu) | ((90u + static_cast<std::uint32_t>(rng() % 60)) << 23);
            values.push_back(std::bit_cast<float>(bits));
        }
        const std::uint32_t randoms[] = {0u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 0x00000100u};
        for (std::size_t v = 0; v < values.size(); ++v) {
            const float x = values[v];
            for (int r = 0; r < 7; ++r) {
                const std::uint32_t random = r < 5 ? randoms[r] : static_cast<std::uint32_t>(rng());
                const float got = cuda::round_stochastic_value(static_cast<int>(format), x, random, saturate);
                const float want =
                    round_stochastic(format, x, random, saturate ? Overflow::saturate : Overflow::to_inf);
                if (std::isnan(got) && std::isnan(want)) continue;
                if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want))
                    QFAIL(qPrintable(QString("%1 (0x%2) with bits 0x%3: kernel %4, CPU %5")
                                         .arg(static_cast<double>(x), 0, 'g', 9)
                                         .arg(std::bit_cast<std::uint32_t>(x), 0, 16)
                                         .arg(random, 0, 16)
                                         .arg(static_cast<double>(got), 0, 'g', 9)
                                         .arg(static_cast<double>(want), 0, 'g', 9)));
            }
        }
    }

    void kernelsUpdateAsTheCpuBackend_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<Format>("format");
        QTest::addColumn<WeightRounding>("rounding");
        QTest::addColumn<double>("weightDecay");
        QTest::addColumn<bool>("specials");
        const struct {
            Kind kind;
            const char* name;
        } kinds[] = {{Kind::sgd, "sgd"}, {Kind::sgd_momentum, "sgd-momentum"}, {Kind::adamw, "adamw"}};
        for (const auto& k : kinds)
            for (Format f : {Format::fp32, Format::bf16, Format::fp16})
                for (WeightRounding r : {WeightRounding::nearest, WeightRounding::stochastic, WeightRounding::kahan})
                    for (double wd : {0.0, 0.01}) {
                        if (f == Format::fp32 && r != WeightRounding::nearest) continue;  // nothing to round
                        const char* how = r == WeightRounding::kahan        ? " kahan"
                                          : r == WeightRounding::stochastic ? " stochastic"
                                                                            : " nearest";
                        const std::string name =
                            std::string(k.name) + " " + std::string(format_name(f)) + how + (wd != 0.0 ? " decay" : "");
                        QTest::newRow(name.c_str()) << static_cast<int>(k.kind) << f << r << wd << false;
                    }
        // An infinite and a NaN gradient, through each optimizer's arithmetic and the stores.
        for (const auto& k : kinds) {
            QTest::newRow((std::string(k.name) + " bf16 kahan specials").c_str())
                << static_cast<int>(k.kind) << Format::bf16 << WeightRounding::kahan << 0.01 << true;
            QTest::newRow((std::string(k.name) + " fp16 stochastic specials").c_str())
                << static_cast<int>(k.kind) << Format::fp16 << WeightRounding::stochastic << 0.01 << true;
        }
    }

    void kernelsUpdateAsTheCpuBackend() {
        QFETCH(int, kind);
        QFETCH(Format, format);
        QFETCH(WeightRounding, rounding);
        QFETCH(double, weightDecay);
        QFETCH(bool, specials);
        const auto k = static_cast<Kind>(kind);
        constexpr std::int64_t n = 4099;  // not a multiple of any block
        std::vector<float> w(n), g(n);
        fill(w, g, format, 17u + static_cast<unsigned>(kind), specials);
        const bool kahan = rounding == WeightRounding::kahan && format != Format::fp32;
        const bool stochastic = rounding == WeightRounding::stochastic && format != Format::fp32;
        constexpr std::uint64_t seed = 20261206;

        CpuBackend cpu;
        cpu.seed_stochastic_rounding(seed);
        auto p = tensor(cpu, n, format, w, "w");
        auto grad = tensor(cpu, n, Format::fp32, g, "g");
        auto s1 = tensor(cpu, n, Format::fp32, std::vector<float>(n, 0.0f), "s1");
        auto s2 = tensor(cpu, n, Format::fp32, std::vector<float>(n, 0.0f), "s2");
        auto comp = tensor(cpu, n, format, std::vector<float>(n, 0.0f), "w.kahan");
        OptimizerTensors t;
        t.param = p.get();
        t.grad = grad.get();
        t.state1 = k == Kind::sgd ? nullptr : s1.get();
        t.state2 = k == Kind::adamw ? s2.get() : nullptr;
        t.rounding = rounding;
        t.compensation = kahan ? comp.get() : nullptr;

        // The kernels' side: the parameter and compensation as stored bits, FP32 state.
        DeviceLike dp(format, w), dc(format, std::vector<float>(n, 0.0f));
        std::vector<float> state1(n, 0.0f), state2(n, 0.0f);
        const int fmt = static_cast<int>(format);

        for (std::int64_t step = 1; step <= 6; ++step) {
            UpdateCounts want;
            std::uint64_t changed = 0, lost = 0;
            // As the kernels get it: the compensation, or the step's key (one parameter: pass
            // step - 1 of the seed's sequence, as the device's draw_stochastic_key counts).
            cuda::WeightStore how;
            how.comp = kahan ? dc.bytes.data() : nullptr;
            how.stochastic = stochastic;
            how.key = stochastic ? cuda::stochastic_key(seed, static_cast<std::uint64_t>(step - 1)) : 0;
            if (k == Kind::adamw) {
                AdamWParams a;
                a.lr = 1e-3, a.beta1 = 0.9, a.beta2 = 0.99, a.eps = 1e-8, a.weight_decay = weightDecay, a.step = step;
                want = cpu.adamw_step(t, a);
                const cuda::AdamWScalars s = cuda::adamw_scalars(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, step);
                for (std::int64_t i = 0; i < n; ++i) {  // adamw_kernel's body, multiplier 1
                    const float old = dp.at(static_cast<std::size_t>(i));
                    const float gi = cuda::apply_multiplier(g[static_cast<std::size_t>(i)], 1.0f);
                    float mi = state1[static_cast<std::size_t>(i)], vi = state2[static_cast<std::size_t>(i)];
                    const float fresh = cuda::adamw_fresh(old, gi, mi, vi, s);
                    state1[static_cast<std::size_t>(i)] = mi, state2[static_cast<std::size_t>(i)] = vi;
                    const cuda::UpdateOutcome r =
                        cuda::store_update(dp.bytes.data(), how, fmt, i, old, fresh);
                    changed += r.changed, lost += r.lost;
                }
            } else {
                SgdParams sp;
                sp.lr = 0.05, sp.weight_decay = weightDecay, sp.momentum = k == Kind::sgd_momentum ? 0.9 : 0.0;
                sp.first_step = step == 1;
                want = cpu.sgd_step(t, sp);
                cuda::SgdScalars s{};  // as CudaBackend::sgd_step_async fills them
                s.lr = static_cast<float>(sp.lr);
                s.weight_decay = static_cast<float>(sp.weight_decay);
                s.momentum = static_cast<float>(sp.momentum);
                s.first_step = sp.first_step ? 1 : 0;
                for (std::int64_t i = 0; i < n; ++i) {  // sgd_kernel's body
                    const float old = dp.at(static_cast<std::size_t>(i));
                    const float gi = cuda::apply_multiplier(g[static_cast<std::size_t>(i)], 1.0f);
                    float* buf = k == Kind::sgd_momentum ? &state1[static_cast<std::size_t>(i)] : nullptr;
                    const float fresh = cuda::sgd_fresh(old, gi, buf, s);
                    const cuda::UpdateOutcome r =
                        cuda::store_update(dp.bytes.data(), how, fmt, i, old, fresh);
                    changed += r.changed, lost += r.lost;
                }
            }
            const QString where = QString("step %1: ").arg(step);
            QString diff = first_difference("weight", dp.values(), read(cpu, *p));
            QVERIFY2(diff.isEmpty(), qPrintable(where + diff));
            if (kahan) {
                diff = first_difference("compensation", dc.values(), read(cpu, *comp));
                QVERIFY2(diff.isEmpty(), qPrintable(where + diff));
            }
            if (t.state1) {
                diff = first_difference("state1", state1, read(cpu, *s1));
                QVERIFY2(diff.isEmpty(), qPrintable(where + diff));
            }
            if (t.state2) {
                diff = first_difference("state2", state2, read(cpu, *s2));
                QVERIFY2(diff.isEmpty(), qPrintable(where + diff));
            }
            QCOMPARE(static_cast<std::int64_t>(changed), want.nonzero_updates);
            QCOMPARE(static_cast<std::int64_t>(lost), want.lost_updates);
        }
    }
};

QTEST_APPLESS_MAIN(TestCudaOptimizerUpdate)
#include "test_optimizer_update.moc"
