// Bytes from a user's file, made fit to quote in a sentence. A message is a C string at the edges
// (what(), printf's %s, a QString made from it), so a NUL byte quoted raw would end the message
// there, and a stray byte that is not UTF-8 would break the JSON the CLI writes. Every byte that is
// not printable, well-formed UTF-8 is written as an escape instead: \0 for NUL, \t, \n, \r, and
// \xHH (two upper-case hex digits) for any other control character, DEL, and each byte that is not
// part of a well-formed UTF-8 character. A backslash stays as it is.
// Header-only so that both mantissa_config (the experiment file) and mantissa_data (the datasets)
// use it without a library between them, as user_file.h is. Pure functions, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mantissa {

// The length of the well-formed UTF-8 character starting at text[pos], or 0 when none starts there
// (a continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or cut short by the end).
inline std::size_t utf8_char_length(std::string_view text, std::size_t pos) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b = byte(pos);
    const std::size_t n = b < 0x80 ? 1 : b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF5 ? 4 : 0;
    if (n == 0 || pos + n > text.size()) return 0;
    for (std::size_t i = 1; i < n; ++i)
        if ((byte(pos + i) & 0xC0) != 0x80) return 0;
    const unsigned char c = n > 1 ? byte(pos + 1) : 0;
    if ((b == 0xE0 && c < 0xA0) || (b == 0xED && c > 0x9F) || (b == 0xF0 && c < 0x90) || (b == 0xF4 && c > 0x8F))
        return 0;
    return n;
}

// `bytes` with every byte that is not printable UTF-8 escaped (see above): "a\0b" -> "a\\0b",
// "caf\xE9" -> "caf\\xE9". Printable UTF-8, spaces included, is kept unchanged.
inline std::string printable_text(std::string_view bytes) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        const std::size_t n = utf8_char_length(bytes, i);
        if (n > 1 || (n == 1 && b >= 0x20 && b != 0x7F)) {
            out.append(bytes.substr(i, n));
            i += n;
            continue;
        }
        if (b == 0)
            out += "\\0";
        else if (b == '\t')
            out += "\\t";
        else if (b == '\n')
            out += "\\n";
        else if (b == '\r')
            out += "\\r";
        else
            out += {'\\', 'x', hex[b >> 4], hex[b & 0xF]};
        ++i;
    }
    return out;
}

// Text too long for a sentence (a path, a pasted list) shortened to its first and last `keep`
// bytes around "...", cut where a UTF-8 character begins; shorter text is returned whole.
inline std::string shortened_text(std::string_view text, std::size_t keep = 60) {
    if (text.size() <= 2 * keep + 3) return std::string(text);
    auto starts_char = [&](std::size_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80; };
    std::size_t head = keep, tail = text.size() - keep;
    while (head > 0 && !starts_char(head)) --head;
    while (tail < text.size() && !starts_char(tail)) ++tail;
    return std::string(text.substr(0, head)) + "..." + std::string(text.substr(tail));
}

}  // namespace mantissa
