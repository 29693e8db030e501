// CudaBackend's asynchronous step: the pieces of a training step that keep every decision on the
// device, so that a whole step can be captured as a CUDA graph and replayed without the host
// waiting inside it (no host synchronisation inside a step; docs/cuda.md):
//   softmax_cross_entropy_async  labels already on the device, loss scale read from the scaler
//   unscale_and_check_async      inv_scale read from the scaler, found_inf written to it
//   sgd/adamw_step_async         skip on found_inf; narrow gradients read x inv_scale
//   mse_async                    the same for regression (targets already on the device)
//   update_loss_scale_async      GradScaler's update, consuming found_inf
// Results (per-row losses, check results, update counts) stay in device buffers the caller
// copies out asynchronously and reads a step or two later.
// The synchronous Backend calls (cuda_ops.cpp) use the same kernels with host-side values.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "error.h"

namespace mantissa::cuda {

ScalerState* CudaBackend::create_scaler_state(const LossScalingSpec& spec) {
    activate();
    auto* st = static_cast<ScalerState*>(device_buffer(sizeof(ScalerState), "the loss scaler"));
    ScalerState init{};
    init.scale = spec.mode == LossScalingMode::off ? 1.0f : static_cast<float>(spec.init_scale);
    if (spec.mode == LossScalingMode::dynamic) {  // as LossScaler's constructor clamps
        if (spec.min_scale && init.scale < *spec.min_scale) init.scale = static_cast<float>(*spec.min_scale);
        if (spec.max_scale && init.scale > *spec.max_scale) init.scale = static_cast<float>(*spec.max_scale);
    }
    init.inv_scale =
        spec.mode == LossScalingMode::off ? 1.0f : static_cast<float>(1.0 / static_cast<double>(init.scale));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(st, &init, sizeof init, cudaMemcpyHostToDevice, m_stream));
    synchronize();  // `init` lives on this stack frame
    return st;
}

void CudaBackend::softmax_cross_entropy_async(const Tensor& logits, const std::int32_t* labels_device,
                                              std::int64_t batch, const ScalerState* scaler, Tensor* dlogits,
                                              float* row_loss, std::int32_t* row_correct) {
    activate();
    if (dlogits) written(*dlogits);
    launch_softmax_cross_entropy(cuda(logits).data(), code(logits.format()), batch, logits.cols(), labels_device,
                                 1.0f / static_cast<float>(batch), scaler ? &scaler->scale : nullptr,
                                 dlogits ? cuda(*dlogits).data() : nullptr, dlogits ? code(dlogits->format()) : 0,
                                 row_loss, row_correct, m_stream);
}

CudaBackend::CheckPlan CudaBackend::prepare_check(const std::vector<Tensor*>& grads,
                                                  const std::vector<bool>& want_summary) {
    activate();
    // The async path keeps no host-side multiplier (narrow gradients are read with the scaler's
    // inv_scale). One a synchronous step left on a gradient ends when the next backward rewrites
    // it, before this plan's check reads it, so it is not baked into the table.
    std::vector<CheckChunk> chunks = check_chunks(grads, want_summary);
    for (CheckChunk& c : chunks) c.multiplier = 1.0f;
    CheckPlan plan;
    plan.tensors = static_cast<int>(grads.size());
    plan.chunk_count = static_cast<int>(chunks.size());
    plan.chunks = static_cast<CheckChunk*>(
        device_buffer(std::max<std::size_t>(chunks.size() * sizeof(CheckChunk), 1), "the gradient check's table"));
    if (!chunks.empty())
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(plan.chunks, chunks.data(), chunks.size() * sizeof(CheckChunk),
                                            cudaMemcpyHostToDevice, m_stream));
    synchronize();  // `chunks` must outlive the copy
    return plan;
}

