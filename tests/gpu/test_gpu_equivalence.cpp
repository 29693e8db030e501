// The CUDA backend against the CPU backend (the reference), operation by operation, as docs/cuda.md
// promises: conversions and elementwise ops bit-identical; matmuls within atol + |ref|·eps chosen per
// format (the FP32 accumulation order is the only difference); the fused unscale + check, its
// statistics and the optimizers bit-identical. Every test skips with the reason when there is no
// usable GPU (or the build has no CUDA).
#include <QtTest>

#include <bit>
#include <cmath>
#include <tuple>

#include "backend/cuda/cuda_loader.h"
#include "backend/cuda/format_support.h"
#include "error.h"
#include "gpu_compare.h"

using namespace mantissa;
using namespace gpu_test;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::Activation)
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

std::int64_t format_ulp_in_fp32(Format f) {
    return std::int64_t{1} << (23 - format_info(f).mantissa_bits);
}

// One linear layer's tensors on both backends, as model/network.cpp declares them.
struct LinearTwin : MatmulLayerTwin {
    std::int64_t batch, in, out;

    LinearTwin(Backend& cpu, Backend& gpu, Format c, std::int64_t b, std::int64_t i, std::int64_t o)
        : batch(b), in(i), out(o) {
        compute = c;
        const Format act = output_format(c);
        const bool fp8 = c == Format::fp8_e4m3;
        const float w_scale = 1.0f / std::sqrt(static_cast<float>(in));
        weight = twin(cpu, gpu, desc("fc.weight", out, in, Format::fp32, MemoryCategory::master_weights),
                      random_values(out * in, w_scale, 11));
        bias = twin(cpu, gpu, desc("fc.bias", 1, out, Format::fp32, MemoryCategory::master_weights),
                    random_values(out, 0.1f, 12));
        if (c != Format::fp32 && c != Format::tf32)
            weight_compute = twin(
                cpu, gpu, desc("fc.weight_compute", out, in, fp8 ? Format::fp8_e4m3 : c, MemoryCategory::parameters));
        if (act != Format::fp32)
            bias_compute = twin(cpu, gpu, desc("fc.bias_compute", 1, out, act, MemoryCategory::parameters));
        grad_weight = twin(cpu, gpu, desc("fc.grad_weight", out, in, act, MemoryCategory::gradients));
        grad_bias = twin(cpu, gpu, desc("fc.grad_bias", 1, out, act, MemoryCategory::gradients));
        if (fp8 || c != Format::fp32)
            saved_input =
                twin(cpu, gpu,
                     desc("fc.saved_input", batch, in, fp8 ? Format::fp8_e4m3 : (c == Format::tf32 ? Format::tf32 : c),
                          MemoryCategory::activations));
        x = twin(cpu, gpu, desc("x", batch, in, Format::fp32), random_values(batch * in, 1.0f, 13, 0.05));
        y = twin(cpu, gpu, desc("y", batch, out, act, MemoryCategory::activations));
        dy = twin(cpu, gpu, desc("dy", batch, out, act), random_values(batch * out, 0.05f, 14, 0.05));
        dx = twin(cpu, gpu, desc("dx", batch, in, act));
        if (fp8) {
            fp8_cpu = cpu.create_fp8_state(Fp8Recipe{});
            fp8_gpu = gpu.create_fp8_state(Fp8Recipe{});
        }
    }
    LinearTensors tensors(bool on_gpu) const { return layer_tensors<LinearTensors>(on_gpu); }
    // An FP8 layer's scaling states made again with another recipe (current, rowwise, power-of-two).
    void use_recipe(Backend& cpu, Backend& gpu, const Fp8Recipe& recipe) {
        fp8_cpu = cpu.create_fp8_state(recipe);
        fp8_gpu = gpu.create_fp8_state(recipe);
    }

    // One forward and backward on both backends, "" when they agree: y within atol + |ref|·eps,
    // the same stochastic keys drawn, the weight gradient's counts of elements and non-finite
    // values, and backward_differs's outputs.
    QString step_differs(Backend& cpu, Backend& gpu, LinearTensors& lc, LinearTensors& lg, double atol, double eps) {
        cpu.linear_forward(lc, x.c(), y.c(), batch, true);
        gpu.linear_forward(lg, x.g(), y.g(), batch, true);
        if (QString d = compare_close(read(cpu, y.c()), read(gpu, y.g()), atol, eps); !d.isEmpty()) return "y: " + d;
        RoundingStats sc, sg;
        cpu.linear_backward(lc, x.c(), dy.c(), &dx.c(), batch, &sc);
        gpu.linear_backward(lg, x.g(), dy.g(), &dx.g(), batch, &sg);
        if (QString d = stochastic_keys_differ(cpu, gpu); !d.isEmpty()) return d;
        if (sg.elements != sc.elements || sg.nonfinite != sc.nonfinite) return "the weight gradient's counts";
        return backward_differs(cpu, gpu, atol, eps);
    }
    // What the backward wrote on the two backends, "" when it agrees: dX within atol/10 + |ref|·eps
    // and dW within atol/2 + |ref|·eps (linear's bounds: FP32 summation order), dB bit for bit.
    QString backward_differs(Backend& cpu, Backend& gpu, double atol, double eps) {
        if (QString d = compare_close(read(cpu, dx.c()), read(gpu, dx.g()), atol * 0.1, eps); !d.isEmpty())
            return "dx: " + d;
        if (QString d = compare_close(read(cpu, grad_weight.c()), read(gpu, grad_weight.g()), atol * 0.5, eps);
            !d.isEmpty())
            return "grad_weight: " + d;
        if (QString d = compare_bits(read(cpu, grad_bias.c()), read(gpu, grad_bias.g())); !d.isEmpty())
            return "grad_bias: " + d;
        return {};
    }
    // The end of a step for the FP8 states of both, and what differs in them then, "" when
    // nothing: the amax histories and the scales, bit for bit.
    QString fp8_states_differ(Backend& cpu, Backend& gpu) {
        cpu.update_fp8_scales(*fp8_cpu);
        gpu.update_fp8_scales(*fp8_gpu);
        for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
            const Fp8TensorSnapshot c = fp8_cpu->snapshot(r), g = fp8_gpu->snapshot(r);
            if (g.amax_history != c.amax_history) return QString("%1: the amax histories").arg(fp8_role_name(r));
            if (std::bit_cast<std::uint32_t>(g.scale) != std::bit_cast<std::uint32_t>(c.scale))
                return QString("%1: scale %2 on the GPU, %3 on the CPU")
                    .arg(fp8_role_name(r))
                    .arg(g.scale)
                    .arg(c.scale);
        }
        return {};
    }
};

}  // namespace

