// CudaStepPipeline's operand samples: what the statistics that read a matmul's operands ask of a
// step, gathered on the device as part of it and copied down with its results (see
// cuda_step_pipeline.h, "Operand samples").
#include "backend/cuda/cuda_step_pipeline.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "error.h"

namespace mantissa::cuda {

namespace {

// How many values from the tensor's start SampledRows::source may read: all of them must lie in
// the first n, or the gather would read past the tensor on the device.
std::int64_t sampled_extent(const SampledRows& r) {
    if (r.kind == SampledRows::Kind::rows) return r.total * r.K;
    const std::int64_t positions = r.out_h * r.out_w;
    if (positions <= 0 || r.total % positions != 0) return -1;
    if (r.kind == SampledRows::Kind::conv_channels) return r.total * r.K;
    if (r.K != r.channels * r.kernel * r.kernel) return -1;
    return r.total / positions * r.channels * r.height * r.width;
}

}  // namespace

float* CudaStepPipeline::sample_space(std::int64_t floats, std::int64_t& offset) {
    if (!m_open || !m_issue)
        throw Error("CudaStepPipeline: operand samples are asked for only while a step's body is issued.");
    if (m_sample_chunks.empty() || m_sample_chunks.back().used + floats > m_sample_chunks.back().capacity) {
        // Room for twice what the body will have asked for: a first body needs few chunks, and
        // end() merges them into one that later bodies fill alone.
        const std::int64_t capacity = 2 * (m_sample_floats + floats);
        auto* data = static_cast<float*>(
            m_backend.device_buffer(static_cast<std::size_t>(capacity) * sizeof(float), "the operand samples"));
        m_sample_chunks.push_back({data, capacity, 0});
        ++m_buffer_generation;  // a graph recorded before writes elsewhere: record it again
    }
    SampleChunk& c = m_sample_chunks.back();
    float* at = c.data + c.used;
    c.used += floats;
    offset = m_sample_floats;
    m_sample_floats += floats;
    return at;
}

std::int64_t CudaStepPipeline::sample_rows_later(const Tensor& t, std::int64_t n, const SampledRows& rows) {
    if (n < 0 || n > t.numel())
        throw Error("CudaStepPipeline: sample_rows_later asked for " + std::to_string(n) + " values of " +
                    t.desc().name + ", which holds " + std::to_string(t.numel()) + ".");
    const std::int64_t extent = rows.count == 0 ? 0 : sampled_extent(rows);
    if (rows.count < 0 || rows.count > rows.total || rows.K < 0 || extent < 0 || extent > n)
        throw Error("CudaStepPipeline: the sampled rows of " + t.desc().name + " (" + std::to_string(rows.count) +
                    " of " + std::to_string(rows.total) + " rows of " + std::to_string(rows.K) +
                    " values) do not lie within its first " + std::to_string(n) + " values.");
    std::int64_t offset = 0;
    float* at = sample_space(2 + rows.values(), offset);
    const CudaTensor& c = cuda(t);
    cudaStream_t stream = m_backend.stream();
    launch_operand_magnitudes(c.data(), code(c.format()), c.multiplier(), n, reinterpret_cast<std::uint32_t*>(at),
                              stream);
    launch_gather_sampled_rows(c.data(), code(c.format()), c.multiplier(), rows, at + 2, stream);
    return offset;
}

std::int64_t CudaStepPipeline::fp8_scale_later(const Fp8State& state, Fp8Role role) {
    std::int64_t offset = 0;
    float* at = sample_space(2, offset);
    const auto& s = static_cast<const CudaFp8State&>(state);
    cudaStream_t stream = m_backend.stream();
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(at, s.scale(role), sizeof(float), cudaMemcpyDeviceToDevice, stream));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(at + 1, s.scale_inv(role), sizeof(float), cudaMemcpyDeviceToDevice, stream));
    return offset;
}

void CudaStepPipeline::copy_samples_down(Slot& slot, const std::vector<SampleCopy>& parts) {
    std::int64_t total = 0;
    for (const SampleCopy& p : parts) total += p.floats;
    m_current.samples = total;
    if (total == 0) return;
    const std::size_t bytes = static_cast<std::size_t>(total) * sizeof(float);
    if (slot.sample_bytes < bytes) {
        // The slot is free: its previous step was collected before this one began.
        if (slot.samples) cudaFreeHost(slot.samples);
        slot.samples = nullptr;
        slot.sample_bytes = 0;
        MANTISSA_CUDA_CHECK(cudaHostAlloc(&slot.samples, bytes, cudaHostAllocDefault));
        slot.sample_bytes = bytes;
    }
    auto* down = static_cast<float*>(slot.samples);
    for (const SampleCopy& p : parts) {
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(down, p.data, static_cast<std::size_t>(p.floats) * sizeof(float),
                                            cudaMemcpyDeviceToHost, m_backend.stream()));
        down += p.floats;
    }
}

// After a body that filled several chunks: one chunk of their total for the bodies to come.
// Releasing in stream order is safe (the copies above are queued first); a graph recorded over
// the old chunks is recorded again (the buffer generation).
void CudaStepPipeline::merge_sample_chunks() {
    std::int64_t total = 0;
    for (const SampleChunk& c : m_sample_chunks) {
        total += c.used;
        m_backend.release_buffer(c.data);
    }
    m_sample_chunks.clear();
    ++m_buffer_generation;
    if (total == 0) return;
    auto* data = static_cast<float*>(
        m_backend.device_buffer(static_cast<std::size_t>(total) * sizeof(float), "the operand samples"));
    m_sample_chunks.push_back({data, total, 0});
}

}  // namespace mantissa::cuda
