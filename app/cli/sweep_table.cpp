// The recipe table of a sweep (sweep_table.h).
#include "cli/sweep_table.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <ostream>

#include "config/telemetry.h"
#include "sweep/pareto.h"

namespace mantissa::cli {
namespace {

struct Row {
    const PlannedRun* plan = nullptr;
    std::optional<RunRow> run;  // the latest recorded for the index
    RunTotals totals;
};

std::vector<Row> rows_of(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan, bool totals) {
    std::map<std::int64_t, RunRow> latest;
    for (RunRow& r : store.sweep_runs(sweep.id))
        if (r.sweep_index) latest[*r.sweep_index] = r;
    std::vector<Row> rows;
    for (const PlannedRun& p : plan) {
        Row row{&p, std::nullopt, {}};
        if (const auto it = latest.find(p.index); it != latest.end()) {
            row.run = it->second;
            if (totals) row.totals = store.totals(it->second.id);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

double value_or_nan(const std::optional<double>& v) { return v ? *v : std::nan(""); }

// The front of test accuracy (higher) or, without one, final loss (lower) against peak memory (lower).
std::vector<bool> front_of(const std::vector<Row>& rows, bool& by_accuracy) {
    by_accuracy = false;
    for (const Row& r : rows) by_accuracy = by_accuracy || (r.run && r.run->test_accuracy && !std::isnan(*r.run->test_accuracy));
    std::vector<ParetoPoint> points;
    for (const Row& r : rows) {
        const bool done = r.run && r.run->status == RunStatus::completed && r.totals.peak_memory_bytes > 0;
        const double figure = !done ? std::nan("") : by_accuracy ? value_or_nan(r.run->test_accuracy) : value_or_nan(r.run->final_loss);
        points.push_back({figure, done ? static_cast<double>(r.totals.peak_memory_bytes) : std::nan("")});
    }
    return pareto_front(points, by_accuracy, false);
}

std::string cell(const std::optional<double>& v, const char* format) {
    if (!v || std::isnan(*v)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, format, *v);
    return buf;
}

}  // namespace

void print_sweep_table(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan, std::ostream& out) {
    const std::vector<Row> rows = rows_of(store, sweep, plan, true);
    bool by_accuracy = false;
    const std::vector<bool> front = front_of(rows, by_accuracy);
    std::size_t width = 6;
    for (const Row& r : rows) width = std::max(width, r.plan->label.size());
    char line[512];
    out << "Sweep " << sweep.id << " (\"" << sweep.name << "\"), " << plan.size() << " runs\n";
    std::snprintf(line, sizeof line, "  %4s  %-*s  %-11s  %6s  %10s  %8s  %10s  %10s  %7s  %4s  %s\n", "#", static_cast<int>(width),
                  "RECIPE", "STATUS", "STEPS", "FINAL LOSS", "TEST ACC", "SAMPLES/S", "PEAK MEM", "SKIPPED", "RUN", "");
    out << line;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const bool has = r.run.has_value();
        std::snprintf(line, sizeof line, "  %4lld  %-*s  %-11s  %6s  %10s  %8s  %10s  %10s  %7s  %4s  %s\n",
                      static_cast<long long>(r.plan->index), static_cast<int>(width), r.plan->label.c_str(),
                      has ? run_status_name(r.run->status) : "not run", has ? std::to_string(r.run->steps).c_str() : "-",
                      has ? cell(r.run->final_loss, "%.4f").c_str() : "-",
                      has && r.run->test_accuracy ? cell(*r.run->test_accuracy * 100, "%.2f%%").c_str() : "-",
                      has ? cell(r.totals.samples_per_s, "%.0f").c_str() : "-",
                      has && r.totals.peak_memory_bytes > 0 ? format_byte_size(r.totals.peak_memory_bytes).c_str() : "-",
                      has ? std::to_string(r.totals.skipped_steps).c_str() : "-", has ? std::to_string(r.run->id).c_str() : "-",
                      front[i] ? "*" : "");
        out << line;
    }
    out << "  * on the Pareto front of " << (by_accuracy ? "test accuracy" : "final loss") << " against peak memory\n";
}

nlohmann::ordered_json sweep_table_json(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan) {
    const std::vector<Row> rows = rows_of(store, sweep, plan, true);
    bool by_accuracy = false;
    const std::vector<bool> front = front_of(rows, by_accuracy);
    using ojson = nlohmann::ordered_json;
    auto number = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? ojson(*v) : ojson(nullptr); };
    ojson runs = ojson::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        ojson point = ojson::object();
        for (const auto& [key, value] : r.plan->point) point[key] = value;
        ojson row = {{"index", r.plan->index}, {"label", r.plan->label}, {"recipe", r.plan->recipe}, {"point", point},
                     {"seed", r.plan->experiment.train.seed}};
        if (r.run) {
            row["run_id"] = r.run->id;
            row["status"] = run_status_name(r.run->status);
            row["steps"] = r.run->steps;
            row["final_loss"] = number(r.run->final_loss);
            row["test_accuracy"] = number(r.run->test_accuracy);
            row["samples_per_s"] = number(r.totals.samples_per_s);
            row["peak_memory_bytes"] = r.totals.peak_memory_bytes;
            row["skipped_steps"] = r.totals.skipped_steps;
        } else {
            row["run_id"] = nullptr;
            row["status"] = "not run";
        }
        row["pareto"] = static_cast<bool>(front[i]);
        runs.push_back(std::move(row));
    }
    return {{"id", sweep.id}, {"uuid", sweep.uuid}, {"name", sweep.name}, {"executor", sweep.executor},
            {"runs_planned", sweep.runs_planned}, {"pareto", by_accuracy ? "test_accuracy against peak_memory_bytes"
                                                                           : "final_loss against peak_memory_bytes"},
            {"runs", runs}};
}

std::vector<std::string> progress_lines(RunStore& store, const SweepRow& sweep, const std::vector<PlannedRun>& plan) {
    std::vector<std::string> lines;
    for (const Row& r : rows_of(store, sweep, plan, false)) {
        char line[256];
        const std::int64_t total = r.plan->experiment.train.steps;
        std::string of_total;  // "/1000"; appended piece by piece: "/" + std::to_string trips GCC 12's -Wrestrict
        if (total > 0) {
            of_total += '/';
            of_total += std::to_string(total);
        }
        std::snprintf(line, sizeof line, "  %4lld  %-40.40s  %-11s  step %6lld%s  loss %s", static_cast<long long>(r.plan->index),
                      r.plan->label.c_str(), r.run ? run_status_name(r.run->status) : "waiting",
                      static_cast<long long>(r.run ? r.run->steps : 0),
                      of_total.c_str(),
                      r.run ? cell(r.run->final_loss, "%.4f").c_str() : "-");
        lines.push_back(line);
    }
    return lines;
}

}  // namespace mantissa::cli
