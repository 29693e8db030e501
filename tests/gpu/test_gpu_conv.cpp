// The CUDA backend's convolutional ops against the CPU backend (the reference), with the same
// inputs, as docs/numerics.md ("Convolutional ops") states them:
//   - bit-identical where the rounding points and the summation order are the CPU's: max, average
//     and global average pools (forward and backward), add, and the convolution's bias gradient;
//   - conv2d's y, dX and dW within atol + |ref|·eps (the matmuls' FP32 accumulation order
//     differs), per compute format, over geometries with stride 2, padding, kernels 1, 3 and 5,
//     odd sizes, batches 1 and 7, and an FP8 shape cuBLASLt's FP8 kernels take natively;
//   - conv2d with a precision per matmul (dgrad and wgrad in their own formats: tensor formats,
//     FP8, block formats) within the same bounds, its FP8 scales and amaxes the CPU's;
//   - batchnorm2d's statistics within 1 FP32 ulp (double sums added in another order) and y, dx,
//     dγ, dβ within the bound that follows;
//   - a small CNN trained through the Trainer (the pipelined step on the GPU) with losses close to
//     the CPU's, step by step.
// Every test skips with the reason when there is no usable GPU (or the build has no CUDA).
#include <QtTest>

#include <cmath>

#include "backend/cuda/cuda_loader.h"
#include "error.h"
#include "gpu_compare.h"
#include "stripes_dataset.h"
#include "train/trainer.h"

using namespace mantissa;
using namespace gpu_test;
using test_support::stripes;
Q_DECLARE_METATYPE(mantissa::Format)
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

struct ConvCase {
    const char* name;
    Conv2dGeometry g;
    std::int64_t batch;
};

std::vector<ConvCase> conv_cases() {
    auto geo = [](std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t co, std::int64_t k, std::int64_t s,
                  std::int64_t p) {
        Conv2dGeometry g;
        g.in_channels = c;
        g.in_h = h;
        g.in_w = w;
        g.out_channels = co;
        g.kernel = k;
        g.stride = s;
        g.padding = p;
        return g;
    };
    return {{"k3-s1-p1-b7", geo(3, 9, 9, 8, 3, 1, 1), 7},     {"k3-s2-p1-odd-b1", geo(2, 11, 7, 5, 3, 2, 1), 1},
            {"k1-direct-b7", geo(4, 8, 8, 6, 1, 1, 0), 7},    {"k5-s2-p2-b7", geo(3, 13, 13, 6, 5, 2, 2), 7},
            {"k5-whole-b7", geo(1, 5, 5, 3, 5, 1, 0), 7},     {"k1-s2-b7", geo(5, 9, 9, 4, 1, 2, 0), 7},
            {"fp8-native-b4", geo(16, 8, 8, 16, 3, 1, 1), 4}};
}

// One convolution's tensors on both backends, as model/layers/conv2d_layer.cpp declares them.
struct ConvTwin : MatmulLayerTwin {
    Conv2dGeometry g;
    std::int64_t batch;

