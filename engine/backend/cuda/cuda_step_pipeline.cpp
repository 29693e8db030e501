// CudaStepPipeline: see cuda_step_pipeline.h for the order of a step and when it is a graph.
#include "backend/cuda/cuda_step_pipeline.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "error.h"
#include "backend/loss_scaler.h"

namespace mantissa::cuda {

namespace {

// The head of a step's device block.
struct BlockHeader {
    ScalerState before;          // as the step started: its loss scale
    ScalerState after;           // after GradScaler's update
    long long optimizer_steps;   // the device counter after the step
    double mse_sum;              // regression: Σ (y - t)², in double
    int first_bad;               // the check's first gradient holding inf/NaN, INT_MAX when none
    int pad;
};

int scaling_mode_code(LossScalingMode m) { return static_cast<int>(m); }

}  // namespace

std::unique_ptr<StepPipeline> CudaBackend::create_pipeline(const LossScalingSpec& spec) {
    return std::make_unique<CudaStepPipeline>(*this, spec);
}

CudaStepPipeline::CudaStepPipeline(CudaBackend& backend, const LossScalingSpec& spec, int depth)
    : m_backend(backend), m_spec(spec), m_depth(std::max(1, depth)) {
    LossScaler validate(spec);  // the same refusals as the host scaler
    (void)validate;
    m_backend.activate();
    m_scaler = m_backend.create_scaler_state(spec);
    m_optimizer_steps = static_cast<long long*>(m_backend.device_buffer(sizeof(long long), "the optimizer's step count"));
    m_lr = static_cast<double*>(m_backend.device_buffer(sizeof(double), "the learning rate"));
    m_sgd = static_cast<SgdScalars*>(m_backend.device_buffer(sizeof(SgdScalars), "the SGD scalars"));
    m_adamw = static_cast<AdamWScalars*>(m_backend.device_buffer(sizeof(AdamWScalars), "the AdamW scalars"));
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(m_optimizer_steps, 0, sizeof(long long), m_backend.stream()));
    m_slots.resize(static_cast<std::size_t>(m_depth + 1));
    for (Slot& s : m_slots) {
        MANTISSA_CUDA_CHECK(cudaEventCreate(&s.started));
        // collect() waits on it: blocking, so the waiting host thread does not spin a core.
        MANTISSA_CUDA_CHECK(cudaEventCreateWithFlags(&s.finished, cudaEventBlockingSync));
    }
    m_backend.synchronize();
}

CudaStepPipeline::~CudaStepPipeline() {
    // No throwing here: a failed step may have left the stream capturing.
    m_backend.defer_rounding_stats(nullptr, 0, nullptr);
    if (m_capturing) {
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(m_backend.stream(), &g);
        if (g) cudaGraphDestroy(g);
    }
    cudaStreamSynchronize(m_backend.stream());
    for (Graph& g : m_graphs)
        if (g.exec) cudaGraphExecDestroy(g.exec);
    for (Slot& s : m_slots) {
        if (s.pinned) cudaFreeHost(s.pinned);
        if (s.samples) cudaFreeHost(s.samples);
        if (s.started) cudaEventDestroy(s.started);
        if (s.finished) cudaEventDestroy(s.finished);
    }
    for (PlanEntry& p : m_plans) m_backend.release_buffer(p.plan.chunks);
    for (SampleChunk& c : m_sample_chunks) m_backend.release_buffer(c.data);
    for (void* p : {static_cast<void*>(m_block), static_cast<void*>(m_labels), static_cast<void*>(m_targets)})
        if (p) m_backend.release_buffer(p);
    for (void* p : {static_cast<void*>(m_scaler), static_cast<void*>(m_optimizer_steps), static_cast<void*>(m_lr),
                    static_cast<void*>(m_sgd), static_cast<void*>(m_adamw)})
        m_backend.release_buffer(p);
}

// ---- buffers

