// The layer kinds a model description may use, registered once (layer_registry.cpp): each makes
// its Layer from a LayerSpec and the shape of its input, checking its options first, so a
// description that does not fit is one sentence naming the layer and the key before any tensor
// is allocated.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/layer.h"
#include "model/model_desc.h"

namespace mantissa {

// Throws mantissa::Error ("model.layers[3] (conv2): kernel 7 is larger than its 5×5 input.") for
// an unknown type, an unknown or out-of-range key, or a shape that does not fit. `where` names the
// layer in messages ("model.layers[3]"); "" names a preset's layer by its name ("its layer pool1").
std::unique_ptr<Layer> build_layer(const LayerSpec& spec, const SampleShape& input, const std::string& where);

// The registered types, in the order the docs list them.
std::vector<std::string> layer_types();

}  // namespace mantissa
