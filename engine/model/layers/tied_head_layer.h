// tied_head: the LM head of a model whose embedding table is also its output projection
// (model.tie_embeddings, as GPT-2): logits = x·Wᵀ with W the model's token embedding (wte), as
// torch does with `lm_head.weight = wte.weight`. It has no parameters of its own, so it is no row
// of the Layers table and takes no precision setting: its matmul follows autocast (operands in
// the autocast type, W cast from the FP32 table into a copy each forward, as a master weight is),
// the "linear" entry of autocast's lower-precision list.
//
// Backward writes the head's gradient of W in its output format (a linear's dW), then casts it into
// wte's FP32 gradient; wte's own backward then adds its rows to it (embedding_backward with
// accumulate), the order autograd sums a shared weight's two gradients in. There is no bias (as
// nanoGPT's head): the backend's linear adds a zero one, which nothing trains.
//
// Tensors: weight_compute (V, dim) the cast copy, when the compute format is not FP32; grad_weight
// (V, dim) in the output format; bias, grad_bias (1, V) the zero bias and its unused gradient;
// saved_input (rows, dim) when x is not already in the operand format; y (rows, V); dx (rows, dim).
#pragma once

#include <memory>

#include "model/layer.h"

namespace mantissa {

class TokenEmbeddingLayer;

class TiedHeadLayer final : public Layer {
public:
    TiedHeadLayer(std::string name, SampleShape input, std::int64_t vocab);
    const char* kind() const override { return "tied_head"; }
    void set_op_formats(const OpFormats& ops) override;
    void link(const std::vector<Layer*>& layers) override;
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::linear, m_formats.compute);
    }
    const LayerFormats& formats() const override { return m_formats; }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format planned_output_format(Format) const override { return m_formats.output; }
    Format output_format() const override { return m_formats.output; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                  std::vector<RoundingStats>* weight_stats) override;
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // "<name>.weight" (vocab, dim): a second name for the table's weight, as PyTorch's state dict
    // lists a tied weight under both of its names.
    std::vector<StateEntry> state() override;

private:
    LinearTensors tensors();
    bool needs_saved_input(Format input_format) const;

    std::int64_t m_vocab, m_dim;
    LayerFormats m_formats;
    TokenEmbeddingLayer* m_table = nullptr;
    std::unique_ptr<Tensor> m_weight_compute, m_grad_weight, m_bias, m_grad_bias, m_saved_input, m_y, m_dx;
};

}  // namespace mantissa
