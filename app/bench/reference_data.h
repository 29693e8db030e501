// The data the engine-side suites train on: the first rows of Fashion-MNIST from Debian's
// dataset-fashion-mnist, or random data of its shape when the files are not installed (the suite
// then says so). The set's size matters to speed only through gathering each batch from it, which
// the engine suite's batch table measures on the whole split as well.
#pragma once

#include <cstdint>

#include "data/dataset.h"
#include "config/experiment.h"

namespace mantissa::bench {

// train_rows / test_rows: 0 keeps the whole split.
Dataset reference_data(std::int64_t train_rows, std::int64_t test_rows);

// The reference experiment: 784-256-128-10 relu, AdamW lr 1e-3, batch 128, no loss scaling, on
// the CPU, evaluation only when asked, per-layer statistics every step (as the GUI records).
Experiment reference_experiment();

// The reference CNN, as resources/experiments/cnn-fashion-mnist.json trains it in FP32: two
// stages of conv 3×3 - batchnorm - relu - max pool 2 (32 and 64 channels), then 3136-128-10 relu;
// AdamW lr 1e-3 on a cosine schedule over the run, batch 128; otherwise as reference_experiment.
Experiment reference_cnn_experiment();

// The reference language model of resources/experiments/gpt-text.json, in FP32 (the precision
// configs add autocast, as the preset does with bf16): a pre-LayerNorm GPT of 4 blocks, 4 heads,
// width 128, context 128, MLP ratio 4, untied head, on the fortunes corpus
// (/usr/share/games/fortunes) with the "chars" vocabulary, context 128 and the last 10% of the
// tokens held out; batch 32, AdamW lr 1e-3, betas 0.9/0.99, eps 1e-8, no weight decay, cosine
// schedule with 100 warmup steps, per-layer statistics every 10 steps (as the preset). Timed by
// blocks as reference_experiment is (steps never run out, so the schedule stays near its base rate
// after the warmup; evaluation only when asked). Its data: load_dataset(e.dataset, e.train.seed).
Experiment reference_gpt_experiment();

// One of the precisions the engine suite times, as the experiment file names them.
struct PrecisionConfig {
    const char* name;           // "fp32", "tf32", "fp16", "bf16", "fp8-e4m3", "mxfp8-e4m3", "mxfp4", "nvfp4"
    const char* description;    // how it is set in the experiment
    void (*apply)(Experiment& e);
    // Timed on the reference MLP only: a teaching path whose wider steps would take minutes (FP16
    // accumulation, emulated single-threaded).
    bool reference_only = false;
};
const std::vector<PrecisionConfig>& precision_configs();
const PrecisionConfig* find_precision(const std::string& name);

}  // namespace mantissa::bench
