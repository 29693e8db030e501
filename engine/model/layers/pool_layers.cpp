// Pool2dLayer and FlattenLayer: the backend's pooling ops, and a reshape that moves no data.
#include "model/layers/pool_layers.h"

#include <optional>

#include "error.h"
#include "model/tensor_slot.h"

namespace mantissa {

namespace {

SampleShape pooled(SampleShape input, Pool2dLayer::Mode mode, const Pool2dGeometry& g) {
    if (mode == Pool2dLayer::Mode::global_average) return {input.channels, 1, 1};
    return {input.channels, g.out_h(), g.out_w()};
}

}  // namespace

Pool2dLayer::Pool2dLayer(std::string name, SampleShape input, Mode mode, const Pool2dGeometry& geometry)
    : Layer(std::move(name), input, pooled(input, mode, geometry)), m_mode(mode), m_geometry(geometry) {}

const char* Pool2dLayer::kind() const {
    switch (m_mode) {
        case Mode::max: return "maxpool2d";
        case Mode::average: return "avgpool2d";
        case Mode::global_average: return "global_avgpool";
    }
    return "?";
}

std::string Pool2dLayer::unsupported(const Backend& backend) const {
    const BackendOp op = m_mode == Mode::max       ? BackendOp::maxpool2d
                         : m_mode == Mode::average ? BackendOp::avgpool2d
                                                   : BackendOp::global_avgpool;
    return backend.unsupported(op, Format::fp32);
}

void Pool2dLayer::declare(const DeclareContext& c) {
    m_format = c.input_format;
    using MC = MemoryCategory;
    ensure_tensor(c.backend, m_y, tensor_desc(name() + ".y", c.capacity, output_shape().numel(), m_format, MC::activations),
                  false);
    ensure_tensor(c.backend, m_dx,
                  c.input_grad ? std::optional(tensor_desc(name() + ".dx", c.capacity, input_shape().numel(), m_format,
                                                           MC::workspace))
                               : std::nullopt,
                  false);
}

double Pool2dLayer::declared_values(std::int64_t capacity, Format, bool input_grad) const {
    const double B = static_cast<double>(capacity);
    return B * static_cast<double>(output_shape().numel()) +
           (input_grad ? B * static_cast<double>(input_shape().numel()) : 0);
}

void Pool2dLayer::forward(Backend& backend, const Tensor& x, std::int64_t batch, bool) {
    const SampleShape& in = input_shape();
    switch (m_mode) {
        case Mode::max: backend.maxpool2d_forward(m_geometry, x, *m_y, batch); break;
        case Mode::average: backend.avgpool2d_forward(m_geometry, x, *m_y, batch); break;
        case Mode::global_average:
            backend.global_avgpool_forward(in.channels, in.height * in.width, x, *m_y, batch);
            break;
    }
}

void Pool2dLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                           std::vector<RoundingStats>*) {
    if (!m_dx) return;  // a first layer: nothing before it needs a gradient
    const SampleShape& in = input_shape();
    switch (m_mode) {
        case Mode::max: backend.maxpool2d_backward(m_geometry, x, *m_y, dy, *m_dx, batch); break;
        case Mode::average: backend.avgpool2d_backward(m_geometry, dy, *m_dx, batch); break;
        case Mode::global_average:
            backend.global_avgpool_backward(in.channels, in.height * in.width, dy, *m_dx, batch);
            break;
    }
}

// The fused ops are the two layers' bits when the ReLU adds no rounding of its own: its output,
// and so its gradient, in its input's format, which is this layer's input format (an activation
// runs in its input's format, so it always is; asked all the same, as the formats can change
// between steps). A ReLU that is the first layer has no input gradient: the fused backward writes
// one all the same, which nothing reads.
bool Pool2dLayer::fuses_with(const ActivationLayer& relu, const Backend& backend) const {
    return m_mode == Mode::max && relu.activation() == Activation::relu && relu.output_format() == m_format &&
           backend.fuses_maxpool_relu();
}

void Pool2dLayer::forward_through_relu(Backend& backend, const Tensor& z, std::int64_t batch) {
    backend.maxpool2d_relu_forward(m_geometry, z, *m_y, batch);
}

void Pool2dLayer::backward_through_relu(Backend& backend, const Tensor& z, const Tensor& dy, std::int64_t batch) {
    if (m_dx) backend.maxpool2d_relu_backward(m_geometry, z, *m_y, dy, *m_dx, batch);
}

FlattenLayer::FlattenLayer(std::string name, SampleShape input)
    : Layer(std::move(name), input, SampleShape{input.numel(), 1, 1}) {}

const Tensor& FlattenLayer::output() const {
    if (!m_x) throw Error(name() + ": its output is read before its first forward pass.");
    return *m_x;
}

void FlattenLayer::forward(Backend&, const Tensor& x, std::int64_t, bool) { m_x = &x; }

void FlattenLayer::backward(Backend&, const Tensor&, const Tensor& dy, std::int64_t, std::vector<RoundingStats>*) {
    m_dy = &dy;
}

}  // namespace mantissa
