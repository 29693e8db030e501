// `mantissa-cli runs` and `mantissa-cli show`: the run store's list, and one run's summary
// (configuration, final metrics, checkpoints, layers, op statistics, what-if statistics,
// block-scale views, a language model's last sample, events). Both open with StoreAccess::read:
// dead runs get marked interrupted and an older file is migrated (with its backup copy), a file
// that cannot be written is read as it is, and a store that does not exist is never created. Text from
// the store is printed with control characters escaped (a name cannot break the table or send
// escape codes), and JSON replaces bytes that are not UTF-8 (stores written before names were
// checked may hold them).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "config/telemetry.h"
#include "cli/show_block_scales.h"
#include "cli/show_what_if.h"
#include "error.h"
#include "store/run_store.h"
#include "store/op_summary.h"
#include "store/run_text.h"
#include "config/event_coalesce.h"
#include "config/layer_info.h"
#include "config/throughput.h"
#include "model/op_table.h"

namespace mantissa::cli {
namespace {

using ojson = nlohmann::ordered_json;

// JSON for stdout: bytes that are not UTF-8 become U+FFFD rather than failing the command.
void print_json(const ojson& value) {
    std::cout << value.dump(2, ' ', false, ojson::error_handler_t::replace) << std::endl;
}

// Stored text for a terminal line (store/run_text.h).
std::string shown(const std::string& s) {
    return store::printable_text(s);
}

std::size_t chars_of(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

ojson number_or_null(const std::optional<double>& v) {
    if (!v || !std::isfinite(*v)) return nullptr;
    return *v;
}

ojson tags_array(const std::string& tags) {
    ojson a = ojson::array();
    std::size_t start = 0;
    while (start < tags.size()) {
        std::size_t end = tags.find(',', start);
        if (end == std::string::npos) end = tags.size();
        if (end > start) a.push_back(tags.substr(start, end - start));
        start = end + 1;
    }
    return a;
}

// A branch's parent as `runs` and `show` name it: its id when it is in this store, else the
// first 8 characters of its uuid (a run of another store).
std::optional<std::int64_t> parent_id(const RunRow& r, const std::vector<RunRow>& runs) {
    if (r.parent_uuid.empty()) return std::nullopt;
    for (const RunRow& p : runs)
        if (p.uuid == r.parent_uuid) return p.id;
    return std::nullopt;
}

std::string parent_label(const RunRow& r, std::optional<std::int64_t> id) {
    return id ? std::to_string(*id) : shown(r.parent_uuid.substr(0, 8));
}

// {"uuid", "step", "id"} (id null when the parent is not in this store), or null for a run that
// is not a branch.
ojson parent_json(const RunRow& r, std::optional<std::int64_t> id) {
    if (r.parent_uuid.empty()) return nullptr;
    return {{"uuid", r.parent_uuid},
            {"step", r.parent_step ? ojson(*r.parent_step) : ojson(nullptr)},
            {"id", id ? ojson(*id) : ojson(nullptr)}};
}

ojson run_json(const RunRow& r, std::optional<std::int64_t> parent) {
    return {{"id", r.id},
            {"uuid", r.uuid},
            {"name", r.name},
            {"status", run_status_name(r.status)},
            {"created_at", r.created_at},
            {"finished_at", r.finished_at.empty() ? ojson(nullptr) : ojson(r.finished_at)},
            {"steps", r.steps},
            {"final_loss", number_or_null(r.final_loss)},
            {"test_accuracy", number_or_null(r.test_accuracy)},
            {"test_loss", number_or_null(r.test_loss)},
            {"backend", r.backend},
            {"device", r.device},
            {"tags", tags_array(r.tags)},
            {"notes", r.notes},
            {"app_version", r.app_version},
            {"error", r.error.empty() ? ojson(nullptr) : ojson(r.error)},
            {"parent", parent_json(r, parent)}};
}

// "2025-11-29T17:35:02.125Z" -> "2025-11-29 17:35" (UTC)
std::string short_time(const std::string& iso, bool seconds = false) {
    if (iso.size() < 16) return iso.empty() ? "-" : iso;
    std::string s = iso.substr(0, seconds ? 19 : 16);
    s[10] = ' ';
    return s;
}

std::string fixed(const std::optional<double>& v, const char* format) {
    if (!v) return "-";
    if (std::isnan(*v)) return "nan";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, *v);
    return buf;
}

std::string percent(const std::optional<double>& v) {
    if (!v || std::isnan(*v)) return "-";
    return fixed(*v * 100, "%.2f%%");
}

std::string duration(double s) {
    if (!std::isfinite(s)) return "-";
    char buf[48];
    if (s < 60)
        std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 3600)
        std::snprintf(buf, sizeof buf, "%dm %02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
    else
        std::snprintf(buf, sizeof buf, "%dh %02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
    return buf;
}

// At most `width` characters (valid UTF-8 in, as shown() gives; never a partial character).
std::string clip(const std::string& s, std::size_t width) {
    if (chars_of(s) <= width) return s;
    std::size_t i = 0;
    for (std::size_t c = 0; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && c++ == width - 3) break;
    }
    return s.substr(0, i) + "...";
}

// `s` padded with spaces to `width` characters (printf pads bytes, which misaligns UTF-8).
std::string pad(const std::string& s, std::size_t width) {
    const std::size_t n = chars_of(s);
    return n >= width ? s : s + std::string(width - n, ' ');
}

// A run's layers (RunStore::layers) for `show --json`: shapes as [channels, height, width].
ojson layers_json(const std::vector<LayerInfo>& layers) {
    ojson a = ojson::array();
    auto shape = [](const SampleShape& s) { return ojson::array({s.channels, s.height, s.width}); };
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerInfo& l = layers[i];
        a.push_back({{"layer", i},
                     {"name", l.name},
                     {"kind", l.kind},
                     {"in_shape", shape(l.in_shape)},
                     {"out_shape", shape(l.out_shape)},
                     {"in_features", l.in_features},
                     {"out_features", l.out_features},
                     {"parameters", l.parameters},
                     {"takes_precision", l.takes_precision}});
    }
    return a;
}

// The Layers section of `show`: one line a layer, "conv1  conv2d  1×28×28 → 32×28×28  320", in
// columns counted in characters (a shape's × is one).
void print_layers(const std::vector<LayerInfo>& layers) {
    if (layers.empty()) {
        std::printf("\nLayers\n  not recorded (recorded before schema version 4)\n");
        return;
    }
    std::int64_t total = 0;
    std::size_t name_width = 0, kind_width = 0, shape_width = 0;
    std::vector<std::string> shapes;
    for (const LayerInfo& l : layers) {
        if (__builtin_add_overflow(total, l.parameters, &total)) total = INT64_MAX;  // a store edited by hand
        shapes.push_back(l.in_shape.text() + " \u2192 " + l.out_shape.text());
        name_width = std::max(name_width, std::min<std::size_t>(chars_of(shown(l.name)), 32));
        kind_width = std::max(kind_width, std::min<std::size_t>(chars_of(shown(l.kind)), 16));
        shape_width = std::max(shape_width, chars_of(shapes.back()));
    }
    std::printf("\nLayers (%zu, %lld parameters)\n", layers.size(), static_cast<long long>(total));
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerInfo& l = layers[i];
        std::printf("  %s  %s  %s  %10lld%s\n", pad(clip(shown(l.name), 32), name_width).c_str(),
                    pad(clip(shown(l.kind), 16), kind_width).c_str(), pad(shapes[i], shape_width).c_str(),
                    static_cast<long long>(l.parameters), l.takes_precision ? "" : "  (not in precision.layers)");
    }
}

