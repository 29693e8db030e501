// CudaBackend: the device, tensors and their accounting, host copies, casts and the FP8 scaling
// state. See cuda_backend.h for the design.
#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"
#include "backend/cuda/kernels/convert.cuh"
#include "error.h"

namespace mantissa::cuda {

namespace {

constexpr std::size_t matmul_workspace_bytes = std::size_t{32} << 20;  // cuBLASLt, Hopper's advice

void check_count(const Tensor& t, std::int64_t n, const char* what) {
    if (n < 0 || n > t.numel())
        throw Error(std::string(what) + ": " + std::to_string(n) + " values do not fit tensor " + t.desc().name +
                    " of " + std::to_string(t.numel()) + " elements.");
}

std::size_t storage_bytes(const TensorDesc& d) {
    return static_cast<std::size_t>(d.numel()) * static_cast<std::size_t>(format_bytes(d.format));
}

}  // namespace

cudaDataType_t storage_type(Format f) {
    switch (f) {
        case Format::fp16: return CUDA_R_16F;
        case Format::bf16: return CUDA_R_16BF;
        case Format::fp8_e4m3: return CUDA_R_8F_E4M3;
        case Format::fp8_e5m2: return CUDA_R_8F_E5M2;
        default: return CUDA_R_32F;
    }
}

// ---- tensors

CudaTensor::CudaTensor(TensorDesc desc, BlockCache& cache) : Tensor(std::move(desc)), m_cache(&cache) {
    m_data = cache.allocate(storage_bytes(m_desc), m_desc.category, "tensor " + m_desc.name).ptr;
}

CudaTensor::~CudaTensor() {
    m_cache->release(m_data);
}

// ---- FP8 scaling state

CudaFp8State::CudaFp8State(CudaBackend& backend, const Fp8Recipe& recipe) : m_backend(backend), m_recipe(recipe) {
    if (recipe.history_len < 1)
        throw Error("precision.fp8.amax_history_len must be at least 1 (got " + std::to_string(recipe.history_len) +
                    ").");
    const int words = Fp8StateLayout::words(recipe.history_len);
    std::vector<float> init(static_cast<std::size_t>(words), 0.0f);
    for (int r = 0; r < 3; ++r) {
        init[static_cast<std::size_t>(Fp8StateLayout::scale + r)] = 1.0f;
        init[static_cast<std::size_t>(Fp8StateLayout::scale_inv + r)] = 1.0f;
    }
    const int newest = -1;
    std::memcpy(&init[Fp8StateLayout::newest], &newest, sizeof newest);
    m_state = static_cast<float*>(m_backend.device_buffer(init.size() * sizeof(float), "FP8 scaling state"));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(m_state, init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice, m_backend.stream()));
}

void CudaFp8State::set_scaling(Fp8Scaling scaling) {
    m_recipe.scaling = scaling;
    if (scaling != Fp8Scaling::none) return;
    // scale[3] then scale_inv[3] (Fp8StateLayout); static, so the copy may finish after this
    // returns, and the next step's casts read them in stream order.
    static_assert(Fp8StateLayout::scale_inv == Fp8StateLayout::scale + 3);
    static const float ones[6] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    m_backend.activate();
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_state + Fp8StateLayout::scale, ones, sizeof ones, cudaMemcpyHostToDevice,
                                        m_backend.stream()));
}

