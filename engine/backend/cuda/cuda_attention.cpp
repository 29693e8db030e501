// CudaBackend: the batched matmul of attention and the row softmax, forward and backward, with
// docs/numerics.md's rounding points ("Transformer ops").
//
// batched_matmul: strided-batched cuBLASLt calls with FP32 compute (LtMatmul), planned on the host
// by plan_batched_matmul (op_support.h, checked on the CPU by tests/engine/cuda_host):
//   - an operand is read in place through its view when its tensor holds compute-format values in
//     the compute format's storage and the view has a unit row or column stride (N or T, the
//     other stride the leading dimension); any other is packed into a plain copy rounded to the
//     compute format (kernels/batched_matmul.cuh), as the CPU packs;
//   - C is written directly when cuBLASLt may write its format (fused_output_ok: fp32, fp16, bf16
//     from matching operands) and its view has a unit stride (a unit column stride multiplies
//     Cᵀ = Bᵀ·Aᵀ); else the products go to an FP32 workspace and the epilogue kernel writes C;
//   - one call of outer·inner matrices when every view steps evenly across the two batch levels,
//     else one call of inner_count matrices per outer index (the heads of a packed QKV tensor).
// alpha: AlphaPoint::accumulator is cuBLASLt's alpha (C = rnd_C(alpha·acc), one rounding);
// AlphaPoint::output multiplies with alpha 1 into C's format, then the epilogue kernel computes
// C = rnd_C(alpha·C) in FP32. From the workspace the epilogue does either. k = 0: C = rnd(alpha·0).
// When cuBLASLt has no algorithm (a shape, an alignment or a batch it refuses), the reference
// kernel computes every element through the views (FP32 sums in l order): slower, same rounding
// points. Only the FP32 summation order differs from the CPU.
//
// softmax: one warp per row (kernels/softmax.cuh). The statistics are an op's result returned in
// the caller's struct, so a forward asked for them waits for the stream (a synchronous read of
// 16 bytes); without them nothing waits.
// Training thread only. The references: cpu/cpu_attention.cpp.
#include <cstdint>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/matmul_types.h"
#include "backend/cuda/op_support.h"

namespace mantissa::cuda {

namespace {

ViewLaunch launch_of(const BatchedMatmul& op, const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
    return {v.offset, v.outer_stride, v.inner_stride, v.row_stride, v.col_stride, op.inner_count, rows, cols};
}

// The largest power of two (at most 256, cuBLASLt's default) that every matrix pointer of `mat`
// in `plan` is a multiple of, in bytes.
int alignment_of(const void* base, int bytes, const BmmMatrix& mat, const BmmPlan& plan) {
    auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(base)) +
                   static_cast<std::uint64_t>(mat.offset) * static_cast<std::uint64_t>(bytes);
    if (plan.calls > 1) address |= static_cast<std::uint64_t>(mat.call_step) * static_cast<std::uint64_t>(bytes);
    if (plan.batch > 1) address |= static_cast<std::uint64_t>(mat.batch_stride) * static_cast<std::uint64_t>(bytes);
    int align = 256;
    while (align > 1 && address % static_cast<std::uint64_t>(align) != 0) align /= 2;
    return align;
}

const char* byte_pointer(const void* p, std::int64_t elements, int bytes) {
    return static_cast<const char*>(p) + elements * bytes;
}

}  // namespace

// ---- batched matmul

bool CudaBackend::run_batched_matmul(const BatchedMatmul& op, const BmmPlan& plan, const CudaTensor& a,
                                     const StridedMatrix& a_view, const CudaTensor& b, const StridedMatrix& b_view,
                                     CudaTensor& c, const StridedMatrix& c_view) {
    if (plan.batch > std::numeric_limits<std::int32_t>::max()) return false;  // cuBLASLt counts in int32
    const std::int64_t batch = op.batch_count();
    const cudaDataType_t op_type = operand_type(op.compute);
    const int op_bytes = format_bytes(op.compute);

    // The buffer each cuBLAS operand reads: the tensor, or its packed copy.
    auto buffer = [&](const BmmMatrix& mat, Slot slot) -> const void* {
        const CudaTensor& t = mat.from_b ? b : a;
        if (!mat.plain) return t.data();
        const std::int64_t rows = mat.from_b ? op.k : op.m, cols = mat.from_b ? op.n : op.k;
        void* buf = scratch(slot, static_cast<std::size_t>(batch * rows * cols) * static_cast<std::size_t>(op_bytes));
        launch_batched_matmul_pack(t.data(), code(t.format()), launch_of(op, mat.from_b ? b_view : a_view, rows, cols),
                                   batch, buf, code(op.compute), m_stream);
        return buf;
    };
    const void* a_buf = buffer(plan.a, slot_bmm_a);
    const void* b_buf = buffer(plan.b, slot_bmm_b);
    void* d_buf = plan.d.plain ? scratch(slot_bmm_c, static_cast<std::size_t>(batch * op.m * op.n) * sizeof(float))
                               : c.data();
    const int d_bytes = plan.d.plain ? 4 : format_bytes(c.format());
    const int a_bytes = plan.a.plain ? op_bytes : format_bytes((plan.a.from_b ? b : a).format());
    const int b_bytes = plan.b.plain ? op_bytes : format_bytes((plan.b.from_b ? b : a).format());

    MatmulCall call;
    call.m = plan.m;
    call.n = plan.n;
    call.k = plan.k;
    call.a_type = op_type;
    call.trans_a = plan.a.layout.trans;
    call.lda = plan.a.layout.ld;
    call.b_type = op_type;
    call.trans_b = plan.b.layout.trans;
    call.ldb = plan.b.layout.ld;
    call.d_type = plan.d.plain ? CUDA_R_32F : storage_type(c.format());
    call.ldd = plan.d.layout.ld;
    call.compute = compute_type(op.compute);
    call.batch = plan.batch;
    call.stride_a = plan.a.batch_stride;
    call.stride_b = plan.b.batch_stride;
    call.stride_d = plan.d.batch_stride;
    // Written straight into C: alpha is cuBLASLt's at the accumulator, else applied by the epilogue.
    call.alpha = !plan.d.plain && op.alpha_point == AlphaPoint::accumulator ? op.alpha : 1.0f;
    call.align_a = alignment_of(a_buf, a_bytes, plan.a, plan);
    call.align_b = alignment_of(b_buf, b_bytes, plan.b, plan);
    call.align_d = alignment_of(d_buf, d_bytes, plan.d, plan);
    for (std::int64_t i = 0; i < plan.calls; ++i) {
        call.a = byte_pointer(a_buf, plan.a.offset + i * plan.a.call_step, a_bytes);
        call.b = byte_pointer(b_buf, plan.b.offset + i * plan.b.call_step, b_bytes);
        call.d = const_cast<char*>(byte_pointer(d_buf, plan.d.offset + i * plan.d.call_step, d_bytes));
        if (!m_matmul->run(call, m_stream)) return false;  // the reference kernel rewrites all of C
    }

    const bool round_first = op.alpha_point == AlphaPoint::output && op.alpha != 1.0f;
    if (plan.d.plain)
        launch_batched_matmul_epilogue(static_cast<const float*>(d_buf), false, op.alpha, round_first,
                                       launch_of(op, c_view, op.m, op.n), batch, c.data(), code(c.format()), m_stream);
    else if (round_first)
        launch_batched_matmul_epilogue(nullptr, true, op.alpha, true, launch_of(op, c_view, op.m, op.n), batch,
                                       c.data(), code(c.format()), m_stream);
    return true;
}

