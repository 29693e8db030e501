// The experiment file: JSON <-> Experiment, with errors that name the full dotted key.
//
// Reading goes through one small helper, Reader, over one JSON object: every read names a key (so
// the Reader knows all the keys its object may hold), checks the value's type and range when the key
// is present, and leaves the default when it is absent. finish() then reports any key that was never
// read as unknown, with the nearest known key as a suggestion. The checks on values (as_integer,
// as_real, as_choice, ...) are free functions, so array elements and the free-form layer table use
// the same sentences. apply_setting (--set KEY=VALUE) edits the printed JSON and reads it back, so a
// setting is validated by exactly the code that validates a file. The text itself is parsed by
// config/json_text (a key twice refused, syntax errors as sentences). Everything here is a pure
// function of its arguments (and the file), callable from any thread.
#include "config/experiment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cfloat>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "printable_text.h"
#include "user_file.h"
#include "error.h"
#include "config/json_text.h"

namespace mantissa {

using json = nlohmann::json;

namespace {

// ---- names of the enumerations, as the file spells them

template <class E>
struct Named {
    E value;
    const char* name;
};

constexpr Named<Autocast> autocast_names[] = {
    {Autocast::off, "off"}, {Autocast::fp16, "fp16"}, {Autocast::bf16, "bf16"}};
constexpr Named<LayerPrecision> layer_precision_names[] = {
    {LayerPrecision::automatic, "auto"}, {LayerPrecision::fp32, "fp32"},
    {LayerPrecision::tf32, "tf32"},      {LayerPrecision::fp16, "fp16"},
    {LayerPrecision::bf16, "bf16"},      {LayerPrecision::fp8_e4m3, "fp8-e4m3"},
    {LayerPrecision::mxfp8_e4m3, "mxfp8-e4m3"}, {LayerPrecision::mxfp8_e5m2, "mxfp8-e5m2"},
    {LayerPrecision::mxfp6_e3m2, "mxfp6-e3m2"}, {LayerPrecision::mxfp6_e2m3, "mxfp6-e2m3"},
    {LayerPrecision::mxfp4, "mxfp4"},           {LayerPrecision::nvfp4, "nvfp4"}};
constexpr Named<LossScalingMode> loss_scaling_names[] = {{LossScalingMode::off, "off"},
                                                         {LossScalingMode::fixed, "static"},
                                                         {LossScalingMode::dynamic, "dynamic"}};
constexpr Named<Activation> activation_names[] = {
    {Activation::relu, "relu"}, {Activation::gelu, "gelu"}, {Activation::tanh, "tanh"}};
constexpr Named<OptimizerKind> optimizer_names[] = {{OptimizerKind::sgd, "sgd"},
                                                    {OptimizerKind::adamw, "adamw"}};
constexpr Named<LrSchedule> schedule_names[] = {{LrSchedule::constant, "constant"},
                                                {LrSchedule::cosine, "cosine"}};
constexpr Named<AmaxAlgo> amax_algo_names[] = {{AmaxAlgo::max, "max"},
                                               {AmaxAlgo::most_recent, "most_recent"}};
constexpr Named<Fp8Scaling> fp8_scaling_names[] = {
    {Fp8Scaling::delayed, "delayed"}, {Fp8Scaling::none, "none"}, {Fp8Scaling::current, "current"},
    {Fp8Scaling::rowwise, "rowwise"}};
constexpr Named<OpPrecision> op_precision_names[] = {
    {OpPrecision::automatic, "auto"}, {OpPrecision::fp32, "fp32"}, {OpPrecision::fp16, "fp16"}, {OpPrecision::bf16, "bf16"}};
constexpr Named<Accumulation> accumulation_names[] = {{Accumulation::fp32, "fp32"}, {Accumulation::fp16, "fp16"}};
constexpr Named<GradientRounding> gradient_rounding_names[] = {{GradientRounding::nearest, "nearest"},
                                                               {GradientRounding::stochastic, "stochastic"}};
constexpr Named<WeightRounding> weight_rounding_names[] = {
    {WeightRounding::nearest, "nearest"}, {WeightRounding::stochastic, "stochastic"}, {WeightRounding::kahan, "kahan"}};
constexpr std::array<const char*, 2> vocabularies = {"chars", "bytes"};

// Kinds kept as strings in the structs; the reader still checks them against these lists.
constexpr std::array<const char*, 9> dataset_kinds = {"fashion-mnist", "mnist", "cifar10", "idx", "csv",
                                                      "spirals",       "blobs", "sine",    "text"};
constexpr std::array<const char*, 5> model_kinds = {"mlp", "cnn", "resnet", "gpt", "layers"};
// DatasetSpec's default path (images), and the one a text dataset reads in its place: the fortune
// files of Debian's fortunes package (data/fortunes_corpus.h, kFortunesFolder).
constexpr const char* default_image_path = "/usr/share/datasets/fashion-mnist";
constexpr const char* default_text_path = "/usr/share/games/fortunes";
constexpr std::array<const char*, 3> backend_kinds = {"auto", "cpu", "cuda"};

template <class E>
const char* name_in(std::span<const Named<E>> table, E value) {
    for (const auto& n : table)
        if (n.value == value) return n.name;
    return table.front().name;
}

template <class E>
std::optional<E> parse_in(std::span<const Named<E>> table, std::string_view s) {
    for (const auto& n : table)
        if (s == n.name) return n.value;
    return std::nullopt;
}

template <class E>
std::vector<std::string> names_of(std::span<const Named<E>> table) {
    std::vector<std::string> out;
    for (const auto& n : table) out.emplace_back(n.name);
    return out;
}

template <std::size_t N>
std::vector<std::string> names_of(const std::array<const char*, N>& list) {
    return {list.begin(), list.end()};
}

// ---- wording

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
    return out;
}

// Edits (insert, delete, substitute, swap two neighbours) that turn a into b: "trian" -> "train" is 1.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

// "; did you mean 'x'?" when one candidate is close: the same but for letter case, a few edits away
// (a third of its letters, at most 3), or starting with the word ("fashion" -> "fashion-mnist").
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
    const auto lower = [](std::string_view s) {
        std::string out(s);
        for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    const std::string w = lower(word);
    const std::string* best = nullptr;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const auto& c : candidates) {
        const std::string lc = lower(c);
        std::size_t d = edit_distance(w, lc);
        if (w.size() >= 2 && lc.starts_with(w)) d = std::min<std::size_t>(d, 1);
        const std::size_t limit = std::clamp<std::size_t>(c.size() / 3, 1, 3);
        if (d <= limit && d < best_distance) best = &c, best_distance = d;
    }
    return best ? "; did you mean '" + *best + "'?" : std::string();
}

