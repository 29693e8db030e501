// LayerOptions: typed, range-checked reads of a layer's JSON options.
#include "model/layer_options.h"

#include <cmath>

#include "error.h"

namespace mantissa {

LayerOptions::LayerOptions(const LayerSpec& spec, std::string where, std::string path)
    : m_spec(spec), m_where(std::move(where)), m_path(std::move(path)) {
    if (!spec.options.is_object()) throw Error(m_where + ": a layer is described by a JSON object.");
}

const nlohmann::json* LayerOptions::find(const std::string& key) {
    m_read.insert(key);
    const auto it = m_spec.options.find(key);
    return it == m_spec.options.end() ? nullptr : &*it;
}

std::int64_t LayerOptions::integer(const std::string& key, std::int64_t min, std::int64_t max) {
    if (!m_spec.options.contains(key))
        throw Error(m_where + ": \"" + key + "\" is required (an integer from " + std::to_string(min) + " to " +
                    std::to_string(max) + ").");
    return integer(key, min, max, min);
}

std::int64_t LayerOptions::integer(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t fallback) {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    const bool whole = v->is_number_integer() || (v->is_number_float() && std::isfinite(v->get<double>()) &&
                                                  std::floor(v->get<double>()) == v->get<double>() &&
                                                  std::fabs(v->get<double>()) < 9e15);
    if (!whole) throw Error(m_where + ": \"" + key + "\" must be an integer (got " + v->dump() + ").");
    const auto value = v->is_number_integer() ? v->get<std::int64_t>() : static_cast<std::int64_t>(v->get<double>());
    if (value < min || value > max)
        throw Error(m_where + ": \"" + key + "\" must be from " + std::to_string(min) + " to " + std::to_string(max) +
                    " (got " + std::to_string(value) + ").");
    return value;
}

double LayerOptions::number(const std::string& key, double min, double max, double fallback) {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>()))
        throw Error(m_where + ": \"" + key + "\" must be a number (got " + v->dump() + ").");
    const double value = v->get<double>();
    if (value < min || value > max)
        throw Error(m_where + ": \"" + key + "\" must be from " + nlohmann::json(min).dump() + " to " +
                    nlohmann::json(max).dump() + " (got " + v->dump() + ").");
    return value;
}

bool LayerOptions::flag(const std::string& key, bool fallback) {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) throw Error(m_where + ": \"" + key + "\" must be true or false (got " + v->dump() + ").");
    return v->get<bool>();
}

void LayerOptions::finish() const {
    for (const auto& [key, value] : m_spec.options.items())
        if (!m_read.contains(key))
            throw Error(m_where + ": \"" + key + "\" is not an option of a " + m_spec.type + " layer.");
}

}  // namespace mantissa
