// Host logic of the CUDA backend's layer ops that needs no GPU, so CPU-run tests check it
// (tests/engine/cuda_host/test_op_support.cpp):
//   cuda_op_unsupported  CudaBackend::unsupported's sentence for an op and a format
//   conv_chunk_samples   how many samples one pass of a convolution takes, so that its column
//                        buffers stay bounded (cuda_conv.cpp)
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/format_support.h"

namespace mantissa::cuda {

// "" when the CUDA backend runs `op` with `format` (for linear and conv2d: the compute format,
// which the GPU must multiply in: `matmul`, matmul_support's answer for it on this GPU); else one
// sentence saying what is missing and what to do. The ops other than the matmuls take the
// formats the CPU backend takes (fp32, tf32, fp16, bf16), so a model runs on both or on neither.
std::string cuda_op_unsupported(BackendOp op, Format format, const Support& matmul, const std::string& gpu);

// A convolution is multiplied in chunks of whole samples: a chunk of n samples makes column
// buffers of n·positions rows of `widest` values (the larger of the patch C·k·k and the output
// channels). The largest n in [1, batch] whose n·positions·widest is at most max_values, rounded
// down to a multiple of 16 / gcd(positions, 16) when that leaves at least one such multiple, so
// that every chunk's rows are a multiple of 16 (cuBLASLt's FP8 kernels need it) whenever
// batch·positions is. 0 for an empty batch.
std::int64_t conv_chunk_samples(std::int64_t batch, std::int64_t positions, std::int64_t widest,
                                std::int64_t max_values);

// The bound conv2d uses: 2^24 values per column buffer (64 MiB in FP32).
inline constexpr std::int64_t conv_column_values = std::int64_t{1} << 24;

}  // namespace mantissa::cuda
