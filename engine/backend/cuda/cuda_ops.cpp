// CudaBackend: activations, losses, the fused unscale + check, and the optimizers: argument checks
// (the CPU backend's messages; those of the activations and losses are Backend's wrappers',
// backend_checks.cpp), then the kernels of kernels/. The calls that return host values
// wait for the stream once, after every kernel of the call.
// The references: cpu/cpu_elementwise.cpp, cpu/cpu_gradients.cpp, cpu/cpu_optimizer.cpp.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/optimizer_update.cuh"
#include "backend/cuda/op_support.h"
#include "error.h"

namespace mantissa::cuda {

void check_weight_rounding(const OptimizerTensors& t) {
    if (t.rounding != WeightRounding::kahan || !t.param || t.param->format() == Format::fp32) return;
    if (!t.compensation || t.compensation->numel() != t.param->numel() ||
        t.compensation->format() != t.param->format())
        throw Error("Kahan-compensated update of " + t.param->desc().name +
                    ": its compensation must be given, of its size and format.");
}

void* kahan_compensation(const OptimizerTensors& t) {
    if (t.rounding != WeightRounding::kahan || !t.param || t.param->format() == Format::fp32 || !t.compensation)
        return nullptr;
    return cuda(*t.compensation).data();
}

namespace {

void check_optimizer_tensors(const OptimizerTensors& t, bool need1, bool need2, const char* op) {
    if (!t.param || !t.grad || t.param->numel() != t.grad->numel())
        throw Error(std::string(op) + ": the parameter and its gradient must be given, of one size.");
    if ((need1 && (!t.state1 || t.state1->numel() != t.param->numel())) ||
        (need2 && (!t.state2 || t.state2->numel() != t.param->numel())))
        throw Error(std::string(op) + ": the optimizer state of " + t.param->desc().name +
                    " is missing or of the wrong size.");
    for (const Tensor* s : {static_cast<const Tensor*>(t.state1), static_cast<const Tensor*>(t.state2)})
        if (s && s->format() != Format::fp32)
            throw Error(std::string(op) + ": the optimizer state " + s->desc().name + " must be fp32 (it is " +
                        std::string(format_name(s->format())) + ").");
    check_weight_rounding(t);
}

// The kernels' constants are the engine's.
static_assert(histogram_bins == ExponentHistogram::bins && histogram_min_exponent == ExponentHistogram::min_exponent,
              "the fused check's histogram must be telemetry's ExponentHistogram");
static_assert(fmt_fp32 == static_cast<int>(Format::fp32) && fmt_tf32 == static_cast<int>(Format::tf32) &&
                  fmt_fp16 == static_cast<int>(Format::fp16) && fmt_bf16 == static_cast<int>(Format::bf16) &&
                  fmt_e4m3 == static_cast<int>(Format::fp8_e4m3) && fmt_e5m2 == static_cast<int>(Format::fp8_e5m2),
              "kernel format codes must be mantissa::Format's values");
static_assert(static_cast<int>(Activation::relu) == 0 && static_cast<int>(Activation::gelu) == 1 &&
                  static_cast<int>(Activation::tanh) == 2,
              "activation codes (activation.cuh)");
static_assert(static_cast<int>(LossScalingMode::off) == 0 && static_cast<int>(LossScalingMode::fixed) == 1 &&
                  static_cast<int>(LossScalingMode::dynamic) == 2,
              "loss scaling modes (loss_scale.cuh)");
static_assert(static_cast<int>(AmaxAlgo::max) == 0, "amax algorithms (fp8_scaling.cuh)");

}  // namespace

// ---- activations

void CudaBackend::activation_forward_impl(Activation act, const Tensor& z, Tensor& a, std::int64_t batch) {
    activate();
    require_plain(z, "activation_forward");
    written(a);
    launch_activation_forward(static_cast<int>(act), cuda(z).data(), code(z.format()), cuda(a).data(), code(a.format()),
                              batch * z.cols(), m_stream);
}

void CudaBackend::activation_backward_impl(Activation act, const Tensor& z, const Tensor& a, const Tensor& da,
                                           Tensor& dz, std::int64_t batch) {
    activate();
    require_plain(z, "activation_backward");
    require_plain(a, "activation_backward");
    require_plain(da, "activation_backward");
    written(dz);
    launch_activation_backward(static_cast<int>(act), cuda(z).data(), code(z.format()), cuda(a).data(),
                               code(a.format()), cuda(da).data(), code(da.format()), cuda(dz).data(), code(dz.format()),
                               batch * z.cols(), m_stream);
}

// ---- losses

LossResult CudaBackend::softmax_cross_entropy_impl(const Tensor& logits, const std::int32_t* labels,
                                                   std::int64_t batch, float loss_scale, Tensor* dlogits) {
    LossResult result;
    if (batch == 0) return result;
    const std::int64_t classes = logits.cols();
    activate();
    require_plain(logits, "softmax_cross_entropy");
    if (dlogits) written(*dlogits);
    const auto label_bytes = static_cast<std::size_t>(batch) * sizeof(std::int32_t);
    auto* dev_labels = static_cast<std::int32_t*>(scratch(slot_labels, label_bytes));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(dev_labels, labels, label_bytes, cudaMemcpyHostToDevice, m_stream));
    const auto row_bytes = static_cast<std::size_t>(batch) * (sizeof(float) + sizeof(std::int32_t));
    auto* rows = static_cast<unsigned char*>(scratch(slot_rows, row_bytes));
    auto* row_loss = reinterpret_cast<float*>(rows);
    auto* row_correct = reinterpret_cast<std::int32_t*>(rows + static_cast<std::size_t>(batch) * sizeof(float));
    const float grad_factor = loss_scale / static_cast<float>(batch);
    launch_softmax_cross_entropy(cuda(logits).data(), code(logits.format()), batch, classes, dev_labels, grad_factor,
                                 nullptr, dlogits ? cuda(*dlogits).data() : nullptr,
                                 dlogits ? code(dlogits->format()) : 0, row_loss, row_correct, m_stream);
    auto* host = static_cast<unsigned char*>(host_scratch(row_bytes));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, rows, row_bytes, cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    const auto* loss = reinterpret_cast<const float*>(host);
    const auto* correct = reinterpret_cast<const std::int32_t*>(host + static_cast<std::size_t>(batch) * sizeof(float));
    double total = 0;  // in row order, as the CPU sums
    for (std::int64_t r = 0; r < batch; ++r) {
        total += static_cast<double>(loss[r]);
        result.correct += correct[r];
    }
    result.loss = static_cast<double>(static_cast<float>(total / static_cast<double>(batch)));
    return result;
}

