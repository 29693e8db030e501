// Network: tensor declaration from LayerFormats, and the forward/backward orchestration.
#include "model/network.h"

#include <optional>

#include "error.h"
#include "model/init.h"

namespace mantissa {

struct Network::Layer {
    LayerShape shape;
    LayerFormats formats;
    std::unique_ptr<Tensor> weight, weight_compute, bias, bias_compute, grad_weight, grad_bias;
    std::unique_ptr<Tensor> saved_input, z, a, dz, dx;
    std::unique_ptr<Fp8State> fp8;

    LinearTensors tensors() {
        LinearTensors t;
        t.compute = formats.compute;
        t.weight = weight.get();
        t.weight_compute = weight_compute.get();
        t.bias = bias.get();
        t.bias_compute = bias_compute.get();
        t.grad_weight = grad_weight.get();
        t.grad_bias = grad_bias.get();
        t.saved_input = saved_input.get();
        t.fp8 = fp8.get();
        return t;
    }
};

namespace {

// Makes `slot` hold a tensor as described (or none). keep_values: carry the old values over,
// rounded to the new format.
void ensure(Backend& backend, std::unique_ptr<Tensor>& slot, const std::optional<TensorDesc>& want,
            bool keep_values) {
    if (!want) {
        slot.reset();
        return;
    }
    if (slot && slot->format() == want->format && slot->desc().category == want->category &&
        slot->rows() == want->rows && slot->cols() == want->cols)
        return;
    auto fresh = backend.allocate(*want);
    if (keep_values && slot) backend.cast(*slot, *fresh);
    slot = std::move(fresh);
}

TensorDesc make_desc(std::string name, std::int64_t rows, std::int64_t cols, Format f, MemoryCategory c) {
    return TensorDesc{std::move(name), rows, cols, f, c};
}

}  // namespace

Network::Network(Backend& backend, ModelDesc desc_in, std::int64_t batch_capacity,
                 std::uint64_t seed, const Fp8Recipe& fp8_recipe,
                 const std::vector<LayerFormats>& formats)
    : m_backend(backend), m_desc(std::move(desc_in)), m_capacity(batch_capacity), m_recipe(fp8_recipe) {
    if (m_desc.layers.empty()) throw Error("The model has no layers.");
    if (batch_capacity <= 0) throw Error("train.batch_size must be at least 1.");
    if (formats.size() != m_desc.layers.size())
        throw Error("Network: one LayerFormats per layer is needed.");
    m_input = backend.allocate(make_desc("input", m_capacity, m_desc.inputs(), Format::fp32,
                                    MemoryCategory::activations));
    for (std::size_t i = 0; i < m_desc.layers.size(); ++i) {
        auto l = std::make_unique<Layer>();
        l->shape = m_desc.layers[i];
        l->formats = formats[i];
        m_layers.push_back(std::move(l));
    }
    for (int i = 0; i < layer_count(); ++i) declare(i);
    std::vector<float> w, b;
    for (int i = 0; i < layer_count(); ++i) {
        const LayerShape& s = m_layers[static_cast<std::size_t>(i)]->shape;
        init_linear(seed, i, s.in, s.out, w, b);
        write(weight(i), w);
        write(bias(i), b);
    }
}

Network::~Network() = default;

const LayerFormats& Network::formats(int layer) const {
    return m_layers.at(static_cast<std::size_t>(layer))->formats;
}

void Network::set_formats(const std::vector<LayerFormats>& formats) {
    if (formats.size() != m_layers.size()) throw Error("Network: one LayerFormats per layer is needed.");
    for (std::size_t i = 0; i < m_layers.size(); ++i) m_layers[i]->formats = formats[i];
    for (int i = 0; i < layer_count(); ++i) declare(i);
}

void Network::declare(int index) {
    Layer& l = *m_layers[static_cast<std::size_t>(index)];
    const LayerFormats& f = l.formats;
    const std::string& n = l.shape.name;
    const std::int64_t in = l.shape.in, out = l.shape.out, B = m_capacity;
    const bool last = index + 1 == layer_count();
    const Format input_format =
        index == 0 ? Format::fp32 : m_layers[static_cast<std::size_t>(index) - 1]->formats.output;
    const Format operand = f.compute;  // fp8_e4m3 for fp8 layers
    using MC = MemoryCategory;
    const MC store_category = f.master() ? MC::master_weights : MC::parameters;

    ensure(m_backend, l.weight, make_desc(n + ".weight", out, in, f.weight_store, store_category), true);
    ensure(m_backend, l.bias, make_desc(n + ".bias", 1, out, f.weight_store, store_category), true);
    ensure(m_backend, l.weight_compute,
           f.weight_copy ? std::optional(make_desc(n + ".weight_compute", out, in, operand, MC::parameters))
                         : std::nullopt,
           false);
    ensure(m_backend, l.bias_compute,
           f.bias_copy ? std::optional(make_desc(n + ".bias_compute", 1, out, f.output, MC::parameters))
                       : std::nullopt,
           false);
    ensure(m_backend, l.grad_weight, make_desc(n + ".grad_weight", out, in, f.output, MC::gradients), false);
    ensure(m_backend, l.grad_bias, make_desc(n + ".grad_bias", 1, out, f.output, MC::gradients), false);
    const bool needs_saved = f.fp8() || ((operand == Format::fp16 || operand == Format::bf16) &&
                                         !format_contains(operand, input_format));
    ensure(m_backend, l.saved_input,
           needs_saved ? std::optional(make_desc(n + ".saved_input", B, in, operand, MC::activations))
                       : std::nullopt,
           false);
    ensure(m_backend, l.z, make_desc(n + ".z", B, out, f.output, MC::activations), false);
    ensure(m_backend, l.a,
           last ? std::nullopt : std::optional(make_desc(n + ".a", B, out, f.output, MC::activations)),
           false);
    ensure(m_backend, l.dz, make_desc(n + ".dz", B, out, f.output, MC::workspace), false);
    ensure(m_backend, l.dx,
           index == 0 ? std::nullopt : std::optional(make_desc(n + ".dx", B, in, f.output, MC::workspace)),
           false);
    if (f.fp8() && !l.fp8) l.fp8 = m_backend.create_fp8_state(m_recipe);
    if (!f.fp8()) l.fp8.reset();
}

const Tensor& Network::layer_input(int layer) const {
    return layer == 0 ? *m_input : *m_layers[static_cast<std::size_t>(layer) - 1]->a;
}

void Network::forward(const float* x, std::int64_t batch, bool training) {
    if (batch < 0 || batch > m_capacity)
        throw Error("Network: a batch of " + std::to_string(batch) + " rows exceeds the capacity of " +
                    std::to_string(m_capacity) + ".");
    m_backend.upload(*m_input, x, batch * m_desc.inputs());
    forward_uploaded(batch, training);
}

void Network::forward_uploaded(std::int64_t batch, bool training) {
    if (batch < 0 || batch > m_capacity)
        throw Error("Network: a batch of " + std::to_string(batch) + " rows exceeds the capacity of " +
                    std::to_string(m_capacity) + ".");
    for (int i = 0; i < layer_count(); ++i) {
        Layer& l = *m_layers[static_cast<std::size_t>(i)];
        LinearTensors t = l.tensors();
        m_backend.linear_forward(t, layer_input(i), *l.z, batch, training);
        if (l.a) m_backend.activation_forward(m_desc.activation, *l.z, *l.a, batch);
    }
}

LossResult Network::loss(const std::int32_t* labels, const float* targets, std::int64_t batch,
                         float loss_scale, bool with_grad) {
    Layer& last = *m_layers.back();
    Tensor* grad = with_grad ? last.dz.get() : nullptr;
    if (m_desc.loss == LossKind::cross_entropy)
        return m_backend.softmax_cross_entropy(*last.z, labels, batch, loss_scale, grad);
    return m_backend.mse(*last.z, targets, batch, loss_scale, grad);
}

void Network::loss(StepPipeline& pipeline) {
    Layer& last = *m_layers.back();
    pipeline.loss(*last.z, last.dz.get());
}

void Network::backward(std::int64_t batch, std::vector<RoundingStats>* weight_stats) {
    if (weight_stats) weight_stats->assign(m_layers.size(), RoundingStats{});
    for (int i = layer_count() - 1; i >= 0; --i) {
        Layer& l = *m_layers[static_cast<std::size_t>(i)];
        if (l.a) {  // dz = dx of the next layer through the activation
            const Tensor& da = *m_layers[static_cast<std::size_t>(i) + 1]->dx;
            m_backend.activation_backward(m_desc.activation, *l.z, *l.a, da, *l.dz, batch);
        }
        LinearTensors t = l.tensors();
        m_backend.linear_backward(t, layer_input(i), *l.dz, l.dx.get(), batch,
                                  weight_stats ? &(*weight_stats)[static_cast<std::size_t>(i)] : nullptr);
    }
}

void Network::end_step() {
    for (auto& l : m_layers)
        if (l->fp8) m_backend.update_fp8_scales(*l->fp8);
}

void Network::set_fp8_scaling(Fp8Scaling scaling) {
    m_recipe.scaling = scaling;
    for (auto& l : m_layers)
        if (l->fp8) l->fp8->set_scaling(scaling);
}

Tensor& Network::weight(int layer) { return *m_layers.at(static_cast<std::size_t>(layer))->weight; }
Tensor& Network::bias(int layer) { return *m_layers.at(static_cast<std::size_t>(layer))->bias; }
Tensor& Network::grad_weight(int layer) {
    return *m_layers.at(static_cast<std::size_t>(layer))->grad_weight;
}
Tensor& Network::grad_bias(int layer) { return *m_layers.at(static_cast<std::size_t>(layer))->grad_bias; }
const Tensor& Network::output() const { return *m_layers.back()->z; }
const Fp8State* Network::fp8_state(int layer) const {
    return m_layers.at(static_cast<std::size_t>(layer))->fp8.get();
}

std::vector<float> Network::read(const Tensor& t) const {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    m_backend.download(t, v.data(), t.numel());
    return v;
}

void Network::write(Tensor& t, const std::vector<float>& values) {
    if (static_cast<std::int64_t>(values.size()) != t.numel())
        throw Error("Network: " + std::to_string(values.size()) + " values for tensor " +
                    t.desc().name + " of " + std::to_string(t.numel()) + ".");
    m_backend.upload(t, values.data(), t.numel());
}

}  // namespace mantissa
