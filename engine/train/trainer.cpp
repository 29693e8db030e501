// Trainer: the step loop of one run (see trainer.h for the order of a step).
#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <numeric>
#include <thread>

#include <nlohmann/json.hpp>

#include "backend/sync_step_pipeline.h"
#include "config/json_number.h"
#include "data/text_corpus.h"
#include "error.h"
#include "train/lr_schedule.h"
#include "weights/state_dict.h"
#include "config/throughput.h"

namespace mantissa {

namespace {

// The backend's FP8 recipe from precision.fp8.
Fp8Recipe fp8_recipe_of(const Fp8Spec& f) {
    Fp8Recipe recipe;
    recipe.history_len = f.amax_history_len;
    recipe.margin = f.margin;
    recipe.algo = f.amax_compute_algo;
    recipe.scaling = f.scaling;
    recipe.power_of_two = f.power_of_two_scales;
    return recipe;
}

using json = nlohmann::json;


json loss_scaling_json(const LossScalingSpec& s) {
    json j = {{"mode", loss_scaling_mode_name(s.mode)},
              {"init_scale", s.init_scale},
              {"growth_factor", s.growth_factor},
              {"backoff_factor", s.backoff_factor},
              {"growth_interval", s.growth_interval}};
    j["min_scale"] = s.min_scale ? json(*s.min_scale) : json(nullptr);
    j["max_scale"] = s.max_scale ? json(*s.max_scale) : json(nullptr);
    return j;
}

// "69 GB", "1.5 GB", "512 MB": decimal units, as memory is sold and as `free -h` rounds.
std::string memory_text(std::int64_t bytes) {
    char buf[32];
    const double gb = static_cast<double>(bytes) / 1e9;
    if (gb >= 10) std::snprintf(buf, sizeof buf, "%.0f GB", gb);
    else if (gb >= 1) std::snprintf(buf, sizeof buf, "%.1f GB", gb);
    else std::snprintf(buf, sizeof buf, "%.0f MB", static_cast<double>(bytes) / 1e6);
    return buf;
}

// An FP8 layer's scaling state as it stands (Fp8LayerScaling): each tensor's scale and the newest
// entry of its amax history.
Fp8LayerScaling fp8_layer_scaling(const Fp8State& state) {
    auto tensor = [&](Fp8Role role) {
        const Fp8TensorSnapshot s = state.snapshot(role);
        return Fp8TensorScaling{s.scale, s.amax_history.empty() ? 0.0 : s.amax_history.front()};
    };
    return {tensor(Fp8Role::input), tensor(Fp8Role::weight), tensor(Fp8Role::grad_output)};
}

// The divergence event's sentence when the loss scale leaves FP32's normal range (loss_scaler.h,
// loss_scale_collapsed). `backed_off`: it got there by backing off from overflowing steps.
std::string collapse_message(float scale, bool backed_off) {
    std::string msg = "The loss scale collapsed to " + format_event_number(scale) +
                      " (below FP32's smallest normal number, 1.18e-38): ";
    msg += scale == 0 ? "every step from now on is skipped, since nothing can be unscaled from a scale of 0."
                      : "unscaling by it overflows or loses the gradients, so the steps from now on are skipped "
                        "or learn nothing.";
    if (backed_off)
        msg += " The gradients were non-finite at every scale tried, so the scale is not the cause: look for the "
               "step where the loss or the weights first went inf or NaN.";
    return msg;
}

std::string hidden_text(const std::vector<int>& hidden) {
    std::string s = "[";
    for (std::size_t i = 0; i < hidden.size(); ++i) s += (i ? ", " : "") + std::to_string(hidden[i]);
    return s + "]";
}

}  // namespace

std::int64_t cpu_training_bytes(const ModelDesc& desc, const std::vector<LayerFormats>& formats,
                                std::int64_t batch, const TrainSpec& train, const OpFormats& ops,
                                const RoundingSpec& rounding) {
    // Counted in double: a model at the documented limits (16 layers of 65536) passes 2^63 bytes
    // nowhere near, but the products of int64 factors are safer out of integer arithmetic.
    const bool sgd = train.optimizer == OptimizerKind::sgd;
    const double state_per_param = sgd ? (train.momentum != 0.0 ? 1 : 0) : 2;
    const double per_narrow = rounding.weights == WeightRounding::kahan ? 1 : 0;
    const double bytes = network_values(desc, formats, batch, state_per_param, ops, per_narrow) * sizeof(float);
    return bytes >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(bytes);
}

void check_cpu_memory(const ModelSpec& model, std::int64_t batch, std::int64_t bytes, std::int64_t physical) {
    if (physical <= 0 || bytes <= physical) return;
    const std::string model_text =
        model.kind == "mlp" ? "model.hidden " + hidden_text(model.hidden) : "The " + model.kind + " model";
    const std::string advice = model.kind == "mlp" ? "use fewer or narrower hidden layers" : "use fewer or narrower layers";
    throw Error(model_text + " with batch " + std::to_string(batch) + " needs about " + memory_text(bytes) +
                " on the CPU backend, more than this machine's " + memory_text(physical) + "; " + advice +
                ", or a smaller train.batch_size.");
}

std::int64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0;
    return static_cast<std::int64_t>(pages) * page;
}