std::string number_text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// The value as a person would write it, shortened: 0.5, "fp8", [512,256].
std::string value_text(const json& v) {
    if (v.is_number_float()) return number_text(v.get<double>());
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return s;
}

// "a string (\"abc\")", "an array", "null": what a value is, for type errors.
std::string kind_of(const json& v) {
    switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean (" + value_text(v) + ")";
    case json::value_t::string: return "a string (" + value_text(v) + ")";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number (" + value_text(v) + ")";
    default: return "something else";
    }
}

[[noreturn]] void fail(const std::string& at, const std::string& what) {
    throw Error(at + ": " + what);
}

[[noreturn]] void wrong_type(const std::string& at, const char* expected, const json& v) {
    fail(at, std::string("expected ") + expected + ", got " + kind_of(v));
}

// ---- values

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::int64_t no_limit = std::numeric_limits<std::int64_t>::max();

struct Range {              // for reals: lo < v or lo <= v, and v < hi or v <= hi
    double lo, hi;
    bool lo_open, hi_open;
    bool fp32 = false;      // the engine holds it as a float: also at most FLT_MAX
};
constexpr Range open_unit{0, 1, true, true};        // (0, 1)
constexpr Range half_open_unit{0, 1, false, true};  // [0, 1)
constexpr Range positive_fp32{0, inf, true, false, true};
constexpr Range non_negative_fp32{0, inf, false, false, true};
constexpr Range above_one_fp32{1, inf, true, false, true};
constexpr Range lesson_pace{0, 10000, false, false};  // steps per second; 0: as fast as possible

std::string describe(const Range& r) {
    const std::string lo = number_text(r.lo), hi = number_text(r.hi);
    if (!r.lo_open && !r.hi_open && r.hi < inf) return "between " + lo + " and " + hi;
    std::string s = (r.lo_open ? "greater than " : "at least ") + lo;
    if (r.hi < inf) s += (r.hi_open ? " and less than " : " and at most ") + hi;
    return s;
}

double as_real(const json& v, const std::string& at, const Range& r) {
    if (!v.is_number()) wrong_type(at, "a number", v);
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(at, "must be a finite number, got " + number_text(x));
    if (r.fp32 && std::abs(x) > FLT_MAX)
        fail(at, "must be at most 3.4e38 (the largest FP32 value), got " + number_text(x));
    const bool low = r.lo_open ? !(x > r.lo) : !(x >= r.lo);
    const bool high = r.hi_open ? !(x < r.hi) : !(x <= r.hi);
    if (low || high) fail(at, "must be " + describe(r) + ", got " + number_text(x));
    return x;
}

std::int64_t as_integer(const json& v, const std::string& at, std::int64_t lo, std::int64_t hi) {
    if (!v.is_number()) wrong_type(at, "an integer", v);
    const auto out_of_range = [&](bool below) {
        fail(at, (below && hi == no_limit ? "must be at least " + std::to_string(lo)
                                          : "must be between " + std::to_string(lo) + " and " + std::to_string(hi)) +
                     ", got " + value_text(v));
    };
    std::int64_t x = 0;
    if (v.is_number_unsigned()) {
        if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(no_limit)) out_of_range(false);
        x = static_cast<std::int64_t>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
        x = v.get<std::int64_t>();
    } else {  // a float is accepted when it is a whole number (1e3 from --set)
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d)) wrong_type(at, "an integer", v);
        if (d < -9.2e18 || d > 9.2e18) out_of_range(d < 0);
        x = static_cast<std::int64_t>(d);
    }
    if (x < lo || x > hi) out_of_range(x < lo);
    return x;
}

std::uint64_t as_unsigned(const json& v, const std::string& at) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();  // the full 64-bit range
    if (v.is_number_float() && v.get<double>() >= 0x1p63) {     // whole numbers, every one of them
        if (v.get<double>() >= 0x1p64) fail(at, "must be between 0 and 18446744073709551615, got " + value_text(v));
        return static_cast<std::uint64_t>(v.get<double>());
    }
    return static_cast<std::uint64_t>(as_integer(v, at, 0, no_limit));
}

bool as_bool(const json& v, const std::string& at) {
    if (!v.is_boolean()) wrong_type(at, "true or false", v);
    return v.get<bool>();
}

std::string as_text(const json& v, const std::string& at) {
    if (!v.is_string()) wrong_type(at, "a string", v);
    try {
        (void)v.dump();  // strict UTF-8 check, so the experiment can always be printed again
    } catch (const json::exception&) {
        fail(at, "must be valid UTF-8 text");
    }
    return v.get<std::string>();
}

std::string as_one_of(const json& v, const std::string& at, const std::vector<std::string>& names) {
    const std::string expected = "one of " + joined(names);
    if (!v.is_string()) wrong_type(at, expected.c_str(), v);
    const std::string s = v.get<std::string>();
    if (std::find(names.begin(), names.end(), s) == names.end())
        fail(at, "must be " + expected + ", got " + value_text(v) + suggestion(s, names));
    return s;
}

template <class E>
E as_choice(const json& v, const std::string& at, std::span<const Named<E>> table) {
    return *parse_in(table, as_one_of(v, at, names_of(table)));
}

// ---- the reader over one object

class Reader {
public:
    Reader(const json& object, std::string path) : j_(object), path_(std::move(path)) {}

