// The GPT model's backward held to central finite differences computed in double precision: a
// reference forward in double (written here from the formulas of docs/numerics.md, "Transformer
// layers": embeddings, pre-layernorm blocks with causal multi-head attention and a GELU MLP, the
// final layer norm and the head, mean cross-entropy over every position) reads the network's own
// parameters; its finite differences are exact to ~1e-9, so the engine's FP32 gradients are held
// to FP32's accuracy. Two blocks, so the residual stream carries gradients through a block into
// another; several heads and samples, so the causal mask, the head views and the rows of a sample
// are all exercised.
#include <QtTest>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "model/network.h"

using namespace mantissa;

namespace {

constexpr int V = 7, D = 8, H = 2, T = 4, B = 2, BLOCKS = 2, RATIO = 2, CONTEXT = 6;

using Params = std::map<std::string, std::vector<double>>;
using Mat = std::vector<std::vector<double>>;  // rows of a (T, n) matrix

Mat layernorm(const Mat& x, const std::vector<double>& g, const std::vector<double>& b) {
    Mat y = x;
    for (auto& row : y) {
        double mean = 0, var = 0;
        for (double v : row) mean += v;
        mean /= static_cast<double>(row.size());
        for (double v : row) var += (v - mean) * (v - mean);
        var /= static_cast<double>(row.size());
        const double inv = 1.0 / std::sqrt(var + 1e-5);
        for (std::size_t j = 0; j < row.size(); ++j) row[j] = (row[j] - mean) * inv * g[j] + b[j];
    }
    return y;
}

// y = x·Wᵀ + b, W (out, in) row-major.
Mat linear(const Mat& x, const std::vector<double>& w, const std::vector<double>& b, std::size_t out) {
    Mat y(x.size(), std::vector<double>(out));
    for (std::size_t r = 0; r < x.size(); ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double s = b.empty() ? 0 : b[o];
            for (std::size_t i = 0; i < x[r].size(); ++i) s += x[r][i] * w[o * x[r].size() + i];
            y[r][o] = s;
        }
    return y;
}

Mat attention(const Mat& x, const Params& p, const std::string& n) {
    const Mat qkv = linear(x, p.at(n + ".qkv.weight"), p.at(n + ".qkv.bias"), 3 * D);
    const int hd = D / H;
    Mat o(T, std::vector<double>(D, 0.0));
    for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
            std::vector<double> s(static_cast<std::size_t>(i + 1));
            double mx = -1e300;
            for (int j = 0; j <= i; ++j) {
                double dot = 0;
                for (int c = 0; c < hd; ++c) dot += qkv[i][h * hd + c] * qkv[j][D + h * hd + c];
                s[j] = dot / std::sqrt(static_cast<double>(hd));
                mx = std::max(mx, s[j]);
            }
            double z = 0;
            for (double& v : s) z += (v = std::exp(v - mx));
            for (int j = 0; j <= i; ++j)
                for (int c = 0; c < hd; ++c) o[i][h * hd + c] += s[j] / z * qkv[j][2 * D + h * hd + c];
        }
    return linear(o, p.at(n + ".proj.weight"), p.at(n + ".proj.bias"), D);
}

double gelu(double z) { return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))); }

