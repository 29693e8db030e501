// Batching: the per-epoch sample order and the copy of one batch into the trainer's buffers.
// The order depends on (seed, epoch) alone, never on earlier epochs, so a run can resume at any
// epoch and two runs with the same seed see the same batches. gather_batch runs on the training
// thread every step: it only grows its output buffers, so after the first step it allocates nothing.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "data/dataset.h"
#include "data/random.h"
#include "error.h"

namespace mantissa {

std::vector<std::int64_t> epoch_order(std::int64_t rows, std::uint64_t seed, std::int64_t epoch) {
    if (rows < 0) throw Error("epoch_order: the number of rows (" + std::to_string(rows) + ") is negative.");
    std::vector<std::int64_t> order(static_cast<std::size_t>(rows));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    data::Rng rng(data::derive_seed(seed, 0x45504F4348ULL ^ data::mix64(static_cast<std::uint64_t>(epoch))));
    data::shuffle(order, rng);
    return order;
}

void gather_batch(const Dataset& data, const Split& split, const std::vector<std::int64_t>& order, std::int64_t first,
                  std::int64_t count, std::vector<float>& x, std::vector<std::int32_t>& y,
                  std::vector<float>& targets) {
    const auto size = static_cast<std::int64_t>(order.size());
    if (first < 0 || count < 0 || first > size || count > size - first)
        throw Error("gather_batch: rows " + std::to_string(first) + ".." + std::to_string(first + count) +
                    " are outside the order of " + std::to_string(size) + " rows.");
    const auto f = static_cast<std::size_t>(data.features);
    const auto o = static_cast<std::size_t>(data.outputs);
    const auto n = static_cast<std::size_t>(count);
    const bool regression = data.is_regression();
    if (x.size() < n * f) x.resize(n * f);
    if (regression) {
        if (targets.size() < n * o) targets.resize(n * o);
    } else if (y.size() < n) {
        y.resize(n);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t row = order[static_cast<std::size_t>(first) + i];
        if (row < 0 || row >= split.rows)
            throw Error("gather_batch: order entry " + std::to_string(first + static_cast<std::int64_t>(i)) +
                        " names row " + std::to_string(row) + ", outside the split's " + std::to_string(split.rows) +
                        " rows.");
        const auto r = static_cast<std::size_t>(row);
        if (f) std::memcpy(x.data() + i * f, split.x.data() + r * f, f * sizeof(float));
        if (regression) {
            if (o) std::memcpy(targets.data() + i * o, split.targets.data() + r * o, o * sizeof(float));
        } else {
            y[i] = split.y[r];
        }
    }
}

}  // namespace mantissa