Trainer::Trainer(const Experiment& experiment, Dataset data, std::unique_ptr<Backend> backend,
                 TrainerOptions options)
    : m_experiment(experiment), m_data(std::move(data)), m_backend(std::move(backend)),
      m_scaler(experiment.precision.loss_scaling), m_start(std::chrono::steady_clock::now()) {
    if (!m_backend) throw Error("Trainer: no backend.");
    const TrainSpec& t = m_experiment.train;
    if (t.batch_size < 1) throw Error("train.batch_size must be at least 1.");
    if (m_data.train.rows < 1) throw Error("The dataset's training split is empty.");
    if (!(t.lr >= 0) || !std::isfinite(t.lr)) throw Error("train.lr must be a finite number >= 0.");
    // A dataset made in code may leave its shape out: its features are then a flat sample.
    const SampleShape input = m_data.shape.numel() == m_data.features ? m_data.shape : SampleShape{m_data.features, 1, 1};
    m_desc = describe_model(m_experiment.model, input, m_data.outputs, m_data.is_regression(),
                            m_data.text ? m_data.positions() : 0);

    m_layer_settings.assign(m_desc.layers.size(), LayerPrecision::automatic);
    for (const auto& [name, precision] : m_experiment.precision.layers)
        m_layer_settings[static_cast<std::size_t>(precision_layer(m_desc, name, "precision.layers." + name + ": "))] =
            precision;

    m_steps_per_epoch = (m_data.train.rows + t.batch_size - 1) / t.batch_size;
    m_total_steps = t.steps > 0 ? t.steps : static_cast<std::int64_t>(t.epochs) * m_steps_per_epoch;
    if (m_total_steps < 1) throw Error("train.epochs or train.steps must give at least one step.");
    m_batches = std::make_unique<TrainBatches>(
        m_data, t.seed, t.batch_size,
        options.prefetch_batches && std::thread::hardware_concurrency() > 1 ? TrainBatches::Prefetch::on
                                                                             : TrainBatches::Prefetch::off);

    const Fp8Recipe recipe = fp8_recipe_of(m_experiment.precision.fp8);
    if (recipe.history_len < 1) throw Error("precision.fp8.amax_history_len must be at least 1.");

    // The CPU backend allocates host memory as it goes: a model that cannot fit is refused before
    // the first tensor rather than found out by the kernel's OOM killer. (CUDA's allocator reports
    // its own out-of-memory errors.)
    const std::vector<LayerFormats> formats = resolve_formats();
    const std::int64_t needed =
        cpu_training_bytes(m_desc, formats, t.batch_size, t, op_formats(), m_experiment.precision.rounding);
    if (m_backend->name() == "cpu") check_cpu_memory(m_experiment.model, t.batch_size, needed, physical_memory_bytes());
    try {
        m_network = std::make_unique<Network>(*m_backend, m_desc, t.batch_size, t.seed, recipe, formats, op_formats());
        // model.init_from: the file's values replace the seeded ones before the optimizer sees them.
        if (!m_experiment.model.init_from.empty()) {
            try {
                load_state_dict(*m_network, m_experiment.model.init_from);
            } catch (const Error& e) {
                throw Error(std::string("model.init_from: ") + e.what());
            }
        }
        m_optimizer = std::make_unique<Optimizer>(*m_backend, *m_network, t, m_experiment.precision.rounding.weights);
    } catch (const std::bad_alloc&) {
        m_optimizer.reset();
        m_network.reset();
        throw Error((m_experiment.model.kind == "mlp" ? "model.hidden " + hidden_text(m_experiment.model.hidden)
                                                       : "The " + m_experiment.model.kind + " model") +
                    " with batch " +
                    std::to_string(t.batch_size) + " does not fit in memory: allocating the model (about " +
                    memory_text(needed) + " on the CPU backend) failed.");
    }
    m_backend->seed_stochastic_rounding(t.seed);
    if (!t.what_if.formats.empty()) {
        m_what_if_refused = m_backend->unsupported(BackendOp::what_if, Format::fp32);
        if (m_what_if_refused.empty()) {
            m_what_if = std::make_unique<WhatIfStatistics>(t.what_if, recipe, m_network->layer_count());
            m_observers.add(m_what_if.get());
        }
    }
    if (t.block_scales.enabled) {
        // The views read operands back mid-step as the what-if statistics do. With "own" there is
        // nothing to say on a backend that cannot: it runs no block format either.
        const std::string refused = m_backend->unsupported(BackendOp::what_if, Format::fp32);
        if (refused.empty()) {
            m_block_scales = std::make_unique<BlockScaleViews>(t.block_scales);
            m_observers.add(m_block_scales.get());
        } else if (t.block_scales.format) {
            m_block_scales_refused = refused;
        }
    }
    if (t.accumulation_error) {
        // Read back mid-step as the what-if statistics are; the sentence is this statistic's own.
        if (m_backend->unsupported(BackendOp::what_if, Format::fp32).empty()) {
            m_accumulation = std::make_unique<AccumulationErrorStatistics>();
            m_observers.add(m_accumulation.get());
        } else {
            m_accumulation_refused = "this backend (" + m_backend->name() +
                                     ") cannot read a matmul's operands back in the middle of a step yet; the CPU "
                                     "backend (backend: cpu) measures them.";
        }
    }
    if (!m_observers.empty()) m_network->set_operand_observer(&m_observers);
    const LossScalingSpec& scaling = m_experiment.precision.loss_scaling;
    if (options.make_pipeline) m_pipeline = options.make_pipeline(*m_backend, scaling);
    else if (!options.synchronous) m_pipeline = m_backend->create_pipeline(scaling);
    if (!m_pipeline) m_pipeline = std::make_unique<SyncStepPipeline>(*m_backend, scaling, options.sync_lag);
    m_test_order.resize(static_cast<std::size_t>(m_data.test.rows));
    std::iota(m_test_order.begin(), m_test_order.end(), std::int64_t{0});
}