class TestGpuEquivalence : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> m_cpu, m_gpu;
    std::string m_reason;

#define REQUIRE_GPU() GPU_TEST_REQUIRE(m_gpu, m_reason)

private slots:
    void initTestCase() {
        m_cpu = make_backend("cpu");
        m_gpu = cuda_backend(m_reason);
        if (!m_gpu) QSKIP(qPrintable(gpu_test::suite_skipped(m_reason)));
        qInfo("GPU: %s", m_gpu->device_name().c_str());
    }
    void cleanupTestCase() {
        m_gpu.reset();
    }

    // ---- conversions

    void upload_download_data() {
        QTest::addColumn<Format>("format");
        for (Format f : all_formats) QTest::newRow(std::string(format_name(f)).c_str()) << f;
    }
    void upload_download() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        std::vector<float> v = probe_values(1);
        // Every value of the 8- and 16-bit formats, exactly.
        for (std::uint32_t b = 0; b < 65536; ++b) v.push_back(decode(Format::fp16, b));
        for (std::uint32_t b = 0; b < 65536; ++b) v.push_back(decode(Format::bf16, b));
        for (std::uint32_t b = 0; b < 256; ++b) v.push_back(decode(Format::fp8_e4m3, b));
        const auto n = static_cast<std::int64_t>(v.size());
        Twin t = twin(*m_cpu, *m_gpu, desc("t", 1, n, format), v);
        const QString diff = compare_bits(read(*m_cpu, t.c()), read(*m_gpu, t.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    void cast_data() {
        QTest::addColumn<Format>("from");
        QTest::addColumn<Format>("to");
        for (Format a : all_formats)
            for (Format b : all_formats)
                QTest::addRow("%s-to-%s", std::string(format_name(a)).c_str(), std::string(format_name(b)).c_str())
                    << a << b;
    }
    void cast() {
        REQUIRE_GPU();
        QFETCH(Format, from);
        QFETCH(Format, to);
        const std::vector<float> v = probe_values(2);
        const auto n = static_cast<std::int64_t>(v.size());
        Twin src = twin(*m_cpu, *m_gpu, desc("src", 1, n, from), v);
        Twin dst = twin(*m_cpu, *m_gpu, desc("dst", 1, n, to));
        m_cpu->cast(src.c(), dst.c());
        m_gpu->cast(src.g(), dst.g());
        QString diff = compare_bits(read(*m_cpu, dst.c()), read(*m_gpu, dst.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        // convert: the tensor re-declared in place, accounting and all.
        m_cpu->convert(src.c(), to);
        m_gpu->convert(src.g(), to);
        QCOMPARE(src.g().format(), to);
        diff = compare_bits(read(*m_cpu, src.c()), read(*m_gpu, src.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    void fill_and_poke_data() {
        QTest::addColumn<Format>("format");
        for (Format f : all_formats) QTest::newRow(std::string(format_name(f)).c_str()) << f;
    }
    void fill_and_poke() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        for (float value : {0.1f, -3.0e5f, 1.0e-7f, 7.0e4f, 0.0f, -0.0f, INFINITY, NAN}) {
            Twin t = twin(*m_cpu, *m_gpu, desc("t", 3, 5, format));
            m_cpu->fill(t.c(), value);
            m_gpu->fill(t.g(), value);
            m_cpu->poke(t.c(), 7, INFINITY);
            m_gpu->poke(t.g(), 7, INFINITY);
            m_cpu->poke(t.c(), 8, -NAN);
            m_gpu->poke(t.g(), 8, -NAN);
            const std::vector<float> c = read(*m_cpu, t.c()), g = read(*m_gpu, t.g());
            // Narrow formats cannot hold an unrounded NaN payload or inf in e4m3: compare classes there.
            for (std::size_t i = 0; i < c.size(); ++i) {
                if (i == 7 || i == 8) {
                    QCOMPARE(std::isnan(c[i]), std::isnan(g[i]));
                    if (!std::isnan(c[i])) QCOMPARE(c[i], g[i]);
                } else {
                    QCOMPARE(std::bit_cast<std::uint32_t>(g[i]), std::bit_cast<std::uint32_t>(c[i]));
                }
            }
        }
    }

    // ---- elementwise

    void activations_data() {
        QTest::addColumn<Activation>("act");
        QTest::addColumn<Format>("format");
        for (Activation a : {Activation::relu, Activation::gelu, Activation::tanh})
            for (Format f : {Format::fp32, Format::fp16, Format::bf16})
                QTest::addRow("%s-%s", activation_name(a), std::string(format_name(f)).c_str()) << a << f;
    }
    void activations() {
        REQUIRE_GPU();
        QFETCH(Activation, act);
        QFETCH(Format, format);
        const std::int64_t rows = 63, cols = 333;  // an odd count: relu's vectorised path has a tail
        std::vector<float> zv = random_values(rows * cols, 3.0f, 21, 0.05);
        zv[0] = NAN;
        zv[1] = INFINITY;
        zv[2] = -INFINITY;
        zv[3] = -0.0f;
        Twin z = twin(*m_cpu, *m_gpu, desc("z", rows, cols, format), zv);
        Twin a = twin(*m_cpu, *m_gpu, desc("a", rows, cols, format));
        Twin da = twin(*m_cpu, *m_gpu, desc("da", rows, cols, format), random_values(rows * cols, 1.0f, 22));
        Twin dz = twin(*m_cpu, *m_gpu, desc("dz", rows, cols, format));
        m_cpu->activation_forward(act, z.c(), a.c(), rows);
        m_gpu->activation_forward(act, z.g(), a.g(), rows);
        // relu is exact. tanh and gelu call CUDA's tanhf/erff/expf (2 ulp) where the CPU calls the
        // C library's: tanh is compared in ulps (a few in FP32, one of a narrower format); gelu,
        // whose 1 + erf(z/√2) cancels for negative z, with an absolute bound from erff's error.
        const std::vector<float> ac = read(*m_cpu, a.c());
        const std::int64_t ulps = format == Format::fp32 ? 4 : format_ulp_in_fp32(format);
        const double eps = format == Format::fp32 ? 1e-6 : format_info(format).epsilon;
        QString diff;
        if (act == Activation::relu)
            diff = compare_bits(ac, read(*m_gpu, a.g()));
        else if (act == Activation::tanh)
            diff = compare_ulps(ac, read(*m_gpu, a.g()), ulps);
        else
            diff = compare_close(ac, read(*m_gpu, a.g()), 4e-6, eps);
        QVERIFY2(diff.isEmpty(), qPrintable("forward: " + diff));
        // Backward from the CPU's forward output, so only the backward is compared: relu and tanh
        // (da·(1 - a²)) are exact arithmetic on equal inputs, gelu uses erff/expf again.
        m_gpu->upload(a.g(), ac.data(), rows * cols);
        m_cpu->activation_backward(act, z.c(), a.c(), da.c(), dz.c(), rows);
        m_gpu->activation_backward(act, z.g(), a.g(), da.g(), dz.g(), rows);
        if (act == Activation::gelu)
            diff = compare_close(read(*m_cpu, dz.c()), read(*m_gpu, dz.g()), 4e-6, eps);
        else
            diff = compare_bits(read(*m_cpu, dz.c()), read(*m_gpu, dz.g()));
        QVERIFY2(diff.isEmpty(), qPrintable("backward: " + diff));
    }

    void softmax_cross_entropy_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("classes");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            for (int c : {10, 100, 1000}) QTest::addRow("%s-%d", std::string(format_name(f)).c_str(), c) << f << c;
    }
    void softmax_cross_entropy() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        QFETCH(int, classes);
        const std::int64_t batch = 257;
        std::vector<float> lv = random_values(batch * classes, 4.0f, 31);
        for (int c = 0; c < classes; ++c)
            lv[static_cast<std::size_t>(classes + c)] = 1.5f;  // a tied row: argmax is the first
        lv[static_cast<std::size_t>(2 * classes + 3)] = NAN;
        std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
        for (std::int64_t r = 0; r < batch; ++r)
            labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 7) % classes);
        labels[1] = 0;
        Twin logits = twin(*m_cpu, *m_gpu, desc("logits", batch, classes, format), lv);
        Twin d = twin(*m_cpu, *m_gpu, desc("dlogits", batch, classes, format));
        const LossResult rc = m_cpu->softmax_cross_entropy(logits.c(), labels.data(), batch, 1024.0f, &d.c());
        const LossResult rg = m_gpu->softmax_cross_entropy(logits.g(), labels.data(), batch, 1024.0f, &d.g());
        QCOMPARE(rg.correct, rc.correct);
        QCOMPARE(std::isnan(rg.loss), std::isnan(rc.loss));
        // The row with a NaN makes the mean NaN on both; compare the rest through a clean batch.
        const std::int64_t clean = 2;
        const LossResult cc = m_cpu->softmax_cross_entropy(logits.c(), labels.data(), clean, 1.0f, nullptr);
        const LossResult cg = m_gpu->softmax_cross_entropy(logits.g(), labels.data(), clean, 1.0f, nullptr);
        QVERIFY2(std::abs(cg.loss - cc.loss) <= 1e-6 * std::abs(cc.loss) + 1e-7,
                 qPrintable(QString("%1 vs %2").arg(cg.loss).arg(cc.loss)));
        const double eps = format == Format::fp32 ? 1e-5 : format_info(format).epsilon;
        const QString diff = compare_close(read(*m_cpu, d.c()), read(*m_gpu, d.g()), 1024.0 / batch * 1e-6, eps);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    void mse_data() {
        QTest::addColumn<Format>("format");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            QTest::newRow(std::string(format_name(f)).c_str()) << f;
    }
    void mse() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        const std::int64_t batch = 300, cols = 3;
        const std::vector<float> targets = random_values(batch * cols, 1.0f, 41);
        Twin y = twin(*m_cpu, *m_gpu, desc("y", batch, cols, format), random_values(batch * cols, 1.0f, 42));
        Twin dy = twin(*m_cpu, *m_gpu, desc("dy", batch, cols, format));
        const LossResult rc = m_cpu->mse(y.c(), targets.data(), batch, 256.0f, &dy.c());
        const LossResult rg = m_gpu->mse(y.g(), targets.data(), batch, 256.0f, &dy.g());
        QVERIFY2(std::abs(rg.loss - rc.loss) <= 1e-6 * rc.loss,
                 qPrintable(QString("%1 vs %2").arg(rg.loss).arg(rc.loss)));
        const QString diff = compare_bits(read(*m_cpu, dy.c()), read(*m_gpu, dy.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // ---- matmuls

    void linear_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3}) {
            const std::string n(format_name(f));
            // 1008: the bias gradient's column sums span several tiles of 256 rows, the last one short.
            for (int b : {64, 256, 1008}) QTest::addRow("%s-batch%d", n.c_str(), b) << f << b << 96 << 48;
            // Sizes cuBLASLt's FP8 kernels do not take (a 10-class head, an odd last batch).
            QTest::addRow("%s-odd", n.c_str()) << f << 50 << 100 << 10;
        }
    }
    void linear() {
        REQUIRE_GPU();
        QFETCH(Format, compute);
        QFETCH(int, batch);
        QFETCH(int, in);
        QFETCH(int, out);
        LinearTwin l(*m_cpu, *m_gpu, compute, batch, in, out);
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        m_cpu->linear_forward(lc, l.x.c(), l.y.c(), batch, true);
        try {
            m_gpu->linear_forward(lg, l.x.g(), l.y.g(), batch, true);
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("cannot compute"), e.what());
            QSKIP(qPrintable(QString("this GPU refuses %1: %2").arg(format_name(compute).data()).arg(e.what())));
        }
        const Format act = output_format(compute);
        const double eps = act == Format::fp32 ? 1e-5 : format_info(act).epsilon;
        const double atol = compute == Format::fp8_e4m3 ? 1e-3 : 1e-4;
        QString diff = compare_close(read(*m_cpu, l.y.c()), read(*m_gpu, l.y.g()), atol, eps);
        QVERIFY2(diff.isEmpty(), qPrintable("y: " + diff));
        // The operand copies are casts: bit-identical.
        if (l.saved_input.cpu) {
            diff = compare_bits(read(*m_cpu, l.saved_input.c()), read(*m_gpu, l.saved_input.g()));
            QVERIFY2(diff.isEmpty(), qPrintable("saved_input: " + diff));
        }
        if (l.weight_compute.cpu) {
            diff = compare_bits(read(*m_cpu, l.weight_compute.c()), read(*m_gpu, l.weight_compute.g()));
            QVERIFY2(diff.isEmpty(), qPrintable("weight_compute: " + diff));
        }

        RoundingStats sc, sg;
        m_cpu->linear_backward(lc, l.x.c(), l.dy.c(), &l.dx.c(), batch, &sc);
        m_gpu->linear_backward(lg, l.x.g(), l.dy.g(), &l.dx.g(), batch, &sg);
        diff = compare_close(read(*m_cpu, l.dx.c()), read(*m_gpu, l.dx.g()), atol * 0.1, eps);
        QVERIFY2(diff.isEmpty(), qPrintable("dx: " + diff));
        diff = compare_close(read(*m_cpu, l.grad_weight.c()), read(*m_gpu, l.grad_weight.g()), atol * 0.5, eps);
        QVERIFY2(diff.isEmpty(), qPrintable("grad_weight: " + diff));
        // The bias gradient is a column sum in row order on both: bit-identical.
        diff = compare_bits(read(*m_cpu, l.grad_bias.c()), read(*m_gpu, l.grad_bias.g()));
        QVERIFY2(diff.isEmpty(), qPrintable("grad_bias: " + diff));
        QCOMPARE(sg.elements, sc.elements);
        const std::int64_t slack = std::max<std::int64_t>(2, sc.elements / 50);
        QVERIFY(std::llabs(sg.zeros - sc.zeros) <= slack);
        QVERIFY(std::llabs(sg.subnormals - sc.subnormals) <= slack);
        QCOMPARE(sg.nonfinite, sc.nonfinite);

        if (compute == Format::fp8_e4m3) {
            // The delayed scaling state: the same amaxes, so the same histories and scales.
            m_cpu->update_fp8_scales(*l.fp8_cpu);
            m_gpu->update_fp8_scales(*l.fp8_gpu);
            for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
                const Fp8TensorSnapshot c = l.fp8_cpu->snapshot(r), g = l.fp8_gpu->snapshot(r);
                QCOMPARE(std::bit_cast<std::uint32_t>(g.scale), std::bit_cast<std::uint32_t>(c.scale));
                QCOMPARE(std::bit_cast<std::uint32_t>(g.scale_inv), std::bit_cast<std::uint32_t>(c.scale_inv));
                QCOMPARE(g.amax_history, c.amax_history);
            }
            // A second step with the new scales.
            m_cpu->linear_forward(lc, l.x.c(), l.y.c(), batch, true);
            m_gpu->linear_forward(lg, l.x.g(), l.y.g(), batch, true);
            diff = compare_bits(read(*m_cpu, l.saved_input.c()), read(*m_gpu, l.saved_input.g()));
            QVERIFY2(diff.isEmpty(), qPrintable("scaled saved_input: " + diff));
            diff = compare_close(read(*m_cpu, l.y.c()), read(*m_gpu, l.y.g()), atol, eps);
            QVERIFY2(diff.isEmpty(), qPrintable("y after rescaling: " + diff));
        }
    }

    // Block-scaled layers (MX, NVFP4): the operands rounded by the device's quantiser are the CPU's
    // values (tests/engine/cuda_host holds the arithmetic bit for bit), so y, dX and dW differ only
    // in the FP32 accumulation order; to nearest and with stochastic gradients (the same keys drawn
    // in the same order: dy's two roundings, then dX's and dW's). Rows cut into whole and partial
    // blocks (in 96 = 3 · 32, out 10, in 100), and a batch that is not a multiple of 32 (wgrad's
    // blocks run along the batch).
    void linear_block_scaled_data() {
        QTest::addColumn<BlockFormat>("format");
        QTest::addColumn<bool>("stochastic");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        for (BlockFormat f : all_block_formats)
            for (bool stochastic : {false, true}) {
                const std::string n = std::string(block_format_name(f)) + (stochastic ? "-stochastic" : "");
                QTest::addRow("%s-batch64", n.c_str()) << f << stochastic << 64 << 96 << 48;
                QTest::addRow("%s-odd", n.c_str()) << f << stochastic << 50 << 100 << 10;
            }
    }
    void linear_block_scaled() {
        REQUIRE_GPU();
        QFETCH(BlockFormat, format);
        QFETCH(bool, stochastic);
        QFETCH(int, batch);
        QFETCH(int, in);
        QFETCH(int, out);
        if (const std::string why = m_gpu->unsupported(BackendOp::block_scaled, Format::fp32); !why.empty())
            QSKIP(why.c_str());
        LinearTwin l(*m_cpu, *m_gpu, Format::fp32, batch, in, out);
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        lc.block = lg.block = format;
        lc.stochastic_gradients = lg.stochastic_gradients = stochastic;
        m_cpu->seed_stochastic_rounding(43);
        m_gpu->seed_stochastic_rounding(43);
        // (dB: of the unquantised dy, a column sum in row order on both.)
        const QString diff = l.step_differs(*m_cpu, *m_gpu, lc, lg, 1e-4, 1e-5);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // The FP8 recipes beyond delayed scaling: current scaling (each tensor's scale from its own amax,
    // on the device), power-of-two scales (current and delayed), rowwise scaling (a scale per run
    // along each matmul's reduction dimension, decoded in FP32, an FP32 GEMM), with stochastic
    // gradients. The scales, histories and rowwise values are the CPU's bits
    // (tests/engine/cuda_host: test_cuda_fp8_scale_rule); y, dX and dW differ only in the FP32
    // summation order. Two steps, so that the delayed scales computed at the end of the first
    // step are used in the second.
    void linear_fp8_recipes_data() {
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("power_of_two");
        QTest::addColumn<bool>("stochastic");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("out");
        const std::tuple<const char*, Fp8Scaling, bool, bool> recipes[] = {
            {"current", Fp8Scaling::current, false, false},
            {"current-pow2", Fp8Scaling::current, true, false},
            {"delayed-pow2", Fp8Scaling::delayed, true, false},
            {"rowwise", Fp8Scaling::rowwise, false, false},
            {"rowwise-pow2-stochastic", Fp8Scaling::rowwise, true, true},
            {"current-stochastic", Fp8Scaling::current, false, true}};
        for (const auto& [name, scaling, p2, stochastic] : recipes) {
            QTest::addRow("%s", name) << static_cast<int>(scaling) << p2 << stochastic << 64 << 48;
            QTest::addRow("%s-odd", name) << static_cast<int>(scaling) << p2 << stochastic << 50 << 10;
        }
    }
    void linear_fp8_recipes() {
        REQUIRE_GPU();
        QFETCH(int, scaling);
        QFETCH(bool, power_of_two);
        QFETCH(bool, stochastic);
        QFETCH(int, batch);
        QFETCH(int, out);
        if (const std::string why = m_gpu->unsupported(BackendOp::linear, Format::fp8_e4m3); !why.empty())
            QSKIP(why.c_str());
        const std::int64_t in = 96;
        LinearTwin l(*m_cpu, *m_gpu, Format::fp8_e4m3, batch, in, out);
        Fp8Recipe recipe;
        recipe.scaling = static_cast<Fp8Scaling>(scaling);
        recipe.power_of_two = power_of_two;
        recipe.margin = 1;
        l.use_recipe(*m_cpu, *m_gpu, recipe);
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        lc.stochastic_gradients = lg.stochastic_gradients = stochastic;
        m_cpu->seed_stochastic_rounding(47);
        m_gpu->seed_stochastic_rounding(47);
        const Format act = output_format(Format::fp8_e4m3);
        const double eps = format_info(act).epsilon, atol = 1e-3;
        for (int step = 0; step < 2; ++step) {
            const QString at = QString(" (step %1)").arg(step);
            QString diff = l.step_differs(*m_cpu, *m_gpu, lc, lg, atol, eps * (stochastic ? 2.0 : 1.0));
            QVERIFY2(diff.isEmpty(), qPrintable(diff + at));
            // The scales the step used (current: from the tensors themselves).
            for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
                const Fp8TensorSnapshot c = l.fp8_cpu->snapshot(r), g = l.fp8_gpu->snapshot(r);
                QCOMPARE(std::bit_cast<std::uint32_t>(g.scale), std::bit_cast<std::uint32_t>(c.scale));
                QCOMPARE(std::bit_cast<std::uint32_t>(g.scale_inv), std::bit_cast<std::uint32_t>(c.scale_inv));
            }
            diff = l.fp8_states_differ(*m_cpu, *m_gpu);
            QVERIFY2(diff.isEmpty(), qPrintable(diff + at));
        }
    }

    // FP16 accumulation (CUBLAS_COMPUTE_16F): a sum kept in FP16 loses part of every product once it
    // is 2^11 times larger than them, so over K = 2048 positive products its error against the FP64
    // sum is many times FP32 accumulation's. The tensor cores add in their own order and width,
    // so the GPU's sums are compared with the CPU emulation's in size, not bit for bit: both far
    // above FP32 accumulation's error, the GPU's at most the emulation's (a sequential FP16 sum is
    // the worst order) times a small factor.
    void linear_fp16_accumulation() {
        REQUIRE_GPU();
        const std::int64_t batch = 32, in = 2048, out = 16;
        LinearTwin l(*m_cpu, *m_gpu, Format::fp16, batch, in, out);
        std::vector<float> x = random_values(batch * in, 0.25f, 21), w = random_values(out * in, 0.25f, 22);
        for (float& v : x) v = 0.75f + v;  // in [0.5, 1): positive products, a growing sum
        for (float& v : w) v = 0.75f + v;
        const std::vector<float> zeros(static_cast<std::size_t>(out), 0.0f);
        for (Backend* b : {m_cpu.get(), m_gpu.get()}) {
            const bool gpu = b == m_gpu.get();
            b->upload(gpu ? l.x.g() : l.x.c(), x.data(), batch * in);
            b->upload(gpu ? l.weight.g() : l.weight.c(), w.data(), out * in);
            b->upload(gpu ? l.bias.g() : l.bias.c(), zeros.data(), out);
        }
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        // The error of y against the FP64 sums of the operands as multiplied (their fp16 copies),
        // relative to the sum of the products' magnitudes; the largest over the outputs.
        auto error_of = [&](const std::vector<float>& y) {
            const std::vector<float> xq = read(*m_cpu, l.saved_input.c()), wq = read(*m_cpu, l.weight_compute.c());
            double worst = 0;
            for (std::int64_t b = 0; b < batch; ++b)
                for (std::int64_t o = 0; o < out; ++o) {
                    double exact = 0, magnitude = 0;
                    for (std::int64_t k = 0; k < in; ++k) {
                        const double p = double(xq[b * in + k]) * double(wq[o * in + k]);
                        exact += p;
                        magnitude += std::abs(p);
                    }
                    worst = std::max(worst, std::abs(double(y[b * out + o]) - exact) / magnitude);
                }
            return worst;
        };
        lc.fp16_accumulation = true;
        m_cpu->linear_forward(lc, l.x.c(), l.y.c(), batch, true);  // (its operand copies: error_of's)
        m_gpu->linear_forward(lg, l.x.g(), l.y.g(), batch, true);  // FP32 accumulation
        const double fp32_error = error_of(read(*m_gpu, l.y.g()));
        lg.fp16_accumulation = true;
        m_gpu->linear_forward(lg, l.x.g(), l.y.g(), batch, true);
        const double cpu_error = error_of(read(*m_cpu, l.y.c())), gpu_error = error_of(read(*m_gpu, l.y.g()));
        qInfo(
            "relative error against FP64, K = %lld: FP32 accumulation %.3g, FP16 on the GPU %.3g, FP16 emulated "
            "in order on the CPU %.3g",
            static_cast<long long>(in), fp32_error, gpu_error, cpu_error);
        QVERIFY2(cpu_error > 8 * fp32_error, "the emulation does not lose what FP16 accumulation loses");
        QVERIFY2(gpu_error > 4 * fp32_error, "the GPU did not accumulate in FP16");
        QVERIFY2(gpu_error <= 4 * cpu_error, "the GPU's FP16 sums are further off than sequential FP16 sums");
        // The backward accumulates in FP16 too: dX and dW finite and of the emulation's size.
        RoundingStats sc, sg;
        m_cpu->linear_backward(lc, l.x.c(), l.dy.c(), &l.dx.c(), batch, &sc);
        m_gpu->linear_backward(lg, l.x.g(), l.dy.g(), &l.dx.g(), batch, &sg);
        const QString diff = compare_close(read(*m_cpu, l.dx.c()), read(*m_gpu, l.dx.g()), 1e-2, 0.05);
        QVERIFY2(diff.isEmpty(), qPrintable("dx: " + diff));
        QCOMPARE(sg.nonfinite, sc.nonfinite);
    }

    // A precision per matmul (LinearTensors::dgrad, wgrad): each backward matmul's operands in its
    // own format, as the CPU's per_gemm_backward_operands prepares them (Transformer Engine's FP8
    // with the weight gradient in BF16, FP8 only in the weight gradient, block formats mixed, a
    // tensor format per matmul), at sizes cuBLASLt's FP8 kernels take and at odd ones: dX and dW
    // within linear's bound, dB bit for bit, the FP8 histories and the stochastic keys the same.
    void linear_per_gemm_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("out");
        const std::vector<PerGemmSetting> settings = per_gemm_settings();
        for (int i = 0; i < static_cast<int>(settings.size()); ++i) {
            QTest::addRow("%s", settings[static_cast<std::size_t>(i)].name) << i << 64 << 48;
            QTest::addRow("%s-odd", settings[static_cast<std::size_t>(i)].name) << i << 50 << 10;
        }
    }
    void linear_per_gemm() {
        REQUIRE_GPU();
        QFETCH(int, which);
        QFETCH(int, batch);
        QFETCH(int, out);
        const std::int64_t in = 96;
        const PerGemmSetting s = per_gemm_settings()[static_cast<std::size_t>(which)];
        for (const std::optional<ComputeFormat>& f : {std::optional<ComputeFormat>(s.compute), s.dgrad, s.wgrad})
            if (f && !f->block && !m_gpu->supports(BackendOp::linear, f->format))
                QSKIP(m_gpu->unsupported(BackendOp::linear, f->format).c_str());
        if (s.block && !m_gpu->supports(BackendOp::block_scaled, Format::fp32))
            QSKIP(m_gpu->unsupported(BackendOp::block_scaled, Format::fp32).c_str());
        LinearTwin l(*m_cpu, *m_gpu, s.compute, batch, in, out);
        const bool any_fp8 = s.any_fp8();
        if (any_fp8 && !l.fp8_cpu) l.use_recipe(*m_cpu, *m_gpu, Fp8Recipe{});
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        s.set_on(lc);
        s.set_on(lg);
        m_cpu->seed_stochastic_rounding(59);
        m_gpu->seed_stochastic_rounding(59);
        const double eps = s.eps(), atol = any_fp8 ? 1e-3 : 1e-4;
        for (int step = 0; step < 2; ++step) {
            const QString at = QString(" (step %1)").arg(step);
            QString diff = l.step_differs(*m_cpu, *m_gpu, lc, lg, atol, eps);
            QVERIFY2(diff.isEmpty(), qPrintable(diff + at));
            if (!any_fp8) continue;
            diff = l.fp8_states_differ(*m_cpu, *m_gpu);
            QVERIFY2(diff.isEmpty(), qPrintable(diff + at));
        }
    }

    void refuses_unsupported_formats() {
        REQUIRE_GPU();
        const CudaReport& r = cuda_loader().report();
        QVERIFY(!r.devices.empty());
        const cuda::ComputeCapability cc{r.devices[0].cc_major, r.devices[0].cc_minor};
        int refused = 0;
        for (Format f : {Format::tf32, Format::bf16, Format::fp8_e4m3}) {
            if (cuda::matmul_support(f, cc).supported) continue;
            ++refused;
            LinearTwin l(*m_cpu, *m_gpu, f, 32, 32, 32);
            LinearTensors lg = l.tensors(true);
            try {
                m_gpu->linear_forward(lg, l.x.g(), l.y.g(), 32, true);
                QFAIL(qPrintable(QString("%1 was not refused").arg(format_name(f).data())));
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).contains(QString::fromStdString(cc.text())), e.what());
            }
        }
        if (!refused) QSKIP("this GPU multiplies in every format");
    }

    // ---- gradients and optimizers

    void unscale_and_check_data() {
        QTest::addColumn<bool>("inject");
        QTest::newRow("finite") << false;
        QTest::newRow("inf in the third") << true;
    }
    void unscale_and_check() {
        REQUIRE_GPU();
        QFETCH(bool, inject);
        std::vector<Twin> grads;
        const Format formats[] = {Format::fp32, Format::fp16, Format::bf16, Format::fp16, Format::tf32};
        for (int i = 0; i < 5; ++i) {
            const std::int64_t n = 1000 + 70001 * i;  // several chunks each
            std::vector<float> v = random_values(n, 2048.0f, 50 + static_cast<std::uint32_t>(i), 0.1);
            v[5] = 1e-30f;
            grads.push_back(twin(*m_cpu, *m_gpu, desc("g", 1, n, formats[i], MemoryCategory::gradients), v));
        }
        if (inject) {
            m_cpu->poke(grads[2].c(), 17, INFINITY);
            m_gpu->poke(grads[2].g(), 17, INFINITY);
            m_cpu->poke(grads[4].c(), 3, NAN);
            m_gpu->poke(grads[4].g(), 3, NAN);
        }
        std::vector<Tensor*> gc, gg;
        for (auto& t : grads) {
            gc.push_back(t.cpu.get());
            gg.push_back(t.gpu.get());
        }
        const std::vector<bool> want = {true, false, true, true, true};
        std::vector<GradientSummary> sc, sg;
        const float inv = 1.0f / 65536.0f;
        const UnscaleResult rc = m_cpu->unscale_and_check(gc, inv, want, &sc);
        const UnscaleResult rg = m_gpu->unscale_and_check(gg, inv, want, &sg);
        QCOMPARE(rg.found_nonfinite, rc.found_nonfinite);
        QCOMPARE(rg.first_nonfinite, rc.first_nonfinite);
        if (!inject)
            QVERIFY(std::abs(rg.sum_squares - rc.sum_squares) <= 1e-10 * rc.sum_squares);
        else
            QVERIFY(!std::isfinite(rg.sum_squares));
        for (std::size_t t = 0; t < grads.size(); ++t) {
            // The unscaled values (FP32, also in the narrow gradients) are the same bits.
            const QString diff = compare_bits(read(*m_cpu, grads[t].c()), read(*m_gpu, grads[t].g()));
            QVERIFY2(diff.isEmpty(), qPrintable(QString("gradient %1: %2").arg(t).arg(diff)));
            if (!want[t]) continue;
            QCOMPARE(sg[t].amax, sc[t].amax);
            QCOMPARE(sg[t].nonfinite, sc[t].nonfinite);
            QVERIFY(sg[t].exponents.counts == sc[t].exponents.counts);
        }
    }

    // A linear layer whose gradients round stochastically (precision.rounding.gradients): both
    // backends seeded alike draw the same keys in the same order (the FP8 dy operand's, dX's, dW's),
    // so dX and dW agree but where the FP32 sums' order put a value on the other side of its random
    // threshold: then by one step of the format. Keys drawn apart would leave about half the
    // values a step apart.
    void linear_stochastic_gradients_data() {
        QTest::addColumn<Format>("compute");
        for (Format f : {Format::fp16, Format::bf16, Format::fp8_e4m3})
            QTest::newRow(std::string(format_name(f)).c_str()) << f;
    }
    void linear_stochastic_gradients() {
        REQUIRE_GPU();
        QFETCH(Format, compute);
        const std::int64_t batch = 128, in = 256, out = 64;
        LinearTwin l(*m_cpu, *m_gpu, compute, batch, in, out);
        LinearTensors lc = l.tensors(false), lg = l.tensors(true);
        lc.stochastic_gradients = lg.stochastic_gradients = true;
        m_cpu->seed_stochastic_rounding(41);
        m_gpu->seed_stochastic_rounding(41);
        m_cpu->linear_forward(lc, l.x.c(), l.y.c(), batch, true);
        try {
            m_gpu->linear_forward(lg, l.x.g(), l.y.g(), batch, true);
        } catch (const Error& e) {
            QSKIP(qPrintable(QString("this GPU refuses %1: %2").arg(format_name(compute).data()).arg(e.what())));
        }
        RoundingStats sc, sg;
        m_cpu->linear_backward(lc, l.x.c(), l.dy.c(), &l.dx.c(), batch, &sc);
        m_gpu->linear_backward(lg, l.x.g(), l.dy.g(), &l.dx.g(), batch, &sg);
        QCOMPARE(m_gpu->stochastic_rounding_position(), m_cpu->stochastic_rounding_position());
        QVERIFY(m_cpu->stochastic_rounding_position() >= 2);  // dX and dW at least
        const Format act = output_format(compute);
        const double step = format_info(act).epsilon;  // one step, relative
        const double atol = compute == Format::fp8_e4m3 ? 1e-3 : 1e-4;
        for (const auto& [name, cpu_values, gpu_values] :
             {std::tuple{"dx", read(*m_cpu, l.dx.c()), read(*m_gpu, l.dx.g())},
              std::tuple{"grad_weight", read(*m_cpu, l.grad_weight.c()), read(*m_gpu, l.grad_weight.g())}}) {
            const QString diff = compare_close(cpu_values, gpu_values, atol, 2.0 * step);
            QVERIFY2(diff.isEmpty(), qPrintable(QString(name) + ": " + diff));
            std::size_t same = 0;
            for (std::size_t i = 0; i < cpu_values.size(); ++i)
                same += std::bit_cast<std::uint32_t>(cpu_values[i]) == std::bit_cast<std::uint32_t>(gpu_values[i]);
            QVERIFY2(same * 10 >= cpu_values.size() * 9,
                     qPrintable(QString("%1: %2 of %3 the same bits").arg(name).arg(same).arg(cpu_values.size())));
        }
    }

    // Every optimizer, on parameters of each format, to nearest and (narrow ones) stochastically or
    // Kahan-compensated, with and without weight decay (SGD adds it only where it is set, as torch
    // does). Both backends seeded alike draw the same key for each step.
    void optimizers_data() {
        QTest::addColumn<QString>("optimizer");
        QTest::addColumn<Format>("param");
        QTest::addColumn<Format>("grad");
        QTest::addColumn<int>("rounding");
        QTest::addColumn<double>("decay");
        const struct {
            WeightRounding rounding;
            const char* suffix;
        } roundings[] = {{WeightRounding::nearest, ""},
                         {WeightRounding::stochastic, "-stochastic"},
                         {WeightRounding::kahan, "-kahan"}};
        for (const char* o : {"sgd", "sgd-momentum", "adamw"})
            for (Format p : {Format::fp32, Format::fp16, Format::bf16})
                for (Format g : {Format::fp32, Format::fp16})
                    for (const auto& r : roundings)
                        for (double decay : {0.0, 1e-2}) {
                            // An FP32 parameter has nothing to round: every rounding is the same.
                            if (r.rounding != WeightRounding::nearest && p == Format::fp32) continue;
                            QTest::addRow("%s-%s-grad-%s%s%s", o, std::string(format_name(p)).c_str(),
                                          std::string(format_name(g)).c_str(), r.suffix, decay != 0.0 ? "-decay" : "")
                                << QString(o) << p << g << static_cast<int>(r.rounding) << decay;
                        }
    }
    void optimizers() {
        REQUIRE_GPU();
        QFETCH(QString, optimizer);
        QFETCH(Format, param);
        QFETCH(Format, grad);
        QFETCH(int, rounding);
        QFETCH(double, decay);
        const auto how = static_cast<WeightRounding>(rounding);
        m_cpu->seed_stochastic_rounding(29);
        m_gpu->seed_stochastic_rounding(29);
        const std::int64_t n = 50000;
        std::vector<float> pv = random_values(n, 0.5f, 61, 0.02);
        Twin p = twin(*m_cpu, *m_gpu, desc("w", 1, n, param, MemoryCategory::parameters), pv);
        Twin g = twin(*m_cpu, *m_gpu, desc("g", 1, n, grad, MemoryCategory::gradients));
        Twin s1 = twin(*m_cpu, *m_gpu, desc("s1", 1, n, Format::fp32, MemoryCategory::optimizer_state));
        Twin s2 = twin(*m_cpu, *m_gpu, desc("s2", 1, n, Format::fp32, MemoryCategory::optimizer_state));
        Twin c = twin(*m_cpu, *m_gpu, desc("w.kahan", 1, n, param, MemoryCategory::optimizer_state),
                      std::vector<float>(static_cast<std::size_t>(n), 0.0f));
        auto tensors = [&](bool on_gpu) {
            OptimizerTensors t;
            t.param = on_gpu ? &p.g() : &p.c();
            t.grad = on_gpu ? &g.g() : &g.c();
            t.state1 = on_gpu ? &s1.g() : &s1.c();
            if (!optimizer.startsWith("sgd")) t.state2 = on_gpu ? &s2.g() : &s2.c();
            t.rounding = how;
            if (how == WeightRounding::kahan) t.compensation = on_gpu ? &c.g() : &c.c();
            return t;
        };
        for (int step = 1; step <= 3; ++step) {
            // Scaled gradients, unscaled by the fused check (narrow ones through the multiplier).
            const std::vector<float> gv = random_values(n, 4096.0f, 70 + static_cast<std::uint32_t>(step), 0.1);
            m_cpu->upload(g.c(), gv.data(), n);
            m_gpu->upload(g.g(), gv.data(), n);
            m_cpu->unscale_and_check({&g.c()}, 1.0f / 4096.0f, {false}, nullptr);
            m_gpu->unscale_and_check({&g.g()}, 1.0f / 4096.0f, {false}, nullptr);
            UpdateCounts uc, ug;
            if (optimizer.startsWith("sgd")) {
                SgdParams sp;
                sp.lr = 0.01;
                sp.momentum = optimizer == "sgd-momentum" ? 0.9 : 0.0;
                sp.weight_decay = decay;
                sp.first_step = step == 1;
                uc = m_cpu->sgd_step(tensors(false), sp);
                ug = m_gpu->sgd_step(tensors(true), sp);
            } else {
                AdamWParams ap;
                ap.lr = 1e-3;
                ap.weight_decay = decay;
                ap.step = step;
                uc = m_cpu->adamw_step(tensors(false), ap);
                ug = m_gpu->adamw_step(tensors(true), ap);
            }
            QCOMPARE(ug.nonzero_updates, uc.nonzero_updates);
            QCOMPARE(ug.lost_updates, uc.lost_updates);
            QString diff = compare_bits(read(*m_cpu, p.c()), read(*m_gpu, p.g()));
            QVERIFY2(diff.isEmpty(), qPrintable(QString("step %1 params: %2").arg(step).arg(diff)));
            diff = compare_bits(read(*m_cpu, s1.c()), read(*m_gpu, s1.g()));
            QVERIFY2(diff.isEmpty(), qPrintable(QString("step %1 state: %2").arg(step).arg(diff)));
            diff = compare_bits(read(*m_cpu, s2.c()), read(*m_gpu, s2.g()));
            QVERIFY2(diff.isEmpty(), qPrintable(QString("step %1 second state: %2").arg(step).arg(diff)));
            diff = compare_bits(read(*m_cpu, c.c()), read(*m_gpu, c.g()));
            QVERIFY2(diff.isEmpty(), qPrintable(QString("step %1 compensation: %2").arg(step).arg(diff)));
            QCOMPARE(m_gpu->stochastic_rounding_position(), m_cpu->stochastic_rounding_position());
        }
    }

    void memory_accounting() {
        REQUIRE_GPU();
        const MemoryBreakdown before = m_gpu->memory();
        {
            auto w = m_gpu->allocate(desc("w", 1000, 1000, Format::bf16, MemoryCategory::parameters));
            auto m = m_gpu->allocate(desc("m", 1000, 1000, Format::fp32, MemoryCategory::master_weights));
            auto g = m_gpu->allocate(desc("g", 1000, 1000, Format::fp8_e5m2, MemoryCategory::gradients));
            const MemoryBreakdown mem = m_gpu->memory();
            QVERIFY(!mem.modelled);
            QCOMPARE(mem.parameters - before.parameters, std::int64_t{2000000});
            QCOMPARE(mem.master_weights - before.master_weights, std::int64_t{4000000});
            QCOMPARE(mem.gradients - before.gradients, std::int64_t{1000000});
            QVERIFY(mem.device_total > 0 && mem.device_in_use > 0 && mem.device_in_use <= mem.device_total);
            m_gpu->convert(*w, Format::fp8_e4m3);
            QCOMPARE(m_gpu->memory().parameters - before.parameters, std::int64_t{1000000});
        }
        const MemoryBreakdown after = m_gpu->memory();
        QCOMPARE(after.parameters, before.parameters);
        QCOMPARE(after.master_weights, before.master_weights);
        QCOMPARE(after.gradients, before.gradients);
    }
};

QTEST_GUILESS_MAIN(TestGpuEquivalence)
#include "test_gpu_equivalence.moc"
