// CpuBackend: tensors, memory accounting, host copies, casts, the weight operands of the matmul
// layers, the FP8 scaling state, and what the backend supports.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_tensor_access.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <bit>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include "error.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "numeric/stochastic_round.h"

namespace mantissa {

namespace {

void check_count(const Tensor& t, std::int64_t n, const char* what) {
    if (n < 0 || n > t.numel())
        throw Error(std::string(what) + ": " + std::to_string(n) + " values do not fit tensor " +
                    t.desc().name + " of " + std::to_string(t.numel()) + " elements.");
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                auto name = line.substr(colon + 1);
                name.erase(0, name.find_first_not_of(" \t"));
                return name;
            }
        }
    }
    return "CPU";
}

}  // namespace

// ---- tensors

CpuTensor::CpuTensor(TensorDesc desc, std::shared_ptr<CpuLedger> ledger)
    : Tensor(std::move(desc)), m_data(static_cast<std::size_t>(m_desc.numel())),
      m_ledger(std::move(ledger)), m_stamp(next_stamp()) {
    m_ledger->bytes[static_cast<int>(m_desc.category)] += bytes();
}

CpuTensor::~CpuTensor() {
    m_ledger->bytes[static_cast<int>(m_desc.category)] -= bytes();
    auto& copies = m_ledger->cast_copies;
    copies.erase(this);
    for (auto it = copies.begin(); it != copies.end();)
        it = it->second == this ? copies.erase(it) : std::next(it);
    m_ledger->bf16_copies.erase(this);
    auto& fp8 = m_ledger->fp8_copies;
    fp8.erase(this);
    for (auto it = fp8.begin(); it != fp8.end();)
        it = it->second.copy == this ? fp8.erase(it) : std::next(it);
}

std::uint64_t CpuTensor::next_stamp() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

void CpuTensor::mark_copy_of(const CpuTensor& source) {
    m_source = &source;
    m_source_stamp = source.m_stamp;
    m_copy_stamp = m_stamp;
}

std::int64_t CpuTensor::bytes() const { return m_desc.numel() * format_bytes(m_desc.format); }

void CpuTensor::set_format(Format f) {
    m_stamp = next_stamp();
    m_ledger->bytes[static_cast<int>(m_desc.category)] -= bytes();
    m_desc.format = f;
    m_ledger->bytes[static_cast<int>(m_desc.category)] += bytes();
}

CpuFp8State::CpuFp8State(const Fp8Recipe& r, std::shared_ptr<CpuLedger> ledger)
    : m_history{AmaxHistory(r.history_len, r.margin, r.algo, format_info(Format::fp8_e4m3).max_finite),
                AmaxHistory(r.history_len, r.margin, r.algo, format_info(Format::fp8_e4m3).max_finite),
                AmaxHistory(r.history_len, r.margin, r.algo, format_info(Format::fp8_e5m2).max_finite)},
      m_ledger(std::move(ledger)) {
    set_scaling(r.scaling);
    for (AmaxHistory& h : m_history) h.set_power_of_two(r.power_of_two);
}

void CpuFp8State::set_scaling(Fp8Scaling scaling) {
    for (AmaxHistory& h : m_history) h.set_scaling(scaling);
}

void CpuFp8State::restore(Fp8Role role, const Fp8TensorSnapshot& state) {
    // A quantised weight copy made with the old scale is found stale by its scale (quantized_weight).
    history(role).restore(state.scale, state.scale_inv, state.amax_history);
}

CpuFp8State::~CpuFp8State() {
    auto& fp8 = m_ledger->fp8_copies;
    for (auto it = fp8.begin(); it != fp8.end();) {
        const AmaxHistory* h = it->second.history;
        it = h >= m_history.data() && h < m_history.data() + m_history.size() ? fp8.erase(it) : std::next(it);
    }
}

Fp8TensorSnapshot CpuFp8State::snapshot(Fp8Role role) const {
    const AmaxHistory& h = m_history[static_cast<int>(role)];
    return {h.scale(), h.scale_inv(), h.history()};
}

// ---- backend

CpuBackend::CpuBackend() : m_ledger(std::make_shared<CpuLedger>()) {}
CpuBackend::~CpuBackend() = default;

std::string CpuBackend::device_name() const {
    const int threads = m_matmul.threads();
    return cpu_model_name() + " (" + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") +
           CpuMatmul::isa_name() + ", bf16 matmul: " + m_matmul.bf16_path() + ")";
}

std::string CpuBackend::bf16_matmul_path() const { return m_matmul.bf16_enabled() ? "bf16" : "fp32"; }