Trainer::~Trainer() {
    // The pipeline and the tensors before the backend that made them.
    m_pipeline.reset();
    m_optimizer.reset();
    m_network.reset();
}

double Trainer::elapsed_s() const {
    const auto now = m_paused_at ? *m_paused_at : std::chrono::steady_clock::now();
    return m_time_before + std::chrono::duration<double>(now - m_start).count();
}

void Trainer::restart_clock() {
    m_start = std::chrono::steady_clock::now();
    m_paused_at.reset();
}

void Trainer::pause_clock() {
    if (!m_paused_at) m_paused_at = std::chrono::steady_clock::now();
}

void Trainer::resume_clock() {
    if (!m_paused_at) return;
    m_start += std::chrono::steady_clock::now() - *m_paused_at;
    m_paused_at.reset();
}

std::vector<LayerFormats> Trainer::resolve_formats() const {
    std::vector<LayerFormats> f;
    for (const LayerSetting& p : m_layer_settings) {
        f.push_back(resolve_layer_formats(p, m_experiment.precision.autocast,
                                          m_experiment.precision.master_weights));
        f.back().stochastic_gradients = m_experiment.precision.rounding.gradients == GradientRounding::stochastic;
    }
    return f;
}

OpFormats Trainer::op_formats() const {
    return resolve_op_formats(m_experiment.precision.ops, m_experiment.precision.autocast);
}

void Trainer::apply_formats(const std::vector<LayerSetting>& old_settings, const PrecisionSpec& old_precision) {
    try {
        m_network->set_formats(resolve_formats(), op_formats());
    } catch (const Error&) {
        // The backend refused the new formats before anything was re-declared: the settings go
        // back to what the network still runs.
        m_layer_settings = old_settings;
        m_experiment.precision = old_precision;
        throw;
    }
    ++m_generation;  // tensors may have been re-declared
    m_pipeline->invalidate("a layer's formats changed");
}

LayerSetting Trainer::layer_setting(int layer) const {
    return m_layer_settings.at(static_cast<std::size_t>(layer));
}

double Trainer::current_lr() const {
    const TrainSpec& t = m_experiment.train;
    return learning_rate_at(t.schedule, t.lr, m_step, t.warmup_steps, m_total_steps);
}

TrainerState Trainer::state() const {
    require_idle("state()");
    TrainerState s;
    s.step = m_step;
    s.time_s = elapsed_s();
    s.loss_scale = m_scaler.scale();
    s.growth_tracker = m_scaler.growth_tracker();
    s.optimizer_steps = m_optimizer->steps_taken();
    s.stochastic_rounding = m_backend->stochastic_rounding_position();
    s.bf16_matmul = m_backend->bf16_matmul_path();
    s.diverged = m_diverged;
    s.scale_collapsed = m_scale_collapsed;
    return s;
}

void Trainer::restore(const TrainerState& s) {
    require_idle("restore()");
    if (s.step < 0 || s.step > m_total_steps)
        throw Error("The checkpoint is at step " + std::to_string(s.step) + ", beyond this run's " +
                    std::to_string(m_total_steps) + " steps.");
    m_pipeline->restore({s.loss_scale, s.growth_tracker, s.optimizer_steps});
    m_scaler.restore(s.loss_scale, s.growth_tracker);
    m_optimizer->record_steps_taken(s.optimizer_steps);
    m_backend->set_stochastic_rounding_position(s.stochastic_rounding);
    if (!s.bf16_matmul.empty()) m_backend->set_bf16_matmul_path(s.bf16_matmul);  // the run's own, not this process's
    m_diverged = s.diverged;
    m_scale_collapsed = s.scale_collapsed;
    m_step = s.step;
    m_time_before = s.time_s;
    m_start = std::chrono::steady_clock::now();
    m_paused_at.reset();
    ++m_generation;  // the tensors' values changed under any recorded step
    m_pipeline->invalidate("a checkpoint was restored");
}

int Trainer::in_flight() const { return m_pipeline->in_flight(); }

std::string Trainer::pipeline_description() const { return m_pipeline->describe(); }

void Trainer::require_idle(const char* what) const {
    if (m_pipeline->in_flight() > 0)
        throw Error(std::string("Trainer: ") + what + " with " + std::to_string(m_pipeline->in_flight()) +
                    " step(s) in flight; flush() first.");
}

