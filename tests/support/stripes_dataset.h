// Shared by the suites that train convolutional networks (tests/engine/train/test_cnn_training.cpp
// on the CPU, tests/gpu/test_gpu_conv.cpp on both backends): a small synthetic image task that a
// CNN learns in a few dozen steps, the same for the same seed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "data/dataset.h"
#include "model/init.h"

namespace test_support {

// 1×8×8 images: class 0 a bright row, class 1 a bright column, at a random place, over noise.
inline mantissa::Dataset stripes(std::int64_t train_rows, std::int64_t test_rows, std::uint64_t seed) {
    using namespace mantissa;
    Rng rng(seed);
    const auto fill = [&](Split& s, std::int64_t rows) {
        s.rows = rows;
        s.x.assign(static_cast<std::size_t>(rows * 64), 0.0f);
        s.y.resize(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) {
            const int label = static_cast<int>(rng.next() % 2), at = static_cast<int>(rng.next() % 8);
            s.y[static_cast<std::size_t>(r)] = label;
            for (int i = 0; i < 64; ++i) {
                const bool on = label == 0 ? i / 8 == at : i % 8 == at;
                s.x[static_cast<std::size_t>(r * 64 + i)] = (on ? 1.5f : -0.2f) + 0.4f * (rng.uniform() - 0.5f);
            }
        }
    };
    Dataset d;
    d.name = "stripes";
    d.features = 64;
    d.shape = {1, 8, 8};
    d.classes = 2;
    d.outputs = 2;
    fill(d.train, train_rows);
    fill(d.test, test_rows);
    return d;
}

}  // namespace test_support
