// Event coalescing for display (see event_coalesce.h for the rule).
#include "config/event_coalesce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "config/json_number.h"

namespace mantissa {
namespace {

using json = nlohmann::json;

json parse_data(const std::string& data_json) {
    json data = json::parse(data_json, nullptr, false);
    return data.is_object() ? data : json::object();
}

std::optional<std::string> text_of(const json& data, const char* key) {
    const auto it = data.find(key);
    if (it == data.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

// A number, or the strings "inf"/"-inf"/"nan" the trainer writes for JSON's missing values.
std::optional<double> number_of(const json& data, const char* key) {
    const auto it = data.find(key);
    if (it == data.end()) return std::nullopt;
    return number_from_json(*it);
}

std::string step_range(const EventEntry& e, bool growing) {
    return "from " + std::to_string(e.first_step) + " to " + std::to_string(e.last_step) + " (" +
           std::to_string(e.count) + (growing ? " steps so far)" : " steps)");
}

}  // namespace

std::string event_repeat_key(const Event& event) {
    if (event.kind != EventKind::overflow && event.kind != EventKind::scale_change) return {};
    const json data = parse_data(event.data_json);
    if (event.kind == EventKind::overflow) {
        const auto layer = text_of(data, "layer");
        if (!layer) return {};
        const auto skipped = data.find("skipped");
        const std::string skip = skipped == data.end() || !skipped->is_boolean() ? "?"
                                 : skipped->get<bool>()                          ? "1"
                                                                                 : "0";
        // '\n' cannot be in a layer name the trainer writes; it keeps the fields apart.
        return "overflow\n" + *layer + "\n" + text_of(data, "tensor").value_or("") + "\n" + skip;
    }
    const auto reason = text_of(data, "reason");
    if (!reason || reason->empty() || !number_of(data, "old") || !number_of(data, "new")) return {};
    return "scale_change\n" + *reason;
}

bool event_may_interleave(EventKind kind) {
    switch (kind) {
    case EventKind::overflow:
    case EventKind::scale_change:
    case EventKind::evaluation:
    case EventKind::checkpoint:
    case EventKind::divergence: return true;
    default: return false;
    }
}

EventCoalescer::Added EventCoalescer::add(const Event& event) {
    const std::size_t index = m_fed++;
    m_latest_step = m_any ? std::max(m_latest_step, event.step) : event.step;
    m_any = true;
    prune();

    const std::string key = event_repeat_key(event);
    if (!key.empty()) {
        for (Open& open : m_open) {
            if (open.key != key) continue;
            EventEntry& e = m_entries[open.entry];
            if (e.last_step + 1 == event.step) {
                e.last = index;
                e.last_step = event.step;
                ++e.count;
                return {open.entry, false};
            }
        }
    }

    m_entries.push_back({index, index, event.step, event.step, 1});
    const std::size_t entry = m_entries.size() - 1;
    if (!event_may_interleave(event.kind)) m_open.clear();
    if (!key.empty()) {
        const auto same = std::find_if(m_open.begin(), m_open.end(), [&](const Open& o) { return o.key == key; });
        if (same != m_open.end())
            same->entry = entry;
        else
            m_open.push_back({key, entry});
    }
    return {entry, true};
}

void EventCoalescer::prune() {
    // An entry whose last step + 1 is behind the latest step can never be extended again.
    std::erase_if(m_open, [&](const Open& o) { return m_entries[o.entry].last_step + 1 < m_latest_step; });
}

void EventCoalescer::clear() {
    m_entries.clear();
    m_open.clear();
    m_fed = 0;
    m_latest_step = 0;
    m_any = false;
}

bool EventCoalescer::growing(std::size_t entry) const {
    return std::any_of(m_open.begin(), m_open.end(), [&](const Open& o) { return o.entry == entry; });
}

std::vector<std::size_t> EventCoalescer::open_entries() const {
    std::vector<std::size_t> out;
    out.reserve(m_open.size());
    for (const Open& o : m_open) out.push_back(o.entry);
    return out;
}

std::string event_entry_message(const EventEntry& entry, const Event& first, const Event& last, bool growing) {
    if (!entry.merged()) return first.message;
    const json data = parse_data(first.data_json);
    if (first.kind == EventKind::overflow) {
        const std::string tensor = text_of(data, "tensor").value_or("");
        std::string what = tensor == "dW"   ? "weight gradient"
                           : tensor == "dB" ? "bias gradient"
                           : tensor.empty() ? "gradient"
                                            : tensor;
        std::string msg = "Overflow on every step " + step_range(entry, growing) + ": " +
                          text_of(data, "layer").value_or("?") + "'s " + what + " held inf/NaN";
        const auto skipped = data.find("skipped");
        if (skipped != data.end() && skipped->is_boolean())
            msg += skipped->get<bool>() ? "; the steps were skipped." : "; the optimizer stepped anyway (loss scaling is off).";
        else
            msg += ".";
        return msg;
    }
    if (first.kind == EventKind::scale_change) {
        const std::string reason = text_of(data, "reason").value_or("");
        const std::string verb = reason == "backoff" ? "backed off"
                                 : reason == "growth" ? "grew"
                                                      : "changed (" + reason + ")";
        const json last_data = parse_data(last.data_json);
        const auto from = number_of(data, "old");
        const auto to = number_of(last_data, "new");
        std::string msg = "Loss scale " + verb + " on every step " + step_range(entry, growing);
        if (from && to) msg += ": " + format_event_number(*from) + " -> " + format_event_number(*to);
        return msg + ".";
    }
    // Only the kinds above merge; should the rule grow, the first message still says what it was.
    return first.message + " (repeated on every step " + step_range(entry, growing) + ")";
}

}  // namespace mantissa
