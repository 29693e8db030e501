// GraphPolicy: the capture / replay / drop decisions (see the header).
#include "backend/cuda/graph_policy.h"

#include <algorithm>
#include <cstring>

namespace mantissa::cuda {

Fingerprint& Fingerprint::add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        m_hash ^= (v >> (8 * i)) & 0xffu;
        m_hash *= 1099511628211ull;
    }
    return *this;
}

Fingerprint& Fingerprint::add(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
}

Fingerprint& Fingerprint::add(const void* p) {
    return add(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)));
}

GraphPolicy::GraphPolicy(int stable_steps) : m_stable_steps(std::max(1, stable_steps)) {}

GraphPolicy::Action GraphPolicy::next(std::uint64_t fingerprint) {
    m_capture_pending = false;
    if (!m_have_fingerprint || fingerprint != m_fingerprint) {
        if (m_has_graph) m_reason = "the step's configuration changed";
        m_has_graph = false;
        m_have_fingerprint = true;
        m_fingerprint = fingerprint;
        m_stable = 1;
    } else {
        m_stable = std::min(m_stable + 1, m_stable_steps);
    }
    if (m_disabled) return Action::eager;
    if (m_has_graph) {
        ++m_replays;
        return Action::replay;
    }
    if (m_stable >= m_stable_steps) {
        m_capture_pending = true;
        return Action::capture;
    }
    return Action::eager;
}

void GraphPolicy::captured(bool ok, const std::string& reason) {
    if (!m_capture_pending) return;
    m_capture_pending = false;
    if (ok) {
        m_has_graph = true;
        ++m_captures;
    } else {
        m_disabled = true;
        m_has_graph = false;
        m_reason = reason.empty() ? "the capture failed" : reason;
    }
}

void GraphPolicy::invalidate(const std::string& reason) {
    if (m_has_graph || m_stable > 0) m_reason = reason;
    m_has_graph = false;
    m_capture_pending = false;
    m_stable = 0;
    m_have_fingerprint = false;
}

const char* graph_action_name(GraphPolicy::Action a) {
    switch (a) {
        case GraphPolicy::Action::eager: return "eager";
        case GraphPolicy::Action::capture: return "capture";
        case GraphPolicy::Action::replay: return "replay";
    }
    return "eager";
}

}  // namespace mantissa::cuda