    std::string at(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

    // Marks `key` as one this object may hold; its value, or nullptr when absent.
    const json* find(const char* key) {
        known_.emplace_back(key);
        const auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }

    void text(const char* key, std::string& out) {
        if (const json* v = find(key)) out = as_text(*v, at(key));
    }
    void boolean(const char* key, bool& out) {
        if (const json* v = find(key)) out = as_bool(*v, at(key));
    }
    void real(const char* key, double& out, const Range& r) {
        if (const json* v = find(key)) out = as_real(*v, at(key), r);
    }
    template <class Int>
    void integer(const char* key, Int& out, std::int64_t lo, std::int64_t hi) {
        if (const json* v = find(key)) out = static_cast<Int>(as_integer(*v, at(key), lo, hi));
    }
    template <class E, std::size_t N>
    void choice(const char* key, E& out, const Named<E> (&table)[N]) {
        if (const json* v = find(key)) out = as_choice<E>(*v, at(key), table);
    }
    template <std::size_t N>
    void one_of(const char* key, std::string& out, const std::array<const char*, N>& names) {
        if (const json* v = find(key)) out = as_one_of(*v, at(key), names_of(names));
    }

    // A nested object; when absent, a reader over an empty object (every default kept).
    Reader group(const char* key) {
        static const json empty = json::object();
        const json* v = find(key);
        if (v && !v->is_object()) wrong_type(at(key), "an object", *v);
        return Reader(v ? *v : empty, at(key));
    }

    // Every key present must have been read: the first one that was not is unknown.
    void finish() const {
        for (const auto& item : j_.items()) {
            if (std::find(known_.begin(), known_.end(), item.key()) != known_.end()) continue;
            const std::string hint = suggestion(item.key(), known_);
            fail(at(item.key()), "unknown key" + (hint.empty() ? "; the keys here are " + joined(known_) : hint));
        }
    }

private:
    const json& j_;
    std::string path_;
    std::vector<std::string> known_;
};

// ---- the sections

// A name as a PyTorch state dict spells it: dot-separated parts, each a number or an identifier
// (fc1, conv1, layer1.0.conv1, blocks.0.attn.qkv). Whether the model has it is known when the
// model is built, with the shape of the data.
bool is_layer_name(std::string_view s) {
    if (s.empty() || s.size() > 128) return false;
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = std::min(s.find('.', start), s.size());
        const std::string_view part = s.substr(start, dot - start);
        if (part.empty()) return false;
        const auto digit = [](char c) { return c >= '0' && c <= '9'; };
        const auto word = [&](char c) { return digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
        const bool number = std::all_of(part.begin(), part.end(), digit);
        if (!number && (digit(part.front()) || !std::all_of(part.begin(), part.end(), word))) return false;
        if (dot == s.size()) return true;
        start = dot + 1;
    }
}

// dataset.shape: null (none) or [channels, height, width], each 1..65536, at most 2^31 - 1 values in
// all (a sample's features are an int).
std::optional<SampleShape> read_sample_shape(const json& v, const std::string& at) {
    if (v.is_null()) return std::nullopt;
    constexpr const char* expected = "an array [channels, height, width] of three positive integers";
    if (!v.is_array()) wrong_type(at, expected, v);
    if (v.size() != 3)
        fail(at, std::string("expected ") + expected + ", got an array of " + std::to_string(v.size()) +
                     (v.size() == 1 ? " value" : " values"));
    SampleShape shape;
    std::int64_t* dims[] = {&shape.channels, &shape.height, &shape.width};
    for (std::size_t i = 0; i < 3; ++i) *dims[i] = as_integer(v[i], at + "[" + std::to_string(i) + "]", 1, 65536);
    if (shape.numel() > std::numeric_limits<std::int32_t>::max())
        fail(at, "holds " + std::to_string(shape.numel()) + " values per sample (" + value_text(v) +
                     "), more than 2147483647");
    return shape;
}

void read_dataset(Reader r, DatasetSpec& d) {
    r.one_of("kind", d.kind, dataset_kinds);
    r.text("path", d.path);
    r.integer("samples", d.samples, 10, 10'000'000);
    r.integer("classes", d.classes, 2, 1000);
    r.real("noise", d.noise, {0, 100, false, false});
    r.real("test_fraction", d.test_fraction, open_unit);
    r.integer("label_column", d.label_column, -1, 1'000'000);
    r.boolean("normalize", d.normalize);
    if (const json* v = r.find("shape")) d.shape = read_sample_shape(*v, r.at("shape"));
    r.one_of("vocabulary", d.vocabulary, vocabularies);
    r.integer("context", d.context, 1, 4096);
    r.finish();
    // A text dataset left at the images' default path (a file that only names the kind, or a
    // --set dataset.kind=text) reads the fortunes corpus.
    if (d.kind == "text" && (d.path.empty() || d.path == default_image_path)) d.path = default_text_path;
    if (d.kind == "text" && d.test_fraction > 0.5)
        fail(r.at("test_fraction"), "must be at most 0.5 for kind 'text' (a test part longer than the training "
                                    "part), got " + number_text(d.test_fraction));
    if ((d.kind == "csv" || d.kind == "idx") && d.path.empty())
        fail(r.at("path"), "must name the " + std::string(d.kind == "csv" ? "CSV file" : "folder of IDX files") +
                               " for kind '" + d.kind + "'");
    if (d.shape && d.kind != "csv")
        fail(r.at("shape"), "only kind 'csv' takes a shape; kind '" + d.kind +
                                "' knows its own (docs/datasets.md), so remove dataset.shape or set it to null");
}

void read_model(Reader r, ModelSpec& m) {
    r.one_of("kind", m.kind, model_kinds);
    if (const json* v = r.find("hidden")) {
        const std::string at = r.at("hidden");
        if (!v->is_array()) wrong_type(at, "an array of layer widths", *v);
        if (v->size() > 16) fail(at, "at most 16 hidden layers, got " + std::to_string(v->size()));
        m.hidden.clear();
        for (std::size_t i = 0; i < v->size(); ++i)
            m.hidden.push_back(static_cast<int>(as_integer((*v)[i], at + "[" + std::to_string(i) + "]", 1, 65536)));
    }
    r.choice("activation", m.activation, activation_names);
    if (const json* v = r.find("channels")) {
        const std::string at = r.at("channels");
        if (!v->is_array() || v->empty()) wrong_type(at, "a non-empty array of channel counts", *v);
        if (v->size() > 8) fail(at, "at most 8 stages, got " + std::to_string(v->size()));
        m.channels.clear();
        for (std::size_t i = 0; i < v->size(); ++i)
            m.channels.push_back(static_cast<int>(as_integer((*v)[i], at + "[" + std::to_string(i) + "]", 1, 4096)));
    }
    r.integer("blocks", m.blocks, 1, 16);
    // model.layers: the list (kind "layers"), or for kind "gpt" the number of blocks.
    if (const json* v = r.find("layers")) {
        if (m.kind == "gpt" && v->is_number()) {
            m.depth = static_cast<int>(as_integer(*v, r.at("layers"), 1, 64));
        } else if (m.kind == "gpt" && v->is_array() && v->empty()) {
            // what another kind writes when there is no list: the number keeps its value
        } else {
            if (!v->is_array())
                wrong_type(r.at("layers"), m.kind == "gpt" ? "a number of blocks for kind 'gpt'" : "an array of layer descriptions", *v);
            if (m.kind == "gpt")
                fail(r.at("layers"), "kind 'gpt' takes the number of blocks (e.g. 4), not a list of layers");
            m.layers = v->dump();
        }
    }
    r.integer("heads", m.heads, 1, 256);
    r.integer("dim", m.dim, 1, 65536);
    r.integer("context", m.context, 1, 4096);
    r.integer("mlp_ratio", m.mlp_ratio, 1, 64);
    r.boolean("tie_embeddings", m.tie_embeddings);
    r.text("init_from", m.init_from);
    r.finish();
    if (m.kind == "gpt" && m.dim % m.heads != 0)
        fail(r.at("heads"), std::to_string(m.heads) + " heads do not divide model.dim " + std::to_string(m.dim) +
                                " into equal heads; pick a divisor of it");
    if (m.kind == "layers" && m.layers == "[]")
        fail(r.at("layers"), "must list the layers for kind 'layers' (e.g. [{\"type\": \"linear\", \"out\": 10}])");
}

// train.what_if.formats: the formats to ask about, each once; fp32 is what they are measured
// against, and fp8-e5m2 is the gradients' half of fp8-e4m3.
std::vector<ComputeFormat> read_what_if_formats(const json& v, const std::string& at) {
    constexpr const char* expected = "an array of format names (e.g. [\"bf16\", \"mxfp4\"])";
    if (!v.is_array()) wrong_type(at, expected, v);
    std::vector<ComputeFormat> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string where = at + "[" + std::to_string(i) + "]";
        if (!v[i].is_string()) wrong_type(where, "a format name", v[i]);
        const std::string name = v[i].get<std::string>();
        const std::optional<ComputeFormat> f = parse_compute_format(name);
        const bool offered = f && (f->block || f->format == Format::tf32 || f->format == Format::fp16 ||
                                   f->format == Format::bf16 || f->format == Format::fp8_e4m3);
        if (!offered)
            fail(where, "\"" + name + "\" is not a format the what-if statistics measure; they take tf32, fp16, bf16, "
                        "fp8-e4m3 and the block formats (" + std::string(block_format_names_list()) + ")");
        if (std::find(out.begin(), out.end(), *f) != out.end())
            fail(where, "\"" + name + "\" is listed twice");
        out.push_back(*f);
    }
    return out;
}

