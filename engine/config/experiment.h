// The experiment: everything a run needs, as the experiment file (JSON) describes it. Every key is
// optional; the defaults below are the documented ones (docs/experiment.md). Parsing rejects
// unknown keys, wrong types and out-of-range values with a mantissa::Error naming the key.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/sample_shape.h"
#include "numeric/compute_format.h"
#include "numeric/format.h"

namespace mantissa {

struct DatasetSpec {
    std::string kind = "fashion-mnist";  // fashion-mnist | mnist | cifar10 | idx | csv | spirals | blobs | sine | text
    // folder (idx kinds, cifar10), file (csv), or for text a UTF-8 file or a folder of fortune
    // files (the fortunes folder, data/fortunes_corpus.h, when the file leaves it out)
    std::string path = "/usr/share/datasets/fashion-mnist";
    std::int64_t samples = 2000;         // synthetic sets: number of samples
    int classes = 3;                     // spirals, blobs: number of classes
    double noise = 0.1;                  // synthetic sets: noise level
    double test_fraction = 0.2;          // csv and synthetic sets; idx sets come with their own split
    int label_column = -1;               // csv: -1 = last column
    bool normalize = true;               // standardise features with the training split's statistics
    // csv only: the sample shape its feature columns hold (channels x height x width, each row
    // NCHW); absent: features x 1 x 1. The other kinds know their own shape (data/dataset.h).
    std::optional<SampleShape> shape;
    // text only (data/text_corpus.h): "chars" or "bytes", and the tokens of one sample.
    std::string vocabulary = "chars";
    int context = 128;

    bool operator==(const DatasetSpec&) const = default;
};

enum class Activation : std::uint8_t { relu, gelu, tanh };

// model.kind: "mlp" (hidden widths), "cnn" (conv-batchnorm-relu-maxpool stages of `channels`,
// then linear layers of `hidden`), "resnet" (a stem, then stages of `channels` with `blocks` basic
// blocks each, a global average pool and one linear layer), "gpt" (a decoder-only transformer of
// `depth` blocks over text) or "layers" (the explicit list). The
// layers themselves are built and checked by the model (model/model_desc.h), which knows the
// input's shape; docs/experiment.md, "Models".
struct ModelSpec {
    std::string kind = "mlp";
    std::vector<int> hidden = {256, 128};
    Activation activation = Activation::relu;
    std::vector<int> channels = {32, 64};
    int blocks = 2;
    std::string layers = "[]";  // kind "layers": the list, as compact JSON text
    // kind "gpt": blocks (model.layers in the file, a number for this kind), heads, the width of
    // the residual stream, the positions wpe holds, the MLP's width over dim, and whether the head
    // multiplies by wte instead of a weight of its own.
    int depth = 4;
    int heads = 4;
    int dim = 128;
    int context = 128;
    int mlp_ratio = 4;
    bool tie_embeddings = false;
    // A safetensors file of the model's state dict (docs/weights.md) whose values replace the
    // seeded initialisation when the run starts; "" for none.
    std::string init_from;