void CudaFp8State::restore(Fp8Role role, const Fp8TensorSnapshot& state) {
    const int len = m_recipe.history_len;
    if (state.amax_history.size() > static_cast<std::size_t>(len))
        throw Error("An amax history of " + std::to_string(state.amax_history.size()) +
                    " entries does not fit a window of " + std::to_string(len) + " (precision.fp8.amax_history_len).");
    // Read, change one role's part, write back: the roles share newest and count (one update
    // advances all three), so a snapshot's history length must agree with the others' once all
    // three are restored; the window is laid out oldest first from 0, as the update fills it.
    m_backend.activate();
    std::vector<float> host(static_cast<std::size_t>(Fp8StateLayout::words(len)));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), m_state, host.size() * sizeof(float), cudaMemcpyDeviceToHost, m_backend.stream()));
    MANTISSA_CUDA_CHECK(cudaStreamSynchronize(m_backend.stream()));
    const int r = static_cast<int>(role);
    host[static_cast<std::size_t>(Fp8StateLayout::scale + r)] = state.scale;
    host[static_cast<std::size_t>(Fp8StateLayout::scale_inv + r)] = state.scale_inv;
    host[static_cast<std::size_t>(Fp8StateLayout::pending + r)] = 0.0f;
    const int count = static_cast<int>(state.amax_history.size());
    const int newest = count - 1;
    std::memcpy(&host[Fp8StateLayout::newest], &newest, sizeof newest);
    std::memcpy(&host[Fp8StateLayout::count], &count, sizeof count);
    float* window = host.data() + Fp8StateLayout::window + r * len;
    std::fill(window, window + len, 0.0f);
    for (int i = 0; i < count; ++i) window[newest - i] = state.amax_history[static_cast<std::size_t>(i)];
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(m_state, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, m_backend.stream()));
    MANTISSA_CUDA_CHECK(cudaStreamSynchronize(m_backend.stream()));  // `host` lives on this stack frame
}

CudaFp8State::~CudaFp8State() {
    m_backend.release_buffer(m_state);
}

Fp8TensorSnapshot CudaFp8State::snapshot(Fp8Role role) const {
    m_backend.activate();
    const int len = m_recipe.history_len;
    std::vector<float> host(static_cast<std::size_t>(Fp8StateLayout::words(len)));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), m_state, host.size() * sizeof(float), cudaMemcpyDeviceToHost, m_backend.stream()));
    MANTISSA_CUDA_CHECK(cudaStreamSynchronize(m_backend.stream()));
    const int r = static_cast<int>(role);
    Fp8TensorSnapshot s;
    s.scale = host[static_cast<std::size_t>(Fp8StateLayout::scale + r)];
    s.scale_inv = host[static_cast<std::size_t>(Fp8StateLayout::scale_inv + r)];
    int newest = 0, count = 0;
    std::memcpy(&newest, &host[Fp8StateLayout::newest], sizeof newest);
    std::memcpy(&count, &host[Fp8StateLayout::count], sizeof count);
    const float* window = host.data() + Fp8StateLayout::window + r * len;
    for (int i = 0; i < count; ++i) s.amax_history.push_back(window[((newest - i) % len + len) % len]);
    return s;
}

// ---- backend

CudaBackend::CudaBackend(int device) : m_device(device) {
    int count = 0;
    MANTISSA_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        throw Error("GPU " + std::to_string(device) + " does not exist: this machine has " + std::to_string(count) +
                    ".");
    MANTISSA_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    MANTISSA_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    m_cc = {prop.major, prop.minor};
    m_name = prop.name;
    m_total_memory = static_cast<std::int64_t>(prop.totalGlobalMem);
    m_multiprocessors = prop.multiProcessorCount;
    const Support s = device_support(m_cc);
    if (!s.supported)
        throw Error("GPU " + std::to_string(device) + " (" + m_name + ") cannot be used: " + s.reason + ".");

    MANTISSA_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    try {
        m_cache = std::make_unique<BlockCache>(
            [](std::size_t bytes) -> void* {
                void* p = nullptr;
                if (cudaMalloc(&p, bytes) != cudaSuccess) {
                    cudaGetLastError();  // clear the (non-sticky) allocation error
                    return nullptr;
                }
                return p;
            },
            [](void* p) { cudaFree(p); });
        m_workspace =
            m_cache->allocate(matmul_workspace_bytes, MemoryCategory::workspace, "the cuBLASLt workspace").ptr;
        m_matmul = std::make_unique<LtMatmul>(m_workspace, matmul_workspace_bytes);
    } catch (...) {
        m_matmul.reset();
        m_cache.reset();
        cudaStreamDestroy(m_stream);
        throw;
    }
}

CudaBackend::~CudaBackend() {
    cudaSetDevice(m_device);
    cudaStreamSynchronize(m_stream);
    m_matmul.reset();
    if (m_host) cudaFreeHost(m_host);
    m_cache.reset();  // returns every block, the scratch buffers and the workspace included
    cudaStreamDestroy(m_stream);
}

void CudaBackend::activate() const {
    MANTISSA_CUDA_CHECK(cudaSetDevice(m_device));
}

void CudaBackend::synchronize() const {
    MANTISSA_CUDA_CHECK(cudaStreamSynchronize(m_stream));
}