// Each op's format and the rule that chose it (model/op_table.h), from the layers and the precision
// the run started with; none without layers (a run from before schema version 4: its Layers
// section says so), and none with the reason in `why` where the configuration cannot be read.
std::vector<OpRow> run_ops(const RunRow& r, const std::vector<LayerInfo>& layers, std::string* why) {
    if (layers.empty()) return {};
    try {
        return op_table(layers, experiment_from_json(nlohmann::json::parse(r.config_json)).precision);
    } catch (const std::exception& e) {  // a configuration edited by hand, or a newer Mantissa's
        *why = std::string("its configuration cannot be read: ") + e.what();
        return {};
    }
}

// Whether a setting that op_table reads (a layer's precision, an op class, autocast, master
// weights) changed during the run.
bool precision_changed(const std::vector<Event>& events) {
    for (const Event& e : events) {
        if (e.kind != EventKind::setting_change) continue;
        const ojson data = ojson::parse(e.data_json, nullptr, false);
        if (!data.is_object() || !data.contains("key") || !data["key"].is_string()) continue;
        const std::string key = data["key"].get<std::string>();
        for (const char* read : {"precision.layers.", "precision.ops.", "precision.autocast", "precision.master_weights"})
            if (key.starts_with(read)) return true;
    }
    return false;
}

