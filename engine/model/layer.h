// Layer: one node of a network built from a description (docs/architecture.md, "Layers"). A layer
// kind, registered once in layer_registry.cpp, is made from its JSON description and the shape of
// its input (checking both, before any tensor exists), declares its tensors on a backend in the
// formats the precision policy gives it, runs forward and backward through the backend's ops, and
// lists its parameters. The Network chains layers; the Trainer, the optimizer and the telemetry
// see only layers and parameters.
//
// Formats flow down the chain: a layer reads its input in the format the layer before it wrote,
// and writes its output in a format of its own choosing (a linear or conv2d layer: its
// LayerFormats; batchnorm, pools, activations, flatten: their input's format; a residual: the wider
// of its two summands). Gradients travel back in the format of the tensor they are the gradient of.
// Training thread only; a layer's tensors belong to the backend that declared them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/sample_shape.h"
#include "model/layer_formats.h"
#include "model/op_classes.h"
#include "model/operand_observer.h"

namespace mantissa {

// A trainable tensor and its gradient, as the optimizer and the overflow check see it.
struct Parameter {
    Tensor* value = nullptr;  // what the optimizer updates (the FP32 master or the stored weights)
    Tensor* grad = nullptr;
    bool weight = false;      // the layer's main weight: its gradient gets the per-layer statistics
};

// One tensor of the network's state dict (engine/weights/state_dict.h; docs/weights.md): what
// PyTorch's state_dict() calls it and the shape it gives it, and the tensor that holds its values
// here, row-major, shape's product values (a weight of shape (out, in, kh, kw) is the tensor
// (out, in·kh·kw)).
struct StateEntry {
    enum class Kind : std::uint8_t {
        parameter,  // trained by the optimizer: a weight, a bias, a table
        buffer,     // kept by the layer, not trained: batch norm's running statistics
        count,      // batch norm's num_batches_tracked: an I64 scalar to PyTorch, no tensor here
        alias,      // a second name for a tensor another entry holds: a tied head's weight
    };
    std::string name;                  // "fc1.weight", "bn1.running_mean"
    std::vector<std::int64_t> shape;   // PyTorch's: (out, in), (out, in, kh, kw), (C), () a scalar
    Tensor* tensor = nullptr;          // null for a count
    Kind kind = Kind::parameter;
};

// What a layer needs to (re)declare its tensors.
struct DeclareContext {
    Backend& backend;
    std::int64_t capacity = 0;        // rows (the batch size the network was made for)
    Format input_format = Format::fp32;  // the format of the tensor forward reads
    bool input_grad = true;           // backward writes the gradient of the input (false: first layer)
    const Fp8Recipe& fp8_recipe;
};

class Layer {
public:
    Layer(std::string name, SampleShape input, SampleShape output)
        : m_name(std::move(name)), m_input(input), m_output(output) {}
    virtual ~Layer() = default;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    const std::string& name() const { return m_name; }  // PyTorch's state-dict name: "fc1", "layer1.0.conv1"
    virtual const char* kind() const = 0;                // the registered type: "linear", "relu"
    const SampleShape& input_shape() const { return m_input; }
    const SampleShape& output_shape() const { return m_output; }
    // The input as the Layers table, the store's `layers` rows and `mantissa-cli show` describe it
    // (LayerInfo::in_shape): the tensor's shape, unless what a sample carries is an index rather
    // than values (an embedding's token id), which is described by the range it picks from.
    virtual SampleShape described_input_shape() const { return m_input; }

