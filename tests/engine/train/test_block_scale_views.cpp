// Block-scale views (engine/train/block_scale_views.h; docs/numerics.md, "Block-scale views"):
// - a block's exponent is the one the spec's scale rule gives, worked out here from its
//   definitions (OCP MX v1.0: floor(log2 amax) - emax_elem, clamped to E8M0; NVFP4: the E4M3
//   scale of amax·S/6 over S), on the edge blocks: all zeros, a NaN, an infinity, an amax at a
//   power of two, subnormal amaxes, the clamp, an NVFP4 scale that rounds to zero;
// - the view is what the layer's matmul used: the scales of a layer running MXFP4 (and one whose
//   input-gradient matmul alone runs NVFP4) are those that quantise its real operands into the
//   values its matmuls multiplied (the CPU backend's operand tap);
// - viewing changes nothing: a run with views repeats one without them bit for bit;
// - the Trainer reports the rows "own" and a format name ask for, a CNN's sampled rows included,
//   and the distribution the displays draw counts them by definition.
#include <QtTest>

#include <cmath>
#include <limits>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "stripes_dataset.h"
#include "train/block_scale_views.h"
#include "train/trainer.h"
#include "operand_recording.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;

namespace {

constexpr std::int16_t zero_block = BlockScaleRecord::zero_block;
constexpr std::int16_t nan_block = BlockScaleRecord::nan_block;

// The exponent the spec gives a block, from its definitions (double arithmetic where it is exact).
std::int16_t spec_exponent(BlockFormat f, const std::vector<float>& block, float tensor_amax) {
    double amax = 0;
    for (float v : block) {
        if (!std::isfinite(v)) return nan_block;
        amax = std::max(amax, std::fabs(static_cast<double>(v)));
    }
    if (amax == 0) return zero_block;
    if (f == BlockFormat::nvfp4) {
        // S = 448·6 / amax_tensor, at most FLT_MAX (a tiny tensor), 1 for an all-zero one.
        const float S = tensor_amax > 0 ? std::min(448.0f * 6.0f / tensor_amax, std::numeric_limits<float>::max()) : 1.0f;
        const float s = round_to(Format::fp8_e4m3, static_cast<float>(amax) * (S * (1.0f / 6.0f)));
        const float factor = s * (1.0f / S);
        if (factor == 0) return zero_block;
        return static_cast<std::int16_t>(std::floor(std::log2(static_cast<double>(factor))));
    }
    // emax of the element formats: e4m3 8, e5m2 15, e3m2 4, e2m3 2, e2m1 2.
    const int emax = f == BlockFormat::mxfp8_e4m3 ? 8 : f == BlockFormat::mxfp8_e5m2 ? 15 : f == BlockFormat::mxfp6_e3m2 ? 4 : 2;
    const int e = static_cast<int>(std::floor(std::log2(amax))) - emax;
    return static_cast<std::int16_t>(std::clamp(e, -127, 127));
}

std::int16_t viewed(BlockFormat f, const std::vector<float>& block, float tensor_amax) {
    const float S = f == BlockFormat::nvfp4 ? nvfp4_tensor_scale(tensor_amax) : 1.0f;
    return block_scale_exponent(f, S, block.data(), block.size());
}

// fc2's operands, and every layer's statistics of the test's own spec.
using Recording = OperandRecording<BlockScaleViews>;

const BlockScaleRecord& record_of(const std::vector<BlockScaleRecord>& rows, const std::string& layer, MatmulOperand op) {
    for (const BlockScaleRecord& r : rows)
        if (r.name == layer && r.operand == op) return r;
    throw std::runtime_error("no block-scale row for " + layer + " " + matmul_operand_name(op));
}

// Each row of `raw` (rows of K) quantised by the reference quantiser (numeric/block_format.h): its
// blocks' exponents are the record's, and the values they decode to are what the matmul used:
// each element times its block's scale, NVFP4's tensor scale applied to the accumulator (`factor`).
void check_against_operand(const BlockScaleRecord& r, const std::vector<float>& raw, const std::vector<float>& used,
                           float factor, std::int64_t K, const char* what) {
    QCOMPARE(r.row_length, K);
    QCOMPARE(r.rows, static_cast<std::int64_t>(raw.size()) / K);
    QCOMPARE(r.rows_total, r.rows);
    float tensor_amax = 0;
    for (float v : raw) tensor_amax = std::max(tensor_amax, std::fabs(v));
    const float S = r.format == BlockFormat::nvfp4 ? nvfp4_tensor_scale(tensor_amax) : 1.0f;
    QVERIFY2(factor == (r.format == BlockFormat::nvfp4 ? 1.0f / S : 1.0f), what);
    const int B = block_format_info(r.format).block_size;
    std::vector<float> decoded(static_cast<std::size_t>(K));
    std::int64_t distinct_exponents = 0;
    std::int16_t first = r.exponents.front();
    for (std::int64_t row = 0; row < r.rows; ++row) {
        for (std::int64_t b = 0; b < r.blocks_per_row; ++b) {
            const std::int64_t k0 = b * B, n = std::min<std::int64_t>(B, K - k0);
            const float* v = raw.data() + row * K + k0;
            std::uint8_t codes[32];
            const std::uint8_t code = quantise_block(r.format, S, v, static_cast<std::size_t>(n), codes);
            // The block's scale alone: with the tensor scale 1, an NVFP4 block decodes by its E4M3 value.
            dequantise_block(r.format, 1.0f, code, codes, static_cast<std::size_t>(n), decoded.data() + k0);
            const std::int16_t got = r.exponents[static_cast<std::size_t>(row * r.blocks_per_row + b)];
            const float factor = block_decode_factor(r.format, code, S);
            const std::int16_t want = factor == 0 ? zero_block : static_cast<std::int16_t>(std::ilogb(factor));
            const bool all_zero = std::all_of(v, v + n, [](float x) { return x == 0; });
            QVERIFY2(got == (all_zero ? zero_block : want),
                     qPrintable(QString("%1 row %2 block %3: %4 vs %5").arg(what).arg(row).arg(b).arg(got).arg(want)));
            distinct_exponents += got != first;
        }
        for (std::int64_t k = 0; k < K; ++k)
            QVERIFY2(decoded[static_cast<std::size_t>(k)] == used[static_cast<std::size_t>(row * K + k)],
                     qPrintable(QString("%1 row %2 value %3").arg(what).arg(row).arg(k)));
    }
    QVERIFY2(distinct_exponents > 0, what);  // the blocks do not all share one scale
}

Dataset regression() { return regression_set(1024, 256, 8, 4, 1.0f, 5); }

// "own", every block kept.
BlockScaleSpec every_block() {
    BlockScaleSpec spec;
    spec.max_blocks = 0;
    return spec;
}

// The rows the recording's views take at step 12 of t (after 12 steps), and what fc2's matmuls
// multiplied then (the CPU backend's operand tap).
struct ViewsAndOperands {
    std::vector<BlockScaleRecord> rows;
    CpuBackend::TappedOperands used;
};

ViewsAndOperands views_at_step_12(Trainer& t, Recording& rec) {
    t.network().set_operand_observer(&rec);
    for (int i = 0; i < 12; ++i) t.step();
    CpuBackend::OperandTap tap;
    auto& cpu = dynamic_cast<CpuBackend&>(t.backend());
    cpu.set_operand_tap(&tap);
    rec.statistics.begin_step(12);
    t.step();
    cpu.set_operand_tap(nullptr);
    return {rec.statistics.take(), tap.by_weight.at(&t.network().weight(1))};
}

// fc2 (96 -> 64) among fp32 layers, every step a statistics step; the trainer's own views and
// what-if off (the test's observer views).
Experiment mlp(LayerSetting fc2) {
    Experiment e = quick_experiment(20, {96, 64});
    e.train.layer_stats_every = 1;
    e.train.lr = 0.003;
    e.train.what_if.formats.clear();
    e.train.block_scales.enabled = false;
    e.precision.layers["fc2"] = fc2;
    return e;
}

}  // namespace