    ConvTwin(Backend& cpu, Backend& gpu, Format c, const Conv2dGeometry& geometry, std::int64_t b)
        : g(geometry), batch(b) {
        compute = c;
        const Format act = output_format(c);
        const bool fp8 = c == Format::fp8_e4m3;
        const std::int64_t co = g.out_channels, k = g.patch();
        weight = twin(cpu, gpu, desc("conv.weight", co, k, Format::fp32, MemoryCategory::master_weights),
                      random_values(co * k, 1.0f / std::sqrt(static_cast<float>(k)), 21));
        bias = twin(cpu, gpu, desc("conv.bias", 1, co, Format::fp32, MemoryCategory::master_weights),
                    random_values(co, 0.1f, 22));
        if (c != Format::fp32 && c != Format::tf32)
            weight_compute = twin(cpu, gpu, desc("conv.weight_compute", co, k, fp8 ? Format::fp8_e4m3 : c));
        if (act != Format::fp32) bias_compute = twin(cpu, gpu, desc("conv.bias_compute", 1, co, act));
        grad_weight = twin(cpu, gpu, desc("conv.grad_weight", co, k, act));
        grad_bias = twin(cpu, gpu, desc("conv.grad_bias", 1, co, act));
        if (c == Format::fp16 || c == Format::bf16 || fp8)
            saved_input = twin(cpu, gpu, desc("conv.saved_input", batch, g.in_size(), fp8 ? Format::fp8_e4m3 : c));
        x = twin(cpu, gpu, desc("x", batch, g.in_size(), Format::fp32), random_values(batch * g.in_size(), 1.0f, 23, 0.05));
        y = twin(cpu, gpu, desc("y", batch, g.out_size(), act));
        dy = twin(cpu, gpu, desc("dy", batch, g.out_size(), act), random_values(batch * g.out_size(), 0.05f, 24, 0.05));
        dx = twin(cpu, gpu, desc("dx", batch, g.in_size(), act));
        if (fp8) {
            fp8_cpu = cpu.create_fp8_state(Fp8Recipe{});
            fp8_gpu = gpu.create_fp8_state(Fp8Recipe{});
        }
    }
    ConvTensors tensors(bool on_gpu) const {
        auto t = layer_tensors<ConvTensors>(on_gpu);
        t.geometry = g;
        return t;
    }
    // One forward and backward on both backends, "" when they agree: the same stochastic keys drawn,
    // and outputs_differ's outputs.
    QString step_differs(Backend& cpu, Backend& gpu, ConvTensors& tc, ConvTensors& tg, double atol, double eps) {
        cpu.conv2d_forward(tc, x.c(), y.c(), batch, true);
        gpu.conv2d_forward(tg, x.g(), y.g(), batch, true);
        RoundingStats sc, sg;
        cpu.conv2d_backward(tc, x.c(), dy.c(), &dx.c(), batch, &sc);
        gpu.conv2d_backward(tg, x.g(), dy.g(), &dx.g(), batch, &sg);
        if (QString d = stochastic_keys_differ(cpu, gpu); !d.isEmpty()) return d;
        return outputs_differ(cpu, gpu, atol, eps);
    }
    // What a forward and backward wrote on the two backends, "" when it agrees: y and dW within
    // atol + |ref|·eps, dX within atol/10 + |ref|·eps (the FP32 summation order), dB bit for bit.
    QString outputs_differ(Backend& cpu, Backend& gpu, double atol, double eps) {
        if (QString d = compare_close(read(cpu, y.c()), read(gpu, y.g()), atol, eps); !d.isEmpty()) return "y: " + d;
        if (QString d = compare_close(read(cpu, dx.c()), read(gpu, dx.g()), atol * 0.1, eps); !d.isEmpty())
            return "dx: " + d;
        if (QString d = compare_close(read(cpu, grad_weight.c()), read(gpu, grad_weight.g()), atol, eps); !d.isEmpty())
            return "dW: " + d;
        if (QString d = compare_bits(read(cpu, grad_bias.c()), read(gpu, grad_bias.g())); !d.isEmpty())
            return "dB: " + d;
        return {};
    }
};

// The linear layers' mixes, and a block-scaled dgrad alone (its whole dy along the channels, the
// weight gradient in FP32 from the unquantised operands).
std::vector<PerGemmSetting> conv_per_gemm_settings() {
    std::vector<PerGemmSetting> s = per_gemm_settings();
    s.push_back({"fp32-dgrad-mxfp4-stochastic", Format::fp32, {}, ComputeFormat(BlockFormat::mxfp4), {}, true});
    return s;
}

Pool2dGeometry pool(std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k, std::int64_t s, std::int64_t p) {
    Pool2dGeometry g;
    g.channels = c;
    g.in_h = h;
    g.in_w = w;
    g.kernel = k;
    g.stride = s;
    g.padding = p;
    return g;
}