std::span<const StepReport> Trainer::report_until(int left_in_flight) {
    m_report_count = 0;
    while (m_pipeline->in_flight() > left_in_flight) report_one();
    return {m_reports.data(), m_report_count};
}

std::span<const StepReport> Trainer::advance() {
    issue();
    return report_until(m_pipeline->depth() - 1);
}

std::span<const StepReport> Trainer::flush() { return report_until(0); }

const StepReport& Trainer::step() {
    flush();  // no earlier step's report may share the buffer with this one
    issue();
    return flush().back();  // this step's report, whatever the pipeline's depth
}

void Trainer::issue() {
    if (done()) throw Error("The run has already taken its " + std::to_string(m_total_steps) + " steps.");
    const auto t0 = std::chrono::steady_clock::now();
    const TrainSpec& t = m_experiment.train;
    const int layers = m_network->layer_count();

    // ---- the batch (gathered during the previous step where a helper thread can)
    const std::int64_t epoch = m_step / m_steps_per_epoch;
    m_batches->take(m_step, m_batch);
    if (m_step + 1 < m_total_steps) m_batches->prefetch(m_step + 1);
    const std::int64_t count = m_batch.rows;

    const bool stats = t.layer_stats_every > 0 && m_step % t.layer_stats_every == 0;
    Issued issued;
    if (!m_issued_spare.empty()) {
        issued = std::move(m_issued_spare.back());
        m_issued_spare.pop_back();
    }
    issued.step = m_step;
    issued.epoch = epoch;
    issued.samples = count;
    issued.lr = current_lr();
    issued.stats = stats;
    issued.precisions.clear();
    for (int l = 0; l < layers; ++l) issued.precisions.push_back(m_network->formats(l).compute_format());

    // The pipeline sees rows: a sequence model's are its positions (count × T rows of one id).
    StepBegin b;
    b.step = m_step;
    b.batch = m_network->rows(count);
    b.input = &m_network->input();
    b.x = m_batch.x.data();
    b.features = m_desc.inputs();
    const bool classification = m_network->desc().loss == LossKind::cross_entropy;
    b.labels = classification ? m_batch.y.data() : nullptr;
    b.targets = classification ? nullptr : m_batch.targets.data();
    b.outputs = m_data.outputs;
    b.layers = layers;
    b.lr = issued.lr;
    b.stats = stats;
    b.generation = m_generation;
    // An injected value, and the partial last batch of an epoch (once per epoch: never stable),
    // run eagerly and leave any recorded step in place.
    b.replayable = m_inject_layer < 0 && count == t.batch_size;
    b.started = t0;
    m_issued.push_back(std::move(issued));

    // ---- forward, loss, backward, check, optimizer: issued unless the pipeline replays them
    bool issue_body = m_pipeline->begin(b);
    const bool replayed = !issue_body;
    for (;;) {
        if (issue_body) {
            try {
                issue_body_of_step(count, stats);
            } catch (const std::exception& e) {  // std::exception: the CUDA module's Error is its own type
                if (!m_pipeline->body_failed(e.what())) throw;
                continue;  // a recording was abandoned: nothing ran, issue it again
            }
        }
        if (!m_pipeline->end()) break;
        issue_body = true;  // a failed recording: nothing ran, issue it again
    }
    if (stats && m_pipeline->samples_after_step()) {
        // A replayed statistics step asks what the recorded one asked, where it asked it.
        const bool recorded = !replayed && m_pipeline->body_recorded();
        const auto follow = [&](auto& statistic) {
            if (!statistic) return;
            if (replayed) statistic->replay(m_step);
            else if (recorded) statistic->keep_recorded();
        };
        follow(m_what_if);
        follow(m_block_scales);
        follow(m_accumulation);
    }
    m_inject_layer = -1;
    ++m_step;
}

