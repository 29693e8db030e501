// The shape every benchmark suite reports in: a suite holds notes and tables; a table holds typed
// columns and rows of JSON values. One structure serves the aligned text tables, the --json
// document and the hand-over from the GUI process (`mantissa --bench-gui --json` prints a suite
// that `mantissa-cli bench` reads back), so the three never disagree.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mantissa::bench {

// How a column's numbers print: `decimals` after the point, then `suffix` ("x", "%"); `unit` is
// for JSON readers ("ms", "samples/s"). A string cell prints left-aligned; null prints "-".
struct Column {
    Column(std::string key_, std::string header_, std::string unit_ = {}, int decimals_ = 0, std::string suffix_ = {})
        : key(std::move(key_)), header(std::move(header_)), unit(std::move(unit_)), decimals(decimals_),
          suffix(std::move(suffix_)) {}
    std::string key;
    std::string header;
    std::string unit;
    int decimals = 0;
    std::string suffix;
};

struct Table {
    std::string name;    // stable key for scripts: "reference", "matmul"
    std::string title;   // one line above the table
    std::vector<Column> columns;
    std::vector<nlohmann::json> rows;    // objects keyed by Column::key
    std::vector<std::string> notes;      // lines under the table
};

struct SuiteResult {
    std::string name;                    // "engine", "numeric", ...
    std::string title;
    bool skipped = false;                // nothing measured: `notes` say why
    std::vector<std::string> notes;      // lines under the suite's title
    std::vector<Table> tables;
    double seconds = 0;                  // how long the suite took
};

nlohmann::json to_json(const SuiteResult& s);
// The suite `to_json` wrote. Throws mantissa::Error, one sentence naming the key that is missing or
// of the wrong type and what it must be, with `where` (the suite's place in a document) before it:
// "suites.engine.tables[0].rows: expected an array of row objects, got a string (\"x\")".
SuiteResult suite_from_json(const nlohmann::json& j, const std::string& where = "suite");

// A whole `mantissa-cli bench --json` document checked: an object with at least one suite under
// "suites" (each as suite_from_json reads it), and each other key it writes, where present, of the
// type it writes ("date" a string, "threads" a whole number, ...; a "suite_order" naming only
// suites it holds). Throws mantissa::Error naming the key, as suite_from_json does.
void check_document(const nlohmann::json& doc);

// The suite as aligned text tables.
std::string render_text(const SuiteResult& s);

// Cell helpers: a number, or null when not finite (printed "-").
nlohmann::json number_or_null(double v);

}  // namespace mantissa::bench
