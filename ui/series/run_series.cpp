// RunSeries: turns the engine's records into chart series (see run_series.h).
#include "series/run_series.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace mantissa::ui {

namespace {
constexpr std::size_t paceWindow = 256;  // steps the remaining-time estimate looks back over
}

const char* memoryCategoryLabel(MemoryCategory c) {
    switch (c) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::master_weights: return "master weights";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer state";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::workspace: return "workspace";
    }
    return "";
}

std::string markerLabel(const Event& event) {
    try {
        const auto data = nlohmann::json::parse(event.data_json);
        std::string key = data.value("key", std::string{});
        if (key.empty() || !data.contains("new")) return event.message;
        // Short enough to read along a line on a short chart: "fc1", "autocast", "scaling", "lr".
        for (const char* prefix : {"precision.layers.", "precision.", "train."}) {
            const std::string p(prefix);
            if (key.rfind(p, 0) == 0) {
                key = key.substr(p.size());
                break;
            }
        }
        if (key == "loss_scaling" || key == "loss_scaling.mode") key = "scaling";
        else if (key.rfind("loss_scaling.", 0) == 0) key = key.substr(std::string("loss_scaling.").size());
        const auto& value = data["new"];
        if (value.is_string()) return key + "=" + value.get<std::string>();
        if (value.is_object() && value.contains("mode") && value["mode"].is_string())
            return key + "=" + value["mode"].get<std::string>();
        return key + "=" + value.dump();
    } catch (const nlohmann::json::exception&) {
        return event.message;
    }
}

