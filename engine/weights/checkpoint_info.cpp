// A checkpoint's metadata as JSON (checkpoint_info.h). Reading checks each key's type and then
// each value against what a run can write: counts of steps no larger than "step", a loss scale
// that is a finite FP32 number above 0 (0 only once the scale has collapsed), an accuracy from 0 to
// 1. A file that passes resumes as the run it was taken from would have gone on; one that does not
// is refused naming the file and the key, before anything is restored. The checksums are checked
// against the file's tensors by name here, and against their bytes by verify_checkpoint_tensors.
#include "weights/checkpoint_info.h"

#include <cstdio>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/json_number.h"
#include "config/json_text.h"
#include "error.h"
#include "printable_text.h"

namespace mantissa {

namespace {

using json = nlohmann::json;

json info_json(const CheckpointInfo& c) {
    const TrainerState& t = c.trainer;
    const CheckpointSummary& s = c.summary;
    return {{"version", c.version},
            {"run_uuid", c.run_uuid},
            {"step", t.step},
            {"time_s", t.time_s},
            {"loss_scale", t.loss_scale},
            {"growth_tracker", t.growth_tracker},
            {"optimizer_steps", t.optimizer_steps},
            {"stochastic_rounding", t.stochastic_rounding},
            {"bf16_matmul", t.bf16_matmul},
            {"diverged", t.diverged},
            {"scale_collapsed", t.scale_collapsed},
            {"summary",
             {{"samples", s.samples},
              {"overflow_steps", s.overflow_steps},
              {"skipped_steps", s.skipped_steps},
              {"final_loss", json_number(s.final_loss)},
              {"test_loss", json_number(s.test_loss)},
              {"test_accuracy", json_number(s.test_accuracy)},
              {"last_eval_step", s.last_eval_step}}},
            {"experiment", experiment_to_json(c.experiment)}};
}

// A number as a sentence quotes it: 65536, -1, 1e+39, inf, nan.
std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// Reads the metadata's keys, each checked, naming the file and the key in the sentence it throws
// ("summary.samples" for a key of the group "summary").
class MetadataReader {
public:
    MetadataReader(const json& j, std::string where, std::string prefix = {})
        : m_j(j), m_where(std::move(where)), m_prefix(std::move(prefix)) {}
    const json& at(const char* key) const {
        if (!m_j.is_object() || !m_j.contains(key)) fail("has no " + name(key));
        return m_j.at(key);
    }
    std::int64_t integer(const char* key, std::int64_t lo) const {
        const json& v = at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < lo)
            fail(name(key) + " must be a whole number of at least " + std::to_string(lo));
        return v.get<std::int64_t>();
    }
    std::uint64_t unsigned_integer(const char* key) const {
        const json& v = at(key);
        if (!v.is_number_unsigned()) fail(name(key) + " must be a whole number of at least 0");
        return v.get<std::uint64_t>();
    }
    double real(const char* key) const {
        if (const auto v = number_from_json(at(key))) return *v;
        fail(name(key) + " must be a number");
    }
    bool boolean(const char* key) const {
        const json& v = at(key);
        if (!v.is_boolean()) fail(name(key) + " must be true or false");
        return v.get<bool>();
    }
    MetadataReader group(const char* key) const {
        const json& v = at(key);
        if (!v.is_object()) fail(name(key) + " must be an object");
        return {v, m_where, m_prefix + key + "."};
    }
    // The key as the sentence names it, quoted, with its group: "summary.samples".
    std::string name(const char* key) const { return "\"" + m_prefix + key + "\""; }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(m_where + ": the checkpoint's metadata " + what + "; the file is damaged, or not a Mantissa checkpoint.");
    }

private:
    const json& m_j;
    std::string m_where;
    std::string m_prefix;
};

