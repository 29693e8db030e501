// The text corpus for language models (data/text_corpus.h) and the fortunes corpus
// (data/fortunes_corpus.h): encoding round trips with both vocabularies, the split by position and
// at a character boundary, windows whose targets are the inputs shifted by one, training offsets
// drawn from (seed, step) alone, decode's U+FFFD for bytes that are not UTF-8, and every refusal
// with its whole sentence. Every file is written here, in a temporary folder, except in the last
// test, which reads the installed fortunes package when it is there.
#include <QTemporaryDir>
#include <QTest>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "data/fortunes_corpus.h"
#include "data/text_corpus.h"
#include "data_test_util.h"
#include "error.h"

using namespace mantissa;
using data::TextCorpus;
using data::TextCorpusOptions;
using data::TextPart;
using data::TextVocabulary;
using mantissa::test::error_of;
namespace fs = std::filesystem;

namespace {

TextCorpusOptions options(TextVocabulary vocabulary, int context, double test_fraction = 0.1) {
    TextCorpusOptions o;
    o.vocabulary = vocabulary;
    o.context = context;
    o.test_fraction = test_fraction;
    return o;
}

bool write(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
}

// `count` bytes of varied ASCII text: letters, spaces and line breaks.
std::string ascii_text(std::size_t count) {
    static constexpr char kAlphabet[] = "the quick brown fox jumps over a lazy dog\nTHE END. ";
    std::string s(count, ' ');
    for (std::size_t i = 0; i < count; ++i) s[i] = kAlphabet[(i * 7 + i / 13) % (sizeof kAlphabet - 1)];
    return s;
}

}  // namespace

class TestTextCorpus : public QObject {
    Q_OBJECT

private slots:
    // ---- encoding

    void bytes_round_trip() {
        // Two-, three- and four-byte characters; each byte its own id.
        std::string text = ascii_text(300) + "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n";
        text += text;
        const TextCorpus c = TextCorpus::from_text(text, "The text t", options(TextVocabulary::bytes, 8));
        QCOMPARE(c.vocab_size(), 256);
        QCOMPARE(c.unknown_id(), std::int32_t{-1});
        QVERIFY(c.characters().empty());
        QCOMPARE(c.tokens().size(), text.size());
        for (std::size_t i = 0; i < text.size(); ++i)
            QCOMPARE(c.tokens()[i], std::int32_t{static_cast<unsigned char>(text[i])});
        QCOMPARE(c.decode(c.tokens()), text);
        QCOMPARE(c.encode(text), c.tokens());
        QCOMPARE(c.train_tokens() + c.test_tokens(), static_cast<std::int64_t>(text.size()));
    }

    void chars_round_trip() {
        const std::string piece = "na\xC3\xAFve \xE2\x82\xAC\xF0\x9F\x98\x80 caf\xC3\xA9\n";  // 14 characters
        std::string text;
        for (int i = 0; i < 20; ++i) text += piece;
        const TextCorpus c = TextCorpus::from_text(text, "The text t", options(TextVocabulary::chars, 8, 0.25));
        // The distinct code points of the training part, ascending, then the unknown id.
        const std::vector<char32_t> expected = {U'\n', U' ', U'a',      U'c',      U'e',      U'f',
                                                U'n',  U'v', U'\u00E9', U'\u00EF', U'\u20AC', U'\U0001F600'};
        QCOMPARE(c.characters(), expected);
        QCOMPARE(c.vocab_size(), 13);
        QCOMPARE(c.unknown_id(), std::int32_t{12});
        QCOMPARE(c.tokens().size(), std::size_t{20 * 14});
        QCOMPARE(c.test_unknown(), std::int64_t{0});
        QCOMPARE(c.decode(c.tokens()), text);
        QCOMPARE(c.encode(text), c.tokens());
        // 'n' is id 6, U+1F600 id 11.
        QCOMPARE(c.tokens()[0], std::int32_t{6});
        QCOMPARE(c.tokens()[7], std::int32_t{11});
    }

