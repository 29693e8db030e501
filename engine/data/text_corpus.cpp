// The text corpus (see text_corpus.h). The order of the work is the point: the options first (a
// sentence costs nothing), then the file's stated size against the 1 GiB limit and the memory its
// text and tokens will take against what this process may use, and only then the read; the bytes
// are checked whole (encoding, binary, UTF-8) before any token is made, so a refused file never
// costs a token array. Tokens are made in one pass: bytes as they are, or chars as code points,
// which the vocabulary (a table from code point to id, up to the largest code point the text holds:
// at most 4.4 MB, alive only while encoding) then renumbers in place.
#include "data/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>

#include "data/memory_budget.h"
#include "data/random.h"
#include "error.h"
#include "printable_text.h"

namespace mantissa::data {
namespace {

constexpr std::uint64_t kTextStream = 0x54455854ULL;  // "TEXT": the training windows' draws
constexpr std::size_t kCodePoints = 0x110000;         // U+0000 .. U+10FFFF
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
// The most tokens one batch may hold (batch × context), so that its buffers' sizes stay in range.
constexpr std::int64_t kMaxBatchTokens = (std::int64_t{1} << 31) - 1;

std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string hex_byte(unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", b);
    return buf;
}

// A byte that makes text look binary: a C0 control other than tab, line feed, vertical tab, form
// feed and carriage return, or DEL. (Old fortune files hold a few backspaces and bells: text.)
bool is_control(unsigned char b) {
    return (b < 0x20 && (b < '\t' || b > '\r')) || b == 0x7F;
}

// "is UTF-16 text (...)" for text that is UTF-16 or UTF-32 rather than UTF-8, or "": by its
// byte-order mark, or without one by a NUL in every second byte of (up to) its first 256.
std::string wide_text(std::string_view text) {
    if (text.starts_with(std::string_view("\xFF\xFE\0\0", 4)) || text.starts_with(std::string_view("\0\0\xFE\xFF", 4)))
        return "is UTF-32 text (it starts with a UTF-32 byte-order mark)";
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
        return "is UTF-16 text (it starts with a UTF-16 byte-order mark)";
    const std::size_t n = std::min<std::size_t>(text.size(), 256) & ~std::size_t{1};
    if (n < 4) return {};
    std::size_t zero_at[2] = {};
    for (std::size_t i = 0; i < n; ++i)
        if (text[i] == '\0') ++zero_at[i % 2];
    const std::size_t half = n / 2;
    if ((zero_at[0] == half && zero_at[1] < half) || (zero_at[1] == half && zero_at[0] < half))
        return "looks like UTF-16 text (every second byte is NUL)";
    return {};
}

// The code point of the well-formed UTF-8 character of `n` bytes at text[pos].
char32_t code_point(std::string_view text, std::size_t pos, std::size_t n) {
    const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(text[pos + k])); };
    switch (n) {
        case 1: return b(0);
        case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    }
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The first offset of `text` where no well-formed UTF-8 character starts, or npos.
std::size_t first_bad_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_char_length(text, i);
        if (n == 0) return i;
        i += n;
    }
    return std::string_view::npos;
}

void check_options(const TextCorpusOptions& options, const std::string& what) {
    if (options.vocabulary != TextVocabulary::bytes && options.vocabulary != TextVocabulary::chars)
        throw Error(what + " cannot be read with an unknown vocabulary: use 'bytes' or 'chars'.");
    if (options.context < kMinTextContext || options.context > kMaxTextContext)
        throw Error(what + " cannot be read with context " + std::to_string(options.context) +
                    ": the context must be " + std::to_string(kMinTextContext) + ".." +
                    std::to_string(kMaxTextContext) + " tokens.");
    if (!(options.test_fraction > 0.0 && options.test_fraction <= kMaxTextTestFraction))
        throw Error(what + " cannot be split with test_fraction " + number_text(options.test_fraction) +
                    ": it must be greater than 0 and at most " + number_text(kMaxTextTestFraction) + ".");
}

// Tokens in the test part of `n` before it moves to a character boundary.
std::int64_t test_count(std::int64_t n, double fraction) {
    return static_cast<std::int64_t>(std::floor(static_cast<double>(n) * fraction));
}

