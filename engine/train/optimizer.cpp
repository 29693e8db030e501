// Optimizer: allocates FP32 state per parameter and hands each parameter to the step pipeline,
// which runs the backend's fused update (or skips it).
#include "train/optimizer.h"

#include "error.h"

namespace mantissa {

Optimizer::Optimizer(Backend& backend, Network& network, const TrainSpec& spec)
    : m_network(network), m_spec(spec) {
    const bool sgd = spec.optimizer == OptimizerKind::sgd;
    const bool momentum = sgd && spec.momentum != 0.0;
    for (int l = 0; l < network.layer_count(); ++l) {
        for (int p = 0; p < 2; ++p) {
            const Tensor& param = p == 0 ? network.weight(l) : network.bias(l);
            ParamState st;
            const std::string base = param.desc().name;
            auto make = [&](const char* suffix) {
                return backend.allocate(TensorDesc{base + suffix, param.rows(), param.cols(), Format::fp32,
                                                   MemoryCategory::optimizer_state});
            };
            if (!sgd) {
                st.s1 = make(".exp_avg");
                st.s2 = make(".exp_avg_sq");
            } else if (momentum) {
                st.s1 = make(".momentum");
            }
            m_state.push_back(std::move(st));
        }
    }
}

Optimizer::~Optimizer() = default;

OptimizerHyper Optimizer::hyper() const {
    OptimizerHyper h;
    h.kind = m_spec.optimizer;
    h.momentum = m_spec.momentum;
    h.weight_decay = m_spec.weight_decay;
    h.beta1 = m_spec.beta1;
    h.beta2 = m_spec.beta2;
    h.eps = m_spec.eps;
    return h;
}

void Optimizer::step(StepPipeline& pipeline) const {
    const OptimizerHyper h = hyper();
    for (int l = 0; l < m_network.layer_count(); ++l) {
        for (int p = 0; p < 2; ++p) {
            const ParamState& st = m_state[static_cast<std::size_t>(2 * l + p)];
            OptimizerTensors t;
            t.param = p == 0 ? &m_network.weight(l) : &m_network.bias(l);
            t.grad = p == 0 ? &m_network.grad_weight(l) : &m_network.grad_bias(l);
            t.state1 = st.s1.get();
            t.state2 = st.s2.get();
            pipeline.optimizer_step(t, h, p == 0 ? l : -1);
        }
    }
}

const Tensor* Optimizer::state(int layer, int param, int which) const {
    const ParamState& st = m_state.at(static_cast<std::size_t>(2 * layer + param));
    return which == 0 ? st.s1.get() : st.s2.get();
}

}  // namespace mantissa
