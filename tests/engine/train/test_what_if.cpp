// What-if statistics (engine/train/what_if.h; docs/numerics.md, "What-if statistics"):
// - the tally's definitions (underflow, saturation, SQNR and its infinities) on arrays whose
//   answers are counted by hand, and the rows a sample takes;
// - the prediction holds: what a format would do to a bf16 layer's x and W at a step is what the
//   layer's matmul operands show when it is switched to that format at that step (the CPU
//   backend's operand tap, measured here from the definitions), and a layer running a format gets
//   its own operands' numbers, dy included;
// - measuring changes nothing: a run with the statistics repeats one without them bit for bit;
// - the Trainer's whole-tensor amaxes kept from the casts and the optimizer give the records a
//   fresh measure gives, bit for bit;
// - the Trainer reports a row per layer and format at each statistics step, for a CNN's
//   convolutions too; a bad format list is refused with its key named.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "error_of.h"
#include "numeric/convert.h"
#include "numeric/quantisation_error.h"
#include "stripes_dataset.h"
#include "train/trainer.h"
#include "train/what_if.h"
#include "operand_recording.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;
using test_support::error_of;

namespace {

const double inf = std::numeric_limits<double>::infinity();

// fc2's operands, and every layer's statistics of the test's own spec.
using Recording = OperandRecording<WhatIfStatistics>;

// Underflow and SQNR from their definitions, and saturation from the format's rule.
struct Expected {
    double underflow = 0, saturation = 0, sqnr_db = 0;
};

// MX (OCP MX v1.0): X = 2^(floor(log2 amax) - emax_elem) per block of 32 along each row; a value
// saturates when |v| / X is above the element's largest value. NVFP4: S = 448·6 / amax_tensor,
// s = e4m3(amax_block · S / 6) per 16, a value saturates when |v| / (s / S) is above 6.
std::int64_t saturated_in_blocks(BlockFormat f, const std::vector<float>& v, std::int64_t K) {
    const BlockFormatInfo& info = block_format_info(f);
    const int emax = f == BlockFormat::mxfp8_e4m3 ? 8 : f == BlockFormat::mxfp8_e5m2 ? 15 : f == BlockFormat::mxfp6_e3m2 ? 4 : 2;
    float tensor_amax = 0;
    for (float x : v) tensor_amax = std::max(tensor_amax, std::fabs(x));
    const float S = tensor_amax > 0 ? 448.0f * 6.0f / tensor_amax : 1.0f;
    std::int64_t count = 0;
    const std::int64_t rows = static_cast<std::int64_t>(v.size()) / K;
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t b0 = 0; b0 < K; b0 += info.block_size) {
            const std::int64_t b1 = std::min<std::int64_t>(K, b0 + info.block_size);
            float amax = 0;
            for (std::int64_t i = b0; i < b1; ++i) amax = std::max(amax, std::fabs(v[static_cast<std::size_t>(r * K + i)]));
            if (amax == 0) continue;
            double limit;
            if (f == BlockFormat::nvfp4) {
                const float s = round_to(Format::fp8_e4m3, amax * (S * (1.0f / 6.0f)));
                limit = 6.0 * static_cast<double>(s * (1.0f / S));
            } else {
                const int e = std::clamp(static_cast<int>(std::floor(std::log2(static_cast<double>(amax)))) - emax, -127, 127);
                limit = static_cast<double>(element_format_info(info.element).max_finite) * std::ldexp(1.0, e);
            }
            for (std::int64_t i = b0; i < b1; ++i)
                count += std::fabs(static_cast<double>(v[static_cast<std::size_t>(r * K + i)])) > limit;
        }
    return count;
}

Expected expected(const ComputeFormat& f, bool gradient, const std::vector<float>& src, const std::vector<float>& q,
                  std::int64_t K, float fp8_scale) {
    std::int64_t nonzero = 0, underflows = 0, saturated = 0;
    long double signal = 0, noise = 0;
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (!std::isfinite(src[i]) || src[i] == 0) continue;
        ++nonzero;
        underflows += q[i] == 0;
        signal += static_cast<long double>(src[i]) * src[i];
        noise += (static_cast<long double>(src[i]) - q[i]) * (static_cast<long double>(src[i]) - q[i]);
    }
    if (f.block) {
        saturated = saturated_in_blocks(*f.block, src, K);
    } else {
        const bool fp8 = f.format == Format::fp8_e4m3;
        const double limit = fp8 ? (gradient ? 57344.0 : 448.0) : f.format == Format::fp16 ? 65504.0 : 3.3895313892515355e38;
        for (float v : src) saturated += std::isfinite(v) && std::fabs(static_cast<double>(v * (fp8 ? fp8_scale : 1.0f))) > limit;
    }
    Expected e;
    e.underflow = nonzero ? static_cast<double>(underflows) / static_cast<double>(nonzero) : 0;
    e.saturation = nonzero ? static_cast<double>(saturated) / static_cast<double>(nonzero) : 0;
    e.sqnr_db = noise == 0 ? inf : static_cast<double>(10.0L * std::log10(signal / noise));
    return e;
}