// The fewest tokens that give each part context + 1 (when no split moves to a boundary), or -1 when
// that is beyond any file (a tiny test_fraction). As fraction <= 0.5, the training part is never the
// smaller one, so only the test part decides.
std::int64_t tokens_needed(int context, double fraction) {
    const std::int64_t need = context + 1;
    const double estimate = std::ceil(static_cast<double>(need) / fraction);
    if (!(estimate < 1e15)) return -1;
    auto n = static_cast<std::int64_t>(estimate);
    while (n > 1 && test_count(n - 1, fraction) >= need) --n;
    while (test_count(n, fraction) < need) ++n;
    return n;
}

// Bytes the tokens of `text` take (at most one per byte, 32 bits each), and for chars the table
// over every code point the vocabulary is built with.
std::uint64_t tokens_memory(std::uint64_t text_bytes, TextVocabulary vocabulary) {
    return text_bytes * sizeof(std::int32_t) +
           (vocabulary == TextVocabulary::chars ? kCodePoints * sizeof(std::int32_t) : 0);
}

}  // namespace

const char* text_vocabulary_name(TextVocabulary vocabulary) {
    return vocabulary == TextVocabulary::bytes ? "bytes" : "chars";
}

TextVocabulary text_vocabulary_from_name(const std::string& name, const std::string& key) {
    if (name == "bytes") return TextVocabulary::bytes;
    if (name == "chars") return TextVocabulary::chars;
    throw Error(key + " '" + printable_text(name) + "' is not a vocabulary: use 'bytes' or 'chars'.");
}

void check_text_bytes(std::string_view bytes, const std::string& what) {
    if (bytes.empty()) throw Error(what + " is empty; a text corpus needs UTF-8 text.");
    if (const std::string wide = wide_text(bytes); !wide.empty())
        throw Error(what + " " + wide + ", an encoding Mantissa does not read; save it as UTF-8.");
    if (const std::size_t nul = bytes.find('\0'); nul != std::string_view::npos)
        throw Error(what + " is a binary file, not text: it holds a NUL byte at byte offset " + std::to_string(nul) +
                    ".");
    const auto controls = static_cast<std::uint64_t>(
        std::count_if(bytes.begin(), bytes.end(), [](char c) { return is_control(static_cast<unsigned char>(c)); }));
    if (controls * 10 > bytes.size())
        throw Error(what + " is a binary file, not text: " + std::to_string(controls) + " of its " +
                    std::to_string(bytes.size()) +
                    " bytes are control characters (other than tab and line or page breaks), more than 10%.");
    if (const std::size_t bad = first_bad_utf8(bytes); bad != std::string_view::npos)
        throw Error(what + " is not UTF-8 text: the byte " + hex_byte(static_cast<unsigned char>(bytes[bad])) +
                    " at byte offset " + std::to_string(bad) +
                    " does not start a well-formed UTF-8 character (Latin-1, Windows-1252 and other 8-bit "
                    "encodings are not read); save it as UTF-8.");
}

TextCorpus TextCorpus::read_file(const std::string& path, const TextCorpusOptions& options) {
    const std::string what = "The text file " + path;
    check_options(options, what);
    {
        // The stated size, before a byte is read: the limit, then the text and its tokens in memory.
        const UserFile file = open_user_file(path, what);
        const std::uint64_t stated = user_file_size(file);
        if (stated > kTextFileLimit.bytes)
            throw Error(what + " is " + std::to_string(stated) + " bytes, larger than " + kTextFileLimit.text + ".");
        check_memory(stated + tokens_memory(stated, options.vocabulary), what);
    }
    const std::string text = read_user_file(path, what, kTextFileLimit);
    return from_text(text, what, options);
}

