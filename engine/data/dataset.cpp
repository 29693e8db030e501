// load_dataset: picks the loader for spec.kind, splits, normalises; plus the shared split and
// normalisation helpers of table.h. The defaults and the fallback rules live here, in one place,
// and docs/datasets.md describes them:
//   - fashion-mnist / mnist read the IDX folder spec.path; an mnist spec that kept the
//     fashion-mnist default path (or an empty path) reads /usr/share/datasets/mnist instead, and a
//     cifar10 spec /usr/share/datasets/cifar10;
//   - when their folder or any of its four files is absent they fall back to spirals, with a
//     notice; a path that is there but is the wrong kind of thing (a FIFO, a folder) is an error;
//     cifar10 never falls back: a missing folder or file is an error that says where to get it;
//   - idx and cifar10 sets keep their own train/test split; csv and synthetic sets split by
//     test_fraction;
//   - IDX images are standardised with one global mean/std, cifar10 with one per colour channel,
//     other sets per feature;
//   - every set says its sample shape: 1 x H x W for IDX images, 3 x 32 x 32 for cifar10,
//     dataset.shape for a csv that declares one, features x 1 x 1 otherwise.
#include <filesystem>
#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <utility>

#include "data/cifar_reader.h"
#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/fortunes_corpus.h"
#include "data/idx_reader.h"
#include "data/random.h"
#include "data/synthetic.h"
#include "data/table.h"
#include "data/text_corpus.h"
#include "error.h"

