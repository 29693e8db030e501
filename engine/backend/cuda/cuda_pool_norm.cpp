// CudaBackend: the pools, batch norm and add, on the kernels of kernels/pool.cuh and
// kernels/batchnorm.cuh. Arguments are checked by Backend's wrappers (backend_checks.cpp); here
// the inputs must hold plain values (no pending gradient multiplier) and every output is written
// whole for rows [0, batch). Nothing waits for the stream, so a captured step records them.
// The references: cpu/cpu_pool.cpp, cpu/cpu_batchnorm.cpp, cpu/cpu_elementwise.cpp (add).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_tensor_access.h"

namespace mantissa::cuda {

namespace {

PoolLaunch launch_of(const Pool2dGeometry& p) {
    return {p.channels, p.in_h, p.in_w, p.kernel, p.stride, p.padding, p.out_h(), p.out_w()};
}

}  // namespace

void CudaBackend::maxpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) {
    activate();
    require_plain(x, "maxpool2d_forward");
    written(y);
    launch_maxpool_forward(launch_of(pool), cuda(x).data(), code(x.format()), cuda(y).data(), code(y.format()), batch,
                           m_stream);
}

// y is not read: each window's maximum is found again from x, as the CPU does.
void CudaBackend::maxpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& x, const Tensor& /*y*/,
                                          const Tensor& dy, Tensor& dx, std::int64_t batch) {
    activate();
    require_plain(x, "maxpool2d_backward");
    require_plain(dy, "maxpool2d_backward");
    written(dx);
    launch_maxpool_backward(launch_of(pool), cuda(x).data(), code(x.format()), cuda(dy).data(), code(dy.format()),
                            cuda(dx).data(), code(dx.format()), batch, m_stream);
}

void CudaBackend::avgpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) {
    activate();
    require_plain(x, "avgpool2d_forward");
    written(y);
    launch_avgpool_forward(launch_of(pool), cuda(x).data(), code(x.format()), cuda(y).data(), code(y.format()), batch,
                           m_stream);
}

void CudaBackend::avgpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx,
                                          std::int64_t batch) {
    activate();
    require_plain(dy, "avgpool2d_backward");
    written(dx);
    launch_avgpool_backward(launch_of(pool), cuda(dy).data(), code(dy.format()), cuda(dx).data(), code(dx.format()),
                            batch, m_stream);
}

void CudaBackend::global_avgpool_forward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& x, Tensor& y,
                                              std::int64_t batch) {
    activate();
    require_plain(x, "global_avgpool_forward");
    written(y);
    launch_global_avgpool_forward(cuda(x).data(), code(x.format()), batch * channels, spatial, cuda(y).data(),
                                  code(y.format()), m_stream);
}

void CudaBackend::global_avgpool_backward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& dy,
                                               Tensor& dx, std::int64_t batch) {
    activate();
    require_plain(dy, "global_avgpool_backward");
    written(dx);
    launch_global_avgpool_backward(cuda(dy).data(), code(dy.format()), batch * channels, spatial, cuda(dx).data(),
                                   code(dx.format()), m_stream);
}

namespace {

BatchNormLaunch launch_of(const BatchNormTensors& bn, std::int64_t batch) {
    BatchNormLaunch b{};
    b.batch = batch;
    b.channels = bn.channels;
    b.spatial = bn.spatial;
    b.momentum = bn.momentum;
    b.eps = bn.eps;
    b.weight = cuda(*bn.weight).data();
    b.weight_fmt = code(bn.weight->format());
    b.bias = cuda(*bn.bias).data();
    b.bias_fmt = code(bn.bias->format());
    b.running_mean = cuda(*bn.running_mean).data();
    b.running_mean_fmt = code(bn.running_mean->format());
    b.running_var = cuda(*bn.running_var).data();
    b.running_var_fmt = code(bn.running_var->format());
    b.saved_mean = cuda(*bn.saved_mean).data();
    b.saved_mean_fmt = code(bn.saved_mean->format());
    b.saved_invstd = cuda(*bn.saved_invstd).data();
    b.saved_invstd_fmt = code(bn.saved_invstd->format());
    b.grad_weight = cuda(*bn.grad_weight).data();
    b.grad_weight_fmt = code(bn.grad_weight->format());
    b.grad_bias = cuda(*bn.grad_bias).data();
    b.grad_bias_fmt = code(bn.grad_bias->format());
    return b;
}

}  // namespace

void CudaBackend::batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x, Tensor& y, std::int64_t batch,
                                           bool training) {
    activate();
    require_plain(x, "batchnorm2d_forward");
    for (const Tensor* t : {bn.weight, bn.bias, bn.running_mean, bn.running_var})
        require_plain(*t, "batchnorm2d_forward");
    written(y);
    if (training)
        for (Tensor* t : {bn.running_mean, bn.running_var, bn.saved_mean, bn.saved_invstd}) written(*t);
    launch_batchnorm_forward(launch_of(bn, batch), cuda(x).data(), code(x.format()), cuda(y).data(), code(y.format()),
                             training, m_stream);
}

void CudaBackend::batchnorm2d_backward_impl(BatchNormTensors& bn, const Tensor& x, const Tensor& dy, Tensor& dx,
                                            std::int64_t batch) {
    activate();
    for (const Tensor* t : {&x, &dy, static_cast<const Tensor*>(bn.weight), static_cast<const Tensor*>(bn.saved_mean),
                            static_cast<const Tensor*>(bn.saved_invstd)})
        require_plain(*t, "batchnorm2d_backward");
    written(dx);
    written(*bn.grad_weight);
    written(*bn.grad_bias);
    launch_batchnorm_backward(launch_of(bn, batch), cuda(x).data(), code(x.format()), cuda(dy).data(),
                              code(dy.format()), cuda(dx).data(), code(dx.format()), m_stream);
}

void CudaBackend::add_impl(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch) {
    activate();
    require_plain(a, "add");
    require_plain(b, "add");
    written(y);
    launch_add(cuda(a).data(), code(a.format()), cuda(b).data(), code(b.format()), cuda(y).data(), code(y.format()),
               batch * y.cols(), m_stream);
}

}  // namespace mantissa::cuda