void CudaStepPipeline::ensure_buffers(int layers, std::int64_t rows, std::int64_t outputs, std::int64_t input_bytes) {
    const bool grow_block = layers != m_layout.layers || rows > m_layout.rows;
    const std::int64_t targets = rows * std::max<std::int64_t>(outputs, 1);
    const bool grow_targets = targets > m_target_capacity;
    const StepBlockLayout want = grow_block ? layout_step_block(layers, std::max(rows, m_layout.rows),
                                                                sizeof(BlockHeader), sizeof(CheckResult))
                                            : m_layout;
    // The pinned slot carries the block down and the inputs up (labels or targets, x, the rate).
    const std::size_t up = static_cast<std::size_t>(input_bytes) +
                           static_cast<std::size_t>(std::max(targets, rows)) * sizeof(float) + 2 * sizeof(double);
    const std::size_t pinned = std::max(want.bytes, up);
    bool grow_pinned = false;
    for (const Slot& s : m_slots) grow_pinned = grow_pinned || s.pinned_bytes < pinned;
    if (!grow_block && !grow_targets && !grow_pinned) return;
    // Sized from the network's capacity, they grow before the first step only: the slots of steps
    // in flight hold results laid out as m_layout says.
    if (!m_flight.empty()) throw Error("CudaStepPipeline: the step buffers would change with steps in flight.");

    // Nothing may still read the old buffers, and recorded graphs point at them.
    m_backend.synchronize();
    drop_graphs();
    m_graph_note = "the pipeline's buffers grew";
    ++m_buffer_generation;
    if (grow_block) {
        if (m_block) m_backend.release_buffer(m_block);
        if (m_labels) m_backend.release_buffer(m_labels);
        m_block = nullptr;
        m_labels = nullptr;
        m_block = m_backend.device_buffer(want.bytes, "the step's results");
        m_labels = static_cast<std::int32_t*>(
            m_backend.device_buffer(static_cast<std::size_t>(want.rows) * sizeof(std::int32_t), "the labels"));
        m_layout = want;
        m_rounding_sink.reserve(static_cast<std::size_t>(layers));
    }
    if (grow_targets) {
        if (m_targets) m_backend.release_buffer(m_targets);
        m_targets = nullptr;
        m_targets = static_cast<float*>(
            m_backend.device_buffer(static_cast<std::size_t>(targets) * sizeof(float), "the regression targets"));
        m_target_capacity = targets;
    }
    if (grow_pinned)
        for (Slot& s : m_slots) {
            if (s.pinned_bytes >= pinned) continue;
            if (s.pinned) cudaFreeHost(s.pinned);
            s.pinned = nullptr;
            s.pinned_bytes = 0;
            MANTISSA_CUDA_CHECK(cudaHostAlloc(&s.pinned, pinned, cudaHostAllocDefault));
            s.pinned_bytes = pinned;
        }
}

void CudaStepPipeline::drop_graphs() {
    for (Graph& g : m_graphs) {
        if (g.exec) cudaGraphExecDestroy(g.exec);
        g.exec = nullptr;
    }
    for (std::vector<SampleCopy>& parts : m_graph_samples) parts.clear();
}

const CudaBackend::CheckPlan& CudaStepPipeline::plan_for(const std::vector<Tensor*>& grads,
                                                       const std::vector<bool>& want) {
    Fingerprint f;
    for (std::size_t i = 0; i < grads.size(); ++i) {
        const auto& g = static_cast<const CudaTensor&>(*grads[i]);
        f.add(g.data()).add(g.numel()).add(static_cast<int>(g.format())).add(i < want.size() && want[i]);
    }
    for (const PlanEntry& p : m_plans)
        if (p.key == f.value()) return p.plan;
    // prepare_check waits for its upload: never while a graph is being recorded.
    if (m_capturing) throw Error("CudaStepPipeline: the gradient check's table changed while recording a step.");
    // Shapes changed (a live change): start over, dropping the graphs that point at the old tables.
    if (m_plans.size() >= 4) invalidate("the gradient check's table changed");
    m_plans.push_back({f.value(), m_backend.prepare_check(grads, want)});
    return m_plans.back().plan;
}

