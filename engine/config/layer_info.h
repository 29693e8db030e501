// A layer with parameters as a run describes it: what the Layers table lists, the store records
// (the `layers` table) and `mantissa-cli show` prints. Made by the model (model/model_desc.h);
// kept here, beside the telemetry records, so the store reads and writes it without the model.
#pragma once

#include <cstdint>
#include <string>

#include "config/sample_shape.h"

namespace mantissa {

struct LayerInfo {
    std::string name;   // "fc1", "layer1.0.conv1": PyTorch's state-dict name
    std::string kind;   // "linear", "conv2d", "batchnorm2d"
    SampleShape in_shape, out_shape;
    std::int64_t in_features = 0;   // in_shape.numel(); 0 in a plan: set by the dataset, known at Start
    std::int64_t out_features = 0;  // out_shape.numel(); as for in_features
    std::int64_t parameters = 0;    // weights and biases (running statistics are buffers, not counted)
    bool takes_precision = false;   // precision.layers may name it (linear, conv2d)
};

}  // namespace mantissa