    void chars_absent_from_training_are_unknown() {
        // The training part never holds 'Q' or 'é': in the test part they are the unknown id.
        const std::string train = ascii_text(90);
        QVERIFY(train.find('Q') == std::string::npos);
        const std::string test = "aQ\xC3\xA9" + std::string(7, 'a');  // 10 characters
        const TextCorpus c = TextCorpus::from_text(train + test, "The text t", options(TextVocabulary::chars, 4, 0.1));
        QCOMPARE(c.test_tokens(), std::int64_t{10});
        QCOMPARE(c.test_unknown(), std::int64_t{2});
        const auto part = c.part(TextPart::test);
        QCOMPARE(part[1], c.unknown_id());
        QCOMPARE(part[2], c.unknown_id());
        QCOMPARE(c.vocab_size(), static_cast<int>(std::set<char>(train.begin(), train.end()).size()) + 1);
        QCOMPARE(c.decode(part), std::string("a\xEF\xBF\xBD\xEF\xBF\xBD") + std::string(7, 'a'));
        // A prompt: known characters keep their ids, others are unknown.
        const std::vector<std::int32_t> ids = c.encode("aQ");
        QCOMPARE(ids.size(), std::size_t{2});
        QCOMPARE(ids[0], part[0]);
        QCOMPARE(ids[1], c.unknown_id());
    }

    void a_utf8_byte_order_mark_is_dropped() {
        const std::string text = ascii_text(100);
        for (TextVocabulary v : {TextVocabulary::bytes, TextVocabulary::chars}) {
            const TextCorpus c = TextCorpus::from_text("\xEF\xBB\xBF" + text, "The text t", options(v, 4));
            QCOMPARE(c.tokens().size(), text.size());
            const auto train = static_cast<std::size_t>(c.train_tokens());
            QCOMPARE(c.decode(c.part(TextPart::train)), text.substr(0, train));
        }
    }

    void decode_replaces_what_is_not_utf8() {
        const TextCorpus c = TextCorpus::from_text(ascii_text(100), "The text t", options(TextVocabulary::bytes, 4));
        const std::string fffd = "\xEF\xBF\xBD";
        QCOMPARE(c.decode(std::vector<std::int32_t>{0xE9, 'a'}), fffd + "a");    // Latin-1 é
        QCOMPARE(c.decode(std::vector<std::int32_t>{0xE2, 0x82}), fffd + fffd);  // cut short
        QCOMPARE(c.decode(std::vector<std::int32_t>{0xE2, 0x82, 0xAC}), std::string("\xE2\x82\xAC"));
        QCOMPARE(c.decode(std::vector<std::int32_t>{0x80, 'b', 0xC0, 0xAF}),
                 fffd + "b" + fffd + fffd);                                                   // stray, overlong
        QCOMPARE(c.decode(std::vector<std::int32_t>{0xED, 0xA0, 0x80}), fffd + fffd + fffd);  // a surrogate
        QCOMPARE(c.decode(std::vector<std::int32_t>{}), std::string());
        QCOMPARE(error_of([&] {
                     c.decode(std::vector<std::int32_t>{'a', 256});
                 }),
                 std::string("Token id 256 (at position 1) is outside the vocabulary of 256 ids (0..255)."));
        QCOMPARE(error_of([&] { c.decode(std::vector<std::int32_t>{-1}); }),
                 std::string("Token id -1 (at position 0) is outside the vocabulary of 256 ids (0..255)."));
        const TextCorpus chars =
            TextCorpus::from_text("abababababab", "The text t", options(TextVocabulary::chars, 4, 0.5));
        QCOMPARE(chars.vocab_size(), 3);
        QCOMPARE(chars.decode(std::vector<std::int32_t>{1, 0, 2}), "ba" + fffd);
        QCOMPARE(error_of([&] { chars.decode(std::vector<std::int32_t>{3}); }),
                 std::string("Token id 3 (at position 0) is outside the vocabulary of 3 ids (0..2)."));
    }

    void encode_refuses_text_that_is_not_utf8() {
        const TextCorpus c = TextCorpus::from_text(ascii_text(100), "The text t", options(TextVocabulary::chars, 4));
        QCOMPARE(error_of([&] { c.encode("ab\xE9"); }),
                 std::string("The text to encode is not UTF-8: the byte 0xE9 at byte offset 2 does not start a "
                             "well-formed UTF-8 character."));
    }