// train.block_scales.format: "own", "off", or the block format every other matmul operand is viewed in.
void read_block_scale_format(const json& v, const std::string& at, BlockScaleSpec& spec) {
    if (!v.is_string()) wrong_type(at, "\"own\", \"off\" or a block format name", v);
    const std::string name = v.get<std::string>();
    if (name == "own" || name == "off") {
        spec.enabled = name == "own";
        spec.format.reset();
        return;
    }
    const std::optional<BlockFormat> f = parse_block_format(name);
    if (!f)
        fail(at, "\"" + name + "\" is not \"own\", \"off\" or a block format (" +
                     std::string(block_format_names_list()) + ")");
    spec.enabled = true;
    spec.format = *f;
}

void read_train(Reader r, TrainSpec& t) {
    r.integer("batch_size", t.batch_size, 1, 65536);
    r.integer("epochs", t.epochs, 0, 1'000'000);
    r.integer("steps", t.steps, 0, 1'000'000'000'000);
    r.choice("optimizer", t.optimizer, optimizer_names);
    r.real("lr", t.lr, positive_fp32);
    r.real("momentum", t.momentum, half_open_unit);
    r.real("weight_decay", t.weight_decay, non_negative_fp32);
    r.real("beta1", t.beta1, half_open_unit);
    r.real("beta2", t.beta2, half_open_unit);
    r.real("eps", t.eps, positive_fp32);
    r.choice("schedule", t.schedule, schedule_names);
    r.integer("warmup_steps", t.warmup_steps, 0, no_limit);
    if (const json* v = r.find("seed")) t.seed = as_unsigned(*v, r.at("seed"));
    r.integer("eval_every", t.eval_every, 0, no_limit);
    r.integer("layer_stats_every", t.layer_stats_every, 1, no_limit);
    {
        Reader w = r.group("what_if");
        if (const json* v = w.find("formats")) t.what_if.formats = read_what_if_formats(*v, w.at("formats"));
        w.integer("max_elements", t.what_if.max_elements, 0, no_limit);
        w.finish();
    }
    {
        Reader b = r.group("block_scales");
        if (const json* v = b.find("format")) read_block_scale_format(*v, b.at("format"), t.block_scales);
        b.integer("max_blocks", t.block_scales.max_blocks, 0, no_limit);
        b.finish();
    }
    r.boolean("accumulation_error", t.accumulation_error);
    r.integer("checkpoint_every", t.checkpoint_every, 0, no_limit);
    r.integer("keep_checkpoints", t.keep_checkpoints, 0, 1'000'000);
    r.finish();
    if (t.steps == 0 && t.epochs < 1)
        fail(r.at("epochs"), "must be at least 1 when train.steps is 0, got " + std::to_string(t.epochs));
}

