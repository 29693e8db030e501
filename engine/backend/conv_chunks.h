// How a convolution's lowered matmuls take the batch: in chunks of whole samples, as many as keep
// the chunk's largest matrix (its columns C·k·k or its output channels, by the positions of each
// sample) within 2^22 values, at least one, at most the batch.
//
// The CPU backend cuts every convolution so. It matters beyond speed where a convolution's weight
// gradient is block-scaled (docs/numerics.md, "Block-scaled formats in training"): its dy and its
// columns are quantised chunk by chunk, the blocks along the reduction (samples × positions)
// restarting at each chunk and a stochastic rounding taking a key per chunk, so a backend that
// runs such a convolution cuts the batch alike (the CUDA backend's own chunks are larger).
#pragma once

#include <algorithm>
#include <cstdint>

namespace mantissa {

inline constexpr std::int64_t conv_chunk_values = std::int64_t{1} << 22;

inline std::int64_t conv_reference_chunk_samples(std::int64_t patch, std::int64_t out_channels, std::int64_t positions,
                                                 std::int64_t batch) {
    const std::int64_t per_sample = std::max(patch, out_channels) * positions;
    return std::clamp<std::int64_t>(conv_chunk_values / std::max<std::int64_t>(per_sample, 1), 1,
                                    std::max<std::int64_t>(batch, 1));
}

}  // namespace mantissa
