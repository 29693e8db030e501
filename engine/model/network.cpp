// Network: the chain of layers, their declaration in the formats given, the passes and the loss.
#include "model/network.h"

#include <limits>
#include <optional>
#include <string>

#include "error.h"
#include "model/layers/activation_layer.h"
#include "model/layers/attention_layer.h"
#include "model/layers/layernorm_layer.h"
#include "model/layers/pool_layers.h"
#include "model/tensor_slot.h"

namespace mantissa {

namespace {

// Every layer depth-first (a block, then its layers), and those with parameters numbered in that
// order: the order of a PyTorch state dict.
void collect(Layer& layer, std::vector<Layer*>& all, std::vector<Layer*>& with_parameters) {
    all.push_back(&layer);
    if (layer.has_parameters()) {
        layer.set_index(static_cast<int>(with_parameters.size()));
        with_parameters.push_back(&layer);
    }
    for (Layer* child : layer.children()) collect(*child, all, with_parameters);
}

void set_layer_formats(const std::vector<Layer*>& layers, const std::vector<LayerFormats>& formats) {
    if (formats.size() != layers.size()) throw Error("Network: one LayerFormats per layer is needed.");
    for (std::size_t i = 0; i < layers.size(); ++i)
        if (layers[i]->takes_precision()) layers[i]->set_formats(formats[i]);
}

// The first sentence of a layer the backend cannot run, named; "" when it runs them all. An FP8
// layer also needs the recipe's options (current scaling, power-of-two scales) from the backend.
std::string first_unsupported(const Backend& backend, const std::vector<Layer*>& all, const Fp8Recipe& recipe) {
    for (const Layer* layer : all) {
        if (std::string why = layer->unsupported(backend); !why.empty()) return layer->name() + ": " + why;
        const bool options = recipe.scaling == Fp8Scaling::current || recipe.scaling == Fp8Scaling::rowwise ||
                             recipe.power_of_two;
        if (!options || !layer->takes_precision() || !layer->formats().any_fp8()) continue;
        if (std::string why = backend.unsupported(BackendOp::fp8_recipe, Format::fp8_e4m3); !why.empty())
            return layer->name() + ": " + why;
        if (recipe.scaling == Fp8Scaling::rowwise && (std::string(layer->kind()) != "linear" || layer->formats().gemms_differ()))
            return layer->name() + ": rowwise FP8 scaling is for linear layers whose three matmuls are all fp8-e4m3; "
                                   "give this layer another precision, or use delayed or current scaling.";
    }
    return {};
}

}  // namespace

Network::Network(Backend& backend, ModelDesc desc_in, std::int64_t batch_capacity, std::uint64_t seed,
                 const Fp8Recipe& fp8_recipe, const std::vector<LayerFormats>& formats, const OpFormats& ops)
    : m_backend(backend), m_desc(std::move(desc_in)), m_capacity(batch_capacity), m_recipe(fp8_recipe), m_ops(ops) {
    if (batch_capacity <= 0) throw Error("train.batch_size must be at least 1.");
    m_nodes = build_layers(m_desc);
    for (const auto& node : m_nodes) collect(*node, m_all, m_layers);
    for (Layer* layer : m_all) layer->link(m_all);
    set_layer_formats(m_layers, formats);
    for (Layer* layer : m_all) layer->set_op_formats(m_ops);
    if (std::string why = first_unsupported(backend, m_all, m_recipe); !why.empty()) throw Error(why);
    m_input = backend.allocate(tensor_desc("input", rows(m_capacity), m_desc.inputs(), Format::fp32,
                                           MemoryCategory::activations));
    declare();
    for (int i = 0; i < layer_count(); ++i) m_layers[static_cast<std::size_t>(i)]->initialise(m_backend, seed, i);
}

Network::~Network() = default;

const LayerFormats& Network::formats(int layer) const { return m_layers.at(static_cast<std::size_t>(layer))->formats(); }

void Network::set_formats(const std::vector<LayerFormats>& formats) { set_formats(formats, m_ops); }

void Network::set_op_formats(const OpFormats& ops) {
    std::vector<LayerFormats> current;
    for (const Layer* l : m_layers) current.push_back(l->formats());
    set_formats(current, ops);
}

void Network::set_formats(const std::vector<LayerFormats>& formats, const OpFormats& ops) {
    std::vector<LayerFormats> before;
    for (const Layer* l : m_layers) before.push_back(l->formats());
    const OpFormats ops_before = m_ops;
    const auto apply = [&](const std::vector<LayerFormats>& f, const OpFormats& o) {
        set_layer_formats(m_layers, f);
        m_ops = o;
        for (Layer* layer : m_all) layer->set_op_formats(m_ops);
    };
    apply(formats, ops);
    if (std::string why = first_unsupported(m_backend, m_all, m_recipe); !why.empty()) {
        apply(before, ops_before);  // refused whole: nothing was re-declared
        throw Error(why);
    }
    declare();
}

void Network::declare() {
    Format input_format = Format::fp32;
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        m_nodes[i]->declare(DeclareContext{m_backend, rows(m_capacity), input_format, i > 0, m_recipe});
        input_format = m_nodes[i]->output_format();
    }
    ensure_tensor(m_backend, m_loss_grad,
                  tensor_desc(m_nodes.back()->name() + ".dy", rows(m_capacity), m_desc.outputs(), input_format,
                              MemoryCategory::workspace),
                  false);
    m_parameters.clear();
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
        int weight = 0, other = 0;
        for (const Parameter& p : m_layers[l]->parameters()) {
            const std::string suffix = p.weight ? (weight++ ? ".weight" + std::to_string(weight) : ".weight")
                                                : (other++ ? ".bias" + std::to_string(other) : ".bias");
            m_parameters.push_back({p, static_cast<int>(l), m_layers[l]->name() + suffix});
        }
    }
}

