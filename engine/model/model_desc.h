// The network a run trains, as a plain description: the input's shape, a list of layer
// descriptions (each a registered kind with its options, layer_registry.h), and the loss that goes
// with the task (softmax cross-entropy for classification, mean squared error for regression).
// describe_model makes one from the experiment's model section and checks it whole (shapes that
// chain, kernels that fit, names that are unique) by building its layers without tensors; the
// Network builds them again on a backend.
//
// model.kind "mlp": linear layers fc1..fcN (inputs -> hidden sizes -> outputs) with one activation
// between them (act1..act{N-1}). model.kind "gpt" (a text dataset): wte, wpe, blocks.0..N-1 (ln1,
// attn with attn.qkv and attn.proj, ln2, mlp.fc, mlp.proj), ln_f, head.
//
// Sequence models. On a text dataset a sample is T token ids, and every row of every tensor is one
// position: the input is (samples·T, 1) ids, the logits (samples·T, vocabulary), and the loss is
// the mean over the samples·T positions. ModelDesc::positions is T (1 for every other model); the
// Network multiplies its rows by it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.h"
#include "config/layer_info.h"
#include "config/sample_shape.h"

namespace mantissa {

class Layer;

enum class LossKind : std::uint8_t { cross_entropy, mse };

// One node of the description: a registered kind ("linear", "relu", ...), the layer's name (the
// PyTorch state-dict name a user writes in precision.layers), its options (the keys of its JSON
// description other than "type").
struct LayerSpec {
    std::string type;
    std::string name;
    nlohmann::json options = nlohmann::json::object();
    std::vector<LayerSpec> children;  // residual: its branch, input to output
};

struct ModelDesc {
    SampleShape input;
    std::vector<LayerSpec> nodes;     // in order, input to output
    std::vector<LayerInfo> layers;    // the layers with parameters, in order
    LossKind loss = LossKind::cross_entropy;
    std::int64_t output_values = 0;  // per row: the classes, or the regression targets
    std::int64_t positions = 1;      // rows per sample: T for a sequence model
    // The layers come from a preset (model.kind mlp, cnn, resnet, gpt), not from model.layers: a
    // sentence about one names it by its name ("its layer pool1"), not by a place in a list the
    // user never wrote.
    bool preset = false;
    std::int64_t inputs() const { return input.numel(); }
    std::int64_t outputs() const { return output_values; }
    std::int64_t parameters() const;
    int layer_index(const std::string& name) const;  // among `layers`; -1 when there is no such layer
    // "fc1..fc3", or the names listed: for sentences that say which layers there are.
    std::string layer_names() const;
};

// Throws mantissa::Error naming the key (model.kind, model.hidden) when the spec cannot be built.
// sequence > 0: each sample is `sequence` token ids (input = sequence × 1 × 1) and `outputs` is the
// vocabulary (a text dataset).
ModelDesc describe_model(const ModelSpec& spec, SampleShape input, std::int64_t outputs, bool regression,
                         std::int64_t sequence = 0);
inline ModelDesc describe_model(const ModelSpec& spec, int features, int outputs, bool regression) {
    return describe_model(spec, SampleShape{features, 1, 1}, outputs, regression);
}

// The description's layers, built from the registry in order (no tensors yet).
std::vector<std::unique_ptr<Layer>> build_layers(const ModelDesc& desc);

}  // namespace mantissa
