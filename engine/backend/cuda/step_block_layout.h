// StepBlockLayout: where CudaStepPipeline keeps one step's results in its device block (and in the
// pinned copy the host reads), so that the whole block leaves the GPU in one copy per step. Host
// logic only (sizes come in as numbers), so tests/engine/cuda_host checks it without a GPU.
//
//   [header: scaler before/after, step count, MSE sum, first bad gradient]
//   [one CheckResult per gradient (two per layer)]
//   [two update counts per layer][four rounding counts per layer]   <- contiguous: one memset
//   [one float loss per row][one int32 argmax hit per row]
// Every region starts on a 256-byte boundary except the rounding counts, which follow the update
// counts directly so that the prologue zeroes both with one memset.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mantissa::cuda {

struct StepBlockLayout {
    int layers = 0;
    std::int64_t rows = 0;
    std::size_t results = 0, counts = 0, rounding = 0, row_loss = 0, row_correct = 0, bytes = 0;
};

StepBlockLayout layout_step_block(int layers, std::int64_t rows, std::size_t header_bytes,
                                  std::size_t check_result_bytes);

}  // namespace mantissa::cuda
