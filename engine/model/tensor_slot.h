// How a layer keeps its tensors across re-declarations (a live precision change): a slot holds a
// tensor as described, or none, and is only re-allocated when the description changes.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"

namespace mantissa {

// Makes `slot` hold a tensor as described (or none). keep_values: carry the old values over,
// rounded to the new format.
inline void ensure_tensor(Backend& backend, std::unique_ptr<Tensor>& slot, const std::optional<TensorDesc>& want,
                          bool keep_values) {
    if (!want) {
        slot.reset();
        return;
    }
    if (slot && slot->format() == want->format && slot->desc().category == want->category &&
        slot->rows() == want->rows && slot->cols() == want->cols)
        return;
    auto fresh = backend.allocate(*want);
    if (keep_values && slot) backend.cast(*slot, *fresh);
    slot = std::move(fresh);
}

inline TensorDesc tensor_desc(std::string name, std::int64_t rows, std::int64_t cols, Format f, MemoryCategory c) {
    return TensorDesc{std::move(name), rows, cols, f, c};
}

}  // namespace mantissa