void Trainer::issue_body_of_step(std::int64_t count, bool stats) {
    const int layers = m_network->layer_count();
    m_backend->set_gradient_tracing(stats);
    // The forward's block quantisers keep their exponents for the views (they read x and W); set
    // at every step, so that a step abandoned halfway leaves nothing kept for the next.
    const bool views = stats && m_block_scales;
    m_backend->keep_block_exponents(views);
    // The what-if's whole-tensor amaxes, taken by the passes that read x and W anyway: this step's
    // forward casts, and (below) the optimizer's write of W before a statistics step.
    const bool what_if = m_what_if && !m_what_if->spec().formats.empty();
    m_backend->keep_operand_magnitudes(stats && what_if);
    m_network->forward_uploaded(count, true);
    // The backward's casts come after the layers showed their operands: nothing there to keep.
    m_backend->keep_operand_magnitudes(false);
    m_network->loss(*m_pipeline);
    // A pipeline that runs ahead of the host has the operands copied out with the step; the
    // statistics measure them when it is collected (report_one).
    StepPipeline* later = m_pipeline->samples_after_step() ? m_pipeline.get() : nullptr;
    if (stats && m_what_if) m_what_if->begin_step(m_step, later);
    if (stats && m_block_scales) m_block_scales->begin_step(m_step, later);
    if (stats && m_accumulation) m_accumulation->begin_step(m_step, later);
    m_network->backward(count, stats ? m_pipeline->rounding_sink() : nullptr);
    if (stats && m_what_if && !later) m_issued.back().what_if = m_what_if->take();
    if (views) {
        if (!later) m_issued.back().block_scales = m_block_scales->take();
        m_backend->keep_block_exponents(false);
    }
    if (stats && m_accumulation && !later) m_issued.back().accumulation = m_accumulation->take();
    if (m_inject_layer >= 0) m_backend->poke(m_network->grad_weight(m_inject_layer), 0, m_inject_value);
    // The one check, in backward order: the last layer's parameters first (fcN.dW, fcN.dB, ...,
    // fc1.dW, fc1.dB); the weights' gradients get the statistics.
    m_grads.clear();
    m_want.clear();
    m_checked.clear();
    const auto& params = m_network->parameters();
    for (int l = layers - 1; l >= 0; --l)
        for (std::size_t i = 0; i < params.size(); ++i)
            if (params[i].layer == l) {
                m_grads.push_back(params[i].tensors.grad);
                m_want.push_back(stats && params[i].tensors.weight);
                m_checked.push_back(i);
            }
    m_pipeline->check(m_grads, m_want);
    const std::int64_t every = m_experiment.train.layer_stats_every;
    m_backend->keep_operand_magnitudes(what_if && every > 0 && (m_step + 1) % every == 0);
    m_optimizer->step(*m_pipeline);
    m_backend->keep_operand_magnitudes(false);
    m_network->end_step();
}

