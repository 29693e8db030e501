// See op_support.h.
#include "backend/cuda/op_support.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace mantissa::cuda {

std::string cuda_op_unsupported(BackendOp op, Format format, const Support& matmul, const std::string& gpu) {
    const std::string name(format_name(format));
    switch (op) {
        case BackendOp::linear:
        case BackendOp::conv2d: {
            const char* what = op == BackendOp::linear ? "linear layers" : "convolutions";
            if (op == BackendOp::conv2d && format == Format::fp8_e5m2)  // as the CPU backend
                return "The CUDA backend computes convolutions in fp32, tf32, fp16, bf16 or fp8-e4m3, not " + name +
                       "; choose one of those for the layer.";
            if (matmul.supported) return "";
            return "The CUDA backend cannot compute " + std::string(what) + " in " + name + " on " + gpu + ": " +
                   matmul.reason + "; choose another precision for them.";
        }
        case BackendOp::bmm: {
            if (format != Format::fp32 && format != Format::tf32 && format != Format::fp16 && format != Format::bf16)
                return "The CUDA backend computes batched matmuls in fp32, tf32, fp16 or bf16, not " + name +
                       "; choose one of those for the attention's products.";
            if (matmul.supported) return "";
            return "The CUDA backend cannot compute batched matmuls in " + name + " on " + gpu + ": " + matmul.reason +
                   "; choose another precision for them.";
        }
        case BackendOp::activation: return "";
        case BackendOp::block_scaled:
        case BackendOp::block_scaled_conv:
            // cuda_linear.cpp, cuda_conv.cpp: the operands rounded by kernels/block_operand.cuh into
            // bf16 values, multiplied by a bf16 GEMM (`matmul`: bf16's support on this GPU).
            if (matmul.supported) return "";
            return "The CUDA backend multiplies block-scaled operands (MX, NVFP4) as bf16 values, which " + gpu +
                   " cannot: " + matmul.reason + "; the CPU backend (backend: cpu) emulates them exactly.";
        case BackendOp::fp8_recipe: return "";  // current and rowwise: kernels/fp8_current.cuh
        case BackendOp::fp16_accumulation: return "";  // cuBLASLt's CUBLAS_COMPUTE_16F (cuda_linear.cpp)
        case BackendOp::stochastic_gradients:  // cuda_linear.cpp and cuda_conv.cpp, with device-drawn keys
        case BackendOp::stochastic_conv_gradients:
        case BackendOp::stochastic_weights:
        case BackendOp::kahan_updates: return "";  // the optimizer kernels (kernels/optimizer_update.cuh)
        // The statistics read the operands through the step pipeline, after the step (cuda_step_pipeline.h).
        case BackendOp::what_if: return "";
        case BackendOp::per_gemm: return "";       // cuda_linear.cpp: per_gemm_backward_operands
        case BackendOp::per_gemm_conv: return "";  // cuda_conv.cpp: per_gemm_conv_operands
        default: {
            if (format == Format::fp32 || format == Format::tf32 || format == Format::fp16 || format == Format::bf16)
                return "";
            return std::string("The CUDA backend runs ") + backend_op_name(op) +
                   " on fp32, tf32, fp16 or bf16 tensors, not " + name +
                   "; keep the layer's tensors in one of those formats.";
        }
    }
}

std::int64_t conv_chunk_samples(std::int64_t batch, std::int64_t positions, std::int64_t widest,
                                std::int64_t max_values) {
    if (batch <= 0) return 0;
    const std::int64_t per_sample = std::max<std::int64_t>(1, positions) * std::max<std::int64_t>(1, widest);
    std::int64_t n = std::clamp<std::int64_t>(max_values / per_sample, 1, batch);
    if (n == batch) return n;
    const std::int64_t step = 16 / std::gcd(std::max<std::int64_t>(1, positions), std::int64_t{16});
    if (n >= step) n -= n % step;
    return n;
}

// ---- batched matmul

std::optional<ColumnMajor> column_major(const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
    // N: the stored (rows, cols) matrix, element (i, j) at i + j·ld: a unit row stride, ld = cs.
    if (rows == 1 || v.row_stride == 1) {
        if (cols == 1) return ColumnMajor{false, std::max<std::int64_t>(rows, 1)};
        if (v.col_stride >= std::max<std::int64_t>(rows, 1)) return ColumnMajor{false, v.col_stride};
    }
    // T: the stored (cols, rows) matrix is the transpose: a unit column stride, ld = rs.
    if (cols == 1 || v.col_stride == 1) {
        if (rows == 1) return ColumnMajor{true, std::max<std::int64_t>(cols, 1)};
        if (v.row_stride >= std::max<std::int64_t>(cols, 1)) return ColumnMajor{true, v.row_stride};
    }
    return std::nullopt;
}

