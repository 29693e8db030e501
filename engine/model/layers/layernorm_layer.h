// layernorm: PyTorch's nn.LayerNorm(dim) over each row (a token's features): statistics in FP32
// (mean and biased variance), affine weight γ = 1 and bias β = 0 at the start, FP32 parameters and
// gradients. The output's format is the layernorm op class's (model/op_classes.h): FP32 under
// autocast (its FP32 list), the input's format without it, or what precision.ops.layernorm says.
// The layer takes no precision setting of its own.
//
// Each forward keeps the smallest variance it saw (min_variance()): the quantity that loses
// precision first when a row's values are nearly equal, and that a narrow output format rounds.
//
// Tensors: weight, bias, grad_weight, grad_bias (1, dim) FP32; saved_mean, saved_invstd (rows, 1)
// FP32 for backward; y (rows, dim) the output; dx (rows, dim) the gradient of the input, in the
// input's format. When the class's format is narrower than the input's (precision.ops.layernorm
// fp16 or bf16 on an FP32 stream), the op reads x_cast, the input rounded to that format, and
// writes its gradient to dx_cast in that format, which is then cast to dx: autocast's cast and
// its backward (op_casts_input).
#pragma once

#include <limits>
#include <memory>
#include <optional>

#include "backend/transformer_ops.h"
#include "model/layer.h"

namespace mantissa {

class LayerNormLayer final : public Layer {
public:
    LayerNormLayer(std::string name, SampleShape shape, double eps);
    const char* kind() const override { return "layernorm"; }
    bool has_parameters() const override { return true; }
    std::int64_t parameter_count() const override { return 2 * input_shape().numel(); }
    void set_op_formats(const OpFormats& ops) override { m_class = ops.layernorm; }
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::layernorm, Format::fp32);
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format planned_output_format(Format input_format) const override { return op_output_format(m_class, input_format); }
    Format output_format() const override { return m_format; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                  std::vector<RoundingStats>* weight_stats) override;
    std::vector<Parameter> parameters() override;
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // nn.LayerNorm(dim)'s weight and bias (dim): the stored (1, dim) rows.
    std::vector<StateEntry> state() override {
        const std::int64_t dim = input_shape().numel();
        return {{name() + ".weight", {dim}, m_weight.get()}, {name() + ".bias", {dim}, m_bias.get()}};
    }

    // The smallest row variance of the last training forward (FP32); inf before the first.
    float min_variance() const { return m_min_variance; }

private:
    LayerNormTensors tensors();

    double m_eps;
    std::optional<Format> m_class;  // the op class's format (nullopt: the input's)
    Format m_format = Format::fp32;
    float m_min_variance = std::numeric_limits<float>::infinity();
    std::unique_ptr<Tensor> m_weight, m_bias, m_grad_weight, m_grad_bias, m_saved_mean, m_saved_invstd, m_y, m_dx;
    std::unique_ptr<Tensor> m_x_cast, m_dx_cast;  // only while the class casts the input (op_casts_input)
};

}  // namespace mantissa