void CpuBackend::set_bf16_matmul_path(const std::string& path) {
    if (path != "bf16" && path != "fp32")
        throw Error("Unknown bf16 matmul path \"" + path + "\": the CPU backend has \"bf16\" and \"fp32\".");
    m_matmul.set_bf16_enabled(path == "bf16");
}

std::unique_ptr<Tensor> CpuBackend::allocate(const TensorDesc& desc) {
    if (desc.rows < 0 || desc.cols < 0)
        throw Error("Tensor " + desc.name + " has a negative dimension.");
    return std::make_unique<CpuTensor>(desc, m_ledger);
}

void CpuBackend::upload(Tensor& t, const float* data, std::int64_t n) {
    check_count(t, n, "upload");
    round_array(t.format(), data, cpu(t).data(), static_cast<std::size_t>(n));  // copy and round
}

void CpuBackend::download(const Tensor& t, float* data, std::int64_t n) const {
    check_count(t, n, "download");
    std::memcpy(data, cpu(t).data(), static_cast<std::size_t>(n) * sizeof(float));
}

void CpuBackend::fill(Tensor& t, float value) {
    const float v = round_to(t.format(), value);
    std::fill_n(cpu(t).data(), t.numel(), v);
}

void CpuBackend::poke(Tensor& t, std::int64_t index, float value) {
    if (index < 0 || index >= t.numel())
        throw Error("Element " + std::to_string(index) + " is outside tensor " + t.desc().name + ".");
    // As a GPU stores it: 4-byte formats hold any FP32 value, narrower ones their nearest value
    // (inf and NaN exactly; e4m3 has no inf and stores NaN).
    cpu(t).data()[index] = format_bytes(t.format()) == 4 ? value : round_to(t.format(), value);
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
    if (src.numel() != dst.numel())
        throw Error("cast: " + src.desc().name + " and " + dst.desc().name +
                    " have different sizes.");
    upload(dst, cpu(src).data(), src.numel());
}

void CpuBackend::convert(Tensor& t, Format format) {
    cpu(t).set_format(format);
    if (format != Format::fp32) round_array(format, cpu(t).data(), static_cast<std::size_t>(t.numel()));
}

Backend::RowSample CpuBackend::sample_rows(const Tensor& t, std::int64_t n, std::int64_t row_len,
                                           std::span<const std::int64_t> rows, float* out) const {
    const float* data = cpu(t).data();
    for (std::size_t i = 0; i < rows.size(); ++i)
        std::copy_n(data + rows[i] * row_len, row_len, out + static_cast<std::int64_t>(i) * row_len);
    RowSample s;
    const std::optional<float> kept = kept_magnitude(t, n);
    s.amax = kept ? *kept : amax_of(data, n);
    s.finite_amax = cpu_detail::finite_max_abs(data, n, s.amax);
    return s;
}

const float* CpuBackend::host_values(const Tensor& t) const { return cpu(t).data(); }

void CpuBackend::keep_magnitude(const CpuTensor& t, std::int64_t n, float amax) {
    // The tensor's own entry when it has one (it is measured at every statistics step), else the
    // oldest.
    auto it = std::find_if(m_kept_magnitudes.begin(), m_kept_magnitudes.end(),
                           [&](const KeptMagnitude& k) { return k.tensor == &t; });
    if (it == m_kept_magnitudes.end()) {
        it = m_kept_magnitudes.begin() + static_cast<std::ptrdiff_t>(m_next_kept_magnitude);
        m_next_kept_magnitude = (m_next_kept_magnitude + 1) % m_kept_magnitudes.size();
    }
    *it = {&t, t.stamp(), n, amax};
}

std::optional<float> CpuBackend::kept_magnitude(const Tensor& t, std::int64_t n) const {
    const CpuTensor& c = cpu(t);
    for (const KeptMagnitude& k : m_kept_magnitudes)
        if (k.tensor == &c && k.stamp == c.stamp() && k.n == n) return k.amax;
    return std::nullopt;
}

void CpuBackend::keep_block_exponents(bool on) {
    m_keep_exponents = on;
    m_kept_count = 0;
}