bool isInjection(const Event& event, std::string* label) {
    if (event.kind != EventKind::notice) return false;
    try {
        const auto data = nlohmann::json::parse(event.data_json);
        if (!data.is_object() || data.value("action", std::string{}) != "inject_non_finite") return false;
        if (label) {
            const std::string layer = data.value("layer", std::string{});
            const std::string value = data.contains("value") && data["value"].is_string()
                                          ? data["value"].get<std::string>()
                                          : std::string("inf");
            *label = "inject " + value + "\u2192" + layer;
        }
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

bool isCheckpointStart(const Event& event, std::string* label) {
    if (event.kind != EventKind::run_started) return false;
    try {
        const auto data = nlohmann::json::parse(event.data_json);
        if (!data.is_object()) return false;
        const bool resumed = data.contains("resumed_from_step"), branched = data.contains("branched_from_step");
        if (!resumed && !branched) return false;
        if (label) *label = resumed ? "resumed from checkpoint" : "branched from checkpoint";
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

std::vector<std::pair<std::string, std::string>> opStatsOf(const std::vector<LayerInfo>& layers) {
    static const std::string qkv = ".attn.qkv";
    std::vector<std::pair<std::string, std::string>> stats;
    for (const LayerInfo& l : layers) {
        if (l.kind == "layernorm") stats.emplace_back(l.name, minVarianceStat);
        const std::size_t n = l.name.size();
        if (l.kind == "linear" && n > qkv.size() && l.name.compare(n - qkv.size(), qkv.size(), qkv) == 0)
            stats.emplace_back(l.name.substr(0, n - 4), logitAmaxStat);  // "blocks.0.attn"
    }
    return stats;
}

std::vector<std::pair<std::string, std::string>> accumulationStatsOf(const std::vector<LayerInfo>& layers) {
    std::vector<std::pair<std::string, std::string>> stats;
    for (const LayerInfo& l : layers) {
        if (l.kind != "linear" && l.kind != "conv2d") continue;
        stats.emplace_back(l.name, accumulationErrorStat);
        if (l.kind == "linear") stats.emplace_back(l.name, accumulationErrorWgradStat);
    }
    return stats;
}

std::optional<TextSample> textSampleOf(const Event& event) {
    if (event.kind != EventKind::evaluation) return std::nullopt;
    try {
        const auto data = nlohmann::json::parse(event.data_json);
        if (!data.is_object() || !data.contains("sample") || !data["sample"].is_string()) return std::nullopt;
        const auto number = [&](const char* key) {
            const auto it = data.find(key);
            return it != data.end() && it->is_number() ? it->get<double>() : std::nan("");
        };
        TextSample t;
        t.step = event.step;
        t.loss = number("loss");
        t.perplexity = number("perplexity");
        if (!std::isfinite(t.perplexity) && std::isfinite(t.loss)) t.perplexity = std::exp(t.loss);
        t.accuracy = number("accuracy");
        t.temperature = number("temperature");
        t.prompt = data.value("prompt", std::string{});
        t.continuation = data["sample"].get<std::string>();
        t.stopped = data.value("stopped", std::string{});
        return t;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

RunSeries::RunSeries() { reset({}); }

void RunSeries::reset(std::vector<std::string> layerNames) {
    m_layerNames = std::move(layerNames);
    for (LodSeries* s : {&m_loss, &m_lossSmoothed, &m_testLoss, &m_testAccuracy, &m_lossScale, &m_overflows,
                         &m_skipped, &m_throughput, &m_throughputSmoothed})
        s->clear();
    for (auto& s : m_memoryStack) s.clear();
    m_underflow.assign(m_layerNames.size(), LodSeries{});
    m_underflowMean.clear();
    m_mean = {};
    m_latestLayers.assign(m_layerNames.size(), std::nullopt);
    m_nonFiniteSteps.assign(m_layerNames.size(), 0);
    m_events.clear();
    m_markers.clear();
    m_opStats.clear();
    ++m_opStatLayout;
    m_textSamples.clear();
    m_whatIf.clear();
    m_blockScales.clear();
    m_textRun = false;
    m_lastStep.reset();
    m_pace.clear();
    m_stepCount = 0;
    m_lossEma = {};
    m_throughputEma = {};
    ++m_revision;
}

void RunSeries::Ema::append(LodSeries& out, double x, double y, double w) {
    if (!std::isfinite(y)) return;
    biased = biased * w + (1 - w) * y;
    weightPow *= w;
    const double debias = 1 - weightPow;
    out.append(x, debias > 0 ? biased / debias : y);
}

void RunSeries::resmooth() {
    m_lossSmoothed.clear();
    m_throughputSmoothed.clear();
    m_lossEma = {};
    m_throughputEma = {};
    for (std::size_t i = 0; i < m_loss.size(); ++i) m_lossEma.append(m_lossSmoothed, m_loss.x(i), m_loss.y(i), m_smoothing);
    for (std::size_t i = 0; i < m_throughput.size(); ++i)
        m_throughputEma.append(m_throughputSmoothed, m_throughput.x(i), m_throughput.y(i), m_smoothing);
}

void RunSeries::setSmoothingWeight(double weight) {
    weight = std::clamp(weight, 0.0, 0.999);
    if (weight == m_smoothing) return;
    m_smoothing = weight;
    resmooth();
    ++m_revision;
}

void RunSeries::addStep(const StepRecord& s) {
    const double x = static_cast<double>(s.step);
    m_loss.append(x, s.loss);
    m_lossEma.append(m_lossSmoothed, x, s.loss, m_smoothing);
    m_lossScale.append(x, s.loss_scale);
    if (s.overflow) m_overflows.append(x, s.loss_scale);
    if (s.skipped) m_skipped.append(x, s.loss_scale);
    m_throughput.append(x, s.samples_per_s);
    m_throughputEma.append(m_throughputSmoothed, x, s.samples_per_s, m_smoothing);
    const std::array<std::int64_t, memoryCategoryCount> bytes = {
        s.memory.parameters,      s.memory.master_weights, s.memory.gradients,
        s.memory.optimizer_state, s.memory.activations,    s.memory.workspace};
    double sum = 0;
    for (int c = 0; c < memoryCategoryCount; ++c) {
        sum += static_cast<double>(bytes[static_cast<std::size_t>(c)]);
        m_memoryStack[static_cast<std::size_t>(c)].append(x, sum);
    }
    m_lastStep = s;
    m_pace.push_back({s.step, s.time_s});
    if (m_pace.size() > paceWindow) m_pace.pop_front();
    ++m_stepCount;
    ++m_revision;
}

void RunSeries::addLayerSample(const LayerSample& sample) {
    if (sample.layer < 0 || static_cast<std::size_t>(sample.layer) >= m_underflow.size()) return;
    const auto i = static_cast<std::size_t>(sample.layer);
    m_underflow[i].append(static_cast<double>(sample.step), sample.frac_underflow);
    if (sample.step != m_mean.step) flushMean();
    m_mean.step = sample.step;
    if (std::isfinite(sample.frac_underflow)) {
        m_mean.sum += sample.frac_underflow;
        ++m_mean.count;
    }
    if (m_mean.count >= static_cast<int>(m_underflow.size())) flushMean();
    if (sample.frac_nonfinite > 0) ++m_nonFiniteSteps[i];
    m_whatIf.notePrecision(sample.step, m_layerNames[i], sample.precision);
    m_latestLayers[i] = sample;
    ++m_revision;
}

void RunSeries::flushMean() {
    if (m_mean.count > 0) m_underflowMean.append(static_cast<double>(m_mean.step), m_mean.sum / m_mean.count);
    m_mean.sum = 0;
    m_mean.count = 0;
}

void RunSeries::addEval(const EvalRecord& eval) {
    if (eval.split != "test") return;
    const double x = static_cast<double>(eval.step);
    m_testLoss.append(x, eval.loss);
    if (std::isfinite(eval.accuracy)) m_testAccuracy.append(x, eval.accuracy);
    ++m_revision;
}

void RunSeries::addEvent(const Event& event) {
    m_events.push_back(event);
    std::string injected;
    if (event.kind == EventKind::setting_change)
        m_markers.push_back({event.step, markerLabel(event), ChartMarker::Kind::setting});
    else if (isInjection(event, &injected))
        m_markers.push_back({event.step, injected, ChartMarker::Kind::injection});
    else if (isCheckpointStart(event, &injected))
        m_markers.push_back({event.step, injected, ChartMarker::Kind::origin});
    else if (auto sample = textSampleOf(event))
        m_textSamples.push_back(std::move(*sample));
    ++m_revision;
}

OpStatSeries& RunSeries::opStat(const std::string& name, const std::string& stat) {
    for (OpStatSeries& s : m_opStats)
        if (s.name == name && s.stat == stat) return s;
    m_opStats.push_back({name, stat, {}});
    ++m_opStatLayout;
    return m_opStats.back();
}

void RunSeries::declareOpStats(const std::vector<std::pair<std::string, std::string>>& stats) {
    for (const auto& [name, stat] : stats) opStat(name, stat);
    ++m_revision;
}

void RunSeries::addOpSteps(const std::vector<OpStepRecord>& ops) {
    for (const OpStepRecord& r : ops) opStat(r.name, r.stat).values.append(static_cast<double>(r.step), r.value);
    if (!ops.empty()) ++m_revision;
}

void RunSeries::addWhatIf(const std::vector<WhatIfRecord>& rows) {
    m_whatIf.addRows(rows);
    if (!rows.empty()) ++m_revision;
}

void RunSeries::addBlockScales(const std::vector<BlockScaleRecord>& rows) {
    m_blockScales.addRecords(rows);
    if (!rows.empty()) ++m_revision;
}

void RunSeries::addBlockScaleSummaries(const std::vector<BlockScaleSummary>& rows) {
    m_blockScales.addSummaries(rows);
    if (!rows.empty()) ++m_revision;
}

bool RunSeries::hasOpStat(const std::string& stat) const {
    for (const OpStatSeries& s : m_opStats)
        if (s.stat == stat) return true;
    return false;
}

void RunSeries::setTextRun(bool text) {
    if (m_textRun == text) return;
    m_textRun = text;
    ++m_revision;
}

std::optional<double> RunSeries::remainingSeconds(std::int64_t totalSteps) const {
    if (m_pace.size() < 2 || !m_lastStep) return std::nullopt;
    const double steps = static_cast<double>(m_pace.back().step - m_pace.front().step);
    const double seconds = m_pace.back().time_s - m_pace.front().time_s;
    if (steps <= 0 || seconds <= 0) return std::nullopt;
    const double left = static_cast<double>(std::max<std::int64_t>(0, totalSteps - m_lastStep->step - 1));
    return left * seconds / steps;
}

}  // namespace mantissa::ui
