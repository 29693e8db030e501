// describe_model: the layer list of each model kind, checked by building its layers.
#include "model/model_desc.h"

#include <cmath>
#include <map>

#include "error.h"
#include "model/layer.h"
#include "model/layer_registry.h"

namespace mantissa {

namespace {

using nlohmann::json;

LayerSpec node(std::string type, std::string name, json options = json::object()) {
    return LayerSpec{std::move(type), std::move(name), std::move(options), {}};
}

// A preset's layers (model.kind mlp, cnn, resnet, gpt), built: a layer that does not fit the data
// is named as the preset's ("model.kind "cnn" does not fit ...: its layer pool1: ..."), not by a
// place in a model.layers list the person never wrote.
std::vector<std::unique_ptr<Layer>> build_preset_layers(const ModelDesc& d, const std::string& kind) {
    try {
        return build_layers(d);
    } catch (const Error& e) {
        const std::string why = e.what();  // "its layer pool1: ..." (ModelDesc::preset)
        const std::string sample = d.input.flat() ? std::to_string(d.input.channels) + " values, not an image"
                                                  : "an image of " + d.input.text();
        throw Error("model.kind \"" + kind + "\" does not fit the dataset's samples (" + sample + "): " + why);
    }
}

std::vector<LayerSpec> mlp_nodes(const ModelSpec& spec, std::int64_t outputs) {
    std::vector<LayerSpec> nodes;
    for (std::size_t i = 0; i <= spec.hidden.size(); ++i) {
        const std::int64_t out = i < spec.hidden.size() ? spec.hidden[i] : outputs;
        if (out <= 0)
            throw Error("model.hidden[" + std::to_string(i) + "]: a layer needs at least one unit (got " +
                        std::to_string(out) + ").");
        nodes.push_back(node("linear", "fc" + std::to_string(i + 1), {{"out", out}}));
        if (i < spec.hidden.size()) nodes.push_back(node(activation_name(spec.activation), "act" + std::to_string(i + 1)));
    }
    return nodes;
}

// Stages of conv3×3 (padding 1) - batchnorm - relu - maxpool 2, then flatten and the MLP head:
// conv1, bn1, relu1, pool1, ..., flatten, fc1, act1, ..., fcN.
std::vector<LayerSpec> cnn_nodes(const ModelSpec& spec, std::int64_t outputs) {
    std::vector<LayerSpec> nodes;
    for (std::size_t i = 0; i < spec.channels.size(); ++i) {
        const std::string n = std::to_string(i + 1);
        nodes.push_back(node("conv2d", "conv" + n, {{"out_channels", spec.channels[i]}, {"kernel", 3}, {"padding", 1}}));
        nodes.push_back(node("batchnorm2d", "bn" + n));
        nodes.push_back(node("relu", "relu" + n));
        nodes.push_back(node("maxpool2d", "pool" + n, {{"kernel", 2}}));
    }
    nodes.push_back(node("flatten", "flatten"));
    for (LayerSpec& s : mlp_nodes(spec, outputs)) nodes.push_back(std::move(s));
    return nodes;
}

// torchvision's ResNet for small images (CIFAR's variant: a 3×3 stem, no max pool): conv1, bn1,
// relu; stages layer1..layerN of `blocks` basic blocks (layerS.B: conv1, bn1, relu, conv2, bn2,
// summed with the shortcut, then relu), the first block of every stage after the first halving
// the positions with stride 2; avgpool; fc.
std::vector<LayerSpec> resnet_nodes(const ModelSpec& spec, std::int64_t outputs) {
    std::vector<LayerSpec> nodes;
    const int stem = spec.channels.front();
    nodes.push_back(node("conv2d", "conv1", {{"out_channels", stem}, {"kernel", 3}, {"padding", 1}, {"bias", false}}));
    nodes.push_back(node("batchnorm2d", "bn1"));
    nodes.push_back(node("relu", "relu"));
    for (std::size_t s = 0; s < spec.channels.size(); ++s) {
        for (int b = 0; b < spec.blocks; ++b) {
            const std::string block = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
            const int stride = s > 0 && b == 0 ? 2 : 1;
            LayerSpec r = node("residual", block);
            const auto conv = [&](const char* name, int st) {
                return node("conv2d", block + "." + name,
                            {{"out_channels", spec.channels[s]}, {"kernel", 3}, {"stride", st}, {"padding", 1}, {"bias", false}});
            };
            r.children = {conv("conv1", stride), node("batchnorm2d", block + ".bn1"), node("relu", block + ".relu"),
                          conv("conv2", 1), node("batchnorm2d", block + ".bn2")};
            nodes.push_back(std::move(r));
            nodes.push_back(node("relu", block + ".relu_out"));
        }
    }
    nodes.push_back(node("global_avgpool", "avgpool"));
    nodes.push_back(node("linear", "fc", {{"out", outputs}}));
    return nodes;
}

// nanoGPT's decoder (pre-layernorm blocks, GELU MLP, learned positions), named as its state dict
// is. Initialisation as GPT-2's: N(0, 0.02) for weights and embeddings, the residual projections
// (attn.proj, mlp.proj) scaled by 1/√(2·blocks), biases 0, layer norms γ = 1, β = 0. A tied head
// (model.tie_embeddings) multiplies by wte and has no parameters of its own.
std::vector<LayerSpec> gpt_nodes(const ModelSpec& spec, std::int64_t vocab, std::int64_t positions) {
    if (positions > spec.context)
        throw Error("dataset.context " + std::to_string(positions) + " is longer than model.context " +
                    std::to_string(spec.context) + ", the positions the model has embeddings for; raise model.context "
                    "or lower dataset.context.");
    const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * spec.depth);
    const int d = spec.dim;
    std::vector<LayerSpec> nodes;
    nodes.push_back(node("embedding", "wte", {{"num", vocab}, {"dim", d}, {"init_std", std}}));
    nodes.push_back(node("position_embedding", "wpe", {{"context", spec.context}, {"positions", positions}, {"init_std", std}}));
    for (int i = 0; i < spec.depth; ++i) {
        const std::string b = "blocks." + std::to_string(i);
        LayerSpec attn = node("residual", b + ".attn_residual");
        attn.children = {node("layernorm", b + ".ln1"),
                         node("causal_self_attention", b + ".attn",
                              {{"heads", spec.heads}, {"positions", positions}, {"init_std", std}, {"proj_init_std", proj_std}})};
        LayerSpec mlp = node("residual", b + ".mlp_residual");
        mlp.children = {node("layernorm", b + ".ln2"),
                        node("linear", b + ".mlp.fc", {{"out", spec.mlp_ratio * d}, {"init_std", std}}),
                        node("gelu", b + ".mlp.gelu"),
                        node("linear", b + ".mlp.proj", {{"out", d}, {"init_std", proj_std}})};
        nodes.push_back(std::move(attn));
        nodes.push_back(std::move(mlp));
    }
    nodes.push_back(node("layernorm", "ln_f"));
    if (spec.tie_embeddings) nodes.push_back(node("tied_head", "head", {{"out", vocab}}));
    else nodes.push_back(node("linear", "head", {{"out", vocab}, {"init_std", std}}));
    return nodes;
}

// Sequence layers listed by hand learn T from the dataset unless they say it.
void give_positions(std::vector<LayerSpec>& nodes, std::int64_t positions) {
    for (LayerSpec& s : nodes) {
        if ((s.type == "position_embedding" || s.type == "causal_self_attention") && !s.options.contains("positions"))
            s.options["positions"] = positions;
        give_positions(s.children, positions);
    }
}

// The prefix of a layer's default name: PyTorch's customary attribute names.
std::string default_prefix(const std::string& type) {
    if (type == "conv2d") return "conv";
    if (type == "batchnorm2d") return "bn";
    if (type == "linear") return "fc";
    if (type == "maxpool2d" || type == "avgpool2d") return "pool";
    if (type == "global_avgpool") return "avgpool";
    if (type == "residual") return "block";
    return type;  // relu, gelu, tanh, flatten
}

// A model.layers list holds at most this many layers in all, those inside residual blocks counted
// (docs/experiment.md, "Models").
constexpr std::size_t max_listed_layers = 512;
// Residual blocks nest at most this deep (a block inside a block inside ... ): building, running and
// describing a block recurses into its branch, so the depth is bounded where it is read.
constexpr int max_residual_depth = 32;

// model.layers: each entry {"type": ..., "name": ... (optional), options...}; a residual's
// "layers" are its branch, named inside the block ("block1.conv1"). Unnamed layers are numbered
// per prefix within their list: conv1, conv2, bn1, fc1, ... `names`: every layer named so far, in
// every list; `depth`: the residual blocks around this list.
std::vector<LayerSpec> listed_nodes(const json& list, const std::string& where, const std::string& prefix,
                                    std::vector<std::string>& names, int depth = 0) {
    if (!list.is_array()) throw Error(where + " must be an array of layer descriptions.");
    if (list.size() > max_listed_layers)
        throw Error(where + " lists " + std::to_string(list.size()) + " layers; at most " +
                    std::to_string(max_listed_layers) + ".");
    std::map<std::string, int> counters;
    std::vector<LayerSpec> nodes;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = where + "[" + std::to_string(i) + "]";
        const json& item = list[i];
        if (!item.is_object()) throw Error(at + " must be an object such as {\"type\": \"relu\"} (got " + item.dump() + ").");
        const auto type = item.find("type");
        if (type == item.end() || !type->is_string())
            throw Error(at + ": \"type\" is required, a layer type such as \"conv2d\".");
        LayerSpec s;
        s.type = type->get<std::string>();
        std::string own;
        if (const auto n = item.find("name"); n != item.end()) {
            if (!n->is_string() || n->get<std::string>().empty() ||
                n->get<std::string>().find_first_of(" \t\n\"=") != std::string::npos)
                throw Error(at + ": \"name\" must be a non-empty name without spaces, quotes or '=' (got " + n->dump() + ").");
            own = n->get<std::string>();
        } else {
            const std::string p = default_prefix(s.type);
            own = p + std::to_string(++counters[p]);
        }
        s.name = prefix.empty() ? own : prefix + "." + own;
        for (const std::string& seen : names)
            if (seen == s.name) throw Error(at + ": the name \"" + s.name + "\" is already taken by another layer.");
        names.push_back(s.name);
        if (names.size() > max_listed_layers)
            throw Error(at + ": model.layers holds more than " + std::to_string(max_listed_layers) +
                        " layers, counting those inside residual blocks; at most " +
                        std::to_string(max_listed_layers) + ".");
        for (const auto& [key, value] : item.items())
            if (key != "type" && key != "name" && !(s.type == "residual" && key == "layers")) s.options[key] = value;
        if (s.type == "residual") {
            if (depth >= max_residual_depth)
                throw Error(at + ": a residual block " + std::to_string(depth + 1) + " levels deep, inside " +
                            std::to_string(depth) + " others; residual blocks nest at most " +
                            std::to_string(max_residual_depth) + " levels deep.");
            const auto children = item.find("layers");
            if (children == item.end()) throw Error(at + ": a residual needs \"layers\", its branch.");
            s.children = listed_nodes(*children, at + ".layers", s.name, names, depth + 1);
        }
        nodes.push_back(std::move(s));
    }
    return nodes;
}

}  // namespace

