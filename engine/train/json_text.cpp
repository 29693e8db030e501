// JSON text -> nlohmann::json for experiment files and --set values (see json_text.h).
//
// The DOM is built by a SAX handler of our own on nlohmann's public json_sax interface: a stack of
// the open objects and arrays, each value placed at the end of the open array or under the open
// object's current key (as nlohmann's own DOM parser does). The handler refuses a key already
// present in its object, and keeps a parse error as a plain sentence ("line L, column C: expected
// ..., found ...") instead of throwing; nlohmann's messages are reworded here, so the sentences
// depend only on the documented shape of json::parse_error's what().
#include "train/json_text.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mantissa {

using json = nlohmann::json;

namespace {

// ---- nlohmann's messages in plain words

// nlohmann's names of tokens ("string literal", "'}'") in plain words.
std::string token_words(std::string_view name, bool key) {
    if (name == "string literal") return key ? "a key in double quotes" : "a string";
    if (name == "number literal") return "a number";
    if (name == "true literal") return "true";
    if (name == "false literal") return "false";
    if (name == "null literal") return "null";
    if (name == "end of input") return "the end of the text";
    if (name == "'[', '{', or a literal") return "a value";
    return std::string(name);
}

bool looks_non_finite(std::string_view token) {
    std::string t;
    for (char c : token) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!t.empty() && (t.front() == '-' || t.front() == '+')) t.erase(0, 1);
    return t == "nan" || t == "inf" || t == "infinity";
}

// Rewords nlohmann's "syntax error while parsing CONTEXT - DETAIL[; expected TOKEN]", where DETAIL
// is "unexpected TOKEN" or "LEXER MESSAGE; last read: 'TEXT'".
std::string plain_syntax_error(const std::string& what, const std::string& last_token) {
    std::string_view m(what);
    if (const auto p = m.find("syntax error"); p != std::string_view::npos) m.remove_prefix(p);
    std::string context;
    if (const auto p = m.find("while parsing "); p != std::string_view::npos) {
        const auto dash = m.find(" - ", p);
        if (dash != std::string_view::npos) context = std::string(m.substr(p + 14, dash - p - 14));
    }
    const bool key = context == "object key";
    std::string_view detail = m;
    if (const auto dash = m.find(" - "); dash != std::string_view::npos) detail = m.substr(dash + 3);
    std::string expected;
    const auto last_read = detail.find("; last read: ");
    if (const auto e = detail.rfind("; expected ");
        e != std::string_view::npos && (last_read == std::string_view::npos || e > last_read)) {
        expected = token_words(detail.substr(e + 11), key);
        detail = detail.substr(0, e);
    }
    std::string found;
    std::string why;
    if (detail.starts_with("unexpected ")) {
        found = token_words(detail.substr(11), false);
    } else {
        const std::string_view lexer = detail.substr(0, last_read);
        found = "'" + last_token + "'";
        if (looks_non_finite(last_token))
            why = "; NaN and Infinity are not JSON: write a finite number";
        else if (lexer == "invalid literal")
            why =
                ", which is not a JSON value (a value is a number, a \"string\", true, false, null, [...] or "
                "{...}; NaN and Infinity are not JSON)";
        else if (lexer.starts_with("invalid number; "))
            why = ", which is not a number (" + std::string(lexer.substr(16)) + ")";
        else
            why = " (" + std::string(lexer) + ")";
        if (expected.empty()) expected = key ? "a key in double quotes" : "a value";
    }
    if (expected.empty()) return "found " + found + why;
    return "expected " + expected + ", found " + found + why;
}

