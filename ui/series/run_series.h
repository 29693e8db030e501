// RunSeries: everything the charts, the layer table, the What-if and Block scales panels and the
// status bar show about one run, built from the engine's records as they arrive (live, from the
// ring) or as they were stored (a recorded run). Every value is one the engine measured; the only
// things computed here are for display: the smoothed loss and throughput (TensorBoard's debiased exponential moving average,
// weight chosen by the user), the running sums that stack the memory categories, and the remaining-time estimate.
//
// Plain C++ (no Qt) so it is tested alone. GUI thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "live/layer_sample.h"
#include "series/block_scale_series.h"
#include "series/lod_series.h"
#include "series/what_if_series.h"
#include "config/layer_info.h"
#include "config/telemetry.h"

namespace mantissa::ui {

enum class MemoryCategory : int {
    parameters,
    master_weights,
    gradients,
    optimizer_state,
    activations,
    workspace,
};
inline constexpr int memoryCategoryCount = 6;
const char* memoryCategoryLabel(MemoryCategory c);  // "master weights"

// A statistic of an op without parameters over the run (config/telemetry.h, OpStepRecord): an
// attention layer's largest |logit| ("logit_amax") or a layer norm's smallest row variance
// ("min_variance"), one series per op and statistic.
struct OpStatSeries {
    std::string name;  // "blocks.0.attn", "blocks.0.ln1"
    std::string stat;  // "logit_amax", "min_variance"
    LodSeries values;
};
inline constexpr const char* logitAmaxStat = "logit_amax";
inline constexpr const char* minVarianceStat = "min_variance";
inline constexpr const char* accumulationErrorStat = "accumulation_error";  // engine/train/accumulation_error.h
inline constexpr const char* accumulationErrorWgradStat = "accumulation_error_wgrad";
// The op statistics a model's layers will report, in layer order: each layer norm's smallest
// variance, and each attention's (its qkv projection "X.attn.qkv" names the op "X.attn") largest
// logit. Empty for a model without such ops (an MLP, a CNN).
std::vector<std::pair<std::string, std::string>> opStatsOf(const std::vector<LayerInfo>& layers);
// The accumulation-error statistics a run with train.accumulation_error reports
// (engine/train/accumulation_error.h): every matmul layer's (linear, conv2d) forward sums, and a
// linear layer's weight-gradient sums too, in layer order.
std::vector<std::pair<std::string, std::string>> accumulationStatsOf(const std::vector<LayerInfo>& layers);

// What a language model wrote at an evaluation: the `evaluation` event's data (Session::evaluate,
// engine/train/session.cpp): the prompt taken from the test text and the continuation sampled
// at `temperature`, with the test loss in nats per token at that step.
struct TextSample {
    std::int64_t step = 0;
    double loss = 0;        // nats per token
    double perplexity = 0;  // e^loss
    double accuracy = 0;    // next-token accuracy, fraction
    double temperature = 0;
    std::string prompt;
    std::string continuation;
    std::string stopped;  // why the sample ended early (a model whose output is NaN); usually empty
};
// The sample an evaluation event carries; nullopt for any other event, or one without a sample.
std::optional<TextSample> textSampleOf(const Event& event);

// A setting change, an injected overflow, or where a continued or branched run took over from its
// checkpoint, drawn as a labelled vertical line on every chart.
struct ChartMarker {
    enum class Kind { setting, injection, origin };
    std::int64_t step = 0;
    std::string label;  // short: "fc1=fp16", "autocast=bf16", "inject inf→fc2"
    Kind kind = Kind::setting;
    bool operator==(const ChartMarker&) const = default;
};

// "fc1=fp16" from a setting_change event's data ({"key": "precision.layers.fc1", "new": "fp16"});
// the event's message when the data cannot be read.
std::string markerLabel(const Event& event);
// Whether `event` is the notice an injected non-finite value leaves (Trainer::inject_non_finite:
// data {"action": "inject_non_finite", "layer": "fc2", "value": "inf"}); its label, "inject inf→fc2",
// in `label` when asked.
bool isInjection(const Event& event, std::string* label = nullptr);
// Whether `event` is the run_started of a session that began at a checkpoint (its data has
// resumed_from_step or branched_from_step: train/session.h); its label, "resumed from checkpoint"
// or "branched from checkpoint", in `label` when asked.
bool isCheckpointStart(const Event& event, std::string* label = nullptr);

class RunSeries {
public:
    RunSeries();

    // Forgets everything and prepares one underflow series per layer.
    void reset(std::vector<std::string> layerNames);

    void addStep(const StepRecord& step);
    void addLayerSample(const LayerSample& sample);
    void addEval(const EvalRecord& eval);
    void addEvent(const Event& event);
    // Op statistics of a step (attention logits, layer norm variances); a name not declared yet
    // gets its series at once (opStatLayout() grows).
    void addOpSteps(const std::vector<OpStepRecord>& ops);
    // The op statistics the run will report (opStatsOf), so the charts can be laid out before the
    // first arrives. After reset().
    void declareOpStats(const std::vector<std::pair<std::string, std::string>>& stats);
    // What-if statistics of a step (one row per layer and format asked about). The layer samples
    // of the same step tell which column is each layer's own format (WhatIfSeries::notePrecision).
    void addWhatIf(const std::vector<WhatIfRecord>& rows);
    // Block-scale views of a step (train.block_scales), with their maps; or, for a step whose maps
    // the live ring had no room for, their distributions only. Also a reopened run's older maps,
    // read again (BlockScaleSeries keeps them within its budget).
    void addBlockScales(const std::vector<BlockScaleRecord>& rows);
    void addBlockScaleSummaries(const std::vector<BlockScaleSummary>& rows);
    // A language model's run (dataset.kind "text"): its loss is in nats per token. After reset().
    void setTextRun(bool text);
    bool textRun() const { return m_textRun; }

