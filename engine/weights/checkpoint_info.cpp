// A checkpoint's metadata as JSON (checkpoint_info.h).
#include "weights/checkpoint_info.h"

#include <nlohmann/json.hpp>

#include "config/json_number.h"
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

// Reads the metadata's keys, each checked, naming the file and the key in the sentence it throws.
class MetadataReader {
public:
    MetadataReader(const json& j, std::string where) : m_j(j), m_where(std::move(where)) {}
    const json& at(const char* key) const {
        if (!m_j.is_object() || !m_j.contains(key)) fail(std::string("has no \"") + key + "\"");
        return m_j.at(key);
    }
    std::int64_t integer(const char* key, std::int64_t lo) const {
        const json& v = at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < lo)
            fail(std::string("\"") + key + "\" must be a whole number of at least " + std::to_string(lo));
        return v.get<std::int64_t>();
    }
    std::uint64_t unsigned_integer(const char* key) const {
        const json& v = at(key);
        if (!v.is_number_unsigned()) fail(std::string("\"") + key + "\" must be a whole number of at least 0");
        return v.get<std::uint64_t>();
    }
    double real(const char* key) const {
        if (const auto v = number_from_json(at(key))) return *v;
        fail(std::string("\"") + key + "\" must be a number");
    }
    bool boolean(const char* key) const {
        const json& v = at(key);
        if (!v.is_boolean()) fail(std::string("\"") + key + "\" must be true or false");
        return v.get<bool>();
    }
    MetadataReader group(const char* key) const {
        const json& v = at(key);
        if (!v.is_object()) fail(std::string("\"") + key + "\" must be an object");
        return {v, m_where};
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(m_where + ": the checkpoint's metadata " + what + "; the file is damaged, or not a Mantissa checkpoint.");
    }

private:
    const json& m_j;
    std::string m_where;
};

CheckpointInfo parse_info(const SafetensorsFile& file) {
    const std::string where = printable_text(file.path());
    const auto it = file.metadata().find(checkpoint_metadata_key);
    if (it == file.metadata().end())
        throw Error(where + " holds no Mantissa checkpoint (its metadata has no \"" + checkpoint_metadata_key +
                    "\"): it is a weights file, which model.init_from reads.");
    const json j = json::parse(it->second, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw Error(where + ": the checkpoint's metadata is not a JSON object; the file is damaged.");
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
    t.loss_scale = static_cast<float>(r.real("loss_scale"));
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
    if (t.optimizer_steps > t.step) r.fail("counts more optimizer steps than steps");
    const MetadataReader s = r.group("summary");
    c.summary.samples = s.integer("samples", 0);
    c.summary.overflow_steps = s.integer("overflow_steps", 0);
    c.summary.skipped_steps = s.integer("skipped_steps", 0);
    c.summary.final_loss = s.real("final_loss");
    c.summary.test_loss = s.real("test_loss");
    c.summary.test_accuracy = s.real("test_accuracy");
    c.summary.last_eval_step = s.integer("last_eval_step", -1);
    try {
        c.experiment = experiment_from_json(r.at("experiment"));
    } catch (const Error& e) {
        throw Error(where + ": the checkpoint's experiment is not one this Mantissa reads: " + e.what());
    }
    return c;
}

}  // namespace

std::string checkpoint_info_text(const CheckpointInfo& info) { return info_json(info).dump(); }

CheckpointInfo read_checkpoint_info(const SafetensorsFile& file) { return parse_info(file); }

}  // namespace mantissa