void CudaStepPipeline::release_plans() {
    m_backend.synchronize();
    for (PlanEntry& p : m_plans) m_backend.release_buffer(p.plan.chunks);
    m_plans.clear();
}

// ---- live changes

void CudaStepPipeline::set_loss_scaling(const LossScalingSpec& spec) {
    if (!m_flight.empty() || m_open) throw Error("CudaStepPipeline: set_loss_scaling with steps in flight.");
    // LossScaler::reconfigure on the device's state, so both keep one rule.
    ScalerState st{};
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(&st, m_scaler, sizeof st, cudaMemcpyDeviceToHost, m_backend.stream()));
    m_backend.synchronize();
    LossScaler host(m_spec);
    host.restore(st.scale, st.growth_tracker);
    host.reconfigure(spec);
    st.scale = host.scale();
    st.inv_scale = host.inv_scale();
    st.growth_tracker = host.growth_tracker();
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_scaler, &st, sizeof st, cudaMemcpyHostToDevice, m_backend.stream()));
    m_backend.synchronize();  // `st` lives on this stack frame
    m_spec = spec;
    invalidate("precision.loss_scaling changed");
}

void CudaStepPipeline::restore(const PipelineState& state) {
    if (!m_flight.empty() || m_open) throw Error("CudaStepPipeline: restore with steps in flight.");
    ScalerState st{};
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(&st, m_scaler, sizeof st, cudaMemcpyDeviceToHost, m_backend.stream()));
    m_backend.synchronize();
    LossScaler host(m_spec);
    host.restore(state.scale, state.growth_tracker);
    st.scale = host.scale();
    st.inv_scale = host.inv_scale();
    st.growth_tracker = host.growth_tracker();
    st.found_inf = 0;
    const long long steps = state.optimizer_steps;
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_scaler, &st, sizeof st, cudaMemcpyHostToDevice, m_backend.stream()));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_optimizer_steps, &steps, sizeof steps, cudaMemcpyHostToDevice, m_backend.stream()));
    m_backend.synchronize();  // `st` and `steps` live on this stack frame
    invalidate("a checkpoint was restored");
}

void CudaStepPipeline::invalidate(const std::string& reason) {
    for (Graph& g : m_graphs) g.policy.invalidate(reason);
    drop_graphs();
    release_plans();
    m_graph_note = reason;
}

// ---- one step

