// The CSV reader (see csv_reader.h). The file is read whole and scanned once; numbers are parsed
// with std::from_chars (locale-independent, exact). Lines and columns in messages are 1-based, as
// an editor shows them. Quoting is limited to a field wrapped in double quotes (no embedded commas),
// which covers the numeric tables this reader is for.
#include "data/csv_reader.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string_view>

#include "printable_text.h"
#include "user_file.h"
#include "error.h"

namespace mantissa::data {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
    fields.clear();
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = line.find(',', start);
        if (comma == std::string_view::npos) {
            fields.push_back(trim(line.substr(start)));
            return;
        }
        fields.push_back(trim(line.substr(start, comma - start)));
        start = comma + 1;
    }
}

// What a field is. A field that reads as a number in full (nan, inf and 1e999 included) is a
// number for the header rule, so a first row holding one is data, and an error, not a header.
enum class Cell { number, non_finite, outside_fp32, not_a_number };

// Parses the whole field; `out` is set when the result is Cell::number (a finite value that a
// float holds: at most FLT_MAX in magnitude; smaller than the smallest float is fine, it rounds).
Cell parse_cell(std::string_view s, double& out) {
    // from_chars takes no '+', so one is removed here; but only one, and never before a '-':
    // "+-7" and "++7" are not numbers.
    if (!s.empty() && s.front() == '+') {
        s.remove_prefix(1);
        if (!s.empty() && (s.front() == '+' || s.front() == '-')) return Cell::not_a_number;
    }
    if (s.empty()) return Cell::not_a_number;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (end != s.data() + s.size()) return Cell::not_a_number;
    if (ec == std::errc::result_out_of_range) {  // beyond a double, too large or too small
        out = std::strtod(std::string(s).c_str(), nullptr);
        return std::isinf(out) ? Cell::outside_fp32 : Cell::number;
    }
    if (ec != std::errc()) return Cell::not_a_number;
    if (!std::isfinite(out)) return Cell::non_finite;
    return std::abs(out) > FLT_MAX ? Cell::outside_fp32 : Cell::number;
}

// A cell as a message quotes it: at most about 40 bytes, with NUL and other bytes that are not
// printable UTF-8 escaped (printable_text.h), so the message is never cut short at a NUL.
std::string shown(std::string_view s) {
    if (s.size() <= 40) return printable_text(s);
    std::size_t cut = 37;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    return printable_text(s.substr(0, cut)) + "...";
}

// The sentence for text that is UTF-16 or UTF-32 rather than UTF-8, or "": by its byte-order mark,
// or, without one, by NUL bytes in every second (or every fourth) place at the start.
std::string wide_text(std::string_view text) {
    if (text.starts_with(std::string_view("\xFF\xFE\0\0", 4)) || text.starts_with(std::string_view("\0\0\xFE\xFF", 4)))
        return "is UTF-32 text (it starts with a UTF-32 byte-order mark)";
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
        return "is UTF-16 text (it starts with a UTF-16 byte-order mark)";
    const std::size_t n = std::min<std::size_t>(text.size(), 256) & ~std::size_t{3};
    if (n < 4) return {};
    std::size_t zero_at[4] = {};
    for (std::size_t i = 0; i < n; ++i)
        if (text[i] == '\0') ++zero_at[i % 4];
    const std::size_t quarter = n / 4;
    const bool le16 = zero_at[1] == quarter && zero_at[3] == quarter && zero_at[0] + zero_at[2] < quarter;
    const bool be16 = zero_at[0] == quarter && zero_at[2] == quarter && zero_at[1] + zero_at[3] < quarter;
    if (le16 || be16) return "looks like UTF-16 text (every second byte is NUL)";
    return {};
}

// Throws for a NUL byte anywhere in `text` (the file read, BOM included; `body` is where the lines
// start), naming its line and column.
void refuse_nul(const std::string& path, std::string_view text, std::size_t body) {
    const std::size_t nul = text.find('\0');
    if (nul == std::string_view::npos) return;
    if (const std::string wide = wide_text(text); !wide.empty())
        throw Error("The CSV file " + path + " " + wide + "; save it as UTF-8 (or plain ASCII) text.");
    const std::size_t newline = text.rfind('\n', nul);
    const std::size_t line_start = newline == std::string_view::npos || newline < body ? body : newline + 1;
    const auto line = 1 + std::count(text.begin() + static_cast<std::ptrdiff_t>(body),
                                     text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    const auto column = 1 + std::count(text.begin() + static_cast<std::ptrdiff_t>(line_start),
                                       text.begin() + static_cast<std::ptrdiff_t>(nul), ',');
    std::size_t cell_start = text.rfind(',', nul);
    cell_start = cell_start == std::string_view::npos || cell_start < line_start ? line_start : cell_start + 1;
    std::size_t cell_end = text.find_first_of(",\n", nul);
    if (cell_end == std::string_view::npos) cell_end = text.size();
    throw Error(path + " line " + std::to_string(line) + ", column " + std::to_string(column) + ": '" +
                shown(text.substr(cell_start, cell_end - cell_start)) +
                "' holds a NUL byte (\\0); a CSV file is text, and this one holds binary data.");
}

bool is_blank(std::string_view line) {
    for (char c : line)
        if (c != ' ' && c != '\t' && c != '\r') return false;
    return true;
}

}  // namespace

CsvData read_csv(const std::string& path, int label_column) {
    // Only a regular file, at most 1 GiB: a device or a pipe would be read without end.
    const std::string text = read_user_file(path, "dataset.path " + path, kCsvFileLimit);
    try {
        return parse_csv(path, text, label_column);
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read the CSV file " + path + " (" + std::to_string(text.size()) +
                    " bytes); free some memory or use a smaller file.");
    }
}