void read_loss_scaling(Reader r, LossScalingSpec& s) {
    r.choice("mode", s.mode, loss_scaling_names);
    r.real("init_scale", s.init_scale, positive_fp32);
    r.real("growth_factor", s.growth_factor, above_one_fp32);
    r.real("backoff_factor", s.backoff_factor, open_unit);
    r.integer("growth_interval", s.growth_interval, 1, no_limit);
    for (auto [key, out] : {std::pair{"min_scale", &s.min_scale}, std::pair{"max_scale", &s.max_scale}}) {
        const json* v = r.find(key);
        if (v && v->is_null()) *out = std::nullopt;  // null: the extension is off
        else if (v) *out = as_real(*v, r.at(key), positive_fp32);
    }
    r.finish();
    if (s.min_scale && s.max_scale && *s.min_scale > *s.max_scale)
        fail(r.at("min_scale"), "must not exceed max_scale (" + number_text(*s.max_scale) + "), got " +
                                    number_text(*s.min_scale));
}

void read_fp8(Reader r, Fp8Spec& f) {
    r.integer("amax_history_len", f.amax_history_len, 1, 1024);
    r.integer("margin", f.margin, 0, 16);
    r.choice("amax_compute_algo", f.amax_compute_algo, amax_algo_names);
    r.choice("scaling", f.scaling, fp8_scaling_names);
    r.boolean("power_of_two_scales", f.power_of_two_scales);
    r.finish();
}

void read_precision(Reader r, PrecisionSpec& p) {
    r.choice("autocast", p.autocast, autocast_names);
    r.boolean("master_weights", p.master_weights);
    if (const json* v = r.find("layers")) {
        const std::string at = r.at("layers");
        if (!v->is_object()) wrong_type(at, "an object such as {\"fc1\": \"fp32\"}", *v);
        p.layers.clear();
        for (const auto& item : v->items()) {
            const std::string key = at + "." + item.key();
            if (!is_layer_name(item.key()))
                fail(key, "not a layer name; layers are named as in a PyTorch state dict (fc1, conv1, "
                          "layer1.0.conv1)");
            if (item.value().is_object()) {  // one precision per matmul; a missing one is auto
                Reader gemms(item.value(), key);
                LayerSetting s;
                gemms.choice("forward", s.forward, layer_precision_names);
                gemms.choice("dgrad", s.dgrad, layer_precision_names);
                gemms.choice("wgrad", s.wgrad, layer_precision_names);
                gemms.choice("accumulate", s.accumulate, accumulation_names);
                gemms.finish();
                p.layers[item.key()] = s;
            } else {
                p.layers[item.key()] = as_choice<LayerPrecision>(item.value(), key, layer_precision_names);
            }
        }
    }
    {
        Reader ops = r.group("ops");
        ops.choice("softmax", p.ops.softmax, op_precision_names);
        ops.choice("layernorm", p.ops.layernorm, op_precision_names);
        ops.finish();
    }
    read_loss_scaling(r.group("loss_scaling"), p.loss_scaling);
    read_fp8(r.group("fp8"), p.fp8);
    {
        Reader rounding = r.group("rounding");
        rounding.choice("gradients", p.rounding.gradients, gradient_rounding_names);
        rounding.choice("weights", p.rounding.weights, weight_rounding_names);
        rounding.finish();
    }
    r.finish();
}

void read_backend(Reader& root, Experiment& e) {
    const json* v = root.find("backend");
    if (!v) return;
    if (v->is_string()) {
        e.backend = as_one_of(*v, "backend", names_of(backend_kinds));
        e.device = 0;
        e.threads = 0;
        return;
    }
    if (!v->is_object()) wrong_type("backend", "a string (auto, cpu, cuda) or an object", *v);
    Reader r(*v, "backend");
    r.one_of("kind", e.backend, backend_kinds);
    r.integer("device", e.device, 0, 255);
    r.integer("threads", e.threads, 0, 1024);  // absent in files written before it: 0, auto
    r.finish();
}

// lesson.reference: null (none) or {"name": "FP32", "set": ["precision.autocast=off", ...]}. Whether
// each setting can be made is checked once the whole experiment is read (experiment_from_json).
void read_reference(Reader& lesson, std::optional<LessonReference>& out) {
    const json* v = lesson.find("reference");
    if (!v) return;
    if (v->is_null()) {
        out.reset();
        return;
    }
    const std::string at = lesson.at("reference");
    if (!v->is_object())
        wrong_type(at, "an object such as {\"name\": \"FP32\", \"set\": [\"precision.autocast=off\"]}, or null", *v);
    Reader r(*v, at);
    LessonReference ref;
    r.text("name", ref.name);
    if (ref.name.empty()) fail(r.at("name"), "must name the reference, e.g. \"FP32\"");
    const json* set = r.find("set");
    if (!set || !set->is_array() || set->empty())
        fail(r.at("set"), "must list the settings that make the reference from this experiment, e.g. "
                          "[\"precision.autocast=off\"]");
    for (std::size_t i = 0; i < set->size(); ++i) {
        const std::string item = r.at("set") + "[" + std::to_string(i) + "]";
        const std::string assignment = as_text((*set)[i], item);
        if (assignment.starts_with("lesson") || assignment.starts_with("name="))
            fail(item, "sets the lesson or the name, which a reference has of its own; give a setting of the "
                       "training, e.g. precision.autocast=off");
        ref.set.push_back(assignment);
    }
    r.finish();
    out = std::move(ref);
}

void read_lesson(Reader r, LessonSpec& l) {
    r.text("title", l.title);
    r.text("text", l.text);
    r.text("watch", l.watch);
    r.boolean("classroom", l.classroom);
    r.real("pace", l.pace, lesson_pace);
    read_reference(r, l.reference);
    r.finish();
}