class TestBlockScaleViews : public QObject {
    Q_OBJECT
private slots:
    void exponentIsTheSpecsScaleOnEdgeBlocks() {
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        const float min_sub = std::numeric_limits<float>::denorm_min();
        const std::vector<std::vector<float>> blocks = {
            {0.0f, -0.0f, 0.0f},                 // all zeros
            {1.0f, nan, 2.0f},                   // a NaN
            {1.0f, -inf},                        // an infinity
            {1.0f, 0.5f, -0.25f},                // amax at a power of two
            {-3.99f, 1.0f},                      // just below the next one
            {4.0f},                              // and at it
            {1e-40f, -3e-41f},                   // subnormal amaxes
            {min_sub, 0.0f},                     // the smallest: E8M0's clamp at 2^-127
            {3e38f, 1.0f},                       // near FLT_MAX
            {448.0f, 1e-3f},
        };
        for (BlockFormat f : all_block_formats) {
            for (const std::vector<float>& b : blocks) {
                float amax = 0;
                for (float v : b) if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
                const QString where = QString("%1 block [%2, ...] amax %3").arg(QString::fromUtf8(block_format_name(f).data()))
                                          .arg(double(b.front())).arg(double(amax));
                QVERIFY2(viewed(f, b, amax) == spec_exponent(f, b, amax),
                         qPrintable(where + QString(": %1 vs %2").arg(viewed(f, b, amax)).arg(spec_exponent(f, b, amax))));
                // Also within a tensor whose amax is far larger (NVFP4's tensor scale differs).
                const float large = std::max(1e30f, amax);
                QVERIFY2(viewed(f, b, large) == spec_exponent(f, b, large), qPrintable(where + " in a large tensor"));
            }
        }
        // The rule's landmarks, written out: MXFP8-E4M3 puts amax 1 at 2^-8 (e4m3's emax is 8),
        // MXFP4 at 2^-2; the clamp holds E8M0's -127; a block far below an NVFP4 tensor's amax has
        // an E4M3 scale that rounds to zero.
        QCOMPARE(viewed(BlockFormat::mxfp8_e4m3, {1.0f}, 1.0f), std::int16_t{-8});
        QCOMPARE(viewed(BlockFormat::mxfp4, {1.0f, 1.5f}, 1.5f), std::int16_t{-2});
        QCOMPARE(viewed(BlockFormat::mxfp8_e4m3, {min_sub}, min_sub), std::int16_t{-127});
        QCOMPARE(viewed(BlockFormat::nvfp4, {1e-7f}, 100.0f), zero_block);
        QCOMPARE(viewed(BlockFormat::mxfp4, {0.0f}, 1.0f), zero_block);
        QCOMPARE(viewed(BlockFormat::nvfp4, {nan}, 1.0f), nan_block);
    }