std::int16_t* CpuBackend::keep_exponents_of(const CpuTensor& t, BlockFormat format, std::int64_t rows,
                                            std::int64_t K) {
    if (!m_keep_exponents) return nullptr;
    // The same tensor quantised again this step (an evaluation between forward and backward)
    // takes its entry over.
    auto it = std::find_if(m_kept.begin(), m_kept.begin() + static_cast<std::ptrdiff_t>(m_kept_count),
                           [&](const KeptExponents& k) { return k.tensor == &t; });
    if (it == m_kept.begin() + static_cast<std::ptrdiff_t>(m_kept_count)) {
        if (m_kept_count == m_kept.size()) m_kept.emplace_back();
        it = m_kept.begin() + static_cast<std::ptrdiff_t>(m_kept_count++);
    }
    const std::int64_t B = block_format_info(format).block_size;
    it->tensor = &t;
    it->stamp = t.stamp();
    it->format = format;
    it->rows = rows;
    it->K = K;
    it->values.resize(static_cast<std::size_t>(rows * ((K + B - 1) / B)));
    return it->values.data();
}

Backend::KeptBlockExponents CpuBackend::kept_block_exponents(const Tensor& t, BlockFormat format,
                                                             std::int64_t K) const {
    const CpuTensor& c = cpu(t);
    for (std::size_t i = 0; i < m_kept_count; ++i) {
        const KeptExponents& k = m_kept[i];
        if (k.tensor == &c && k.stamp == c.stamp() && k.format == format && k.K == K) return {k.values.data(), k.rows};
    }
    return {};
}

void CpuBackend::tap_operand(const Tensor& weight, std::vector<float> TappedOperands::*values,
                             float TappedOperands::*factor_of, const float* op, std::int64_t n, float factor) const {
    if (!m_tap) return;
    TappedOperands& t = m_tap->by_weight[&weight];
    (t.*values).assign(op, op + n);
    t.*factor_of = factor;
}

std::unique_ptr<Fp8State> CpuBackend::create_fp8_state(const Fp8Recipe& recipe) {
    return std::make_unique<CpuFp8State>(recipe, m_ledger);
}

void CpuBackend::update_fp8_scales(Fp8State& state) {
    auto& s = static_cast<CpuFp8State&>(state);
    for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output}) s.history(r).update();
}

MemoryBreakdown CpuBackend::memory() const {
    MemoryBreakdown m;
    const auto& b = m_ledger->bytes;
    m.parameters = b[static_cast<int>(MemoryCategory::parameters)];
    m.master_weights = b[static_cast<int>(MemoryCategory::master_weights)];
    m.gradients = b[static_cast<int>(MemoryCategory::gradients)];
    m.optimizer_state = b[static_cast<int>(MemoryCategory::optimizer_state)];
    m.activations = b[static_cast<int>(MemoryCategory::activations)];
    m.workspace = b[static_cast<int>(MemoryCategory::workspace)];
    m.modelled = true;
    return m;
}

void CpuBackend::seed_stochastic_rounding(std::uint64_t seed) {
    m_stochastic_seed = seed;
    m_stochastic_pass = 0;
}

float CpuBackend::quantize_gradient_fp8(const float* dy, float* q, std::int64_t n, float scale) {
    const auto count = static_cast<std::size_t>(n);
    if (m_stochastic_gradients)
        return scale_round_array_stochastic(Format::fp8_e5m2, dy, q, count, scale, next_stochastic_key(),
                                            Overflow::saturate);
    return scale_round_array(Format::fp8_e5m2, dy, q, count, scale, Overflow::saturate);
}

void CpuBackend::round_gradient(Format format, float* data, std::int64_t n) {
    if (format == Format::fp32) return;
    // Stochastic: one key for the tensor, each range drawing by its elements' own indices.
    const std::uint64_t key = m_stochastic_gradients ? gradient_key(format) : 0;
    cpu_detail::for_ranges(n, pass_threads(n, cpu_detail::elementwise_min_per_thread), 64,
                           [&](std::int64_t begin, std::int64_t end, int) {
        const auto len = static_cast<std::size_t>(end - begin);
        if (m_stochastic_gradients)
            round_array_stochastic(format, data + begin, data + begin, len, key, static_cast<std::uint64_t>(begin));
        else
            round_array(format, data + begin, len);
    });
}

void CpuBackend::round_gradient_with_stats(Format format, float* data, std::int64_t n, RoundingStats& stats,
                                           std::uint64_t key, std::int64_t first) {
    if (!m_stochastic_gradients || format == Format::fp32)
        return round_array_with_stats(format, data, static_cast<std::size_t>(n), stats);
    const auto count = static_cast<std::size_t>(n);
    stats.zeros_before += count_zeros(data, count);
    round_array_stochastic(format, data, data, count, key, static_cast<std::uint64_t>(first));
    count_classes(format, data, count, stats);
}

void CpuBackend::set_gradient_tracing(bool on) {
    m_tracing = on;
    for (auto& [tensor, shadow] : m_shadows) shadow.valid = false;  // a new step begins
}

