// describe_model: the MLP's layer shapes from the experiment's model section.
#include "model/model_desc.h"

#include "error.h"

namespace mantissa {

std::int64_t ModelDesc::parameters() const {
    std::int64_t n = 0;
    for (const auto& l : layers) n += l.parameters();
    return n;
}

int ModelDesc::layer_index(const std::string& name) const {
    for (std::size_t i = 0; i < layers.size(); ++i)
        if (layers[i].name == name) return static_cast<int>(i);
    return -1;
}

ModelDesc describe_model(const ModelSpec& spec, int features, int outputs, bool regression) {
    if (spec.kind != "mlp")
        throw Error("model.kind: \"" + spec.kind + "\" is not a known model; use \"mlp\".");
    if (features <= 0 || outputs <= 0)
        throw Error("The dataset has no features or no outputs to train a model on.");
    ModelDesc d;
    d.activation = spec.activation;
    d.loss = regression ? LossKind::mse : LossKind::cross_entropy;
    int in = features;
    for (std::size_t i = 0; i <= spec.hidden.size(); ++i) {
        const int out = i < spec.hidden.size() ? spec.hidden[i] : outputs;
        if (out <= 0)
            throw Error("model.hidden[" + std::to_string(i) + "]: a layer needs at least one unit (got " +
                        std::to_string(out) + ").");
        d.layers.push_back({"fc" + std::to_string(i + 1), in, out});
        in = out;
    }
    return d;
}

}  // namespace mantissa
