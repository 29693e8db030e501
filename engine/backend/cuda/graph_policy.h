// GraphPolicy: when to capture a training step as a CUDA graph, when to replay it and when to
// throw it away. Host logic only (no CUDA), so tests decide its behaviour without a GPU.
//
// A captured graph bakes in everything its kernels were launched with: pointers, shapes, formats,
// hyper-parameters passed by value. The caller summarises all of that in a fingerprint (Fingerprint
// below) at the start of each step:
//   - a fingerprint different from the last step's: any graph is dropped and the step runs eagerly;
//   - the same fingerprint for `stable_steps` consecutive steps: the step is captured (and run);
//   - a graph exists and the fingerprint is unchanged: the graph is replayed.
// invalidate() is for live changes the fingerprint cannot see (a setting applied between steps
// through the control queue): the graph is dropped and stability counts again from zero. A failed
// capture disables graphs for the rest of the session, with its reason kept for the telemetry.
// Training thread only.
#pragma once

#include <cstdint>
#include <string>

namespace mantissa::cuda {

// FNV-1a over the values a captured step depends on.
class Fingerprint {
public:
    Fingerprint& add(std::uint64_t v);
    Fingerprint& add(std::int64_t v) { return add(static_cast<std::uint64_t>(v)); }
    Fingerprint& add(int v) { return add(static_cast<std::uint64_t>(static_cast<std::int64_t>(v))); }
    Fingerprint& add(bool v) { return add(static_cast<std::uint64_t>(v)); }
    Fingerprint& add(double v);
    Fingerprint& add(float v) { return add(static_cast<double>(v)); }
    Fingerprint& add(const void* p);
    std::uint64_t value() const { return m_hash; }

private:
    std::uint64_t m_hash = 14695981039346656037ull;
};

class GraphPolicy {
public:
    enum class Action { eager, capture, replay };

    explicit GraphPolicy(int stable_steps = 3);

    // The start of a step: what to do with it.
    Action next(std::uint64_t fingerprint);
    // After an Action::capture: whether the graph was captured and instantiated.
    void captured(bool ok, const std::string& reason = {});
    // A live change: drop the graph, count stability again.
    void invalidate(const std::string& reason);

    bool has_graph() const { return m_has_graph; }
    bool disabled() const { return m_disabled; }
    int stable_count() const { return m_stable; }
    int stable_steps() const { return m_stable_steps; }
    std::int64_t captures() const { return m_captures; }
    std::int64_t replays() const { return m_replays; }
    const std::string& last_reason() const { return m_reason; }  // why the last graph was dropped

private:
    int m_stable_steps;
    int m_stable = 0;  // consecutive steps with the current fingerprint
    bool m_have_fingerprint = false;
    std::uint64_t m_fingerprint = 0;
    bool m_has_graph = false;
    bool m_disabled = false;
    bool m_capture_pending = false;
    std::int64_t m_captures = 0, m_replays = 0;
    std::string m_reason;
};

const char* graph_action_name(GraphPolicy::Action a);

}  // namespace mantissa::cuda