// What a tapped operand's values stand for: each times the factor its matmul's products took.
std::vector<float> stood_for(std::vector<float> values, float factor) {
    for (float& v : values) v *= factor;
    return values;
}

void compare(const QuantisationStats& got, const Expected& want, const char* what) {
    const QByteArray where = QByteArray(what);
    QVERIFY2(got.underflow == want.underflow,
             (where + ": underflow " + QByteArray::number(got.underflow, 'g', 17) + " vs " + QByteArray::number(want.underflow, 'g', 17)).constData());
    QVERIFY2(got.saturation == want.saturation,
             (where + ": saturation " + QByteArray::number(got.saturation, 'g', 17) + " vs " + QByteArray::number(want.saturation, 'g', 17)).constData());
    const bool same = got.sqnr_db == want.sqnr_db || std::fabs(got.sqnr_db - want.sqnr_db) < 1e-4;  // dB
    QVERIFY2(same, (where + ": SQNR " + QByteArray::number(got.sqnr_db, 'g', 17) + " vs " + QByteArray::number(want.sqnr_db, 'g', 17)).constData());
}

const WhatIfRecord& row_of(const std::vector<WhatIfRecord>& rows, const std::string& layer, const ComputeFormat& f) {
    for (const WhatIfRecord& r : rows)
        if (r.name == layer && r.format == f) return r;
    throw std::runtime_error("no what-if row for " + layer + " in " + std::string(f.name()));
}

const std::vector<ComputeFormat> asked = {Format::fp16, Format::bf16, Format::fp8_e4m3, BlockFormat::mxfp8_e4m3,
                                          BlockFormat::mxfp4, BlockFormat::nvfp4};

// fc2 (96 -> 64) in bf16 among fp32 layers, every step a statistics step; the trainer's own
// what-if off (the test's observer measures).
Experiment switch_experiment() {
    Experiment e = quick_experiment(40, {96, 64});
    e.train.layer_stats_every = 1;
    e.train.lr = 0.003;
    e.train.what_if.formats.clear();
    e.precision.layers["fc2"] = LayerPrecision::bf16;
    return e;
}

Dataset regression() { return regression_set(1024, 256, 8, 4, 1.0f, 5); }

LayerPrecision precision_of(const ComputeFormat& f) {
    return *parse_layer_precision(std::string(f.name()));
}

}  // namespace