void Trainer::report_one() {
    StepResults& res = m_results;
    if (!m_pipeline->collect(res) || m_issued.empty())
        throw Error("Trainer: the step pipeline has no results for an issued step.");
    Issued issued = std::move(m_issued.front());
    m_issued.pop_front();
    if (res.step != issued.step)
        throw Error("Trainer: the step pipeline reported step " + std::to_string(res.step) + " for step " +
                    std::to_string(issued.step) + ".");
    m_scaler.restore(res.next_scale, res.growth_tracker);
    m_optimizer->record_steps_taken(res.optimizer_steps);

    if (m_reports.size() <= m_report_count) m_reports.resize(m_report_count + 1);
    StepReport& r = m_reports[m_report_count++];
    r.layers.clear();
    if (issued.stats && m_pipeline->samples_after_step()) {  // measured now, from the step's samples
        // Each statistic takes its step even when another fails, so that none is left a step behind.
        std::exception_ptr failed;
        const auto take = [&](auto& statistic, auto& into) {
            if (!statistic) return;
            try {
                into = statistic->take_collected(issued.step, res.samples);
            } catch (...) {
                if (!failed) failed = std::current_exception();
            }
        };
        take(m_accumulation, issued.accumulation);
        take(m_what_if, issued.what_if);
        take(m_block_scales, issued.block_scales);
        if (failed) std::rethrow_exception(failed);
    }
    r.ops = std::move(issued.accumulation);
    issued.accumulation.clear();
    r.what_if = std::move(issued.what_if);
    issued.what_if.clear();
    r.block_scales = std::move(issued.block_scales);
    issued.block_scales.clear();
    r.events.clear();
    const int layers = m_network->layer_count();

    StepRecord& s = r.step;
    s = StepRecord{};
    s.step = issued.step;
    s.epoch = static_cast<std::int32_t>(issued.epoch);
    s.time_s = elapsed_s();
    s.loss = res.loss.loss;
    s.loss_scale = res.scale;
    s.overflow = res.check.found_nonfinite;
    s.skipped = res.skipped;
    s.grad_norm = std::sqrt(res.check.sum_squares);
    s.learning_rate = issued.lr;
    s.step_time_ms = res.seconds * 1e3;
    s.samples_per_s = step_samples_per_s(issued.samples, res.seconds);
    s.memory = m_backend->memory();
    r.samples = issued.samples;

    if (issued.stats) {
        // The FP8 states hold this step's scaling only while no later step has been issued: true
        // for a pipeline that reports each step at its end (depth 1). A deferred pipeline runs
        // ahead, so its rows leave the FP8 columns absent rather than show another step's.
        const bool fp8_known = m_pipeline->depth() == 1 && m_pipeline->in_flight() == 0;
        for (int l = 0; l < layers; ++l) {
            const GradientSummary& g = res.summaries.at(checked_index(l, true));
            const RoundingStats& rs = res.rounding.at(static_cast<std::size_t>(l));
            LayerStepRecord rec;
            rec.step = issued.step;
            rec.layer = l;
            rec.name = m_desc.layers[static_cast<std::size_t>(l)].name;
            rec.precision = issued.precisions[static_cast<std::size_t>(l)];
            rec.grad_amax = g.amax;
            rec.grad_elements = m_network->grad_weight(l).numel();
            const double n = static_cast<double>(std::max<std::int64_t>(1, rec.grad_elements));
            rec.frac_zero = static_cast<double>(rs.zeros) / n;
            rec.frac_subnormal = static_cast<double>(rs.subnormals) / n;
            rec.frac_nonfinite = static_cast<double>(g.nonfinite) / n;
            rec.frac_underflow = static_cast<double>(rs.underflows()) / n;
            const UpdateCounts c = static_cast<std::size_t>(l) < res.counts.size() && !res.skipped
                                       ? res.counts[static_cast<std::size_t>(l)]
                                       : UpdateCounts{};
            rec.frac_lost_updates = c.nonzero_updates > 0 ? static_cast<double>(c.lost_updates) /
                                                                static_cast<double>(c.nonzero_updates)
                                                          : 0.0;
            rec.grad_exponents = g.exponents;
            if (fp8_known && rec.precision == Format::fp8_e4m3)
                if (const Fp8State* state = m_network->fp8_state(l)) rec.fp8 = fp8_layer_scaling(*state);
            r.layers.push_back(std::move(rec));
        }
        // Measured by the forward and held by the layers until the next one: known when nothing
        // ran since, as the FP8 states are.
        if (fp8_known) m_network->op_stats(issued.step, r.ops);
    }

    if (res.check.found_nonfinite) {
        const NetworkParameter& p = m_network->parameters().at(
            m_checked.at(static_cast<std::size_t>(std::max(0, res.check.first_nonfinite))));
        const char* tensor = p.tensors.weight ? "dW" : "dB";
        const std::string& name = m_desc.layers[static_cast<std::size_t>(p.layer)].name;
        std::string msg = "Overflow: " + name + "'s " + (p.tensors.weight ? "weight" : "bias") +
                          " gradient held inf/NaN";
        msg += res.skipped ? "; the step was skipped." : "; the optimizer stepped anyway (loss scaling is off).";
        r.events.push_back({issued.step, s.time_s, EventKind::overflow, msg,
                            json{{"layer", name}, {"tensor", tensor}, {"skipped", res.skipped}}.dump()});
    }
    if (res.next_scale != res.scale) {
        // GradScaler backs off on an overflow and grows after growth_interval clean steps.
        const char* reason = res.check.found_nonfinite ? "backoff" : "growth";
        r.events.push_back({issued.step, s.time_s, EventKind::scale_change,
                            "Loss scale " + format_event_number(res.scale) + " -> " + format_event_number(res.next_scale) +
                                " (" + reason + ").",
                            json{{"old", res.scale}, {"new", res.next_scale}, {"reason", reason}}.dump()});
    }
    // A scale below FP32's normal range skips (or zeroes) every step after it, silently but for the
    // overflow events: said once when it gets there, and again only if a live change brought it
    // back and it collapses anew. From the host's report, so the same for every pipeline.
    if (m_scaler.mode() != LossScalingMode::off && loss_scale_collapsed(res.next_scale)) {
        if (!m_scale_collapsed)
            r.events.push_back({issued.step, s.time_s, EventKind::divergence,
                                collapse_message(res.next_scale, res.check.found_nonfinite && res.next_scale != res.scale),
                                json{{"reason", "loss_scale_collapsed"},
                                     {"scale", res.next_scale},
                                     {"step", issued.step},
                                     {"smallest_normal", smallest_normal_scale}}
                                    .dump()});
        m_scale_collapsed = true;
    } else {
        m_scale_collapsed = false;
    }
    // How the pipeline runs the steps, once each a run: what a person comparing throughput wants
    // to know (the steps' results are the same either way).
    if (!m_what_if_refused.empty()) {  // said once, at the first step reported
        r.events.push_back({issued.step, s.time_s, EventKind::notice, "No what-if statistics: " + m_what_if_refused,
                            json{{"what_if", "unsupported"}}.dump()});
        m_what_if_refused.clear();
    }
    if (!m_accumulation_refused.empty()) {
        r.events.push_back({issued.step, s.time_s, EventKind::notice,
                            "No accumulation-error statistics: " + m_accumulation_refused,
                            json{{"accumulation_error", "unsupported"}}.dump()});
        m_accumulation_refused.clear();
    }
    if (!m_block_scales_refused.empty()) {
        r.events.push_back({issued.step, s.time_s, EventKind::notice, "No block-scale views: " + m_block_scales_refused,
                            json{{"block_scales", "unsupported"}}.dump()});
        m_block_scales_refused.clear();
    }
    if (res.replayed && !m_told_replay) {
        m_told_replay = true;
        r.events.push_back({issued.step, s.time_s, EventKind::notice,
                            "From step " + std::to_string(issued.step) +
                                " each step replays as one recorded CUDA graph: the host no longer issues its "
                                "operations one by one.",
                            json{{"pipeline", "replaying"}}.dump()});
    }
    if (!m_told_recording_off) {
        const std::string off = m_pipeline->recording_off();
        if (!off.empty()) {
            m_told_recording_off = true;
            r.events.push_back({issued.step, s.time_s, EventKind::notice,
                                "CUDA graphs are off for the rest of this run (" + off +
                                    "); the steps run eagerly, with the same results.",
                                json{{"pipeline", "recording_off"}, {"reason", off}}.dump()});
        }
    }
    if (!std::isfinite(res.loss.loss)) {
        if (!m_diverged)
            r.events.push_back({issued.step, s.time_s, EventKind::divergence,
                                "The training loss is " + format_event_number(res.loss.loss) + ": the run has diverged.",
                                json{{"loss", json_number(res.loss.loss)}}.dump()});
        m_diverged = true;
    } else {
        m_diverged = false;
    }
    m_issued_spare.push_back(std::move(issued));
}