std::string CudaBackend::device_name() const {
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(m_total_memory) / (1024.0 * 1024.0 * 1024.0));
    return m_name + " (compute capability " + m_cc.text() + ", " + mem + ")";
}

void* CudaBackend::scratch(Slot slot, std::size_t bytes) {
    const auto s = static_cast<std::size_t>(slot);
    if (m_scratch_bytes[s] >= bytes && m_scratch[s]) return m_scratch[s];
    if (m_scratch[s]) m_cache->release(m_scratch[s]);  // stream-ordered: safe to hand out again
    ++m_scratch_generation;
    m_scratch[s] = nullptr;
    m_scratch_bytes[s] = 0;
    const BlockCache::Block b = m_cache->allocate(bytes, MemoryCategory::workspace, "a scratch buffer");
    m_scratch[s] = b.ptr;
    m_scratch_bytes[s] = b.size;
    return b.ptr;
}

void* CudaBackend::host_scratch(std::size_t bytes) {
    if (m_host_bytes >= bytes) return m_host;
    // Every call that uses the pinned buffer waits for the stream before returning, so nothing
    // still reads the old one.
    if (m_host) cudaFreeHost(m_host);
    m_host = nullptr;
    m_host_bytes = 0;
    const std::size_t size = std::max<std::size_t>(bytes, 64 * 1024);
    MANTISSA_CUDA_CHECK(cudaHostAlloc(&m_host, size, cudaHostAllocDefault));
    m_host_bytes = size;
    return m_host;
}

void* CudaBackend::device_buffer(std::size_t bytes, const std::string& what) {
    activate();
    return m_cache->allocate(bytes, MemoryCategory::workspace, what).ptr;
}

void CudaBackend::require_plain(const Tensor& t, const char* op) const {
    if (cuda(t).multiplier() != 1.0f)
        throw Error(std::string(op) + ": tensor " + t.desc().name +
                    " holds unscaled gradient values; only the optimizers, download and cast read those.");
}

void CudaBackend::fold_multiplier(CudaTensor& t) {
    // Rare (a partial write into an unscaled narrow gradient): the multiplied values are rounded
    // into the tensor's format.
    if (t.m_multiplier == 1.0f) return;
    launch_cast(t.data(), code(t.format()), t.m_multiplier, t.data(), code(t.format()), t.numel(), false, m_stream);
    t.m_multiplier = 1.0f;
}

std::unique_ptr<Tensor> CudaBackend::allocate(const TensorDesc& desc) {
    if (desc.rows < 0 || desc.cols < 0) throw Error("Tensor " + desc.name + " has a negative dimension.");
    activate();
    auto t = std::make_unique<CudaTensor>(desc, *m_cache);
    const std::size_t bytes = storage_bytes(desc);
    if (bytes) MANTISSA_CUDA_CHECK(cudaMemsetAsync(t->data(), 0, bytes, m_stream));
    return t;
}

void CudaBackend::upload(Tensor& t_in, const float* data, std::int64_t n) {
    check_count(t_in, n, "upload");
    activate();
    CudaTensor& t = cuda(t_in);
    if (n == t.numel())
        t.m_multiplier = 1.0f;
    else
        fold_multiplier(t);
    if (n == 0) return;
    const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
    if (t.format() == Format::fp32) {
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(t.data(), data, bytes, cudaMemcpyHostToDevice, m_stream));
        return;
    }
    void* staging = scratch(slot_staging, bytes);
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(staging, data, bytes, cudaMemcpyHostToDevice, m_stream));
    launch_cast(staging, fmt_fp32, 1.0f, t.data(), code(t.format()), n, false, m_stream);
}

void CudaBackend::download(const Tensor& t_in, float* data, std::int64_t n) const {
    check_count(t_in, n, "download");
    activate();
    const CudaTensor& t = cuda(t_in);
    if (n == 0) return;
    const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
    auto* self = const_cast<CudaBackend*>(this);  // scratch buffers are not part of the state
    const void* src = t.data();
    if (t.format() != Format::fp32 || t.multiplier() != 1.0f) {
        void* staging = self->scratch(slot_staging, bytes);
        launch_cast(t.data(), code(t.format()), t.multiplier(), staging, fmt_fp32, n, false, m_stream);
        src = staging;
    }
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(data, src, bytes, cudaMemcpyDeviceToHost, m_stream));
    synchronize();
}