// "FP32" -> "fp32", "BF16 autocast" -> "bf16-autocast": a reference's name as part of a run's name.
std::string slug(const std::string& name) {
    std::string out;
    for (unsigned char c : name) {
        if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? "run" : out;
}

std::string system_error_text() { return std::strerror(errno); }

}  // namespace

// ---- names

const char* autocast_name(Autocast a) { return name_in<Autocast>(autocast_names, a); }
const char* layer_precision_name(LayerPrecision p) { return name_in<LayerPrecision>(layer_precision_names, p); }
const char* loss_scaling_mode_name(LossScalingMode m) { return name_in<LossScalingMode>(loss_scaling_names, m); }
const char* activation_name(Activation a) { return name_in<Activation>(activation_names, a); }
const char* optimizer_name(OptimizerKind o) { return name_in<OptimizerKind>(optimizer_names, o); }
const char* lr_schedule_name(LrSchedule s) { return name_in<LrSchedule>(schedule_names, s); }
const char* amax_algo_name(AmaxAlgo a) { return name_in<AmaxAlgo>(amax_algo_names, a); }
const char* fp8_scaling_name(Fp8Scaling s) { return name_in<Fp8Scaling>(fp8_scaling_names, s); }
const char* op_precision_name(OpPrecision p) { return name_in<OpPrecision>(op_precision_names, p); }
std::optional<OpPrecision> parse_op_precision(const std::string& s) { return parse_in<OpPrecision>(op_precision_names, s); }

const char* accumulation_name(Accumulation a) { return name_in<Accumulation>(accumulation_names, a); }
const char* gradient_rounding_name(GradientRounding r) { return name_in<GradientRounding>(gradient_rounding_names, r); }
const char* weight_rounding_name(WeightRounding r) { return name_in<WeightRounding>(weight_rounding_names, r); }

std::string layer_setting_text(const LayerSetting& s) {
    if (s.uniform()) return layer_precision_name(s.forward);
    std::string text = s.forward == s.dgrad && s.dgrad == s.wgrad
                           ? std::string(layer_precision_name(s.forward))
                           : std::string("forward ") + layer_precision_name(s.forward) + ", dgrad " +
                                 layer_precision_name(s.dgrad) + ", wgrad " + layer_precision_name(s.wgrad);
    if (s.accumulate != Accumulation::fp32) text += std::string(", accumulate ") + accumulation_name(s.accumulate);
    return text;
}

std::optional<LayerPrecision> parse_layer_precision(const std::string& s) {
    return parse_in<LayerPrecision>(layer_precision_names, s);
}
std::optional<Autocast> parse_autocast(const std::string& s) { return parse_in<Autocast>(autocast_names, s); }
std::optional<LossScalingMode> parse_loss_scaling_mode(const std::string& s) {
    return parse_in<LossScalingMode>(loss_scaling_names, s);
}
std::optional<Activation> parse_activation(const std::string& s) {
    return parse_in<Activation>(activation_names, s);
}
std::optional<OptimizerKind> parse_optimizer(const std::string& s) {
    return parse_in<OptimizerKind>(optimizer_names, s);
}

// ---- JSON

Experiment experiment_from_json(const json& j) {
    if (!j.is_object()) wrong_type("experiment", "a JSON object ({...}) at the top level", j);
    Experiment e;
    Reader r(j, "");
    r.text("name", e.name);
    if (e.name.empty()) fail("name", "must not be empty");
    // The run is recorded under this name: spaces alone would be an empty cell in every list.
    if (e.name.find_first_not_of(" \t\n\r\v\f") == std::string::npos)
        fail("name", "must have a character other than white space");
    read_dataset(r.group("dataset"), e.dataset);
    read_model(r.group("model"), e.model);
    read_train(r.group("train"), e.train);
    read_precision(r.group("precision"), e.precision);
    read_backend(r, e);
    read_lesson(r.group("lesson"), e.lesson);
    r.finish();
    if (e.lesson.reference) lesson_reference_experiment(e);  // each setting can be made
    return e;
}

Experiment lesson_reference_experiment(const Experiment& lesson) {
    if (!lesson.lesson.reference) throw Error("The experiment \"" + lesson.name + "\" names no reference run.");
    const LessonReference& ref = *lesson.lesson.reference;
    Experiment e = lesson;
    e.lesson = LessonSpec{};
    e.name = lesson.name + "-reference-" + slug(ref.name);
    for (std::size_t i = 0; i < ref.set.size(); ++i) {
        try {
            apply_setting(e, ref.set[i]);
        } catch (const Error& err) {
            std::string why = err.what();
            const std::string prefix = "--set " + ref.set[i] + ": ";
            if (why.starts_with(prefix)) why = why.substr(prefix.size());
            throw Error("lesson.reference.set[" + std::to_string(i) + "]: \"" + ref.set[i] + "\" cannot be made: " + why);
        }
    }
    return e;
}

// model.layers as the reader stored it (compact JSON); text set in code that is not a JSON array
// is written as it is, a string, which reading back refuses with its key named.
json layers_json(const std::string& text) {
    json list = json::parse(text, nullptr, false);
    return list.is_array() ? list : json(text);
}

std::string block_scale_format_name(const BlockScaleSpec& spec) {
    if (!spec.enabled) return "off";
    return spec.format ? std::string(block_format_name(*spec.format)) : "own";
}

json what_if_names(const std::vector<ComputeFormat>& formats) {
    json names = json::array();
    for (const ComputeFormat& f : formats) names.push_back(std::string(f.name()));
    return names;
}

// A layer's setting as the object of its matmuls (and its accumulation when not FP32).
json layer_setting_json(const LayerSetting& s) {
    json j = {{"forward", layer_precision_name(s.forward)},
              {"dgrad", layer_precision_name(s.dgrad)},
              {"wgrad", layer_precision_name(s.wgrad)}};
    if (s.accumulate != Accumulation::fp32) j["accumulate"] = accumulation_name(s.accumulate);  // the default unsaid
    return j;
}

