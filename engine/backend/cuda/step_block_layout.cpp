// StepBlockLayout: see step_block_layout.h.
#include "backend/cuda/step_block_layout.h"

namespace mantissa::cuda {

namespace {
std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }
}  // namespace

StepBlockLayout layout_step_block(int layers, std::int64_t rows, std::size_t header_bytes,
                                  std::size_t check_result_bytes) {
    StepBlockLayout l;
    l.layers = layers < 0 ? 0 : layers;
    l.rows = rows < 0 ? 0 : rows;
    const auto L = static_cast<std::size_t>(l.layers);
    const auto R = static_cast<std::size_t>(l.rows);
    l.results = align_up(header_bytes);
    l.counts = l.results + align_up(2 * L * check_result_bytes);
    l.rounding = l.counts + 2 * L * sizeof(unsigned long long);
    l.row_loss = align_up(l.rounding + 4 * L * sizeof(unsigned long long));
    l.row_correct = l.row_loss + align_up(R * sizeof(float));
    l.bytes = l.row_correct + align_up(R * sizeof(std::int32_t));
    return l;
}

}  // namespace mantissa::cuda
