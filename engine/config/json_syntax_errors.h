// Internal to config/json_text.cpp: the one sentence told for a JSON parse error.
//
// Split from the parser because the wording is most of the code and none of the data path (it
// runs only after a parse has failed), and so that it takes plain values, not nlohmann types: this
// header pulls in no JSON library. The sentences and their shapes are documented in json_text.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mantissa {

// The sentence (no file name, no final full stop) for the error nlohmann reported through
// json_sax::parse_error while reading `text`: `offset` and `last_token` as it passed them, `id`
// and `what` of its exception. id 406 (out_of_range) is a number beyond a double, told at the
// number's start; any other id is a syntax error, told at the mistake a person made (see
// json_syntax_errors.cpp). The result is always valid UTF-8, whatever bytes `text` holds.
// A pure function, callable from any thread.
std::string describe_parse_error(std::string_view text, std::size_t offset, std::string_view last_token, int id,
                                 std::string_view what);

// The sentence (no file name, no final full stop) for text that JSON cannot even be read from,
// checked before parsing, or "" when there is none: UTF-16 or UTF-32 text (by its byte-order mark,
// or a NUL in every second byte), or a NUL byte anywhere, told at its line and column (nlohmann
// would take a NUL for the end of the text and ignore everything after it).
std::string describe_encoding_problem(std::string_view text);

// The offset in `text` of the first array or object that opens more than `limit` levels deep, by a
// plain scan (strings and comments skipped, brackets counted, nothing built); npos when none does.
// For text that parses, that is where parse_json refuses it.
std::size_t too_deep_offset(std::string_view text, int limit);

// The sentence for an array or object that opens more than `limit` levels deep (parse_json refuses
// it there): its line and column, the first such opening in `text`, and `path`, where it lies in
// the document ("model.layers[0].layers[0]"), shortened when long; `array`: an array, not an object.
std::string describe_too_deep(std::string_view text, int limit, std::string_view path, bool array);

// The sentence for a key that appears twice in its object: `nth` is its place among the keys of
// `text` in reading order (from 1; the text up to it parsed, so a plain reading finds it), told at
// its line and column with `dotted`, the keys of the objects around it and its own.
std::string describe_duplicate_key(std::string_view text, std::size_t nth, std::string_view dotted);

// The sentence for a number that is not zero as written but reads as 0 (1e-400: below the
// smallest double), `nth` among the numbers of `text` in reading order (from 1), at its line and
// column; `written` is the number as the parser read it.
std::string describe_number_too_small(std::string_view text, std::size_t nth, std::string_view written);

// The sentence for a string or key that holds \u0000 (valid JSON, but a NUL would cut a name, a
// key or a path short wherever it becomes a C string), at the first such escape.
std::string describe_nul_in_string(std::string_view text);

}  // namespace mantissa