LossResult CudaBackend::mse_impl(const Tensor& y, const float* targets, std::int64_t batch, float loss_scale,
                                 Tensor* dy) {
    LossResult result;
    const std::int64_t n = batch * y.cols();
    if (n == 0) return result;
    activate();
    require_plain(y, "mse");
    if (dy) written(*dy);
    const auto target_bytes = static_cast<std::size_t>(n) * sizeof(float);
    auto* dev_targets = static_cast<float*>(scratch(slot_staging, target_bytes));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(dev_targets, targets, target_bytes, cudaMemcpyHostToDevice, m_stream));
    auto* sum = static_cast<double*>(scratch(slot_results, sizeof(double)));
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(double), m_stream));
    const float grad_factor = 2.0f * loss_scale / static_cast<float>(n);
    launch_mse(cuda(y).data(), code(y.format()), dev_targets, n, grad_factor, dy ? cuda(*dy).data() : nullptr,
               dy ? code(dy->format()) : 0, sum, m_stream);
    auto* host = static_cast<double*>(host_scratch(sizeof(double)));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, sum, sizeof(double), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    result.loss = static_cast<double>(static_cast<float>(*host / static_cast<double>(n)));
    return result;
}

// ---- gradients

std::vector<CheckChunk> CudaBackend::check_chunks(const std::vector<Tensor*>& grads,
                                                  const std::vector<bool>& want_summary) const {
    // One block per chunk: small enough that a small model's few gradients still fill the GPU
    // (about 4 blocks per multiprocessor), large enough that a block's fixed cost (its histogram
    // in shared memory, its reductions) is spread over many elements.
    std::int64_t total = 0;
    for (const Tensor* t : grads) total += t->numel();
    const std::int64_t per_block = total / (4 * std::max(1, m_multiprocessors));
    const std::int64_t chunk = std::clamp<std::int64_t>((per_block + 1023) / 1024 * 1024, 2048, 65536);
    std::vector<CheckChunk> chunks;
    for (std::size_t t = 0; t < grads.size(); ++t) {
        const CudaTensor& g = cuda(*grads[t]);
        for (std::int64_t begin = 0; begin < g.numel(); begin += chunk) {
            CheckChunk c{};
            c.data = g.data();
            c.begin = begin;
            c.end = std::min(g.numel(), begin + chunk);
            c.tensor = static_cast<int>(t);
            c.fmt = code(g.format());
            c.multiplier = g.multiplier();
            c.write_back = format_bytes(g.format()) == 4 ? 1 : 0;  // narrower: a multiplier (CudaTensor)
            c.want_summary = t < want_summary.size() && want_summary[t] ? 1 : 0;
            chunks.push_back(c);
        }
    }
    return chunks;
}

