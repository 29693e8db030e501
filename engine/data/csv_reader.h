// The CSV reader: numeric feature columns and one label column, comma separated, with an optional
// header row. The whole file is parsed before anything is decided, so a bad cell anywhere is
// reported with its file, line and column, and the label column's contents decide the task:
// integers 0..K-1 make a classification set with K classes, anything else a regression set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/table.h"

namespace mantissa::data {

// Integer labels at or above this are taken as regression targets, not class numbers.
inline constexpr int kMaxCsvClasses = 1000;

struct CsvData {
    std::int64_t rows = 0;
    int features = 0;
    std::vector<std::string> header;  // column names; empty when the file has no header row
    std::string label_name;           // the label column's header, or "column N (dataset.label_column, from 0)"
    std::vector<float> x;             // (rows, features), the non-label columns in file order
    std::vector<double> labels;       // (rows)
};

// Parses `path`. label_column is 0-based; negative counts from the end (-1: the last column).
// Blank lines are skipped; the first non-blank line is a header when any of its fields is not a
// number (nan, inf and 1e999 count as numbers, so such a line is data and an error). Every cell must
// be finite and within the FP32 range (one leading '+' is allowed: "+7", but not "+-7"); the file
// must be a regular file of at most 1 GiB (read_user_file, which refuses a larger one by its size
// before reading) with at least 2 data rows. Throws mantissa::Error naming the file, line and
// column of the first bad cell.
CsvData read_csv(const std::string& path, int label_column);

// read_csv's parsing of `text`, the contents of `path` (which only names the file in messages).
// Text that is UTF-16 or UTF-32 (by its byte-order mark or its NUL pattern) and a NUL byte
// anywhere are refused, naming the encoding, or the line and column; cells are quoted with
// unprintable bytes escaped (\0, \xFF).
CsvData parse_csv(const std::string& path, const std::string& text, int label_column);

// Turns parsed CSV data into a Table: classification when every label is an integer in
// [0, kMaxCsvClasses), else regression with one output; a classification needs at least 2
// different labels. Appends one sentence to `notices` saying which it chose and why.
Table csv_to_table(CsvData&& csv, const std::string& path, std::vector<std::string>& notices);

}  // namespace mantissa::data
