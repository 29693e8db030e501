// The registry: one maker per layer kind. A kind is added here, once; the model description, the
// docs' list (docs/experiment.md, "Layers") and the tests follow from this table.
#include "model/layer_registry.h"

#include <functional>
#include <utility>

#include "error.h"
#include "model/layer_options.h"
#include "model/layers/activation_layer.h"
#include "model/layers/attention_layer.h"
#include "model/layers/embedding_layers.h"
#include "model/layers/layernorm_layer.h"
#include "model/layers/batchnorm2d_layer.h"
#include "model/layers/conv2d_layer.h"
#include "model/layers/linear_layer.h"
#include "model/layers/pool_layers.h"
#include "model/layers/residual_layer.h"
#include "model/layers/tied_head_layer.h"

namespace mantissa {

namespace {

// The widest layer a description may ask for: wider is a typo (and would not fit in memory).
constexpr std::int64_t max_width = 1 << 20;

using Maker = std::function<std::unique_ptr<Layer>(const LayerSpec&, const SampleShape&, LayerOptions&)>;

std::unique_ptr<Layer> make_linear(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    const std::int64_t out = o.integer("out", 1, max_width);
    const double init_std = o.number("init_std", 0, 10, 0);
    return std::make_unique<LinearLayer>(spec.name, input, out, init_std);
}

// The layers of a sequence model (a text dataset: every row one position, T rows a sample).
void require_flat(const SampleShape& input, const LayerOptions& o) {
    if (!input.flat())
        throw Error(o.where() + ": its input is " + input.text() + "; it takes one row of features per position.");
}

std::unique_ptr<Layer> make_layernorm(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    require_flat(input, o);
    const double eps = o.number("eps", 1e-12, 1, 1e-5);
    return std::make_unique<LayerNormLayer>(spec.name, input, eps);
}

std::unique_ptr<Layer> make_embedding(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    const std::int64_t num = o.integer("num", 1, max_width);
    const std::int64_t dim = o.integer("dim", 1, max_width);
    const double init_std = o.number("init_std", 0, 10, 1.0);  // nn.Embedding's N(0, 1)
    if (input.numel() != 1)
        throw Error(o.where() + ": an embedding reads one token id per position; its input has " +
                    std::to_string(input.numel()) + " values (it must come first, on a text dataset).");
    return std::make_unique<TokenEmbeddingLayer>(spec.name, num, dim, init_std);
}

std::unique_ptr<Layer> make_position_embedding(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    require_flat(input, o);
    const std::int64_t context = o.integer("context", 1, 1 << 16);
    const std::int64_t positions = o.integer("positions", 1, 1 << 16);
    const double init_std = o.number("init_std", 0, 10, 1.0);
    if (positions > context)
        throw Error(o.where() + ": samples of " + std::to_string(positions) + " positions are longer than the " +
                    std::to_string(context) + " it has embeddings for; raise model.context or lower dataset.context.");
    return std::make_unique<PositionEmbeddingLayer>(spec.name, input, context, positions, init_std);
}

std::unique_ptr<Layer> make_tied_head(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    require_flat(input, o);
    const std::int64_t out = o.integer("out", 1, max_width);
    return std::make_unique<TiedHeadLayer>(spec.name, input, out);
}

std::unique_ptr<Layer> make_attention(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    require_flat(input, o);
    const std::int64_t heads = o.integer("heads", 1, 256);
    const std::int64_t positions = o.integer("positions", 1, 1 << 16);
    const double init_std = o.number("init_std", 0, 10, 0);
    const double proj_init_std = o.number("proj_init_std", 0, 10, init_std);
    if (input.numel() % heads != 0)
        throw Error(o.where() + ": \"heads\" " + std::to_string(heads) + " does not divide its " +
                    std::to_string(input.numel()) + " features into equal heads.");
    return std::make_unique<AttentionLayer>(spec.name, input, heads, positions, init_std, proj_init_std);
}

Maker make_activation(Activation a) {
    return [a](const LayerSpec& spec, const SampleShape& input, LayerOptions&) -> std::unique_ptr<Layer> {
        return std::make_unique<ActivationLayer>(spec.name, input, a);
    };
}

std::string shape_text(const SampleShape& s) { return s.text() + (s.flat() ? " values" : ""); }

// kernel, stride and padding of a window over `input`, checked to fit: the kernel within the
// padded input, the padding at most half the kernel (as PyTorch requires of pools).
void window(const SampleShape& input, LayerOptions& o, std::int64_t& kernel, std::int64_t& stride,
            std::int64_t& padding, std::int64_t default_kernel, bool stride_is_kernel) {
    kernel = default_kernel > 0 ? o.integer("kernel", 1, 64, default_kernel) : o.integer("kernel", 1, 64);
    stride = o.integer("stride", 1, 64, stride_is_kernel ? kernel : 1);
    padding = o.integer("padding", 0, 32, 0);
    const std::int64_t h = input.height + 2 * padding, w = input.width + 2 * padding;
    if (kernel > h || kernel > w)
        throw Error(o.where() + ": \"kernel\" " + std::to_string(kernel) + " is larger than its " +
                    (padding ? "padded " : "") + std::to_string(h) + "\u00d7" + std::to_string(w) + " input (" +
                    shape_text(input) + ").");
}

std::unique_ptr<Layer> make_conv2d(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    Conv2dGeometry g;
    g.in_channels = input.channels;
    g.in_h = input.height;
    g.in_w = input.width;
    g.out_channels = o.integer("out_channels", 1, 65536);
    window(input, o, g.kernel, g.stride, g.padding, 0, false);
    const bool bias = o.flag("bias", true);
    return std::make_unique<Conv2dLayer>(spec.name, input, g, bias);
}

std::unique_ptr<Layer> make_batchnorm2d(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    const double momentum = o.number("momentum", 0, 1, 0.1);
    const double eps = o.number("eps", 1e-12, 1, 1e-5);
    return std::make_unique<BatchNorm2dLayer>(spec.name, input, momentum, eps);
}

Maker make_pool(Pool2dLayer::Mode mode) {
    return [mode](const LayerSpec& spec, const SampleShape& input, LayerOptions& o) -> std::unique_ptr<Layer> {
        Pool2dGeometry g;
        g.channels = input.channels;
        g.in_h = input.height;
        g.in_w = input.width;
        if (mode != Pool2dLayer::Mode::global_average) {
            window(input, o, g.kernel, g.stride, g.padding, 0, true);
            if (2 * g.padding > g.kernel)
                throw Error(o.where() + ": \"padding\" " + std::to_string(g.padding) +
                            " is more than half the kernel (" + std::to_string(g.kernel) + ").");
        }
        return std::make_unique<Pool2dLayer>(spec.name, input, mode, g);
    };
}

std::unique_ptr<Layer> make_flatten(const LayerSpec& spec, const SampleShape& input, LayerOptions&) {
    return std::make_unique<FlattenLayer>(spec.name, input);
}

// The 1×1 projection that takes `input` to `output`: a conv2d with the stride that gives
// output's size, without bias, then a batchnorm2d (torchvision's downsample.0 and .1); for flat
// samples a linear layer.
std::vector<std::unique_ptr<Layer>> projection(const std::string& name, const SampleShape& input,
                                               const SampleShape& output, const std::string& where) {
    std::vector<std::unique_ptr<Layer>> p;
    if (input.flat() && output.flat()) {
        p.push_back(std::make_unique<LinearLayer>(name + ".downsample.0", input, output.channels));
        return p;
    }
    std::int64_t stride = 1;
    while (stride <= 64 && ((input.height - 1) / stride + 1 != output.height || (input.width - 1) / stride + 1 != output.width))
        ++stride;
    if (stride > 64 || output.flat())
        throw Error(where + ": its layers take " + shape_text(input) + " to " + shape_text(output) +
                    ", which no 1\u00d71 projection of the shortcut can match; keep the positions or change them by a "
                    "stride.");
    Conv2dGeometry g;
    g.in_channels = input.channels;
    g.in_h = input.height;
    g.in_w = input.width;
    g.out_channels = output.channels;
    g.kernel = 1;
    g.stride = stride;
    p.push_back(std::make_unique<Conv2dLayer>(name + ".downsample.0", input, g, false));
    p.push_back(std::make_unique<BatchNorm2dLayer>(name + ".downsample.1", output, 0.1, 1e-5));
    return p;
}

std::unique_ptr<Layer> make_residual(const LayerSpec& spec, const SampleShape& input, LayerOptions& o) {
    if (spec.children.empty()) throw Error(o.where() + ": \"layers\" must list at least one layer.");
    std::vector<std::unique_ptr<Layer>> branch;
    SampleShape shape = input;
    for (std::size_t i = 0; i < spec.children.size(); ++i) {
        const std::string child = o.path().empty() ? "" : o.path() + ".layers[" + std::to_string(i) + "]";
        branch.push_back(build_layer(spec.children[i], shape, child));
        shape = branch.back()->output_shape();
    }
    auto shortcut = shape == input ? std::vector<std::unique_ptr<Layer>>{} : projection(spec.name, input, shape, o.where());
    return std::make_unique<ResidualLayer>(spec.name, input, std::move(branch), std::move(shortcut));
}

const std::vector<std::pair<std::string, Maker>>& registry() {
    static const std::vector<std::pair<std::string, Maker>> kinds = {
        {"linear", make_linear},
        {"conv2d", make_conv2d},
        {"batchnorm2d", make_batchnorm2d},
        {"relu", make_activation(Activation::relu)},
        {"gelu", make_activation(Activation::gelu)},
        {"tanh", make_activation(Activation::tanh)},
        {"maxpool2d", make_pool(Pool2dLayer::Mode::max)},
        {"avgpool2d", make_pool(Pool2dLayer::Mode::average)},
        {"global_avgpool", make_pool(Pool2dLayer::Mode::global_average)},
        {"flatten", make_flatten},
        {"residual", make_residual},
        {"embedding", make_embedding},
        {"position_embedding", make_position_embedding},
        {"layernorm", make_layernorm},
        {"causal_self_attention", make_attention},
        {"tied_head", make_tied_head},
    };
    return kinds;
}

}  // namespace

std::unique_ptr<Layer> build_layer(const LayerSpec& spec, const SampleShape& input, const std::string& where) {
    const std::string at = where.empty() ? "its layer " + spec.name : where + (spec.name.empty() ? "" : " (" + spec.name + ")");
    if (input.numel() <= 0) throw Error(at + ": its input is empty.");
    for (const auto& [type, make] : registry()) {
        if (type != spec.type) continue;
        LayerOptions options(spec, at, where);
        auto layer = make(spec, input, options);
        options.finish();
        return layer;
    }
    std::string known;
    for (const auto& [type, make] : registry()) known += (known.empty() ? "" : ", ") + type;
    throw Error(at + ": \"" + spec.type + "\" is not a layer type; the types are " + known + ".");
}

std::vector<std::string> layer_types() {
    std::vector<std::string> types;
    for (const auto& [type, make] : registry()) types.push_back(type);
    return types;
}

}  // namespace mantissa
