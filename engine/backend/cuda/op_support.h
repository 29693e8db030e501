// Host logic of the CUDA backend's layer ops that needs no GPU, so CPU-run tests check it
// (tests/engine/cuda_host/test_op_support.cpp):
//   cuda_op_unsupported  CudaBackend::unsupported's sentence for an op and a format
//   conv_chunk_samples   how many samples one pass of a convolution takes, so that its column
//                        buffers stay bounded (cuda_conv.cpp)
//   plan_batched_matmul  how a batched matmul's strided views map onto cuBLASLt's column-major
//                        strided-batched calls, and which operands need a plain copy
//                        (cuda_attention.cpp)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/format_support.h"

namespace mantissa::cuda {

// "" when the CUDA backend runs `op` with `format` (for linear, conv2d and bmm: the compute
// format, which the GPU must multiply in: `matmul`, matmul_support's answer for it on this GPU);
// else one sentence saying what is missing and what to do. The ops other than the matmuls take
// the formats the CPU backend takes (fp32, tf32, fp16, bf16; bmm computes in those too), so a
// model runs on both or on neither.
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

// ---- batched matmul (cuda_attention.cpp)
//
// cuBLASLt multiplies column-major matrices: D(m, n) = op(A)(m, k) · op(B)(k, n), a stored matrix
// X of r rows with leading dimension ld holding element (i, j) at i + j·ld (ld ≥ r), op = N or T.
// A StridedMatrix view (row_stride rs, col_stride cs) of a logical (R, C) matrix is such a matrix
// when rs = 1 (N, ld = cs) or its transpose when cs = 1 (T, ld = rs); a row or a column alone
// takes any stride. C's view must be a plain D (N): a view with cs = 1 is multiplied as
// Cᵀ = Bᵀ·Aᵀ ("swapped"), one with neither unit stride is computed into a plain FP32 workspace
// and scattered. An operand whose view has neither unit stride, or whose tensor does not hold
// compute-format values in the compute format's storage, is gathered into a plain (batch, rows,
// cols) copy rounded to the compute format.

// How one column-major matrix is read: op and leading dimension.
struct ColumnMajor {
    bool trans = false;
    std::int64_t ld = 1;
};

// The column-major form of view v of a logical (rows, cols) matrix, or none (neither stride is a
// usable unit stride: the operand is gathered).
std::optional<ColumnMajor> column_major(const StridedMatrix& v, std::int64_t rows, std::int64_t cols);

// One matrix of the cuBLASLt call: matrix `batch_index` of call `call` lies at element
// offset + call·call_step + batch_index·batch_stride of its buffer (the tensor, or the plain copy
// when `plain`).
struct BmmMatrix {
    bool plain = false;      // operands: a gathered copy; D: the FP32 workspace, scattered after
    bool from_b = false;     // operands: reads the op's B (swapped calls read B as cuBLAS's A)
    ColumnMajor layout;      // D: always N
    std::int64_t offset = 0, call_step = 0, batch_stride = 0;
};

// The cuBLASLt calls of one batched matmul: `calls` strided-batched calls of `batch` matrices.
struct BmmPlan {
    std::int64_t m = 0, n = 0, k = 0;  // of the cuBLAS call (swapped: the op's n, m, k)
    bool swapped = false;              // D = Cᵀ = Bᵀ·Aᵀ
    BmmMatrix a, b, d;
    std::int64_t calls = 1, batch = 1;
};

// The plan for op (k > 0, a batch of at least one m × n product). a_in_place / b_in_place: the
// operand's tensor holds values of the compute format in its storage (else it is gathered);
// c_direct: cuBLASLt may write C's format (else D is the workspace). One strided-batched call of
// outer·inner matrices when every matrix's views step evenly across the two batch levels (outer
// stride = inner_count · inner stride, or one level of extent 1), else one call per outer index.
BmmPlan plan_batched_matmul(const BatchedMatmul& op, const StridedMatrix& a, bool a_in_place, const StridedMatrix& b,
                            bool b_in_place, const StridedMatrix& c, bool c_direct);

// The view of a plain (batch, rows, cols) copy of matrices (a gathered operand, the workspace).
StridedMatrix plain_view(const BatchedMatmul& op, std::int64_t rows, std::int64_t cols);

}  // namespace mantissa::cuda
