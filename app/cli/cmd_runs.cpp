// `mantissa-cli runs` and `mantissa-cli show`: the run store's list, and one run's summary
// (configuration, final metrics, events). Both read only: they open the store as a writer would,
// so dead runs get marked interrupted and old files migrated, but fall back to reading when the
// file cannot be written, and never create a store that does not exist.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "error.h"
#include "store/run_store.h"

namespace mantissa::cli {
namespace {

using ojson = nlohmann::ordered_json;

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

ojson run_json(const RunRow& r) {
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
            {"error", r.error.empty() ? ojson(nullptr) : ojson(r.error)}};
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

std::string human_bytes(std::int64_t b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
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

std::string clip(const std::string& s, std::size_t width) {
    if (s.size() <= width) return s;
    return s.substr(0, width - 3) + "...";
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
    if (!std::filesystem::exists(db)) {
        if (json)
            std::cout << "[]" << std::endl;
        else
            std::printf("No runs yet: there is no run store at %s.\n", db.c_str());
        return exit_ok;
    }
    RunStore store(db);
    const auto runs = store.list_runs();
    if (json) {
        ojson out = ojson::array();
        for (const auto& r : runs) out.push_back(run_json(r));
        std::cout << out.dump(2) << std::endl;
        return exit_ok;
    }
    if (runs.empty()) {
        std::printf("No runs in %s.\n", db.c_str());
        return exit_ok;
    }
    std::size_t name_width = 4;
    for (const auto& r : runs) name_width = std::max(name_width, std::min<std::size_t>(r.name.size(), 32));
    std::printf("%4s  %-*s  %-11s  %-16s  %8s  %10s  %8s  %s\n", "ID", static_cast<int>(name_width), "NAME", "STATUS",
                "CREATED (UTC)", "STEPS", "FINAL LOSS", "TEST ACC", "BACKEND");
    for (const auto& r : runs)
        std::printf("%4lld  %-*s  %-11s  %-16s  %8lld  %10s  %8s  %s\n", static_cast<long long>(r.id),
                    static_cast<int>(name_width), clip(r.name, 32).c_str(), run_status_name(r.status),
                    short_time(r.created_at).c_str(), static_cast<long long>(r.steps),
                    fixed(r.final_loss, "%.4f").c_str(), percent(r.test_accuracy).c_str(), r.backend.c_str());
    if (store.read_only()) std::printf("(%s is read-only here)\n", db.c_str());
    return exit_ok;
}

int run_show(Args& args) {
    args.flag("json");
    args.flag("all-events");
    args.option("db");
    args.parse();
    if (args.positional().size() != 1)
        throw UsageError{args.positional().empty() ? "give the run to show: its id or the start of its name"
                                                   : "give one run only (an id or the start of a name)"};
    RunStore store(db_path(args), !std::filesystem::exists(db_path(args)));
    const std::int64_t id = store.resolve(args.positional().front());
    const RunRow r = store.run(id);
    const RunTotals t = store.totals(id);
    const auto events = store.events(id);

    if (args.has("json")) {
        ojson out = run_json(r);
        ojson config = ojson::parse(r.config_json, nullptr, false);
        out["config"] = config.is_discarded() ? ojson(r.config_json) : config;
        out["totals"] = {{"steps", t.steps},
                         {"overflow_steps", t.overflow_steps},
                         {"skipped_steps", t.skipped_steps},
                         {"final_loss_scale", number_or_null(t.final_loss_scale)},
                         {"elapsed_s", number_or_null(t.elapsed_s)},
                         {"mean_samples_per_s", number_or_null(t.mean_samples_per_s)},
                         {"peak_memory_bytes", t.peak_memory_bytes},
                         {"layer_rows", t.layer_rows},
                         {"evals", t.evals},
                         {"events", t.events}};
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
        std::cout << out.dump(2, ' ', false, ojson::error_handler_t::replace) << std::endl;
        return exit_ok;
    }

    std::printf("Run %lld: %s\n", static_cast<long long>(r.id), r.name.c_str());
    std::printf("  status       %s\n", run_status_name(r.status));
    std::printf("  created      %s UTC\n", short_time(r.created_at, true).c_str());
    if (!r.finished_at.empty()) std::printf("  finished     %s UTC\n", short_time(r.finished_at, true).c_str());
    std::printf("  backend      %s%s%s%s\n", r.backend.empty() ? "-" : r.backend.c_str(), r.device.empty() ? "" : " (",
                r.device.c_str(), r.device.empty() ? "" : ")");
    std::printf("  recorded by  Mantissa %s on %s\n", r.app_version.c_str(), r.host.empty() ? "-" : r.host.c_str());
    std::printf("  uuid         %s\n", r.uuid.c_str());
    if (!r.tags.empty()) std::printf("  tags         %s\n", r.tags.c_str());
    if (!r.notes.empty()) std::printf("  notes        %s\n", r.notes.c_str());
    if (!r.error.empty()) std::printf("  error        %s\n", r.error.c_str());

    std::printf("\nFinal metrics\n");
    std::printf("  steps        %lld (%lld overflowed, %lld skipped)\n", static_cast<long long>(t.steps),
                static_cast<long long>(t.overflow_steps), static_cast<long long>(t.skipped_steps));
    std::printf("  final loss   %s\n", fixed(r.final_loss, "%.6g").c_str());
    if (r.test_accuracy || r.test_loss)
        std::printf("  test         accuracy %s, loss %s\n", percent(r.test_accuracy).c_str(),
                    fixed(r.test_loss, "%.6g").c_str());
    std::printf("  loss scale   %s\n", fixed(t.final_loss_scale, "%g").c_str());
    if (t.elapsed_s)
        std::printf("  elapsed      %s (%s samples/s on average)\n", duration(*t.elapsed_s).c_str(),
                    fixed(t.mean_samples_per_s, "%.0f").c_str());
    if (t.peak_memory_bytes > 0) std::printf("  peak memory  %s\n", human_bytes(t.peak_memory_bytes).c_str());
    std::printf("  recorded     %lld layer rows, %lld evaluations, %lld events\n", static_cast<long long>(t.layer_rows),
                static_cast<long long>(t.evals), static_cast<long long>(t.events));

    std::printf("\nEvents (%zu)\n", events.size());
    const std::size_t shown_max = 50;
    std::size_t first = 0;
    if (!args.has("all-events") && events.size() > shown_max) {
        first = events.size() - shown_max;
        std::printf("  (%zu earlier events not shown: --all-events shows them)\n", first);
    }
    for (std::size_t i = first; i < events.size(); ++i) {
        const Event& e = events[i];
        std::printf("  step %-8lld %9.2fs  %-15s %s\n", static_cast<long long>(e.step), e.time_s,
                    event_kind_name(e.kind), e.message.c_str());
    }

    std::printf("\nConfiguration\n");
    ojson config = ojson::parse(r.config_json, nullptr, false);
    std::string text =
        config.is_discarded() ? r.config_json : config.dump(2, ' ', false, ojson::error_handler_t::replace);
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::printf("  %s\n", text.substr(start, end - start).c_str());
        start = end + 1;
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"runs", "list the recorded runs",
                      "usage: mantissa-cli runs [--json] [--db FILE]\n\n"
                      "Lists the runs in the store: id, name, status (running, completed, stopped, failed,\n"
                      "interrupted), when it was created (UTC), steps, final training loss, the last test\n"
                      "accuracy and the backend.\n\n"
                      "  --db FILE   the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --json      print a JSON array, one object per run, with every column\n\n"
                      "Exit status: 0 ok, 2 the store cannot be read.\n",
                      run_runs});

MANTISSA_CLI_COMMAND({"show", "summarise one run: configuration, final metrics, events",
                      "usage: mantissa-cli show RUN [--json] [--all-events] [--db FILE]\n\n"
                      "Shows one run: its status and where it ran, the final metrics (steps, overflowed and\n"
                      "skipped steps, final loss, last test evaluation, loss scale, time, peak memory), its\n"
                      "events (settings changed during the run, overflows, scale changes...) and the full\n"
                      "configuration it started with. RUN is an id or the unique start of a run's name.\n\n"
                      "  --db FILE      the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n"
                      "  --json         print one JSON object (the run, config, totals, events)\n"
                      "  --all-events   list every event (by default the last 50)\n\n"
                      "Exit status: 0 ok, 2 no such run or the store cannot be read.\n",
                      run_show});

}  // namespace mantissa::cli
