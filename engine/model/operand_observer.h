// OperandObserver: what a matmul layer (linear, conv2d) shows of its operands at a statistics
// step, at the start of its backward, when its input x, its weight W and its output gradient dy
// (scaled by the loss scale) are all at hand and none has changed since the forward. The what-if
// statistics (train/what_if.h) and the block-scale views (train/block_scale_views.h) observe; nothing is written, so observing never changes a run.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/conv_ops.h"

namespace mantissa {

class Layer;

struct MatmulOperands {
    const Layer& layer;
    const Tensor& x;       // linear: (rows, in); conv2d: (batch, C·H·W)
    const Tensor& weight;  // the stored weights the forward read: (out, in) or (Co, C·k·k)
    const Tensor& dy;      // linear: (rows, out); conv2d: (batch, Co·oh·ow)
    std::int64_t rows = 0;                  // linear: x's rows; conv2d: the batch's samples
    std::int64_t in = 0, out = 0;           // linear: the widths; conv2d: patch and channels out
    std::optional<Conv2dGeometry> conv;     // set for a convolution
    const Fp8State* fp8 = nullptr;          // the layer's FP8 scaling state, when it has one
};

class OperandObserver {
public:
    virtual ~OperandObserver() = default;
    // Called on the training thread, between the layer's forward and the rest of its backward.
    virtual void observe(Backend& backend, const MatmulOperands& operands) = 0;
};

// Several observers shown each layer in turn, in the order added.
class OperandObservers final : public OperandObserver {
public:
    void add(OperandObserver* observer) { m_observers.push_back(observer); }
    bool empty() const { return m_observers.empty(); }
    void observe(Backend& backend, const MatmulOperands& operands) override {
        for (OperandObserver* o : m_observers) o->observe(backend, operands);
    }

private:
    std::vector<OperandObserver*> m_observers;
};

}  // namespace mantissa