double reference_loss(const Params& p, const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& labels) {
    double total = 0;
    for (int s = 0; s < B; ++s) {
        Mat x(T, std::vector<double>(D));
        for (int t = 0; t < T; ++t)
            for (int c = 0; c < D; ++c)
                x[t][c] = p.at("wte.weight")[ids[s * T + t] * D + c] + p.at("wpe.weight")[t * D + c];
        for (int b = 0; b < BLOCKS; ++b) {
            const std::string n = "blocks." + std::to_string(b);
            const Mat a = attention(layernorm(x, p.at(n + ".ln1.weight"), p.at(n + ".ln1.bias")), p, n + ".attn");
            for (int t = 0; t < T; ++t)
                for (int c = 0; c < D; ++c) x[t][c] += a[t][c];
            Mat f = linear(layernorm(x, p.at(n + ".ln2.weight"), p.at(n + ".ln2.bias")), p.at(n + ".mlp.fc.weight"),
                           p.at(n + ".mlp.fc.bias"), RATIO * D);
            for (auto& row : f)
                for (double& v : row) v = gelu(v);
            const Mat m = linear(f, p.at(n + ".mlp.proj.weight"), p.at(n + ".mlp.proj.bias"), D);
            for (int t = 0; t < T; ++t)
                for (int c = 0; c < D; ++c) x[t][c] += m[t][c];
        }
        const Mat logits = linear(layernorm(x, p.at("ln_f.weight"), p.at("ln_f.bias")), p.at("head.weight"),
                                  p.at("head.bias"), V);
        for (int t = 0; t < T; ++t) {
            double mx = -1e300, z = 0;
            for (double v : logits[t]) mx = std::max(mx, v);
            for (double v : logits[t]) z += std::exp(v - mx);
            total += std::log(z) + mx - logits[t][labels[s * T + t]];
        }
    }
    return total / (B * T);
}

}  // namespace

class TestGptGradients : public QObject {
    Q_OBJECT
private slots:
    void backwardMatchesDoublePrecisionFiniteDifferences() {
        ModelSpec spec;
        spec.kind = "gpt";
        spec.depth = BLOCKS;
        spec.heads = H;
        spec.dim = D;
        spec.context = CONTEXT;
        spec.mlp_ratio = RATIO;
        ModelDesc desc;
        try {
            desc = describe_model(spec, SampleShape{T, 1, 1}, V, false, T);
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        QCOMPARE(desc.positions, std::int64_t{T});
        CpuBackend be;
        Network net(be, desc, B, 3, Fp8Recipe{},
                    std::vector<LayerFormats>(desc.layers.size(),
                                              resolve_layer_formats(LayerPrecision::fp32, Autocast::off, true)));

        // Layer norms and biases away from their initial 1 and 0, so their gradients are general.
        std::mt19937 rng(7);
        std::normal_distribution<float> nd(0.0f, 0.3f);
        Params params;
        for (const NetworkParameter& p : net.parameters()) {
            std::vector<float> v = net.read(*p.tensors.value);
            for (float& x : v) x += nd(rng);
            net.write(*p.tensors.value, v);
            params[p.name] = std::vector<double>(v.begin(), v.end());
        }
        std::uniform_int_distribution<int> token(0, V - 1);
        std::vector<std::int32_t> ids(B * T), labels(B * T);
        for (auto& i : ids) i = token(rng);
        for (auto& l : labels) l = token(rng);
        const std::vector<float> x(ids.begin(), ids.end());

        net.forward(x.data(), B, true);
        const double engine_loss = net.loss(labels.data(), nullptr, B, 1.0f, true).loss;
        QVERIFY(std::abs(engine_loss - reference_loss(params, ids, labels)) < 1e-5);
        net.backward(B, nullptr);

        int checked = 0;
        double worst = 0;
        for (const NetworkParameter& p : net.parameters()) {
            const std::vector<float> g = net.read(*p.tensors.grad);
            std::vector<double>& w = params[p.name];
            for (std::size_t i = 0; i < w.size(); ++i) {
                const double keep = w[i], h = 1e-6;
                w[i] = keep + h;
                const double up = reference_loss(params, ids, labels);
                w[i] = keep - h;
                const double down = reference_loss(params, ids, labels);
                w[i] = keep;
                const double fd = (up - down) / (2 * h);
                const double err = std::abs(g[i] - fd);
                worst = std::max(worst, err);
                QVERIFY2(err <= 2e-5 + 1e-3 * std::abs(fd),
                         qPrintable(QString("%1[%2]: backward %3, finite difference %4")
                                        .arg(QString::fromStdString(p.name)).arg(i).arg(g[i], 0, 'g', 8).arg(fd, 0, 'g', 8)));
                ++checked;
            }
        }
        QCOMPARE(checked, static_cast<int>(desc.parameters()));
        qInfo("%d parameters checked; largest |backward - finite difference| %.2e", checked, worst);
    }
};

QTEST_APPLESS_MAIN(TestGptGradients)
#include "test_gpt_gradients.moc"