json experiment_to_json(const Experiment& e) {
    const auto& d = e.dataset;
    const auto& t = e.train;
    const auto& p = e.precision;
    const auto& s = p.loss_scaling;
    json layers = json::object();
    for (const auto& [name, s] : p.layers)
        layers[name] = s.uniform() ? json(layer_precision_name(s.forward)) : layer_setting_json(s);
    const auto optional_scale = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    return {
        {"name", e.name},
        {"dataset", {{"kind", d.kind}, {"path", d.path}, {"samples", d.samples}, {"classes", d.classes},
                     {"noise", d.noise}, {"test_fraction", d.test_fraction},
                     {"label_column", d.label_column}, {"normalize", d.normalize},
                     {"shape", d.shape ? json::array({d.shape->channels, d.shape->height, d.shape->width})
                                       : json(nullptr)},
                     {"vocabulary", d.vocabulary}, {"context", d.context}}},
        {"model", {{"kind", e.model.kind}, {"hidden", e.model.hidden},
                   {"activation", activation_name(e.model.activation)}, {"channels", e.model.channels},
                   {"blocks", e.model.blocks},
                   {"layers", e.model.kind == "gpt" ? json(e.model.depth) : layers_json(e.model.layers)},
                   {"heads", e.model.heads}, {"dim", e.model.dim}, {"context", e.model.context},
                   {"mlp_ratio", e.model.mlp_ratio}, {"tie_embeddings", e.model.tie_embeddings},
                   {"init_from", e.model.init_from}}},
        {"train", {{"batch_size", t.batch_size}, {"epochs", t.epochs}, {"steps", t.steps},
                   {"optimizer", optimizer_name(t.optimizer)}, {"lr", t.lr}, {"momentum", t.momentum},
                   {"weight_decay", t.weight_decay}, {"beta1", t.beta1}, {"beta2", t.beta2},
                   {"eps", t.eps}, {"schedule", lr_schedule_name(t.schedule)},
                   {"warmup_steps", t.warmup_steps}, {"seed", t.seed}, {"eval_every", t.eval_every},
                   {"layer_stats_every", t.layer_stats_every},
                   {"what_if", {{"formats", what_if_names(t.what_if.formats)},
                                {"max_elements", t.what_if.max_elements}}},
                   {"block_scales", {{"format", block_scale_format_name(t.block_scales)},
                                     {"max_blocks", t.block_scales.max_blocks}}},
                   {"accumulation_error", t.accumulation_error},
                   {"checkpoint_every", t.checkpoint_every},
                   {"keep_checkpoints", t.keep_checkpoints}}},
        {"precision",
         {{"autocast", autocast_name(p.autocast)},
          {"master_weights", p.master_weights},
          {"layers", layers},
          {"ops", {{"softmax", op_precision_name(p.ops.softmax)}, {"layernorm", op_precision_name(p.ops.layernorm)}}},
          {"loss_scaling", {{"mode", loss_scaling_mode_name(s.mode)}, {"init_scale", s.init_scale},
                            {"growth_factor", s.growth_factor}, {"backoff_factor", s.backoff_factor},
                            {"growth_interval", s.growth_interval},
                            {"min_scale", optional_scale(s.min_scale)},
                            {"max_scale", optional_scale(s.max_scale)}}},
          {"fp8", {{"amax_history_len", p.fp8.amax_history_len}, {"margin", p.fp8.margin},
                   {"amax_compute_algo", amax_algo_name(p.fp8.amax_compute_algo)},
                   {"scaling", fp8_scaling_name(p.fp8.scaling)},
                   {"power_of_two_scales", p.fp8.power_of_two_scales}}},
          {"rounding", {{"gradients", gradient_rounding_name(p.rounding.gradients)},
                        {"weights", weight_rounding_name(p.rounding.weights)}}}}},
        {"backend", {{"kind", e.backend}, {"device", e.device}, {"threads", e.threads}}},
        {"lesson", {{"title", e.lesson.title}, {"text", e.lesson.text}, {"watch", e.lesson.watch},
                    {"classroom", e.lesson.classroom}, {"pace", e.lesson.pace},
                    {"reference", e.lesson.reference ? json{{"name", e.lesson.reference->name},
                                                            {"set", e.lesson.reference->set}}
                                                     : json(nullptr)}}},
    };
}

// ---- files

Experiment load_experiment(const std::string& path) {
    if (path.empty()) throw Error("No experiment file was given: its name is empty.");
    const std::string file = "Experiment file " + path;
    const std::string text = read_user_file(path, file, kExperimentFileLimit);

    json j;
    JsonProblem problem;
    try {
        problem = parse_json(text, j);
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read " + file + " (" + std::to_string(text.size()) + " bytes of JSON).");
    }
    if (problem.found) {
        if (problem.syntax) {
            if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); }))
                throw Error(file + " is not valid JSON: it is empty; an experiment file holds a JSON object ({...}).");
            throw Error(file + " is not valid JSON: " + problem.sentence + ".");
        }
        throw Error(file + (problem.sentence.starts_with("key ") ? ": " : ", ") + problem.sentence + ".");
    }
    if (!j.is_object())
        // A string quoted here may hold DEL or a character cut by the shortening: escaped, as below.
        throw Error(file + " must hold a JSON object ({...}) at the top level, not " + printable_text(kind_of(j)) + ".");
    try {
        return experiment_from_json(j);
    } catch (const Error& err) {
        // A key or value quoted from the file may hold control characters (written as escapes in
        // the JSON): escaped again here, so the sentence stays one line of text.
        throw Error(file + ": " + printable_text(err.what()));
    }
}

