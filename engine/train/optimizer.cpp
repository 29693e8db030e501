// Optimizer: allocates FP32 state per parameter and hands each parameter to the step pipeline,
// which runs the backend's fused update (or skips it).
#include "train/optimizer.h"

#include "error.h"

namespace mantissa {

Optimizer::Optimizer(Backend& backend, Network& network, const TrainSpec& spec, WeightRounding rounding)
    : m_backend(backend), m_network(network), m_spec(spec) {
    set_weight_rounding(rounding);
    const bool sgd = spec.optimizer == OptimizerKind::sgd;
    const bool momentum = sgd && spec.momentum != 0.0;
    for (const NetworkParameter& p : network.parameters()) {
        const Tensor& param = *p.tensors.value;
        ParamState st;
        auto make = [&](const char* suffix) {
            return backend.allocate(TensorDesc{p.name + suffix, param.rows(), param.cols(), Format::fp32,
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

void Optimizer::set_weight_rounding(WeightRounding rounding) {
    if (rounding != WeightRounding::nearest) {
        const BackendOp op =
            rounding == WeightRounding::kahan ? BackendOp::kahan_updates : BackendOp::stochastic_weights;
        if (std::string why = m_backend.unsupported(op, Format::fp32); !why.empty()) throw Error(why);
    }
    m_rounding = rounding;  // Kahan's buffers are made or dropped at the next step (keep_compensation),
                            // so a change refused before then keeps them
}

void Optimizer::keep_compensation(std::size_t i, const Tensor& param) {
    std::unique_ptr<Tensor>& c = m_state[i].compensation;
    const bool wanted = m_rounding == WeightRounding::kahan && param.format() != Format::fp32;
    if (!wanted) {
        c.reset();
        return;
    }
    if (c && c->format() == param.format() && c->numel() == param.numel()) return;
    // A new buffer starts at zero: nothing is owed to a weight that just became narrow.
    c = m_backend.allocate(TensorDesc{param.desc().name + ".kahan", param.rows(), param.cols(), param.format(),
                                      MemoryCategory::optimizer_state});
}

void Optimizer::step(StepPipeline& pipeline) {
    const OptimizerHyper h = hyper();
    const auto& params = m_network.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
        keep_compensation(i, *params[i].tensors.value);
        const ParamState& st = m_state[i];
        OptimizerTensors t;
        t.param = params[i].tensors.value;
        t.grad = params[i].tensors.grad;
        t.state1 = st.s1.get();
        t.state2 = st.s2.get();
        t.rounding = m_rounding;
        t.compensation = st.compensation.get();
        pipeline.optimizer_step(t, h, params[i].tensors.weight ? params[i].layer : -1);
    }
}

std::vector<OptimizerStateTensor> Optimizer::state_tensors() {
    std::vector<OptimizerStateTensor> out;
    const auto& params = m_network.parameters();
    const bool sgd = m_spec.optimizer == OptimizerKind::sgd;
    for (std::size_t i = 0; i < params.size(); ++i) {
        keep_compensation(i, *params[i].tensors.value);
        ParamState& st = m_state[i];
        if (st.s1) out.push_back({i, sgd ? "momentum_buffer" : "exp_avg", st.s1.get()});
        if (st.s2) out.push_back({i, "exp_avg_sq", st.s2.get()});
        if (st.compensation) out.push_back({i, "kahan", st.compensation.get()});
    }
    return out;
}

const Tensor* Optimizer::compensation(int layer, int param) const {
    const auto& params = m_network.parameters();
    int seen = 0;
    for (std::size_t i = 0; i < params.size(); ++i)
        if (params[i].layer == layer && seen++ == param) return m_state[i].compensation.get();
    return nullptr;
}

const Tensor* Optimizer::state(int layer, int param, int which) const {
    const auto& params = m_network.parameters();
    int seen = 0;
    for (std::size_t i = 0; i < params.size(); ++i)
        if (params[i].layer == layer && seen++ == param) {
            const ParamState& st = m_state[i];
            return which == 0 ? st.s1.get() : st.s2.get();
        }
    throw Error("Optimizer: layer " + std::to_string(layer) + " has no parameter " + std::to_string(param) + ".");
}

}  // namespace mantissa