EvalRecord Trainer::evaluate() {
    require_idle("evaluate()");
    EvalRecord e;
    e.step = m_step;
    e.split = "test";
    const std::int64_t rows = m_data.test.rows;
    if (rows == 0) {
        e.loss = e.accuracy = std::nan("");
        return e;
    }
    const std::int64_t B = m_network->capacity();
    double total = 0;
    std::int64_t correct = 0;
    for (std::int64_t first = 0; first < rows; first += B) {
        const std::int64_t count = std::min(B, rows - first);
        if (m_data.text) {
            m_data.text->fill_test_batch(first, count, m_ids, m_y);
            ids_as_rows(m_ids, m_network->rows(count), m_x);
        } else {
            gather_batch(m_data, m_data.test, m_test_order, first, count, m_x, m_y, m_targets);
        }
        m_network->forward(m_x.data(), count, false);
        const LossResult l = m_network->loss(m_y.data(), m_targets.data(), count, 1.0f, false);
        total += l.loss * static_cast<double>(count);  // a mean over the batch's rows: every sample has T
        correct += l.correct;
    }
    // Text: nats per token (every test sample has T of them), accuracy per token.
    e.loss = total / static_cast<double>(rows);
    e.accuracy = m_data.is_regression() ? std::nan("")
                                        : static_cast<double>(correct) / static_cast<double>(m_network->rows(rows));
    return e;
}

// ---- live control

int Trainer::require_layer(const std::string& name) const {
    const int index = m_desc.layer_index(name);
    if (index < 0)
        throw Error("There is no layer \"" + name + "\"; the model's layers are " + m_desc.layer_names() + ".");
    return index;
}

std::size_t Trainer::checked_index(int layer, bool weight) const {
    const auto& params = m_network->parameters();
    for (std::size_t k = 0; k < m_checked.size(); ++k)
        if (params[m_checked[k]].layer == layer && params[m_checked[k]].tensors.weight == weight) return k;
    throw Error("Trainer: layer " + std::to_string(layer) + " has no checked gradient.");
}

int precision_layer(const ModelDesc& desc, const std::string& name, const std::string& where) {
    const int index = desc.layer_index(name);
    if (index < 0)
        throw Error(where + "the model has no layer \"" + name + "\" (its layers are " + desc.layer_names() + ").");
    const LayerInfo& l = desc.layers[static_cast<std::size_t>(index)];
    if (!l.takes_precision)
        throw Error(where + name + " is a " + l.kind +
                    " layer, which keeps its statistics and parameters in FP32 and writes its input's format; a "
                    "precision applies to linear and conv2d layers.");
    return index;
}

Event Trainer::make_setting_event(const std::string& key, const std::string& old_value,
                                  const std::string& new_value, bool quote) {
    json data = {{"key", key}};
    if (quote) {
        data["old"] = old_value;
        data["new"] = new_value;
    } else {
        data["old"] = json::parse(old_value);
        data["new"] = json::parse(new_value);
    }
    return {m_step, elapsed_s(), EventKind::setting_change, key + ": " + old_value + " -> " + new_value + ".",
            data.dump()};
}

Event Trainer::set_layer_precision(const std::string& layer, const LayerSetting& precision) {
    require_idle("set_layer_precision");
    const std::vector<LayerSetting> old_settings = m_layer_settings;
    const PrecisionSpec old_precision = m_experiment.precision;
    require_layer(layer);
    const int index = precision_layer(m_desc, layer, "");
    const LayerSetting old = m_layer_settings[static_cast<std::size_t>(index)];
    m_layer_settings[static_cast<std::size_t>(index)] = precision;
    if (precision == LayerSetting{}) m_experiment.precision.layers.erase(layer);
    else m_experiment.precision.layers[layer] = precision;
    apply_formats(old_settings, old_precision);
    return make_setting_event("precision.layers." + layer, layer_setting_text(old), layer_setting_text(precision),
                              true);
}

Event Trainer::set_op_precision(const std::string& op_class, OpPrecision precision) {
    require_idle("set_op_precision");
    const std::vector<LayerSetting> old_settings = m_layer_settings;
    const PrecisionSpec old_precision = m_experiment.precision;
    OpPrecision* setting = op_class == "softmax" ? &m_experiment.precision.ops.softmax
                           : op_class == "layernorm" ? &m_experiment.precision.ops.layernorm
                                                     : nullptr;
    if (!setting) throw Error("precision.ops." + op_class + ": there is no such op class; the classes are softmax and layernorm.");
    const OpPrecision old = *setting;
    *setting = precision;
    apply_formats(old_settings, old_precision);
    return make_setting_event("precision.ops." + op_class, op_precision_name(old), op_precision_name(precision), true);
}

Event Trainer::set_autocast(Autocast autocast) {
    require_idle("set_autocast");
    const std::vector<LayerSetting> old_settings = m_layer_settings;
    const PrecisionSpec old_precision = m_experiment.precision;
    const Autocast old = m_experiment.precision.autocast;
    m_experiment.precision.autocast = autocast;
    apply_formats(old_settings, old_precision);
    return make_setting_event("precision.autocast", autocast_name(old), autocast_name(autocast), true);
}