bool CudaStepPipeline::begin(const StepBegin& b) {
    if (m_open) throw Error("CudaStepPipeline: begin() before the previous step's end().");
    if (!b.input || b.input->format() != Format::fp32 || b.input->cols() != b.features)
        throw Error("CudaStepPipeline: the input tensor must be (rows, features) fp32.");
    if (in_flight() >= static_cast<int>(m_slots.size()))
        throw Error("CudaStepPipeline: more steps in flight than the pipeline holds; collect first.");
    m_backend.activate();
    const bool classification = b.labels != nullptr;
    const std::int64_t x_bytes = b.batch * b.features * static_cast<std::int64_t>(sizeof(float));
    if (b.batch > b.input->rows()) throw Error("CudaStepPipeline: the batch exceeds the input tensor.");
    ensure_buffers(b.layers, b.input->rows(), classification ? 1 : b.outputs,
                   b.input->rows() * b.features * static_cast<std::int64_t>(sizeof(float)));
    m_begin = b;
    m_open = true;
    m_prepared = false;

    const int slot_index = m_next_slot;
    m_next_slot = (m_next_slot + 1) % static_cast<int>(m_slots.size());
    Slot& slot = m_slots[static_cast<std::size_t>(slot_index)];
    m_current = InFlight{};
    m_current.slot = slot_index;
    m_current.step = b.step;
    m_current.batch = b.batch;
    m_current.outputs = b.outputs;
    m_current.classification = classification;
    m_current.stats = b.stats;
    m_current.scaling_off = m_spec.mode == LossScalingMode::off;
    // Back to back with the previous step (still in flight): time it from that step's end.
    m_current.previous_slot = m_flight.empty() ? -1 : m_flight.back().slot;

    // ---- the inputs, through the slot's pinned buffer (free: its last step was collected)
    cudaStream_t stream = m_backend.stream();
    auto* up = static_cast<unsigned char*>(slot.pinned);
    std::memcpy(up, b.x, static_cast<std::size_t>(x_bytes));
    MANTISSA_CUDA_CHECK(cudaEventRecord(slot.started, stream));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(static_cast<CudaTensor*>(b.input)->data(), up,
                                        static_cast<std::size_t>(x_bytes), cudaMemcpyHostToDevice, stream));
    std::size_t at = static_cast<std::size_t>(x_bytes);
    if (classification) {
        for (std::int64_t r = 0; r < b.batch; ++r)  // the kernel indexes the logits with them
            if (b.labels[r] < 0 || b.labels[r] >= b.outputs)
                throw Error("CudaStepPipeline: label " + std::to_string(b.labels[r]) + " in row " + std::to_string(r) +
                            " is outside the " + std::to_string(b.outputs) + " classes.");
        const std::size_t n = static_cast<std::size_t>(b.batch) * sizeof(std::int32_t);
        std::memcpy(up + at, b.labels, n);
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_labels, up + at, n, cudaMemcpyHostToDevice, stream));
        at += n;
    } else {
        const std::size_t n = static_cast<std::size_t>(b.batch * b.outputs) * sizeof(float);
        std::memcpy(up + at, b.targets, n);
        MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_targets, up + at, n, cudaMemcpyHostToDevice, stream));
        at += n;
    }
    at = (at + 7) / 8 * 8;
    std::memcpy(up + at, &b.lr, sizeof(double));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(m_lr, up + at, sizeof(double), cudaMemcpyHostToDevice, stream));

    // ---- eager, record, or replay
    m_graph = b.stats ? 1 : 0;
    Graph& graph = m_graphs[static_cast<std::size_t>(m_graph)];
    GraphPolicy::Action action = GraphPolicy::Action::eager;
    if (b.replayable) {
        Fingerprint f;
        f.add(b.generation).add(b.batch).add(classification).add(b.outputs).add(b.layers);
        f.add(m_backend.scratch_generation()).add(m_buffer_generation).add(static_cast<const void*>(b.input));
        action = graph.policy.next(f.value());
        if (action == GraphPolicy::Action::replay && !graph.exec) action = GraphPolicy::Action::eager;
    }
    if (action == GraphPolicy::Action::replay) {
        MANTISSA_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
        ++m_replays;
        m_current.replayed = true;
        m_current.elements = m_last_elements[m_graph];
        m_issue = false;
        return false;
    }
    if (action == GraphPolicy::Action::capture) {
        if (graph.exec) cudaGraphExecDestroy(graph.exec);
        graph.exec = nullptr;
        const cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
        if (e == cudaSuccess) {
            m_capturing = true;
        } else {
            cudaGetLastError();
            graph.policy.captured(false, std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e));
        }
    }
    m_issue = true;
    prologue();
    return true;
}

void CudaStepPipeline::prologue() {
    cudaStream_t stream = m_backend.stream();
    auto* header = reinterpret_cast<BlockHeader*>(block());
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(block() + m_layout.counts, 0, m_layout.row_loss - m_layout.counts, stream));
    MANTISSA_CUDA_CHECK(cudaMemsetAsync(&header->mse_sum, 0, sizeof(double), stream));
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(&header->before, m_scaler, sizeof(ScalerState), cudaMemcpyDeviceToDevice, stream));
    m_rounding_sink.clear();
    // The body is issued from its start (again, after a failed recording): its samples too.
    m_sample_floats = 0;
    for (SampleChunk& c : m_sample_chunks) c.used = 0;
    m_backend.defer_rounding_stats(
        m_begin.stats ? m_rounding_sink.data() : nullptr, m_begin.stats ? m_layout.layers : 0,
        m_begin.stats ? reinterpret_cast<unsigned long long*>(block() + m_layout.rounding) : nullptr);
}