    void recordCutsRowsIntoBlocksFromTheirStart() {
        // Rows of 40 values: blocks [0, 32) and [32, 40) (a partial one) in MX; 3 blocks in NVFP4.
        std::vector<float> v(3 * 40, 0.0f);
        v[0] = 1.0f;              // row 0, block 0: 2^0 - 8
        v[35] = 16.0f;            // row 0, block 1: 2^4 - 8
        v[40 + 31] = 0.5f;        // row 1, block 0 (its last value); block 1 all zeros
        v[80 + 32] = std::nanf("");  // row 2, block 1: NaN; block 0 zeros
        OperandSample s{v.data(), 3, 40, 7, {}, {16.0f, 16.0f}};
        const BlockScaleRecord r = view_block_scales(BlockFormat::mxfp8_e4m3, s);
        QCOMPARE(r.blocks_per_row, std::int64_t{2});
        QCOMPARE(r.rows_total, std::int64_t{7});
        QCOMPARE(r.exponents, (std::vector<std::int16_t>{-8, -4, -9, zero_block, zero_block, nan_block}));
        QCOMPARE(view_block_scales(BlockFormat::nvfp4, s).blocks_per_row, std::int64_t{3});

        // The distribution the displays draw: by exponent, zeros and NaNs apart, the median.
        const BlockScaleHistogram h = block_scale_histogram(r);
        QCOMPARE(h.min_exponent, -9);
        QCOMPARE(h.max_exponent(), -4);
        QCOMPARE(h.counts, (std::vector<std::int64_t>{1, 1, 0, 0, 0, 1}));
        QCOMPARE(h.zero_blocks, std::int64_t{2});
        QCOMPARE(h.nan_blocks, std::int64_t{1});
        QCOMPARE(h.blocks(), std::int64_t{6});
        QCOMPARE(h.median_exponent(), -8);
        BlockScaleRecord empty = r;
        empty.exponents = {zero_block, nan_block};
        QVERIFY(block_scale_histogram(empty).counts.empty());
        QCOMPARE(block_scale_histogram(empty).blocks(), std::int64_t{2});
    }

