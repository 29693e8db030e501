// Fuzz target: the experiment file's JSON parser (config/json_text: parse_json, and the wording of
// its errors in config/json_syntax_errors). Held against nlohmann's own json::parse (comments
// allowed): what parse_json accepts, json::parse gives the same; text it calls not JSON
// (syntax) json::parse refuses too, unless it holds a NUL byte, where json::parse would stop.
// Every problem is one sentence. Corpus: tests/fuzz/corpus/fuzz_json_text (docs/fuzzing.md).
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "config/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    nlohmann::json ours;
    const mantissa::JsonProblem problem = mantissa::parse_json(text, ours);
    const nlohmann::json theirs = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (!problem.found) {
        if (theirs.is_discarded() || ours != theirs) fuzz::fail("parse_json accepted what json::parse reads otherwise", text);
        return 0;
    }
    fuzz::check_sentence(problem.sentence);
    if (problem.syntax && !theirs.is_discarded() && text.find('\0') == std::string::npos)
        fuzz::fail("a syntax error in text json::parse accepts", problem.sentence);
    return 0;
}
