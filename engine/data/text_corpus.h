// A text corpus for training a language model on next-token prediction: any UTF-8 text file,
// encoded once into token ids, split by position into a training part and a test part, and cut
// into windows of context + 1 tokens (the inputs, and the same tokens shifted by one as targets).
//
// Vocabularies. `bytes`: 256 ids, one per byte value, so every text encodes and a model may emit
// bytes that are not UTF-8 (decode replaces those with U+FFFD). `chars`: the distinct Unicode code
// points of the training part, sorted, as ids 0..V-1, plus one reserved unknown id V, for a
// character of the test part (or of a prompt) that the training part never holds; vocab_size() is
// V + 1 whether or not any such character occurs, so it depends on the training part only.
//
// Split. The test part is the last test_fraction of the tokens (floor(tokens × test_fraction)),
// starting at a character boundary: with `bytes`, a split that would fall inside a multi-byte
// character moves back to the character's first byte (so the test part only grows). Each part
// must hold at least context + 1 tokens.
//
// Windows. A window at offset o of a part is its tokens [o, o + context) as inputs and
// [o + 1, o + context + 1) as targets. Training windows start at offsets drawn uniformly from
// [0, train_tokens - context - 1] by a generator seeded with (seed, step) alone, so step 7 of a
// run draws the same batch whether or not steps 0..6 ran in this process; train_samples() is
// floor((train_tokens - 1) / context), the number of windows that would tile the part once, as
// the length of an "epoch". Test windows are consecutive and do not overlap in their inputs:
// window i starts at i × context, so every test token after the first is a target exactly once
// (test_samples() = floor((test_tokens - 1) / context); the few tokens after the last window are
// not used).
//
// Checks, each refused with one sentence naming the file (mantissa::Error): the file must exist and
// be a regular file of at most 1 GiB (user_file.h), and the memory its tokens take (32 bits
// each) must fit what this process may use (data/memory_budget.h), both before it is read; it must
// not be empty; not UTF-16 or UTF-32 (by a byte-order mark, or a NUL in every second byte); not
// binary (a NUL byte, or more than 10% of its bytes control characters other than tab, line feed,
// vertical tab, form feed and carriage return); well-formed UTF-8 (the first byte that is not is
// named, with its offset: Latin-1 and other 8-bit encodings end here); and long enough for both
// parts. A UTF-8 byte-order mark at the start is dropped. Messages: docs/datasets.md, "Text".
// Any thread; a TextCorpus is immutable once built, so const calls may run on several threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "user_file.h"

namespace mantissa::data {

enum class TextVocabulary { bytes, chars };

inline constexpr int kMinTextContext = 1;
inline constexpr int kMaxTextContext = 4096;
inline constexpr double kMaxTextTestFraction = 0.5;
inline constexpr UserFileLimit kTextFileLimit{std::uint64_t{1} << 30, "1 GiB, the limit for a text corpus file"};

// "bytes" or "chars".
const char* text_vocabulary_name(TextVocabulary vocabulary);

// The vocabulary named `name` ("bytes" or "chars"); anything else throws "<key> 'x' is not a
// vocabulary: use 'bytes' or 'chars'." with `key` naming where the name came from.
TextVocabulary text_vocabulary_from_name(const std::string& name, const std::string& key);

struct TextCorpusOptions {
    TextVocabulary vocabulary = TextVocabulary::chars;
    int context = 128;           // tokens per sample, kMinTextContext..kMaxTextContext
    double test_fraction = 0.1;  // share of the tokens held out, in (0, 0.5]
};

// The part of a corpus a window is taken from.
enum class TextPart { train, test };

class TextCorpus {
public:
    // Reads the text file `path`. Throws mantissa::Error on every refusal listed above.
    static TextCorpus read_file(const std::string& path, const TextCorpusOptions& options);

    // The same from text already in memory; `what` names it in messages ("The text file a.txt",
    // "The fortunes corpus in /usr/share/games/fortunes"). Checks as read_file does, except that
    // byte offsets are those of `text`.
    static TextCorpus from_text(std::string_view text, const std::string& what, const TextCorpusOptions& options);