    void viewIsWhatTheLayersMatmulsUsed_data() {
        QTest::addColumn<QString>("setting");
        QTest::newRow("mxfp4") << "mxfp4";
        QTest::newRow("mxfp8-e4m3") << "mxfp8-e4m3";
        QTest::newRow("nvfp4") << "nvfp4";
        QTest::newRow("dgrad only in nvfp4") << "dgrad:nvfp4";
    }
    void viewIsWhatTheLayersMatmulsUsed() {
        QFETCH(QString, setting);
        LayerSetting fc2;
        const bool dgrad_only = setting.startsWith("dgrad:");
        if (dgrad_only) {
            fc2.forward = fc2.wgrad = LayerPrecision::bf16;
            fc2.dgrad = *parse_layer_precision(setting.mid(6).toStdString());
        } else {
            fc2 = LayerSetting(*parse_layer_precision(setting.toStdString()));
        }
        Trainer t(mlp(fc2), regression(), make_backend("cpu"));
        Recording rec("fc2", every_block());
        const auto [rows, used] = views_at_step_12(t, rec);

        // Only fc2, the one block-scaled layer, and of it only what its block-scaled matmuls quantise.
        QCOMPARE(rows.size(), std::size_t{dgrad_only ? 1u : 3u});
        for (const BlockScaleRecord& r : rows) {
            QCOMPARE(r.name, std::string("fc2"));
            QCOMPARE(r.step, std::int64_t{12});
            QVERIFY(r.own);
        }
        if (!dgrad_only) {
            check_against_operand(record_of(rows, "fc2", MatmulOperand::input), rec.x, used.x, used.x_factor, 96, "x");
            check_against_operand(record_of(rows, "fc2", MatmulOperand::weight), rec.w, used.w, used.w_factor, 96, "W");
        }
        check_against_operand(record_of(rows, "fc2", MatmulOperand::grad_output), rec.dy, used.dy, used.dy_factor, 64,
                              "dy");
    }

