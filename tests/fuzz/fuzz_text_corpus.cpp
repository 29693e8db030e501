// Fuzz target: the text corpus for language models (data/text_corpus.h) and the fortunes corpus
// (data/fortunes_corpus.h). The input's first byte picks the options (vocabulary, a context of 1..16,
// a test_fraction of 0.05..0.5); the rest is a text file. TextCorpus::read_file either refuses it
// with one sentence or gives a corpus that holds to everything text_corpus.h promises: the text is
// UTF-8 without NUL bytes; the tokens are its bytes (or code points) after a byte-order mark; each
// part holds context + 1 tokens at least, the test part at least floor(tokens × test_fraction) and
// starting at a character; the chars ids are the training part's code points in ascending order;
// decode gives back the text (the training part, for chars); encode gives back the tokens; training
// and test windows are their part's tokens with targets shifted by one; and decode of any ids in
// range is well-formed UTF-8. Then the rest stands for one fortune file beside a valid one, and the
// fortunes corpus either refuses it with a sentence or holds no separator line.
// Corpus: tests/fuzz/corpus/fuzz_text_corpus (docs/fuzzing.md).
#include <cmath>

#include "data/fortunes_corpus.h"
#include "data/text_corpus.h"
#include "error.h"
#include "fuzz_util.h"