void CudaBackend::fill(Tensor& t_in, float value) {
    activate();
    CudaTensor& t = cuda(t_in);
    t.m_multiplier = 1.0f;
    launch_fill_bits(t.data(), format_bytes(t.format()), encode_value(code(t.format()), value, false), t.numel(),
                     m_stream);
}

void CudaBackend::poke(Tensor& t_in, std::int64_t index, float value) {
    if (index < 0 || index >= t_in.numel())
        throw Error("Element " + std::to_string(index) + " is outside tensor " + t_in.desc().name + ".");
    activate();
    CudaTensor& t = cuda(t_in);
    const int bytes = format_bytes(t.format());
    std::uint32_t bits;
    if (bytes == 4) {
        bits = bits_of(value);  // as it is: a 4-byte tensor can hold any FP32 value
    } else {
        // A narrow tensor stores the nearest value of its format (inf and NaN exactly); under a
        // pending multiplier, the stored value is divided by it.
        const float v = t.multiplier() != 1.0f ? value / t.multiplier() : value;
        bits = encode_value(code(t.format()), v, false);
    }
    unsigned char raw[4];
    std::memcpy(raw, &bits, 4);  // little-endian: the low bytes are the narrow formats' patterns
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(t.data()) + index * bytes, raw,
                                        static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, m_stream));
    synchronize();  // `raw` lives on this stack frame
}

void CudaBackend::cast(const Tensor& src_in, Tensor& dst_in) {
    if (src_in.numel() != dst_in.numel())
        throw Error("cast: " + src_in.desc().name + " and " + dst_in.desc().name + " have different sizes.");
    activate();
    const CudaTensor& src = cuda(src_in);
    CudaTensor& dst = cuda(dst_in);
    launch_cast(src.data(), code(src.format()), src.multiplier(), dst.data(), code(dst.format()), src.numel(), false,
                m_stream);
    dst.m_multiplier = 1.0f;
}

void CudaBackend::convert(Tensor& t_in, Format format) {
    activate();
    CudaTensor& t = cuda(t_in);
    const Format old = t.format();
    const std::int64_t n = t.numel();
    if (format_bytes(format) == format_bytes(old)) {
        // Same width: each element is read and written by the same thread, in place.
        launch_cast(t.data(), code(old), t.multiplier(), t.data(), code(format), n, false, m_stream);
    } else {
        TensorDesc d = t.desc();
        d.format = format;
        void* fresh = m_cache->allocate(storage_bytes(d), d.category, "tensor " + d.name).ptr;
        launch_cast(t.data(), code(old), t.multiplier(), fresh, code(format), n, false, m_stream);
        m_cache->release(t.m_data);  // stream-ordered: the cast above runs first
        t.m_data = fresh;
    }
    t.m_desc.format = format;
    t.m_multiplier = 1.0f;
}

std::unique_ptr<Fp8State> CudaBackend::create_fp8_state(const Fp8Recipe& recipe) {
    activate();
    return std::make_unique<CudaFp8State>(*this, recipe);
}

void CudaBackend::update_fp8_scales(Fp8State& state_in) {
    activate();
    auto& s = static_cast<CudaFp8State&>(state_in);
    launch_fp8_update(s.device_state(), s.recipe().history_len, s.recipe().margin, static_cast<int>(s.recipe().algo),
                      s.recipe().scaling == Fp8Scaling::delayed, s.recipe().power_of_two, m_stream);
}

MemoryBreakdown CudaBackend::memory() const {
    activate();
    MemoryBreakdown m;
    m.parameters = m_cache->in_use(MemoryCategory::parameters);
    m.master_weights = m_cache->in_use(MemoryCategory::master_weights);
    m.gradients = m_cache->in_use(MemoryCategory::gradients);
    m.optimizer_state = m_cache->in_use(MemoryCategory::optimizer_state);
    m.activations = m_cache->in_use(MemoryCategory::activations);
    m.workspace = m_cache->in_use(MemoryCategory::workspace);
    std::size_t free = 0, total = 0;
    MANTISSA_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    m.device_in_use = static_cast<std::int64_t>(total - free);
    m.device_total = static_cast<std::int64_t>(total);
    m.modelled = false;
    return m;
}

}  // namespace mantissa::cuda
