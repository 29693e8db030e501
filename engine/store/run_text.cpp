// check_run_text(): see run_text.h. The UTF-8 decoder follows the Unicode standard's table of
// well-formed byte sequences (Table 3-7), so what passes here is what nlohmann::json and Qt accept.
#include "store/run_text.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "error.h"

namespace mantissa::store {

namespace {

// Decodes one code point at text[i]; returns its length in bytes, 0 when the bytes there are not
// well-formed UTF-8.
std::size_t decode(std::string_view text, std::size_t i, std::uint32_t& cp) {
    auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
    const std::uint8_t b0 = byte(i);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    std::size_t n = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
        cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        cp = b0 & 0x0Fu;
        if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        cp = b0 & 0x07u;
        if (b0 == 0xF0) lo = 0x90;  // no overlong forms
        if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        return 0;
    }
    if (i + n > text.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const std::uint8_t b = byte(i + k);
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    return n;
}

const char* field_name(RunText field) {
    switch (field) {
        case RunText::name: return "run name";
        case RunText::notes: return "run notes";
        case RunText::tags: return "run tags";
        case RunText::sweep_name: return "sweep name";
    }
    return "run text";
}

bool is_control(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

std::string code_point_name(std::uint32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
    std::string s = buf;
    if (cp == '\n') s += " (a line break)";
    if (cp == '\t') s += " (a tab)";
    if (cp == 0x1B) s += " (escape)";
    return s;
}

// The first `n` characters of valid UTF-8 text (never a partial character).
std::string_view first_chars(std::string_view text, std::size_t n) {
    std::size_t i = 0;
    for (std::size_t c = 0; c < n && i < text.size(); ++c) {
        std::uint32_t cp = 0;
        const std::size_t len = decode(text, i, cp);
        if (len == 0) break;
        i += len;
    }
    return text.substr(0, i);
}

}  // namespace

bool utf8_length(std::string_view text, std::size_t& chars, std::size_t* bad_at) {
    chars = 0;
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = decode(text, i, cp);
        if (n == 0) {
            if (bad_at) *bad_at = i;
            return false;
        }
        i += n;
        ++chars;
    }
    return true;
}

std::string printable_text(std::string_view text, bool keep_line_breaks) {
    std::string out;
    out.reserve(text.size());
    char buf[16];
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = decode(text, i, cp);
        if (n == 0) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<std::uint8_t>(text[i])));
            out += buf;
            ++i;
            continue;
        }
        if (!is_control(cp) || (keep_line_breaks && (cp == '\n' || cp == '\t'))) {
            out.append(text.substr(i, n));
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\r') {
            out += "\\r";
        } else {
            if (cp < 0x80)
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
            else
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
            out += buf;
        }
        i += n;
    }
    return out;
}

std::string printable_generated_text(std::string_view text) {
    std::string raw(text);
    for (std::size_t at = raw.find("\r\n"); at != std::string::npos; at = raw.find("\r\n", at))
        raw.erase(at, 1);  // a CRLF line break is a line break (a lone \r is escaped)
    return printable_text(raw, true);
}

void check_run_text(RunText field, std::string_view text) {
    const std::string what = field_name(field);
    std::size_t chars = 0;
    if (!utf8_length(text, chars)) throw Error("The " + what + " must be valid UTF-8 text.");
    // Spaces alone would show as an empty cell in every list, and no name could select the run.
    // (An empty name is each caller's to refuse or to replace with its default.)
    if ((field == RunText::name || field == RunText::sweep_name) && !text.empty() &&
        text.find_first_not_of(" \t\n\r\v\f") == std::string_view::npos)
        throw Error(std::string(field == RunText::name ? "A run's" : "A sweep's") +
                    " name cannot be blank (white space only); give it a name with at least one other character.");
    std::size_t position = 0;
    for (std::size_t i = 0; i < text.size(); ++position) {
        std::uint32_t cp = 0;
        i += decode(text, i, cp);
        const bool allowed = field == RunText::notes && (cp == '\n' || cp == '\t');
        if (is_control(cp) && !allowed)
            throw Error("The " + what + " must not contain control characters (" + code_point_name(cp) +
                        " at character " + std::to_string(position + 1) + ")" +
                        (field == RunText::notes ? "; line breaks and tabs are allowed." : "."));
    }
    if ((field == RunText::name || field == RunText::sweep_name) && chars > max_name_chars)
        throw Error("The " + what + " is " + std::to_string(chars) + " characters long; a " + what +
                    " may have at most " + std::to_string(max_name_chars) + ".");
    if (field == RunText::notes && chars > max_notes_chars)
        throw Error("The run notes are " + std::to_string(chars) + " characters long; notes may have at most " +
                    std::to_string(max_notes_chars) + ".");
    if (field == RunText::tags) {
        std::size_t count = 0, start = 0;
        while (start < text.size()) {
            std::size_t end = text.find(',', start);
            if (end == std::string_view::npos) end = text.size();
            const std::string_view tag = text.substr(start, end - start);
            std::size_t tag_chars = 0;
            utf8_length(tag, tag_chars);
            if (tag_chars > max_tag_chars)
                throw Error("The tag '" + std::string(first_chars(tag, 40)) + "...' is " + std::to_string(tag_chars) +
                            " characters long; a tag may have at most " + std::to_string(max_tag_chars) + ".");
            ++count;
            start = end + 1;
        }
        if (count > max_tags)
            throw Error("A run may have at most " + std::to_string(max_tags) + " tags; " + std::to_string(count) +
                        " were given.");
    }
}

}  // namespace mantissa::store
