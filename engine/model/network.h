// Network: the MLP's tensors on a backend, declared in the formats LayerFormats decides, and its
// forward and backward passes. Changing a layer's formats re-declares its tensors: the stored
// weights keep their values (rounded when the new format is narrower: master weights off), the
// rest is recomputed on the next pass.
//
// Per layer i (in -> out), capacity B rows:
//   weight (out, in) / bias (1, out)         stored, updated by the optimizer
//   weight_compute / bias_compute            the cast copies the forward reads (when needed)
//   grad_weight / grad_bias                  in the layer's output format
//   saved_input (B, in)                      x cast to the operand format (when x is not in it)
//   z (B, out)                               pre-activation output (the logits for the last layer)
//   a (B, out)                               activation output (all layers but the last)
//   dz (B, out), dx (B, in)                  gradients of z and of the layer's input (workspace)
// Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/step_pipeline.h"
#include "model/layer_formats.h"
#include "model/model_desc.h"

namespace mantissa {

class Network {
public:
    Network(Backend& backend, ModelDesc desc, std::int64_t batch_capacity, std::uint64_t seed,
            const Fp8Recipe& fp8_recipe, const std::vector<LayerFormats>& formats);
    ~Network();
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    const ModelDesc& desc() const { return m_desc; }
    int layer_count() const { return static_cast<int>(m_layers.size()); }
    std::int64_t capacity() const { return m_capacity; }
    const LayerFormats& formats(int layer) const;
    void set_formats(const std::vector<LayerFormats>& formats);

    // x: (batch, inputs) host rows. training: FP8 layers record amaxes.
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

    Tensor& weight(int layer);
    Tensor& bias(int layer);
    Tensor& grad_weight(int layer);
    Tensor& grad_bias(int layer);
    const Tensor& output() const;  // the last layer's z: logits or predictions
    const Fp8State* fp8_state(int layer) const;

    std::vector<float> read(const Tensor& t) const;
    void write(Tensor& t, const std::vector<float>& values);  // rounded to t's format

private:
    struct Layer;
    void declare(int layer);
    const Tensor& layer_input(int layer) const;

    Backend& m_backend;
    ModelDesc m_desc;
    std::int64_t m_capacity;
    Fp8Recipe m_recipe;
    std::unique_ptr<Tensor> m_input;  // (B, inputs) fp32
    std::vector<std::unique_ptr<Layer>> m_layers;
};

}  // namespace mantissa