// The metadata's JSON object. Throws naming the file when there is none or it is not one.
json metadata_json(const SafetensorsFile& file, const std::string& where) {
    const auto it = file.metadata().find(checkpoint_metadata_key);
    if (it == file.metadata().end())
        throw Error(where + " holds no Mantissa checkpoint (its metadata has no \"" + checkpoint_metadata_key +
                    "\"): it is a weights file, which model.init_from reads.");
    // Read as an experiment file is (config/json_text.h): a key twice and nesting too deep for the
    // recursive reads that follow are refused, not only bad syntax.
    json j;
    if (const JsonProblem problem = parse_json(it->second, j); problem.found)
        throw Error(where + ": the checkpoint's metadata is not a JSON object (" + problem.sentence +
                    "); the file is damaged.");
    if (!j.is_object()) throw Error(where + ": the checkpoint's metadata is not a JSON object; the file is damaged.");
    return j;
}

// "checksums": absent in a checkpoint written before they were kept; else exactly one CRC-32 for
// each tensor of the file.
std::optional<TensorChecksums> parse_checksums(const json& j, const SafetensorsFile& file, const MetadataReader& r) {
    if (!j.contains("checksums")) return std::nullopt;
    const json& v = r.at("checksums");
    if (!v.is_object()) r.fail("\"checksums\" must be an object of each tensor's CRC-32");
    TensorChecksums checksums;
    for (const SafetensorsEntry& e : file.entries()) {
        const auto it = v.find(e.name);
        if (it == v.end()) r.fail("\"checksums\" has none for tensor " + printable_text(e.name));
        if (!it->is_number_unsigned() || it->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max())
            r.fail("\"checksums\" of tensor " + printable_text(e.name) +
                   " must be a CRC-32, a whole number from 0 to 4294967295");
        checksums.emplace(e.name, static_cast<std::uint32_t>(it->get<std::uint64_t>()));
    }
    for (const auto& [name, value] : v.items())
        if (!checksums.contains(name))
            r.fail("\"checksums\" names " + printable_text(name) + ", which is not a tensor of the file");
    return checksums;
}

