// Rendering and (de)serialising suite results: see report.h. Reading back checks every key it
// uses for its type before using it (a saved document is a file a person may have edited), so a
// wrong one is a sentence naming it, never a JSON library's exception or a "?" in the tables.
#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "error.h"
#include "printable_text.h"

namespace mantissa::bench {

namespace {

using json = nlohmann::json;

// "a string (\"abc\")", "an array", "null": what a value is, for the sentences below.
std::string kind_of(const json& v) {
    const auto quoted = [&] { return shortened_text(v.dump(-1, ' ', false, json::error_handler_t::replace), 20); };
    switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean (" + quoted() + ")";
    case json::value_t::string: return "a string (" + quoted() + ")";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number (" + quoted() + ")";
    default: return "something else";
    }
}

// Reads one object's keys, each checked for its type; `where` is the object's place in the
// document ("suites.engine"; "" for the document itself), which every sentence starts with.
class Keys {
public:
    Keys(const json& object, std::string where, const char* what) : m_j(object), m_where(std::move(where)) {
        if (!m_j.is_object())
            fail(m_where.empty() ? "the document" : m_where, std::string("expected ") + what + ", got " + kind_of(m_j));
    }
    // The key's place, for a sentence or for the Keys of a value inside it.
    std::string at(const std::string& key) const {
        return (m_where.empty() ? "" : m_where + ".") + shortened_text(key, 30);
    }
    const json* find(const std::string& key) const {
        const auto it = m_j.find(key);
        return it == m_j.end() ? nullptr : &*it;
    }
    const json& required(const std::string& key, const char* what) const {
        const json* v = find(key);
        if (!v)
            throw Error((m_where.empty() ? "the document" : m_where) + " has no \"" + shortened_text(key, 30) +
                        "\", which must be " + what);
        return *v;
    }
    std::string text(const std::string& key, const std::string& otherwise, bool needed = false) const {
        const json* v = needed ? &required(key, "a string") : find(key);
        if (!v) return otherwise;
        if (!v->is_string()) wrong(key, "a string", *v);
        return v->get<std::string>();
    }
    bool flag(const std::string& key) const {
        const json* v = find(key);
        if (v && !v->is_boolean()) wrong(key, "true or false", *v);
        return v && v->get<bool>();
    }
    double number(const std::string& key) const {
        const json* v = find(key);
        if (v && !v->is_number()) wrong(key, "a number", *v);
        return v ? v->get<double>() : 0.0;
    }
    std::int64_t whole(const std::string& key, std::int64_t lo, std::int64_t hi) const {
        const json* v = find(key);
        if (!v) return lo;
        if (!v->is_number_integer() || v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi)
            wrong(key, ("a whole number from " + std::to_string(lo) + " to " + std::to_string(hi)).c_str(), *v);
        return v->get<std::int64_t>();
    }
    std::vector<std::string> texts(const std::string& key) const {
        std::vector<std::string> out;
        const json* v = find(key);
        if (!v) return out;
        if (!v->is_array()) wrong(key, "an array of strings", *v);
        for (std::size_t i = 0; i < v->size(); ++i) {
            if (!(*v)[i].is_string())
                fail(at(key) + "[" + std::to_string(i) + "]", "expected a string, got " + kind_of((*v)[i]));
            out.push_back((*v)[i].get<std::string>());
        }
        return out;
    }
    const json& array(const std::string& key, const char* what, bool needed) const {
        static const json empty = json::array();
        const json* v = needed ? &required(key, what) : find(key);
        if (!v) return empty;
        if (!v->is_array()) wrong(key, what, *v);
        return *v;
    }
    [[noreturn]] void wrong(const std::string& key, const char* what, const json& v) const {
        fail(at(key), std::string("expected ") + what + ", got " + kind_of(v));
    }
    [[noreturn]] static void fail(const std::string& where, const std::string& what) {
        throw Error(where + ": " + what);
    }

private:
    const json& m_j;
    std::string m_where;
};

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

SuiteResult suite_from_json(const nlohmann::json& j, const std::string& where) {
    const Keys k(j, where, "a suite object ({\"name\": ..., \"tables\": [...]})");
    SuiteResult s;
    s.name = k.text("name", "", true);
    s.title = k.text("title", s.name);
    s.skipped = k.flag("skipped");
    s.notes = k.texts("notes");
    s.seconds = k.number("seconds");
    const json& tables = k.array("tables", "an array of table objects", false);
    for (std::size_t i = 0; i < tables.size(); ++i) {
        const std::string table_at = k.at("tables") + "[" + std::to_string(i) + "]";
        const Keys kt(tables[i], table_at, "a table object ({\"name\": ..., \"columns\": [...], \"rows\": [...]})");
        Table t;
        t.name = kt.text("name", "", true);
        t.title = kt.text("title", "");
        const json& columns = kt.array("columns", "an array of column objects", true);
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const Keys kc(columns[c], kt.at("columns") + "[" + std::to_string(c) + "]",
                          "a column object ({\"key\": ..., \"header\": ...})");
            t.columns.push_back({kc.text("key", "", true), kc.text("header", ""), kc.text("unit", ""),
                                 static_cast<int>(kc.whole("decimals", 0, 20)), kc.text("suffix", "")});
        }
        const json& rows = kt.array("rows", "an array of row objects", true);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (!rows[r].is_object())
                Keys::fail(kt.at("rows") + "[" + std::to_string(r) + "]", "expected a row object, got " + kind_of(rows[r]));
            t.rows.push_back(rows[r]);
        }
        t.notes = kt.texts("notes");
        s.tables.push_back(std::move(t));
    }
    return s;
}

void check_document(const nlohmann::json& doc) {
    const Keys k(doc, "", "a JSON object ({\"tool\": \"mantissa-cli bench\", ..., \"suites\": {...}})");
    if (const json* tool = k.find("tool"); tool && k.text("tool", "") != "mantissa-cli bench")
        Keys::fail("tool", "expected \"mantissa-cli bench\", got " + kind_of(*tool));
    for (const char* key : {"app_version", "git", "date"}) k.text(key, "");
    for (const char* key : {"quick", "threads_given"}) k.flag(key);
    k.whole("threads", 0, 1 << 20);
    if (const json* machine = k.find("machine")) {
        const Keys km(*machine, "machine", "an object ({\"cpu\": ..., \"logical_cpus\": ...})");
        for (const char* key : {"cpu", "onednn", "isa", "os"}) km.text(key, "");
        km.whole("logical_cpus", 0, 1 << 20);
    }
    const char* suites_are = "an object of suite results ({\"engine\": {...}, ...})";
    const json& suites = k.required("suites", suites_are);
    if (!suites.is_object()) k.wrong("suites", suites_are, suites);
    if (suites.empty()) throw Error("its \"suites\" is an empty object: the document holds no suite results");
    for (const auto& [name, suite] : suites.items()) suite_from_json(suite, k.at("suites") + "." + shortened_text(name, 30));
    std::set<std::string> named;
    const std::vector<std::string> order = k.texts("suite_order");
    for (std::size_t i = 0; i < order.size(); ++i) {
        const std::string at = "suite_order[" + std::to_string(i) + "]", name = shortened_text(order[i], 30);
        if (!suites.contains(order[i])) Keys::fail(at, "names \"" + name + "\", a suite that \"suites\" does not hold");
        if (!named.insert(order[i]).second) Keys::fail(at, "names \"" + name + "\" a second time");
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
