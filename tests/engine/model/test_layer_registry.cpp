// Model descriptions from the layer registry: the presets' names and shapes (PyTorch's state-dict
// names), explicit layer lists, and a sentence naming the layer and the key for every description
// that does not fit, given before any tensor exists.
#include <QtTest>

#include <string>

#include "error.h"
#include "model/layer.h"
#include "model/layer_registry.h"
#include "model/model_desc.h"

using namespace mantissa;

namespace {

ModelSpec listed(const std::string& layers) {
    ModelSpec m;
    m.kind = "layers";
    m.layers = layers;
    return m;
}

QString refusal(const ModelSpec& m, SampleShape input = {1, 8, 8}, std::int64_t outputs = 10) {
    try {
        describe_model(m, input, outputs, false);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// `depth` residual blocks, each the only layer of the one around it, around `inner`.
std::string nested_residuals(int depth, const std::string& inner = R"({"type":"linear","out":3})") {
    std::string text;
    for (int i = 0; i < depth; ++i) text += R"({"type":"residual","layers":[)";
    text += inner;
    for (int i = 0; i < depth; ++i) text += "]}";
    return "[" + text + "]";
}

// "model.layers[0]" and then ".layers[0]" for each of `depth` blocks around it.
std::string nested_path(int depth) {
    std::string path = "model.layers[0]";
    for (int i = 0; i < depth; ++i) path += ".layers[0]";
    return path;
}

QStringList names(const ModelDesc& d) {
    QStringList n;
    for (const LayerInfo& l : d.layers) n << QString::fromStdString(l.name);
    return n;
}

}  // namespace

class TestLayerRegistry : public QObject {
    Q_OBJECT
private slots:
    void mlpKeepsItsNames() {
        ModelSpec m;
        m.hidden = {32, 16};
        const ModelDesc d = describe_model(m, 5, 3, false);
        QCOMPARE(names(d), (QStringList{"fc1", "fc2", "fc3"}));
        QCOMPARE(d.layers[0].in_features, std::int64_t{5});
        QCOMPARE(d.layers[2].out_features, std::int64_t{3});
        QCOMPARE(d.parameters(), std::int64_t{5 * 32 + 32 + 32 * 16 + 16 + 16 * 3 + 3});
        QCOMPARE(QString::fromStdString(d.layers[1].kind), QString("linear"));
        QVERIFY(d.layers[1].takes_precision);
        QCOMPARE(QString::fromStdString(d.layer_names()), QString("fc1..fc3"));
    }

    void cnnPresetOnFashionMnistShapes() {
        ModelSpec m;
        m.kind = "cnn";
        m.channels = {32, 64};
        m.hidden = {128};
        const ModelDesc d = describe_model(m, SampleShape{1, 28, 28}, 10, false);
        QCOMPARE(names(d), (QStringList{"conv1", "bn1", "conv2", "bn2", "fc1", "fc2"}));
        QCOMPARE(d.layers[0].out_shape, (SampleShape{32, 28, 28}));
        QCOMPARE(d.layers[2].in_shape, (SampleShape{32, 14, 14}));
        QCOMPARE(d.layers[4].in_features, std::int64_t{64 * 7 * 7});
        QCOMPARE(d.layers[0].parameters, std::int64_t{32 * 9 + 32});
        QCOMPARE(d.layers[1].parameters, std::int64_t{64});
        QVERIFY(!d.layers[1].takes_precision);
        QCOMPARE(QString::fromStdString(d.layers[1].kind), QString("batchnorm2d"));
    }

    void resnetPresetFollowsTorchvisionNames() {
        ModelSpec m;
        m.kind = "resnet";
        m.channels = {16, 32};
        m.blocks = 2;
        const ModelDesc d = describe_model(m, SampleShape{1, 28, 28}, 10, false);
        const QStringList n = names(d);
        QCOMPARE(n.front(), QString("conv1"));
        QVERIFY(n.contains("layer1.0.conv1"));
        QVERIFY(n.contains("layer1.1.bn2"));
        QVERIFY(n.contains("layer2.0.downsample.0"));
        QVERIFY(n.contains("layer2.0.downsample.1"));
        QVERIFY(!n.contains("layer1.0.downsample.0"));  // the first stage keeps the shape
        QCOMPARE(n.back(), QString("fc"));
        const LayerInfo& down = d.layers[static_cast<std::size_t>(d.layer_index("layer2.0.downsample.0"))];
        QCOMPARE(down.out_shape, (SampleShape{32, 14, 14}));
        QCOMPARE(down.parameters, std::int64_t{16 * 32});  // 1×1, no bias
        QCOMPARE(d.layers.back().in_features, std::int64_t{32});  // after the global average pool
    }

    void listedLayersAreNamedPerType() {
        const ModelDesc d = describe_model(
            listed(R"([{"type":"conv2d","out_channels":4,"kernel":3},{"type":"relu"},
                      {"type":"residual","layers":[{"type":"conv2d","out_channels":4,"kernel":3,"padding":1},
                                                  {"type":"batchnorm2d"}]},
                      {"type":"flatten"},{"type":"linear","out":10,"name":"head"}])"),
            SampleShape{1, 8, 8}, 10, false);
        QCOMPARE(names(d), (QStringList{"conv1", "block1.conv1", "block1.bn1", "head"}));
        QCOMPARE(d.layers[0].out_shape, (SampleShape{4, 6, 6}));
    }

    void refusalsNameTheLayerAndTheKey_data() {
        QTest::addColumn<QString>("layers");
        QTest::addColumn<QString>("sentence");
        QTest::newRow("unknown type") << R"([{"type":"conv3d"}])"
                                      << "model.layers[0] (conv3d1): \"conv3d\" is not a layer type; the types are";
        QTest::newRow("unknown key") << R"([{"type":"relu","inplace":true}])"
                                     << "model.layers[0] (relu1): \"inplace\" is not an option of a relu layer.";
        QTest::newRow("kernel larger than input")
            << R"([{"type":"conv2d","out_channels":4,"kernel":9}])"
            << "model.layers[0] (conv1): \"kernel\" 9 is larger than its 8×8 input (1×8×8).";
        QTest::newRow("missing required key") << R"([{"type":"conv2d","kernel":3}])"
                                              << "model.layers[0] (conv1): \"out_channels\" is required";
        QTest::newRow("out of range") << R"([{"type":"conv2d","out_channels":0,"kernel":3}])"
                                      << "model.layers[0] (conv1): \"out_channels\" must be from 1 to 65536 (got 0).";
        QTest::newRow("shapes do not end at the classes")
            << R"([{"type":"flatten"},{"type":"linear","out":7}])"
            << "The model's last layer gives 7 values per sample; the dataset has 10 classes.";
        QTest::newRow("duplicate name")
            << R"([{"type":"linear","out":10,"name":"fc"},{"type":"linear","out":10,"name":"fc"}])"
            << "model.layers[1]: the name \"fc\" is already taken by another layer.";
        QTest::newRow("residual without layers") << R"([{"type":"residual"}])"
                                                 << "model.layers[0]: a residual needs \"layers\", its branch.";
        QTest::newRow("nested error names the path")
            << R"([{"type":"residual","layers":[{"type":"maxpool2d","kernel":2,"padding":2}]}])"
            << "model.layers[0].layers[0] (block1.pool1): \"padding\" 2 is more than half the kernel (2).";
        QTest::newRow("not an object") << R"([3])" << "model.layers[0] must be an object";
        // Building a block recurses into its branch: nesting is bounded where the list is read.
        const std::string too_deep = ": a residual block 33 levels deep, inside 32 others; residual blocks nest at "
                                     "most 32 levels deep.";
        QTest::newRow("residual blocks 33 deep") << QString::fromStdString(nested_residuals(33))
                                                 << QString::fromStdString(nested_path(32) + too_deep);
        QTest::newRow("residual blocks 10000 deep") << QString::fromStdString(nested_residuals(10000))
                                                    << QString::fromStdString(nested_path(32) + too_deep);
        // 512 layers in all, those inside blocks counted: two blocks of 300 reach it in the second.
        std::string relus;
        for (int i = 0; i < 300; ++i) relus += std::string(i ? "," : "") + R"({"type":"relu"})";
        const std::string block = R"({"type":"residual","layers":[)" + relus + "]}";
        QTest::newRow("more than 512 layers over all blocks")
            << QString::fromStdString("[" + block + "," + block + "]")
            << "model.layers[1].layers[210]: model.layers holds more than 512 layers, counting those inside residual "
               "blocks; at most 512.";
        QTest::newRow("no type") << R"([{"out":3}])" << "model.layers[0]: \"type\" is required";
    }
    void refusalsNameTheLayerAndTheKey() {
        QFETCH(QString, layers);
        QFETCH(QString, sentence);
        const QString said = refusal(listed(layers.toStdString()));
        QVERIFY2(said.startsWith(sentence), qPrintable(said));
    }

    // 32 blocks, each inside the one before, are a model (each projects 5 values to the 3 of its branch).
    void residualBlocks32Deep() {
        const ModelDesc d = describe_model(listed(nested_residuals(32)), 5, 3, false);
        QCOMPARE(d.nodes.size(), std::size_t{1});
        const LayerSpec* inner = &d.nodes.front();
        for (int i = 0; i < 32; ++i) {
            QCOMPARE(inner->children.size(), std::size_t{1});
            inner = &inner->children.front();
        }
        QCOMPARE(QString::fromStdString(inner->type), QString("linear"));
    }

    void everyRegisteredTypeBuilds() {
        const std::vector<std::string> types = layer_types();
        QVERIFY(types.size() >= 11);
        for (const std::string& t : types) {
            LayerSpec s{t, "x", nlohmann::json::object(), {}};
            if (t == "linear") s.options = {{"out", 3}};
            if (t == "conv2d") s.options = {{"out_channels", 3}, {"kernel", 3}};
            if (t == "maxpool2d" || t == "avgpool2d") s.options = {{"kernel", 2}};
            if (t == "residual") s.children = {LayerSpec{"relu", "x.r", nlohmann::json::object(), {}}};
            // The sequence layers take one row per position: a token id, or a flat row of features.
            SampleShape input{2, 6, 6};
            if (t == "embedding") s.options = {{"num", 5}, {"dim", 4}}, input = {1, 1, 1};
            if (t == "position_embedding") s.options = {{"context", 8}, {"positions", 4}}, input = {4, 1, 1};
            if (t == "layernorm") input = {4, 1, 1};
            if (t == "causal_self_attention") s.options = {{"heads", 2}, {"positions", 4}}, input = {4, 1, 1};
            if (t == "tied_head") s.options = {{"out", 5}}, input = {4, 1, 1};
            const auto layer = build_layer(s, input, "test");
            QCOMPARE(QString(layer->kind()), QString::fromStdString(t));
            QVERIFY(layer->output_shape().numel() > 0);
        }
    }
};

QTEST_APPLESS_MAIN(TestLayerRegistry)
#include "test_layer_registry.moc"
