// AmaxHistory: Transformer Engine's delayed scaling (see the header for the formulas).
#include "backend/amax_history.h"

#include <algorithm>
#include <cmath>

#include "error.h"

namespace mantissa {

AmaxHistory::AmaxHistory(int history_len, int margin, AmaxAlgo algo, float fp8_max)
    : m_margin(margin), m_algo(algo), m_fp8_max(fp8_max) {
    if (history_len < 1)
        throw Error("precision.fp8.amax_history_len must be at least 1 (got " +
                    std::to_string(history_len) + ").");
    m_window.assign(static_cast<std::size_t>(history_len), 0.0f);
}

void AmaxHistory::record(float amax) {
    // NaN must win (a NaN amax keeps the scale, as TE's isfinite check does).
    if (std::isnan(amax) || std::isnan(m_pending)) m_pending = std::nanf("");
    else m_pending = std::max(m_pending, amax);
}

void AmaxHistory::restore(float scale, float scale_inv, const std::vector<float>& history) {
    const int len = static_cast<int>(m_window.size());
    if (history.size() > m_window.size())
        throw Error("An amax history of " + std::to_string(history.size()) + " entries does not fit a window of " +
                    std::to_string(len) + " (precision.fp8.amax_history_len).");
    // The window's positions do not matter, only which entries it holds and which is the newest:
    // the entries are laid out oldest first from 0, as update() fills a window that has not wrapped.
    std::fill(m_window.begin(), m_window.end(), 0.0f);
    m_count = static_cast<int>(history.size());
    m_newest = m_count - 1;
    for (int i = 0; i < m_count; ++i) m_window[static_cast<std::size_t>(m_newest - i)] = history[static_cast<std::size_t>(i)];
    m_pending = 0;
    m_scale = scale;
    m_scale_inv = scale_inv;
}

void AmaxHistory::update() {
    const int len = static_cast<int>(m_window.size());
    m_newest = (m_newest + 1) % len;
    m_window[static_cast<std::size_t>(m_newest)] = m_pending;
    m_count = std::min(m_count + 1, len);
    m_pending = 0;

    float amax = m_window[static_cast<std::size_t>(m_newest)];
    if (m_algo == AmaxAlgo::max) {
        for (int i = 0; i < m_count; ++i) {
            const float v = m_window[static_cast<std::size_t>(i)];
            if (std::isnan(v) || std::isnan(amax)) amax = std::nanf("");
            else amax = std::max(amax, v);
        }
    }
    if (m_scaling == Fp8Scaling::delayed) {
        if (const float scale = scale_for(amax); scale > 0.0f) {
            m_scale = scale;
            m_scale_inv = 1.0f / scale;
        }
    }
}

float AmaxHistory::scale_for(float amax) const {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
    float scale = (m_fp8_max / amax) / std::ldexp(1.0f, m_margin);
    if (!std::isfinite(scale) || !(scale > 0.0f)) return 0.0f;
    if (m_power_of_two) scale = std::ldexp(1.0f, std::ilogb(scale));  // down: amax · scale <= fp8_max
    return scale;
}

void AmaxHistory::use_amax(float amax) {
    const float scale = scale_for(amax);
    m_scale = scale > 0.0f ? scale : 1.0f;
    m_scale_inv = 1.0f / m_scale;
}

std::vector<float> AmaxHistory::history() const {
    std::vector<float> out;
    const int len = static_cast<int>(m_window.size());
    for (int i = 0; i < m_count; ++i)
        out.push_back(m_window[static_cast<std::size_t>(((m_newest - i) % len + len) % len)]);
    return out;
}

void AmaxHistory::set_recipe(int margin, AmaxAlgo algo) {
    m_margin = margin;
    m_algo = algo;
}

void AmaxHistory::set_scaling(Fp8Scaling scaling) {
    m_scaling = scaling;
    if (scaling == Fp8Scaling::none) m_scale = m_scale_inv = 1.0f;
}

}  // namespace mantissa
