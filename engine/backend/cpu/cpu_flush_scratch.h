// The buffers count_flushed_weight_gradient (cpu_flush_count.h) works in, kept by the CPU backend
// between steps; apart from the count so that cpu_backend.h does not take its OpenMP passes.
#pragma once

#include <cstdint>
#include <vector>

namespace mantissa::cpu_detail {

struct FlushCountScratch {
    std::vector<std::uint32_t> x_any, dy_any;  // per column: OR of |bits| (non-zero: not all ±0)
    // Which rows of each column are not ±0, 64 rows a word, word-major: mask[w * cols + c] holds
    // rows 64w .. 64w + 63 of column c (built row by row, as m is stored).
    std::vector<std::uint64_t> x_mask, dy_mask;
    std::vector<std::uint64_t> x_mask_t;  // x_mask column-major: x_mask_t[c * words + w]
    std::vector<std::uint64_t> dy_word;   // one column of dy_mask, (words) per thread
};

}  // namespace mantissa::cpu_detail