ojson ops_json(const std::vector<OpRow>& ops) {
    ojson a = ojson::array();
    for (const OpRow& o : ops)
        a.push_back({{"name", o.name}, {"op", o.op}, {"format", o.format}, {"reason", o.reason}});
    return a;
}

// The Ops section of `show`: "  blocks.0.attn.softmax  softmax  fp32  autocast's FP32 list", as the
// GUI's Layers view lists them.
void print_ops(const std::vector<OpRow>& ops, const std::string& why, bool changed) {
    if (ops.empty() && why.empty()) return;
    std::printf("\nOps (the format each ran in at the start, and why%s)\n",
                changed ? "; precision changed during the run: see Events" : "");
    if (ops.empty()) {
        std::printf("  %s\n", shown(why).c_str());
        return;
    }
    std::size_t name_width = 0, op_width = 0, format_width = 0;
    for (const OpRow& o : ops) {
        name_width = std::max(name_width, std::min<std::size_t>(chars_of(shown(o.name)), 32));
        op_width = std::max(op_width, chars_of(o.op));
        format_width = std::max(format_width, chars_of(o.format));
    }
    for (const OpRow& o : ops)
        std::printf("  %s  %s  %s  %s\n", pad(clip(shown(o.name), 32), name_width).c_str(), pad(o.op, op_width).c_str(),
                    pad(o.format, format_width).c_str(), shown(o.reason).c_str());
}

ojson checkpoints_json(const std::vector<CheckpointRow>& checkpoints) {
    ojson a = ojson::array();
    for (const CheckpointRow& c : checkpoints)
        a.push_back({{"step", c.step},
                     {"time_s", number_or_null(c.time_s)},
                     {"bytes", c.bytes},
                     {"file", c.file},
                     {"created_at", c.created_at}});
    return a;
}

// The Checkpoints section of `show`: "  step 500       12.3 s    4.2 MiB  /data/runs.checkpoints/...",
// a line per checkpoint by step (the run continues from one with that step). Nothing without any.
void print_checkpoints(const std::vector<CheckpointRow>& checkpoints) {
    if (checkpoints.empty()) return;
    std::printf("\nCheckpoints (%zu)\n", checkpoints.size());
    for (const CheckpointRow& c : checkpoints)
        std::printf("  step %-8lld %9s  %10s  %s\n", static_cast<long long>(c.step),
                    c.time_s ? duration(*c.time_s).c_str() : "-", format_byte_size(c.bytes).c_str(), shown(c.file).c_str());
}

// A statistic's value for a terminal: 5 significant digits (65504, FP16's largest, whole), "inf", "nan".
std::string stat_value(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.5g", v);
    return buf;
}

// The heading of a stat's section in `show` (config/telemetry.h, OpStepRecord).
std::string stat_heading(const std::string& stat) {
    if (stat == "logit_amax") return "Attention logits (largest |QK\u1d40/\u221ad| of a step)";
    if (stat == "min_variance") return "Layer norm variance (smallest row variance of a step)";
    if (stat == "accumulation_error")
        return "Accumulation error of the forward's sums (median |sum - FP64| / \u03a3|products|)";
    if (stat == "accumulation_error_wgrad")
        return "Accumulation error of the weight gradient's sums (median |sum - FP64| / \u03a3|products|)";
    return "Op statistic " + shown(stat);
}

