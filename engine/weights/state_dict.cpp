// The state dict: Network::state() to and from a safetensors file (see state_dict.h).
#include "weights/state_dict.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "error.h"
#include "printable_text.h"

namespace mantissa {

namespace {

std::vector<std::uint64_t> file_shape(const std::vector<std::int64_t>& shape) {
    return {shape.begin(), shape.end()};
}

bool same_shape(const SafetensorsEntry& f, const StateEntry& e) {
    return std::equal(f.shape.begin(), f.shape.end(), e.shape.begin(), e.shape.end(),
                      [](std::uint64_t a, std::int64_t b) { return b >= 0 && a == static_cast<std::uint64_t>(b); });
}

// "fc1.weight, fc1.bias, fc2.weight, ... (12 in all)": the model's names for a sentence.
std::string names_text(const std::vector<StateEntry>& entries) {
    std::string s;
    const std::size_t shown = std::min<std::size_t>(entries.size(), 6);
    for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + entries[i].name;
    if (shown < entries.size()) s += ", ... (" + std::to_string(entries.size()) + " in all)";
    return s;
}

std::string dtype_and_shape(const SafetensorsEntry& f) {
    return std::string(dtype_name(f.dtype)) + " " + shape_text(f.shape);
}

}  // namespace

std::vector<SafetensorsTensor> state_dict_tensors(const Network& network, const StateDictOptions& options) {
    std::vector<SafetensorsTensor> out;
    for (const StateEntry& e : network.state()) {
        if (e.kind == StateEntry::Kind::count) {
            SafetensorsTensor t{e.name, Dtype::I64, file_shape(e.shape), std::vector<std::uint8_t>(8)};
            auto v = static_cast<std::uint64_t>(options.batches_tracked);
            for (std::uint8_t& b : t.bytes) b = static_cast<std::uint8_t>(v), v >>= 8;
            out.push_back(std::move(t));
            continue;
        }
        const Tensor& tensor = *e.tensor;
        std::int64_t elements = 1;
        for (std::int64_t d : e.shape) elements *= d;
        if (elements != tensor.numel())
            throw Error("The state dict's " + e.name + " has shape " + shape_text(std::span<const std::int64_t>(e.shape)) +
                        ", but its tensor holds " + std::to_string(tensor.numel()) + " values.");
        const std::vector<float> values = network.read(tensor);
        out.push_back(safetensors_tensor(e.name, dtype_of(tensor.format()), file_shape(e.shape), values));
    }
    return out;
}

void save_state_dict(const Network& network, const std::string& path, const StateDictOptions& options) {
    std::map<std::string, std::string> metadata = options.metadata;
    metadata.emplace("format", "pt");
    metadata.emplace("producer", std::string("mantissa ") + MANTISSA_VERSION);
    write_safetensors(path, state_dict_tensors(network, options), metadata);
}

void load_state_dict(Network& network, const std::string& path) {
    load_state_dict(network, SafetensorsFile(path));
}

void load_state_dict(Network& network, const SafetensorsFile& file, std::string_view other_prefix) {
    const std::string where = printable_text(file.path());
    const std::vector<StateEntry> entries = network.state();

    // Nothing in the file that the model does not have.
    for (const SafetensorsEntry& f : file.entries()) {
        if (!other_prefix.empty() && f.name.starts_with(other_prefix)) continue;
        const bool known = std::any_of(entries.begin(), entries.end(), [&](const StateEntry& e) { return e.name == f.name; });
        if (!known)
            throw Error(where + ": tensor " + printable_text(f.name) + " (" + dtype_and_shape(f) +
                        ") is not a tensor of this model, whose tensors are " + names_text(entries) +
                        "; the file was saved from another model, or its names differ.");
    }
    // Every entry the file has for the model: the right shape and a dtype that fits.
    for (const StateEntry& e : entries) {
        const SafetensorsEntry* f = file.find(e.name);
        if (!f) continue;
        const std::string tensor = where + ": tensor " + e.name;
        if (!same_shape(*f, e))
            throw Error(tensor + " has shape " + shape_text(f->shape) + ", but the model's " + e.name + " has shape " +
                        shape_text(std::span<const std::int64_t>(e.shape)) + ".");
        if (e.kind == StateEntry::Kind::count) {
            if (!dtype_is_integer(f->dtype))
                throw Error(tensor + " is " + std::string(dtype_name(f->dtype)) +
                            "; a batch count is a whole number (PyTorch writes it as an I64 scalar).");
        } else if (!format_of(f->dtype) && f->dtype != Dtype::F64) {
            throw Error(tensor + " holds " + std::string(dtype_name(f->dtype)) +
                        " values, and the model's " + e.name +
                        " holds real numbers: F32, F16, BF16, F8_E4M3, F8_E5M2 or F64 are read.");
        }
    }

    // What each of the model's tensors loads from: its own entry, else the entry of a name tied
    // to it (a tied head's weight for the table).
    struct Load {
        Tensor* tensor;
        const SafetensorsEntry* from;
        const SafetensorsEntry* same = nullptr;  // a tied name that must hold the same values
        std::vector<float> values;
    };
    std::vector<Load> loads;
    for (const StateEntry& e : entries) {
        if (e.kind == StateEntry::Kind::count || e.kind == StateEntry::Kind::alias) continue;
        const SafetensorsEntry* own = file.find(e.name);
        const SafetensorsEntry* tied = nullptr;
        for (const StateEntry& a : entries)
            if (a.kind == StateEntry::Kind::alias && a.tensor == e.tensor && file.find(a.name)) tied = file.find(a.name);
        if (!own && !tied)
            throw Error(where + " has no tensor " + e.name + ", which the model has with shape " +
                        shape_text(std::span<const std::int64_t>(e.shape)) +
                        "; the file was saved from another model, or its names differ.");
        loads.push_back({e.tensor, own ? own : tied, own ? tied : nullptr, {}});
    }
    // Every value converted (and checked) before any is uploaded.
    for (Load& l : loads) {
        l.values = file.read_values(*l.from, l.tensor->format());
        if (l.same) {
            const std::vector<float> tied = file.read_values(*l.same, l.tensor->format());
            const bool equal = std::equal(l.values.begin(), l.values.end(), tied.begin(), tied.end(), [](float a, float b) {
                return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
            });
            if (!equal)
                throw Error(where + ": tensor " + printable_text(l.same->name) + " differs from " +
                            printable_text(l.from->name) + ", to which the model ties it (one weight under two names); "
                            "the file was saved from a model without the tie (model.tie_embeddings false).");
        }
    }
    for (const StateEntry& e : entries)
        if (e.kind == StateEntry::Kind::count)
            if (const SafetensorsEntry* f = file.find(e.name)) (void)file.read_integers(*f);  // checked, not kept
    for (Load& l : loads) network.write(*l.tensor, l.values);
}

}  // namespace mantissa