CheckpointInfo parse_info(const SafetensorsFile& file) {
    const std::string where = printable_text(file.path());
    const json j = metadata_json(file, where);
    const MetadataReader r(j, where);
    CheckpointInfo c;
    c.version = static_cast<int>(r.integer("version", 1));
    if (c.version > checkpoint_version)
        throw Error(where + " is a checkpoint of version " + std::to_string(c.version) + ", newer than the " +
                    std::to_string(checkpoint_version) + " this Mantissa reads; open it with a newer Mantissa.");
    const json& uuid = r.at("run_uuid");
    if (!uuid.is_string()) r.fail("\"run_uuid\" must be a string");
    c.run_uuid = uuid.get<std::string>();
    TrainerState& t = c.trainer;
    t.step = r.integer("step", 0);
    t.time_s = r.real("time_s");
    const double loss_scale = r.real("loss_scale");  // checked below, once scale_collapsed is read
    t.growth_tracker = r.integer("growth_tracker", 0);
    t.optimizer_steps = r.integer("optimizer_steps", 0);
    t.stochastic_rounding = r.unsigned_integer("stochastic_rounding");
    if (j.contains("bf16_matmul")) {  // absent in checkpoints written before it was kept
        const json& path = j.at("bf16_matmul");
        if (!path.is_string() || (path != "" && path != "bf16" && path != "fp32"))
            r.fail("\"bf16_matmul\" must be \"bf16\", \"fp32\" or \"\"");
        t.bf16_matmul = path.get<std::string>();
    }
    t.diverged = r.boolean("diverged");
    t.scale_collapsed = r.boolean("scale_collapsed");
    if (!(t.time_s >= 0) || !std::isfinite(t.time_s)) r.fail("\"time_s\" must be a finite number of at least 0");
    // A loss scale is a positive FP32 number; a dynamic scale that backed off past FP32's smallest
    // subnormal is 0, and then the Trainer has said it collapsed (a branch with other loss scaling
    // may still start from there). Anything else would skip or scale every step wrongly.
    if (!(loss_scale >= 0 && loss_scale <= std::numeric_limits<float>::max()))
        r.fail("\"loss_scale\" must be a finite FP32 number above 0, not " + number_text(loss_scale));
    t.loss_scale = static_cast<float>(loss_scale);  // 0 below FP32's smallest subnormal
    if (t.loss_scale == 0 && !t.scale_collapsed)
        r.fail("\"loss_scale\" is " + number_text(loss_scale) + " while \"scale_collapsed\" is false (a scale reaches 0 "
               "only by collapsing)");
    if (t.optimizer_steps > t.step) r.fail("counts more optimizer steps than steps");
    if (t.growth_tracker > t.step) r.fail("\"growth_tracker\" counts more steps than \"step\" (" + std::to_string(t.step) + ")");
    const MetadataReader s = r.group("summary");
    CheckpointSummary& sum = c.summary;
    sum.samples = s.integer("samples", 0);
    sum.overflow_steps = s.integer("overflow_steps", 0);
    sum.skipped_steps = s.integer("skipped_steps", 0);
    sum.final_loss = s.real("final_loss");
    sum.test_loss = s.real("test_loss");
    sum.test_accuracy = s.real("test_accuracy");
    sum.last_eval_step = s.integer("last_eval_step", -1);
    // The counts are of steps taken, the evaluation's step one of them; an accuracy is a fraction.
    for (const auto& [key, count] : {std::pair{"overflow_steps", sum.overflow_steps},
                                     std::pair{"skipped_steps", sum.skipped_steps},
                                     std::pair{"last_eval_step", sum.last_eval_step}})
        if (count > t.step) s.fail(s.name(key) + " is " + std::to_string(count) + ", beyond \"step\" (" + std::to_string(t.step) + ")");
    if (!std::isnan(sum.test_accuracy) && !(sum.test_accuracy >= 0 && sum.test_accuracy <= 1))
        s.fail(s.name("test_accuracy") + " must be a fraction from 0 to 1 (or \"nan\" before an evaluation), not " +
               number_text(sum.test_accuracy));
    // Outside the try below, so that its sentence names the file once.
    const json& experiment = r.at("experiment");
    try {
        c.experiment = experiment_from_json(experiment);
    } catch (const Error& e) {
        throw Error(where + ": the checkpoint's experiment is not one this Mantissa reads: " + e.what());
    }
    c.checksums = parse_checksums(j, file, r);
    return c;
}

}  // namespace

std::string checkpoint_info_text(const CheckpointInfo& info) {
    json j = info_json(info);
    if (info.checksums) j["checksums"] = *info.checksums;  // {"fc1.weight": 2896259690, ...}
    return j.dump();
}

CheckpointInfo read_checkpoint_info(const SafetensorsFile& file) { return parse_info(file); }

std::optional<TensorChecksums> read_checkpoint_checksums(const SafetensorsFile& file) {
    const std::string where = printable_text(file.path());
    const json j = metadata_json(file, where);
    return parse_checksums(j, file, MetadataReader(j, where));
}

void verify_checkpoint_tensors(const SafetensorsFile& file, const std::optional<TensorChecksums>& checksums) {
    if (!checksums) return;
    std::vector<const SafetensorsEntry*> damaged;
    for (const SafetensorsEntry& e : file.entries()) {
        const auto it = checksums->find(e.name);
        if (it == checksums->end() || it->second != file.crc32_of(e)) damaged.push_back(&e);
    }
    if (damaged.empty()) return;
    const std::size_t others = damaged.size() - 1;
    throw DamagedCheckpointError(printable_text(file.path()) + ": tensor " + printable_text(damaged.front()->name) +
                                 "'s bytes do not match the checksum written with them" +
                                 (others == 0 ? std::string()
                                              : " (nor do those of " + std::to_string(others) + " other tensor" +
                                                    (others == 1 ? "" : "s") + ")") +
                                 "; the checkpoint is damaged.");
}

std::string DamagedCheckpointError::with_advice(const std::string& advice) const {
    std::string sentence = what();
    if (sentence.ends_with('.')) sentence.pop_back();
    return sentence + ", so " + advice + ".";
}

}  // namespace mantissa
