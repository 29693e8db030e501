// JSON text -> nlohmann::json, with a problem told as one plain sentence instead of an exception.
//
// Used for experiment files and --set values. Stricter than json::parse in four ways: a key that
// appears twice in one object is refused, naming its dotted path and where it appears the second
// time (json::parse would keep the last); a number that is not 0 as written but reads as 0
// (1e-400) is refused where it is written (json::parse would give 0);
// a NUL byte anywhere in the text is refused at its line and column (json::parse stops there as if
// the text ended, ignoring the rest), as is UTF-16 or UTF-32 text; and a key or string holding
// \u0000 is refused (a NUL would cut a name or a path short).
// Arrays and objects nested more than max_json_depth deep are refused where the first too deep one
// opens: the parser itself keeps no stack, but copying, comparing or writing a value recurses once
// per level, so a hostile [[[[... would overflow the stack of whoever handles it next.
// Comments (// and /* */) are allowed. Built on nlohmann's public SAX interface only, so it does
// not depend on the library's internals. A pure function, callable from any thread.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace mantissa {

// What went wrong while parsing, as a sentence without the file name and without a final full stop.
// A syntax error names the mistake and where it is (columns count characters, from 1):
//   "line 1, column 2: expected a key in double quotes, found 'a' in single quotes; JSON strings
//    take double quotes"
//   "line 4, column 3: expected ',' or '}', found the string \"lr\"; a comma is missing before it"
//   "line 9, column 1: the text ends before the object opened at line 2, column 12 is closed with '}'"
//   "line 1, column 18: expected a value, found 'NaN'; NaN and Infinity are not JSON: write a finite number"
// Not syntax (valid JSON that is refused):
//   "line 1, column 16: the number 1e999 is too large (a number must lie within about ±1.8e308)"
//   "line 3, column 5: key dataset.kind appears twice" (at its second appearance)
//   "line 1, column 17: the number 1e-400 is too small: it is not 0, but it would be read as 0 (...)"
//   "line 1, column 1030: model.layers[0].layers[0]...layers[0] opens an array or object 513 levels
//    deep; at most 512 levels of arrays and objects inside each other are read"
//   "line 2, column 9: the string \"a\u0000b\" holds \u0000, a NUL character, which a key, a name or
//    a path cannot hold"
// Not readable as text (syntax: true):
//   "line 3, column 7: a NUL byte (\0), which JSON text cannot hold: the file is binary or damaged"
//   "it is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8"
// Bytes quoted from the text that are not printable UTF-8 are escaped (\0, \xE9).
// A UTF-8 byte-order mark at the start is accepted (as json::parse does) and counts for no column.
// The deepest nesting of arrays and objects parse_json reads (the top-level value is level 1): far
// beyond any file Mantissa reads (an experiment's deepest model.layers, 32 residual blocks inside each
// other, is about 70), and little stack for the recursive copies and writes that follow.
inline constexpr int max_json_depth = 512;

struct JsonProblem {
    bool found = false;
    std::string sentence;
    bool syntax = false;  // not JSON at all (--set then takes the text as a bare word)
};

// Whether `text` opens an array or object more than max_json_depth levels deep, by a scan that
// builds nothing (any depth is safe to ask about): for JSON text Mantissa wrote and reads back (a
// store's config_json), checked before json::parse is trusted with it; parse_json then says where.
bool json_too_deep(std::string_view text);

// Parses `text` into `out`. On success the problem is not found and `out` is exactly what
// json::parse(text, nullptr, true, true) gives (the same integer, unsigned and float kinds); on
// failure `out` is unspecified and the problem says why.
JsonProblem parse_json(const std::string& text, nlohmann::json& out);

}  // namespace mantissa
