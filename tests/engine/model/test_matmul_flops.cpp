// The matmul FLOPs of a training step (model/matmul_flops.h) against arithmetic written out here
// from each model's shapes: the reference MLP (128.9 MFLOP at batch 128), the reference CNN, the
// GPT language model (untied and tied head), a residual block as the first layer, and a Network
// on the CPU backend under bf16 autocast (the same FLOPs, in the formats it declares).
#include <QtTest>

#include "backend/cpu/cpu_backend.h"
#include "model/matmul_flops.h"
#include "model/network.h"

using namespace mantissa;

namespace {

// Forward, dgrad and wgrad of a (rows, in) · (in, out) layer: 2 FLOPs per multiply-add each.
double three(double rows, double in, double out) { return 3 * 2 * rows * in * out; }
double no_dgrad(double rows, double in, double out) { return 2 * 2 * rows * in * out; }

ModelSpec gpt_spec(bool tied) {
    ModelSpec s;
    s.kind = "gpt";
    s.depth = 4;
    s.heads = 4;
    s.dim = 128;
    s.context = 128;
    s.mlp_ratio = 4;
    s.tie_embeddings = tied;
    return s;
}

int count_pass(const std::vector<MatmulFlops>& m, const std::string& layer, MatmulPass pass) {
    int n = 0;
    for (const MatmulFlops& f : m) n += f.layer == layer && f.pass == pass;
    return n;
}

}  // namespace

class TestMatmulFlops : public QObject {
    Q_OBJECT
private slots:
    void referenceMlp() {
        ModelSpec spec;  // 784-256-128-10
        const ModelDesc desc = describe_model(spec, 784, 10, false);
        const auto m = step_matmul_flops(desc, 128);
        // fc1 reads the data: no input gradient. 2·2·128·784·256 + 3·2·128·(256·128 + 128·10).
        QCOMPARE(total_flops(m), 128'909'312.0);
        QCOMPARE(total_flops(m), no_dgrad(128, 784, 256) + three(128, 256, 128) + three(128, 128, 10));
        QCOMPARE(count_pass(m, "fc1", MatmulPass::dgrad), 0);
        QCOMPARE(count_pass(m, "fc2", MatmulPass::dgrad), 1);
        QCOMPARE(count_pass(m, "fc3", MatmulPass::wgrad), 1);
        QCOMPARE(m.size(), std::size_t{8});
        for (const MatmulFlops& f : m) QCOMPARE(f.operands.format, Format::fp32);
        // Linear in the batch.
        QCOMPARE(total_flops(step_matmul_flops(desc, 256)), 2 * total_flops(m));
    }

    void referenceCnn() {
        ModelSpec spec;
        spec.kind = "cnn";
        spec.channels = {32, 64};
        spec.hidden = {128};
        const ModelDesc desc = describe_model(spec, SampleShape{1, 28, 28}, 10, false);
        const double B = 128;
        // conv1: 1→32 channels, 3×3, padding 1: 28×28 outputs of 1·3·3 products each; first layer.
        const double conv1 = 2 * 2 * B * (32 * 28 * 28) * (1 * 3 * 3);
        // conv2 after the 2×2 pool: 32→64 channels on 14×14, 32·3·3 products per output.
        const double conv2 = 3 * 2 * B * (64 * 14 * 14) * (32 * 3 * 3);
        // The head after the second pool and flatten: 64·7·7 = 3136 → 128 → 10.
        const double head = three(B, 3136, 128) + three(B, 128, 10);
        QCOMPARE(total_flops(step_matmul_flops(desc, 128)), conv1 + conv2 + head);
    }

    void gpt_data() {
        QTest::addColumn<bool>("tied");
        QTest::newRow("untied head") << false;
        QTest::newRow("tied head") << true;
    }
    void gpt() {
        QFETCH(bool, tied);
        const double V = 96, T = 128, d = 128, B = 32, rows = B * T;
        const ModelDesc desc = describe_model(gpt_spec(tied), SampleShape{128, 1, 1}, 96, false, 128);
        // Per block: qkv (d → 3d), Q·Kᵀ and P·V forward and four products backward, each
        // samples·heads·T·T·(d/heads) = rows·T·d multiply-adds; proj (d → d); the MLP d → 4d → d.
        // Every layer after the embeddings gets its input gradient.
        const double attention_products = 6 * 2 * rows * T * d;
        const double block = three(rows, d, 3 * d) + attention_products + three(rows, d, d) + three(rows, d, 4 * d) +
                             three(rows, 4 * d, d);
        const double head = three(rows, d, V);  // tied or not: x·Wᵀ, dy·W, dyᵀ·x
        const auto m = step_matmul_flops(desc, 32);
        QCOMPARE(total_flops(m), 4 * block + head);
        QCOMPARE(count_pass(m, "blocks.0.attn", MatmulPass::forward), 1);
        QCOMPARE(count_pass(m, "blocks.0.attn.qkv", MatmulPass::dgrad), 1);
        QCOMPARE(count_pass(m, "head", MatmulPass::dgrad), 1);
        for (const MatmulFlops& f : m) QCOMPARE(f.batched, f.layer == "blocks.0.attn" || f.layer == "blocks.1.attn" ||
                                                               f.layer == "blocks.2.attn" || f.layer == "blocks.3.attn");
    }

    // A residual block as the first layer: its branch's first layer and its projection's read the
    // data (no input gradient); the branch's second layer does not.
    void residualFirst() {
        ModelSpec spec;
        spec.kind = "layers";
        spec.layers = R"([{"type": "residual", "layers": [{"type": "linear", "out": 16}, {"type": "relu"},
                          {"type": "linear", "out": 8}]}, {"type": "linear", "out": 3}])";
        const ModelDesc desc = describe_model(spec, 4, 3, false);
        const auto m = step_matmul_flops(desc, 10);
        const double B = 10;
        // branch 4 → 16 → 8, projection 4 → 8, then 8 → 3.
        QCOMPARE(total_flops(m), no_dgrad(B, 4, 16) + three(B, 16, 8) + no_dgrad(B, 4, 8) + three(B, 8, 3));
    }

    // A network on the CPU backend under bf16 autocast: the same FLOPs as its description, each
    // matmul in the format the network declared (attention's products in the autocast type).
    void networkInItsFormats() {
        CpuBackend backend;
        ModelSpec spec = gpt_spec(false);
        spec.depth = 1;
        spec.dim = 16;
        spec.heads = 2;
        spec.context = 8;
        const ModelDesc desc = describe_model(spec, SampleShape{8, 1, 1}, 11, false, 8);
        const std::vector<LayerFormats> formats(desc.layers.size(),
                                                resolve_layer_formats(LayerPrecision::automatic, Autocast::bf16, true));
        Network net(backend, desc, 4, 1, Fp8Recipe{}, formats, resolve_op_formats(OpPrecisions{}, Autocast::bf16));
        const auto m = step_matmul_flops(net, 4);
        QCOMPARE(total_flops(m), total_flops(step_matmul_flops(desc, 4)));
        QVERIFY(!m.empty());
        for (const MatmulFlops& f : m) QCOMPARE(f.operands.format, Format::bf16);
        QCOMPARE(QString(matmul_pass_name(MatmulPass::wgrad)), QStringLiteral("wgrad"));
    }
};

QTEST_GUILESS_MAIN(TestMatmulFlops)
#include "test_matmul_flops.moc"
