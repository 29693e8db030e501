// The reference data, experiment and precision settings: see reference_data.h.
#include "bench/reference_data.h"

#include <algorithm>
#include <string>

#include "data/random.h"

namespace mantissa::bench {

namespace {

// Every layer of e's MLP: fc1 .. fc(hidden + 1).
void set_all_layers(Experiment& e, LayerPrecision p) {
    for (std::size_t i = 0; i <= e.model.hidden.size(); ++i) e.precision.layers["fc" + std::to_string(i + 1)] = p;
}

// Autocast bf16 with every layer set to P (the FP8 and block-scaled rows).
template <LayerPrecision P>
void every_layer_with_bf16(Experiment& e) {
    e.precision.autocast = Autocast::bf16;
    set_all_layers(e, P);
}

void truncate(Split& s, std::int64_t rows, int features) {
    if (rows <= 0 || s.rows <= rows) return;
    s.rows = rows;
    s.x.resize(static_cast<std::size_t>(rows * features));
    s.y.resize(static_cast<std::size_t>(rows));
}

}  // namespace

Dataset reference_data(std::int64_t train_rows, std::int64_t test_rows) {
    try {
        DatasetSpec spec;  // fashion-mnist at its default path
        Dataset d = load_dataset(spec, 1);
        if (d.name == "fashion-mnist") {
            truncate(d.train, train_rows, d.features);
            truncate(d.test, test_rows, d.features);
            return d;
        }
    } catch (const std::exception&) {
    }
    Dataset d;
    d.name = "random-784 (Fashion-MNIST not found)";
    d.features = 784;
    d.shape = {1, 28, 28};
    d.classes = d.outputs = 10;
    data::Rng rng(7);
    for (Split* s : {&d.train, &d.test}) {
        s->rows = s == &d.train ? (train_rows > 0 ? train_rows : 60000) : (test_rows > 0 ? test_rows : 10000);
        s->x.resize(static_cast<std::size_t>(s->rows * 784));
        s->y.resize(static_cast<std::size_t>(s->rows));
        for (auto& v : s->x) v = static_cast<float>(2 * rng.uniform() - 1);
        for (auto& v : s->y) v = static_cast<std::int32_t>(rng.below(10));
    }
    return d;
}

Experiment reference_experiment() {
    Experiment e;
    e.name = "bench-reference";
    e.backend = "cpu";
    e.model.hidden = {256, 128};
    e.train.batch_size = 128;
    e.train.steps = 1'000'000'000;  // timed by blocks; never runs out
    e.train.eval_every = 0;
    e.precision.loss_scaling.mode = LossScalingMode::off;
    return e;
}

Experiment reference_cnn_experiment() {
    Experiment e = reference_experiment();
    e.name = "bench-reference-cnn";
    e.model.kind = "cnn";
    e.model.channels = {32, 64};
    e.model.hidden = {128};
    e.train.schedule = LrSchedule::cosine;
    return e;
}

Experiment reference_gpt_experiment() {
    Experiment e = reference_experiment();
    e.name = "bench-reference-gpt";
    e.dataset.kind = "text";
    e.dataset.path = "/usr/share/games/fortunes";
    e.dataset.vocabulary = "chars";
    e.dataset.context = 128;
    e.dataset.test_fraction = 0.1;
    e.model.kind = "gpt";
    e.model.depth = 4;  // model.layers in the experiment file
    e.model.heads = 4;
    e.model.dim = 128;
    e.model.context = 128;
    e.model.mlp_ratio = 4;
    e.model.tie_embeddings = false;
    e.train.batch_size = 32;
    e.train.optimizer = OptimizerKind::adamw;
    e.train.lr = 1e-3;
    e.train.beta1 = 0.9;
    e.train.beta2 = 0.99;
    e.train.eps = 1e-8;
    e.train.weight_decay = 0.0;
    e.train.schedule = LrSchedule::cosine;
    e.train.warmup_steps = 100;
    e.train.layer_stats_every = 10;  // as the preset records them
    return e;
}

const std::vector<PrecisionConfig>& precision_configs() {
    static const std::vector<PrecisionConfig> configs = {
        {"fp32", "autocast off", [](Experiment&) {}},
        {"tf32", "every layer tf32",
         [](Experiment& e) { set_all_layers(e, LayerPrecision::tf32); }},
        {"fp16", "autocast fp16, dynamic loss scaling",
         [](Experiment& e) {
             e.precision.autocast = Autocast::fp16;
             e.precision.loss_scaling.mode = LossScalingMode::dynamic;
         }},
        {"bf16", "autocast bf16", [](Experiment& e) { e.precision.autocast = Autocast::bf16; }},
        {"fp8-e4m3", "every layer fp8-e4m3 (E5M2 gradients), autocast bf16",
         every_layer_with_bf16<LayerPrecision::fp8_e4m3>},
        // The block-scaled formats, emulated: each matmul's operands quantised along its reduction
        // dimension, then an FP32 matmul (docs/numerics.md, "Block-scaled formats in training").
        {"mxfp8-e4m3", "every layer mxfp8-e4m3, autocast bf16", every_layer_with_bf16<LayerPrecision::mxfp8_e4m3>},
        {"mxfp4", "every layer mxfp4, autocast bf16", every_layer_with_bf16<LayerPrecision::mxfp4>},
        {"nvfp4", "every layer nvfp4, autocast bf16", every_layer_with_bf16<LayerPrecision::nvfp4>},
        // Rounding and accumulation (docs/numerics.md, "Stochastic rounding and Kahan summation",
        // "FP16 accumulation"): what each costs beside the row it changes.
        {"mxfp4-sr", "every layer mxfp4, stochastic gradients, autocast bf16",
         [](Experiment& e) {
             every_layer_with_bf16<LayerPrecision::mxfp4>(e);
             e.precision.rounding.gradients = GradientRounding::stochastic;
         }},
        {"bf16-weights", "autocast bf16, BF16 weights without masters, rounded to nearest",
         [](Experiment& e) {
             e.precision.autocast = Autocast::bf16;
             e.precision.master_weights = false;
         }},
        {"bf16-weights-sr", "autocast bf16, BF16 weights without masters, stochastic rounding",
         [](Experiment& e) {
             e.precision.autocast = Autocast::bf16;
             e.precision.master_weights = false;
             e.precision.rounding.weights = WeightRounding::stochastic;
         }},
        {"bf16-weights-kahan", "autocast bf16, BF16 weights without masters, Kahan-compensated",
         [](Experiment& e) {
             e.precision.autocast = Autocast::bf16;
             e.precision.master_weights = false;
             e.precision.rounding.weights = WeightRounding::kahan;
         }},
        {"fp16-acc16", "autocast fp16, dynamic loss scaling, every layer accumulating in FP16 (emulated)",
         [](Experiment& e) {
             e.precision.autocast = Autocast::fp16;
             e.precision.loss_scaling.mode = LossScalingMode::dynamic;
             LayerSetting s = LayerPrecision::automatic;
             s.accumulate = Accumulation::fp16;
             for (std::size_t i = 0; i <= e.model.hidden.size(); ++i) e.precision.layers["fc" + std::to_string(i + 1)] = s;
         },
         true},
    };
    return configs;
}

const PrecisionConfig* find_precision(const std::string& name) {
    for (const auto& c : precision_configs())
        if (name == c.name) return &c;
    return nullptr;
}

}  // namespace mantissa::bench
