// The network a run trains: a multi-layer perceptron of linear layers fc1..fcN (inputs -> hidden
// sizes -> outputs) with one activation between layers, and the loss that goes with the task
// (softmax cross-entropy for classification, mean squared error for regression). A plain
// description: the tensors live in Network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/experiment.h"

namespace mantissa {

enum class LossKind : std::uint8_t { cross_entropy, mse };

struct LayerShape {
    std::string name;   // "fc1"
    int in = 0;
    int out = 0;
    std::int64_t parameters() const { return static_cast<std::int64_t>(in) * out + out; }
};

struct ModelDesc {
    std::vector<LayerShape> layers;
    Activation activation = Activation::relu;
    LossKind loss = LossKind::cross_entropy;
    int inputs() const { return layers.empty() ? 0 : layers.front().in; }
    int outputs() const { return layers.empty() ? 0 : layers.back().out; }
    std::int64_t parameters() const;
    int layer_index(const std::string& name) const;  // -1 when there is no such layer
};

// fc1: features -> hidden[0], ..., fcN: hidden[N-2] -> outputs. Throws mantissa::Error naming the
// key (model.kind, model.hidden) when the spec cannot be built.
ModelDesc describe_model(const ModelSpec& spec, int features, int outputs, bool regression);

}  // namespace mantissa
