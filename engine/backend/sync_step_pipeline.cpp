// SyncStepPipeline: the step's calls, run at once (see sync_step_pipeline.h).
#include "backend/sync_step_pipeline.h"

#include <utility>

#include "error.h"

namespace mantissa {

SyncStepPipeline::SyncStepPipeline(Backend& backend, const LossScalingSpec& spec, int lag)
    : m_backend(backend), m_scaler(spec), m_lag(lag < 0 ? 0 : lag) {}

void SyncStepPipeline::restore(const PipelineState& state) {
    if (m_open || !m_done.empty()) throw Error("SyncStepPipeline: restore with steps in flight.");
    m_scaler.restore(state.scale, state.growth_tracker);
    m_optimizer_steps = state.optimizer_steps;
}

bool SyncStepPipeline::begin(const StepBegin& b) {
    if (m_open) throw Error("StepPipeline: begin() before the previous step's end().");
    m_open = true;
    m_begin = b;
    StepResults& r = m_current;
    r.step = b.step;
    r.loss = {};
    r.check = {};
    r.summaries.clear();
    r.rounding.clear();
    for (UpdateCounts& c : r.counts) c = {};
    r.scale = m_scaler.scale();
    r.skipped = false;
    r.replayed = false;
    m_backend.upload(*b.input, b.x, b.batch * b.features);
    return true;
}

void SyncStepPipeline::loss(const Tensor& output, Tensor* grad) {
    const float scale = m_current.scale;
    m_current.loss = m_begin.labels
                         ? m_backend.softmax_cross_entropy(output, m_begin.labels, m_begin.batch, scale, grad)
                         : m_backend.mse(output, m_begin.targets, m_begin.batch, scale, grad);
}

void SyncStepPipeline::check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) {
    m_current.check = m_backend.unscale_and_check(grads, m_scaler.inv_scale(), want_summary,
                                                  m_begin.stats ? &m_current.summaries : nullptr);
    // GradScaler.step skips the optimizer on a non-finite gradient unless scaling is off.
    m_current.skipped = m_current.check.found_nonfinite && m_scaler.mode() != LossScalingMode::off;
}

void SyncStepPipeline::optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) {
    if (m_current.skipped) return;
    UpdateCounts c;
    if (h.kind == OptimizerKind::sgd) {
        SgdParams s;
        s.lr = m_begin.lr;
        s.momentum = h.momentum;
        s.weight_decay = h.weight_decay;
        s.first_step = m_optimizer_steps == 0;
        c = m_backend.sgd_step(t, s);
    } else {
        AdamWParams a;
        a.lr = m_begin.lr;
        a.beta1 = h.beta1;
        a.beta2 = h.beta2;
        a.eps = h.eps;
        a.weight_decay = h.weight_decay;
        a.step = m_optimizer_steps + 1;
        c = m_backend.adamw_step(t, a);
    }
    if (report_layer >= 0) {
        const auto i = static_cast<std::size_t>(report_layer);
        if (m_current.counts.size() <= i) m_current.counts.resize(i + 1);
        m_current.counts[i] = c;
    }
}

bool SyncStepPipeline::end() {
    if (!m_open) throw Error("StepPipeline: end() without begin().");
    m_open = false;
    const LossScaler::Update u = m_scaler.update(m_current.check.found_nonfinite);
    if (u.skipped != m_current.skipped) throw Error("StepPipeline: the skip decided in check() changed.");
    if (!m_current.skipped) ++m_optimizer_steps;
    m_current.next_scale = m_scaler.scale();
    m_current.growth_tracker = m_scaler.growth_tracker();
    m_current.optimizer_steps = m_optimizer_steps;
    m_current.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_begin.started).count();
    StepResults done;
    if (!m_spare.empty()) {
        done = std::move(m_spare.back());
        m_spare.pop_back();
    }
    std::swap(done, m_current);  // m_current keeps a spare's buffers
    m_current.counts.resize(done.counts.size());
    m_done.push_back(std::move(done));
    return false;
}

bool SyncStepPipeline::collect(StepResults& out) {
    if (m_done.empty()) return false;
    std::swap(out, m_done.front());
    m_spare.push_back(std::move(m_done.front()));
    m_done.pop_front();
    return true;
}

}  // namespace mantissa
