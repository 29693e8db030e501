// CSV and JSON exports of a run's table; see export_table.h. Numbers are written in their
// shortest exact form, so an export reads back to the same doubles.
#include "store/export_table.h"

#include <cmath>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "store/histogram_codec.h"
#include "store/sqlite_db.h"
#include "store/store_util.h"

namespace mantissa::store {

namespace {

// Non-zero bins as (exponent, count) pairs.
template <typename F>
void for_each_bin(std::span<const std::uint8_t> blob, F&& f) {
    ExponentHistogram h;
    if (!decode_histogram(blob, h)) return;
    for (int i = 0; i < ExponentHistogram::bins; ++i)
        if (h.counts[i]) f(ExponentHistogram::min_exponent + i, h.counts[i]);
}

void write_csv_value(const Statement& q, int col, ColumnKind kind, std::string& line) {
    if (q.column_is_null(col)) return;  // an empty field: NULL (NaN for a real column)
    switch (kind) {
        case ColumnKind::integer:
        case ColumnKind::boolean: line += std::to_string(q.column_int(col)); break;
        case ColumnKind::real: line += format_double(q.column_double(col)); break;
        case ColumnKind::text:
        case ColumnKind::json_text: line += csv_field(q.column_text(col)); break;
        case ColumnKind::histogram: {
            std::string bins;
            for_each_bin(q.column_blob(col), [&](int e, std::uint32_t c) {
                if (!bins.empty()) bins += ' ';
                bins += std::to_string(e) + ':' + std::to_string(c);
            });
            line += bins;
            break;
        }
    }
}

void write_json_value(const Statement& q, int col, ColumnKind kind, std::string& line) {
    if (q.column_is_null(col)) {
        line += "null";
        return;
    }
    switch (kind) {
        case ColumnKind::integer: line += std::to_string(q.column_int(col)); break;
        case ColumnKind::boolean: line += q.column_int(col) ? "true" : "false"; break;
        case ColumnKind::real: {
            double v = q.column_double(col);
            line += std::isfinite(v) ? format_double(v) : "null";
            break;
        }
        case ColumnKind::text: line += json_quote(q.column_text(col)); break;
        case ColumnKind::json_text: {
            std::string text = q.column_text(col);
            auto parsed = nlohmann::json::parse(text, nullptr, false);
            line += parsed.is_discarded() ? json_quote(text)
                                          : parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            break;
        }
        case ColumnKind::histogram: {
            line += '[';
            bool first = true;
            for_each_bin(q.column_blob(col), [&](int e, std::uint32_t c) {
                if (!first) line += ',';
                first = false;
                line += '[' + std::to_string(e) + ',' + std::to_string(c) + ']';
            });
            line += ']';
            break;
        }
    }
}

}  // namespace

std::string csv_field(std::string_view text) {
    bool quote = !text.empty() && (text.front() == ' ' || text.back() == ' ');
    for (char c : text)
        if (c == ',' || c == '"' || c == '\n' || c == '\r') quote = true;
    if (!quote) return std::string(text);
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

void write_table_export(Connection& db, std::int64_t run_id, const TableSpec& table, bool json, std::ostream& out) {
    Statement q(db, std::string("SELECT ") + column_list(table) + " FROM " + table.name +
                        " WHERE run_id = ? ORDER BY " + table.order_by);
    q.bind(1, run_id);
    const int n = static_cast<int>(table.columns.size());
    std::string line;
    if (!json) {
        for (int c = 0; c < n; ++c) line += (c ? "," : "") + std::string(table.columns[c].name);
        out << line << "\r\n";
        while (q.step()) {
            line.clear();
            for (int c = 0; c < n; ++c) {
                if (c) line += ',';
                write_csv_value(q, c, table.columns[c].kind, line);
            }
            line += "\r\n";
            out << line;
        }
    } else {
        out << '[';
        bool first = true;
        while (q.step()) {
            line.assign(first ? "\n{" : ",\n{");
            first = false;
            for (int c = 0; c < n; ++c) {
                if (c) line += ',';
                line += '"';
                line += table.columns[c].name;
                line += "\":";
                write_json_value(q, c, table.columns[c].kind, line);
            }
            line += '}';
            out << line;
        }
        out << (first ? "]\n" : "\n]\n");
    }
    if (!out)
        throw Error(std::string("Writing the export of table ") + table.name +
                    " failed (the output stream reported an error).");
}

}  // namespace mantissa::store