    // Layers with parameters are the rows of the Layers table and of the per-layer statistics;
    // index() is their place among them (0 = the first, in the order of the state dict), -1 for
    // the others. The Network numbers them.
    virtual bool has_parameters() const { return false; }
    int index() const { return m_index; }
    void set_index(int index) { m_index = index; }
    // A block of layers (residual): its layers, which the Network numbers, initialises and steps
    // like its own. The block runs them in its forward and backward.
    virtual std::vector<Layer*> children() { return {}; }
    virtual std::int64_t parameter_count() const { return 0; }
    // Layers whose compute format is a setting (precision.layers): linear, conv2d. Others compute
    // in FP32 or in their input's format and ignore set_formats.
    virtual bool takes_precision() const { return false; }
    virtual const LayerFormats& formats() const;
    virtual void set_formats(const LayerFormats& formats) { (void)formats; }
    // Layers whose format is an op class's (layernorm, attention): the classes as resolved
    // (model/op_classes.h). Set before declare, as set_formats is.
    virtual void set_op_formats(const OpFormats& ops) { (void)ops; }
    // Called once the Network has every layer, before any declare: a layer that shares another's
    // tensors (a head tied to the embedding) finds it here. Throws mantissa::Error when it cannot.
    virtual void link(const std::vector<Layer*>& layers) { (void)layers; }

    // "" when `backend` runs this layer in its current formats, else the backend's sentence saying
    // what it lacks (Backend::unsupported); asked before any tensor is declared.
    virtual std::string unsupported(const Backend& backend) const { (void)backend; return {}; }

    // (Re)declares the layer's tensors for its formats and context. Stored parameters keep their
    // values (rounded to a narrower store); everything else is recomputed by the next pass.
    virtual void declare(const DeclareContext& context) = 0;
    // The values (4 bytes each on the CPU backend) declare would allocate, without a backend:
    // parameters, their copies and gradients, activations kept for backward and workspace.
    virtual double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const = 0;
    // The format the output will have when the input has `input_format`: a precision layer's
    // output format, else its input's (a residual: the wider of its summands).
    virtual Format planned_output_format(Format input_format) const {
        return takes_precision() ? formats().output : input_format;
    }
    // Valid after declare.
    virtual Format output_format() const = 0;
    virtual const Tensor& output() const = 0;
    // The gradient of the input that backward writes; null when declared without input_grad.
    virtual const Tensor* input_grad() const = 0;

    // x: the input (the previous layer's output). batch: the rows to compute (samples, or samples ×
    // positions in a sequence model: model_desc.h). training: batch statistics, FP8 amax records.
    virtual void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) = 0;
    // dy: the gradient of this layer's output. Writes input_grad() (when declared) and the
    // parameters' gradients. weight_stats (statistics steps; one entry per layer with parameters):
    // a layer with parameters writes what the rounding of its weight gradient did at index().
    virtual void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                          std::vector<RoundingStats>* weight_stats) = 0;

    virtual std::vector<Parameter> parameters() { return {}; }
    // The layer's own entries of the state dict, in the order PyTorch's state_dict() lists them
    // (parameters, then buffers); a block's layers give theirs themselves. Valid until the
    // formats change (tensors are re-declared).
    virtual std::vector<StateEntry> state() { return {}; }
    // Fills the parameters with their initial values. index: the layer's place among the layers
    // with parameters (0 = the first), which picks its random stream.
    virtual void initialise(Backend& backend, std::uint64_t seed, int index) {
        (void)backend, (void)seed, (void)index;
    }

    // Matmul layers (linear, conv2d) show their operands to `observer` at the start of each
    // backward on a statistics step (model/operand_observer.h); null: to nobody.
    virtual void set_operand_observer(OperandObserver* observer) { (void)observer; }

    // FP8 layers: the scaling state, its update at the end of a step, the recipe switched live.
    virtual const Fp8State* fp8_state() const { return nullptr; }
    virtual Fp8State* fp8_state() { return nullptr; }  // between steps: a checkpoint restores it
    virtual void end_step(Backend& backend) { (void)backend; }
    virtual void set_fp8_scaling(Fp8Scaling scaling) { (void)scaling; }

protected:
    // The entry of weight_stats this layer writes, or null.
    RoundingStats* stats_entry(std::vector<RoundingStats>* weight_stats) const {
        return weight_stats && m_index >= 0 && static_cast<std::size_t>(m_index) < weight_stats->size()
                   ? &(*weight_stats)[static_cast<std::size_t>(m_index)]
                   : nullptr;
    }

private:
    std::string m_name;
    SampleShape m_input, m_output;
    int m_index = -1;
};

}  // namespace mantissa
