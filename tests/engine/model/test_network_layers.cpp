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
#include "model/network.h"

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
