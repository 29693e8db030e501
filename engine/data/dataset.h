// Datasets: what the trainer consumes. A Dataset is two dense splits of fp32 features with integer
// class labels (classification) or fp32 targets (regression), already normalised, plus the
// per-epoch shuffled batch order, and the shape of one sample (channels x height x width) so that a
// convolution knows how a row of features is laid out. Loaders: IDX (MNIST, Fashion-MNIST, raw or
// .gz), CIFAR-10 (its binary version), CSV, and seeded synthetic sets (spirals, blobs, sine). Kinds, keys, defaults, normalisation and error messages:
// docs/datasets.md. Nothing here holds shared state: any thread may load a dataset; a loaded
// Dataset is read-only to the trainer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "config/sample_shape.h"

namespace mantissa {

namespace data {
class TextCorpus;  // data/text_corpus.h
}

struct Split {
    std::int64_t rows = 0;
    std::vector<float> x;          // (rows, features), row-major
    std::vector<std::int32_t> y;   // (rows) class labels, classification only
    std::vector<float> targets;    // (rows, outputs), regression only
};

struct Dataset {
    std::string name;              // "fashion-mnist", "spirals", ...
    int features = 0;
    // One sample as a network sees it; always features == shape.numel(). IDX images are 1 x H x W,
    // cifar10 3 x 32 x 32 (channel planes, each row-major), csv what dataset.shape declares, and
    // everything else features x 1 x 1.
    SampleShape shape;
    int classes = 0;               // 0: regression
    int outputs = 0;               // classes for classification, target width for regression
    Split train;
    Split test;
    std::vector<std::string> notices;  // e.g. "Fashion-MNIST not found at ...; using spirals."
    // Kind text: the corpus. A sample is a window of `context` token ids (features = context, the
    // ids as floats, exact below 2^24) with one label per position (the next token), classes =
    // the vocabulary's size; the splits hold only their window counts (rows) and batches are cut
    // from the corpus (TrainBatches, Trainer::evaluate). Null for every other kind.
    std::shared_ptr<const data::TextCorpus> text;
    bool is_regression() const { return classes == 0; }
    // Labels per sample: the context for text, else 1.
    std::int64_t positions() const;
};

// Loads what the spec asks for. For fashion-mnist/mnist, when the files are absent, falls back to
// spirals and says why in `notices`; any other problem (a corrupt file, a wrong path for kind
// "idx", "cifar10" or "csv", a dataset.shape that does not match the CSV's columns) throws
// mantissa::Error naming the file and what is wrong with it.
// `seed` drives synthetic generation and the train/test split.
// Normalisation (spec.normalize) uses the training split's statistics only: one global mean/std
// for IDX images, one per colour channel for cifar10, per feature otherwise; labels and regression
// targets are left as they are.
Dataset load_dataset(const DatasetSpec& spec, std::uint64_t seed);

// For kinds fashion-mnist and mnist: the folder load_dataset reads, and the notice it gives when it
// falls back to spirals (the folder, or one of its four files, is not there); no fallback when it
// would read the folder. Looks with stat() only, reading no data, so a window can say it before
// Start; throws mantissa::Error, as load_dataset does, for a path that is there but the wrong kind
// of thing (a file for the folder, a FIFO for a file).
struct IdxFolderPlan {
    std::string folder;
    std::optional<std::string> fallback;
};
IdxFolderPlan plan_idx_folder(const DatasetSpec& spec);

// The sample order of one epoch: a permutation of [0, rows) determined by (seed, epoch) alone.
std::vector<std::int64_t> epoch_order(std::int64_t rows, std::uint64_t seed, std::int64_t epoch);

// Copies the rows order[first .. first+count) of `split` into x (count, features) and y or
// targets, for one batch. Buffers are resized only when too small (no per-step allocation).
void gather_batch(const Dataset& data, const Split& split, const std::vector<std::int64_t>& order,
                  std::int64_t first, std::int64_t count, std::vector<float>& x,
                  std::vector<std::int32_t>& y, std::vector<float>& targets);

}  // namespace mantissa
