// Autocast, op by op: the class of every op of the GPT model held to PyTorch's autocast lists
// (torch.amp, CUDA: `linear`, `matmul`, `bmm` on the lower-precision list; `softmax`,
// `layer_norm` on the FP32 list; `embedding` and the elementwise ops on neither), in the formats a
// built network really declares, in the rows `show` and the Layers view print (op_table), and
// under the precision.ops overrides that autocast itself does not offer.
#include <QtTest>

#include "backend/cpu/cpu_backend.h"
#include "model/layers/attention_layer.h"
#include "model/layers/layernorm_layer.h"
#include "model/network.h"
#include "model/op_table.h"

using namespace mantissa;

namespace {

// PyTorch's lists, as far as the ops of a GPT go.
enum class AutocastList { lower_precision, fp32, neither };
AutocastList pytorch_list(const std::string& op) {
    if (op == "linear" || op == "bmm") return AutocastList::lower_precision;
    if (op == "softmax" || op == "layernorm") return AutocastList::fp32;
    return AutocastList::neither;  // embedding, add, gelu
}

ModelDesc tiny_gpt() {
    ModelSpec spec;
    spec.kind = "gpt";
    spec.depth = 2;
    spec.heads = 2;
    spec.dim = 8;
    spec.context = 4;
    return describe_model(spec, SampleShape{4, 1, 1}, 5, false, 4);
}

std::vector<LayerFormats> auto_formats(const ModelDesc& d, Autocast a) {
    return std::vector<LayerFormats>(d.layers.size(), resolve_layer_formats(LayerPrecision::automatic, a, true));
}

}  // namespace

class TestOpClasses : public QObject {
    Q_OBJECT
private slots:
    void classesFollowPyTorchsLists_data() {
        QTest::addColumn<int>("autocast");
        QTest::newRow("fp16") << static_cast<int>(Autocast::fp16);
        QTest::newRow("bf16") << static_cast<int>(Autocast::bf16);
    }
    void classesFollowPyTorchsLists() {
        QFETCH(int, autocast);
        const Autocast a = static_cast<Autocast>(autocast);
        const Format low = autocast_format(a);
        PrecisionSpec p;
        p.autocast = a;
        const ModelDesc desc = tiny_gpt();
        int rows = 0;
        for (const OpRow& r : op_table(desc.layers, p)) {
            const AutocastList list = pytorch_list(r.op);
            if (list == AutocastList::lower_precision) {
                QCOMPARE(r.format, std::string(format_name(low)));
                QCOMPARE(r.reason, std::string("autocast"));
            } else if (list == AutocastList::fp32) {
                QCOMPARE(r.format, std::string("fp32"));
                QCOMPARE(r.reason, std::string("autocast's FP32 list"));
            } else {
                QCOMPARE(r.format, std::string("fp32"));  // the FP32 tables' own format
            }
            ++rows;
        }
        // 2 embeddings, per block 2 layer norms, 4 linears and 3 attention ops, then ln_f and head.
        QCOMPARE(rows, 2 + 2 * (2 + 4 + 3) + 2);

        // What a built network declares agrees.
        CpuBackend be;
        Network net(be, desc, 2, 1, Fp8Recipe{}, auto_formats(desc, a), resolve_op_formats(p.ops, a));
        int attentions = 0, norms = 0;
        for (const auto& node : net.nodes())
            for (Layer* child : node->children()) {
                if (auto* attn = dynamic_cast<AttentionLayer*>(child)) {
                    QCOMPARE(attn->matmul_format(), low);
                    QCOMPARE(attn->softmax_format(), Format::fp32);
                    ++attentions;
                }
                if (auto* ln = dynamic_cast<LayerNormLayer*>(child)) {
                    QCOMPARE(ln->output_format(), Format::fp32);
                    ++norms;
                }
            }
        QCOMPARE(attentions, 2);
        QCOMPARE(norms, 4);
        QCOMPARE(net.nodes().front()->output_format(), Format::fp32);  // wte
        QCOMPARE(net.output().format(), low);                          // the head: a linear
    }

    void overridesReachEveryOpOfTheClass() {
        PrecisionSpec p;
        p.autocast = Autocast::bf16;
        p.ops.softmax = OpPrecision::fp16;
        p.ops.layernorm = OpPrecision::bf16;
        const ModelDesc desc = tiny_gpt();
        for (const OpRow& r : op_table(desc.layers, p)) {
            if (r.op == "softmax") {
                QCOMPARE(r.format, std::string("fp16"));
                QCOMPARE(r.reason, std::string("precision.ops.softmax"));
            }
            if (r.op == "layernorm") QCOMPARE(r.format, std::string("bf16"));
        }
        CpuBackend be;
        Network net(be, desc, 2, 1, Fp8Recipe{}, auto_formats(desc, p.autocast), resolve_op_formats(p.ops, p.autocast));
        // And live: back to auto re-declares in FP32.
        for (const auto& node : net.nodes())
            for (Layer* child : node->children())
                if (auto* attn = dynamic_cast<AttentionLayer*>(child)) QCOMPARE(attn->softmax_format(), Format::fp16);
        net.set_op_formats(resolve_op_formats(OpPrecisions{}, p.autocast));
        for (const auto& node : net.nodes())
            for (Layer* child : node->children())
                if (auto* attn = dynamic_cast<AttentionLayer*>(child)) QCOMPARE(attn->softmax_format(), Format::fp32);
    }

    void withoutAutocastOpsWriteTheirInputsFormat() {
        const OpFormats f = resolve_op_formats(OpPrecisions{}, Autocast::off);
        QVERIFY(!f.matmul && !f.softmax && !f.layernorm);
        PrecisionSpec p;
        for (const OpRow& r : op_table(tiny_gpt().layers, p)) {
            if (r.op == "layernorm") QCOMPARE(r.format, std::string("input's format"));
            if (r.op == "softmax" || r.op == "bmm") QCOMPARE(r.format, std::string("fp32"));  // qkv's
        }
    }
};

QTEST_APPLESS_MAIN(TestOpClasses)
#include "test_op_classes.moc"
