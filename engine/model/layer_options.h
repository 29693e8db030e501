// Reading one layer's options from its JSON description, for the registry's makers: each key is
// read once with its range, and whatever is left over is an unknown key. Every sentence names the
// layer ("model.layers[2] (conv1)") and the key.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_desc.h"

namespace mantissa {

class LayerOptions {
public:
    // where: the layer's sentence prefix, "model.layers[2] (conv1)"; path: its place alone,
    // "model.layers[2]", under which a block's own layers are named.
    LayerOptions(const LayerSpec& spec, std::string where, std::string path);

    // An integer in [min, max]; `fallback` when absent (required: no fallback).
    std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
    std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t fallback);
    double number(const std::string& key, double min, double max, double fallback);
    bool flag(const std::string& key, bool fallback);
    // Throws for the first key no read asked for.
    void finish() const;
    // "model.layers[2] (conv1)": the prefix of this layer's sentences.
    const std::string& where() const { return m_where; }
    const std::string& path() const { return m_path; }

private:
    const nlohmann::json* find(const std::string& key);
    const LayerSpec& m_spec;
    std::string m_where, m_path;
    std::set<std::string> m_read;
};

}  // namespace mantissa