    void vocabulary_names() {
        QCOMPARE(data::text_vocabulary_from_name("bytes", "text.vocabulary"), TextVocabulary::bytes);
        QCOMPARE(data::text_vocabulary_from_name("chars", "text.vocabulary"), TextVocabulary::chars);
        QCOMPARE(std::string(data::text_vocabulary_name(TextVocabulary::chars)), std::string("chars"));
        QCOMPARE(error_of([] { data::text_vocabulary_from_name("words\n", "text.vocabulary"); }),
                 std::string("text.vocabulary 'words\\n' is not a vocabulary: use 'bytes' or 'chars'."));
    }

    // ---- the split

    void split_by_position_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<double>("fraction");
        QTest::addColumn<int>("test");
        QTest::newRow("1000 at 0.1") << 1000 << 0.1 << 100;
        QTest::newRow("1000 at 0.25") << 1000 << 0.25 << 250;
        QTest::newRow("1000 at 0.5") << 1000 << 0.5 << 500;
        QTest::newRow("999 at 0.1 (floor)") << 999 << 0.1 << 99;
        QTest::newRow("101 at 0.05") << 101 << 0.05 << 5;
    }

    void split_by_position() {
        QFETCH(int, tokens);
        QFETCH(double, fraction);
        QFETCH(int, test);
        const std::string text = ascii_text(static_cast<std::size_t>(tokens));
        for (TextVocabulary v : {TextVocabulary::bytes, TextVocabulary::chars}) {
            const TextCorpus c = TextCorpus::from_text(text, "The text t", options(v, 4, fraction));
            QCOMPARE(c.test_tokens(), std::int64_t{test});
            QCOMPARE(c.train_tokens(), std::int64_t{tokens - test});
            // The test part is the end of the text.
            QCOMPARE(c.decode(c.part(TextPart::test)), text.substr(static_cast<std::size_t>(tokens - test)));
            QCOMPARE(c.decode(c.part(TextPart::train)), text.substr(0, static_cast<std::size_t>(tokens - test)));
        }
    }

    void split_moves_back_to_a_character_boundary() {
        // 96 ASCII bytes, then '€' (3 bytes, 96..98), then 1 byte: 100 bytes. At 0.1 the split would
        // be byte 90; at 0.02, byte 98, inside '€': it moves back to 96.
        const std::string text = ascii_text(96) + "\xE2\x82\xAC" + "Z";
        const TextCorpus c = TextCorpus::from_text(text, "The text t", options(TextVocabulary::bytes, 1, 0.02));
        QCOMPARE(c.train_tokens(), std::int64_t{96});
        QCOMPARE(c.test_tokens(), std::int64_t{4});
        QCOMPARE(c.decode(c.part(TextPart::test)), std::string("\xE2\x82\xAC"
                                                               "Z"));
        // In characters the same text is 98 tokens; at 0.03, 2 of them (floor 2.94) are the test part,
        // and as neither '€' nor 'Z' occurs in the training part, both are the unknown id.
        const TextCorpus chars = TextCorpus::from_text(text, "The text t", options(TextVocabulary::chars, 1, 0.03));
        QCOMPARE(chars.tokens().size(), std::size_t{98});
        QCOMPARE(chars.test_tokens(), std::int64_t{2});
        QCOMPARE(chars.test_unknown(), std::int64_t{2});
        QCOMPARE(chars.decode(chars.part(TextPart::test)), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
    }

    // ---- windows

    void samples_per_part() {
        // 1000 tokens at 0.1: 900 for training, 100 for testing; context 16.
        const TextCorpus c = TextCorpus::from_text(ascii_text(1000), "The text t", options(TextVocabulary::bytes, 16));
        QCOMPARE(c.train_samples(), std::int64_t{899 / 16});  // 56
        QCOMPARE(c.test_samples(), std::int64_t{99 / 16});    // 6
        QCOMPARE(c.train_offsets(), std::int64_t{900 - 16});
        // Exactly context + 1 tokens per part: one window each.
        const TextCorpus tight =
            TextCorpus::from_text(ascii_text(34), "The text t", options(TextVocabulary::bytes, 16, 0.5));
        QCOMPARE(tight.train_samples(), std::int64_t{1});
        QCOMPARE(tight.test_samples(), std::int64_t{1});
        QCOMPARE(tight.train_offsets(), std::int64_t{1});
    }

    void training_windows_are_targets_shifted_by_one() {
        const std::string text = ascii_text(2000);
        const TextCorpus c = TextCorpus::from_text(text, "The text t", options(TextVocabulary::chars, 32));
        const int batch = 7;
        std::vector<std::int32_t> inputs, targets;
        c.fill_train_batch(42, 3, batch, inputs, targets);
        QVERIFY(inputs.size() >= std::size_t{batch * 32});
        QVERIFY(targets.size() >= std::size_t{batch * 32});
        const std::vector<std::int64_t> offsets = c.train_batch_offsets(42, 3, batch);
        const auto train = c.part(TextPart::train);
        for (int r = 0; r < batch; ++r) {
            const std::int64_t o = offsets[static_cast<std::size_t>(r)];
            QVERIFY(o >= 0 && o < c.train_offsets());
            for (int k = 0; k < 32; ++k) {
                const auto at = static_cast<std::size_t>(r * 32 + k);
                QCOMPARE(inputs[at], train[static_cast<std::size_t>(o + k)]);
                QCOMPARE(targets[at], train[static_cast<std::size_t>(o + k + 1)]);
            }
            // The window's text is the file's text at that offset (ASCII: one byte per character).
            const std::vector<std::int32_t> row(inputs.begin() + r * 32, inputs.begin() + r * 32 + 32);
            QCOMPARE(c.decode(row), text.substr(static_cast<std::size_t>(o), 32));
        }
    }

    void test_windows_are_consecutive() {
        const TextCorpus c = TextCorpus::from_text(ascii_text(1000), "The text t", options(TextVocabulary::bytes, 16));
        const auto test = c.part(TextPart::test);
        std::vector<std::int32_t> inputs, targets;
        c.fill_test_batch(0, c.test_samples(), inputs, targets);
        // Inputs tile the part from its start; targets are the same tokens one later.
        for (std::int64_t i = 0; i < c.test_samples() * 16; ++i) {
            QCOMPARE(inputs[static_cast<std::size_t>(i)], test[static_cast<std::size_t>(i)]);
            QCOMPARE(targets[static_cast<std::size_t>(i)], test[static_cast<std::size_t>(i + 1)]);
        }
        // A later batch, into buffers that are already large enough: not resized.
        const std::size_t capacity = inputs.size();
        c.fill_test_batch(4, 2, inputs, targets);
        QCOMPARE(inputs.size(), capacity);
        QCOMPARE(inputs[0], test[64]);
        QCOMPARE(targets[31], test[96]);
        QCOMPARE(error_of([&] { c.fill_test_batch(5, 2, inputs, targets); }),
                 std::string("Test windows 5 to 6 are not all there: the test part holds windows 0..5."));
        QCOMPARE(error_of([&] { c.fill_test_batch(0, 0, inputs, targets); }),
                 std::string("Test windows 0 to -1 are not all there: the test part holds windows 0..5."));
        const std::vector<std::int64_t> outside = {0, 84};
        QCOMPARE(error_of([&] { c.fill_windows(TextPart::test, outside, inputs, targets); }),
                 std::string("Text window offset 84 is outside the test part, whose windows start at 0..83."));
        QCOMPARE(error_of([&] { c.train_batch_offsets(1, 0, 0); }),
                 std::string("A batch of text windows needs at least 1 window, not 0."));
    }

    void training_offsets_depend_on_seed_and_step_only() {
        const std::string text = ascii_text(5000);
        const TextCorpus a = TextCorpus::from_text(text, "The text a", options(TextVocabulary::bytes, 64));
        const TextCorpus b = TextCorpus::from_text(text, "The text b", options(TextVocabulary::bytes, 64));
        // Same (seed, step): the same offsets, whatever was drawn before and from which object.
        const std::vector<std::int64_t> first = a.train_batch_offsets(7, 100, 16);
        (void)b.train_batch_offsets(7, 99, 16);
        QCOMPARE(b.train_batch_offsets(7, 100, 16), first);
        QVERIFY(a.train_batch_offsets(7, 101, 16) != first);
        QVERIFY(a.train_batch_offsets(8, 100, 16) != first);
        // A smaller batch is the start of a larger one.
        const std::vector<std::int64_t> four = a.train_batch_offsets(7, 100, 4);
        QVERIFY(std::equal(four.begin(), four.end(), first.begin()));
        std::vector<std::int32_t> xa, ya, xb, yb;
        a.fill_train_batch(7, 100, 16, xa, ya);
        b.fill_train_batch(7, 100, 16, xb, yb);
        QCOMPARE(xa, xb);
        QCOMPARE(ya, yb);
    }

    void training_offsets_cover_their_range() {
        // 14 training tokens, context 4: offsets 0..9, every one of them drawn in 400 windows.
        const TextCorpus c =
            TextCorpus::from_text(ascii_text(20), "The text t", options(TextVocabulary::bytes, 4, 0.3));
        QCOMPARE(c.train_offsets(), std::int64_t{10});
        std::set<std::int64_t> seen;
        for (std::int64_t step = 0; step < 100; ++step)
            for (std::int64_t o : c.train_batch_offsets(1, step, 4)) seen.insert(o);
        QCOMPARE(seen.size(), std::size_t{10});
        QCOMPARE(*seen.begin(), std::int64_t{0});
        QCOMPARE(*seen.rbegin(), std::int64_t{9});
    }

    // ---- refusals

    void refuses_files_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("says");  // after "The text file <path> "
        const QByteArray text = QByteArray::fromStdString(ascii_text(200));
        QTest::newRow("empty") << QByteArray() << "is empty; a text corpus needs UTF-8 text.";
        QTest::newRow("UTF-16 BOM") << QByteArray("\xFF\xFEh\0i\0", 6)
                                    << "is UTF-16 text (it starts with a UTF-16 byte-order mark), an encoding Mantissa "
                                       "does not read; save it as UTF-8.";
        QTest::newRow("UTF-16BE BOM") << QByteArray("\xFE\xFF\0h\0i", 6)
                                      << "is UTF-16 text (it starts with a UTF-16 byte-order mark), an encoding "
                                         "Mantissa does not read; save it as UTF-8.";
        QTest::newRow("UTF-32 BOM") << QByteArray("\xFF\xFE\0\0h\0\0\0", 8)
                                    << "is UTF-32 text (it starts with a UTF-32 byte-order mark), an encoding Mantissa "
                                       "does not read; save it as UTF-8.";
        QTest::newRow("UTF-16 without BOM") << QByteArray("h\0e\0l\0l\0o\0", 10)
                                            << "looks like UTF-16 text (every second byte is NUL), an encoding "
                                               "Mantissa does not read; save it as UTF-8.";
        QTest::newRow("NUL") << text + QByteArray("\0", 1) + text
                             << "is a binary file, not text: it holds a NUL byte at byte offset 200.";
        QByteArray controls = text;
        for (int i = 0; i < 21; ++i) controls[i * 9] = '\x1B';
        QTest::newRow("control bytes") << controls
                                       << "is a binary file, not text: 21 of its 200 bytes are control characters "
                                          "(other than tab and line or page breaks), more than 10%.";
        QTest::newRow("Latin-1") << QByteArray("caf\xE9 au lait")
                                 << "is not UTF-8 text: the byte 0xE9 at byte offset 3 does not start a well-formed "
                                    "UTF-8 character (Latin-1, Windows-1252 and other 8-bit encodings are not read); "
                                    "save it as UTF-8.";
        QTest::newRow("cut short") << text + QByteArray("\xE2\x82")
                                   << "is not UTF-8 text: the byte 0xE2 at byte offset 200 does not start a "
                                      "well-formed UTF-8 character (Latin-1, Windows-1252 and other 8-bit encodings "
                                      "are not read); save it as UTF-8.";
        QTest::newRow("surrogate") << QByteArray("ab\xED\xA0\x80")
                                   << "is not UTF-8 text: the byte 0xED at byte offset 2 does not start a well-formed "
                                      "UTF-8 character (Latin-1, Windows-1252 and other 8-bit encodings are not read); "
                                      "save it as UTF-8.";
        QTest::newRow("too short") << text.left(100)
                                   << "holds 100 tokens (bytes), too few for context 64 and test_fraction 0.1: each "
                                      "part needs at least 65 tokens (one context + 1), so the text needs at least "
                                      "650; use a longer text or a smaller context.";
        QTest::newRow("only a BOM") << QByteArray("\xEF\xBB\xBF")
                                    << "holds 0 tokens (bytes), too few for context 64 and test_fraction 0.1: each "
                                       "part needs at least 65 tokens (one context + 1), so the text needs at least "
                                       "650; use a longer text or a smaller context.";
    }

    void refuses_files() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, says);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/corpus.txt";
        QVERIFY(write(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size()))));
        QCOMPARE(error_of([&] { TextCorpus::read_file(path, options(TextVocabulary::bytes, 64)); }),
                 "The text file " + path + " " + says.toStdString());
    }

    void refuses_a_split_that_leaves_a_part_too_short() {
        // context 3, test_fraction 0.5, 8 bytes "abcé" + "xyz": the split at byte 4 falls inside 'é'
        // and moves back to byte 3, leaving 3 tokens for training where 4 are needed.
        const std::string what = "The text t";
        QCOMPARE(
            error_of([&] { TextCorpus::from_text("abc\xC3\xA9xyz", what, options(TextVocabulary::bytes, 3, 0.5)); }),
            what +
                " holds 8 tokens (bytes), too few for context 3 and test_fraction 0.5: each part needs at "
                "least 4 tokens (one context + 1), but the split at a character boundary leaves 3 for "
                "training and 5 for testing; use a longer text or a smaller context.");
        // The same in characters: 7 tokens, 8 needed.
        QCOMPARE(
            error_of([&] { TextCorpus::from_text("abc\xC3\xA9xyz", what, options(TextVocabulary::chars, 3, 0.5)); }),
            what +
                " holds 7 tokens (characters), too few for context 3 and test_fraction 0.5: each part needs "
                "at least 4 tokens (one context + 1), so the text needs at least 8; use a longer text or a "
                "smaller context.");
        // Exactly enough: 8 characters.
        const TextCorpus c = TextCorpus::from_text("abc\xC3\xA9wxyz", what, options(TextVocabulary::chars, 3, 0.5));
        QCOMPARE(c.train_tokens(), std::int64_t{4});
        QCOMPARE(c.test_tokens(), std::int64_t{4});
        // A test_fraction so small that no text is long enough.
        QCOMPARE(error_of([&] { TextCorpus::from_text("abcdefgh", what, options(TextVocabulary::bytes, 3, 1e-300)); }),
                 what +
                     " holds 8 tokens (bytes), too few for context 3 and test_fraction 1e-300: each part needs at "
                     "least 4 tokens (one context + 1), and with so small a test_fraction no text is long enough; "
                     "raise test_fraction.");
    }

    void refuses_options_data() {
        QTest::addColumn<int>("context");
        QTest::addColumn<double>("fraction");
        QTest::addColumn<QString>("says");
        QTest::newRow("context 0") << 0 << 0.1 << "cannot be read with context 0: the context must be 1..4096 tokens.";
        QTest::newRow("context 4097") << 4097 << 0.1
                                      << "cannot be read with context 4097: the context must be 1..4096 tokens.";
        QTest::newRow("context -5") << -5 << 0.1
                                    << "cannot be read with context -5: the context must be 1..4096 tokens.";
        QTest::newRow("fraction 0")
            << 8 << 0.0 << "cannot be split with test_fraction 0: it must be greater than 0 and at most 0.5.";
        QTest::newRow("fraction 0.6")
            << 8 << 0.6
            << "cannot be split with test_fraction 0.6: it must be greater than 0 and at most "
               "0.5.";
        QTest::newRow("fraction -0.1") << 8 << -0.1
                                       << "cannot be split with test_fraction -0.1: it must be greater than 0 and at "
                                          "most 0.5.";
        QTest::newRow("fraction NaN")
            << 8 << std::numeric_limits<double>::quiet_NaN()
            << "cannot be split with test_fraction nan: it must be greater than 0 and at most "
               "0.5.";
    }

    void refuses_options() {
        QFETCH(int, context);
        QFETCH(double, fraction);
        QFETCH(QString, says);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/corpus.txt";
        QVERIFY(write(path, ascii_text(10000)));
        for (TextVocabulary v : {TextVocabulary::bytes, TextVocabulary::chars})
            QCOMPARE(error_of([&] { TextCorpus::read_file(path, options(v, context, fraction)); }),
                     "The text file " + path + " " + says.toStdString());
        // The boundaries themselves are accepted.
        QVERIFY(error_of([&] { TextCorpus::read_file(path, options(TextVocabulary::bytes, 1, 0.5)); }).empty());
        QVERIFY(error_of([&] { TextCorpus::read_file(path, options(TextVocabulary::bytes, 4096, 0.5)); }).empty());
    }

    void refuses_what_is_not_a_readable_file() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        const TextCorpusOptions o = options(TextVocabulary::chars, 8);
        QCOMPARE(error_of([&] { TextCorpus::read_file(root + "/none.txt", o); }),
                 "The text file " + root + "/none.txt does not exist.");
        QCOMPARE(error_of([&] { TextCorpus::read_file(root, o); }),
                 "The text file " + root + " is a folder, not a file.");
        QCOMPARE(error_of([&] { TextCorpus::read_file("/dev/zero", o); }),
                 std::string("The text file /dev/zero is a device, not a file."));
        const std::string fifo = root + "/fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(error_of([&] { TextCorpus::read_file(fifo, o); }),
                 "The text file " + fifo + " is a FIFO (a named pipe), not a file.");
    }

    void refuses_an_unreadable_file() {
        if (::geteuid() == 0) QSKIP("running as root, which reads a file whatever its permissions");
        QTemporaryDir dir;
        const std::string locked = dir.path().toStdString() + "/locked.txt";
        QVERIFY(write(locked, ascii_text(1000)));
        QCOMPARE(::chmod(locked.c_str(), 0), 0);
        QCOMPARE(error_of([&] { TextCorpus::read_file(locked, options(TextVocabulary::chars, 8)); }),
                 "The text file " + locked + " cannot be opened: Permission denied.");
    }

    void refuses_a_file_over_the_limit_by_its_size() {
        // A sparse file: its stated size is all that is looked at, so nothing is read or allocated.
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/huge.txt";
        QVERIFY(write(path, "a"));
        QCOMPARE(::truncate(path.c_str(), (off_t{1} << 30) + 1), 0);
        QCOMPARE(
            error_of([&] { TextCorpus::read_file(path, options(TextVocabulary::bytes, 8)); }),
            "The text file " + path + " is 1073741825 bytes, larger than 1 GiB, the limit for a text corpus file.");
    }

    void refuses_a_file_beyond_the_memory_budget() {
#if defined(__SANITIZE_ADDRESS__)
        QSKIP("AddressSanitizer maps more address space than an address-space limit leaves");
#endif
        // 512 MiB (sparse) as bytes: 2.5 GiB of text and tokens, under an address-space limit of
        // what this process uses + 256 MiB, set in a child process so that this one keeps its memory.
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/big.txt";
        QVERIFY(write(path, "a"));
        QCOMPARE(::truncate(path.c_str(), off_t{512} << 20), 0);
        int pipe_fds[2];
        QCOMPARE(::pipe(pipe_fds), 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            ::close(pipe_fds[0]);
            long pages = 0;
            if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
                if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
                std::fclose(statm);
            }
            const auto used = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGE_SIZE));
            const rlimit limit{used + (rlim_t{256} << 20), RLIM_INFINITY};
            ::setrlimit(RLIMIT_AS, &limit);
            const std::string says = error_of([&] { TextCorpus::read_file(path, options(TextVocabulary::bytes, 8)); });
            const ssize_t written = ::write(pipe_fds[1], says.data(), says.size());
            ::_exit(written == static_cast<ssize_t>(says.size()) ? 0 : 1);
        }
        ::close(pipe_fds[1]);
        std::string says;
        char buf[512];
        for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) says.append(buf, static_cast<std::size_t>(n));
        ::close(pipe_fds[0]);
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        const std::string start = "The text file " + path + " needs about 2.5 GiB of memory, more than the ";
        QVERIFY2(says.starts_with(start), says.c_str());
        QVERIFY2(says.ends_with(" that this process's address-space limit (ulimit -v) leaves free; it was refused "
                                "before reading."),
                 says.c_str());
    }

    void reads_a_file() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/corpus.txt";
        const std::string text = "\xEF\xBB\xBF" + ascii_text(500) + "\t\f\r\n\b\a";  // a BOM, a few controls
        QVERIFY(write(path, text));
        const TextCorpus c = TextCorpus::read_file(path, options(TextVocabulary::bytes, 16, 0.2));
        QCOMPARE(c.decode(c.tokens()), text.substr(3));
        QCOMPARE(c.test_tokens(), std::int64_t{101});
    }

    // ---- the fortunes corpus

    void fortunes_are_joined_in_name_order() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        QVERIFY(write(root + "/b", "Second file.\n%\nLast quote,\ntwo lines."));  // no line break at the end
        QVERIFY(write(root + "/a", "First quote.\n%\nSecond quote\n\nwith a blank line.\n%\n"));
        QVERIFY(write(root + "/a.dat", std::string("\0\0\0\x02\0\0\0\x02", 8)));  // the index: not read
        QVERIFY(write(root + "/c", ""));                                          // empty: skipped
        QVERIFY(write(root + "/.hidden", "not read"));
        QVERIFY(fs::create_directory(root + "/off"));
        QVERIFY(write(root + "/off/d", "not read either"));
        fs::create_symlink("a", root + "/a.u8");  // Debian's link to the plain file: not read twice
        QCOMPARE(data::fortune_files(root), (std::vector<std::string>{"a", "b", "c"}));
        QCOMPARE(data::fortunes_text(root), std::string("First quote.\n\nSecond quote\n\nwith a blank line.\n\n"
                                                        "Second file.\n\nLast quote,\ntwo lines.\n"));
        // "%\r" is a separator too.
        QVERIFY(write(root + "/c", "Windows quote.\r\n%\r\n"));
        QVERIFY(data::fortunes_text(root).ends_with("two lines.\nWindows quote.\r\n\n"));
    }

    void refuses_fortune_folders() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        const TextCorpusOptions o = options(TextVocabulary::chars, 8);
        QCOMPARE(error_of([&] { data::read_fortunes_corpus(root + "/none", o); }),
                 "The fortunes folder " + root +
                     "/none does not exist; install fortunes: apt-get install fortunes (Debian), or name a folder of "
                     "fortune files.");
        QCOMPARE(error_of([&] { data::read_fortunes_corpus(root, o); }),
                 "The fortunes folder " + root +
                     " holds no fortune files (text files of quotes separated by lines holding only %); install "
                     "fortunes: apt-get install fortunes.");
        QVERIFY(write(root + "/quotes", "caf\xE9\n%\n"));
        QCOMPARE(error_of([&] { data::read_fortunes_corpus(root + "/quotes", o); }),
                 "The fortunes folder " + root +
                     "/quotes is not a folder; it should hold fortune files (install fortunes: apt-get install "
                     "fortunes).");
        QCOMPARE(error_of([&] { data::read_fortunes_corpus(root, o); }),
                 "The fortune file " + root +
                     "/quotes is not UTF-8 text: the byte 0xE9 at byte offset 3 does not start a well-formed UTF-8 "
                     "character (Latin-1, Windows-1252 and other 8-bit encodings are not read); save it as UTF-8.");
        QVERIFY(write(root + "/quotes", "Short.\n%\n"));
        QCOMPARE(error_of([&] { data::read_fortunes_corpus(root, o); }),
                 "The fortunes corpus in " + root +
                     " holds 8 tokens (characters), too few for context 8 and test_fraction 0.1: each part needs at "
                     "least 9 tokens (one context + 1), so the text needs at least 90; use a longer text or a smaller "
                     "context.");
    }

    void reads_the_installed_fortunes() {
        if (!fs::is_directory(data::kFortunesFolder))
            QSKIP("the fortunes package is not installed (apt-get install fortunes)");
        const std::string text = data::fortunes_text(data::kFortunesFolder);
        QVERIFY(text.size() > 100'000);
        QVERIFY(text.find("\n%\n") == std::string::npos);  // every separator is a blank line now
        const TextCorpus c = data::read_fortunes_corpus(data::kFortunesFolder, options(TextVocabulary::chars, 128));
        QVERIFY(c.vocab_size() > 60 && c.vocab_size() < 400);
        const std::string train = c.decode(c.part(TextPart::train));  // one code point per token
        QVERIFY(text.starts_with(train));
        QVERIFY(train.size() > text.size() * 8 / 10);
        QVERIFY(c.train_samples() > 1000 && c.test_samples() > 100);
        std::vector<std::int32_t> inputs, targets;
        c.fill_train_batch(1, 0, 4, inputs, targets);
        for (std::size_t i = 0; i < 4 * 128; ++i) QVERIFY(inputs[i] >= 0 && inputs[i] < c.vocab_size());
        const TextCorpus bytes = data::read_fortunes_corpus(data::kFortunesFolder, options(TextVocabulary::bytes, 256));
        QCOMPARE(bytes.tokens().size(), text.size());
        QCOMPARE(bytes.decode(bytes.tokens()), text);
    }
};

QTEST_GUILESS_MAIN(TestTextCorpus)
#include "test_text_corpus.moc"