UnscaleResult CudaBackend::unscale_and_check(const std::vector<Tensor*>& grads, float inv_scale,
                                             const std::vector<bool>& want_summary,
                                             std::vector<GradientSummary>* summaries) {
    if (summaries) {
        if (want_summary.size() != grads.size())
            throw Error("unscale_and_check: want_summary must have one flag per gradient.");
        summaries->resize(grads.size());
    }
    UnscaleResult result;
    if (grads.empty()) return result;
    activate();

    const std::vector<CheckChunk> chunks = check_chunks(grads, summaries ? want_summary : std::vector<bool>{});
    const std::size_t results_bytes = grads.size() * sizeof(CheckResult);
    const std::size_t chunk_bytes = chunks.size() * sizeof(CheckChunk);
    auto* dev = static_cast<unsigned char*>(scratch(slot_results, results_bytes + sizeof(int)));
    auto* dev_results = reinterpret_cast<CheckResult*>(dev);
    auto* dev_first = reinterpret_cast<int*>(dev + results_bytes);
    auto* dev_chunks = static_cast<CheckChunk*>(scratch(slot_chunks, std::max<std::size_t>(chunk_bytes, 1)));
    // The pinned buffer: chunks going up, then results coming down.
    auto* host = static_cast<unsigned char*>(host_scratch(std::max(chunk_bytes, results_bytes + sizeof(int))));
    if (!chunks.empty()) {
        std::memcpy(host, chunks.data(), chunk_bytes);
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(dev_chunks, host, chunk_bytes, cudaMemcpyHostToDevice, m_stream));
    }
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(dev_results, 0, results_bytes, m_stream));
    launch_fill_bits(dev_first, 4, static_cast<std::uint32_t>(INT_MAX), 1, m_stream);
    launch_unscale_check(dev_chunks, static_cast<int>(chunks.size()), inv_scale, nullptr, dev_results, dev_first,
                         nullptr, m_stream);
    // The copy below waits for the kernel, which waits for the chunk upload: the pinned buffer
    // can be reused for the results.
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(host, dev, results_bytes + sizeof(int), cudaMemcpyDeviceToHost, m_stream));
    synchronize();

    // Narrow gradients keep their bits and take the multiplier (see CudaTensor).
    if (inv_scale != 1.0f)
        for (Tensor* t : grads) {
            CudaTensor& g = cuda(*t);
            if (format_bytes(g.format()) != 4) g.m_multiplier *= inv_scale;
        }
    const auto* res = reinterpret_cast<const CheckResult*>(host);
    int first = INT_MAX;
    std::memcpy(&first, host + results_bytes, sizeof first);
    for (std::size_t t = 0; t < grads.size(); ++t) {
        result.sum_squares += res[t].sum_squares;
        if (summaries && want_summary[t]) {
            GradientSummary& s = (*summaries)[t];
            s = GradientSummary{};
            float amax;
            std::memcpy(&amax, &res[t].amax_bits, sizeof amax);
            s.amax = static_cast<double>(amax);
            s.nonfinite = static_cast<std::int64_t>(res[t].nonfinite);
            for (int b = 0; b < histogram_bins; ++b)
                s.exponents.counts[static_cast<std::size_t>(b)] = res[t].histogram[b];
        }
    }
    if (first != INT_MAX) {
        result.found_nonfinite = true;
        result.first_nonfinite = first;
    }
    return result;
}

