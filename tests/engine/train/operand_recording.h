// The operands one layer shows at a statistics step (model/operand_observer.h), downloaded whole,
// with every layer's passed on to statistics of the test's own (what-if, block-scale views): what
// tests/engine/train/test_what_if.cpp and test_block_scale_views.cpp compare with the backend's
// operand tap.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/layer.h"
#include "model/operand_observer.h"

namespace mantissa::test {

template <class Statistics>
class OperandRecording final : public OperandObserver {
public:
    template <class... Args>
    explicit OperandRecording(std::string layer, Args&&... args)
        : statistics(std::forward<Args>(args)...), m_layer(std::move(layer)) {}

    void observe(Backend& backend, const MatmulOperands& o) override {
        if (o.layer.name() == m_layer) {
            x = download(backend, o.x, o.rows * o.in);
            w = download(backend, o.weight, o.weight.numel());
            dy = download(backend, o.dy, o.rows * o.out);
        }
        statistics.observe(backend, o);
    }

    Statistics statistics;
    std::vector<float> x, w, dy;  // the layer's, from the last statistics step

private:
    static std::vector<float> download(Backend& b, const Tensor& t, std::int64_t n) {
        std::vector<float> v(static_cast<std::size_t>(n));
        b.download(t, v.data(), n);
        return v;
    }
    std::string m_layer;
};

}  // namespace mantissa::test