    // With stochastic gradients, dy's MX blocks take the next power of two where the OCP rule's
    // scale would clip their amax (docs/numerics.md, "Stochastic rounding and Kahan summation"):
    // the view shows that scale, the one dy was quantised with, and x's and W's stay the rule's.
    void stochasticGradientsViewTheScalesThatDoNotClip() {
        // Rows of 32: MXFP4 (max 6) amaxes 7.5 (the rule's 2^0 clips it: 2^1), 5 (kept: 2^0);
        // MXFP8-E4M3 (max 448) amaxes 7.5 (2^-6 clips it at 480: 2^-5), 5 (kept), 500 (2^0 clips: 2^1).
        // NVFP4's scale never clips: unchanged.
        std::vector<float> v(3 * 32, 0.25f);
        v[3] = 7.5f, v[32 + 7] = -5.0f, v[64 + 31] = 500.0f;
        const OperandSample s{v.data(), 3, 32, 3, {}, {500.0f, 500.0f}};
        QCOMPARE(view_block_scales(BlockFormat::mxfp4, s).exponents, (std::vector<std::int16_t>{0, 0, 6}));
        QCOMPARE(view_block_scales(BlockFormat::mxfp4, s, true).exponents, (std::vector<std::int16_t>{1, 0, 7}));
        QCOMPARE(view_block_scales(BlockFormat::mxfp8_e4m3, s, true).exponents, (std::vector<std::int16_t>{-5, -6, 1}));
        QCOMPARE(view_block_scales(BlockFormat::nvfp4, s, true).exponents, view_block_scales(BlockFormat::nvfp4, s).exponents);

        // In training: fc2 in MXFP4 with stochastic gradients. dy's view is the no-clip scale of
        // the dy the backward quantised, and no value it used lies beyond its block's range.
        Experiment e = mlp(LayerSetting(LayerPrecision::mxfp4));
        e.precision.rounding.gradients = GradientRounding::stochastic;
        Trainer t(e, regression(), make_backend("cpu"));
        Recording rec("fc2", every_block());
        const auto [rows, tapped] = views_at_step_12(t, rec);
        const std::vector<float>& used = tapped.dy;
        const BlockScaleRecord& dy = record_of(rows, "fc2", MatmulOperand::grad_output);
        const std::int64_t K = 64;
        QCOMPARE(dy.row_length, K);
        std::int64_t bumped = 0;
        for (std::int64_t row = 0; row < dy.rows; ++row)
            for (std::int64_t b = 0; b < dy.blocks_per_row; ++b) {
                const auto first = rec.dy.begin() + row * K + b * 32;
                const std::vector<float> block(first, first + 32);
                float amax = 0;
                for (float x : block) amax = std::max(amax, std::fabs(x));
                std::int16_t want = spec_exponent(BlockFormat::mxfp4, block, amax);
                if (want != zero_block && want < 127 && amax > 6.0f * std::ldexp(1.0f, want)) ++want, ++bumped;
                const std::int16_t got = dy.exponents[static_cast<std::size_t>(row * dy.blocks_per_row + b)];
                QVERIFY2(got == want, qPrintable(QString("dy row %1 block %2: %3, want %4").arg(row).arg(b).arg(got).arg(want)));
                for (std::int64_t k = 0; k < 32; ++k)
                    QVERIFY(std::fabs(used[static_cast<std::size_t>(row * K + b * 32 + k)]) <= 6.0f * std::ldexp(1.0f, want));
            }
        QVERIFY(bumped > 0);  // the run has blocks the rule would have clipped
        // x and W are rounded to nearest: the rule's scales.
        const BlockScaleRecord& x = record_of(rows, "fc2", MatmulOperand::input);
        for (std::int64_t b = 0; b < x.blocks_per_row; ++b) {
            const auto first = rec.x.begin() + b * 32;
            const std::vector<float> block(first, first + std::min<std::int64_t>(32, 96 - b * 32));
            float amax = 0;
            for (float v : block) amax = std::max(amax, std::fabs(v));
            QCOMPARE(x.exponents[static_cast<std::size_t>(b)], spec_exponent(BlockFormat::mxfp4, block, amax));
        }
    }

    void viewingChangesNothing() {
        Experiment off = quick_experiment(40, {32, 32});
        off.train.what_if.formats.clear();
        off.train.block_scales.enabled = false;
        off.precision.autocast = Autocast::bf16;
        off.precision.layers["fc2"] = LayerPrecision::mxfp4;
        Experiment on = off;
        on.train.block_scales = BlockScaleSpec{};
        on.train.block_scales.format = BlockFormat::mxfp8_e4m3;  // every layer viewed
        Trainer a(off, regression(), make_backend("cpu"));
        Trainer b(on, regression(), make_backend("cpu"));
        std::int64_t rows = 0;
        for (int i = 0; i < 40; ++i) {
            const double la = a.step().step.loss;
            const StepReport& rb = b.step();
            QCOMPARE(rb.step.loss, la);  // bit for bit
            rows += static_cast<std::int64_t>(rb.block_scales.size());
            for (const BlockScaleRecord& r : rb.block_scales)
                QCOMPARE(r.format, r.name == "fc2" ? BlockFormat::mxfp4 : BlockFormat::mxfp8_e4m3);  // own first
        }
        QCOMPARE(rows, std::int64_t{40 * 3 * 3});  // every step: 3 layers × x, W, dy
    }