namespace mantissa {
namespace {

constexpr const char* kFashionMnistFolder = "/usr/share/datasets/fashion-mnist";
constexpr const char* kMnistFolder = "/usr/share/datasets/mnist";
constexpr const char* kCifarFolder = "/usr/share/datasets/cifar10";
constexpr std::int64_t kMaxSyntheticSamples = 10'000'000;
constexpr int kMaxSyntheticClasses = 1000;

void check_test_fraction(const DatasetSpec& spec) {
    if (!(spec.test_fraction >= 0.0 && spec.test_fraction < 1.0))
        throw Error("dataset.test_fraction: " + std::to_string(spec.test_fraction) +
                    " is out of range; it must be at least 0 and below 1.");
}

void check_synthetic(const DatasetSpec& spec, bool classification) {
    if (spec.samples < 2 || spec.samples > kMaxSyntheticSamples)
        throw Error("dataset.samples: " + std::to_string(spec.samples) + " is out of range; it must be 2.." +
                    std::to_string(kMaxSyntheticSamples) + ".");
    if (classification && (spec.classes < 2 || spec.classes > kMaxSyntheticClasses))
        throw Error("dataset.classes: " + std::to_string(spec.classes) + " is out of range; it must be 2.." +
                    std::to_string(kMaxSyntheticClasses) + ".");
    if (classification && spec.samples < spec.classes)
        throw Error("dataset.samples: " + std::to_string(spec.samples) + " is fewer than dataset.classes (" +
                    std::to_string(spec.classes) + "); every class needs at least one sample.");
    if (!(spec.noise >= 0.0 && std::isfinite(spec.noise)))
        throw Error("dataset.noise: " + std::to_string(spec.noise) +
                    " is out of range; it must be a finite number of at least 0.");
    check_test_fraction(spec);
}

Dataset synthetic_dataset(const std::string& kind, const DatasetSpec& spec, std::uint64_t seed) {
    data::Table table;
    if (kind == "spirals") {
        check_synthetic(spec, true);
        table = data::make_spirals(spec.samples, spec.classes, spec.noise, seed);
    } else if (kind == "blobs") {
        check_synthetic(spec, true);
        table = data::make_blobs(spec.samples, spec.classes, spec.noise, seed);
    } else {
        check_synthetic(spec, false);
        table = data::make_sine(spec.samples, spec.noise, seed);
    }
    Dataset data;
    data.name = kind;
    data::split_table(std::move(table), spec.test_fraction, seed, data);
    if (spec.normalize) data::normalise_per_feature(data);
    return data;
}

// The folder a fashion-mnist, mnist or cifar10 spec means: its own default when the path is empty or
// kept the fashion-mnist default.
std::string idx_folder_for(const DatasetSpec& spec) {
    const bool default_path = spec.path.empty() || spec.path == DatasetSpec{}.path;
    if (spec.kind == "mnist" && default_path) return kMnistFolder;
    if (spec.kind == "cifar10" && default_path) return kCifarFolder;
    if (spec.path.empty()) return kFashionMnistFolder;
    return spec.path;
}

// `missing`: the file the folder lacks, or "" when there is no such folder.
std::string fallback_notice(const DatasetSpec& spec, const std::string& folder, const std::string& missing) {
    const bool fashion = spec.kind == "fashion-mnist";
    const std::string why = missing.empty() ? "no such folder" : missing + "[.gz] is missing";
    std::string notice = std::string(fashion ? "Fashion-MNIST" : "MNIST") + " was not found at " + folder + " (" + why +
                         "); using the spirals set instead. ";
    if (fashion)
        notice +=
            "Install it with: sudo apt-get install dataset-fashion-mnist (or set "
            "dataset.path to a folder holding the four IDX files).";
    else
        notice +=
            "Put the four MNIST IDX files (train-images-idx3-ubyte.gz, "
            "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
            "t10k-labels-idx1-ubyte.gz) in that folder or set dataset.path; Debian packages "
            "the similar Fashion-MNIST: sudo apt-get install dataset-fashion-mnist.";
    return notice;
}

Dataset idx_dataset(const std::string& folder, const std::string& name, bool normalize) {
    Dataset data = data::read_idx_folder(folder, name);
    if (normalize) data::normalise_global(data);
    return data;
}

// A standard deviation that is safe to divide by: a (near-)constant input keeps 1, so that
// standardising leaves it centred instead of blowing up rounding noise.
double usable_std(double mean, double variance) {
    const double std = std::sqrt(std::max(variance, 0.0));
    return std > 1e-10 * std::abs(mean) ? std : 1.0;  // also catches 0 and NaN
}

// Mean and standard deviation of values given in runs of contiguous floats, in double, shifted by
// the first value (so that a large common offset does not cancel away the variance), with four
// accumulators so the loop pipelines.
class Moments {
public:
    void add(const float* x, std::size_t n) {
        if (n == 0) return;
        if (m_n == 0) m_shift = x[0];
        std::size_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; ++k) {
                const double d = x[i + static_cast<std::size_t>(k)] - m_shift;
                m_s[k] += d;
                m_q[k] += d * d;
            }
        for (; i < n; ++i) {
            const double d = x[i] - m_shift;
            m_s[0] += d;
            m_q[0] += d * d;
        }
        m_n += n;
    }
    std::pair<double, double> mean_std() const {
        if (m_n == 0) return {0.0, 1.0};
        const double sum = (m_s[0] + m_s[1]) + (m_s[2] + m_s[3]);
        const double sq = (m_q[0] + m_q[1]) + (m_q[2] + m_q[3]);
        const double mean_shifted = sum / static_cast<double>(m_n);
        const double variance = sq / static_cast<double>(m_n) - mean_shifted * mean_shifted;
        const double mean = m_shift + mean_shifted;
        return {mean, usable_std(mean, variance)};
    }

private:
    double m_shift = 0.0;
    double m_s[4] = {}, m_q[4] = {};
    std::size_t m_n = 0;
};

// One pass over `n` contiguous values.
std::pair<double, double> mean_std(const float* x, std::size_t n) {
    Moments m;
    m.add(x, n);
    return m.mean_std();
}

Dataset cifar_dataset(const DatasetSpec& spec) {
    Dataset data = data::read_cifar_folder(idx_folder_for(spec));
    if (spec.normalize) data::normalise_per_channel(data);
    return data;
}

// A csv's declared shape must hold exactly its feature columns.
void check_csv_shape(const DatasetSpec& spec, int features) {
    if (!spec.shape || spec.shape->numel() == features) return;
    const SampleShape& s = *spec.shape;
    throw Error("dataset.shape [" + std::to_string(s.channels) + ", " + std::to_string(s.height) + ", " +
                std::to_string(s.width) + "] holds " + std::to_string(s.numel()) + " values per sample, but the CSV file " +
                spec.path + " has " + std::to_string(features) + (features == 1 ? " feature column" : " feature columns") +
                "; make the product of the shape equal the number of feature columns, or remove dataset.shape.");
}

}  // namespace