class TestWhatIf : public QObject {
    Q_OBJECT
private slots:
    void tallyCountsByDefinition() {
        // 6 finite non-zero values: one flushes, one overflows to inf; a zero and a NaN are not counted.
        const float src[] = {1.0f, -2.0f, 1e-9f, 0.0f, 3.0f, 70000.0f, std::nanf(""), 0.5f};
        const float q[] = {1.0f, -2.0f, 0.0f, 0.0f, 3.0f, INFINITY, std::nanf(""), 0.5f};
        QuantisationTally t;
        tally_quantisation(src, q, 8, t);
        QCOMPARE(t.values, std::int64_t{8});
        QCOMPARE(t.nonzero, std::int64_t{6});
        QCOMPARE(t.underflows, std::int64_t{1});
        QCOMPARE(t.overflows, std::int64_t{1});
        QCOMPARE(t.sqnr_db(), -inf);  // a finite value would become infinite
        QCOMPARE(t.saturated, std::int64_t{0});  // no limit given
        QuantisationTally fp16;
        tally_quantisation(src, q, 8, fp16, 1.0f, 65504.0f);
        QCOMPARE(fp16.saturated, std::int64_t{1});
        QuantisationTally scaled;
        tally_quantisation(src, q, 8, scaled, 0.5f, 1.0f);
        QCOMPARE(scaled.saturated, std::int64_t{2});  // 3·0.5 and 70000·0.5 (NaN is not finite)
        // Past a piece of 1024 and not a multiple of the lanes: the same counts as the parts.
        std::vector<float> many(2500), flushed(2500);
        for (std::size_t i = 0; i < many.size(); ++i) {
            many[i] = static_cast<float>(i % 7) - 3.0f;
            flushed[i] = i % 5 == 0 ? 0.0f : many[i];
        }
        QuantisationTally whole, parts;
        tally_quantisation(many.data(), flushed.data(), 2500, whole, 1.0f, 2.5f);
        tally_quantisation(many.data(), flushed.data(), 1000, parts, 1.0f, 2.5f);
        tally_quantisation(many.data() + 1000, flushed.data() + 1000, 1500, parts, 1.0f, 2.5f);
        QCOMPARE(whole.nonzero, parts.nonzero);
        QCOMPARE(whole.underflows, parts.underflows);
        QCOMPARE(whole.saturated, parts.saturated);
        std::int64_t nz = 0, under = 0, sat = 0;
        for (std::size_t i = 0; i < many.size(); ++i) {
            nz += many[i] != 0;
            under += many[i] != 0 && flushed[i] == 0;
            sat += std::fabs(many[i]) > 2.5f;
        }
        QCOMPARE(whole.nonzero, nz);
        QCOMPARE(whole.underflows, under);
        QCOMPARE(whole.saturated, sat);

        // Exact: +inf; no signal: NaN; 10 dB: noise a tenth of the signal.
        QuantisationTally exact;
        tally_quantisation(src, src, 3, exact);
        QCOMPARE(exact.sqnr_db(), inf);
        QuantisationTally none;
        const float zeros[] = {0.0f, 0.0f};
        tally_quantisation(zeros, zeros, 2, none);
        QVERIFY(std::isnan(none.sqnr_db()));
        const float a[] = {3.0f, 4.0f}, b[] = {3.0f + 1.0f, 4.0f - 1.0f};  // signal 25, noise 2
        QuantisationTally ten;
        const float c[] = {10.0f}, d[] = {10.0f - std::sqrt(10.0f)};
        tally_quantisation(c, d, 1, ten);
        QVERIFY(std::fabs(ten.sqnr_db() - 10.0) < 1e-5);
        QuantisationTally two;
        tally_quantisation(a, b, 2, two);
        QVERIFY(std::fabs(two.sqnr_db() - 10.0 * std::log10(25.0 / 2.0)) < 1e-9);  // 10.97 dB
    }

