// Network: a ModelDesc's layers on a backend, chained input to output, and the loss. The layers
// with parameters (linear, conv2d, batchnorm2d) are "the layers" of every per-layer figure: the
// formats (one LayerFormats each; those that take no precision setting ignore it), the weight
// statistics, the Layers table; they are numbered in order from 0 (layer_count()). Changing the
// formats re-declares the tensors down the chain: the stored weights keep their values (rounded
// when the new format is narrower: master weights off), the rest is recomputed on the next pass.
//
// Besides the layers' own tensors (model/layer.h and each kind's header), the network keeps the
// input batch (B, inputs) in FP32 and the gradient of the output that the loss writes (B, outputs)
// in the last layer's output format. A sequence model (ModelDesc::positions = T > 1) has T rows per
// sample in every tensor, the loss included: batch and capacity below count samples, the layers
// see samples × T rows. Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/step_pipeline.h"
#include "model/layer.h"
#include "model/layer_formats.h"
#include "model/model_desc.h"

namespace mantissa {

class Pool2dLayer;

// A parameter as the optimizer and the overflow check see it: which layer (among the layers with
// parameters) it belongs to and what it is called there.
struct NetworkParameter {
    Parameter tensors;
    int layer = 0;
    std::string name;  // "fc1.weight"
};

class Network {
public:
    Network(Backend& backend, ModelDesc desc, std::int64_t batch_capacity, std::uint64_t seed,
            const Fp8Recipe& fp8_recipe, const std::vector<LayerFormats>& formats, const OpFormats& ops = {});
    ~Network();
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    const ModelDesc& desc() const { return m_desc; }
    int layer_count() const { return static_cast<int>(m_layers.size()); }  // layers with parameters
    const Layer& layer(int index) const { return *m_layers.at(static_cast<std::size_t>(index)); }
    const std::vector<std::unique_ptr<Layer>>& nodes() const { return m_nodes; }  // the chain, in order
    std::int64_t capacity() const { return m_capacity; }  // samples
    std::int64_t rows(std::int64_t samples) const { return samples * m_desc.positions; }
    const LayerFormats& formats(int layer) const;
    void set_formats(const std::vector<LayerFormats>& formats);
    // Both at once, checked and re-declared once (a live change of autocast moves both).
    void set_formats(const std::vector<LayerFormats>& formats, const OpFormats& ops);
    // The op classes' formats (model/op_classes.h); re-declares as set_formats does.
    const OpFormats& op_formats() const { return m_ops; }
    void set_op_formats(const OpFormats& ops);

    // x: (batch, inputs) host rows (a sequence model: batch × T ids). training: batch statistics,
    // FP8 amax records.
    void forward(const float* x, std::int64_t batch, bool training);
    // The forward pass over rows already in input() (a StepPipeline uploads them).
    void forward_uploaded(std::int64_t batch, bool training);
    Tensor& input() { return *m_input; }
    // The loss of the last forward through a pipeline (its scale, its deferred results), the
    // output gradient written for backward.
    void loss(StepPipeline& pipeline);
    // Loss of the last forward against labels (classification) or targets (regression); with
    // with_grad, the output gradient (× loss_scale) is written for backward.
    LossResult loss(const std::int32_t* labels, const float* targets, std::int64_t batch,
                    float loss_scale, bool with_grad);
    // weight_stats: when not null, one RoundingStats per layer for the weight gradient's rounding.
    void backward(std::int64_t batch, std::vector<RoundingStats>* weight_stats);
    void end_step();  // FP8 layers: new scales from this step's amaxes
    void set_fp8_scaling(Fp8Scaling scaling);  // between steps; layers that turn FP8 later get it too

    // Every parameter, layer by layer from the input, each layer's in its own order (weight, then
    // bias). Valid until the formats change.
    const std::vector<NetworkParameter>& parameters() const { return m_parameters; }
    // The state dict: every layer's entries (Layer::state) in the order PyTorch's state_dict()
    // gives them, each layer's after the block that holds it (engine/weights/state_dict.h reads
    // and writes it). Valid until the formats change.
    std::vector<StateEntry> state() const;
    Tensor& weight(int layer);
    Tensor& bias(int layer);
    Tensor& grad_weight(int layer);
    Tensor& grad_bias(int layer);
    const Tensor& output() const;  // the last layer's output: logits or predictions
    const Fp8State* fp8_state(int layer) const;
    Fp8State* fp8_state(int layer);
    // The op statistics the last training forward measured (config/telemetry.h, OpStepRecord),
    // attention layers and layer norms in network order, appended to `out`; `step` is stamped on each.
    void op_stats(std::int64_t step, std::vector<OpStepRecord>& out) const;
    // Every matmul layer shows its operands to `observer` on statistics steps (null: to nobody).
    void set_operand_observer(OperandObserver* observer);

    std::vector<float> read(const Tensor& t) const;
    // The first `rows` rows of t into data (rows × t.cols() values).
    void read_rows(const Tensor& t, float* data, std::int64_t rows) const { m_backend.download(t, data, rows * t.cols()); }
    void write(Tensor& t, const std::vector<float>& values);  // rounded to t's format

private:
    void declare();
    const Tensor& node_input(std::size_t node) const;
    // The max pool at node + 1 when the ReLU at `node` and it run as one op each way
    // (Pool2dLayer::fuses_with; docs/architecture.md), else null.
    Pool2dLayer* pool_fused_after(std::size_t node) const;
    const Parameter& parameter(int layer, bool weight) const;

    Backend& m_backend;
    ModelDesc m_desc;
    std::int64_t m_capacity;
    Fp8Recipe m_recipe;
    OpFormats m_ops;
    std::unique_ptr<Tensor> m_input;      // (B, inputs) fp32
    std::unique_ptr<Tensor> m_loss_grad;  // (B, outputs) the last layer's output format
    std::vector<std::unique_ptr<Layer>> m_nodes;  // the chain
    std::vector<Layer*> m_all;                    // every layer, blocks' layers after their block
    std::vector<Layer*> m_layers;                 // the layers with parameters, numbered by index()
    std::vector<NetworkParameter> m_parameters;
};

// The values (4 bytes each on the CPU backend) a network of `desc` in `formats` declares for a
// batch, its optimizer state included (state_per_parameter FP32 values per parameter, and
// state_per_narrow_parameter more per parameter of a layer whose weights are stored narrower than
// FP32: Kahan's compensation), without a backend: what the CPU backend checks against the
// machine's memory before allocating.
// The formats each layer with parameters would report (Layer::formats) in a Network built with
// `formats` (one per layer; those that take no precision setting ignore theirs) and `ops`: a
// layer without a setting reports FP32, a head tied to the embedding autocast's.
std::vector<LayerFormats> reported_formats(const ModelDesc& desc, const std::vector<LayerFormats>& formats,
                                           const OpFormats& ops);

double network_values(const ModelDesc& desc, const std::vector<LayerFormats>& formats, std::int64_t batch,
                      double state_per_parameter, const OpFormats& ops = {}, double state_per_narrow_parameter = 0);

}  // namespace mantissa