namespace data {

std::int64_t test_rows_for(std::int64_t rows, double test_fraction) {
    if (!(test_fraction >= 0.0 && test_fraction < 1.0))
        throw Error("dataset.test_fraction: " + std::to_string(test_fraction) +
                    " is out of range; it must be at least 0 and below 1.");
    auto test = static_cast<std::int64_t>(std::llround(static_cast<double>(rows) * test_fraction));
    if (test > rows - 1) test = rows - 1;
    return test < 0 ? 0 : test;
}

void split_table(Table&& table, double test_fraction, std::uint64_t seed, Dataset& out) {
    out.features = table.features;
    out.shape = {table.features, 1, 1};
    out.classes = table.classes;
    out.outputs = table.outputs;
    const std::int64_t rows = table.rows;
    const std::int64_t test_rows = test_rows_for(rows, test_fraction);

    std::vector<std::int64_t> perm(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i) perm[static_cast<std::size_t>(i)] = i;
    Rng rng(derive_seed(seed, 0x53504C4954ULL));  // "SPLIT"
    shuffle(perm, rng);
    std::vector<char> in_test(static_cast<std::size_t>(rows), 0);
    for (std::int64_t i = 0; i < test_rows; ++i) in_test[static_cast<std::size_t>(perm[i])] = 1;

    const auto f = static_cast<std::size_t>(table.features);
    const auto o = static_cast<std::size_t>(table.outputs);
    const bool regression = table.classes == 0;
    for (Split* s : {&out.train, &out.test}) {
        const std::int64_t n = s == &out.test ? test_rows : rows - test_rows;
        s->rows = n;
        s->x.clear();
        s->y.clear();
        s->targets.clear();
        s->x.reserve(static_cast<std::size_t>(n) * f);
        if (regression)
            s->targets.reserve(static_cast<std::size_t>(n) * o);
        else
            s->y.reserve(static_cast<std::size_t>(n));
    }
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
        Split& s = in_test[r] ? out.test : out.train;
        s.x.insert(s.x.end(), table.x.begin() + static_cast<std::ptrdiff_t>(r * f),
                   table.x.begin() + static_cast<std::ptrdiff_t>((r + 1) * f));
        if (regression)
            s.targets.insert(s.targets.end(), table.targets.begin() + static_cast<std::ptrdiff_t>(r * o),
                             table.targets.begin() + static_cast<std::ptrdiff_t>((r + 1) * o));
        else
            s.y.push_back(table.y[r]);
    }
}

void normalise_per_feature(Dataset& data) {
    const auto f = static_cast<std::size_t>(data.features);
    const auto rows = static_cast<std::size_t>(data.train.rows);
    if (f == 0 || rows == 0) return;
    // Row by row, every column at once (one pass over memory however wide the table), shifted by
    // the first row as in mean_std.
    const float* x = data.train.x.data();
    std::vector<double> sum(f, 0.0), sq(f, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < f; ++c) {
            const double d = static_cast<double>(x[r * f + c]) - x[c];
            sum[c] += d;
            sq[c] += d * d;
        }
    std::vector<float> mean(f), inv(f);
    for (std::size_t c = 0; c < f; ++c) {
        const double shifted = sum[c] / static_cast<double>(rows);
        const double m = x[c] + shifted;
        mean[c] = static_cast<float>(m);
        inv[c] = static_cast<float>(1.0 / usable_std(m, sq[c] / static_cast<double>(rows) - shifted * shifted));
    }
    for (Split* s : {&data.train, &data.test})
        for (std::size_t i = 0; i < s->x.size(); i += f)
            for (std::size_t c = 0; c < f; ++c) s->x[i + c] = (s->x[i + c] - mean[c]) * inv[c];
}

void normalise_global(Dataset& data) {
    const auto [mean, std] = mean_std(data.train.x.data(), data.train.x.size());
    const auto m = static_cast<float>(mean);
    const auto inv = static_cast<float>(1.0 / std);
    for (Split* s : {&data.train, &data.test})
        for (float& v : s->x) v = (v - m) * inv;
}

void normalise_per_channel(Dataset& data) {
    const auto channels = static_cast<std::size_t>(data.shape.channels);
    const auto plane = static_cast<std::size_t>(data.shape.height * data.shape.width);
    const auto f = static_cast<std::size_t>(data.features);
    if (channels == 0 || plane == 0 || f != channels * plane) return;
    // Each channel's plane in each training row: a run of `plane` contiguous values.
    std::vector<Moments> moments(channels);
    for (std::size_t i = 0; i + f <= data.train.x.size(); i += f)
        for (std::size_t c = 0; c < channels; ++c) moments[c].add(data.train.x.data() + i + c * plane, plane);
    std::vector<float> mean(channels), inv(channels);
    for (std::size_t c = 0; c < channels; ++c) {
        const auto [m, std] = moments[c].mean_std();
        mean[c] = static_cast<float>(m);
        inv[c] = static_cast<float>(1.0 / std);
    }
    for (Split* s : {&data.train, &data.test})
        for (std::size_t i = 0; i + f <= s->x.size(); i += f)
            for (std::size_t c = 0; c < channels; ++c) {
                float* v = s->x.data() + i + c * plane;
                for (std::size_t k = 0; k < plane; ++k) v[k] = (v[k] - mean[c]) * inv[c];
            }
}

}  // namespace data

