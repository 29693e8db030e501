// residual: y = branch(x) + shortcut(x), the block of a ResNet. The branch is a chain of layers;
// the shortcut is x itself when the branch keeps the shape, else a projection (a 1×1 conv2d with
// the stride that matches, without bias, then a batchnorm2d, as torchvision's `downsample`; a
// linear layer for flat samples). The sum promotes to the wider format of its two summands (fp16 +
// bf16: fp32), as PyTorch's type promotion does.
//
// Backward: the gradient of y reaches each summand in that summand's format (cast when narrower),
// runs back through the branch and the projection, and the two gradients of x are added and
// rounded to x's format.
//
// Tensors: y (B, out) in the sum's format; dbranch / dshortcut (B, out), the casts of dy when a
// summand is narrower than the sum; dx (B, in) the gradient of the input.
#pragma once

#include <memory>
#include <vector>

#include "model/layer.h"

namespace mantissa {

class ResidualLayer final : public Layer {
public:
    // branch: at least one layer, input to output; projection: empty for the identity.
    ResidualLayer(std::string name, SampleShape input, std::vector<std::unique_ptr<Layer>> branch,
                  std::vector<std::unique_ptr<Layer>> projection);
    const char* kind() const override { return "residual"; }
    std::vector<Layer*> children() override;
    std::int64_t parameter_count() const override;
    Format planned_output_format(Format input_format) const override;
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::add, Format::fp32);  // its layers are asked one by one
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format output_format() const override { return m_format; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;

private:
    // Declares a chain from x's format; returns its output format.
    static Format declare_chain(std::vector<std::unique_ptr<Layer>>& chain, const DeclareContext& c);
    static Format planned_chain(const std::vector<std::unique_ptr<Layer>>& chain, Format input_format);
    static void forward_chain(std::vector<std::unique_ptr<Layer>>& chain, Backend& b, const Tensor& x,
                              std::int64_t batch, bool training);
    // Back through a chain from the gradient of its output; returns the gradient of its input (null
    // when its first layer writes none).
    static const Tensor* backward_chain(std::vector<std::unique_ptr<Layer>>& chain, Backend& b, const Tensor& x,
                                        const Tensor& dy, std::int64_t batch, std::vector<RoundingStats>* stats);
    // dy itself when `format` holds it exactly, else its cast into `slot`.
    const Tensor& gradient_in(Backend& b, const Tensor& dy, Format format, std::unique_ptr<Tensor>& slot);

    std::vector<std::unique_ptr<Layer>> m_branch, m_projection;
    Format m_format = Format::fp32, m_branch_format = Format::fp32, m_shortcut_format = Format::fp32;
    std::unique_ptr<Tensor> m_y, m_dbranch, m_dshortcut, m_dx;
};

// The wider of two formats: the one that holds every value of the other, else fp32.
Format wider_format(Format a, Format b);

}  // namespace mantissa