TextCorpus TextCorpus::from_text(std::string_view text, const std::string& what, const TextCorpusOptions& options) {
    check_options(options, what);
    check_text_bytes(text, what);
    std::string_view body = text;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte-order mark
    // Again from the text itself: a file may have grown since its size was stated.
    const std::uint64_t memory = tokens_memory(body.size(), options.vocabulary);
    check_memory(memory, what);

    TextCorpus corpus;
    corpus.m_vocabulary = options.vocabulary;
    corpus.m_context = options.context;
    corpus.m_test_fraction = options.test_fraction;
    const bool chars = options.vocabulary == TextVocabulary::chars;
    std::vector<std::int32_t> id_of;  // chars: code point -> id, while encoding
    try {
        std::vector<std::int32_t>& tokens = corpus.m_tokens;
        tokens.reserve(body.size());
        if (chars) {
            for (std::size_t i = 0; i < body.size();) {
                const std::size_t n = utf8_char_length(body, i);  // > 0: checked above
                tokens.push_back(static_cast<std::int32_t>(code_point(body, i, n)));
                i += n;
            }
            // Sized by the largest code point the text holds: 128 entries for ASCII text.
            const std::int32_t top = tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end());
            id_of.assign(static_cast<std::size_t>(top) + 1, -1);
        } else {
            for (const char c : body) tokens.push_back(static_cast<unsigned char>(c));
        }
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read " + what + " (about " + memory_text(memory) + " of 32-bit tokens).");
    }

    // The split: floor(n × test_fraction) tokens at the end, from the first byte of a character.
    std::vector<std::int32_t>& tokens = corpus.m_tokens;
    const auto n = static_cast<std::int64_t>(tokens.size());
    std::int64_t split = n - test_count(n, options.test_fraction);
    if (!chars)
        while (split > 0 && split < n && (tokens[static_cast<std::size_t>(split)] & 0xC0) == 0x80) --split;
    const std::int64_t need = options.context + 1;
    if (split < need || n - split < need) {
        const std::int64_t needed = tokens_needed(options.context, options.test_fraction);
        std::string says = what + " holds " + std::to_string(n) + (chars ? " tokens (characters)" : " tokens (bytes)") +
                           ", too few for context " + std::to_string(options.context) + " and test_fraction " +
                           number_text(options.test_fraction) + ": each part needs at least " + std::to_string(need) +
                           " tokens (one context + 1), ";
        if (needed < 0)
            says += "and with so small a test_fraction no text is long enough; raise test_fraction.";
        else if (n < needed)
            says +=
                "so the text needs at least " + std::to_string(needed) + "; use a longer text or a smaller context.";
        else
            says += "but the split at a character boundary leaves " + std::to_string(split) + " for training and " +
                    std::to_string(n - split) + " for testing; use a longer text or a smaller context.";
        throw Error(says);
    }
    corpus.m_split = split;

    if (chars) {
        // Ids: the training part's distinct code points in ascending order; then the unknown id.
        for (std::int64_t i = 0; i < split; ++i)
            id_of[static_cast<std::size_t>(tokens[static_cast<std::size_t>(i)])] = 0;
        std::int32_t next = 0;
        for (std::size_t cp = 0; cp < id_of.size(); ++cp)
            if (id_of[cp] >= 0) {
                id_of[cp] = next++;
                corpus.m_characters.push_back(static_cast<char32_t>(cp));
            }
        const std::int32_t unknown = next;
        for (std::int32_t& t : tokens) {
            const std::int32_t id = id_of[static_cast<std::size_t>(t)];
            if (id < 0) ++corpus.m_test_unknown;  // only the test part can hold one
            t = id < 0 ? unknown : id;
        }
    }
    return corpus;
}

int TextCorpus::vocab_size() const {
    return m_vocabulary == TextVocabulary::bytes ? 256 : static_cast<int>(m_characters.size()) + 1;
}

std::int32_t TextCorpus::unknown_id() const {
    return m_vocabulary == TextVocabulary::bytes ? -1 : static_cast<std::int32_t>(m_characters.size());
}

std::span<const std::int32_t> TextCorpus::part(TextPart which) const {
    const std::span<const std::int32_t> all(m_tokens);
    const auto split = static_cast<std::size_t>(m_split);
    return which == TextPart::train ? all.first(split) : all.subspan(split);
}

std::int64_t TextCorpus::train_samples() const {
    return (train_tokens() - 1) / m_context;
}

std::int64_t TextCorpus::test_samples() const {
    return (test_tokens() - 1) / m_context;
}

std::int64_t TextCorpus::train_offsets() const {
    return train_tokens() - m_context;
}

std::vector<std::int64_t> TextCorpus::train_batch_offsets(std::uint64_t seed, std::int64_t step, int batch) const {
    if (batch < 1) throw Error("A batch of text windows needs at least 1 window, not " + std::to_string(batch) + ".");
    Rng rng(derive_seed(seed, kTextStream ^ mix64(static_cast<std::uint64_t>(step))));
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(batch));
    const auto range = static_cast<std::uint64_t>(train_offsets());
    for (std::int64_t& o : offsets) o = static_cast<std::int64_t>(rng.below(range));
    return offsets;
}