void save_experiment(const Experiment& e, const std::string& path) {
    const std::string text = experiment_to_json(e).dump(2) + "\n";
    const std::string partial = path + ".partial";  // written whole, then renamed over the target
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        if (out) out << text;
        if (!out || !out.flush()) {
            const std::string why = system_error_text();
            std::error_code ignored;
            std::filesystem::remove(partial, ignored);
            throw Error("Cannot write experiment file " + path + ": " + why + ".");
        }
    }
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);
    if (ec) {
        std::filesystem::remove(partial, ec);
        throw Error("Cannot write experiment file " + path + ": " + ec.message() + ".");
    }
}

// ---- --set KEY=VALUE

void apply_setting(Experiment& e, const std::string& assignment) {
    const std::string usage = "--set " + assignment + ": expected KEY=VALUE with a dotted key from the "
                              "experiment file, e.g. train.lr=0.01 or precision.autocast=bf16";
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(usage);
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
        const auto dot = assignment.find('.', start);
        const auto end = std::min(dot, eq);
        parts.push_back(assignment.substr(start, end - start));
        if (parts.back().empty()) throw Error(usage);
        if (end == eq) break;
        start = end + 1;
    }
    json value;
    const std::string text = assignment.substr(eq + 1);
    if (const JsonProblem problem = parse_json(text, value); problem.found) {
        std::string why = problem.sentence;  // without its "line 1, column 5: ", one line as it is
        if (const auto colon = why.find(": "); colon != std::string::npos && why.starts_with("line ")) why = why.substr(colon + 2);
        // A number too large, a key twice: JSON, but not acceptable.
        if (!problem.syntax) throw Error("--set " + assignment + ": " + why + ".");
        // A list or an object begun and not closed is a mistake in it, not a word to take whole.
        const auto first = text.find_first_not_of(" \t");
        if (first != std::string::npos && (text[first] == '[' || text[first] == '{'))
            throw Error("--set " + assignment + ": the value is not valid JSON (" + why +
                        "); a text that begins with [ or { is given in quotes, KEY=\"...\".");
        value = text;  // a bare word: bf16, fp32, off
    }
    if (parts == std::vector<std::string>{"backend"} && value.is_string()) parts.push_back("kind");
    // precision.layers.NAME: the rest of the key is one layer's name, dots and all
    // (precision.layers.layer1.0.conv1=fp16); precision.layers.NAME.forward (dgrad, wgrad) is one
    // of its matmuls, the two others kept as they are.
    std::string gemm_layer;
    if (parts.size() > 3 && parts[0] == "precision" && parts[1] == "layers") {
        const std::string& last = parts.back();
        const bool gemm =
            parts.size() > 3 && (last == "forward" || last == "dgrad" || last == "wgrad" || last == "accumulate");
        const std::size_t end = gemm ? parts.size() - 1 : parts.size();
        std::string name = parts[2];
        for (std::size_t i = 3; i < end; ++i) name += "." + parts[i];
        if (gemm) gemm_layer = name;
        std::vector<std::string> key{"precision", "layers", name};
        if (gemm) key.push_back(last);
        parts = std::move(key);
    }

    json j = experiment_to_json(e);
    if (!gemm_layer.empty()) {  // the layer as an object of its three matmuls, to set one of them
        const auto it = e.precision.layers.find(gemm_layer);
        const LayerSetting s = it == e.precision.layers.end() ? LayerSetting{} : it->second;
        j["precision"]["layers"][gemm_layer] = layer_setting_json(s);
    }
    json* node = &j;
    std::string at;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        at += (at.empty() ? "" : ".") + parts[i];
        json& child = (*node)[parts[i]];  // a new name becomes an object that from_json calls unknown
        if (child.is_null()) child = json::object();
        if (child.is_array())  // model.hidden.0: a list is set whole
            fail(at + "." + parts[i + 1], "unknown key; " + at + " is a list, set whole (" + at + "=" +
                                              child.dump() + ")");
        if (!child.is_object())
            fail(at + "." + parts[i + 1], "unknown key; " + at + " is a single value, not a group of keys");
        node = &child;
    }
    (*node)[parts.back()] = std::move(value);
    // model.layers is a number for kind gpt and a list for the others: a change of kind carries
    // the one the new kind reads (its value kept from before).
    if (parts == std::vector<std::string>{"model", "kind"} && j["model"]["kind"].is_string()) {
        const bool gpt = j["model"]["kind"] == "gpt";
        j["model"]["layers"] = gpt ? json(e.model.depth) : layers_json(e.model.layers);
    }
    e = experiment_from_json(j);
}

void apply_settings(Experiment& e, const std::vector<std::string>& assignments) {
    // Two assignments touch the same setting when their keys are equal or one holds the other
    // (backend and backend.kind, dataset and dataset.shape, a layer and one of its matmuls).
    auto key_of = [](const std::string& a) {
        std::string key = a.substr(0, a.find('='));
        return key == "backend" ? std::string("backend.kind") : key;
    };
    auto overlap = [&](const std::string& a, const std::string& b) {
        const std::string x = key_of(a), y = key_of(b);
        const std::string& shorter = x.size() <= y.size() ? x : y;
        const std::string& longer = x.size() <= y.size() ? y : x;
        return longer.compare(0, shorter.size(), shorter) == 0 &&
               (longer.size() == shorter.size() || longer[shorter.size()] == '.');
    };
    std::vector<std::string> pending;  // refused so far, in order
    for (std::size_t i = 0; i < assignments.size(); ++i) {
        try {
            apply_setting(e, assignments[i]);
        } catch (const Error&) {
            const auto later = assignments.begin() + static_cast<std::ptrdiff_t>(i) + 1;
            if (std::any_of(later, assignments.end(), [&](const std::string& a) { return overlap(a, assignments[i]); }))
                throw;  // deferring it would let it override the later value
            pending.push_back(assignments[i]);
        }
    }
    for (bool progress = true; progress && !pending.empty();) {
        progress = false;
        for (auto it = pending.begin(); it != pending.end();) {
            try {
                apply_setting(e, *it);
                it = pending.erase(it);
                progress = true;
            } catch (const Error&) {
                ++it;
            }
        }
    }
    if (!pending.empty()) apply_setting(e, pending.front());  // throws its sentence, as things now stand
}

}  // namespace mantissa