float* CpuBackend::shadow_for(const Tensor& t, std::int64_t n) {
    Shadow& s = m_shadows[&t];
    if (s.values.size() < static_cast<std::size_t>(n)) s.values.resize(static_cast<std::size_t>(n));
    s.n = n;
    s.valid = true;
    s.compared = false;
    return s.values.data();
}

void CpuBackend::drop_shadow(const Tensor& t) {
    const auto it = m_shadows.find(&t);
    if (it != m_shadows.end()) it->second.valid = false;
}

void CpuBackend::keep_unrounded(const Tensor& t, const float* data, std::int64_t n) {
    if (!m_tracing || t.format() == Format::fp32) return;
    std::memcpy(shadow_for(t, n), data, static_cast<std::size_t>(n) * sizeof(float));
}

const float* CpuBackend::unrounded(const Tensor& t) {
    const auto it = m_shadows.find(&t);
    if (it == m_shadows.end() || !it->second.valid) return nullptr;
    Shadow& s = it->second;
    if (!s.compared) {
        s.compared = true;
        const float* values = cpu(t).data();
        const float* shadow = s.values.data();
        std::atomic<bool> differ{false};
        cpu_detail::for_ranges(s.n, pass_threads(s.n, cpu_detail::elementwise_min_per_thread), 64,
                               [&](std::int64_t begin, std::int64_t end, int) {
            if (!same_zeros(values + begin, shadow + begin, static_cast<std::size_t>(end - begin)))
                differ.store(true, std::memory_order_relaxed);
        });
        s.valid = differ.load(std::memory_order_relaxed);
    }
    return s.valid ? s.values.data() : nullptr;
}

CpuTensor* CpuBackend::fresh_cast_copy(const Tensor& param) const {
    const auto& source = cpu(param);
    const auto it = m_ledger->cast_copies.find(&source);
    if (it == m_ledger->cast_copies.end() || !it->second->is_copy_of(source)) return nullptr;
    return it->second;
}

CpuFp8WeightCopy* CpuBackend::fp8_copy_to_write(const Tensor& param) {
    const auto it = m_ledger->fp8_copies.find(&cpu(param));
    if (it == m_ledger->fp8_copies.end()) return nullptr;
    // Current scaling takes the weights' scale from their amax after this update: unknown here;
    // rowwise scaling quantises the weights per row in the forward, without this copy.
    if (it->second.history->current() || it->second.history->rowwise()) return nullptr;
    // The scale the history will have after this step's update (end_step, after the optimizer):
    // the update of a copy (assigned into a kept object: no allocation once it has grown).
    m_next_scale = *it->second.history;
    m_next_scale.update();
    it->second.scale = m_next_scale.scale();
    return &it->second;
}

float* CpuBackend::scratch(int slot, std::int64_t n) {
    auto& buf = m_scratch[static_cast<std::size_t>(slot)];
    if (buf.size() < static_cast<std::size_t>(n)) buf.resize(static_cast<std::size_t>(n));
    return buf.data();
}

const float* CpuBackend::operand(const CpuTensor& t, std::int64_t n, Format format, int slot) {
    if (format_contains(format, t.format())) return t.data();  // rounding would change nothing
    return rounded_into(t, n, format, scratch(slot, n));
}

const float* CpuBackend::rounded_into(const CpuTensor& t, std::int64_t n, Format format, float* buf) {
    const float* src = t.data();
    const int threads = std::min(cpu_detail::kMaxPassThreads, pass_threads(n, cpu_detail::elementwise_min_per_thread));
    std::array<std::uint32_t, cpu_detail::kMaxPassThreads> amax{};
    cpu_detail::for_ranges(n, threads, 64, [&](std::int64_t begin, std::int64_t end, int w) {
        const auto count = static_cast<std::size_t>(end - begin);
        if (m_keep_magnitudes)  // the same values with the amax on the way (a multiply by 1 is exact)
            amax[static_cast<std::size_t>(w)] =
                std::bit_cast<std::uint32_t>(scale_round_array(format, src + begin, buf + begin, count, 1.0f));
        else
            round_array(format, src + begin, buf + begin, count);
    });
    if (m_keep_magnitudes) keep_magnitude(t, n, std::bit_cast<float>(*std::max_element(amax.begin(), amax.end())));
    return buf;
}

const float* CpuBackend::weight_operand(CpuTensor& w, Tensor* weight_compute, Format compute, int slot) {
    if (!weight_compute) return operand(w, w.numel(), compute, slot);
    // The optimizer keeps the copy current when it can (cast_copies): cast only when the copy is
    // not what the cast would give.
    CpuTensor& wc = cpu(*weight_compute);
    if (!wc.is_copy_of(w)) {
        cast(w, wc);
        wc.mark_copy_of(w);
        m_ledger->cast_copies[&w] = &wc;
    }
    return std::as_const(wc).data();
}