    bool operator==(const ModelSpec&) const = default;
};

enum class OptimizerKind : std::uint8_t { sgd, adamw };
enum class LrSchedule : std::uint8_t { constant, cosine };

// train.what_if: at each statistics step, what each listed format would do to every matmul layer's
// operands, measured without changing the run (train/what_if.h; docs/numerics.md, "What-if
// statistics"). "fp8-e4m3" is per-tensor FP8 with delayed scaling (x and W in e4m3, dy in e5m2,
// the run's precision.fp8 history length, margin and algorithm). An empty list turns them off.
struct WhatIfSpec {
    std::vector<ComputeFormat> formats = {Format::fp16, Format::bf16, Format::fp8_e4m3, BlockFormat::mxfp8_e4m3,
                                          BlockFormat::mxfp4, BlockFormat::nvfp4};
    // Values measured per tensor: whole rows (runs along the matmul's reduction dimension) spread
    // evenly over the tensor, as many as fit; 0 measures every value.
    std::int64_t max_elements = 2048;
    bool operator==(const WhatIfSpec&) const = default;
};

// train.block_scales: at each statistics step, the scale of every block of each matmul operand
// that is quantised in blocks (train/block_scale_views.h; docs/numerics.md, "Block-scale views").
// "own" (the default) shows the operands whose matmul runs a block format, in that format; a
// block format's name shows every matmul operand, each in its matmul's own block format or, where
// it runs none, in this one; "off" shows none.
struct BlockScaleSpec {
    bool enabled = true;
    std::optional<BlockFormat> format;  // unset: "own"
    // Blocks kept per tensor: whole rows spread evenly over it, as many as fit; 0 keeps every block.
    std::int64_t max_blocks = 16384;
    bool operator==(const BlockScaleSpec&) const = default;
};

struct TrainSpec {
    int batch_size = 128;
    int epochs = 3;                 // used when steps == 0
    std::int64_t steps = 0;         // 0: run `epochs` epochs
    OptimizerKind optimizer = OptimizerKind::adamw;
    double lr = 1e-3;
    double momentum = 0.9;          // sgd
    double weight_decay = 0.0;      // sgd: L2 added to the gradient; adamw: decoupled
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adamw
    LrSchedule schedule = LrSchedule::constant;
    std::int64_t warmup_steps = 0;  // cosine: linear warmup from 0
    std::uint64_t seed = 1;
    std::int64_t eval_every = 200;  // steps; 0: only at the end
    std::int64_t layer_stats_every = 1;  // per-layer telemetry every k steps
    WhatIfSpec what_if;                  // on the same steps
    BlockScaleSpec block_scales;         // on the same steps
    // On the same steps, each matmul layer's sums against FP64 in its own accumulator (FP32, or
    // FP16 where the layer accumulates in it): train/accumulation_error.h. Off by default: the
    // lesson on FP16 accumulation and a user who asks turn it on.
    bool accumulation_error = false;
    // Checkpoints (engine/train/checkpoint.h): every this many steps, and always when the run ends
    // or is stopped (0: only then); the newest keep_checkpoints of a run are kept (0: all).
    std::int64_t checkpoint_every = 0;
    std::int64_t keep_checkpoints = 3;

    bool operator==(const TrainSpec&) const = default;
};

enum class Autocast : std::uint8_t { off, fp16, bf16 };

// A layer's precision: auto follows autocast; anything else overrides it for that layer. The
// block-scaled ones (mxfp8_e4m3 .. nvfp4) quantise each matmul's operands in blocks along the
// reduction dimension (model/layer_formats.h, docs/numerics.md "Block-scaled formats in training").
enum class LayerPrecision : std::uint8_t {
    automatic, fp32, tf32, fp16, bf16, fp8_e4m3,
    mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4, nvfp4,
};
// Every setting, in the order the GUI offers them.
inline constexpr std::array<LayerPrecision, 12> all_layer_precisions = {
    LayerPrecision::automatic,  LayerPrecision::fp32,       LayerPrecision::tf32,       LayerPrecision::fp16,
    LayerPrecision::bf16,       LayerPrecision::fp8_e4m3,   LayerPrecision::mxfp8_e4m3, LayerPrecision::mxfp8_e5m2,
    LayerPrecision::mxfp6_e3m2, LayerPrecision::mxfp6_e2m3, LayerPrecision::mxfp4,      LayerPrecision::nvfp4};

// A layer's precision for each of its three matmuls, by Transformer Engine's names: forward
// (y = x·Wᵀ), dgrad (dX = dy·W) and wgrad (dW = dyᵀ·x). The file's plain string sets all three;
// an object sets them apart ({"forward": "mxfp4"}: the two others auto), which is how one GEMM is
// kept out of FP8 (TE's DisableFP8GEMM) or only the forward is quantised. The forward's precision
// decides the layer's output, gradient and stored-weight formats (model/layer_formats.h).
// accumulate: what the matmuls add their products in. FP32 is what tensor cores and every library
// default do; FP16 (cuBLASLt's CUBLAS_COMPUTE_16F) is offered for linear layers whose three matmuls
// are fp16, to show what FP32 accumulation saves (docs/numerics.md, "FP16 accumulation").
enum class Accumulation : std::uint8_t { fp32, fp16 };

struct LayerSetting {
    LayerPrecision forward = LayerPrecision::automatic;
    LayerPrecision dgrad = LayerPrecision::automatic;
    LayerPrecision wgrad = LayerPrecision::automatic;
    Accumulation accumulate = Accumulation::fp32;