Event Trainer::set_master_weights(bool enabled) {
    require_idle("set_master_weights");
    const std::vector<LayerSetting> old_settings = m_layer_settings;
    const PrecisionSpec old_precision = m_experiment.precision;
    const bool old = m_experiment.precision.master_weights;
    m_experiment.precision.master_weights = enabled;
    apply_formats(old_settings, old_precision);
    return make_setting_event("precision.master_weights", old ? "true" : "false",
                              enabled ? "true" : "false", false);
}

Event Trainer::set_fp8_scaling(Fp8Scaling scaling) {
    require_idle("set_fp8_scaling");
    const Fp8Scaling old = m_experiment.precision.fp8.scaling;
    m_network->set_fp8_scaling(scaling);  // refused (nothing changed) where the backend lacks it
    m_experiment.precision.fp8.scaling = scaling;
    if (m_what_if) m_what_if->set_fp8_recipe(fp8_recipe_of(m_experiment.precision.fp8));
    m_pipeline->invalidate("precision.fp8.scaling changed");  // a captured step holds the old recipe
    return make_setting_event("precision.fp8.scaling", fp8_scaling_name(old), fp8_scaling_name(scaling), true);
}

Event Trainer::set_rounding(const RoundingSpec& rounding) {
    require_idle("set_rounding");
    const RoundingSpec old = m_experiment.precision.rounding;
    if (rounding.weights != old.weights) m_optimizer->set_weight_rounding(rounding.weights);  // may refuse
    if (rounding.gradients != old.gradients) {
        const std::vector<LayerSetting> old_settings = m_layer_settings;
        PrecisionSpec old_precision = m_experiment.precision;
        old_precision.rounding.weights = rounding.weights;  // the optimizer's change stands
        m_experiment.precision.rounding.gradients = rounding.gradients;
        try {
            apply_formats(old_settings, old_precision);
        } catch (const Error&) {
            m_optimizer->set_weight_rounding(old.weights);
            m_experiment.precision.rounding = old;
            throw;
        }
    }
    m_experiment.precision.rounding = rounding;
    m_pipeline->invalidate("precision.rounding changed");
    if (rounding.weights == old.weights)
        return make_setting_event("precision.rounding.gradients", gradient_rounding_name(old.gradients),
                                  gradient_rounding_name(rounding.gradients), true);
    if (rounding.gradients == old.gradients)
        return make_setting_event("precision.rounding.weights", weight_rounding_name(old.weights),
                                  weight_rounding_name(rounding.weights), true);
    const auto text = [](const RoundingSpec& r) {
        return json{{"gradients", gradient_rounding_name(r.gradients)}, {"weights", weight_rounding_name(r.weights)}};
    };
    return make_setting_event("precision.rounding", text(old).dump(), text(rounding).dump(), false);
}

Event Trainer::set_loss_scaling(const LossScalingSpec& spec) {
    require_idle("set_loss_scaling");
    const LossScalingSpec old = m_scaler.spec();
    m_scaler.reconfigure(spec);
    m_pipeline->set_loss_scaling(spec);
    ++m_generation;
    m_pipeline->invalidate("precision.loss_scaling changed");
    m_experiment.precision.loss_scaling = spec;
    const json o = loss_scaling_json(old), n = loss_scaling_json(spec);
    std::vector<std::string> changed;
    for (auto it = n.begin(); it != n.end(); ++it)
        if (o.at(it.key()) != it.value()) changed.push_back(it.key());
    if (changed.size() == 1) {
        const std::string& k = changed.front();
        json data = {{"key", "precision.loss_scaling." + k}, {"old", o.at(k)}, {"new", n.at(k)}};
        auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
        return {m_step, elapsed_s(), EventKind::setting_change,
                "precision.loss_scaling." + k + ": " + text(o.at(k)) + " -> " + text(n.at(k)) + ".",
                data.dump()};
    }
    json data = {{"key", "precision.loss_scaling"}, {"old", o}, {"new", n}};
    return {m_step, elapsed_s(), EventKind::setting_change,
            "precision.loss_scaling: " + o.dump() + " -> " + n.dump() + ".", data.dump()};
}

Event Trainer::set_learning_rate(double lr) {
    require_idle("set_learning_rate");
    if (!(lr >= 0) || !std::isfinite(lr)) throw Error("train.lr must be a finite number >= 0.");
    const double old = m_experiment.train.lr;
    m_experiment.train.lr = lr;
    return make_setting_event("train.lr", json(old).dump(), json(lr).dump(), false);
}

Event Trainer::inject_non_finite(const std::string& layer, float value) {
    require_idle("inject_non_finite");
    m_inject_layer = require_layer(layer);
    m_inject_value = value;
    const std::string v = format_event_number(value);
    return {m_step, elapsed_s(), EventKind::notice,
            "Injected " + v + " into " + layer + "'s weight gradient at step " + std::to_string(m_step) + ".",
            json{{"action", "inject_non_finite"}, {"layer", layer}, {"value", v}}.dump()};
}

}  // namespace mantissa