// Values on a coarse grid (many ties inside a window), with a NaN and an inf.
std::vector<float> pool_values(std::int64_t n, std::uint32_t seed) {
    std::vector<float> v = random_values(n, 2.0f, seed, 0.1);
    for (float& x : v) x = std::round(x * 2.0f) / 2.0f;
    if (n > 40) {
        v[17] = NAN;
        v[40] = INFINITY;
    }
    return v;
}

}  // namespace

class TestGpuConv : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> m_cpu, m_gpu;
    std::string m_reason;

#define REQUIRE_GPU() GPU_TEST_REQUIRE(m_gpu, m_reason)

    bool gpu_multiplies(Format f) const { return m_gpu->supports(BackendOp::conv2d, f); }

private slots:
    void initTestCase() {
        m_cpu = make_backend("cpu");
        m_gpu = cuda_backend(m_reason);
        if (!m_gpu) QSKIP(qPrintable(gpu_test::suite_skipped(m_reason)));
        qInfo("GPU: %s", m_gpu->device_name().c_str());
    }
    void cleanupTestCase() { m_gpu.reset(); }

    void supports_the_cpu_formats() {
        REQUIRE_GPU();
        for (BackendOp op : {BackendOp::maxpool2d, BackendOp::avgpool2d, BackendOp::global_avgpool,
                             BackendOp::batchnorm2d, BackendOp::add})
            for (Format f : {Format::fp32, Format::fp16, Format::bf16}) QVERIFY(m_gpu->supports(op, f));
        QVERIFY(m_gpu->supports(BackendOp::conv2d, Format::fp32));
    }

    // ---- conv2d: within atol + |ref|·eps; the bias gradient bit for bit

    void conv2d_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<int>("which");
        const auto cases = conv_cases();
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3})
            for (int i = 0; i < static_cast<int>(cases.size()); ++i)
                QTest::addRow("%s-%s", std::string(format_name(f)).c_str(), cases[static_cast<std::size_t>(i)].name)
                    << f << i;
    }
    void conv2d() {
        REQUIRE_GPU();
        QFETCH(Format, compute);
        QFETCH(int, which);
        if (!gpu_multiplies(compute)) QSKIP(m_gpu->unsupported(BackendOp::conv2d, compute).c_str());
        const ConvCase cc = conv_cases()[static_cast<std::size_t>(which)];
        ConvTwin t(*m_cpu, *m_gpu, compute, cc.g, cc.batch);
        ConvTensors tc = t.tensors(false), tg = t.tensors(true);
        for (int step = 0; step < 2; ++step) {  // fp8: the second step runs with scales from the first
            m_cpu->conv2d_forward(tc, t.x.c(), t.y.c(), cc.batch, true);
            m_gpu->conv2d_forward(tg, t.x.g(), t.y.g(), cc.batch, true);
            RoundingStats sc, sg;
            m_cpu->conv2d_backward(tc, t.x.c(), t.dy.c(), &t.dx.c(), cc.batch, &sc);
            m_gpu->conv2d_backward(tg, t.x.g(), t.dy.g(), &t.dx.g(), cc.batch, &sg);
            const Format act = output_format(compute);
            // Bound: the FP32 sums of K exact products differ in order only: a few FP32 ulps of
            // Σ|terms| (atol, the inputs are O(1)), then one rounding to the output's format
            // (eps: its epsilon), as the linear layer's bound in test_gpu_equivalence.cpp.
            const double eps = act == Format::fp32 ? 1e-5 : format_info(act).epsilon;
            const double atol = compute == Format::fp8_e4m3 ? 1e-3 : 1e-4;
            const QString diff = t.outputs_differ(*m_cpu, *m_gpu, atol, eps);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
            QCOMPARE(sg.elements, sc.elements);
            QVERIFY(std::abs(sg.zeros - sc.zeros) <= sc.elements / 100 + 1);
            if (compute == Format::fp8_e4m3) {
                m_cpu->update_fp8_scales(*t.fp8_cpu);
                m_gpu->update_fp8_scales(*t.fp8_gpu);
                for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
                    const Fp8TensorSnapshot a = t.fp8_cpu->snapshot(r), b = t.fp8_gpu->snapshot(r);
                    QCOMPARE(b.amax_history, a.amax_history);  // amaxes are exact maxima
                    QCOMPARE(b.scale, a.scale);
                }
            }
        }
    }

    // Stochastic gradients (the FP8 dy, dX and dW with keys in the CPU's order; dX's chunks by
    // their indices in the whole dx) and FP8 current scaling with power-of-two scales (each
    // tensor's scale from its own amax on the device): the same keys drawn, the same scales, the
    // values within linear's bound with one step of slack for a sum on the other side of its
    // random threshold.
    void conv2d_stochastic_and_current_data() {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<bool>("current");
        for (Format f : {Format::fp16, Format::bf16, Format::fp8_e4m3})
            QTest::addRow("%s", std::string(format_name(f)).c_str()) << f << false;
        QTest::addRow("fp8-e4m3-current-pow2") << Format::fp8_e4m3 << true;
    }
    void conv2d_stochastic_and_current() {
        REQUIRE_GPU();
        QFETCH(Format, compute);
        QFETCH(bool, current);
        if (!gpu_multiplies(compute)) QSKIP(m_gpu->unsupported(BackendOp::conv2d, compute).c_str());
        const ConvCase cc = conv_cases()[0];  // k3-s1-p1, 7 samples
        ConvTwin t(*m_cpu, *m_gpu, compute, cc.g, cc.batch);
        if (current) {
            Fp8Recipe r;
            r.scaling = Fp8Scaling::current;
            r.power_of_two = true;
            t.fp8_cpu = m_cpu->create_fp8_state(r);
            t.fp8_gpu = m_gpu->create_fp8_state(r);
        }
        ConvTensors tc = t.tensors(false), tg = t.tensors(true);
        tc.stochastic_gradients = tg.stochastic_gradients = !current;
        m_cpu->seed_stochastic_rounding(53);
        m_gpu->seed_stochastic_rounding(53);
        const Format act = output_format(compute);
        const double eps = format_info(act).epsilon, atol = compute == Format::fp8_e4m3 ? 1e-3 : 1e-4;
        for (int step = 0; step < 2; ++step) {
            // (y's bound with the stochastic slack too: the second step's weights are the same.)
            const QString diff = t.step_differs(*m_cpu, *m_gpu, tc, tg, atol, 2 * eps);
            QVERIFY2(diff.isEmpty(), qPrintable(diff));
            if (compute == Format::fp8_e4m3) {
                for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output})
                    QCOMPARE(t.fp8_gpu->snapshot(r).scale, t.fp8_cpu->snapshot(r).scale);
                m_cpu->update_fp8_scales(*t.fp8_cpu);
                m_gpu->update_fp8_scales(*t.fp8_gpu);
            }
        }
        if (!current) QVERIFY(m_cpu->stochastic_rounding_position() >= 4);  // dX and dW, two steps
    }

    // Block-scaled convolutions (MX, NVFP4): W's rows and the columns along the patch in the
    // forward, dy along the output channels and W's columns in dgrad, a chunk's dy rows and columns
    // along its rows in wgrad, with the CPU's chunks (backend/conv_chunks.h: 9 samples of
    // 64×32×32 take two) and its keys (dgrad's dy, wgrad's, a chunk's derived from it): the rounded
    // values are the CPU's (tests/engine/cuda_host: test_cuda_block_round), so y, dX and dW differ
    // in the FP32 summation order only; dB bit for bit.
    void conv2d_block_scaled_data() {
        QTest::addColumn<BlockFormat>("format");
        QTest::addColumn<bool>("stochastic");
        QTest::addColumn<bool>("chunks");
        for (BlockFormat f : all_block_formats)
            for (bool stochastic : {false, true}) {
                const std::string n = std::string(block_format_name(f)) + (stochastic ? "-stochastic" : "");
                QTest::addRow("%s", n.c_str()) << f << stochastic << false;
            }
        QTest::addRow("mxfp4-stochastic-two-chunks") << BlockFormat::mxfp4 << true << true;
        QTest::addRow("nvfp4-two-chunks") << BlockFormat::nvfp4 << false << true;
    }
    void conv2d_block_scaled() {
        REQUIRE_GPU();
        QFETCH(BlockFormat, format);
        QFETCH(bool, stochastic);
        QFETCH(bool, chunks);
        if (!m_gpu->supports(BackendOp::block_scaled_conv, Format::fp32))
            QSKIP(m_gpu->unsupported(BackendOp::block_scaled_conv, Format::fp32).c_str());
        ConvCase cc = conv_cases()[3];  // k5-s2-p2: partial blocks along the patch (75)
        if (chunks) {
            cc.g.in_channels = cc.g.out_channels = 64;
            cc.g.in_h = cc.g.in_w = 32;
            cc.g.kernel = 3;
            cc.g.stride = cc.g.padding = 1;
            cc.batch = 9;
        }
        ConvTwin t(*m_cpu, *m_gpu, Format::fp32, cc.g, cc.batch);
        ConvTensors tc = t.tensors(false), tg = t.tensors(true);
        tc.block = tg.block = format;
        tc.stochastic_gradients = tg.stochastic_gradients = stochastic;
        m_cpu->seed_stochastic_rounding(61);
        m_gpu->seed_stochastic_rounding(61);
        const QString diff = t.step_differs(*m_cpu, *m_gpu, tc, tg, 1e-4, 1e-5);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // A precision per matmul (ConvTensors::dgrad, wgrad): each backward matmul's operands in its
    // own format as the CPU makes them (dy in e5m2 once where either is FP8, a block format's dy
    // with its own key, W or x quantised with their role's scale where the forward did not), the
    // FP8 states' amaxes and scales the CPU's; values within the format's bound, dB bit for bit.
    // Two geometries: partial blocks and bf16 FP8 operands (k3, 7 samples), and a shape
    // cuBLASLt's FP8 kernels take natively.
    void conv2d_per_gemm_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("geometry");
        const std::vector<PerGemmSetting> settings = conv_per_gemm_settings();
        for (int i = 0; i < static_cast<int>(settings.size()); ++i) {
            QTest::addRow("%s", settings[static_cast<std::size_t>(i)].name) << i << 0;
            QTest::addRow("%s-fp8-native", settings[static_cast<std::size_t>(i)].name) << i << 6;
        }
    }
    void conv2d_per_gemm() {
        REQUIRE_GPU();
        QFETCH(int, which);
        QFETCH(int, geometry);
        const PerGemmSetting st = conv_per_gemm_settings()[static_cast<std::size_t>(which)];
        for (const std::optional<ComputeFormat>& f : {std::optional<ComputeFormat>(st.compute), st.dgrad, st.wgrad})
            if (f && !f->block && !gpu_multiplies(f->format))
                QSKIP(m_gpu->unsupported(BackendOp::conv2d, f->format).c_str());
        const bool blocks = st.block || (st.dgrad && st.dgrad->block) || (st.wgrad && st.wgrad->block);
        if (blocks && !m_gpu->supports(BackendOp::block_scaled_conv, Format::fp32))
            QSKIP(m_gpu->unsupported(BackendOp::block_scaled_conv, Format::fp32).c_str());
        const ConvCase cc = conv_cases()[static_cast<std::size_t>(geometry)];
        ConvTwin t(*m_cpu, *m_gpu, st.compute, cc.g, cc.batch);
        const bool any_fp8 = st.any_fp8();
        if (any_fp8 && !t.fp8_cpu) {
            t.fp8_cpu = m_cpu->create_fp8_state(Fp8Recipe{});
            t.fp8_gpu = m_gpu->create_fp8_state(Fp8Recipe{});
        }
        ConvTensors tc = t.tensors(false), tg = t.tensors(true);
        st.set_on(tc);
        st.set_on(tg);
        m_cpu->seed_stochastic_rounding(67);
        m_gpu->seed_stochastic_rounding(67);
        const double eps = st.eps(), atol = any_fp8 ? 1e-3 : 1e-4;
        for (int step = 0; step < 2; ++step) {  // FP8: the second step with the first's scales
            const QString at = QString(" (step %1)").arg(step);
            const QString diff = t.step_differs(*m_cpu, *m_gpu, tc, tg, atol, eps);
            QVERIFY2(diff.isEmpty(), qPrintable(diff + at));
            if (!any_fp8) continue;
            m_cpu->update_fp8_scales(*t.fp8_cpu);
            m_gpu->update_fp8_scales(*t.fp8_gpu);
            for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) {
                const Fp8TensorSnapshot a = t.fp8_cpu->snapshot(r), b = t.fp8_gpu->snapshot(r);
                QVERIFY2(b.amax_history == a.amax_history, qPrintable(QString("amax history, role %1").arg(int(r)) + at));
                QCOMPARE(b.scale, a.scale);
            }
        }
    }

    // ---- pools and add: bit for bit

    void pools_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("which");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
            for (int i = 0; i < 5; ++i) QTest::addRow("%s-%d", std::string(format_name(f)).c_str(), i) << f << i;
    }
    void pools() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        QFETCH(int, which);
        const Pool2dGeometry geometries[] = {pool(3, 8, 8, 2, 2, 0), pool(2, 9, 7, 3, 2, 1), pool(4, 7, 7, 3, 1, 1),
                                             pool(1, 5, 5, 5, 1, 2), pool(3, 11, 11, 2, 3, 1)};
        const Pool2dGeometry p = geometries[which];
        for (std::int64_t batch : {1, 7}) {
            Twin x = twin(*m_cpu, *m_gpu, desc("x", batch, p.in_size(), format), pool_values(batch * p.in_size(), 31));
            Twin y = twin(*m_cpu, *m_gpu, desc("y", batch, p.out_size(), format));
            Twin dy = twin(*m_cpu, *m_gpu, desc("dy", batch, p.out_size(), format),
                           random_values(batch * p.out_size(), 0.3f, 32, 0.05));
            Twin dx = twin(*m_cpu, *m_gpu, desc("dx", batch, p.in_size(), format));
            auto same = [&](Twin& t, const char* what) {
                const QString diff = compare_bits(read(*m_cpu, t.c()), read(*m_gpu, t.g()));
                QVERIFY2(diff.isEmpty(), qPrintable(QString(what) + ": " + diff));
            };
            m_cpu->maxpool2d_forward(p, x.c(), y.c(), batch);
            m_gpu->maxpool2d_forward(p, x.g(), y.g(), batch);
            same(y, "maxpool y");
            m_cpu->maxpool2d_backward(p, x.c(), y.c(), dy.c(), dx.c(), batch);
            m_gpu->maxpool2d_backward(p, x.g(), y.g(), dy.g(), dx.g(), batch);
            same(dx, "maxpool dx");
            m_cpu->avgpool2d_forward(p, x.c(), y.c(), batch);
            m_gpu->avgpool2d_forward(p, x.g(), y.g(), batch);
            same(y, "avgpool y");
            m_cpu->avgpool2d_backward(p, dy.c(), dx.c(), batch);
            m_gpu->avgpool2d_backward(p, dy.g(), dx.g(), batch);
            same(dx, "avgpool dx");

            const std::int64_t spatial = p.in_h * p.in_w;
            Twin gy = twin(*m_cpu, *m_gpu, desc("gy", batch, p.channels, format));
            Twin gdy = twin(*m_cpu, *m_gpu, desc("gdy", batch, p.channels, format),
                            random_values(batch * p.channels, 0.3f, 33));
            m_cpu->global_avgpool_forward(p.channels, spatial, x.c(), gy.c(), batch);
            m_gpu->global_avgpool_forward(p.channels, spatial, x.g(), gy.g(), batch);
            same(gy, "global y");
            m_cpu->global_avgpool_backward(p.channels, spatial, gdy.c(), dx.c(), batch);
            m_gpu->global_avgpool_backward(p.channels, spatial, gdy.g(), dx.g(), batch);
            same(dx, "global dx");
        }
    }

    void add_data() {
        QTest::addColumn<Format>("a_format");
        QTest::addColumn<Format>("y_format");
        for (Format a : {Format::fp32, Format::fp16, Format::bf16})
            for (Format y : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                QTest::addRow("%s-into-%s", std::string(format_name(a)).c_str(), std::string(format_name(y)).c_str())
                    << a << y;
    }
    void add() {
        REQUIRE_GPU();
        QFETCH(Format, a_format);
        QFETCH(Format, y_format);
        std::vector<float> va = probe_values(41), vb = probe_values(42);
        vb.resize(va.size(), 0.5f);
        const auto n = static_cast<std::int64_t>(va.size());
        Twin a = twin(*m_cpu, *m_gpu, desc("a", 1, n, a_format), va);
        Twin b = twin(*m_cpu, *m_gpu, desc("b", 1, n, y_format), vb);
        Twin y = twin(*m_cpu, *m_gpu, desc("y", 1, n, y_format));
        m_cpu->add(a.c(), b.c(), y.c(), 1);
        m_gpu->add(a.g(), b.g(), y.g(), 1);
        QString diff = compare_bits(read(*m_cpu, y.c()), read(*m_gpu, y.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        m_cpu->add(a.c(), b.c(), b.c(), 1);  // in place: y is b
        m_gpu->add(a.g(), b.g(), b.g(), 1);
        diff = compare_bits(read(*m_cpu, b.c()), read(*m_gpu, b.g()));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // ---- batchnorm2d

    void batchnorm_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("spatial");
        QTest::addColumn<int>("batch");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            for (int spatial : {1, 49, 81})
                for (int batch : {2, 7})
                    QTest::addRow("%s-s%d-b%d", std::string(format_name(f)).c_str(), spatial, batch)
                        << f << spatial << batch;
    }
    void batchnorm() {
        REQUIRE_GPU();
        QFETCH(Format, format);
        QFETCH(int, spatial);
        QFETCH(int, batch);
        const std::int64_t channels = 5, cols = channels * spatial;
        auto vec = [&](const char* name, std::vector<float> v) {
            return twin(*m_cpu, *m_gpu, desc(name, 1, channels, Format::fp32), v);
        };
        Twin gamma = vec("bn.weight", random_values(channels, 0.5f, 51)),
             beta = vec("bn.bias", random_values(channels, 0.2f, 52));
        Twin gg = vec("bn.grad_weight", {}), gb = vec("bn.grad_bias", {}), rm = vec("bn.running_mean", {});
        Twin rv = vec("bn.running_var", std::vector<float>(channels, 1.0f)), sm = vec("bn.saved_mean", {}),
             si = vec("bn.saved_invstd", {});
        std::vector<float> xv = random_values(batch * cols, 1.5f, 53);
        for (float& v : xv) v += 0.75f;  // a mean away from zero
        Twin x = twin(*m_cpu, *m_gpu, desc("x", batch, cols, format), xv);
        Twin y = twin(*m_cpu, *m_gpu, desc("y", batch, cols, format));
        Twin dy = twin(*m_cpu, *m_gpu, desc("dy", batch, cols, format), random_values(batch * cols, 0.1f, 54));
        Twin dx = twin(*m_cpu, *m_gpu, desc("dx", batch, cols, format));
        auto tensors = [&](bool g) {
            BatchNormTensors b;
            b.channels = channels;
            b.spatial = spatial;
            b.weight = gamma.on(g);
            b.bias = beta.on(g);
            b.grad_weight = gg.on(g);
            b.grad_bias = gb.on(g);
            b.running_mean = rm.on(g);
            b.running_var = rv.on(g);
            b.saved_mean = sm.on(g);
            b.saved_invstd = si.on(g);
            return b;
        };
        BatchNormTensors bc = tensors(false), bg = tensors(true);
        // Statistics: double sums in another order, rounded to FP32 once: at most 1 ulp apart.
        // y and dx: a statistic 1 ulp off moves (x - μ)·invstd by about 2^-23·|x|·invstd, then
        // the output's rounding: atol 1e-5 (O(1) values) + the format's epsilon relative.
        const double eps = format == Format::fp32 ? 1e-5 : format_info(format).epsilon;
        for (bool training : {true, false}) {
            m_cpu->batchnorm2d_forward(bc, x.c(), y.c(), batch, training);
            m_gpu->batchnorm2d_forward(bg, x.g(), y.g(), batch, training);
            for (Twin* t : {&sm, &si, &rm, &rv}) {
                const QString diff = compare_ulps(read(*m_cpu, t->c()), read(*m_gpu, t->g()), 1);
                QVERIFY2(diff.isEmpty(), qPrintable(QString::fromStdString(t->c().desc().name) + ": " + diff));
            }
            QString diff = compare_close(read(*m_cpu, y.c()), read(*m_gpu, y.g()), 1e-5, eps);
            QVERIFY2(diff.isEmpty(), qPrintable(QString(training ? "train" : "eval") + " y: " + diff));
        }
        m_cpu->batchnorm2d_forward(bc, x.c(), y.c(), batch, true);  // the backward's statistics
        m_gpu->batchnorm2d_forward(bg, x.g(), y.g(), batch, true);
        m_cpu->batchnorm2d_backward(bc, x.c(), dy.c(), dx.c(), batch);
        m_gpu->batchnorm2d_backward(bg, x.g(), dy.g(), dx.g(), batch);
        QString diff = compare_close(read(*m_cpu, dx.c()), read(*m_gpu, dx.g()), 1e-5, eps);
        QVERIFY2(diff.isEmpty(), qPrintable("dx: " + diff));
        diff = compare_close(read(*m_cpu, gg.c()), read(*m_gpu, gg.g()), 1e-5, 1e-5);
        QVERIFY2(diff.isEmpty(), qPrintable("dgamma: " + diff));
        diff = compare_ulps(read(*m_cpu, gb.c()), read(*m_gpu, gb.g()), 1);  // Σdy: no statistic involved
        QVERIFY2(diff.isEmpty(), qPrintable("dbeta: " + diff));
    }

    // ---- a CNN through the Trainer

    void cnn_training_data() {
        QTest::addColumn<int>("autocast");
        QTest::newRow("fp32") << int(Autocast::off);
        QTest::newRow("fp16") << int(Autocast::fp16);
        QTest::newRow("bf16") << int(Autocast::bf16);
    }
    void cnn_training() {
        REQUIRE_GPU();
        QFETCH(int, autocast);
        Experiment e;
        e.name = "cnn-gpu";
        e.model.kind = "cnn";
        e.model.channels = {4, 8};
        e.model.hidden = {16};
        e.train.batch_size = 32;
        e.train.steps = 40;
        e.train.lr = 0.01;
        e.train.eval_every = 0;
        e.train.layer_stats_every = 5;
        e.precision.autocast = static_cast<Autocast>(autocast);
        e.precision.master_weights = e.precision.autocast != Autocast::off;
        e.precision.loss_scaling.mode =
            e.precision.autocast == Autocast::fp16 ? LossScalingMode::dynamic : LossScalingMode::off;
        Trainer cpu(e, stripes(1024, 256, 5), make_backend("cpu"));
        Trainer gpu(e, stripes(1024, 256, 5), make_cuda_backend(0));
        double first = 0, last = 0;
        for (int step = 0; step < 40; ++step) {
            const StepReport c = cpu.step();
            const StepReport g = gpu.step();
            QCOMPARE(g.step.skipped, c.step.skipped);
            QVERIFY2(std::abs(g.step.loss - c.step.loss) <= 0.05 * std::abs(c.step.loss) + 2e-3,
                     qPrintable(QString("step %1: loss %2 vs %3").arg(step).arg(g.step.loss).arg(c.step.loss)));
            if (step < 5) first += g.step.loss;
            if (step >= 35) last += g.step.loss;
        }
        QVERIFY2(last < first * 0.8,
                 qPrintable(QString("the GPU's loss went from %1 to %2").arg(first / 5).arg(last / 5)));
    }
};

QTEST_GUILESS_MAIN(TestGpuConv)
#include "test_gpu_conv.moc"
