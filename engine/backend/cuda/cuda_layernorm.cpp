// CudaBackend: layer normalisation over the last dimension, forward and backward, on the kernels
// of kernels/layernorm.cuh (one warp per row; the parameters' gradients as deterministic two-pass
// column sums in double). The forward's smallest variance is an op result returned in the
// caller's LayerNormStats, so a forward asked for it waits for the stream (a synchronous read of 4
// bytes); without it nothing waits. Training thread only. The reference: cpu/cpu_layernorm.cpp.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"

namespace mantissa::cuda {

namespace {

LayerNormLaunch launch_of(const LayerNormTensors& ln, std::int64_t rows) {
    LayerNormLaunch l{};
    l.rows = rows;
    l.dim = ln.dim;
    l.eps = ln.eps;
    l.weight = cuda(*ln.weight).data();
    l.weight_fmt = code(ln.weight->format());
    l.bias = cuda(*ln.bias).data();
    l.bias_fmt = code(ln.bias->format());
    l.grad_weight = cuda(*ln.grad_weight).data();
    l.grad_weight_fmt = code(ln.grad_weight->format());
    l.grad_bias = cuda(*ln.grad_bias).data();
    l.grad_bias_fmt = code(ln.grad_bias->format());
    l.saved_mean = cuda(*ln.saved_mean).data();
    l.saved_mean_fmt = code(ln.saved_mean->format());
    l.saved_invstd = cuda(*ln.saved_invstd).data();
    l.saved_invstd_fmt = code(ln.saved_invstd->format());
    return l;
}

constexpr unsigned int infinity_bits = 0x7f800000u;

}  // namespace

void CudaBackend::layernorm_forward_impl(LayerNormTensors& ln, const Tensor& x, Tensor& y, std::int64_t rows,
                                         LayerNormStats* stats) {
    activate();
    for (const Tensor* t : {&x, static_cast<const Tensor*>(ln.weight), static_cast<const Tensor*>(ln.bias)})
        require_plain(*t, "layernorm_forward");
    written(y);
    written(*ln.saved_mean);
    written(*ln.saved_invstd);
    unsigned int* dev = nullptr;
    if (stats) {
        dev = static_cast<unsigned int*>(scratch(slot_op_stats, sizeof(unsigned int)));
        launch_fill_bits(dev, 4, infinity_bits, 1, m_stream);
    }
    launch_layernorm_forward(launch_of(ln, rows), cuda(x).data(), code(x.format()), cuda(y).data(), code(y.format()),
                             dev, m_stream);
    if (!stats) return;
    // Returned in the caller's struct: read it now (the one wait of the op).
    auto* host = static_cast<unsigned int*>(host_scratch(sizeof(unsigned int)));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, dev, sizeof(unsigned int), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    stats->min_variance = float_of(*host);
}

void CudaBackend::layernorm_backward_impl(LayerNormTensors& ln, const Tensor& x, const Tensor& dy, Tensor& dx,
                                          std::int64_t rows) {
    activate();
    for (const Tensor* t : {&x, &dy, static_cast<const Tensor*>(ln.weight), static_cast<const Tensor*>(ln.saved_mean),
                            static_cast<const Tensor*>(ln.saved_invstd)})
        require_plain(*t, "layernorm_backward");
    written(dx);
    written(*ln.grad_weight);
    written(*ln.grad_bias);
    const std::int64_t doubles = layernorm_partial_doubles(rows, ln.dim);
    auto* partial = doubles > 0 ? static_cast<double*>(scratch(slot_ln_partial,
                                                               static_cast<std::size_t>(doubles) * sizeof(double)))
                                : nullptr;
    launch_layernorm_backward(launch_of(ln, rows), cuda(x).data(), code(x.format()), cuda(dy).data(),
                              code(dy.format()), cuda(dx).data(), code(dx.format()), partial, m_stream);
}

}  // namespace mantissa::cuda
