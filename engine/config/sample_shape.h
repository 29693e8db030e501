// The shape of one sample as a network sees it: channels × height × width, stored row-major in that
// order (NCHW with the batch as rows). Tabular data and the output of a flatten are
// features × 1 × 1. Shared by the datasets (what a file holds), the model (what each layer takes
// and gives) and the experiment file (dataset.shape).
#pragma once

#include <cstdint>
#include <string>

namespace mantissa {

struct SampleShape {
    std::int64_t channels = 0;
    std::int64_t height = 1;
    std::int64_t width = 1;

    std::int64_t numel() const { return channels * height * width; }
    bool flat() const { return height == 1 && width == 1; }
    bool operator==(const SampleShape&) const = default;
    // "32×14×14", or "128" for a flat shape.
    std::string text() const {
        if (flat()) return std::to_string(channels);
        return std::to_string(channels) + "\u00d7" + std::to_string(height) + "\u00d7" + std::to_string(width);
    }
};

}  // namespace mantissa
