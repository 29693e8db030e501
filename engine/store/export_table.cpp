// CSV and JSON exports of a run's table; see export_table.h. Numbers are written in their
// shortest exact form, so an export reads back to the same doubles.
#include "store/export_table.h"

#include <array>
#include <cmath>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/json_text.h"
#include "store/block_scale_codec.h"
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
        case ColumnKind::block_exponents: break;  // block_scale_steps is exported by write_block_scales
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
            // Nested deeper than JSON Mantissa writes (config/json_text.h): a damaged row, written
            // as its text, as text that does not parse is; dump() would recurse once per level.
            auto parsed = json_too_deep(text) ? nlohmann::json(nlohmann::json::value_t::discarded)
                                              : nlohmann::json::parse(text, nullptr, false);
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
        case ColumnKind::block_exponents: line += "null"; break;  // as above
    }
}

// The columns of a block_scale_steps export: the record's own, then its distribution
// (block_scale_histogram, the one the CLI and the GUI draw), then its exponents.
constexpr std::array<const char*, 18> block_scale_export_columns = {
    "step",         "layer",       "name",       "operand",      "format",
    "own",          "rows_total",  "rows",       "row_length",   "blocks_per_row",
    "blocks",       "zero_blocks", "nan_blocks", "min_exponent", "median_exponent",
    "max_exponent", "histogram",   "exponents"};

// A view's fields as CSV or JSON values, in block_scale_export_columns' order.
std::array<std::string, 18> block_scale_fields(const BlockScaleRecord& r, bool json) {
    const BlockScaleHistogram h = block_scale_histogram(r);
    auto text = [&](std::string_view s) { return json ? json_quote(s) : csv_field(s); };
    // The exponents' summary: empty (null) when no block has a finite scale.
    auto exponent = [&](int e) { return h.counts.empty() ? std::string(json ? "null" : "") : std::to_string(e); };
    // The non-empty exponents' counts: "-7:12 -6:40", or [[-7,12],[-6,40]].
    std::string histogram;
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
        if (h.counts[i] == 0) continue;
        const std::string e = std::to_string(h.min_exponent + static_cast<int>(i)), n = std::to_string(h.counts[i]);
        if (!histogram.empty()) histogram += json ? ',' : ' ';
        histogram += json ? '[' + e + ',' + n + ']' : e + ':' + n;
    }
    // The map, row-major: "-7 -6 zero nan", or [-7,-6,"zero","nan"].
    std::string exponents;
    for (std::size_t i = 0; i < r.exponents.size(); ++i) {
        if (i) exponents += json ? ',' : ' ';
        const std::int16_t e = r.exponents[i];
        if (e == BlockScaleRecord::zero_block)
            exponents += json ? "\"zero\"" : "zero";
        else if (e == BlockScaleRecord::nan_block)
            exponents += json ? "\"nan\"" : "nan";
        else
            exponents += std::to_string(e);
    }
    if (json) {
        histogram = '[' + histogram + ']';
        exponents = '[' + exponents + ']';
    }
    return {std::to_string(r.step),
            std::to_string(r.layer),
            text(r.name),
            text(matmul_operand_name(r.operand)),
            text(block_format_name(r.format)),
            json ? (r.own ? "true" : "false") : (r.own ? "1" : "0"),
            std::to_string(r.rows_total),
            std::to_string(r.rows),
            std::to_string(r.row_length),
            std::to_string(r.blocks_per_row),
            std::to_string(h.blocks()),
            std::to_string(h.zero_blocks),
            std::to_string(h.nan_blocks),
            exponent(h.min_exponent),
            exponent(h.median_exponent()),
            exponent(h.max_exponent()),
            std::move(histogram),
            std::move(exponents)};
}

// block_scale_steps: one row per view, decoded (a damaged row throws its sentence, as
// RunStore::block_scale_steps does).
void write_block_scales(Connection& db, std::int64_t run_id, bool json, std::ostream& out) {
    const TableSpec& table = block_scale_steps_table();
    Statement q(db, std::string("SELECT ") + column_list(table) + " FROM " + table.name +
                        " WHERE run_id = ? ORDER BY " + table.order_by);
    q.bind(1, run_id);
    std::string line;
    if (!json) {
        for (const char* c : block_scale_export_columns) {
            if (!line.empty()) line += ',';
            line += c;
        }
        out << line << "\r\n";
    } else {
        out << '[';
    }
    bool first = true;
    while (q.step()) {
        const auto fields = block_scale_fields(read_block_scale_row(q, run_id), json);
        line.assign(json ? (first ? "\n{" : ",\n{") : "");
        first = false;
        for (std::size_t c = 0; c < fields.size(); ++c) {
            if (c) line += ',';
            if (json) line += std::string("\"") + block_scale_export_columns[c] + "\":";
            line += fields[c];
        }
        line += json ? "}" : "\r\n";
        out << line;
    }
    if (json) out << (first ? "]\n" : "\n]\n");
}

// Every other table: its columns as they are stored.
void write_columns(Connection& db, std::int64_t run_id, const TableSpec& table, bool json, std::ostream& out) {
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
    if (&table == &block_scale_steps_table())
        write_block_scales(db, run_id, json, out);
    else
        write_columns(db, run_id, table, json, out);
    if (!out)
        throw Error(std::string("Writing the export of table ") + table.name +
                    " failed (the output stream reported an error).");
}

}  // namespace mantissa::store