void CudaStepPipeline::loss(const Tensor& output, Tensor* grad) {
    auto* header = reinterpret_cast<BlockHeader*>(block());
    if (m_current.classification)
        m_backend.softmax_cross_entropy_async(output, m_labels, m_begin.batch, m_scaler, grad,
                                              reinterpret_cast<float*>(block() + m_layout.row_loss),
                                              reinterpret_cast<std::int32_t*>(block() + m_layout.row_correct));
    else
        m_backend.mse_async(output, m_targets, m_begin.batch, m_scaler, grad, &header->mse_sum);
}

void CudaStepPipeline::check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) {
    if (static_cast<int>(grads.size()) > 2 * m_layout.layers)
        throw Error("CudaStepPipeline: more gradients than two per layer.");
    const CudaBackend::CheckPlan& plan = plan_for(grads, want_summary);
    auto* header = reinterpret_cast<BlockHeader*>(block());
    m_backend.unscale_and_check_async(plan, m_scaler, reinterpret_cast<CheckResult*>(block() + m_layout.results),
                                      &header->first_bad);
}

void CudaStepPipeline::optimizer_step(const OptimizerTensors& t, const OptimizerHyper& h, int report_layer) {
    check_weight_rounding(t);
    cudaStream_t stream = m_backend.stream();
    // With scaling off nothing is skipped (GradScaler disabled): no skip flag for the kernels.
    const ScalerState* skip_on = m_current.scaling_off ? nullptr : m_scaler;
    const int* skip = skip_on ? &m_scaler->found_inf : nullptr;
    if (!m_prepared) {  // once per step: the scalars from the device step counter and rate
        if (h.kind == OptimizerKind::sgd)
            launch_sgd_prepare(m_sgd, m_optimizer_steps, m_lr, h.momentum, h.weight_decay, skip, stream);
        else
            launch_adamw_prepare(m_adamw, m_optimizer_steps, 0.0, h.beta1, h.beta2, h.eps, h.weight_decay, skip, stream,
                                 m_lr);
        m_prepared = true;
    }
    unsigned long long* counts =
        report_layer >= 0 && report_layer < m_layout.layers
            ? reinterpret_cast<unsigned long long*>(block() + m_layout.counts) + 2 * report_layer
            : nullptr;
    if (h.kind == OptimizerKind::sgd) {
        SgdParams p;  // the rate and first_step come from m_sgd
        p.momentum = h.momentum;
        p.weight_decay = h.weight_decay;
        m_backend.sgd_step_async(t, p, skip_on, counts, m_sgd);
    } else {
        m_backend.adamw_step_async(t, m_adamw, skip_on, counts);
    }
}

void CudaStepPipeline::epilogue() {
    cudaStream_t stream = m_backend.stream();
    auto* header = reinterpret_cast<BlockHeader*>(block());
    m_backend.update_loss_scale_async(m_scaler, m_spec);
    MANTISSA_CUDA_CHECK(
        cudaMemcpyAsync(&header->after, m_scaler, sizeof(ScalerState), cudaMemcpyDeviceToDevice, stream));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(&header->optimizer_steps, m_optimizer_steps, sizeof(long long),
                                        cudaMemcpyDeviceToDevice, stream));
    m_backend.defer_rounding_stats(nullptr, 0, nullptr);
}