StridedMatrix plain_view(const BatchedMatmul& op, std::int64_t rows, std::int64_t cols) {
    StridedMatrix v;
    v.offset = 0;
    v.row_stride = cols;
    v.col_stride = 1;
    v.inner_stride = rows * cols;
    v.outer_stride = op.inner_count * rows * cols;
    return v;
}

namespace {

StridedMatrix transposed(StridedMatrix v) {
    std::swap(v.row_stride, v.col_stride);
    return v;
}

// The N form of a view (what D needs), or none.
std::optional<ColumnMajor> plain_d(const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
    std::optional<ColumnMajor> f = column_major(v, rows, cols);
    if (f && f->trans) return std::nullopt;
    return f;
}

// The one batch stride of a view when its matrices step evenly across both levels, else none.
std::optional<std::int64_t> flat_stride(const BatchedMatmul& op, const StridedMatrix& v) {
    if (op.outer_count == 1) return v.inner_stride;
    if (op.inner_count == 1) return v.outer_stride;
    if (v.outer_stride == op.inner_count * v.inner_stride) return v.inner_stride;
    return std::nullopt;
}

}  // namespace

BmmPlan plan_batched_matmul(const BatchedMatmul& op, const StridedMatrix& a, bool a_in_place, const StridedMatrix& b,
                            bool b_in_place, const StridedMatrix& c, bool c_direct) {
    BmmPlan p;
    // D: C itself when cuBLASLt may write its format and a form fits, else the plain workspace.
    StridedMatrix cv = c;
    bool c_plain = !c_direct || (!plain_d(c, op.m, op.n) && !plain_d(transposed(c), op.n, op.m));
    if (c_plain) cv = plain_view(op, op.m, op.n);
    p.swapped = !plain_d(cv, op.m, op.n);
    p.m = p.swapped ? op.n : op.m;
    p.n = p.swapped ? op.m : op.n;
    p.k = op.k;
    const StridedMatrix dv = p.swapped ? transposed(cv) : cv;
    p.d.plain = c_plain;
    p.d.layout = *plain_d(dv, p.m, p.n);

    // The operands as cuBLAS reads them: swapped, its A is Bᵀ (n × k) and its B is Aᵀ (k × m).
    auto operand = [&](bool from_b, StridedMatrix& used) {
        const std::int64_t rows = from_b ? op.k : op.m, cols = from_b ? op.n : op.k;
        auto form = [&](const StridedMatrix& v) {
            return p.swapped ? column_major(transposed(v), cols, rows) : column_major(v, rows, cols);
        };
        BmmMatrix mat;
        mat.from_b = from_b;
        used = from_b ? b : a;
        std::optional<ColumnMajor> f;
        if (from_b ? b_in_place : a_in_place) f = form(used);
        if (!f) {
            mat.plain = true;
            used = plain_view(op, rows, cols);
            f = form(used);
        }
        mat.layout = *f;
        return mat;
    };
    StridedMatrix used_a, used_b;
    p.a = operand(p.swapped, used_a);
    p.b = operand(!p.swapped, used_b);

    // The batch: one call when every matrix steps evenly, else one call per outer index.
    const std::optional<std::int64_t> fa = flat_stride(op, used_a), fb = flat_stride(op, used_b),
                                      fd = flat_stride(op, cv);
    auto place = [&](BmmMatrix& mat, const StridedMatrix& v, std::optional<std::int64_t> flat, bool one_call) {
        mat.offset = v.offset;
        mat.call_step = one_call ? 0 : v.outer_stride;
        mat.batch_stride = one_call ? *flat : v.inner_stride;
    };
    const bool one_call = fa && fb && fd;
    p.calls = one_call ? 1 : op.outer_count;
    p.batch = one_call ? op.batch_count() : op.inner_count;
    place(p.a, used_a, fa, one_call);
    place(p.b, used_b, fb, one_call);
    place(p.d, cv, fd, one_call);
    if (p.batch == 1) p.a.batch_stride = p.b.batch_stride = p.d.batch_stride = 0;
    return p;
}

}  // namespace mantissa::cuda
