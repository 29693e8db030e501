// Gradients of every layer (weights and biases), for each activation and both losses, against
// central finite differences of an independent double-precision implementation of the network.
// The network runs in FP32 on the CPU backend; the reference reads its initial weights.
#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/network.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::Activation)
Q_DECLARE_METATYPE(mantissa::LossKind)

namespace {

struct Reference {
    std::vector<int> sizes;               // inputs, hidden..., outputs
    std::vector<std::vector<double>> w, b;
    Activation act;
    LossKind loss;

    double f(double z) const {
        switch (act) {
        case Activation::relu: return z > 0 ? z : 0;
        case Activation::gelu: return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
        default: return std::tanh(z);
        }
    }
    // Mean loss over the batch, in double.
    double eval(const std::vector<float>& x, const std::vector<std::int32_t>& labels,
                const std::vector<float>& targets, int batch) const {
        double total = 0;
        const int outputs = sizes.back();
        for (int r = 0; r < batch; ++r) {
            std::vector<double> h(x.begin() + r * sizes[0], x.begin() + (r + 1) * sizes[0]);
            for (std::size_t l = 0; l < w.size(); ++l) {
                const int in = sizes[l], out = sizes[l + 1];
                std::vector<double> z(static_cast<std::size_t>(out));
                for (int o = 0; o < out; ++o) {
                    double acc = b[l][static_cast<std::size_t>(o)];
                    for (int i = 0; i < in; ++i) acc += w[l][static_cast<std::size_t>(o * in + i)] * h[static_cast<std::size_t>(i)];
                    z[static_cast<std::size_t>(o)] = l + 1 < w.size() ? f(acc) : acc;
                }
                h = z;
            }
            if (loss == LossKind::cross_entropy) {
                double m = h[0];
                for (double v : h) m = std::max(m, v);
                double s = 0;
                for (double v : h) s += std::exp(v - m);
                total += std::log(s) + m - h[static_cast<std::size_t>(labels[static_cast<std::size_t>(r)])];
            } else {
                for (int o = 0; o < outputs; ++o) {
                    const double d = h[static_cast<std::size_t>(o)] - targets[static_cast<std::size_t>(r * outputs + o)];
                    total += d * d / outputs;
                }
            }
        }
        return total / batch;
    }
};

}  // namespace

class TestGradients : public QObject {
    Q_OBJECT
private slots:
    void matchFiniteDifferences_data() {
        QTest::addColumn<Activation>("act");
        QTest::addColumn<LossKind>("loss");
        for (auto [an, a] : {std::pair{"relu", Activation::relu}, {"gelu", Activation::gelu}, {"tanh", Activation::tanh}}) {
            QTest::newRow((std::string(an) + " cross-entropy").c_str()) << a << LossKind::cross_entropy;
            QTest::newRow((std::string(an) + " mse").c_str()) << a << LossKind::mse;
        }
    }
    void matchFiniteDifferences() {
        QFETCH(Activation, act);
        QFETCH(LossKind, loss);
        const int batch = 4;
        ModelSpec spec;
        spec.hidden = {7, 6};
        spec.activation = act;
        const bool regression = loss == LossKind::mse;
        const ModelDesc desc = describe_model(spec, 5, regression ? 2 : 3, regression);
        CpuBackend be;
        std::vector<LayerFormats> formats(desc.layers.size(),
                                          resolve_layer_formats(LayerPrecision::automatic, Autocast::off, true));
        Network net(be, desc, batch, 7, Fp8Recipe{}, formats);

        std::mt19937 rng(3);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> x(batch * 5), targets(batch * 2);
        for (auto& v : x) v = nd(rng);
        for (auto& v : targets) v = nd(rng);
        const std::vector<std::int32_t> labels = {0, 2, 1, 2};

        net.forward(x.data(), batch, true);
        const LossResult lr = net.loss(labels.data(), targets.data(), batch, 1.0f, true);
        net.backward(batch, nullptr);

        Reference ref;
        ref.act = act;
        ref.loss = loss;
        ref.sizes = {5, 7, 6, static_cast<int>(desc.outputs())};
        for (int l = 0; l < net.layer_count(); ++l) {
            const auto w = net.read(net.weight(l)), b = net.read(net.bias(l));
            ref.w.emplace_back(w.begin(), w.end());
            ref.b.emplace_back(b.begin(), b.end());
        }
        const double base = ref.eval(x, labels, targets, batch);
        QVERIFY(std::abs(base - lr.loss) < 1e-5 * (1 + std::abs(base)));

        const double h = 1e-5;
        int checked = 0;
        for (int l = 0; l < net.layer_count(); ++l) {
            for (int which = 0; which < 2; ++which) {
                auto& params = which == 0 ? ref.w[static_cast<std::size_t>(l)] : ref.b[static_cast<std::size_t>(l)];
                const auto grad = net.read(which == 0 ? net.grad_weight(l) : net.grad_bias(l));
                QCOMPARE(grad.size(), params.size());
                for (std::size_t i = 0; i < params.size(); ++i) {
                    const double keep = params[i];
                    params[i] = keep + h;
                    const double up = ref.eval(x, labels, targets, batch);
                    params[i] = keep - h;
                    const double down = ref.eval(x, labels, targets, batch);
                    params[i] = keep;
                    const double fd = (up - down) / (2 * h);
                    QVERIFY2(std::abs(grad[i] - fd) <= 2e-6 + 1e-4 * std::abs(fd),
                             qPrintable(QString("fc%1 %2[%3]: backend %4, finite difference %5")
                                            .arg(l + 1).arg(which == 0 ? "weight" : "bias").arg(i)
                                            .arg(grad[i], 0, 'g', 9).arg(fd, 0, 'g', 9)));
                    ++checked;
                }
            }
        }
        QCOMPARE(checked, static_cast<int>(desc.parameters()));
    }
};

QTEST_GUILESS_MAIN(TestGradients)
#include "test_gradients.moc"
