// The plain structs of the transformer ops of the Backend interface (backend.h, "transformer
// ops"): the batched matmul of attention and the strided views it reads and writes (so the heads
// are read straight out of a packed (batch·T, 3·dim) QKV tensor, and written straight into a
// (batch·T, dim) one, without copies), the telemetry of the softmax and of the layer norm, and
// the tensors of a layer norm. Kept apart from backend.h as conv_ops.h is.
// docs/numerics.md, "Transformer ops", has the rounding points.
#pragma once

#include <cstdint>
#include <limits>

#include "numeric/format.h"

namespace mantissa {

class Tensor;  // backend.h

// Where a batched matmul reads or writes matrix b (of `batch_count` = outer_count·inner_count,
// b = outer·inner_count + inner) inside a tensor's values (row-major, element (r, c) of the
// tensor at r·cols + c): element (i, j) of matrix b is value
//   offset + outer·outer_stride + inner·inner_stride + i·row_stride + j·col_stride
// of the tensor. The view describes the operand as the product uses it: a transposed operand
// is the same view with row_stride and col_stride swapped. Offsets and strides are counted in
// elements and must not be negative; the backend checks that every element lies in the tensor.
struct StridedMatrix {
    std::int64_t offset = 0;
    std::int64_t outer_stride = 0, inner_stride = 0;
    std::int64_t row_stride = 0, col_stride = 1;
};

// Where the product's FP32 accumulator meets alpha (docs/numerics.md, "Transformer ops"):
//   accumulator: C = rnd_C(alpha·acc)            (one rounding: a fused epilogue, as cuBLAS's alpha)
//   output:      C = rnd_C(alpha·rnd_C(acc))     (PyTorch eager `(q @ kᵀ) / √d`: the matmul's
//                                                 output is rounded, then scaled in FP32, rounded)
// With alpha = 1 both are C = rnd_C(acc).
enum class AlphaPoint : std::uint8_t { accumulator, output };

// C[b](m, n) = alpha · A[b](m, k) · B[b](k, n) for b in [0, outer_count·inner_count): operands
// cast to `compute` (fp32, tf32, fp16 or bf16), products exact, summed in FP32, alpha applied
// in FP32 at `alpha_point`, written rounded to C's format. C is overwritten (no accumulation).
struct BatchedMatmul {
    std::int64_t outer_count = 1, inner_count = 1;
    std::int64_t m = 0, n = 0, k = 0;
    Format compute = Format::fp32;
    float alpha = 1.0f;
    AlphaPoint alpha_point = AlphaPoint::accumulator;
    std::int64_t batch_count() const { return outer_count * inner_count; }
};

// The (seq, head_dim) block of head h of sample s in a tensor of `width` columns whose rows are
// the batch's positions (sample-major: row s·seq + t) and whose columns [column, column +
// heads·head_dim) hold the heads side by side (a QKV tensor: column 0, dim or 2·dim): the view of
// matrix b = s·heads + h (outer_count = samples, inner_count = heads). transposed: the
// (head_dim, seq) view of the same values (Kᵀ).
inline StridedMatrix head_view(std::int64_t seq, std::int64_t width, std::int64_t column, std::int64_t head_dim,
                               bool transposed = false) {
    StridedMatrix v;
    v.offset = column;
    v.outer_stride = seq * width;
    v.inner_stride = head_dim;
    v.row_stride = transposed ? 1 : width;
    v.col_stride = transposed ? width : 1;
    return v;
}

// Matrices of (rows, cols) stored one after another (b-major), as the attention scores
// (batch·heads·T, T) are: the view of matrix b = outer·inner_count + inner. transposed: the
// (cols, rows) view of the same values.
inline StridedMatrix packed_view(std::int64_t rows, std::int64_t cols, std::int64_t inner_count,
                                 bool transposed = false) {
    StridedMatrix v;
    v.inner_stride = rows * cols;
    v.outer_stride = inner_count * rows * cols;
    v.row_stride = transposed ? 1 : cols;
    v.col_stride = transposed ? cols : 1;
    return v;
}

// What a softmax forward saw in its input (the unmasked entries only).
struct SoftmaxStats {
    float amax = 0;              // max |x| over the finite entries: the largest attention logit
    std::int64_t nonfinite = 0;  // entries that are inf or NaN
};

// Layer normalisation over the last dimension (PyTorch's LayerNorm(dim), elementwise affine):
// every row of x is one position. weight (γ), bias (β) and their gradients are (1, dim);
// saved_mean and saved_invstd hold one value per row ((rows, 1), rows at least the call's),
// written by the forward for the backward. All required. Statistics in FP32 (autocast's FP32
// list); the backend writes each tensor rounded to its format (FP32 ones keep the values).
struct LayerNormTensors {
    std::int64_t dim = 0;
    double eps = 1e-5;  // PyTorch's default
    Tensor* weight = nullptr;
    Tensor* bias = nullptr;
    Tensor* grad_weight = nullptr;
    Tensor* grad_bias = nullptr;
    Tensor* saved_mean = nullptr;
    Tensor* saved_invstd = nullptr;
};

// What a layer norm forward saw: the smallest biased variance of its rows (FP32), inf for no rows.
struct LayerNormStats {
    float min_variance = std::numeric_limits<float>::infinity();
};

}  // namespace mantissa
