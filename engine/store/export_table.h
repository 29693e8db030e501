// Writing one table of one run as CSV (RFC 4180) or JSON (an array of objects), streamed row by
// row from SQLite. The value formats are documented in docs/schema.md, "Exports".
#pragma once

#include <cstdint>
#include <iosfwd>

#include "store/schema.h"

namespace mantissa::store {

class Connection;

void write_table_export(Connection& db, std::int64_t run_id, const TableSpec& table, bool json, std::ostream& out);

// A field quoted as RFC 4180 asks: in double quotes (inner quotes doubled) when it holds a comma,
// a quote, a line break, or leading or trailing spaces; as it is otherwise.
std::string csv_field(std::string_view text);

}  // namespace mantissa::store