    // The Trainer's own views take a layer's x and W from the exponents its forward's quantiser
    // kept (CpuBackend::kept_block_exponents): the same records, row for row, as views that
    // find them again from the operands (a recording observer's, the trainer's off, so that
    // nothing is kept), whole and with rows sampled.
    void trainersViewsFromTheQuantiserAreTheOperandsViews_data() {
        QTest::addColumn<QString>("setting");
        QTest::addColumn<int>("max_blocks");
        QTest::newRow("mxfp4, every block") << "mxfp4" << 0;
        QTest::newRow("nvfp4, every block") << "nvfp4" << 0;
        QTest::newRow("mxfp8-e4m3, sampled rows") << "mxfp8-e4m3" << 40;
        QTest::newRow("nvfp4, sampled rows") << "nvfp4" << 70;
    }
    void trainersViewsFromTheQuantiserAreTheOperandsViews() {
        QFETCH(QString, setting);
        QFETCH(int, max_blocks);
        const LayerSetting fc2(*parse_layer_precision(setting.toStdString()));
        BlockScaleSpec spec;
        spec.max_blocks = max_blocks;
        Experiment kept = mlp(fc2);
        kept.train.block_scales = spec;
        Trainer a(kept, regression(), make_backend("cpu"));
        Trainer b(mlp(fc2), regression(), make_backend("cpu"));
        Recording rec("fc2", spec);
        b.network().set_operand_observer(&rec);
        for (int i = 0; i < 12; ++i) {
            a.step();
            b.step();
        }
        rec.statistics.begin_step(12);
        const std::vector<BlockScaleRecord> want = (b.step(), rec.statistics.take());
        const std::vector<BlockScaleRecord> got = a.step().block_scales;
        QCOMPARE(got.size(), std::size_t{3});
        QCOMPARE(want.size(), got.size());
        for (const MatmulOperand op : {MatmulOperand::input, MatmulOperand::weight, MatmulOperand::grad_output}) {
            const BlockScaleRecord &g = record_of(got, "fc2", op), &w = record_of(want, "fc2", op);
            QCOMPARE(g.rows_total, w.rows_total);
            QCOMPARE(g.rows, w.rows);
            QCOMPARE(g.blocks_per_row, w.blocks_per_row);
            QVERIFY2(g.exponents == w.exponents, matmul_operand_name(op));
            if (max_blocks > 0 && op != MatmulOperand::grad_output) QVERIFY(g.rows < g.rows_total);
        }
    }

    // Which path the two tests above take is the Trainer's doing: before a statistics step's
    // forward it asks the backend to keep the quantisers' exponents (views on) and the operands'
    // amaxes (what-if formats on), so that the layers show x and W with both already found. A
    // probe in place of the Trainer's observers looks at what the backend holds when each layer
    // shows its operands (at statistics steps): fc2 runs MXFP4, fc1 and fc3 BF16.
    void trainerKeepsTheQuantisersFindingsForItsStatistics() {
        struct Probe final : OperandObserver {
            struct Seen {
                std::string layer;
                bool exponents_x = false, exponents_w = false, amax_x = false;
                Format x_format = Format::fp32;
            };
            std::vector<Seen> seen;
            void observe(Backend& backend, const MatmulOperands& o) override {
                const auto& cpu = dynamic_cast<const CpuBackend&>(backend);
                Seen s{o.layer.name()};
                s.exponents_x = cpu.kept_block_exponents(o.x, BlockFormat::mxfp4, o.in).values != nullptr;
                s.exponents_w = cpu.kept_block_exponents(o.weight, BlockFormat::mxfp4, o.in).values != nullptr;
                s.amax_x = cpu.kept_magnitude(o.x, o.x.numel()).has_value();
                s.x_format = o.x.desc().format;
                seen.push_back(s);
            }
        };
        for (const bool what_if : {false, true}) {
            Experiment e = mlp(LayerSetting(LayerPrecision::mxfp4));
            e.train.layer_stats_every = 3;
            e.train.block_scales.enabled = true;
            e.precision.autocast = Autocast::bf16;
            if (what_if) e.train.what_if = Experiment{}.train.what_if;
            QVERIFY(what_if == !e.train.what_if.formats.empty());
            Trainer t(e, regression(), make_backend("cpu"));
            Probe probe;
            t.network().set_operand_observer(&probe);
            for (int i = 0; i < 7; ++i) {
                probe.seen.clear();
                t.step();
                const bool stats = i % 3 == 0;
                QCOMPARE(probe.seen.size(), std::size_t{stats ? 3u : 0u});  // the layers show statistics steps
                for (const Probe::Seen& s : probe.seen) {
                    const QByteArray where = QByteArray::fromStdString(s.layer + " at step " + std::to_string(i) +
                                                                       (what_if ? ", what-if on" : ""));
                    const bool block = s.layer == "fc2";
                    QVERIFY2(s.exponents_x == block, where.constData());
                    QVERIFY2(s.exponents_w == block, where.constData());
                    // fc1's x is the dataset's batch in FP32, measured by its cast to BF16; fc2's,
                    // fc1's output stored in BF16, by its quantiser. fc3's is stored in BF16 as
                    // well and read as it is: no pass reads it before the layer shows it, and
                    // the what-if measures it itself.
                    QVERIFY2(s.amax_x == (what_if && s.layer != "fc3"), where.constData());
                    QVERIFY2(s.x_format == (s.layer == "fc1" ? Format::fp32 : Format::bf16), where.constData());
                }
            }
        }
    }