bool CudaStepPipeline::body_failed(const std::string& what) {
    if (!m_open || !m_capturing) return false;
    // An illegal call under capture fails at the call (and invalidates the capture): end it,
    // turn recording off for the run, and let the caller issue the body again, eagerly.
    m_capturing = false;
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(m_backend.stream(), &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    Graph& graph = m_graphs[static_cast<std::size_t>(m_graph)];
    graph.policy.captured(false, "recording the step as a CUDA graph failed: " + what);
    m_graph_note = graph.policy.last_reason();
    m_prepared = false;
    prologue();
    return true;
}

bool CudaStepPipeline::end() {
    if (!m_open) throw Error("CudaStepPipeline: end() without begin().");
    cudaStream_t stream = m_backend.stream();
    m_recorded = false;
    std::vector<SampleCopy> issued;  // the samples the body wrote, when it was issued
    if (m_issue) {
        for (const SampleChunk& c : m_sample_chunks)
            if (c.used > 0) issued.push_back({c.data, c.used});
        epilogue();
        if (m_current.stats) {
            m_current.elements.clear();
            for (const RoundingStats& r : m_rounding_sink) m_current.elements.push_back(r.elements);
            m_last_elements[m_graph] = m_current.elements;
        }
        if (m_capturing) {
            m_capturing = false;
            Graph& graph = m_graphs[static_cast<std::size_t>(m_graph)];
            cudaGraph_t g = nullptr;
            cudaError_t e = cudaStreamEndCapture(stream, &g);
            if (e == cudaSuccess) e = cudaGraphInstantiate(&graph.exec, g, 0);
            if (g) cudaGraphDestroy(g);
            if (e != cudaSuccess) {
                cudaGetLastError();
                graph.exec = nullptr;
                graph.policy.captured(false, std::string("recording the step as a CUDA graph failed: ") +
                                                 cudaGetErrorString(e));
                m_graph_note = graph.policy.last_reason();
                m_prepared = false;  // the recorded prepare kernel never ran
                prologue();          // nothing recorded ran: the caller issues the body again, eagerly
                return true;
            }
            graph.policy.captured(true);
            ++m_captures;
            m_graph_samples[m_graph] = issued;
            MANTISSA_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));  // recording ran nothing
            m_recorded = true;
        } else {
            ++m_eager;
        }
    }
    Slot& slot = m_slots[static_cast<std::size_t>(m_current.slot)];
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(slot.pinned, m_block, m_layout.bytes, cudaMemcpyDeviceToHost, stream));
    // A replay wrote where its recording did.
    copy_samples_down(slot, m_current.replayed ? m_graph_samples[m_graph] : issued);
    MANTISSA_CUDA_CHECK(cudaEventRecord(slot.finished, stream));
    if (m_sample_chunks.size() > 1) merge_sample_chunks();
    m_flight.push_back(std::move(m_current));
    m_open = false;
    return false;
}