namespace {

// A text file, or a folder of fortune files (the default: Debian's fortunes package).
Dataset text_dataset(const DatasetSpec& spec) {
    data::TextCorpusOptions options;
    options.vocabulary = data::text_vocabulary_from_name(spec.vocabulary, "dataset.vocabulary");
    options.context = spec.context;
    options.test_fraction = spec.test_fraction;
    if (spec.path.empty()) throw Error("dataset.path: kind 'text' needs a UTF-8 text file or a folder of fortune files.");
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(spec.path, ec);
    auto corpus = std::make_shared<const data::TextCorpus>(folder ? data::read_fortunes_corpus(spec.path, options)
                                                                   : data::TextCorpus::read_file(spec.path, options));
    Dataset d;
    d.name = "text";
    d.features = corpus->context();
    d.shape = SampleShape{corpus->context(), 1, 1};
    d.classes = d.outputs = corpus->vocab_size();
    d.train.rows = corpus->train_samples();
    d.test.rows = corpus->test_samples();
    if (corpus->test_unknown() > 0)
        d.notices.push_back(corpus->test_unknown() == 1
                                ? std::string("1 character of the test part never occurs in the training part; it is "
                                              "read as the unknown token, which the model cannot predict.")
                                : std::to_string(corpus->test_unknown()) +
                                      " characters of the test part never occur in the training part; they are read "
                                      "as the unknown token, which the model cannot predict.");
    d.text = std::move(corpus);
    return d;
}

Dataset load_dataset_unguarded(const DatasetSpec& spec, std::uint64_t seed) {
    const std::string& kind = spec.kind;
    // As the experiment file refuses it (config/experiment.cpp), for a spec built in code.
    if (spec.shape && kind != "csv")
        throw Error("dataset.shape: only kind 'csv' takes a shape; kind '" + kind +
                    "' knows its own (docs/datasets.md), so remove dataset.shape.");
    if (kind == "fashion-mnist" || kind == "mnist") {
        const IdxFolderPlan plan = plan_idx_folder(spec);
        if (plan.fallback) {
            Dataset data = synthetic_dataset("spirals", spec, seed);
            data.notices.insert(data.notices.begin(), *plan.fallback);
            return data;
        }
        return idx_dataset(plan.folder, kind, spec.normalize);
    }
    if (kind == "cifar10") return cifar_dataset(spec);
    if (kind == "idx") {
        if (spec.path.empty()) throw Error("dataset.path: kind 'idx' needs the folder holding the four IDX files.");
        return idx_dataset(spec.path, "idx", spec.normalize);
    }
    if (kind == "csv") {
        if (spec.path.empty()) throw Error("dataset.path: kind 'csv' needs the path of the CSV file.");
        check_test_fraction(spec);
        Dataset data;
        data.name = "csv";
        data::Table table = data::csv_to_table(data::read_csv(spec.path, spec.label_column), spec.path, data.notices);
        check_csv_shape(spec, table.features);
        data::split_table(std::move(table), spec.test_fraction, seed, data);
        if (spec.shape) data.shape = *spec.shape;
        if (spec.normalize) data::normalise_per_feature(data);
        return data;
    }
    if (kind == "spirals" || kind == "blobs" || kind == "sine") return synthetic_dataset(kind, spec, seed);
    if (kind == "text") return text_dataset(spec);
    throw Error("dataset.kind: '" + kind +
                "' is not a dataset kind; use fashion-mnist, mnist, cifar10, idx, csv, spirals, blobs, sine or text.");
}

}  // namespace

IdxFolderPlan plan_idx_folder(const DatasetSpec& spec) {
    IdxFolderPlan plan;
    plan.folder = idx_folder_for(spec);
    // Only what is not there falls back: a folder, or a file in it, that is there but is the wrong
    // kind of thing (a file for the folder, a FIFO or a folder for a file) throws.
    const bool folder_there = data::idx_folder_exists(plan.folder, spec.kind);
    const std::vector<std::string> missing = folder_there ? data::missing_idx_files(plan.folder)
                                                          : std::vector<std::string>{std::string()};
    if (!missing.empty()) plan.fallback = fallback_notice(spec, plan.folder, missing.front());
    return plan;
}

std::int64_t Dataset::positions() const { return text ? text->context() : 1; }

Dataset load_dataset(const DatasetSpec& spec, std::uint64_t seed) {
    try {
        return load_dataset_unguarded(spec, seed);
    } catch (const std::bad_alloc&) {
        // The readers say which file when they can; this catches the rest (splitting, normalising).
        throw Error("Not enough memory to load the dataset (dataset.kind '" + spec.kind +
                    "'); free some memory or use a smaller dataset.");
    }
}

}  // namespace mantissa
