// Every layer kind wired into a whole network on the CPU backend, in FP32: the gradient of each
// parameter (convolutions with stride and padding, batchnorm in training mode, pools, residual
// blocks with and without a projection, flatten, linear) against central finite differences of
// the network's own loss. The ops' exact formulas are held to naive double-precision references
// by the backend's suites; this one holds the chain: each layer gets the right input, the right
// output gradient, and a residual sums its two paths.
#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "model/layers/attention_layer.h"
#include "model/layers/layernorm_layer.h"
#include "model/network.h"
#include "numeric/convert.h"

using namespace mantissa;

namespace {

ModelDesc listed(const char* layers, SampleShape input, std::int64_t classes) {
    ModelSpec m;
    m.kind = "layers";
    m.layers = layers;
    return describe_model(m, input, classes, false);
}

std::vector<LayerFormats> fp32(const ModelDesc& d) {
    return std::vector<LayerFormats>(d.layers.size(), resolve_layer_formats(LayerPrecision::fp32, Autocast::off, true));
}

}  // namespace

class TestNetworkLayers : public QObject {
    Q_OBJECT
private slots:
    void gradientsMatchFiniteDifferences_data() {
        QTest::addColumn<QString>("layers");
        QTest::newRow("conv stride/padding, batchnorm, residual with projection, maxpool")
            << R"([{"type":"conv2d","out_channels":3,"kernel":3,"padding":1},{"type":"batchnorm2d"},{"type":"tanh"},
                  {"type":"residual","layers":[{"type":"conv2d","out_channels":3,"kernel":3,"padding":1},{"type":"batchnorm2d"}]},
                  {"type":"residual","layers":[{"type":"conv2d","out_channels":4,"kernel":3,"stride":2,"padding":1},
                                              {"type":"batchnorm2d"},{"type":"tanh"}]},
                  {"type":"maxpool2d","kernel":2},{"type":"flatten"},{"type":"linear","out":3}])";
        QTest::newRow("avgpool with padding, global average pool, flat residual, no bias")
            << R"([{"type":"conv2d","out_channels":4,"kernel":2,"stride":2,"bias":false},{"type":"relu"},
                  {"type":"avgpool2d","kernel":3,"stride":1,"padding":1},
                  {"type":"global_avgpool"},{"type":"residual","layers":[{"type":"linear","out":5}]},
                  {"type":"linear","out":3}])";
    }
    void gradientsMatchFiniteDifferences() {
        QFETCH(QString, layers);
        const int batch = 4;
        const SampleShape input{2, 6, 6};
        ModelDesc desc;
        try {
            desc = listed(layers.toUtf8().constData(), input, 3);
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        CpuBackend be;
        Network net(be, desc, batch, 11, Fp8Recipe{}, fp32(desc));

        std::mt19937 rng(5);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> x(static_cast<std::size_t>(batch * input.numel()));
        for (auto& v : x) v = nd(rng);
        const std::vector<std::int32_t> labels = {0, 2, 1, 2};
        const auto loss = [&] {
            net.forward(x.data(), batch, true);
            return net.loss(labels.data(), nullptr, batch, 1.0f, false).loss;
        };

        net.forward(x.data(), batch, true);
        net.loss(labels.data(), nullptr, batch, 1.0f, true);
        net.backward(batch, nullptr);
        std::vector<std::vector<float>> grads;
        for (const NetworkParameter& p : net.parameters()) grads.push_back(net.read(*p.tensors.grad));

        // FP32 losses: a step of 1e-2 keeps the rounding of the loss (~1e-7) small against the
        // change; the tolerance covers the curvature and that rounding.
        const float h = 1e-2f;
        int checked = 0;
        for (std::size_t k = 0; k < net.parameters().size(); ++k) {
            Tensor& value = *net.parameters()[k].tensors.value;
            std::vector<float> w = net.read(value);
            for (std::size_t i = 0; i < w.size(); ++i) {
                const float keep = w[i];
                w[i] = keep + h;
                net.write(value, w);
                const double up = loss();
                w[i] = keep - h;
                net.write(value, w);
                const double down = loss();
                w[i] = keep;
                net.write(value, w);
                const double fd = (up - down) / (2.0 * h);
                const double g = grads[k][i];
                QVERIFY2(std::abs(g - fd) <= 2e-3 + 2e-2 * std::abs(fd),
                         qPrintable(QString("%1[%2]: backward %3, finite difference %4")
                                        .arg(QString::fromStdString(net.parameters()[k].name)).arg(i)
                                        .arg(g, 0, 'g', 7).arg(fd, 0, 'g', 7)));
                ++checked;
            }
        }
        QCOMPARE(checked, static_cast<int>(desc.parameters()));
    }

    // The memory estimate counts what the network declares, for every kind.
    void estimateMatchesTheLedger() {
        const ModelDesc desc = listed(
            R"([{"type":"conv2d","out_channels":4,"kernel":3,"padding":1},{"type":"batchnorm2d"},{"type":"relu"},
                {"type":"residual","layers":[{"type":"conv2d","out_channels":8,"kernel":3,"stride":2,"padding":1},{"type":"batchnorm2d"}]},
                {"type":"maxpool2d","kernel":3},{"type":"flatten"},{"type":"linear","out":3}])",
            SampleShape{2, 6, 6}, 3);
        CpuBackend be;
        const auto formats = fp32(desc);
        Network net(be, desc, 8, 1, Fp8Recipe{}, formats);
        const double values = network_values(desc, formats, 8, 0);
        QCOMPARE(static_cast<std::int64_t>(values * 4), be.memory().total());
    }

    // And for a GPT, tied and untied. In FP32: the CPU backend's ledger models a device's bytes per
    // format, so only FP32 tensors are 4 bytes a value there.
    void estimateMatchesTheLedgerForAGpt_data() {
        QTest::addColumn<bool>("tied");
        QTest::addColumn<int>("autocast");
        QTest::newRow("untied") << false << static_cast<int>(Autocast::off);
        QTest::newRow("tied") << true << static_cast<int>(Autocast::off);
    }
    void estimateMatchesTheLedgerForAGpt() {
        QFETCH(bool, tied);
        QFETCH(int, autocast);
        ModelSpec spec;
        spec.kind = "gpt";
        spec.depth = 2;
        spec.heads = 2;
        spec.dim = 8;
        spec.context = 6;
        spec.tie_embeddings = tied;
        const ModelDesc desc = describe_model(spec, SampleShape{4, 1, 1}, 7, false, 4);
        const Autocast a = static_cast<Autocast>(autocast);
        const std::vector<LayerFormats> formats(desc.layers.size(), resolve_layer_formats(LayerPrecision::automatic, a, true));
        const OpFormats ops = resolve_op_formats(OpPrecisions{}, a);
        CpuBackend be;
        Network net(be, desc, 3, 1, Fp8Recipe{}, formats, ops);
        QCOMPARE(static_cast<std::int64_t>(network_values(desc, formats, 3, 0, ops) * 4), be.memory().total());
    }

    // An op class narrower than its input reads the input cast to its format, as autocast casts
    // an op's inputs, and casts its gradient back: a layer norm in FP16 on an FP32 stream gives
    // exactly what it gives on the stream rounded to FP16 (a value beyond 65504 makes its row NaN),
    // and the gradient it passes down holds FP16 values.
    void narrowLayerNormCastsItsInput() {
        CpuBackend be;
        const Fp8Recipe recipe;
        constexpr std::int64_t rows = 3, dim = 8;
        LayerNormLayer ln("ln", SampleShape{dim, 1, 1}, 1e-5);
        OpFormats ops;
        ops.layernorm = Format::fp16;
        ln.set_op_formats(ops);
        ln.declare(DeclareContext{be, rows, Format::fp32, true, recipe});
        ln.initialise(be, 1, 0);
        QCOMPARE(ln.output_format(), Format::fp16);
        std::vector<float> x(rows * dim), rounded(rows * dim);
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float& v : x) v = 1.0f + normal(rng) * 1e-3f;  // within FP16's spacing near 1: rounding shows
        x[2 * dim + 3] = 70000.0f;                           // beyond FP16: +inf once cast
        for (std::size_t i = 0; i < x.size(); ++i) rounded[i] = round_to(Format::fp16, x[i]);
        auto forward = [&](const std::vector<float>& input) {
            auto t = be.allocate(TensorDesc{"x", rows, dim, Format::fp32, MemoryCategory::activations});
            be.upload(*t, input.data(), rows * dim);
            ln.forward(be, *t, rows, true);
            std::vector<float> y(rows * dim);
            be.download(ln.output(), y.data(), rows * dim);
            return std::pair{std::move(t), y};
        };
        const auto [x_rounded, y_rounded] = forward(rounded);
        const auto [x_raw, y] = forward(x);
        for (std::int64_t i = 0; i < 2 * dim; ++i) QCOMPARE(y[i], y_rounded[i]);
        for (std::int64_t i = 2 * dim; i < rows * dim; ++i) QVERIFY(std::isnan(y[i]));
        bool rounding_showed = false;  // the rows normalise the FP16 values, not the FP32 ones
        for (std::int64_t i = 0; i < dim; ++i) rounding_showed |= x[i] != rounded[i];
        QVERIFY(rounding_showed);
        std::vector<float> dy(rows * dim);
        for (float& v : dy) v = normal(rng) * 1e-3f;
        auto dyt = be.allocate(TensorDesc{"dy", rows, dim, Format::fp16, MemoryCategory::activations});
        be.upload(*dyt, dy.data(), rows * dim);
        ln.backward(be, *x_raw, *dyt, rows, nullptr);
        QCOMPARE(ln.input_grad()->format(), Format::fp32);
        std::vector<float> dx(rows * dim);
        be.download(*ln.input_grad(), dx.data(), rows * dim);
        for (std::int64_t i = 0; i < 2 * dim; ++i) QCOMPARE(dx[i], round_to(Format::fp16, dx[i]));
    }

    // The softmax in FP16 over BF16 scores: a logit beyond 65504 is +inf in what the softmax reads
    // (counted, and its row NaN); left to autocast (FP32) the same logit is finite.
    void narrowSoftmaxCastsItsInput_data() {
        QTest::addColumn<bool>("fp16");
        QTest::newRow("softmax fp16") << true;
        QTest::newRow("softmax fp32") << false;
    }
    void narrowSoftmaxCastsItsInput() {
        QFETCH(bool, fp16);
        CpuBackend be;
        const Fp8Recipe recipe;
        constexpr std::int64_t T = 3, dim = 8, heads = 2;
        AttentionLayer attn("attn", SampleShape{dim, 1, 1}, heads, T, 0.02, 0.02);
        OpFormats ops;
        ops.matmul = Format::bf16;
        ops.softmax = fp16 ? Format::fp16 : Format::fp32;
        ops.autocast = Autocast::bf16;
        attn.set_op_formats(ops);
        attn.declare(DeclareContext{be, T, Format::fp32, true, recipe});
        attn.initialise(be, 1, 0);
        QCOMPARE(attn.matmul_format(), Format::bf16);
        QCOMPARE(attn.softmax_format(), fp16 ? Format::fp16 : Format::fp32);
        // Every qkv weight 100 and every input 1: q = k = 800 per feature, so each logit is
        // 4·800²/2 = 1.28e6 (head dim 4), far beyond FP16 and well inside BF16.
        Layer* qkv = attn.children().at(0);
        Tensor& w = *qkv->parameters().at(0).value;
        std::vector<float> weights(static_cast<std::size_t>(w.numel()), 100.0f);
        be.upload(w, weights.data(), w.numel());
        auto x = be.allocate(TensorDesc{"x", T, dim, Format::fp32, MemoryCategory::activations});
        be.fill(*x, 1.0f);
        attn.forward(be, *x, T, true);
        if (fp16) {
            QCOMPARE(attn.logit_nonfinite(), T * (T + 1) / 2 * heads);  // every unmasked logit
            std::vector<float> y(T * dim);
            be.download(attn.output(), y.data(), T * dim);
            QVERIFY(std::isnan(y[0]));
        } else {
            QCOMPARE(attn.logit_nonfinite(), std::int64_t{0});
            QVERIFY(attn.logit_amax() > 1e6f);
        }
        auto dy = be.allocate(TensorDesc{"dy", T, dim, attn.output_format(), MemoryCategory::activations});
        be.fill(*dy, 1e-3f);
        attn.backward(be, *x, *dy, T, nullptr);  // the cast path's backward runs (shapes, formats)
    }

    // Batchnorm in evaluation uses the running statistics, which training moved.
    void batchnormEvaluatesWithRunningStatistics() {
        const ModelDesc desc =
            listed(R"([{"type":"batchnorm2d","momentum":1.0},{"type":"flatten"},{"type":"linear","out":2}])",
                   SampleShape{1, 2, 2}, 2);
        CpuBackend be;
        Network net(be, desc, 2, 1, Fp8Recipe{}, fp32(desc));
        const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
        net.forward(x.data(), 2, true);
        const std::vector<float> trained = net.read(net.nodes().front()->output());
        // momentum 1: the running statistics are this batch's, the variance unbiased (n/(n-1)).
        net.forward(x.data(), 2, false);
        const std::vector<float> evaluated = net.read(net.nodes().front()->output());
        const double n = 8, biased = 5.25, unbiased = biased * n / (n - 1);
        for (std::size_t i = 0; i < x.size(); ++i) {
            QVERIFY(std::abs(trained[i] - (x[i] - 4.5) / std::sqrt(biased + 1e-5)) < 1e-5);
            QVERIFY(std::abs(evaluated[i] - (x[i] - 4.5) / std::sqrt(unbiased + 1e-5)) < 1e-5);
        }
    }
};

QTEST_APPLESS_MAIN(TestNetworkLayers)
#include "test_network_layers.moc"
