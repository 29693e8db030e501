// The embeddings of a language model, one row per position (a sample of T tokens is T rows):
//
// embedding (wte): y[r] = weight[id[r]], PyTorch's nn.Embedding. Its input is the network's
// input tensor, (rows, 1) token ids held as FP32 values (exact: ids stay far below 2^24); the
// forward reads them back to the host (Backend::embedding_forward takes host ids), checks each
// is a whole number in [0, num), and keeps them for the backward. The table is FP32 and so is
// the output: autocast leaves embeddings alone (they are on none of its lists), and the weight
// is the FP32 master itself. Its gradient: Backend::embedding_backward (FP32 row sums).
//
// position_embedding (wpe): y[r] = x[r] + weight[r mod T], the learned positions of GPT added to
// the token embedding: a table of `context` rows of which the first T (the positions of a sample)
// are used. FP32 table and output (the sum in the wider format, as a residual's). Its input's
// gradient is the output's gradient itself (input_grad() is dy, as given to backward).
//
// Tensors: weight, grad_weight (num or context, dim) FP32; y (rows, dim) FP32; position_embedding
// also keeps the looked-up rows (rows, dim) FP32 as workspace.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/layer.h"

namespace mantissa {

// The rows of an embedding table: kept FP32, initialised from N(0, init_std²).
class EmbeddingTableLayer : public Layer {
public:
    EmbeddingTableLayer(std::string name, SampleShape input, std::int64_t rows, std::int64_t dim, double init_std);
    bool has_parameters() const override { return true; }
    std::int64_t parameter_count() const override { return m_rows * m_dim; }
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::embedding, Format::fp32);
    }
    Format planned_output_format(Format) const override { return Format::fp32; }
    Format output_format() const override { return Format::fp32; }
    const Tensor& output() const override { return *m_y; }
    std::vector<Parameter> parameters() override { return {{m_weight.get(), m_grad_weight.get(), true}}; }
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // nn.Embedding's weight (num, dim); for position_embedding the whole table of `context` rows.
    std::vector<StateEntry> state() override { return {{name() + ".weight", {m_rows, m_dim}, m_weight.get()}}; }
    std::int64_t table_rows() const { return m_rows; }
    std::int64_t dim() const { return m_dim; }
    Tensor& weight() { return *m_weight; }
    Tensor& grad_weight() { return *m_grad_weight; }

protected:
    void declare_table(const DeclareContext& c);

    std::int64_t m_rows, m_dim;
    double m_init_std;
    std::unique_ptr<Tensor> m_weight, m_grad_weight, m_y;
};

class TokenEmbeddingLayer final : public EmbeddingTableLayer {
public:
    TokenEmbeddingLayer(std::string name, std::int64_t vocab, std::int64_t dim, double init_std);
    const char* kind() const override { return "embedding"; }
    // A row's input is one token id of the vocabulary: described as vocab → dim ("113 → 128"), the
    // shape of the linear layer with the same weights (a one-hot row times the table), so the
    // shapes agree with the parameters (vocab × dim).
    SampleShape described_input_shape() const override { return {m_rows, 1, 1}; }
    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    const Tensor* input_grad() const override { return nullptr; }  // ids have no gradient
    void forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                  std::vector<RoundingStats>* weight_stats) override;
    // A tied head wrote its gradient of the table first: the backward adds to it.
    void set_tied(bool tied) { m_tied = tied; }

private:
    bool m_tied = false;
    std::vector<float> m_values;    // the ids as read back
    std::vector<std::int32_t> m_ids;  // of the last forward, for the backward
};

class PositionEmbeddingLayer final : public EmbeddingTableLayer {
public:
    // positions: T, the rows of one sample (at most `context`).
    PositionEmbeddingLayer(std::string name, SampleShape input, std::int64_t context, std::int64_t positions,
                           double init_std);
    const char* kind() const override { return "position_embedding"; }
    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    const Tensor* input_grad() const override { return m_dx; }
    void forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                  std::vector<RoundingStats>* weight_stats) override;

private:
    std::int64_t m_positions;
    std::vector<std::int32_t> m_position_ids;  // r mod T for every row of the capacity
    std::unique_ptr<Tensor> m_looked_up;
    const Tensor* m_dx = nullptr;  // the dy of the last backward
};

}  // namespace mantissa
