// Rendering and (de)serialising suite results: see report.h.
#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "error.h"

namespace mantissa::bench {

namespace {

std::string cell_text(const nlohmann::json& v, const Column& c) {
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    if (v.is_number()) {
        const double d = v.get<double>();
        if (!std::isfinite(d)) return "-";
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", c.decimals, d);
        return buf + c.suffix;
    }
    return v.dump();
}

}  // namespace

nlohmann::json number_or_null(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const SuiteResult& s) {
    nlohmann::json tables = nlohmann::json::array();
    for (const Table& t : s.tables) {
        nlohmann::json columns = nlohmann::json::array();
        for (const Column& c : t.columns)
            columns.push_back({{"key", c.key}, {"header", c.header}, {"unit", c.unit}, {"decimals", c.decimals},
                               {"suffix", c.suffix}});
        tables.push_back({{"name", t.name}, {"title", t.title}, {"columns", columns}, {"rows", t.rows},
                          {"notes", t.notes}});
    }
    return {{"name", s.name},     {"title", s.title},   {"skipped", s.skipped},
            {"notes", s.notes},   {"tables", tables},   {"seconds", s.seconds}};
}

SuiteResult suite_from_json(const nlohmann::json& j) {
    try {
        SuiteResult s;
        s.name = j.at("name").get<std::string>();
        s.title = j.value("title", s.name);
        s.skipped = j.value("skipped", false);
        s.notes = j.value("notes", std::vector<std::string>{});
        s.seconds = j.value("seconds", 0.0);
        for (const auto& jt : j.value("tables", nlohmann::json::array())) {
            Table t;
            t.name = jt.at("name").get<std::string>();
            t.title = jt.value("title", "");
            for (const auto& jc : jt.at("columns"))
                t.columns.push_back({jc.at("key").get<std::string>(), jc.value("header", ""), jc.value("unit", ""),
                                     jc.value("decimals", 0), jc.value("suffix", "")});
            for (const auto& r : jt.at("rows")) t.rows.push_back(r);
            t.notes = jt.value("notes", std::vector<std::string>{});
            s.tables.push_back(std::move(t));
        }
        return s;
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("not a benchmark suite result: ") + e.what());
    }
}

std::string render_text(const SuiteResult& s) {
    std::string out = "== " + s.name + ": " + s.title + "\n";
    for (const auto& n : s.notes) out += "   " + n + "\n";
    for (const Table& t : s.tables) {
        out += "\n" + t.title + "\n";
        std::vector<std::vector<std::string>> cells;
        std::vector<std::size_t> width(t.columns.size());
        std::vector<bool> left(t.columns.size(), false);
        for (std::size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].header.size();
        for (const auto& row : t.rows) {
            std::vector<std::string> line;
            for (std::size_t c = 0; c < t.columns.size(); ++c) {
                const auto it = row.find(t.columns[c].key);
                const nlohmann::json v = it == row.end() ? nlohmann::json(nullptr) : *it;
                if (v.is_string()) left[c] = true;
                line.push_back(cell_text(v, t.columns[c]));
                width[c] = std::max(width[c], line.back().size());
            }
            cells.push_back(std::move(line));
        }
        auto pad = [](const std::string& text, std::size_t w, bool to_left) {
            const std::string fill(w > text.size() ? w - text.size() : 0, ' ');
            return to_left ? text + fill : fill + text;
        };
        std::string header;
        for (std::size_t c = 0; c < t.columns.size(); ++c)
            header += "  " + pad(t.columns[c].header, width[c], left[c]);
        while (!header.empty() && header.back() == ' ') header.pop_back();
        out += header + "\n";
        for (const auto& line : cells) {
            std::string l;
            for (std::size_t c = 0; c < line.size(); ++c) l += "  " + pad(line[c], width[c], left[c]);
            while (!l.empty() && l.back() == ' ') l.pop_back();
            out += l + "\n";
        }
        for (const auto& n : t.notes) out += "  " + n + "\n";
    }
    return out;
}

}  // namespace mantissa::bench
