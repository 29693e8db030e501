// The checks every run name, note and tag passes before the store writes it: valid UTF-8 (the
// store's JSON output and the GUI need it), no control characters (they would break the CLI's
// tables and could carry terminal escape codes; notes may hold newlines and tabs), and a length
// limit counted in characters (Unicode code points). One place, so every caller (CLI, GUI,
// recorder) refuses the same text with the same sentence.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mantissa::store {

enum class RunText { name, notes, tags, sweep_name };  // a sweep's name: a run name's rules

inline constexpr std::size_t max_name_chars = 200;
inline constexpr std::size_t max_tag_chars = 64;   // each tag of the comma-separated list
inline constexpr std::size_t max_tags = 100;
inline constexpr std::size_t max_notes_chars = 100000;

// Throws mantissa::Error with one sentence when `text` may not be stored as the run's `field`.
// Tags are checked as stored: the normalized comma-separated list (store_util.h).
void check_run_text(RunText field, std::string_view text);

// The number of code points in `text` when it is valid UTF-8 (no overlong forms, surrogates or
// values above U+10FFFF); `bad_at` (when given) receives the byte offset of the first invalid
// byte otherwise.
bool utf8_length(std::string_view text, std::size_t& chars, std::size_t* bad_at = nullptr);

// `text` for a terminal or a text table: control characters shown escaped (\n, \t, \r, \x1b,
// \u009b), and bytes that are not UTF-8 as \xff, so a stored name can neither break a table's
// lines nor send escape codes. keep_line_breaks leaves line breaks and tabs as they are (notes).
std::string printable_text(std::string_view text, bool keep_line_breaks = false);

// A language model's generated text as `mantissa-cli show` and the GUI's Sample panel show it:
// a CRLF one line break, line breaks and tabs kept, every other control character escaped
// (printable_text), so a byte-level model's control bytes read as what they are.
std::string printable_generated_text(std::string_view text);

}  // namespace mantissa::store