std::int64_t ModelDesc::parameters() const {
    std::int64_t n = 0;
    for (const auto& l : layers) n += l.parameters;
    return n;
}

int ModelDesc::layer_index(const std::string& name) const {
    for (std::size_t i = 0; i < layers.size(); ++i)
        if (layers[i].name == name) return static_cast<int>(i);
    return -1;
}

std::string ModelDesc::layer_names() const {
    if (layers.empty()) return "none";
    bool mlp = true;
    for (std::size_t i = 0; i < layers.size(); ++i) mlp = mlp && layers[i].name == "fc" + std::to_string(i + 1);
    if (mlp && layers.size() > 2) return "fc1..fc" + std::to_string(layers.size());
    std::string s;
    for (const auto& l : layers) s += (s.empty() ? "" : ", ") + l.name;
    return s;
}

ModelDesc describe_model(const ModelSpec& spec, SampleShape input, std::int64_t outputs, bool regression,
                         std::int64_t sequence) {
    if (input.numel() <= 0 || outputs <= 0)
        throw Error("The dataset has no features or no outputs to train a model on.");
    ModelDesc d;
    d.input = input;
    d.output_values = outputs;
    d.loss = regression ? LossKind::mse : LossKind::cross_entropy;
    if (sequence > 0) {
        if (input.numel() != sequence || regression)
            throw Error("A text dataset's sample is " + std::to_string(sequence) + " token ids with a next token each.");
        if (spec.kind != "gpt" && spec.kind != "layers")
            throw Error("model.kind: \"" + spec.kind + "\" does not read text; use \"gpt\" with dataset.kind 'text' (or "
                        "\"layers\" starting with an embedding).");
        d.input = SampleShape{1, 1, 1};  // one id per row
        d.positions = sequence;
    } else if (spec.kind == "gpt") {
        throw Error("model.kind: \"gpt\" is a language model; set dataset.kind to 'text' (docs/datasets.md, \"Text\").");
    }
    if (spec.kind == "gpt") {
        d.nodes = gpt_nodes(spec, outputs, sequence);
    } else if (spec.kind == "mlp") {
        d.nodes = mlp_nodes(spec, outputs);
    } else if (spec.kind == "cnn") {
        d.nodes = cnn_nodes(spec, outputs);
    } else if (spec.kind == "resnet") {
        d.nodes = resnet_nodes(spec, outputs);
    } else if (spec.kind == "layers") {
        json list;
        try {
            list = json::parse(spec.layers);
        } catch (const json::exception&) {
            throw Error("model.layers is not valid JSON.");
        }
        std::vector<std::string> names;
        d.nodes = listed_nodes(list, "model.layers", "", names);
        if (sequence > 0) give_positions(d.nodes, sequence);
    } else {
        throw Error("model.kind: \"" + spec.kind + "\" is not a known model; use \"mlp\", \"cnn\", \"resnet\", \"gpt\" or \"layers\".");
    }
    // Build once without tensors: every shape and option is checked, and the layers with
    // parameters are listed.
    d.preset = spec.kind != "layers";
    const auto nodes = d.preset ? build_preset_layers(d, spec.kind) : build_layers(d);
    std::vector<Layer*> with_parameters;
    const auto collect = [&](auto& self, Layer& layer) -> void {
        if (layer.has_parameters()) with_parameters.push_back(&layer);
        for (Layer* child : layer.children()) self(self, *child);
    };
    for (const auto& node : nodes) collect(collect, *node);
    for (Layer* layer : with_parameters) {
        LayerInfo s;
        s.name = layer->name();
        s.kind = layer->kind();
        s.in_shape = layer->described_input_shape();
        s.out_shape = layer->output_shape();
        s.in_features = s.in_shape.numel();
        s.out_features = s.out_shape.numel();
        s.parameters = layer->parameter_count();
        s.takes_precision = layer->takes_precision();
        d.layers.push_back(std::move(s));
    }
    return d;
}

std::vector<std::unique_ptr<Layer>> build_layers(const ModelDesc& desc) {
    std::vector<std::unique_ptr<Layer>> layers;
    SampleShape shape = desc.input;
    for (std::size_t i = 0; i < desc.nodes.size(); ++i) {
        layers.push_back(build_layer(desc.nodes[i], shape, desc.preset ? "" : "model.layers[" + std::to_string(i) + "]"));
        shape = layers.back()->output_shape();
    }
    if (layers.empty()) throw Error("The model has no layers.");
    if (shape.numel() != desc.outputs())
        throw Error("The model's last layer gives " + shape.text() + " values per sample; the dataset has " +
                    std::to_string(desc.outputs()) + (desc.loss == LossKind::mse ? " targets." : " classes."));
    return layers;
}

}  // namespace mantissa
