// JSON text -> nlohmann::json, with a problem told as one plain sentence instead of an exception.
//
// Used for experiment files and --set values. Stricter than json::parse in one way: a key that
// appears twice in one object is refused, naming its dotted path (json::parse would keep the last).
// Comments (// and /* */) are allowed. Built on nlohmann's public SAX interface only, so it does
// not depend on the library's internals. A pure function, callable from any thread.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace mantissa {

// What went wrong while parsing, as a sentence without the file name and without a final full stop:
//   syntax:      "line 1, column 18: expected a value, found 'NaN'; NaN and Infinity are not JSON"
//   not syntax:  "line 1, column 16: the number 1e999 is too large (a number must lie within ...)"
//                "key dataset.kind appears twice" (no position: the parser gives none to a key)
struct JsonProblem {
    bool found = false;
    std::string sentence;
    bool syntax = false;  // not JSON at all (--set then takes the text as a bare word)
};

// Parses `text` into `out`. On success the problem is not found and `out` is exactly what
// json::parse(text, nullptr, true, true) gives (the same integer, unsigned and float kinds); on
// failure `out` is unspecified and the problem says why.
JsonProblem parse_json(const std::string& text, nlohmann::json& out);

}  // namespace mantissa