void TextCorpus::fill_windows(TextPart which, std::span<const std::int64_t> offsets, std::vector<std::int32_t>& inputs,
                              std::vector<std::int32_t>& targets) const {
    const auto rows = static_cast<std::int64_t>(offsets.size());
    if (rows > kMaxBatchTokens / m_context)
        throw Error("A batch of " + std::to_string(rows) + " text windows of " + std::to_string(m_context) +
                    " tokens is more than " + std::to_string(kMaxBatchTokens) + " tokens; use a smaller batch.");
    const std::span<const std::int32_t> tokens = part(which);
    const auto last = static_cast<std::int64_t>(tokens.size()) - m_context - 1;  // >= 0 by the split's check
    const auto c = static_cast<std::size_t>(m_context);
    const auto size = static_cast<std::size_t>(rows) * c;
    if (inputs.size() < size) inputs.resize(size);
    if (targets.size() < size) targets.resize(size);
    for (std::size_t r = 0; r < offsets.size(); ++r) {
        const std::int64_t o = offsets[r];
        if (o < 0 || o > last)
            throw Error("Text window offset " + std::to_string(o) + " is outside the " +
                        (which == TextPart::train ? "training" : "test") + " part, whose windows start at 0.." +
                        std::to_string(last) + ".");
        const auto* from = tokens.data() + o;
        std::copy(from, from + c, inputs.begin() + static_cast<std::ptrdiff_t>(r * c));
        std::copy(from + 1, from + 1 + c, targets.begin() + static_cast<std::ptrdiff_t>(r * c));
    }
}

void TextCorpus::fill_train_batch(std::uint64_t seed, std::int64_t step, int batch, std::vector<std::int32_t>& inputs,
                                  std::vector<std::int32_t>& targets) const {
    const std::vector<std::int64_t> offsets = train_batch_offsets(seed, step, batch);
    fill_windows(TextPart::train, offsets, inputs, targets);
}

void TextCorpus::fill_test_batch(std::int64_t first, std::int64_t count, std::vector<std::int32_t>& inputs,
                                 std::vector<std::int32_t>& targets) const {
    const std::int64_t windows = test_samples();
    if (first < 0 || count < 1 || first > windows || count > windows - first)
        throw Error("Test windows " + std::to_string(first) + " to " + std::to_string(first + count - 1) +
                    " are not all there: the test part holds windows 0.." + std::to_string(windows - 1) + ".");
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) offsets[static_cast<std::size_t>(i)] = (first + i) * m_context;
    fill_windows(TextPart::test, offsets, inputs, targets);
}

std::vector<std::int32_t> TextCorpus::encode(std::string_view text) const {
    if (const std::size_t bad = first_bad_utf8(text); bad != std::string_view::npos)
        throw Error("The text to encode is not UTF-8: the byte " + hex_byte(static_cast<unsigned char>(text[bad])) +
                    " at byte offset " + std::to_string(bad) + " does not start a well-formed UTF-8 character.");
    std::vector<std::int32_t> ids;
    ids.reserve(text.size());
    if (m_vocabulary == TextVocabulary::bytes) {
        for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
        return ids;
    }
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_char_length(text, i);
        const char32_t cp = code_point(text, i, n);
        const auto at = std::lower_bound(m_characters.begin(), m_characters.end(), cp);
        ids.push_back(at != m_characters.end() && *at == cp ? static_cast<std::int32_t>(at - m_characters.begin())
                                                            : unknown_id());
        i += n;
    }
    return ids;
}

std::string TextCorpus::decode(std::span<const std::int32_t> ids) const {
    const int size = vocab_size();
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= size)
            throw Error("Token id " + std::to_string(ids[i]) + " (at position " + std::to_string(i) +
                        ") is outside the vocabulary of " + std::to_string(size) + " ids (0.." +
                        std::to_string(size - 1) + ").");
    std::string out;
    if (m_vocabulary == TextVocabulary::chars) {
        for (const std::int32_t id : ids) {
            if (id == unknown_id())
                out += kReplacement;
            else
                append_utf8(out, m_characters[static_cast<std::size_t>(id)]);
        }
        return out;
    }
    std::string raw(ids.size(), '\0');
    for (std::size_t i = 0; i < ids.size(); ++i) raw[i] = static_cast<char>(static_cast<unsigned char>(ids[i]));
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size();) {
        const std::size_t n = utf8_char_length(raw, i);
        if (n == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(raw, i, n);
            i += n;
        }
    }
    return out;
}

}  // namespace mantissa::data