// ---- optimizers

void CudaBackend::seed_stochastic_rounding(std::uint64_t seed) {
    m_stochastic_seed = seed;
    set_stochastic_rounding_position(0);
}

std::uint64_t CudaBackend::stochastic_rounding_position() const {
    if (!m_stochastic_words) return 0;  // nothing drawn yet, nothing set
    activate();
    std::uint64_t position = 0;
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(&position, m_stochastic_words, sizeof position, cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    return position;
}

void CudaBackend::set_stochastic_rounding_position(std::uint64_t position) {
    activate();
    if (!m_stochastic_words) {
        m_stochastic_words = static_cast<std::uint64_t*>(
            device_buffer(2 * sizeof(std::uint64_t), "the stochastic rounding position"));
        MANTISSA_CUDA_CHECK(cudaMemsetAsync(m_stochastic_words, 0, 2 * sizeof(std::uint64_t), m_stream));
    }
    // From a stack value: wait for the copy before it goes.
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(m_stochastic_words, &position, sizeof position, cudaMemcpyHostToDevice, m_stream));
    synchronize();
}

const std::uint64_t* CudaBackend::draw_stochastic_key(const int* skip) {
    if (!m_stochastic_words) set_stochastic_rounding_position(0);
    launch_draw_stochastic_key(m_stochastic_words, m_stochastic_seed, skip, m_stream);
    return m_stochastic_words + 1;
}

const std::uint64_t* CudaBackend::stochastic_key_for(const OptimizerTensors& t, const int* skip) {
    if (t.rounding != WeightRounding::stochastic || !t.param || t.param->format() == Format::fp32) return nullptr;
    return draw_stochastic_key(skip);
}

UpdateCounts CudaBackend::sgd_step(const OptimizerTensors& t, const SgdParams& p) {
    const bool momentum = p.momentum != 0.0f;
    check_optimizer_tensors(t, momentum, false, "sgd_step");
    activate();
    require_plain(*t.param, "sgd_step");
    auto* counts = static_cast<unsigned long long*>(scratch(slot_results, 2 * sizeof(unsigned long long)));
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * sizeof(unsigned long long), m_stream));
    sgd_step_async(t, p, nullptr, counts);
    auto* host = static_cast<unsigned long long*>(host_scratch(2 * sizeof(unsigned long long)));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(host, counts, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    return {static_cast<std::int64_t>(host[0]), static_cast<std::int64_t>(host[1])};
}

UpdateCounts CudaBackend::adamw_step(const OptimizerTensors& t, const AdamWParams& a) {
    check_optimizer_tensors(t, true, true, "adamw_step");
    if (a.step < 1) throw Error("adamw_step: the step count must start at 1.");
    activate();
    require_plain(*t.param, "adamw_step");
    const AdamWScalars s = adamw_scalars(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.step);
    auto* counts = static_cast<unsigned long long*>(scratch(slot_results, 2 * sizeof(unsigned long long)));
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * sizeof(unsigned long long), m_stream));
    const CudaTensor& g = cuda(*t.grad);
    launch_adamw(cuda(*t.param).data(), kahan_compensation(t), stochastic_key_for(t, nullptr),
                 code(t.param->format()), g.data(), code(g.format()), g.multiplier(), nullptr,
                 static_cast<float*>(cuda(*t.state1).data()), static_cast<float*>(cuda(*t.state2).data()),
                 t.param->numel(), s, nullptr, counts, nullptr, m_stream);
    auto* host = static_cast<unsigned long long*>(host_scratch(2 * sizeof(unsigned long long)));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(host, counts, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, m_stream));
    synchronize();
    return {static_cast<std::int64_t>(host[0]), static_cast<std::int64_t>(host[1])};
}

}  // namespace mantissa::cuda