namespace {

namespace md = mantissa::data;

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF),
// written apart from the engine's own check.
bool is_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        char32_t cp = 0, min = 0;
        if (b < 0x80) {
            ++i;
            continue;
        }
        if ((b & 0xE0) == 0xC0)
            n = 2, cp = b & 0x1F, min = 0x80;
        else if ((b & 0xF0) == 0xE0)
            n = 3, cp = b & 0x0F, min = 0x800;
        else if ((b & 0xF8) == 0xF0)
            n = 4, cp = b & 0x07, min = 0x10000;
        else
            return false;
        if (i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

std::size_t code_points(std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

void check_windows(const md::TextCorpus& c, md::TextPart which, const std::vector<std::int64_t>& offsets,
                   const std::vector<std::int32_t>& inputs, const std::vector<std::int32_t>& targets) {
    const auto part = c.part(which);
    const auto ctx = static_cast<std::size_t>(c.context());
    if (inputs.size() < offsets.size() * ctx || targets.size() < offsets.size() * ctx)
        fuzz::fail("window buffers that are too small");
    for (std::size_t r = 0; r < offsets.size(); ++r) {
        const std::int64_t o = offsets[r];
        if (o < 0 || static_cast<std::size_t>(o) + ctx + 1 > part.size()) fuzz::fail("a window outside its part");
        for (std::size_t k = 0; k < ctx; ++k)
            if (inputs[r * ctx + k] != part[static_cast<std::size_t>(o) + k] ||
                targets[r * ctx + k] != part[static_cast<std::size_t>(o) + k + 1])
                fuzz::fail("a window that is not its part's tokens, targets shifted by one");
    }
}

void check_corpus(const md::TextCorpus& c, std::string_view text, const md::TextCorpusOptions& o,
                  const std::uint8_t* data, std::size_t size) {
    if (!is_utf8(text) || text.find('\0') != std::string_view::npos) fuzz::fail("a text accepted that is not UTF-8");
    std::string_view body = text;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
    const bool chars = o.vocabulary == md::TextVocabulary::chars;
    const std::vector<std::int32_t>& tokens = c.tokens();
    const auto n = static_cast<std::int64_t>(tokens.size());
    if (static_cast<std::size_t>(n) != (chars ? code_points(body) : body.size())) fuzz::fail("the wrong token count");
    if (c.train_tokens() + c.test_tokens() != n) fuzz::fail("parts that do not add up");
    if (c.train_tokens() < o.context + 1 || c.test_tokens() < o.context + 1)
        fuzz::fail("a part shorter than context + 1");
    if (c.test_tokens() < static_cast<std::int64_t>(std::floor(static_cast<double>(n) * o.test_fraction)))
        fuzz::fail("a test part smaller than its fraction");
    if (c.train_samples() < 1 || c.test_samples() < 1 || c.train_offsets() < 1) fuzz::fail("a part without windows");
    const int vocab = c.vocab_size();
    for (const std::int32_t t : tokens)
        if (t < 0 || t >= vocab) fuzz::fail("a token outside the vocabulary");
    if (chars) {
        const auto& cs = c.characters();
        if (static_cast<int>(cs.size()) + 1 != vocab || c.unknown_id() != vocab - 1)
            fuzz::fail("a chars vocabulary of the wrong size");
        for (std::size_t i = 1; i < cs.size(); ++i)
            if (cs[i - 1] >= cs[i]) fuzz::fail("chars ids that are not in ascending code point order");
        for (const std::int32_t t : c.part(md::TextPart::train))
            if (t == c.unknown_id()) fuzz::fail("the unknown id in the training part");
        // The training part decodes to the start of the text.
        const std::string train = c.decode(c.part(md::TextPart::train));
        if (!body.starts_with(train) || code_points(train) != static_cast<std::size_t>(c.train_tokens()))
            fuzz::fail("a training part that does not decode to the start of the text");
        std::int64_t unknown = 0;
        for (const std::int32_t t : c.part(md::TextPart::test)) unknown += t == c.unknown_id();
        if (unknown != c.test_unknown()) fuzz::fail("a count of unknown tokens that is wrong");
    } else {
        if (vocab != 256 || c.unknown_id() != -1) fuzz::fail("a bytes vocabulary of the wrong size");
        if (c.decode(tokens) != body) fuzz::fail("bytes that do not decode to the text");
        const auto first = static_cast<unsigned char>(body[static_cast<std::size_t>(c.train_tokens())]);
        if ((first & 0xC0) == 0x80) fuzz::fail("a test part that starts inside a character");
    }
    if (c.encode(body) != tokens) fuzz::fail("encode that does not give the tokens");

    // Windows: a training batch from the input's bytes as seed and step, and every test window.
    const std::uint64_t seed = size > 1 ? data[1] : 0;
    const std::int64_t step = size > 2 ? data[2] : 0;
    std::vector<std::int32_t> inputs, targets;
    c.fill_train_batch(seed, step, 3, inputs, targets);
    const std::vector<std::int64_t> offsets = c.train_batch_offsets(seed, step, 3);
    check_windows(c, md::TextPart::train, offsets, inputs, targets);
    c.fill_test_batch(0, c.test_samples(), inputs, targets);
    std::vector<std::int64_t> test_offsets;
    for (std::int64_t i = 0; i < c.test_samples(); ++i) test_offsets.push_back(i * c.context());
    check_windows(c, md::TextPart::test, test_offsets, inputs, targets);

    // Any ids in range decode to well-formed UTF-8 (the input's bytes, as ids).
    std::vector<std::int32_t> ids;
    for (std::size_t i = 0; i < size; ++i)
        ids.push_back(static_cast<std::int32_t>(data[i] % static_cast<unsigned>(vocab)));
    if (!is_utf8(c.decode(ids))) fuzz::fail("decode that is not UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static constexpr double kFractions[] = {0.05, 0.1, 0.25, 0.5};
    md::TextCorpusOptions o;
    o.vocabulary = (data[0] & 1) ? md::TextVocabulary::bytes : md::TextVocabulary::chars;
    o.context = 1 + ((data[0] >> 1) & 15);
    o.test_fraction = kFractions[(data[0] >> 5) & 3];
    const std::uint8_t* file = data + 1;
    const std::size_t file_size = size - 1;
    const std::string_view text(reinterpret_cast<const char*>(file), file_size);

    const std::string path = fuzz::write_input("corpus.txt", file, file_size);
    try {
        const md::TextCorpus c = md::TextCorpus::read_file(path, o);
        check_corpus(c, text, o, data, size);
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }

    // The text as a fortune file "b" beside a valid one, "a".
    const std::string folder = fuzz::scratch() + "/fortunes";
    std::filesystem::create_directories(folder);
    static const std::string valid = "A quote to start with, long enough for any context here.\n%\n";
    fuzz::write_input("fortunes/a", reinterpret_cast<const std::uint8_t*>(valid.data()), valid.size());
    fuzz::write_input("fortunes/b", file, file_size);
    try {
        const std::string joined = md::fortunes_text(folder);
        if (!joined.starts_with("A quote to start with, long enough for any context here.\n\n"))
            fuzz::fail("a fortunes text that does not start with the first file");
        if (joined.find("\n%\n") != std::string::npos || joined.find("\n%\r\n") != std::string::npos)
            fuzz::fail("a separator line left in the fortunes text");
        if (!joined.ends_with('\n')) fuzz::fail("a fortunes text that does not end with a line break");
        const md::TextCorpus c = md::read_fortunes_corpus(folder, o);
        if (!is_utf8(c.decode(c.tokens()))) fuzz::fail("a fortunes corpus that does not decode to UTF-8");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