CsvData parse_csv(const std::string& path, const std::string& text, int label_column) {
    std::string_view rest(text);
    if (const std::string wide = wide_text(rest); !wide.empty())
        throw Error("The CSV file " + path + " " + wide + "; save it as UTF-8 (or plain ASCII) text.");
    if (rest.starts_with("\xEF\xBB\xBF")) rest.remove_prefix(3);  // UTF-8 byte order mark
    refuse_nul(path, text, text.size() - rest.size());

    CsvData csv;
    std::vector<std::string_view> fields;
    std::size_t columns = 0;      // set by the first non-blank line
    std::size_t label = 0;        // index of the label column
    std::int64_t first_line = 0;  // line number of the first non-blank line
    std::int64_t line_no = 0;
    while (!rest.empty()) {
        const std::size_t nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        ++line_no;
        if (is_blank(line)) continue;
        split_fields(line, fields);

        if (columns == 0) {
            columns = fields.size();
            first_line = line_no;
            if (columns < 2)
                throw Error("The CSV file " + path + " line " + std::to_string(line_no) +
                            " has 1 column; it needs at least one feature column and a label.");
            const int n = static_cast<int>(columns);
            const int index = label_column < 0 ? n + label_column : label_column;
            if (index < 0 || index >= n)
                throw Error("The CSV file " + path + " has " + std::to_string(n) +
                            " columns, so dataset.label_column " + std::to_string(label_column) +
                            " does not name one (0.." + std::to_string(n - 1) + ", or -1 for the last).");
            label = static_cast<std::size_t>(index);
            csv.features = n - 1;
            bool header = false;
            double ignored = 0.0;
            for (std::string_view f : fields)
                if (parse_cell(f, ignored) == Cell::not_a_number) header = true;
            if (header) {
                for (std::string_view f : fields) csv.header.emplace_back(f);
                csv.label_name = shown(csv.header[label]);
                csv.label_name.insert(0, 1, '\'').push_back('\'');
                continue;
            }
            // Counted as dataset.label_column counts (from 0), not as a line's columns are (from 1).
            csv.label_name = "column " + std::to_string(label) + " (dataset.label_column, from 0)";
        }

        if (fields.size() != columns)
            throw Error("The CSV file " + path + " line " + std::to_string(line_no) + " has " +
                        std::to_string(fields.size()) + " columns, but line " + std::to_string(first_line) + " has " +
                        std::to_string(columns) + ".");
        for (std::size_t c = 0; c < columns; ++c) {
            double v = 0.0;
            const Cell cell = parse_cell(fields[c], v);
            if (cell != Cell::number) {
                const std::string at = path + " line " + std::to_string(line_no) + ", column " + std::to_string(c + 1) +
                                       ": '" + shown(fields[c]) + "' ";
                if (cell == Cell::non_finite)
                    throw Error(at + "is not a finite number; NaN and infinity are not allowed in a dataset.");
                if (cell == Cell::outside_fp32)
                    throw Error(at + "is outside the FP32 range (magnitudes up to 3.4e38).");
                throw Error(at + (fields[c].empty() ? "is not a number (the cell is empty)." : "is not a number."));
            }
            if (c == label)
                csv.labels.push_back(v);
            else
                csv.x.push_back(static_cast<float>(v));
        }
        ++csv.rows;
    }
    if (csv.rows == 0)
        throw Error("The CSV file " + path + " holds no data rows" + (csv.header.empty() ? "." : " (only a header)."));
    if (csv.rows < 2) throw Error("The CSV file " + path + " holds 1 data row; a dataset needs at least 2.");
    return csv;
}

Table csv_to_table(CsvData&& csv, const std::string& path, std::vector<std::string>& notices) {
    Table t;
    t.rows = csv.rows;
    t.features = csv.features;
    t.x = std::move(csv.x);

    bool integers = true;
    double max_label = 0.0;
    for (double v : csv.labels) {
        if (v < 0.0 || v >= kMaxCsvClasses || v != std::floor(v)) {
            integers = false;
            break;
        }
        max_label = std::max(max_label, v);
    }
    if (integers) {
        const auto differs = std::find_if(csv.labels.begin(), csv.labels.end(),
                                          [&](double v) { return v != csv.labels.front(); });
        if (differs == csv.labels.end())
            throw Error("The CSV file " + path + ": label " + csv.label_name + " holds only the class " +
                        std::to_string(static_cast<int>(csv.labels.front())) +
                        "; a classification needs at least 2 classes.");
        t.classes = static_cast<int>(max_label) + 1;
        t.outputs = t.classes;
        t.y.reserve(csv.labels.size());
        for (double v : csv.labels) t.y.push_back(static_cast<std::int32_t>(v));
        notices.push_back("CSV " + path + ": label " + csv.label_name + " holds integers 0.." +
                          std::to_string(t.classes - 1) + ", so this is classification with " +
                          std::to_string(t.classes) + " classes.");
    } else {
        t.classes = 0;
        t.outputs = 1;
        t.targets.reserve(csv.labels.size());
        for (double v : csv.labels) t.targets.push_back(static_cast<float>(v));
        notices.push_back("CSV " + path + ": label " + csv.label_name + " holds values that are not class numbers 0.." +
                          std::to_string(kMaxCsvClasses - 1) + ", so this is regression with 1 output.");
    }
    return t;
}

}  // namespace mantissa::data