    void sampleTakesWholeRowsSpreadEvenly() {
        QCOMPARE(sample_row_indices(10, 100, 0), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
        QCOMPARE(sample_row_indices(10, 100, 400), (std::vector<std::int64_t>{0, 2, 5, 7}));
        QCOMPARE(sample_row_indices(10, 100, 50), (std::vector<std::int64_t>{0}));       // at least one row
        QCOMPARE(sample_row_indices(3, 100, 100000), (std::vector<std::int64_t>{0, 1, 2}));  // no more than there are
    }

    void predictionIsWhatTheSwitchedLayerShows_data() {
        QTest::addColumn<QString>("format");
        for (const ComputeFormat& f : asked) QTest::newRow(std::string(f.name()).c_str()) << QString::fromUtf8(f.name().data(), static_cast<int>(f.name().size()));
    }
    void predictionIsWhatTheSwitchedLayerShows() {
        QFETCH(QString, format);
        const ComputeFormat f = *parse_compute_format(format.toStdString());
        const std::int64_t at = 30;
        WhatIfSpec spec;
        spec.formats = asked;
        spec.max_elements = 0;  // whole tensors: the tap holds them whole

        // Predicted: fc2 in bf16 at step `at`.
        Trainer a(switch_experiment(), regression(), make_backend("cpu"));
        Recording pa("fc2", spec, Fp8Recipe{}, a.network().layer_count());
        a.network().set_operand_observer(&pa);
        for (std::int64_t i = 0; i < at; ++i) a.step();
        pa.statistics.begin_step(at);
        a.step();
        const std::vector<WhatIfRecord> predicted = pa.statistics.take();

        // Switched at the same step, its operands tapped.
        Trainer b(switch_experiment(), regression(), make_backend("cpu"));
        Recording pb("fc2", spec, Fp8Recipe{}, b.network().layer_count());
        b.network().set_operand_observer(&pb);
        for (std::int64_t i = 0; i < at; ++i) b.step();
        b.set_layer_precision("fc2", precision_of(f));
        float scale_x = 1, scale_w = 1, scale_dy = 1;
        if (const Fp8State* s = b.network().fp8_state(1)) {
            scale_x = s->snapshot(Fp8Role::input).scale;
            scale_w = s->snapshot(Fp8Role::weight).scale;
            scale_dy = s->snapshot(Fp8Role::grad_output).scale;
        }
        CpuBackend::OperandTap tap;
        auto& cpu = dynamic_cast<CpuBackend&>(b.backend());
        cpu.set_operand_tap(&tap);
        pb.statistics.begin_step(at);
        b.step();
        cpu.set_operand_tap(nullptr);
        const std::vector<WhatIfRecord> own = pb.statistics.take();
        const CpuBackend::TappedOperands& actual = tap.by_weight.at(&b.network().weight(1));

        const WhatIfRecord& p = row_of(predicted, "fc2", f);
        const WhatIfRecord& o = row_of(own, "fc2", f);
        const Expected x = expected(f, false, pb.x, stood_for(actual.x, actual.x_factor), 96, scale_x);
        const Expected w = expected(f, false, pb.w, stood_for(actual.w, actual.w_factor), 96, scale_w);
        const Expected dy = expected(f, true, pb.dy, stood_for(actual.dy, actual.dy_factor), 64, scale_dy);
        // The layer's own column is its operands' numbers.
        compare(o.input, x, "own x");
        compare(o.weight, w, "own W");
        compare(o.grad_output, dy, "own dy");
        // The prediction for x and W (the switch does not change them at its step). A new FP8
        // layer starts its history at scale 1, where the bf16 layer's shadow history had 30 steps.
        if (f.format != Format::fp8_e4m3) {
            compare(p.input, x, "predicted x");
            compare(p.weight, w, "predicted W");
        }
        QCOMPARE(p.input.values, std::int64_t{64 * 96});
        // The data are not trivial: something is lost in the narrow formats.
        if (f.block && *f.block == BlockFormat::mxfp4) {
            QVERIFY(x.sqnr_db < 25 && w.sqnr_db < 25);
            QVERIFY(x.saturation > 0 || w.saturation > 0);
        }
    }

    void fp8ShadowIsTheLayersOwnHistoryInSteadyState() {
        // fc2 in FP8 from the start with delayed scaling: its what-if column uses its own history
        // (the scale its casts use), so it equals its operands at every step, not only the first.
        Experiment e = switch_experiment();
        e.precision.layers["fc2"] = LayerPrecision::fp8_e4m3;
        WhatIfSpec spec;
        spec.formats = {Format::fp8_e4m3};
        spec.max_elements = 0;
        Trainer t(e, regression(), make_backend("cpu"));
        Recording r("fc2", spec, Fp8Recipe{}, t.network().layer_count());
        t.network().set_operand_observer(&r);
        for (int i = 0; i < 10; ++i) t.step();
        const Fp8State* s = t.network().fp8_state(1);
        const float sx = s->snapshot(Fp8Role::input).scale, sw = s->snapshot(Fp8Role::weight).scale,
                    sg = s->snapshot(Fp8Role::grad_output).scale;
        QVERIFY(sx != 1.0f && sg != 1.0f);  // ten steps of history
        CpuBackend::OperandTap tap;
        auto& cpu = dynamic_cast<CpuBackend&>(t.backend());
        cpu.set_operand_tap(&tap);
        r.statistics.begin_step(10);
        t.step();
        cpu.set_operand_tap(nullptr);
        const WhatIfRecord& row = row_of(r.statistics.take(), "fc2", Format::fp8_e4m3);
        const CpuBackend::TappedOperands& actual = tap.by_weight.at(&t.network().weight(1));
        compare(row.input, expected(Format::fp8_e4m3, false, r.x, stood_for(actual.x, actual.x_factor), 96, sx), "x");
        compare(row.weight, expected(Format::fp8_e4m3, false, r.w, stood_for(actual.w, actual.w_factor), 96, sw), "W");
        compare(row.grad_output, expected(Format::fp8_e4m3, true, r.dy, stood_for(actual.dy, actual.dy_factor), 64, sg),
                "dy");
    }

    void measuringChangesNothing() {
        Experiment off = quick_experiment(60, {32, 32});
        off.train.what_if.formats.clear();
        Experiment on = off;
        on.train.what_if = WhatIfSpec{};  // the default list
        on.precision.autocast = off.precision.autocast = Autocast::bf16;
        on.precision.layers["fc2"] = off.precision.layers["fc2"] = LayerPrecision::mxfp4;
        Trainer a(off, regression(), make_backend("cpu"));
        Trainer b(on, regression(), make_backend("cpu"));
        std::int64_t rows = 0;
        for (int i = 0; i < 60; ++i) {
            const double la = a.step().step.loss;
            const StepReport& rb = b.step();
            QCOMPARE(rb.step.loss, la);  // bit for bit
            rows += static_cast<std::int64_t>(rb.what_if.size());
        }
        QCOMPARE(rows, std::int64_t{60 * 3 * 6});  // every step: 3 layers × 6 formats
    }

    // The Trainer's own what-if takes x's and W's whole-tensor amaxes from the passes that read
    // them anyway (CpuBackend::keep_operand_magnitudes: the forward's casts, the optimizer's write
    // of the weights before a statistics step): the same records, bit for bit, as an observer's
    // that measures every tensor afresh (its trainer's what-if off, so nothing is kept), with
    // statistics at every step and at every third, and with a layer in a block format (no cast
    // copy: the optimizer measures its weights in a pass of their own; NVFP4's tensor scales take
    // the kept amaxes and keep x's).
    void trainersWhatIfFromKeptAmaxesIsAFreshMeasure_data() {
        QTest::addColumn<int>("every");
        QTest::addColumn<QString>("fc2");
        QTest::newRow("statistics every step") << 1 << "";
        QTest::newRow("statistics every third step") << 3 << "";
        QTest::newRow("fc2 in mxfp4") << 1 << "mxfp4";
        QTest::newRow("fc2 in nvfp4") << 1 << "nvfp4";  // its tensor scales from, and for, the kept amaxes
    }
    void trainersWhatIfFromKeptAmaxesIsAFreshMeasure() {
        QFETCH(int, every);
        QFETCH(QString, fc2);
        Experiment kept = quick_experiment(12, {96, 64});
        kept.train.layer_stats_every = every;
        kept.precision.autocast = Autocast::bf16;  // x cast in the forward, W's cast copy by the optimizer
        kept.precision.master_weights = true;
        if (!fc2.isEmpty()) kept.precision.layers["fc2"] = *parse_layer_precision(fc2.toStdString());
        Experiment fresh = kept;
        fresh.train.what_if.formats.clear();
        Trainer a(kept, regression(), make_backend("cpu"));
        Trainer b(fresh, regression(), make_backend("cpu"));
        Recording rec("fc2", kept.train.what_if, Fp8Recipe{}, b.network().layer_count());
        b.network().set_operand_observer(&rec);
        const auto& cpu = dynamic_cast<const CpuBackend&>(a.backend());
        const auto same = [](const QuantisationStats& g, const QuantisationStats& w) {
            return std::bit_cast<std::uint64_t>(g.underflow) == std::bit_cast<std::uint64_t>(w.underflow) &&
                   std::bit_cast<std::uint64_t>(g.saturation) == std::bit_cast<std::uint64_t>(w.saturation) &&
                   std::bit_cast<std::uint64_t>(g.sqnr_db) == std::bit_cast<std::uint64_t>(w.sqnr_db) &&
                   g.values == w.values;
        };
        for (int i = 0; i < 12; ++i) {
            const bool stats = i % every == 0;
            if (stats) rec.statistics.begin_step(i);
            b.step();
            const std::vector<WhatIfRecord> want = stats ? rec.statistics.take() : std::vector<WhatIfRecord>{};
            const std::vector<WhatIfRecord> got = a.step().what_if;
            QCOMPARE(got.size(), want.size());
            QCOMPARE(got.size(), stats ? std::size_t{3 * 6} : std::size_t{0});
            for (std::size_t k = 0; k < got.size(); ++k) {
                const QByteArray what = QByteArray::fromStdString(got[k].name + " " + std::string(got[k].format.name()));
                QCOMPARE(got[k].name, want[k].name);
                QVERIFY2(got[k].format == want[k].format, what.constData());
                QVERIFY2(same(got[k].input, want[k].input), ("x of " + what).constData());
                QVERIFY2(same(got[k].weight, want[k].weight), ("W of " + what).constData());
                QVERIFY2(same(got[k].grad_output, want[k].grad_output), ("dy of " + what).constData());
            }
            // The optimizer measured the new weights when a statistics step comes next.
            for (int l = 0; l < 2; ++l) {
                const Tensor& w = a.network().weight(l);
                QCOMPARE(cpu.kept_magnitude(w, w.numel()).has_value(), (i + 1) % every == 0);
            }
        }
        const Tensor& b1 = b.network().weight(0);
        QVERIFY(!dynamic_cast<const CpuBackend&>(b.backend()).kept_magnitude(b1, b1.numel()));
    }

    void trainerReportsEveryLayerAndFormat() {
        // A CNN: its convolutions' x are the patches under the kernel.
        Experiment e = quick_experiment(12, {16});
        e.model.kind = "cnn";
        e.model.channels = {4, 8};
        e.train.batch_size = 16;
        e.train.layer_stats_every = 4;
        e.train.what_if.max_elements = 512;
        Trainer t(e, test_support::stripes(256, 64, 3), make_backend("cpu"));
        std::size_t matmuls = 0;  // the batch norms have parameters and no matmul
        for (int l = 0; l < t.network().layer_count(); ++l) matmuls += t.network().layer(l).takes_precision();
        QCOMPARE(matmuls, std::size_t{4});
        for (int i = 0; i < 12; ++i) {
            const StepReport& r = t.step();
            if (i % 4 != 0) {
                QVERIFY(r.what_if.empty());
                continue;
            }
            QCOMPARE(r.what_if.size(), matmuls * 6);
            for (const WhatIfRecord& w : r.what_if) {
                QCOMPARE(w.step, std::int64_t{i});
                QVERIFY(w.input.values > 0 && w.input.values <= 512 + 4 * 9 * 2);  // whole rows, at least one
                QVERIFY(w.weight.underflow >= 0 && w.weight.underflow <= 1);
                QVERIFY(!std::isnan(w.weight.sqnr_db));
            }
            // Coarser formats lose more of the first convolution's weights.
            const double bf16 = row_of(r.what_if, "conv1", Format::bf16).weight.sqnr_db;
            const double mxfp8 = row_of(r.what_if, "conv1", BlockFormat::mxfp8_e4m3).weight.sqnr_db;
            const double mxfp4 = row_of(r.what_if, "conv1", BlockFormat::mxfp4).weight.sqnr_db;
            QVERIFY2(bf16 > mxfp8 && mxfp8 > mxfp4, qPrintable(QString("%1 %2 %3").arg(bf16).arg(mxfp8).arg(mxfp4)));
        }
    }

    void badFormatListsAreRefused() {
        const auto refused = [](const std::string& formats) {
            return error_of([&] { (void)experiment_from_json(nlohmann::json::parse("{\"train\": {\"what_if\": {\"formats\": " + formats + "}}}")); });
        };
        QVERIFY(refused("[\"fp32\"]").contains(QStringLiteral("train.what_if.formats[0]")));
        QVERIFY(refused("[\"bf16\", \"mxfp9\"]").contains(QStringLiteral("train.what_if.formats[1]: \"mxfp9\" is not a format")));
        QVERIFY(refused("[\"bf16\", \"bf16\"]").contains(QStringLiteral("listed twice")));
        QVERIFY(refused("\"bf16\"").contains(QStringLiteral("train.what_if.formats")));
        QVERIFY(error_of([] { (void)experiment_from_json(nlohmann::json::parse("{\"train\": {\"what_if\": {\"every\": 3}}}")); })
                    .contains(QStringLiteral("train.what_if.every: unknown key")));
        // The list and the sample size go through the file and --set.
        Experiment e;
        apply_setting(e, "train.what_if.formats=[\"mxfp4\",\"nvfp4\"]");
        apply_setting(e, "train.what_if.max_elements=0");
        QCOMPARE(e.train.what_if.formats, (std::vector<ComputeFormat>{BlockFormat::mxfp4, BlockFormat::nvfp4}));
        QCOMPARE(e.train.what_if.max_elements, std::int64_t{0});
        QVERIFY(experiment_from_json(experiment_to_json(e)) == e);
    }
};

QTEST_APPLESS_MAIN(TestWhatIf)
#include "test_what_if.moc"
