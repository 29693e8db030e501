// Optimizer: allocates FP32 state per parameter and calls the backend's fused updates.
#include "train/optimizer.h"

#include "error.h"

namespace mantissa {

Optimizer::Optimizer(Backend& backend, Network& network, const TrainSpec& spec)
    : m_backend(backend), m_network(network), m_spec(spec) {
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

const std::vector<UpdateCounts>& Optimizer::step(double lr) {
    std::vector<UpdateCounts>& counts = m_counts;
    counts.assign(static_cast<std::size_t>(m_network.layer_count()), UpdateCounts{});
    ++m_steps;
    for (int l = 0; l < m_network.layer_count(); ++l) {
        for (int p = 0; p < 2; ++p) {
            ParamState& st = m_state[static_cast<std::size_t>(2 * l + p)];
            OptimizerTensors t;
            t.param = p == 0 ? &m_network.weight(l) : &m_network.bias(l);
            t.grad = p == 0 ? &m_network.grad_weight(l) : &m_network.grad_bias(l);
            t.state1 = st.s1.get();
            t.state2 = st.s2.get();
            UpdateCounts c;
            if (m_spec.optimizer == OptimizerKind::sgd) {
                SgdParams s;
                s.lr = lr;
                s.momentum = m_spec.momentum;
                s.weight_decay = m_spec.weight_decay;
                s.first_step = m_steps == 1;
                c = m_backend.sgd_step(t, s);
            } else {
                AdamWParams a;
                a.lr = lr;
                a.beta1 = m_spec.beta1;
                a.beta2 = m_spec.beta2;
                a.eps = m_spec.eps;
                a.weight_decay = m_spec.weight_decay;
                a.step = m_steps;
                c = m_backend.adamw_step(t, a);
            }
            if (p == 0) counts[static_cast<std::size_t>(l)] = c;
        }
    }
    return counts;
}

const Tensor* Optimizer::state(int layer, int param, int which) const {
    const ParamState& st = m_state.at(static_cast<std::size_t>(2 * layer + param));
    return which == 0 ? st.s1.get() : st.s2.get();
}

}  // namespace mantissa
