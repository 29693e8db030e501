// Internal to train/json_text.cpp: the one sentence told for a JSON parse error.
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

}  // namespace mantissa
