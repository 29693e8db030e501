#include "train/what_if.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <omp.h>

#include "error.h"
#include "model/layer.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/quantisation_error.h"

namespace mantissa {

namespace {

Format fp8_element(MatmulOperand role) { return role == MatmulOperand::grad_output ? Format::fp8_e5m2 : Format::fp8_e4m3; }

double fraction(std::int64_t part, std::int64_t whole) {
    return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

QuantisationStats measure_operand(const ComputeFormat& format, MatmulOperand role, const OperandSample& s,
                                  Fp8Scale fp8, std::vector<float>& scratch) {
    const std::int64_t n = s.rows * s.K;
    const auto count = static_cast<std::size_t>(n);
    scratch.resize(count);
    float* q = scratch.data();
    QuantisationTally t;
    if (format.block) {
        // As the matmul quantises: blocks along each run of K, NVFP4's tensor scale the whole tensor's.
        const float tensor_scale =
            *format.block == BlockFormat::nvfp4 ? nvfp4_tensor_scale(s.magnitudes.finite_amax) : 1.0f;
        const BlockStats b = round_blocks_along(*format.block, s.values, q, static_cast<std::size_t>(s.rows),
                                                static_cast<std::size_t>(s.K), 1, tensor_scale);
        t.saturated = static_cast<std::int64_t>(b.saturated);
        tally_quantisation(s.values, q, count, t);
    } else if (format.format == Format::fp8_e4m3) {
        // The saturating cast of x·scale, decoded by the inverse scale, as the FP8 matmuls do.
        const Format element = fp8_element(role);
        scale_round_array(element, s.values, q, count, fp8.scale, Overflow::saturate);
        for (std::size_t i = 0; i < count; ++i) q[i] *= fp8.scale_inv;
        tally_quantisation(s.values, q, count, t, fp8.scale, format_info(element).max_finite);
    } else {
        // fp16, bf16, tf32: the IEEE cast, overflowing to infinity.
        round_array(format.format, s.values, q, count);
        tally_quantisation(s.values, q, count, t, 1.0f, format_info(format.format).max_finite);
    }
    QuantisationStats out;
    out.underflow = fraction(t.underflows, t.nonzero);
    out.saturation = fraction(t.saturated, t.nonzero);
    out.sqnr_db = t.sqnr_db();
    out.values = n;
    return out;
}

WhatIfStatistics::WhatIfStatistics(WhatIfSpec spec, const Fp8Recipe& recipe, int layers)
    : m_spec(std::move(spec)), m_recipe(recipe), m_shadows(static_cast<std::size_t>(std::max(layers, 0))) {}

void WhatIfStatistics::set_fp8_recipe(const Fp8Recipe& recipe) {
    m_recipe = recipe;
    for (auto& s : m_shadows) {
        if (!s) continue;
        for (AmaxHistory* h : {&s->x, &s->w, &s->dy}) {
            h->set_recipe(recipe.margin, recipe.algo);
            h->set_power_of_two(recipe.power_of_two);
        }
    }
}

void WhatIfStatistics::begin_step(std::int64_t step, StepPipeline* later) {
    m_steps.begin(step, later);
}

std::vector<WhatIfRecord> WhatIfStatistics::take() {
    return m_steps.take();
}

std::vector<WhatIfRecord> WhatIfStatistics::take_collected(std::int64_t step, std::span<const float> samples) {
    std::vector<WhatIfRecord> rows;
    for (const Observed& layer : m_steps.take_pending(step, "what-if statistics"))
        measure(layer, m_sampler.resolve(layer.samples, samples), samples, step, rows);
    return rows;
}

WhatIfStatistics::Shadow& WhatIfStatistics::shadow(int layer) {
    auto& s = m_shadows.at(static_cast<std::size_t>(layer));
    if (!s) {
        const auto make = [&](Format element) {
            AmaxHistory h(m_recipe.history_len, m_recipe.margin, m_recipe.algo, format_info(element).max_finite);
            h.set_power_of_two(m_recipe.power_of_two);
            return h;
        };
        s = std::make_unique<Shadow>(Shadow{make(Format::fp8_e4m3), make(Format::fp8_e4m3), make(Format::fp8_e5m2)});
    }
    return *s;
}

bool WhatIfStatistics::own_history(const MatmulOperands& o, MatmulOperand role) const {
    // The layer's own history where its matmul for this operand runs FP8 with delayed scaling:
    // the scale its cast uses this step.
    const ComputeFormat e4m3(Format::fp8_e4m3);
    const LayerFormats& f = o.layer.formats();
    return o.fp8 && m_recipe.scaling == Fp8Scaling::delayed &&
           (role == MatmulOperand::grad_output ? f.dgrad == e4m3 : f.fp8());
}

void WhatIfStatistics::observe(Backend& backend, const MatmulOperands& o) {
    if (!m_steps.active || m_spec.formats.empty() || o.layer.index() < 0) return;
    const std::int64_t max = m_spec.max_elements;
    Observed layer;
    layer.layer = o.layer.index();
    layer.name = o.layer.name();
    const MatmulOperand roles[3] = {MatmulOperand::input, MatmulOperand::weight, MatmulOperand::grad_output};
    const Fp8Role fp8_roles[3] = {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output};
    for (int t = 0; t < 3; ++t) {
        layer.own[t] = own_history(o, roles[t]);
        if (!layer.own[t]) continue;
        if (m_steps.later) {
            layer.own_offset[t] = m_steps.later->fp8_scale_later(*o.fp8, fp8_roles[t]);
        } else {
            const Fp8TensorSnapshot s = o.fp8->snapshot(fp8_roles[t]);
            layer.own_scale[t] = {s.scale, s.scale_inv};
        }
    }
    if (m_steps.later) {
        layer.samples = OperandSampler::request(*m_steps.later, o, {max, max, max});
        m_steps.pending.add(std::move(layer));
        return;
    }
    measure(layer, m_sampler.take(backend, o, {max, max, max}), {}, m_steps.step, m_steps.rows);
}

void WhatIfStatistics::measure(const Observed& layer, const OperandSampler::Samples& sampled,
                               std::span<const float> step_samples, std::int64_t step,
                               std::vector<WhatIfRecord>& out) {
    const OperandSample &x = sampled.x, &w = sampled.w, &dy = sampled.dy;

    // Each (format, operand) on its own: spread over the machine's threads, each with its scratch.
    Shadow& sh = shadow(layer.layer);
    const std::size_t formats = m_spec.formats.size();
    const std::size_t first = out.size();
    for (const ComputeFormat& f : m_spec.formats) {
        WhatIfRecord r;
        r.step = step;
        r.layer = layer.layer;
        r.name = layer.name;
        r.format = f;
        out.push_back(std::move(r));
    }
    const OperandSample* samples[3] = {&x, &w, &dy};
    AmaxHistory* shadows[3] = {&sh.x, &sh.w, &sh.dy};
    const MatmulOperand roles[3] = {MatmulOperand::input, MatmulOperand::weight, MatmulOperand::grad_output};
    Fp8Scale scales[3];
    for (int t = 0; t < 3; ++t) {
        if (!layer.own[t]) {
            scales[t] = {shadows[t]->scale(), shadows[t]->scale_inv()};
        } else if (layer.own_offset[t] >= 0) {
            const auto at = static_cast<std::size_t>(layer.own_offset[t]);
            if (at + 2 > step_samples.size())
                throw Error("The step's operand samples end before the FP8 scale asked of them.");
            scales[t] = {step_samples[at], step_samples[at + 1]};
        } else {
            scales[t] = layer.own_scale[t];
        }
    }
    const int tasks = static_cast<int>(3 * formats);
    const int threads = std::max(1, std::min(omp_get_max_threads(), tasks));
    if (m_scratch.size() < static_cast<std::size_t>(threads)) m_scratch.resize(static_cast<std::size_t>(threads));
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (threads > 1)
    for (int task = 0; task < tasks; ++task) {
        const auto f = static_cast<std::size_t>(task) / 3;
        const int t = task % 3;
        WhatIfRecord& r = out[first + f];
        QuantisationStats& q = t == 0 ? r.input : t == 1 ? r.weight : r.grad_output;
        q = measure_operand(r.format, roles[t], *samples[t], scales[t],
                            m_scratch[static_cast<std::size_t>(omp_get_thread_num())]);
    }
    // The shadows take this step's amaxes after its casts, as a delayed history does.
    sh.x.record(x.magnitudes.amax);
    sh.w.record(w.magnitudes.amax);
    sh.dy.record(dy.magnitudes.amax);
    for (AmaxHistory* h : {&sh.x, &sh.w, &sh.dy}) h->update();
}

}  // namespace mantissa