    // Smoothing weight in [0, 1) (0: none; TensorBoard's default is 0.6). Changing it recomputes
    // the smoothed series from the raw ones once (O(steps)).
    void setSmoothingWeight(double weight);
    double smoothingWeight() const { return m_smoothing; }

    const LodSeries& loss() const { return m_loss; }
    const LodSeries& lossSmoothed() const { return m_lossSmoothed; }
    const LodSeries& testLoss() const { return m_testLoss; }
    const LodSeries& testAccuracy() const { return m_testAccuracy; }     // fraction in [0,1]
    const LodSeries& lossScale() const { return m_lossScale; }
    const LodSeries& overflows() const { return m_overflows; }           // y: the step's scale
    const LodSeries& skipped() const { return m_skipped; }               // y: the step's scale
    const LodSeries& throughput() const { return m_throughput; }         // samples/s
    const LodSeries& throughputSmoothed() const { return m_throughputSmoothed; }
    // Running sum of the categories 0..c in bytes, so category c is drawn between c-1 and c.
    const LodSeries& memoryStack(MemoryCategory c) const { return m_memoryStack[static_cast<int>(c)]; }
    const LodSeries& underflow(std::size_t layer) const { return m_underflow[layer]; }  // fraction
    // The mean over layers of each step's underflow fraction (a step's point appears once all its
    // layers have reported, or when a later step's sample arrives).
    const LodSeries& underflowMean() const { return m_underflowMean; }

    // The op statistics' series, in the order declared or first seen; references stay valid until
    // reset(). opStatLayout() grows whenever a series is added (charts rebuild their graphs).
    const std::deque<OpStatSeries>& opStats() const { return m_opStats; }
    bool hasOpStat(const std::string& stat) const;
    std::uint64_t opStatLayout() const { return m_opStatLayout; }
    // The what-if statistics, one snapshot per statistics step (thinned when there are many).
    const WhatIfSeries& whatIf() const { return m_whatIf; }
    // The block-scale views: every statistics step's distribution, the recent steps' maps.
    const BlockScaleSeries& blockScales() const { return m_blockScales; }
    // The language model's samples, in step order (from the evaluation events).
    const std::vector<TextSample>& textSamples() const { return m_textSamples; }

    const std::vector<std::string>& layerNames() const { return m_layerNames; }
    const std::vector<Event>& events() const { return m_events; }
    const std::vector<ChartMarker>& markers() const { return m_markers; }
    const std::optional<StepRecord>& lastStep() const { return m_lastStep; }
    // The latest sample of each layer (empty until its first statistics arrive).
    const std::vector<std::optional<LayerSample>>& latestLayers() const { return m_latestLayers; }
    // Non-finite gradient steps per layer since the run began (a step counts once per layer).
    const std::vector<std::int64_t>& nonFiniteSteps() const { return m_nonFiniteSteps; }
    std::int64_t stepCount() const { return m_stepCount; }
    std::int64_t overflowCount() const { return static_cast<std::int64_t>(m_overflows.size()); }

    // Seconds left for `totalSteps`, from the pace of the last few hundred steps; empty until
    // there is a pace to go by.
    std::optional<double> remainingSeconds(std::int64_t totalSteps) const;

    // Grows on every change; views compare it to skip redundant redraws.
    std::uint64_t revision() const { return m_revision; }

private:
    // TensorBoard's smoothing: an exponential moving average started at 0 and divided by
    // (1 - w^n), so early points are not pulled towards 0; non-finite values are skipped.
    struct Ema {
        double biased = 0;
        double weightPow = 1;  // w^n
        void append(LodSeries& out, double x, double y, double w);
    };
    void resmooth();

    std::vector<std::string> m_layerNames;
    LodSeries m_loss, m_lossSmoothed, m_testLoss, m_testAccuracy, m_lossScale, m_overflows, m_skipped,
        m_throughput, m_throughputSmoothed;
    std::array<LodSeries, memoryCategoryCount> m_memoryStack;
    std::vector<LodSeries> m_underflow;
    LodSeries m_underflowMean;
    struct MeanAccumulator {
        std::int64_t step = -1;
        double sum = 0;
        int count = 0;
    } m_mean;
    void flushMean();
    std::vector<std::optional<LayerSample>> m_latestLayers;
    std::vector<std::int64_t> m_nonFiniteSteps;
    std::vector<Event> m_events;
    std::vector<ChartMarker> m_markers;
    std::deque<OpStatSeries> m_opStats;   // a deque: the charts hold pointers to its series
    std::uint64_t m_opStatLayout = 0;
    std::vector<TextSample> m_textSamples;
    WhatIfSeries m_whatIf;
    BlockScaleSeries m_blockScales;
    bool m_textRun = false;
    OpStatSeries& opStat(const std::string& name, const std::string& stat);
    std::optional<StepRecord> m_lastStep;
    struct Pace {
        std::int64_t step;
        double time_s;
    };
    std::deque<Pace> m_pace;  // the most recent steps, oldest first
    std::int64_t m_stepCount = 0;
    std::uint64_t m_revision = 0;

    double m_smoothing = 0.6;
    Ema m_lossEma, m_throughputEma;
};

}  // namespace mantissa::ui