void CudaBackend::unscale_and_check_async(const CheckPlan& plan, ScalerState* scaler, CheckResult* results,
                                          int* first_bad) {
    activate();
    if (plan.tensors > 0)
        MANTISSA_CUDA_CHECK(
            cudaMemsetAsync(results, 0, static_cast<std::size_t>(plan.tensors) * sizeof(CheckResult), m_stream));
    launch_fill_bits(first_bad, 4, static_cast<std::uint32_t>(std::numeric_limits<int>::max()), 1, m_stream);
    launch_unscale_check(plan.chunks, plan.chunk_count, 1.0f, scaler ? &scaler->inv_scale : nullptr, results, first_bad,
                         scaler ? &scaler->found_inf : nullptr, m_stream);
}

void CudaBackend::sgd_step_async(const OptimizerTensors& t, const SgdParams& p, const ScalerState* scaler,
                                 unsigned long long* counts, const SgdScalars* scalars_dev) {
    activate();
    const CudaTensor& g = cuda(*t.grad);
    SgdScalars s{};
    s.lr = static_cast<float>(p.lr);
    s.weight_decay = static_cast<float>(p.weight_decay);
    s.momentum = static_cast<float>(p.momentum);
    s.first_step = p.first_step ? 1 : 0;
    const bool momentum = p.momentum != 0.0 && t.state1 != nullptr;
    // Narrow gradients after the async check: x inv_scale from the scaler (their bits are kept).
    const float* g_mul_dev = scaler && format_bytes(g.format()) != 4 ? &scaler->inv_scale : nullptr;
    const int* skip = scaler ? &scaler->found_inf : nullptr;
    launch_sgd(cuda(*t.param).data(), kahan_compensation(t), stochastic_key_for(t, skip), code(t.param->format()),
               g.data(), code(g.format()), g.multiplier(), g_mul_dev,
               momentum ? static_cast<float*>(cuda(*t.state1).data()) : nullptr, t.param->numel(), s, scalars_dev,
               counts, skip, m_stream);
}

void CudaBackend::adamw_step_async(const OptimizerTensors& t, const AdamWScalars* scalars, const ScalerState* scaler,
                                   unsigned long long* counts) {
    activate();
    const CudaTensor& g = cuda(*t.grad);
    const float* g_mul_dev = scaler && format_bytes(g.format()) != 4 ? &scaler->inv_scale : nullptr;
    const int* skip = scaler ? &scaler->found_inf : nullptr;
    launch_adamw(cuda(*t.param).data(), kahan_compensation(t), stochastic_key_for(t, skip), code(t.param->format()),
                 g.data(), code(g.format()), g.multiplier(), g_mul_dev, static_cast<float*>(cuda(*t.state1).data()),
                 static_cast<float*>(cuda(*t.state2).data()), t.param->numel(), AdamWScalars{}, scalars, counts, skip,
                 m_stream);
}

void CudaBackend::mse_async(const Tensor& y, const float* targets_device, std::int64_t batch,
                            const ScalerState* scaler, Tensor* dy, double* sum) {
    activate();
    if (dy) written(*dy);
    const std::int64_t n = batch * y.cols();
    launch_mse(cuda(y).data(), code(y.format()), targets_device, n, 2.0f / static_cast<float>(std::max<std::int64_t>(n, 1)),
               dy ? cuda(*dy).data() : nullptr, dy ? code(dy->format()) : 0, sum, m_stream,
               scaler ? &scaler->scale : nullptr);
}

void CudaBackend::update_loss_scale_async(ScalerState* scaler, const LossScalingSpec& spec) {
    activate();
    const float min_scale = spec.min_scale ? static_cast<float>(*spec.min_scale) : 0.0f;
    const float max_scale =
        spec.max_scale ? static_cast<float>(*spec.max_scale) : std::numeric_limits<float>::infinity();
    launch_loss_scale_update(scaler, static_cast<int>(spec.mode), spec.growth_factor, spec.backoff_factor,
                             static_cast<long long>(spec.growth_interval), min_scale, max_scale, m_stream);
}

}  // namespace mantissa::cuda