bool CudaStepPipeline::collect(StepResults& out) {
    if (m_flight.empty()) return false;
    InFlight f = std::move(m_flight.front());
    m_flight.pop_front();
    Slot& slot = m_slots[static_cast<std::size_t>(f.slot)];
    MANTISSA_CUDA_CHECK(cudaEventSynchronize(slot.finished));
    const auto* base = static_cast<const unsigned char*>(slot.pinned);
    BlockHeader h;
    std::memcpy(&h, base, sizeof h);

    out.step = f.step;
    out.replayed = f.replayed;
    // Valid until the slot is written again (the next begin).
    out.samples = f.samples > 0 ? std::span<const float>(static_cast<const float*>(slot.samples),
                                                         static_cast<std::size_t>(f.samples))
                                : std::span<const float>();
    float ms = 0;
    // The previous slot's event is still this one's: a slot is recorded again only after the
    // step two later begins, and this step is collected before that.
    const cudaEvent_t from =
        f.previous_slot >= 0 ? m_slots[static_cast<std::size_t>(f.previous_slot)].finished : slot.started;
    MANTISSA_CUDA_CHECK(cudaEventElapsedTime(&ms, from, slot.finished));
    out.seconds = static_cast<double>(ms) / 1e3;
    out.scale = h.before.scale;
    out.next_scale = h.after.scale;
    out.growth_tracker = h.after.growth_tracker;
    out.skipped = h.after.skipped != 0;
    out.optimizer_steps = h.optimizer_steps;

    // The loss as CudaBackend::softmax_cross_entropy / mse form it: row order in double, then FP32.
    out.loss = {};
    if (f.classification) {
        const auto* loss = reinterpret_cast<const float*>(base + m_layout.row_loss);
        const auto* correct = reinterpret_cast<const std::int32_t*>(base + m_layout.row_correct);
        double total = 0;
        for (std::int64_t r = 0; r < f.batch; ++r) {
            total += static_cast<double>(loss[r]);
            out.loss.correct += correct[r];
        }
        if (f.batch > 0) out.loss.loss = static_cast<double>(static_cast<float>(total / static_cast<double>(f.batch)));
    } else {
        const std::int64_t n = f.batch * f.outputs;
        if (n > 0) out.loss.loss = static_cast<double>(static_cast<float>(h.mse_sum / static_cast<double>(n)));
    }

    // The check, as CudaBackend::unscale_and_check reads it.
    const int grads = 2 * m_layout.layers;
    const auto* res = reinterpret_cast<const CheckResult*>(base + m_layout.results);
    out.check = {};
    out.summaries.assign(f.stats ? static_cast<std::size_t>(grads) : 0, GradientSummary{});
    for (int t = 0; t < grads; ++t) {
        out.check.sum_squares += res[t].sum_squares;
        if (!f.stats) continue;
        GradientSummary& s = out.summaries[static_cast<std::size_t>(t)];
        float amax;
        std::memcpy(&amax, &res[t].amax_bits, sizeof amax);
        s.amax = static_cast<double>(amax);
        s.nonfinite = static_cast<std::int64_t>(res[t].nonfinite);
        for (int b = 0; b < histogram_bins; ++b) s.exponents.counts[static_cast<std::size_t>(b)] = res[t].histogram[b];
    }
    if (h.first_bad != INT_MAX) {
        out.check.found_nonfinite = true;
        out.check.first_nonfinite = h.first_bad;
    }

    const auto* counts = reinterpret_cast<const unsigned long long*>(base + m_layout.counts);
    out.counts.assign(static_cast<std::size_t>(m_layout.layers), UpdateCounts{});
    for (int l = 0; l < m_layout.layers; ++l)
        out.counts[static_cast<std::size_t>(l)] = {static_cast<std::int64_t>(counts[2 * l]),
                                                   static_cast<std::int64_t>(counts[2 * l + 1])};
    out.rounding.clear();
    if (f.stats) {
        const auto* r = reinterpret_cast<const unsigned long long*>(base + m_layout.rounding);
        for (std::size_t l = 0; l < f.elements.size(); ++l) {
            RoundingStats s;
            s.elements = f.elements[l];
            s.zeros_before = static_cast<std::int64_t>(r[4 * l + 0]);
            s.zeros = static_cast<std::int64_t>(r[4 * l + 1]);
            s.subnormals = static_cast<std::int64_t>(r[4 * l + 2]);
            s.nonfinite = static_cast<std::int64_t>(r[4 * l + 3]);
            out.rounding.push_back(s);
        }
    }
    return true;
}

std::string CudaStepPipeline::recording_off() const {
    for (const Graph& g : m_graphs)
        if (g.policy.disabled()) return g.policy.last_reason();
    return {};
}

std::string CudaStepPipeline::describe() const {
    std::string s = "CUDA graphs: " + std::to_string(m_captures) + " recorded, " + std::to_string(m_replays) +
                    " steps replayed, " + std::to_string(m_eager) + " eager";
    for (const Graph& g : m_graphs)
        if (g.policy.disabled()) return s + "; off for this run: " + g.policy.last_reason();
    if (!m_graph_note.empty()) s += "; last dropped: " + m_graph_note;
    return s;
}

}  // namespace mantissa::cuda