void CudaBackend::batched_matmul_impl(const BatchedMatmul& op, const Tensor& a_in, const StridedMatrix& a_view,
                                      const Tensor& b_in, const StridedMatrix& b_view, Tensor& c_out,
                                      const StridedMatrix& c_view) {
    const std::int64_t batch = op.batch_count();
    if (batch == 0 || op.m == 0 || op.n == 0) return;
    activate();
    CudaTensor& c = cuda(c_out);
    fold_multiplier(c);  // C's view may cover part of it
    const bool round_first = op.alpha_point == AlphaPoint::output && op.alpha != 1.0f;
    const ViewLaunch c_launch = launch_of(op, c_view, op.m, op.n);
    if (op.k == 0) {  // an empty sum: the accumulator is +0
        launch_batched_matmul_epilogue(nullptr, false, op.alpha, round_first, c_launch, batch, c.data(),
                                       code(c.format()), m_stream);
        return;
    }
    const CudaTensor& a = cuda(a_in);
    const CudaTensor& b = cuda(b_in);
    require_plain(a, "batched_matmul");
    require_plain(b, "batched_matmul");
    const cudaDataType_t op_type = operand_type(op.compute);
    auto in_place = [&](const CudaTensor& t) {
        return storage_type(t.format()) == op_type && format_contains(op.compute, t.format());
    };
    const BmmPlan plan =
        plan_batched_matmul(op, a_view, in_place(a), b_view, in_place(b), c_view, fused_output_ok(op_type, c.format()));
    if (run_batched_matmul(op, plan, a, a_view, b, b_view, c, c_view)) return;
    launch_batched_matmul_reference(a.data(), code(a.format()), launch_of(op, a_view, op.m, op.k), b.data(),
                                    code(b.format()), launch_of(op, b_view, op.k, op.n), op.k, code(op.compute),
                                    op.alpha, round_first, c.data(), code(c.format()), c_launch, batch, m_stream);
}

// ---- softmax

void CudaBackend::softmax_forward_impl(const Tensor& x, Tensor& y, std::int64_t rows, bool causal,
                                       SoftmaxStats* stats) {
    activate();
    require_plain(x, "softmax_forward");
    written(y);
    SoftmaxStatsDevice* dev = nullptr;
    if (stats) {
        dev = static_cast<SoftmaxStatsDevice*>(scratch(slot_op_stats, sizeof(SoftmaxStatsDevice)));
        MANTISSA_CUDA_CHECK(cudaMemsetAsync(dev, 0, sizeof(SoftmaxStatsDevice), m_stream));
    }
    launch_softmax_forward(cuda(x).data(), code(x.format()), cuda(y).data(), code(y.format()), rows, x.cols(), causal,
                           dev, m_stream);
    if (!stats) return;
    // The statistics are returned in the caller's struct: read them now (the one wait of the op).
    auto* host = static_cast<SoftmaxStatsDevice*>(host_scratch(sizeof(SoftmaxStatsDevice)));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, dev, sizeof(SoftmaxStatsDevice), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    stats->amax = float_of(host->amax_bits);
    stats->nonfinite = static_cast<std::int64_t>(host->nonfinite);
}

void CudaBackend::softmax_backward_impl(const Tensor& y, const Tensor& dy, Tensor& dx, std::int64_t rows, bool causal,
                                        float scale) {
    activate();
    require_plain(y, "softmax_backward");
    require_plain(dy, "softmax_backward");
    written(dx);
    launch_softmax_backward(cuda(y).data(), code(y.format()), cuda(dy).data(), code(dy.format()), cuda(dx).data(),
                            code(dx.format()), rows, y.cols(), causal, scale, m_stream);
}

}  // namespace mantissa::cuda
