// LossScaler: GradScaler's update rule (torch/amp/grad_scaler.py, _amp_update_scale_): the
// products are formed in double and stored as the FP32 scale, as the kernel does.
#include "backend/loss_scaler.h"

#include <cmath>

#include "error.h"

namespace mantissa {

namespace {

void validate(const LossScalingSpec& s) {
    auto bad = [](const std::string& key, const std::string& why) {
        throw Error("precision.loss_scaling." + key + ": " + why);
    };
    if (!(s.init_scale > 0) || !std::isfinite(s.init_scale)) bad("init_scale", "must be a positive finite number.");
    if (!(s.growth_factor > 1)) bad("growth_factor", "must be greater than 1.");
    if (!(s.backoff_factor > 0 && s.backoff_factor < 1)) bad("backoff_factor", "must be in (0, 1).");
    if (s.growth_interval < 1) bad("growth_interval", "must be at least 1.");
    if (s.min_scale && !(*s.min_scale > 0)) bad("min_scale", "must be positive.");
    if (s.max_scale && s.min_scale && *s.max_scale < *s.min_scale) bad("max_scale", "is below min_scale.");
}

}  // namespace

LossScaler::LossScaler(const LossScalingSpec& spec) {
    validate(spec);
    m_spec = spec;
    m_scale = m_spec.mode == LossScalingMode::off ? 1.0f : clamp(static_cast<float>(spec.init_scale));
}

float LossScaler::inv_scale() const {
    if (m_spec.mode == LossScalingMode::off) return 1.0f;
    return static_cast<float>(1.0 / static_cast<double>(m_scale));
}

float LossScaler::clamp(float s) const {
    if (m_spec.mode != LossScalingMode::dynamic) return s;
    if (m_spec.min_scale && s < *m_spec.min_scale) s = static_cast<float>(*m_spec.min_scale);
    if (m_spec.max_scale && s > *m_spec.max_scale) s = static_cast<float>(*m_spec.max_scale);
    return s;
}

LossScaler::Update LossScaler::update(bool found_nonfinite) {
    Update u;
    u.old_scale = u.new_scale = m_scale;
    switch (m_spec.mode) {
    case LossScalingMode::off: return u;
    case LossScalingMode::fixed: u.skipped = found_nonfinite; return u;
    case LossScalingMode::dynamic: break;
    }
    u.skipped = found_nonfinite;
    if (found_nonfinite) {
        m_scale = clamp(static_cast<float>(static_cast<double>(m_scale) * m_spec.backoff_factor));
        m_tracker = 0;
        u.reason = "backoff";
    } else {
        const std::int64_t successful = m_tracker + 1;
        if (successful >= m_spec.growth_interval) {
            const float grown = static_cast<float>(static_cast<double>(m_scale) * m_spec.growth_factor);
            if (std::isfinite(grown)) m_scale = clamp(grown);
            m_tracker = 0;
            u.reason = "growth";
        } else {
            m_tracker = successful;
        }
    }
    u.new_scale = m_scale;
    if (!u.changed()) u.reason = "";
    return u;
}

void LossScaler::reconfigure(const LossScalingSpec& spec) {
    validate(spec);
    const bool same_mode = spec.mode == m_spec.mode;
    m_spec = spec;
    if (spec.mode == LossScalingMode::off) {
        m_scale = 1;
        m_tracker = 0;
    } else if (!same_mode || spec.mode == LossScalingMode::fixed) {
        m_scale = clamp(static_cast<float>(spec.init_scale));
        m_tracker = 0;
    } else {
        m_scale = clamp(m_scale);
        if (m_tracker >= spec.growth_interval) m_tracker = 0;
    }
}

}  // namespace mantissa
