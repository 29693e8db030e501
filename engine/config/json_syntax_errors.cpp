// The sentence for a JSON parse error: turns what nlohmann reported (where it stopped and the
// what() of its parse_error) and the text into one plain sentence naming the hand-editing mistake.
//
// It is kept apart from the DOM builder (config/json_text.cpp) because it is most of the parser's
// code and none of its data path: it runs only once a parse has failed. The sentence names the
// mistake a person made, not the token the parser choked on: nlohmann says where it stopped and
// what it was parsing (taken from the documented shape of parse_error's what()), and a lenient
// reading of the text (tokens that never fail: 'single-quoted' strings, bare words, strings cut at
// the end of their line, open brackets with their positions) says what stands there. So {'a': 1}
// reads "expected a key in double quotes, found 'a' in single quotes", not "found '{''". Positions
// are where the mistake is (the start of the bad word, the opening quote of an unclosed string, the
// backslash of a bad escape), in code points, as editors count. Pure functions, any thread.
#include "config/json_syntax_errors.h"

#include "printable_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

namespace mantissa {

namespace {

// ---- where: lines and columns

constexpr std::string_view kBom = "\xEF\xBB\xBF";  // a UTF-8 byte-order mark, which json::parse skips
constexpr std::size_t kNone = std::string_view::npos;

// "line L, column C" of the byte at `pos` (0-based; text.size() is just past the end). Columns
// count characters (UTF-8 code points) from 1, as editors do; a byte-order mark counts for nothing.
std::string where(std::string_view text, std::size_t pos) {
    pos = std::min(pos, text.size());
    const std::string_view before = text.substr(0, pos);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const auto nl = before.rfind('\n');
    std::size_t from = nl == kNone ? 0 : nl + 1;
    if (from == 0 && before.starts_with(kBom)) from = kBom.size();
    std::size_t column = 1;
    for (std::size_t i = from; i < pos; ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++column;  // not a continuation byte
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// The bytes of the well-formed UTF-8 character at `pos`, or 0 when none starts there.
std::size_t utf8_length(std::string_view text, std::size_t pos) {
    return utf8_char_length(text, pos);
}

// `s` as shown in a sentence: at most about 24 characters, "…" when cut.
std::string shown(std::string_view s) {
    if (s.size() <= 24) return std::string(s);
    std::size_t cut = 24;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return std::string(s.substr(0, cut)) + "…";
}

// ---- a lenient reading of the text, to find the mistake nlohmann stopped at

// One token as a person sees it. Reading never fails: a string ends at its closing quote or at
// the end of its line, a 'single-quoted string' is recognised only to be named, and a word is any
// run of other characters (a number, a literal, a bare word, NaN). Comments are skipped.
struct Token {
    enum Kind { punct, string, single_quoted, word } kind;
    std::size_t start;  // bytes [start, end) of the text
    std::size_t end;
    bool closed = true;  // a string: ends with its closing double quote
};

struct Reading {
    std::vector<Token> tokens;
    std::size_t open_comment = kNone;  // where a /* without its */ starts
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_punct(char c) {
    return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',';
}

Reading read_leniently(std::string_view text) {
    Reading r;
    const auto at = [&](std::size_t k) { return k < text.size() ? text[k] : '\0'; };
    std::size_t i = text.starts_with(kBom) ? kBom.size() : 0;
    while (i < text.size()) {
        const char c = text[i];
        const std::size_t start = i;
        if (is_space(c)) {
            ++i;
        } else if (c == '/' && at(i + 1) == '/') {
            i = std::min(text.find_first_of("\n\r", i), text.size());  // as nlohmann ends it
        } else if (c == '/' && at(i + 1) == '*') {
            const auto close = text.find("*/", i + 2);
            if (close == kNone) {
                r.open_comment = i;
                break;
            }
            i = close + 2;
        } else if (is_punct(c)) {
            r.tokens.push_back({Token::punct, start, ++i});
        } else if (c == '"') {
            bool closed = false;
            for (++i; i < text.size() && text[i] != '\n' && text[i] != '\r';) {
                if (text[i] == '"') {
                    closed = true;
                    ++i;
                    break;
                }
                i += text[i] == '\\' && at(i + 1) != '\n' && at(i + 1) != '\r' && i + 1 < text.size() ? 2 : 1;
            }
            r.tokens.push_back({Token::string, start, i, closed});
        } else if (const auto close = c == '\'' ? text.find_first_of("'\n", i + 1) : kNone;
                   close != kNone && text[close] == '\'') {
            i = close + 1;
            r.tokens.push_back({Token::single_quoted, start, i});
        } else {
            for (++i; i < text.size(); ++i) {
                const char d = text[i];
                if (is_space(d) || is_punct(d) || d == '"' || d == '\'' ||
                    (d == '/' && (at(i + 1) == '/' || at(i + 1) == '*')))
                    break;
            }
            r.tokens.push_back({Token::word, start, i});
        }
    }
    return r;
}

// The index of the token holding byte `pos`, or -1.
int token_at(const Reading& r, std::size_t pos) {
    for (std::size_t k = 0; k < r.tokens.size(); ++k) {
        const Token& t = r.tokens[k];
        if (t.start <= pos && (pos < t.end || (t.kind == Token::string && !t.closed && pos == t.end)))
            return static_cast<int>(k);
    }
    return -1;
}

// The word the lexer stopped in ("N" of NaN), or the one that ends just where it stopped ("tru" of
// tru}, which it read whole before failing at the '}'; "1." of 1."); -1 when there is none.
int word_at(const Reading& r, std::size_t pos) {
    const int k = token_at(r, pos);
    if (k >= 0 && (r.tokens[static_cast<std::size_t>(k)].kind == Token::word ||
                   r.tokens[static_cast<std::size_t>(k)].kind == Token::single_quoted))
        return k;
    for (std::size_t j = 0; j < r.tokens.size(); ++j)
        if (r.tokens[j].end == pos && r.tokens[j].kind == Token::word) return static_cast<int>(j);
    return k;
}

// The objects and arrays opened and not yet closed before byte `pos`, outermost first.
std::vector<const Token*> open_brackets(std::string_view text, const Reading& r, std::size_t pos) {
    std::vector<const Token*> open;
    for (const Token& t : r.tokens) {
        if (t.start >= pos) break;
        if (t.kind != Token::punct) continue;
        if (text[t.start] == '{' || text[t.start] == '[')
            open.push_back(&t);
        else if ((text[t.start] == '}' || text[t.start] == ']') && !open.empty())
            open.pop_back();
    }
    return open;
}

// ---- nlohmann's message, taken apart

// nlohmann's "syntax error while parsing CONTEXT - DETAIL[; expected TOKEN]", where DETAIL is
// "unexpected TOKEN" or "LEXER MESSAGE; last read: 'TEXT'".
struct Failure {
    std::string context;     // "value", "object key", "object separator" (the colon), "object", "array"
    std::string unexpected;  // nlohmann's name of the token it found ("string literal", "'}'"), or empty
    std::string lexer;       // else the lexer's message ("invalid literal", "invalid string: ...")
    std::string expected;    // nlohmann's name of the token it expected, or empty
};

Failure take_apart(std::string_view m) {
    Failure f;
    if (const auto p = m.find("syntax error"); p != kNone) m.remove_prefix(p);
    std::string_view detail = m;
    if (const auto p = m.find("while parsing "); p != kNone) {
        if (const auto dash = m.find(" - ", p); dash != kNone) {
            f.context = std::string(m.substr(p + 14, dash - p - 14));
            detail = m.substr(dash + 3);
        }
    }
    const auto last_read = detail.find("; last read: ");
    if (const auto e = detail.rfind("; expected "); e != kNone && (last_read == kNone || e > last_read)) {
        f.expected = std::string(detail.substr(e + 11));
        detail = detail.substr(0, e);
    }
    if (detail.starts_with("unexpected "))
        f.unexpected = std::string(detail.substr(11));
    else
        f.lexer = std::string(detail.substr(0, last_read));
    return f;
}

// What nlohmann was looking for, in plain words.
std::string expected_words(const Failure& f) {
    if (f.context == "object key") return "a key in double quotes";
    if (f.context == "object separator") return "':'";
    if (f.context == "object") return "',' or '}'";
    if (f.context == "array") return "',' or ']'";
    if (f.expected == "end of input") return "the end of the text";
    return "a value";
}

bool looks_non_finite(std::string_view token) {
    std::string t;
    for (char c : token) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!t.empty() && (t.front() == '-' || t.front() == '+')) t.erase(0, 1);
    return t == "nan" || t == "inf" || t == "infinity";
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// ---- the sentences

// One syntax error, seen in the text: what nlohmann said (`f`), the byte it stopped at (`p`,
// text.size() at the end of the text), and the lenient reading of the whole text.
class Explainer {
public:
    Explainer(std::string_view text, std::size_t p, Failure f)
        : text_(text), p_(p), f_(std::move(f)), r_(read_leniently(text)), expected_(expected_words(f_)) {}

    std::string sentence() const {
        if (f_.lexer.starts_with("invalid comment")) return bad_comment();
        if (f_.lexer.starts_with("invalid string")) return bad_string();
        if (f_.lexer.starts_with("invalid BOM"))
            return at(0, "the text starts with a broken byte-order mark; save the file as UTF-8");
        if (f_.unexpected.empty()) return bad_word();
        return bad_token();
    }

private:
    std::string at(std::size_t pos, const std::string& what) const { return where(text_, pos) + ": " + what; }
    std::string_view text_of(const Token& t) const { return text_.substr(t.start, t.end - t.start); }
    char char_at(std::size_t pos) const { return pos < text_.size() ? text_[pos] : '\0'; }

    std::string bad_comment() const {
        if (f_.lexer.find("missing closing") != kNone)
            return at(r_.open_comment != kNone ? r_.open_comment : p_, "the comment /* is not closed; end it with */");
        const std::size_t slash = p_ > 0 ? p_ - 1 : 0;
        return at(slash, "expected " + expected_ +
                             ", found '/', which starts no comment (a comment is // to the "
                             "end of the line, or /* ... */)");
    }

    std::string bad_string() const {
        const std::string_view why = std::string_view(f_.lexer).substr(std::min<std::size_t>(16, f_.lexer.size()));
        const int k = token_at(r_, p_);
        const Token* s = k >= 0 && r_.tokens[static_cast<std::size_t>(k)].kind == Token::string
                             ? &r_.tokens[static_cast<std::size_t>(k)]
                             : nullptr;
        const bool after_backslash = why == "forbidden character after backslash";
        const bool line_break = why.starts_with("control character U+000A") ||
                                why.starts_with("control character U+000D") ||
                                (after_backslash && (char_at(p_) == '\n' || char_at(p_) == '\r'));
        if (why == "missing closing quote" || line_break || (after_backslash && p_ >= text_.size())) {
            std::string_view written = s ? text_of(*s) : std::string_view();
            while (!written.empty() && is_space(written.back())) written.remove_suffix(1);
            const std::string start = s ? " that begins " + shown(written) : "";
            return at(s ? s->start : p_,
                      "the string" + start + " has no closing double quote" +
                          (line_break ? " on its line; a line break inside a string is written \\n" : ""));
        }
        if (why.starts_with("control character U+0009")) return at(p_, "a tab inside a string must be written \\t");
        if (why.starts_with("control character ")) {
            const auto must = why.find(" must be escaped to ");
            if (must != kNone)
                return at(p_, "the control character " + std::string(why.substr(18, must - 18)) +
                                  " inside a string must be written " + std::string(why.substr(must + 20)));
        }
        if (after_backslash) {
            const std::size_t slash = p_ > 0 ? p_ - 1 : 0;
            const auto c = static_cast<unsigned char>(char_at(p_));
            const std::size_t n = p_ < text_.size() ? utf8_length(text_, p_) : 0;
            const std::string escape = c == ' '    ? "a backslash followed by a space"
                                       : c == '\t' ? "a backslash followed by a tab"
                                       : c < 0x20  ? "a backslash followed by a control character"
                                       : n == 0    ? "a backslash followed by a byte that is not UTF-8 text"
                                                   : "\\" + std::string(text_.substr(p_, n));
            return at(slash, escape +
                                 " is not an escape JSON knows: the escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                                 "and \\u with four hex digits, so a backslash itself is written \\\\");
        }
        if (why.starts_with("'\\u' must be followed")) {
            const std::size_t slash = text_.rfind("\\u", p_);
            std::size_t end = slash == kNone ? p_ : slash + 2;  // \u and what stands for its four digits
            while (slash != kNone && end < std::min(slash + 6, text_.size()) &&
                   std::isalnum(static_cast<unsigned char>(text_[end])))
                ++end;
            const std::string written = slash == kNone ? "\\u" : std::string(text_.substr(slash, end - slash));
            return at(slash == kNone ? p_ : slash,
                      written == "\\u" ? "\\u must be followed by four hex digits, as in \\u00e9"
                                       : written + " is not an escape: \\u takes four hex digits, as in \\u00e9");
        }
        if (why.starts_with("surrogate ")) {
            const bool first_half = why.starts_with("surrogate U+D800");
            std::size_t slash = kNone;  // the last \u before `p_` of a surrogate of that half, in this string
            for (std::size_t i = p_ + 1; i > (s ? s->start : 0);) {
                i = text_.rfind("\\u", i - 1);
                if (i == kNone || (s && i < s->start)) break;
                const auto a = std::tolower(static_cast<unsigned char>(char_at(i + 2)));
                const auto b = std::tolower(static_cast<unsigned char>(char_at(i + 3)));
                if (a == 'd' && (first_half ? (b >= '8' && b <= '9') || b == 'a' || b == 'b' : b >= 'c' && b <= 'f')) {
                    slash = i;
                    break;
                }
            }
            const std::size_t pos = slash == kNone ? p_ : slash;
            const std::string escape = slash == kNone ? "a \\u escape" : std::string(text_.substr(slash, 6));
            return at(pos, first_half ? escape +
                                            " is the first half of a character written as two \\u escapes (a "
                                            "UTF-16 surrogate pair) and must be followed by the second half, "
                                            "\\udc00 to \\udfff"
                                      : escape +
                                            " is the second half of a character written as two \\u escapes (a "
                                            "UTF-16 surrogate pair) and must follow the first half, \\ud800 to "
                                            "\\udbff");
        }
        if (why == "ill-formed UTF-8 byte")
            return at(p_, "a string holds bytes that are not UTF-8 text; save the file as UTF-8");
        return at(p_, "a string is not valid (" + std::string(why) + ")");
    }

    // A lexer error outside strings: a word that is no JSON value, or a malformed number. Told at
    // the word's start, not where the lexer stopped inside or after it ('tru' of tru} at the 't').
    std::string bad_word() const {
        const int k = word_at(r_, p_);
        if (k < 0) {  // not met in practice: the lenient reading finds a word wherever the lexer fails in one
            const char c = char_at(p_);
            return at(p_, "expected " + expected_ + ", found " +
                              (c > ' ' && c < 0x7F ? std::string{'\'', c, '\''}
                                                   : std::string("a character JSON does not allow here")));
        }
        const Token& w = r_.tokens[static_cast<std::size_t>(k)];
        const std::string_view word = text_of(w);
        const std::string found = "expected " + expected_ + ", found ";
        const bool key = f_.context == "object key";
        const bool number = f_.lexer.starts_with("invalid number; ");

        if (looks_non_finite(word))
            return at(w.start,
                      found + "'" + std::string(word) + "'; NaN and Infinity are not JSON: write a finite number");
        if (w.kind == Token::single_quoted)
            return at(w.start, found + shown(word) + " in single quotes; JSON strings take double quotes");
        if (word.starts_with("'")) return at(w.start, found + "a single quote ('); JSON strings take double quotes");
        for (const char* q : {"“", "”", "„", "‘", "’"})
            if (word.starts_with(q))
                return at(w.start, found + q + ", a typographic quote; JSON strings take plain double quotes (\")");
        if (word.starts_with("#")) return at(w.start, found + "'#'; JSON has no # comments: write // or /* */ instead");
        if (word.starts_with("\xC2\xA0"))
            return at(w.start, found +
                                   "a no-break space (U+00A0); JSON allows only plain spaces, tabs and line breaks "
                                   "between values");
        if (static_cast<unsigned char>(word[0]) < 0x20) {
            char code[8];
            std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(word[0]));
            return at(w.start, found + "the control character " + code + ", which JSON does not allow between values");
        }
        if (utf8_length(text_, w.start) == 0)
            return at(w.start, found + "a byte that is not UTF-8 text; save the file as UTF-8");
        if (key && std::all_of(word.begin(), word.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '$' ||
                       static_cast<unsigned char>(c) >= 0x80;
            }))
            return at(w.start, "expected a key in double quotes, found " + shown(word) + " without quotes; write \"" +
                                   shown(word) + "\"");
        if (word == "True" || word == "False")
            return at(w.start, found + "'" + std::string(word) + "'; JSON writes " +
                                   (word == "True" ? "true" : "false") + " in lower case");
        if (word == "None") return at(w.start, found + "'None'; JSON writes null");
        if (const auto [what, instead] = plain_number(word); !what.empty())
            return number_mistake(w.start, word, what, instead);
        if (number) {
            const std::string_view read = text_.substr(w.start, p_ - w.start);  // the number up to its mistake
            const std::string_view why = std::string_view(f_.lexer).substr(16);
            if (why == "expected digit after '.'")
                return number_mistake(w.start, read, "with no digit after its point", shown(read) + "0");
            if (why.find("after exponent") != kNone)
                return number_mistake(w.start, read, "with no digits in its exponent", "e.g. " + shown(read) + "3");
            if (why == "expected digit after '-'")
                return at(w.start, found + "'" + shown(word) +
                                       "', which is not a number: a minus sign must be followed "
                                       "by a digit");
            return at(w.start, found + "'" + shown(word) + "', which is not a number (" + std::string(why) + ")");
        }
        if (k > 0) {
            const Token& before = r_.tokens[static_cast<std::size_t>(k) - 1];
            if (before.kind == Token::string && before.closed && before.end == w.start)
                return at(w.start, found + shown(word) + " right after the string " + shown(text_of(before)) +
                                       ", so a double quote in that string is likely missing or misplaced");
        }
        if (f_.context == "object separator")
            return at(w.start, found + "'" + shown(word) + "'; a colon separates a key from its value");
        if (f_.lexer != "invalid literal") return at(w.start, found + "'" + shown(word) + "' (" + f_.lexer + ")");
        if (key) return at(w.start, found + "'" + shown(word) + "'");
        return at(w.start, found + "'" + shown(word) +
                               "', which is not a JSON value (a value is a number, a \"string\", true, false, null, "
                               "[...] or {...}; NaN and Infinity are not JSON)");
    }

    // "found '01', a number with a leading zero, which JSON does not allow; write 1"
    std::string number_mistake(std::size_t start, std::string_view written, const std::string& what,
                               const std::string& instead) const {
        return at(start,
                  "found '" + shown(written) + "', a number " + what + ", which JSON does not allow; write " + instead);
    }

    // What is wrong with a number JSON does not take (+1, .5, 0x10) and what to write instead;
    // empty when `word` is none of those.
    static std::pair<std::string, std::string> plain_number(std::string_view word) {
        const std::string sign = word.starts_with("-") ? "-" : "";
        const std::string_view rest = word.substr(sign.size());
        if (word.size() > 1 && word[0] == '+' && (is_digit(word[1]) || word[1] == '.'))
            return {"with a plus sign", std::string(word[1] == '.' ? "0" : "") + shown(word.substr(1))};
        if (rest.size() > 1 && rest[0] == '.' && is_digit(rest[1]))
            return {"with no digit before its point", sign + "0" + shown(rest)};
        if (rest.size() > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') &&
            std::all_of(rest.begin() + 2, rest.end(),
                        [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
            return {"in hexadecimal", rest.size() <= 2 + 15
                                          ? sign + std::to_string(std::stoull(std::string(rest.substr(2)), nullptr, 16))
                                          : "it in decimal"};
        return {};
    }

    // nlohmann's name of the token it found, with the token's text where that helps to find it.
    std::string found_words(std::size_t start) const {
        const std::string_view token = text_.substr(start, std::min(p_ + 1, text_.size()) - start);
        if (f_.unexpected == "end of input") return "the end of the text";
        if (f_.unexpected == "string literal") return "the string " + shown(token);
        if (f_.unexpected == "number literal") return "the number " + shown(token);
        if (f_.unexpected.ends_with(" literal")) return f_.unexpected.substr(0, f_.unexpected.size() - 8);
        return f_.unexpected;  // '{', '}', '[', ']', ':', ','
    }

    // A token in the wrong place (the lexer read it whole).
    std::string bad_token() const {
        const int k = f_.unexpected == "end of input" ? -1 : token_at(r_, p_);
        const Token* t = k >= 0 ? &r_.tokens[static_cast<std::size_t>(k)] : nullptr;
        const Token* before = k > 0 ? &r_.tokens[static_cast<std::size_t>(k) - 1] : nullptr;
        const std::size_t start = t ? t->start : p_;
        const auto open = open_brackets(text_, r_, start);
        const auto punct_is = [&](const Token* x, char c) {
            return x && x->kind == Token::punct && text_[x->start] == c;
        };

        if (t && t->kind == Token::word && f_.unexpected == "number literal") {
            const std::string_view word = text_of(*t);
            const std::string_view digits = word.substr(word.starts_with("-") ? 1 : 0);
            if (digits.size() > 1 && digits[0] == '0' && is_digit(digits[1])) {
                std::string_view rest = digits;
                while (rest.size() > 1 && rest[0] == '0' && is_digit(rest[1])) rest.remove_prefix(1);
                return number_mistake(t->start, word, "with a leading zero",
                                      (word.starts_with("-") ? "-" : "") + shown(rest));
            }
        }
        const std::string found = "expected " + expected_ + ", found " + found_words(start);
        if (!t) {
            if (open.empty()) return at(p_, found);
            const bool object = text_[open.back()->start] == '{';
            const std::size_t more = open.size() - 1;
            return at(p_, std::string("the text ends before the ") + (object ? "object" : "array") + " opened at " +
                              where(text_, open.back()->start) + " is closed with '" + (object ? "}" : "]") + "'" +
                              (more == 0 ? ""
                                         : " (" + std::to_string(more) + " more around it " +
                                               (more == 1 ? "is" : "are") + " not closed either)"));
        }
        const char c = t->kind == Token::punct ? text_[t->start] : '\0';
        if ((c == '}' || c == ']') && !open.empty() && text_[open.back()->start] != (c == '}' ? '{' : '[')) {
            const bool object = text_[open.back()->start] == '{';
            return at(start, found + ", but the " + (object ? "object" : "array") + " opened at " +
                                 where(text_, open.back()->start) + " closes with '" + (object ? "}" : "]") + "'");
        }
        if (c == ',' && punct_is(before, ',')) return at(start, found + "; there are two commas in a row");
        if ((c == '}' || c == ']') && punct_is(before, ','))
            return at(start, found + "; JSON allows no comma after the last " + (c == '}' ? "member" : "element") +
                                 ": remove the comma at " + where(text_, before->start));
        const bool value_start = c == '{' || c == '[' || t->kind != Token::punct;
        if (f_.context == "object key" && t->kind == Token::word)
            return at(start, found + "; write \"" + shown(text_of(*t)) + "\"");
        if (f_.context == "object separator") return at(start, found + "; a colon separates a key from its value");
        if ((f_.context == "object" && t->kind == Token::string) || (f_.context == "array" && value_start))
            return at(start, found + "; a comma is missing before it");
        if (f_.context == "array" && c == ':')
            return at(start, found + "; an array holds values only: key-value pairs go in an object {...}");
        if (f_.expected == "end of input" && before) {
            if (c == ':' && k == 1 && r_.tokens[0].kind == Token::string)
                return at(start, found + "; is the opening '{' missing at the start?");
            const std::string ended = where(text_, before->end - 1);
            if (c == '}' || c == ']')
                return at(start, found + "; the JSON value ended at " + ended + ", so this '" + std::string(1, c) +
                                     "' closes nothing");
            return at(start, found + "; the text holds one JSON value, which ended at " + ended);
        }
        return at(start, found);
    }

    std::string_view text_;
    std::size_t p_;
    Failure f_;
    Reading r_;
    std::string expected_;
};

}  // namespace

std::string describe_parse_error(std::string_view text, std::size_t offset, std::string_view last_token, int id,
                                 std::string_view what) {
    if (id == 406) {  // out_of_range: a number beyond a double; `offset` is just after it
        const std::size_t start = offset >= last_token.size() ? offset - last_token.size() : 0;
        return where(text, start) + ": the number " + std::string(last_token) +
               " is too large (a number must lie within about ±1.8e308)";
    }
    // `offset` counts the characters read, the one nlohmann stopped at included (the end of the
    // text counts as one).
    const std::size_t stopped_at = std::min(offset > 0 ? offset - 1 : 0, text.size());
    // Quoted bytes that are not printable UTF-8 (a NUL, a stray \xE9) are escaped, so the sentence
    // is text (the CLI writes sentences into JSON, which must be UTF-8) and never ends at a NUL.
    return printable_text(Explainer(text, stopped_at, take_apart(what)).sentence());
}

std::string describe_encoding_problem(std::string_view text) {
    if (text.starts_with(std::string_view("\xFF\xFE\0\0", 4)) || text.starts_with(std::string_view("\0\0\xFE\xFF", 4)))
        return "it is UTF-32 text (it starts with a UTF-32 byte-order mark); save it as UTF-8";
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
        return "it is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8";
    const std::size_t nul = text.find('\0');
    if (nul == kNone) return {};
    // Without a byte-order mark, UTF-16 shows as a NUL in every second byte of plain text.
    const std::size_t n = std::min<std::size_t>(text.size(), 256) & ~std::size_t{1};
    std::size_t zero_odd = 0, zero_even = 0;
    for (std::size_t i = 0; i < n; ++i) (i % 2 ? zero_odd : zero_even) += text[i] == '\0';
    if (n >= 4 && (zero_odd == n / 2 || zero_even == n / 2) && zero_odd + zero_even < n)
        return "it looks like UTF-16 text (every second byte is NUL); save it as UTF-8";
    return where(text, nul) + ": a NUL byte (\\0), which JSON text cannot hold: the file is binary or damaged";
}

// A long path cut to about its first and last 60 bytes, at the start of a key or an index
// ("model.layers[0]...layers[0].layers"), as printable text.
std::string shortened_path(std::string_view path) {
    constexpr std::size_t keep = 60;
    if (path.size() <= 2 * keep + 3) return printable_text(path);
    const auto starts_part = [&](std::size_t i) { return path[i] == '.' || path[i] == '['; };
    std::size_t head = keep, tail = path.size() - keep;
    while (head > keep / 2 && !starts_part(head)) --head;
    while (tail < path.size() - keep / 2 && !starts_part(tail)) ++tail;
    // Inside a long key there is no such start: cut anywhere, a UTF-8 character kept whole.
    if (!starts_part(head) || !starts_part(tail)) return printable_text(shortened_text(path, keep));
    if (path[tail] == '.') ++tail;
    return printable_text(path.substr(0, head)) + "..." + printable_text(path.substr(tail));
}

std::size_t too_deep_offset(std::string_view text, int limit) {
    // Strings and comments skipped, brackets counted: no value is built, so any depth is scanned.
    int depth = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const char next = i + 1 < text.size() ? text[i + 1] : '\0';
        if (c == '"') {
            for (++i; i < text.size() && text[i] != '"'; ++i)
                if (text[i] == '\\') ++i;
        } else if (c == '/' && next == '/') {
            i = std::min(text.find_first_of("\n\r", i), text.size());
        } else if (c == '/' && next == '*') {
            i = std::min(text.find("*/", i + 2), text.size());
            if (i < text.size()) ++i;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

std::string describe_too_deep(std::string_view text, int limit, std::string_view path, bool array) {
    // The text up to that opening was read without an error, so the plain scan finds it.
    const std::size_t at = std::min(too_deep_offset(text, limit), text.size());
    return where(text, at) + ": the " + (array ? "array" : "object") + " at " + shortened_path(path) + " is nested " + std::to_string(limit + 1) +
           " levels deep; at most " + std::to_string(limit) + " levels of arrays and objects inside each other are read";
}

std::string describe_duplicate_key(std::string_view text, std::size_t nth, std::string_view dotted) {
    const Reading r = read_leniently(text);
    std::size_t keys = 0;
    for (std::size_t k = 0; k + 1 < r.tokens.size(); ++k) {
        const Token& t = r.tokens[k];
        const Token& next = r.tokens[k + 1];
        if (t.kind == Token::string && next.kind == Token::punct && text[next.start] == ':' && ++keys == nth)
            return where(text, t.start) + ": key " + printable_text(dotted) + " appears twice";
    }
    return "key " + printable_text(dotted) + " appears twice";  // not reached for text that parsed up to it
}

std::string describe_number_too_small(std::string_view text, std::size_t nth, std::string_view written) {
    const Reading r = read_leniently(text);
    std::size_t numbers = 0;
    std::size_t at = kNone;
    for (const Token& t : r.tokens) {
        const char c = text[t.start];
        if (t.kind == Token::word && (c == '-' || is_digit(c)) && ++numbers == nth) {
            at = t.start;
            break;
        }
    }
    return (at == kNone ? std::string() : where(text, at) + ": ") + "the number " + printable_text(shown(written)) +
           " is too small: it is not 0, but it would be read as 0 (a number other than 0 must be at least about "
           "4.9e-324 in size); write 0 if 0 is meant";
}

std::string describe_nul_in_string(std::string_view text) {
    const Reading r = read_leniently(text);
    for (const Token& t : r.tokens) {
        if (t.kind != Token::string) continue;
        for (std::size_t i = t.start + 1; i + 1 < t.end; ++i) {
            if (text[i] != '\\') continue;
            if (text.substr(i, 6) == "\\u0000") {
                const std::string_view written = text.substr(t.start, t.end - t.start);
                return where(text, i) + ": the string " + printable_text(shown(written)) +
                       " holds \\u0000, a NUL character, which a key, a name or a path cannot hold";
            }
            ++i;  // the escaped character
        }
    }
    return "a string holds \\u0000, a NUL character, which a key, a name or a path cannot hold";
}

}  // namespace mantissa