    LayerSetting() = default;
    LayerSetting(LayerPrecision all) : forward(all), dgrad(all), wgrad(all) {}  // NOLINT: one for all three
    // Whether one precision name says it all: the three matmuls alike, accumulating in FP32.
    bool uniform() const { return forward == dgrad && dgrad == wgrad && accumulate == Accumulation::fp32; }
    bool uses(LayerPrecision p) const { return forward == p || dgrad == p || wgrad == p; }  // any matmul
    bool operator==(const LayerSetting&) const = default;
};

// An op class's format (precision.ops): auto is what autocast does with it (softmax and layernorm:
// FP32, autocast's FP32 list); the others override autocast for every op of the class, which
// PyTorch's autocast never allows (model/op_classes.h).
enum class OpPrecision : std::uint8_t { automatic, fp32, fp16, bf16 };

// The op classes a setting can name: those autocast keeps in FP32 that a transformer runs.
struct OpPrecisions {
    OpPrecision softmax = OpPrecision::automatic;
    OpPrecision layernorm = OpPrecision::automatic;

    bool operator==(const OpPrecisions&) const = default;
};

enum class LossScalingMode : std::uint8_t { off, fixed, dynamic };  // "off" | "static" | "dynamic"

struct LossScalingSpec {
    LossScalingMode mode = LossScalingMode::dynamic;
    double init_scale = 65536.0;    // also the static scale
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    std::int64_t growth_interval = 2000;
    std::optional<double> min_scale;  // extensions, off by default (null in the file)
    std::optional<double> max_scale;

    bool operator==(const LossScalingSpec&) const = default;
};

enum class AmaxAlgo : std::uint8_t { max, most_recent };
// delayed: each tensor's scale follows its amax history; none: every scale stays 1, so values are
// cast to FP8 as they are (what per-tensor scaling saves a layer from, shown by switching it off);
// current: each tensor's scale comes from its own amax at the moment it is quantised (TE's
// Float8CurrentScaling, torchao's tensorwise), one more pass over it, no history to lag behind;
// rowwise: a current scale per row along each matmul's reduction dimension (torchao's rowwise;
// linear layers whose three matmuls are FP8).
enum class Fp8Scaling : std::uint8_t { delayed, none, current, rowwise };

struct Fp8Spec {                    // delayed per-tensor scaling, as Transformer Engine does
    int amax_history_len = 16;
    int margin = 0;
    AmaxAlgo amax_compute_algo = AmaxAlgo::max;
    Fp8Scaling scaling = Fp8Scaling::delayed;  // the one FP8 setting that can change during a run
    bool power_of_two_scales = false;  // each scale rounded down to a power of two (exact to apply)

    bool operator==(const Fp8Spec&) const = default;
};

// How values are rounded where precision is lost, beside round-to-nearest-even (docs/numerics.md,
// "Stochastic rounding and Kahan summation"). gradients: stochastic rounds the gradients a linear
// or conv2d layer's backward narrows (dy quantised to an FP8 or block-scaled operand, dX and dW
// stored in a 16-bit format) up or down at random, in proportion to the distance: unbiased on
// average. weights (stored low-precision weights, master weights off): stochastic rounds each
// update's result that way; kahan keeps each weight's rounding error in a compensation buffer of
// the weight's format and adds it back at the next step.
enum class GradientRounding : std::uint8_t { nearest, stochastic };
enum class WeightRounding : std::uint8_t { nearest, stochastic, kahan };

struct RoundingSpec {
    GradientRounding gradients = GradientRounding::nearest;
    WeightRounding weights = WeightRounding::nearest;

    bool operator==(const RoundingSpec&) const = default;
};

struct PrecisionSpec {
    Autocast autocast = Autocast::off;
    bool master_weights = true;
    std::map<std::string, LayerSetting> layers;  // "fc1" -> fp32; absent = auto
    OpPrecisions ops;
    LossScalingSpec loss_scaling;
    Fp8Spec fp8;
    RoundingSpec rounding;

    bool operator==(const PrecisionSpec&) const = default;
};

// The run a lesson compares itself with: the lesson's own experiment with a few settings changed
// ("the same network in FP32"), overlaid on the live charts (lesson_reference_experiment).
struct LessonReference {
    std::string name;               // how the overlay is labelled: "FP32"
    std::vector<std::string> set;   // --set assignments: "precision.autocast=off"