    void trainerReportsOwnAndAskedFor() {
        // "own" (the default) with no block-scaled layer: nothing; switched live, the layer appears.
        Experiment e = quick_experiment(8, {32, 32});
        e.train.layer_stats_every = 2;
        e.train.what_if.formats.clear();
        Trainer t(e, regression(), make_backend("cpu"));
        QVERIFY(t.step().block_scales.empty());
        t.set_layer_precision("fc1", LayerPrecision::nvfp4);
        QVERIFY(t.step().block_scales.empty());  // not a statistics step
        const StepReport& r = t.step();
        QCOMPARE(r.block_scales.size(), std::size_t{3});
        QCOMPARE(record_of(r.block_scales, "fc1", MatmulOperand::input).format, BlockFormat::nvfp4);
        QCOMPARE(record_of(r.block_scales, "fc1", MatmulOperand::input).blocks_per_row, std::int64_t{8 / 16 + 1});

        // A CNN viewed in MXFP8, few blocks kept: whole rows spread over the patches.
        Experiment c = quick_experiment(4, {16});
        c.model.kind = "cnn";
        c.model.channels = {4, 8};
        c.train.batch_size = 16;
        c.train.layer_stats_every = 1;
        c.train.what_if.formats.clear();
        c.train.block_scales.format = BlockFormat::mxfp8_e4m3;
        c.train.block_scales.max_blocks = 300;
        Trainer n(c, test_support::stripes(256, 64, 3), make_backend("cpu"));
        const StepReport& cr = n.step();
        QCOMPARE(cr.block_scales.size(), std::size_t{4 * 3});  // 3 convolutions and the classifier
        for (const BlockScaleRecord& b : cr.block_scales) {
            QVERIFY(!b.own);
            QCOMPARE(static_cast<std::int64_t>(b.exponents.size()), b.rows * b.blocks_per_row);
            QVERIFY2(b.rows * b.blocks_per_row <= 300 || b.rows == 1, qPrintable(QString::fromStdString(b.name)));
            QVERIFY(b.rows <= b.rows_total);
        }
        const BlockScaleRecord& x1 = record_of(cr.block_scales, "conv1", MatmulOperand::input);
        QCOMPARE(x1.row_length, std::int64_t{9});  // patches of one channel under a 3x3 kernel
        QVERIFY(x1.rows < x1.rows_total);  // 16 images of 64 patches, sampled
        QCOMPARE(x1.rows, std::int64_t{300});        // one block per patch
    }

    void refusedFormatsAreNamed() {
        Experiment e;
        apply_setting(e, "train.block_scales.format=mxfp4");
        apply_setting(e, "train.block_scales.max_blocks=64");
        QCOMPARE(e.train.block_scales.format, std::optional<BlockFormat>(BlockFormat::mxfp4));
        QCOMPARE(e.train.block_scales.max_blocks, std::int64_t{64});
        QVERIFY(experiment_from_json(experiment_to_json(e)) == e);
        apply_setting(e, "train.block_scales.format=off");
        QVERIFY(!e.train.block_scales.enabled);
        QVERIFY(experiment_from_json(experiment_to_json(e)) == e);
    }
};

QTEST_APPLESS_MAIN(TestBlockScaleViews)
#include "test_block_scale_views.moc"