ojson op_stats_json(const std::vector<OpStatSummary>& summaries) {
    ojson a = ojson::array();
    for (const OpStatSummary& s : summaries)
        a.push_back({{"name", s.name},
                     {"stat", s.stat},
                     {"steps", s.steps},
                     {"last_step", s.last_step},
                     {"last", number_or_null(s.last)},
                     {"extreme", number_or_null(s.extreme)},  // max logit_amax, min min_variance
                     {"extreme_step", std::isnan(s.extreme) ? ojson(nullptr) : ojson(s.extreme_step)},
                     {"nan_steps", s.nan_steps}});
    return a;
}

// The op statistics of `show`, a section per stat and a line per op: its last value and the
// extreme over the run, "blocks.0.attn  12.3  (max 15.1 at step 300)". Nothing for a run without.
void print_op_stats(const std::vector<OpStatSummary>& summaries) {
    std::vector<std::string> stats;  // attention first, then layer norms, then others as they appear
    for (const char* known : {"logit_amax", "min_variance", "accumulation_error", "accumulation_error_wgrad"})
        if (std::any_of(summaries.begin(), summaries.end(), [&](const OpStatSummary& s) { return s.stat == known; }))
            stats.push_back(known);
    for (const OpStatSummary& s : summaries)
        if (std::find(stats.begin(), stats.end(), s.stat) == stats.end()) stats.push_back(s.stat);
    for (const std::string& stat : stats) {
        const char* side = op_stat_larger_is_worse(stat) ? "max" : "min";
        std::size_t name_width = 0, value_width = 0;
        for (const OpStatSummary& s : summaries)
            if (s.stat == stat) {
                name_width = std::max(name_width, std::min<std::size_t>(chars_of(shown(s.name)), 32));
                value_width = std::max(value_width, stat_value(s.last).size());
            }
        std::printf("\n%s: last, and %s over the run\n", stat_heading(stat).c_str(), side);
        for (const OpStatSummary& s : summaries) {
            if (s.stat != stat) continue;
            std::string extreme = std::isnan(s.extreme) ? std::string("no value that is a number")
                                                        : std::string(side) + " " + stat_value(s.extreme) +
                                                              " at step " + std::to_string(s.extreme_step);
            if (s.nan_steps > 0)
                extreme += ", NaN at " + std::to_string(s.nan_steps) + (s.nan_steps == 1 ? " step" : " steps");
            std::printf("  %s  %*s  (%s)\n", pad(clip(shown(s.name), 32), name_width).c_str(),
                        static_cast<int>(value_width), stat_value(s.last).c_str(), extreme.c_str());
        }
    }
}

// A language model's last generated sample: the data of the last `evaluation` event that holds
// one (engine/train/session.cpp writes {"loss", "perplexity", "accuracy", "prompt", "sample",
// "stopped", "temperature"}), with the event's step; nullopt when no event has one.
struct LastSample {
    std::int64_t step = 0;
    ojson data;
};

std::optional<LastSample> last_sample(const std::vector<Event>& events) {
    for (auto e = events.rbegin(); e != events.rend(); ++e) {
        if (e->kind != EventKind::evaluation) continue;
        ojson data = ojson::parse(e->data_json, nullptr, false);
        if (data.is_object() && data.contains("sample") && data["sample"].is_string())
            return LastSample{e->step, std::move(data)};
    }
    return std::nullopt;
}