// "line L, column C" of the byte offset `offset` (characters read so far), as nlohmann counts them.
std::string line_column(std::string_view text, std::size_t offset) {
    // nlohmann counts the end of the text as one character read, so `offset` may pass the end.
    const std::string_view before = text.substr(0, std::min(offset, text.size()));
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const auto nl = before.rfind('\n');
    const std::size_t column = nl == std::string_view::npos ? offset : offset - nl - 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// The whole word the lexer stopped in (it read only "N" of NaN, "-I" of -Infinity), or the one
// just before the character it stopped at ("tru" of tru}); `last_token` when there is none.
std::string word_at(std::string_view text, std::size_t offset, const std::string& last_token) {
    const auto word_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
    };
    std::size_t i = std::min(offset, text.size());
    if (i > 0 && !word_char(text[i - 1]) && i > 1 && word_char(text[i - 2])) --i;
    if (i == 0 || !word_char(text[i - 1])) return last_token;
    std::size_t start = i - 1, end = i;
    while (start > 0 && word_char(text[start - 1])) --start;
    while (end < text.size() && word_char(text[end])) ++end;
    return std::string(text.substr(start, std::min<std::size_t>(end - start, 24)));
}

// ---- the DOM builder

// Builds the parsed value into `root` from nlohmann's SAX events. Invariant: open_ holds the
// objects and arrays entered and not yet left, outermost first; each pointer stays valid while its
// container is open, because nothing is added to a container while one of its children is open
// (an array's elements do not move; an object's are nodes of a std::map).
class DomBuilder final : public json::json_sax_t {
public:
    DomBuilder(json& root, std::string_view text) : root_(root), text_(text) {}

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t v, const string_t& /*as written*/) override { return value(v); }
    bool string(string_t& v) override { return value(std::move(v)); }
    bool binary(binary_t& v) override { return value(std::move(v)); }  // binary formats only

    bool start_object(std::size_t /*elements, or -1*/) override { return enter(json::object()); }
    bool start_array(std::size_t /*elements, or -1*/) override { return enter(json::array()); }
    bool end_object() override { return leave(); }
    bool end_array() override { return leave(); }

    bool key(string_t& k) override {
        Open& object = open_.back();
        if (object.node->contains(k)) {
            std::string dotted;  // the keys of the enclosing objects; arrays add nothing
            for (const Open& outer : open_)
                if (&outer != &object && outer.node->is_object()) dotted += outer.key + ".";
            problem_ = {true, "key " + dotted + k + " appears twice", false};
            return false;
        }
        object.key = std::move(k);
        return true;
    }

    bool parse_error(std::size_t offset, const std::string& last_token, const json::exception& ex) override {
        if (ex.id == 406) {  // out_of_range: a number beyond a double; `offset` is just after it
            const std::size_t start = offset >= last_token.size() ? offset - last_token.size() + 1 : offset;
            problem_ = {true,
                        line_column(text_, start) + ": the number " + last_token +
                            " is too large (a number must lie within about ±1.8e308)",
                        false};
        } else {
            problem_ = {
                true,
                line_column(text_, offset) + ": " + plain_syntax_error(ex.what(), word_at(text_, offset, last_token)),
                true};
        }
        return false;  // stop: the interface requires it
    }

    const JsonProblem& problem() const { return problem_; }

private:
    struct Open {
        json* node;       // an object or an array
        std::string key;  // in an object: the key whose value comes next
    };

    // Puts `v` where the next value goes (the root, the end of the open array, or the open
    // object's key) and returns where it now lies.
    json* place(json v) {
        if (open_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Open& in = open_.back();
        if (in.node->is_array()) {
            in.node->push_back(std::move(v));
            return &in.node->back();
        }
        json& slot = (*in.node)[in.key];
        slot = std::move(v);
        return &slot;
    }
    bool value(json v) {
        place(std::move(v));
        return true;
    }
    bool enter(json empty) {
        open_.push_back({place(std::move(empty)), {}});
        return true;
    }
    bool leave() {
        open_.pop_back();
        return true;
    }

    json& root_;
    std::string_view text_;
    std::vector<Open> open_;
    JsonProblem problem_;
};

}  // namespace

JsonProblem parse_json(const std::string& text, json& out) {
    DomBuilder builder(out, text);
    bool ok = false;
    try {
        ok = json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/true);
    } catch (const json::exception& err) {
        return {true, err.what(), true};
    }
    if (ok) return {};
    if (builder.problem().found) return builder.problem();
    return {true, "it cannot be parsed", true};
}

}  // namespace mantissa