    TextVocabulary vocabulary() const { return m_vocabulary; }
    int context() const { return m_context; }
    double test_fraction() const { return m_test_fraction; }

    // The number of ids: 256 for bytes; distinct training characters + 1 (the unknown id) for chars.
    int vocab_size() const;
    // chars: the reserved id of a character the training part lacks (vocab_size() - 1); bytes: -1.
    std::int32_t unknown_id() const;
    // chars: the code point of each id below unknown_id(), ascending; bytes: empty.
    const std::vector<char32_t>& characters() const { return m_characters; }

    // Every token, the training part first: [0, train_tokens()) then [train_tokens(), tokens()).
    const std::vector<std::int32_t>& tokens() const { return m_tokens; }
    std::int64_t train_tokens() const { return m_split; }
    std::int64_t test_tokens() const { return static_cast<std::int64_t>(m_tokens.size()) - m_split; }
    std::span<const std::int32_t> part(TextPart which) const;
    // chars: how many test tokens are the unknown id; bytes: 0.
    std::int64_t test_unknown() const { return m_test_unknown; }

    // Windows per part: floor((part tokens - 1) / context), at least 1 each.
    std::int64_t train_samples() const;
    std::int64_t test_samples() const;
    // The number of offsets a training window may start at: train_tokens() - context().
    std::int64_t train_offsets() const;

    // The offsets of the `batch` training windows of (seed, step), each in [0, train_offsets()).
    std::vector<std::int64_t> train_batch_offsets(std::uint64_t seed, std::int64_t step, int batch) const;

    // Fills inputs and targets, (offsets.size(), context) each, row r the window at offsets[r] of
    // `which`. Buffers are resized only when too small (no allocation per step; the first
    // offsets.size() × context values are the batch). An offset outside [0, part tokens - context)
    // throws.
    void fill_windows(TextPart which, std::span<const std::int64_t> offsets, std::vector<std::int32_t>& inputs,
                      std::vector<std::int32_t>& targets) const;
    // The `batch` training windows of (seed, step) (train_batch_offsets), batch >= 1.
    void fill_train_batch(std::uint64_t seed, std::int64_t step, int batch, std::vector<std::int32_t>& inputs,
                          std::vector<std::int32_t>& targets) const;
    // Test windows first .. first + count - 1, which must lie in [0, test_samples()).
    void fill_test_batch(std::int64_t first, std::int64_t count, std::vector<std::int32_t>& inputs,
                         std::vector<std::int32_t>& targets) const;

    // Encodes `text` (a prompt) with this vocabulary: bytes as they are; chars one id per code
    // point, unknown_id() for one the training part lacks. Text that is not UTF-8 throws, naming
    // the offset.
    std::vector<std::int32_t> encode(std::string_view text) const;

    // The text of `ids`, always well-formed UTF-8: bytes are joined and each byte that does not
    // start a well-formed UTF-8 character (a stray continuation byte, a character cut short, an
    // overlong form, a surrogate) becomes U+FFFD; the chars unknown id becomes U+FFFD. An id
    // outside 0..vocab_size()-1 throws.
    std::string decode(std::span<const std::int32_t> ids) const;

private:
    TextCorpus() = default;

    TextVocabulary m_vocabulary = TextVocabulary::chars;
    int m_context = 0;
    double m_test_fraction = 0.0;
    std::vector<std::int32_t> m_tokens;
    std::int64_t m_split = 0;  // first token of the test part
    std::vector<char32_t> m_characters;
    std::int64_t m_test_unknown = 0;
};

// The sentence-throwing checks read_file makes on a file's bytes, for a caller that reads text by
// other means (the fortunes builder checks each file this way): not empty, not UTF-16/32, not
// binary, well-formed UTF-8. `what` starts the sentence ("The text file a.txt").
void check_text_bytes(std::string_view bytes, const std::string& what);

}  // namespace mantissa::data