const Tensor& Network::node_input(std::size_t node) const {
    return node == 0 ? *m_input : m_nodes[node - 1]->output();
}

void Network::forward(const float* x, std::int64_t batch, bool training) {
    if (batch < 0 || batch > m_capacity)
        throw Error("Network: a batch of " + std::to_string(batch) + " rows exceeds the capacity of " +
                    std::to_string(m_capacity) + ".");
    m_backend.upload(*m_input, x, rows(batch) * m_desc.inputs());
    forward_uploaded(batch, training);
}

void Network::forward_uploaded(std::int64_t batch, bool training) {
    if (batch < 0 || batch > m_capacity)
        throw Error("Network: a batch of " + std::to_string(batch) + " rows exceeds the capacity of " +
                    std::to_string(m_capacity) + ".");
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        if (Pool2dLayer* pool = pool_fused_after(i)) {  // the ReLU at i and the pool after it as one op
            pool->forward_through_relu(m_backend, node_input(i), rows(batch));
            ++i;
            continue;
        }
        m_nodes[i]->forward(m_backend, node_input(i), rows(batch), training);
    }
}

Pool2dLayer* Network::pool_fused_after(std::size_t node) const {
    if (node + 1 >= m_nodes.size()) return nullptr;
    const auto* relu = dynamic_cast<const ActivationLayer*>(m_nodes[node].get());
    auto* pool = dynamic_cast<Pool2dLayer*>(m_nodes[node + 1].get());
    return relu && pool && pool->fuses_with(*relu, m_backend) ? pool : nullptr;
}

LossResult Network::loss(const std::int32_t* labels, const float* targets, std::int64_t batch, float loss_scale,
                         bool with_grad) {
    Tensor* grad = with_grad ? m_loss_grad.get() : nullptr;
    if (m_desc.loss == LossKind::cross_entropy)
        return m_backend.softmax_cross_entropy(output(), labels, rows(batch), loss_scale, grad);
    return m_backend.mse(output(), targets, rows(batch), loss_scale, grad);
}

void Network::loss(StepPipeline& pipeline) { pipeline.loss(output(), m_loss_grad.get()); }

void Network::backward(std::int64_t batch, std::vector<RoundingStats>* weight_stats) {
    if (weight_stats) weight_stats->assign(m_layers.size(), RoundingStats{});
    const Tensor* dy = m_loss_grad.get();
    for (std::size_t i = m_nodes.size(); i-- > 0;) {
        if (Pool2dLayer* pool = i > 0 ? pool_fused_after(i - 1) : nullptr) {
            // The pool's backward and the ReLU's as one op, from the ReLU's input: the ReLU's
            // input gradient in the pool's input_grad(), read from there on.
            pool->backward_through_relu(m_backend, node_input(i - 1), *dy, rows(batch));
            dy = pool->input_grad();
            if (!dy) throw Error("Network: " + pool->name() + " wrote no input gradient.");
            --i;  // the ReLU's backward is done
            continue;
        }
        m_nodes[i]->backward(m_backend, node_input(i), *dy, rows(batch), weight_stats);
        dy = m_nodes[i]->input_grad();
        if (!dy && i > 0) throw Error("Network: " + m_nodes[i]->name() + " wrote no input gradient.");
    }
}

void Network::set_operand_observer(OperandObserver* observer) {
    for (Layer* layer : m_all) layer->set_operand_observer(observer);
}

void Network::end_step() {
    for (Layer* layer : m_all) layer->end_step(m_backend);
}