std::string json_text(const ojson& data, const char* key) {
    const auto it = data.find(key);
    return it != data.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<double> json_number(const ojson& data, const char* key) {
    const auto it = data.find(key);
    if (it == data.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

ojson last_sample_json(const std::optional<LastSample>& sample) {
    if (!sample) return nullptr;
    return {{"step", sample->step},
            {"loss", number_or_null(json_number(sample->data, "loss"))},
            {"perplexity", number_or_null(json_number(sample->data, "perplexity"))},
            {"temperature", number_or_null(json_number(sample->data, "temperature"))},
            {"prompt", json_text(sample->data, "prompt")},
            {"sample", json_text(sample->data, "sample")},
            {"stopped", json_text(sample->data, "stopped")}};
}

// "Last sample (step 500, test loss 1.234 nats/token, perplexity 3.44):" and the prompt, an arrow
// where the model took over, and what it wrote, with its line breaks, indented.
void print_last_sample(const std::optional<LastSample>& sample) {
    if (!sample) return;
    std::printf("\nLast sample (step %lld, test loss %s nats/token, perplexity %s):\n",
                static_cast<long long>(sample->step), fixed(json_number(sample->data, "loss"), "%.4f").c_str(),
                fixed(json_number(sample->data, "perplexity"), "%.2f").c_str());
    std::string text = store::printable_generated_text(json_text(sample->data, "prompt") + "\u2192" +
                                                        json_text(sample->data, "sample"));
    if (!text.empty() && text.back() == '\n') text.pop_back();  // its own last line break ends the section
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
        text.insert(at + 1, 2, ' ');
    std::printf("  %s\n", text.c_str());
    if (const std::string stopped = json_text(sample->data, "stopped"); !stopped.empty())
        std::printf("  (%s)\n", store::printable_text(stopped, false).c_str());
}

std::string db_path(const Args& args) {
    return args.value("db").value_or(default_store_path());
}

int run_runs(Args& args) {
    args.flag("json");
    args.option("db");
    args.parse();
    if (!args.positional().empty()) throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    const std::string db = db_path(args);
    const bool json = args.has("json");
    if (!store_file_present(db)) {
        if (json)
            std::cout << "[]" << std::endl;
        else
            std::printf("No runs yet: there is no run store at %s.\n", db.c_str());
        return exit_ok;
    }
    RunStore store(db, StoreAccess::read);
    const auto runs = store.list_runs();
    if (json) {
        ojson out = ojson::array();
        for (const auto& r : runs) out.push_back(run_json(r, parent_id(r, runs)));
        print_json(out);
        return exit_ok;
    }
    if (runs.empty()) {
        std::printf("No runs in %s.\n", db.c_str());
        return exit_ok;
    }
    std::size_t name_width = 4;
    for (const auto& r : runs) name_width = std::max(name_width, std::min<std::size_t>(chars_of(shown(r.name)), 32));
    // A PARENT column ("12@500": run 12's checkpoint at step 500) only when some run is a branch;
    // then BACKEND is padded to keep it in line.
    std::vector<std::string> parents;
    std::size_t backend_width = 7;
    for (const auto& r : runs) {
        parents.push_back(r.parent_uuid.empty() ? std::string()
                                                : parent_label(r, parent_id(r, runs)) + "@" +
                                                      (r.parent_step ? std::to_string(*r.parent_step) : "?"));
        backend_width = std::max(backend_width, chars_of(shown(r.backend)));
    }
    const bool branches = std::any_of(parents.begin(), parents.end(), [](const std::string& p) { return !p.empty(); });
    auto backend_column = [&](const std::string& backend, const std::string& parent) {
        return branches ? pad(backend, backend_width) + "  " + parent : backend;
    };
    std::printf("%4s  %s  %-11s  %-16s  %8s  %10s  %8s  %s\n", "ID", pad("NAME", name_width).c_str(), "STATUS",
                "CREATED (UTC)", "STEPS", "FINAL LOSS", "TEST ACC", backend_column("BACKEND", "PARENT").c_str());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const RunRow& r = runs[i];
        std::string line = backend_column(shown(r.backend), parents[i]);
        while (!line.empty() && line.back() == ' ') line.pop_back();  // no trailing spaces without a parent
        std::printf("%4lld  %s  %-11s  %-16s  %8lld  %10s  %8s  %s\n", static_cast<long long>(r.id),
                    pad(clip(shown(r.name), 32), name_width).c_str(), run_status_name(r.status),
                    shown(short_time(r.created_at)).c_str(), static_cast<long long>(r.steps),
                    fixed(r.final_loss, "%.4f").c_str(), percent(r.test_accuracy).c_str(), line.c_str());
    }
    if (store.read_only()) std::printf("(%s is read-only here)\n", db.c_str());
    return exit_ok;
}

int run_show(Args& args) {
    args.flag("json");
    args.flag("all-events");
    args.option("db");
    args.parse();
    args.expect_words(1, "give the run to show, its id or the start of its name", "mantissa-cli show RUN");
    RunStore store(db_path(args), StoreAccess::read);
    const std::int64_t id = store.resolve(args.positional().front());
    const RunRow r = store.run(id);
    const RunTotals t = store.totals(id);
    const auto events = store.events(id);
    const auto layers = store.layers(id);
    const auto op_stats = summarize_op_steps(store.op_steps(id));
    const auto what_if = last_what_if_step(store.what_if_steps(id));
    std::vector<LayerStepRecord> what_if_layers;  // the precisions the layers ran in at that step
    if (!what_if.empty())
        for (LayerStepRecord& l : store.layer_steps(id, what_if.front().step))
            if (l.step == what_if.front().step) what_if_layers.push_back(std::move(l));
    std::vector<BlockScaleRecord> block_scales;  // the last statistics step's views
    if (const auto step = store.last_block_scale_step(id))
        for (BlockScaleRecord& b : store.block_scale_steps(id, *step))
            if (b.step == *step) block_scales.push_back(std::move(b));
    const auto sample = last_sample(events);
    const auto checkpoints = store.checkpoints(id);
    std::string ops_missing;
    const std::vector<OpRow> ops = run_ops(r, layers, &ops_missing);
    const std::optional<std::int64_t> parent = r.parent_uuid.empty() ? std::nullopt : parent_id(r, store.list_runs());

    if (args.has("json")) {
        ojson out = run_json(r, parent);
        ojson config = ojson::parse(r.config_json, nullptr, false);
        out["config"] = config.is_discarded() ? ojson(r.config_json) : config;
        out["totals"] = {{"steps", t.steps},
                         {"overflow_steps", t.overflow_steps},
                         {"skipped_steps", t.skipped_steps},
                         {"final_loss_scale", number_or_null(t.final_loss_scale)},
                         {"elapsed_s", number_or_null(t.elapsed_s)},
                         {"samples", t.samples ? ojson(*t.samples) : ojson(nullptr)},
                         {"samples_per_s", number_or_null(t.samples_per_s)},  // mean over the run
                         {"peak_memory_bytes", t.peak_memory_bytes},
                         {"layer_rows", t.layer_rows},
                         {"evals", t.evals},
                         {"events", t.events},
                         {"op_rows", t.op_rows},
                         {"what_if_rows", t.what_if_rows},
                         {"block_scale_rows", t.block_scale_rows}};
        out["checkpoints"] = checkpoints_json(checkpoints);  // [] without, or before schema version 8
        out["layers"] = layers_json(layers);  // [] for a run recorded before schema version 4
        out["ops"] = ops_json(ops);           // at the start of the run; [] without layers
        out["op_stats"] = op_stats_json(op_stats);  // [] for a model without such ops, or before version 5
        out["what_if"] = what_if_json(what_if);     // the last statistics step's; null without
        out["block_scales"] = block_scales_json(block_scales);  // the same step's, without the maps; null without
        out["last_sample"] = last_sample_json(sample);  // null unless a language model's evaluation wrote one
        ojson ev = ojson::array();
        for (const auto& e : events) {
            ojson data = ojson::parse(e.data_json, nullptr, false);
            ev.push_back({{"step", e.step},
                          {"time_s", std::isfinite(e.time_s) ? ojson(e.time_s) : ojson(nullptr)},
                          {"kind", event_kind_name(e.kind)},
                          {"message", e.message},
                          {"data", data.is_discarded() ? ojson(e.data_json) : data}});
        }
        out["events"] = std::move(ev);
        print_json(out);
        return exit_ok;
    }

    std::printf("Run %lld: %s\n", static_cast<long long>(r.id), shown(r.name).c_str());
    if (!r.parent_uuid.empty())
        std::printf("  Branched from run %s at step %s\n", parent_label(r, parent).c_str(),
                    r.parent_step ? std::to_string(*r.parent_step).c_str() : "-");
    std::printf("  status       %s\n", run_status_name(r.status));
    std::printf("  created      %s UTC\n", short_time(r.created_at, true).c_str());
    if (!r.finished_at.empty()) std::printf("  finished     %s UTC\n", short_time(r.finished_at, true).c_str());
    std::printf("  backend      %s%s%s%s\n", r.backend.empty() ? "-" : shown(r.backend).c_str(),
                r.device.empty() ? "" : " (", shown(r.device).c_str(), r.device.empty() ? "" : ")");
    std::printf("  recorded by  Mantissa %s on %s\n", shown(r.app_version).c_str(),
                r.host.empty() ? "-" : shown(r.host).c_str());
    std::printf("  uuid         %s\n", shown(r.uuid).c_str());
    if (!r.tags.empty()) std::printf("  tags         %s\n", shown(r.tags).c_str());
    if (!r.notes.empty()) {
        std::string notes = store::printable_text(r.notes, true);  // line breaks kept, indented below
        for (std::size_t at = notes.find('\n'); at != std::string::npos; at = notes.find('\n', at + 1))
            notes.insert(at + 1, 15, ' ');
        std::printf("  notes        %s\n", notes.c_str());
    }
    if (!r.error.empty()) std::printf("  error        %s\n", shown(r.error).c_str());

    std::printf("\nFinal metrics\n");
    std::printf("  steps        %lld (%lld overflowed, %lld skipped)\n", static_cast<long long>(t.steps),
                static_cast<long long>(t.overflow_steps), static_cast<long long>(t.skipped_steps));
    std::printf("  final loss   %s\n", fixed(r.final_loss, "%.6g").c_str());
    if (r.test_accuracy || r.test_loss)
        std::printf("  test         accuracy %s, loss %s\n", percent(r.test_accuracy).c_str(),
                    fixed(r.test_loss, "%.6g").c_str());
    std::printf("  loss scale   %s\n", fixed(t.final_loss_scale, "%g").c_str());
    if (t.elapsed_s) std::printf("  elapsed      %s of training (pauses left out)\n", duration(*t.elapsed_s).c_str());
    if (t.samples_per_s)
        std::printf("  throughput   %s %s\n", fixed(t.samples_per_s, "%.0f").c_str(), run_samples_per_s_label);
    if (t.peak_memory_bytes > 0) std::printf("  peak memory  %s\n", format_byte_size(t.peak_memory_bytes).c_str());
    std::printf("  recorded     %s, %s, %s", count_of(t.layer_rows, "layer row", "layer rows").c_str(),
                count_of(t.evals, "evaluation", "evaluations").c_str(), count_of(t.events, "event", "events").c_str());
    if (t.op_rows > 0) std::printf(", %lld op rows", static_cast<long long>(t.op_rows));
    if (t.what_if_rows > 0) std::printf(", %lld what-if rows", static_cast<long long>(t.what_if_rows));
    if (t.block_scale_rows > 0) std::printf(", %lld block-scale rows", static_cast<long long>(t.block_scale_rows));
    std::printf("\n");
    print_checkpoints(checkpoints);
    print_layers(layers);
    print_ops(ops, ops_missing, precision_changed(events));
    print_op_stats(op_stats);
    print_what_if(what_if, what_if_layers);
    print_block_scales(block_scales);
    print_last_sample(sample);

    // Repeats on consecutive steps (an overflow every step after a divergence) are one entry, by the
    // same rule as the GUI's Events panel (config/event_coalesce.h); --json keeps every event.
    EventCoalescer coalesced;
    for (const Event& e : events) coalesced.add(e);
    const auto& entries = coalesced.entries();
    if (entries.size() == events.size())
        std::printf("\nEvents (%zu)\n", events.size());
    else
        std::printf("\nEvents (%zu recorded, as %zu entries: repeats on consecutive steps are one entry)\n",
                    events.size(), entries.size());
    const std::size_t shown_max = 50;
    std::size_t first = 0;
    if (!args.has("all-events") && entries.size() > shown_max) {
        first = entries.size() - shown_max;
        std::printf("  (%zu earlier entries not shown: --all-events shows them)\n", first);
    }
    const bool live = r.status == RunStatus::running;
    for (std::size_t i = first; i < entries.size(); ++i) {
        const EventEntry& entry = entries[i];
        const Event& e = events[entry.first];
        const std::string message =
            event_entry_message(entry, e, events[entry.last], live && coalesced.growing(i));
        std::printf("  step %-8lld %9.2fs  %-15s %s\n", static_cast<long long>(e.step), e.time_s,
                    event_kind_name(e.kind), shown(message).c_str());
    }

    std::printf("\nConfiguration\n");
    ojson config = ojson::parse(r.config_json, nullptr, false);
    std::string text =
        config.is_discarded() ? r.config_json : config.dump(2, ' ', false, ojson::error_handler_t::replace);
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::printf("  %s\n", shown(text.substr(start, end - start)).c_str());
        start = end + 1;
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"runs", "list the recorded runs",
                      "usage: mantissa-cli runs [--json] [--db FILE]\n\n"
                      "Lists the runs in the store: id, name, status (running, completed, stopped, failed,\n"
                      "interrupted), when it was created (UTC), steps, final training loss, the last test\n"
                      "accuracy and the backend; when some run is a branch (started from another run's\n"
                      "checkpoint), a PARENT column names the run and step it started from (\"12@500\"; a\n"
                      "parent that is not in this store by the start of its uuid).\n\n"
                      "  --db FILE   the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --json      print a JSON array, one object per run, with every column\n\n"
                      "Exit status: 0 ok, 2 the store cannot be read.\n",
                      run_runs});

MANTISSA_CLI_COMMAND({"show", "summarise one run: configuration, final metrics, layers, op statistics, events",
                      "usage: mantissa-cli show RUN [--json] [--all-events] [--db FILE]\n\n"
                      "Shows one run: its status and where it ran (and, for a branch, the run and step it\n"
                      "started from), the final metrics (steps, overflowed and skipped steps, final loss, last\n"
                      "test evaluation, loss scale, training time, throughput in samples/s (mean over the run:\n"
                      "samples / training time), peak memory), its checkpoints (step, training time, size,\n"
                      "file), its layers (name, kind, the shape of a sample in and out, parameters; a run\n"
                      "recorded before schema version 4 has none), its ops (the format each ran in at the\n"
                      "start and the rule that chose it: autocast, autocast's FP32 list, a precision.layers or\n"
                      "precision.ops setting; as the GUI's Layers view), for a transformer each attention layer's\n"
                      "largest logit and each layer norm's smallest variance (the last measured and the\n"
                      "extreme over the run), what the train.what_if formats would do to each matmul layer's\n"
                      "operands and the distribution of their block scales' exponents (train.block_scales;\n"
                      "both at the last statistics step), for a language model the last sample it wrote, its\n"
                      "events (settings changed during the run, overflows, scale changes...) and the full\n"
                      "configuration it started with.\n"
                      "RUN is an id or the unique start of a run's name. An overflow or loss-scale change\n"
                      "repeated on consecutive steps is listed as one entry with its step range (\"Overflow\n"
                      "on every step from 412 to 511 (100 steps)\"); --json lists every event as recorded.\n\n"
                      "  --db FILE      the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --json         print one JSON object (the run with its parent, config, totals,\n"
                      "                 checkpoints, layers, ops, op_stats, what_if, block_scales, last_sample,\n"
                      "                 events)\n"
                      "  --all-events   list every entry (by default the last 50)\n\n"
                      "Exit status: 0 ok, 2 no such run or the store cannot be read.\n",
                      run_show});

}  // namespace mantissa::cli