float CpuBackend::quantized_weight(CpuTensor& w, CpuTensor& wc, AmaxHistory& hw) {
    // The optimizer writes the quantised weights with the scale this step uses when it can
    // (CpuFp8WeightCopy): quantise only when the copy is not what quantising would give.
    CpuFp8WeightCopy& entry = m_ledger->fp8_copies[&w];
    // Current scaling: the scale from the weights' own amax (the copy's, while it is current).
    if (hw.current())
        hw.use_amax(entry.copy == &wc && wc.is_copy_of(w) ? entry.amax
                                                          : amax_of(std::as_const(w).data(), w.numel()));
    if (entry.copy == &wc && wc.is_copy_of(w) &&
        std::bit_cast<std::uint32_t>(entry.scale) == std::bit_cast<std::uint32_t>(hw.scale()))
        return entry.amax;
    const float amax = scale_round_array(Format::fp8_e4m3, std::as_const(w).data(), wc.data(),
                                         static_cast<std::size_t>(w.numel()), hw.scale(), Overflow::saturate);
    wc.mark_copy_of(w);
    entry = CpuFp8WeightCopy{&wc, &hw, hw.scale(), amax};
    return amax;
}

float* CpuBackend::trace_backward(const Tensor& dy, const Tensor& dx, std::int64_t n, bool rounds,
                                  const float** sdy) {
    *sdy = nullptr;
    if (!m_tracing) return nullptr;
    *sdy = unrounded(dy);
    if (!*sdy && (!rounds || dx.format() == Format::fp32)) return nullptr;
    return shadow_for(dx, n);
}

void CpuBackend::finish_matmul_dgrad(Tensor& dx_out, float* dx, std::int64_t n, float dq, float dq_w,
                                     bool dy_shadowed, bool flushed,
                                     const std::function<void(float*)>& reference_product) {
    const Format format = dx_out.format();
    if (!(m_tracing && (dy_shadowed || flushed || format != Format::fp32))) {
        scale_round_gradient(format, dx, n, dq);
        return;
    }
    scale_in_place(dx, n, dq);  // the shadow needs dx before its rounding
    // None when dx's own zeros are the shadow's: no shadow behind dy, no flush in its operands,
    // and none that dx's rounding could make (cpu_unrounded_pieces.h).
    if (flushed || dy_shadowed || rounding_may_flush(format, dx, static_cast<std::size_t>(n))) {
        float* shadow = shadow_for(dx_out, n);
        if (flushed) {
            reference_product(shadow);
            scale_in_place(shadow, n, dq_w);  // fp8: the reference of dy is not scaled
        } else {
            std::memcpy(shadow, dx, static_cast<std::size_t>(n) * sizeof(float));
        }
    }
    round_gradient(format, dx, n);
}

// ---- what it supports

std::string CpuBackend::unsupported(BackendOp op, Format format) const {
    const bool common = format == Format::fp32 || format == Format::tf32 || format == Format::fp16 ||
                        format == Format::bf16;
    if (op == BackendOp::block_scaled || op == BackendOp::block_scaled_conv || op == BackendOp::per_gemm ||
        op == BackendOp::per_gemm_conv || op == BackendOp::fp8_recipe || op == BackendOp::fp16_accumulation ||
        op == BackendOp::stochastic_gradients || op == BackendOp::stochastic_conv_gradients ||
        op == BackendOp::stochastic_weights || op == BackendOp::kahan_updates || op == BackendOp::what_if)
        return "";  // every block format, every mix, every FP8 recipe, every rounding and accumulation
    if (op == BackendOp::bmm) {
        if (common) return "";
        return "The CPU backend computes batched matmuls in fp32, tf32, fp16 or bf16, not " +
               std::string(format_name(format)) + "; choose one of those for attention.";
    }
    if (op == BackendOp::linear || op == BackendOp::conv2d) {
        if (common || format == Format::fp8_e4m3) return "";
        return std::string("The CPU backend computes ") + (op == BackendOp::linear ? "linear layers" : "convolutions") +
               " in fp32, tf32, fp16, bf16 or fp8-e4m3, not " + std::string(format_name(format)) +
               "; choose one of those for the layer.";
    }
    if (common) return "";
    return std::string("The CPU backend runs ") + backend_op_name(op) + " on fp32, tf32, fp16 or bf16 tensors, not " +
           std::string(format_name(format)) + "; keep the layer's tensors in one of those formats.";
}

}  // namespace mantissa