void Network::set_fp8_scaling(Fp8Scaling scaling) {
    Fp8Recipe changed = m_recipe;
    changed.scaling = scaling;
    if (std::string why = first_unsupported(m_backend, m_all, changed); !why.empty()) throw Error(why);
    m_recipe.scaling = scaling;
    for (Layer* layer : m_all) layer->set_fp8_scaling(scaling);
}

const Parameter& Network::parameter(int layer, bool weight) const {
    for (const NetworkParameter& p : m_parameters)
        if (p.layer == layer && p.tensors.weight == weight) return p.tensors;
    throw Error("Network: layer " + std::to_string(layer) + " has no " + (weight ? "weight." : "bias."));
}

std::vector<StateEntry> Network::state() const {
    std::vector<StateEntry> entries;
    for (Layer* layer : m_all)
        for (StateEntry& e : layer->state()) entries.push_back(std::move(e));
    return entries;
}

Tensor& Network::weight(int layer) { return *parameter(layer, true).value; }
Tensor& Network::bias(int layer) { return *parameter(layer, false).value; }
Tensor& Network::grad_weight(int layer) { return *parameter(layer, true).grad; }
Tensor& Network::grad_bias(int layer) { return *parameter(layer, false).grad; }
const Tensor& Network::output() const { return m_nodes.back()->output(); }
const Fp8State* Network::fp8_state(int layer) const { return m_layers.at(static_cast<std::size_t>(layer))->fp8_state(); }
Fp8State* Network::fp8_state(int layer) { return m_layers.at(static_cast<std::size_t>(layer))->fp8_state(); }

void Network::op_stats(std::int64_t step, std::vector<OpStepRecord>& out) const {
    for (const Layer* layer : m_all) {
        if (const auto* attn = dynamic_cast<const AttentionLayer*>(layer))  // +inf once one is not finite
            out.push_back({step, attn->name(), "logit_amax",
                           attn->logit_nonfinite() > 0 ? std::numeric_limits<double>::infinity()
                                                       : static_cast<double>(attn->logit_amax())});
        else if (const auto* ln = dynamic_cast<const LayerNormLayer*>(layer))
            out.push_back({step, ln->name(), "min_variance", ln->min_variance()});
    }
}

std::vector<float> Network::read(const Tensor& t) const {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    m_backend.download(t, v.data(), t.numel());
    return v;
}

void Network::write(Tensor& t, const std::vector<float>& values) {
    if (static_cast<std::int64_t>(values.size()) != t.numel())
        throw Error("Network: " + std::to_string(values.size()) + " values for tensor " + t.desc().name + " of " +
                    std::to_string(t.numel()) + ".");
    m_backend.upload(t, values.data(), t.numel());
}

namespace {

// A description's layers given their formats as the Network's constructor gives them, without a
// backend or tensors.
struct FormattedLayers {
    std::vector<std::unique_ptr<Layer>> nodes;
    std::vector<Layer*> all, layers;  // every layer; those with parameters
};

FormattedLayers formatted_layers(const ModelDesc& desc, const std::vector<LayerFormats>& formats, const OpFormats& ops) {
    FormattedLayers f;
    f.nodes = build_layers(desc);
    for (const auto& n : f.nodes) collect(*n, f.all, f.layers);
    set_layer_formats(f.layers, formats);
    for (Layer* layer : f.all) layer->set_op_formats(ops);
    return f;
}

}  // namespace

std::vector<LayerFormats> reported_formats(const ModelDesc& desc, const std::vector<LayerFormats>& formats,
                                           const OpFormats& ops) {
    const FormattedLayers f = formatted_layers(desc, formats, ops);
    std::vector<LayerFormats> reported;
    for (const Layer* layer : f.layers) reported.push_back(layer->formats());
    return reported;
}

double network_values(const ModelDesc& desc, const std::vector<LayerFormats>& formats, std::int64_t batch,
                      double state_per_parameter, const OpFormats& ops, double state_per_narrow_parameter) {
    const FormattedLayers f = formatted_layers(desc, formats, ops);
    const auto& nodes = f.nodes;
    const auto& layers = f.layers;
    const std::int64_t rows = batch * desc.positions;
    const double B = static_cast<double>(rows);
    double values = B * static_cast<double>(desc.inputs());  // the input batch
    Format input_format = Format::fp32;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        values += nodes[i]->declared_values(rows, input_format, i > 0);
        values += state_per_parameter * static_cast<double>(nodes[i]->parameter_count());  // a block's: its layers' 
        input_format = nodes[i]->planned_output_format(input_format);
    }
    for (const Layer* layer : layers)  // Kahan's compensation: one value per weight stored narrower than FP32
        if (layer->formats().weight_store != Format::fp32)
            values += state_per_narrow_parameter * static_cast<double>(layer->parameter_count());
    return values + B * static_cast<double>(desc.outputs());  // the loss's gradient
}

}  // namespace mantissa