    bool operator==(const LessonReference&) const = default;
};

struct LessonSpec {                 // classroom presets: shown when the file is loaded
    std::string title;
    std::string text;               // the concept, in a few sentences
    std::string watch;              // what to watch on the charts
    bool classroom = false;         // hide the advanced controls
    double pace = 0;                // steps per second the window runs it at; 0: as fast as possible
    std::optional<LessonReference> reference;

    bool operator==(const LessonSpec&) const = default;
};

struct Experiment {
    std::string name = "experiment";
    DatasetSpec dataset;
    ModelSpec model;
    TrainSpec train;
    PrecisionSpec precision;
    std::string backend = "auto";   // auto | cpu | cuda
    int device = 0;                 // backend.device: GPU index
    int threads = 0;                // backend.threads: CPU backend threads, 1..1024; 0 auto (make_backend)
    LessonSpec lesson;

    bool operator==(const Experiment&) const = default;
};

// Parsing and printing. from_json throws mantissa::Error naming the key ("precision.autocast: ...").
// experiment_from_json(experiment_to_json(e)) == e for every valid e. "backend" is read as a string
// ("cuda") or an object ({"kind": "cuda", "device": 1, "threads": 0}) and written as the object.
Experiment experiment_from_json(const nlohmann::json& j);
// load_experiment reads a regular file of at most 16 MiB (user_file.h) and refuses numbers
// beyond a double and a key twice in one object, naming the file (and line and column) in errors.
Experiment load_experiment(const std::string& path);       // reads, parses, names the file in errors
nlohmann::json experiment_to_json(const Experiment& e);    // every key, defaults included
void save_experiment(const Experiment& e, const std::string& path);

// Applies one "--set" assignment: a dotted key and a value in JSON syntax, or a bare word taken as
// a string ("precision.autocast=bf16", "model.hidden=[512,256]", "precision.layers.fc1=fp32").
// Validated exactly as the file is (same errors); on an error `e` is left unchanged.
void apply_setting(Experiment& e, const std::string& assignment);

// Applies several, in order, as a person gives them on one command line: an assignment refused
// only for what a later one supplies (model.kind=layers before the model.layers it needs) is tried
// again after the others, unless a later one sets the same key (the last of a key still wins).
// What no order makes acceptable throws the first such assignment's error; `e` is then left as
// the accepted ones made it.
void apply_settings(Experiment& e, const std::vector<std::string>& assignments);

// The experiment of the reference run `lesson` names (lesson.lesson.reference, which must be set):
// the lesson's experiment with the reference's settings made in order, without the lesson block,
// named "NAME-reference-REF" ("lesson-fp16-underflow-reference-fp32"). Throws mantissa::Error naming
// the setting (lesson.reference.set[i]) that cannot be made.
Experiment lesson_reference_experiment(const Experiment& lesson);

// Names as in the experiment file.
const char* autocast_name(Autocast a);
const char* layer_precision_name(LayerPrecision p);
// "mxfp4" for a uniform setting, else "forward fp8-e4m3, dgrad fp8-e4m3, wgrad bf16".
std::string layer_setting_text(const LayerSetting& s);
const char* loss_scaling_mode_name(LossScalingMode m);
const char* activation_name(Activation a);
const char* optimizer_name(OptimizerKind o);
const char* lr_schedule_name(LrSchedule s);
const char* amax_algo_name(AmaxAlgo a);
const char* fp8_scaling_name(Fp8Scaling s);
const char* op_precision_name(OpPrecision p);
const char* accumulation_name(Accumulation a);
const char* gradient_rounding_name(GradientRounding r);
const char* weight_rounding_name(WeightRounding r);
std::optional<OpPrecision> parse_op_precision(const std::string& s);
std::optional<LayerPrecision> parse_layer_precision(const std::string& s);
std::optional<Autocast> parse_autocast(const std::string& s);
std::optional<LossScalingMode> parse_loss_scaling_mode(const std::string& s);
std::optional<Activation> parse_activation(const std::string& s);
std::optional<OptimizerKind> parse_optimizer(const std::string& s);

}  // namespace mantissa
