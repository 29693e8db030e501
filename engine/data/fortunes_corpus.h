// The default text corpus: the fortune cookies of Debian's `fortunes` package (with
// `fortunes-min`, which it depends on), about 2.5 MB of quotations, jokes and verse in 43 files in
// /usr/share/games/fortunes. A fortune file is plain text whose quotes are separated by lines
// holding only '%'; beside each, fortune(6) keeps a binary index, <name>.dat, and Debian adds
// <name>.u8, a symbolic link to the plain file.
//
// The corpus is the fortune files of one folder (not its subfolders), in sorted name order (byte
// order), each read as a text file is (text_corpus.h: UTF-8, not binary, a UTF-8 byte-order mark
// dropped; an empty file is skipped), joined. Every separator line ('%' alone, or "%\r") becomes an
// empty line, so quotes are separated by a blank line, the way a person would write them; and each
// file ends with a line break before the next begins. Nothing else is changed: the few backspaces
// (old overstrike underlining) and bells some quotes hold stay. A fortune file is a regular file
// (not a symbolic link, so the .u8 links are not read twice) whose name neither starts with '.' nor
// ends in ".dat". Any thread.
#pragma once

#include <string>
#include <vector>

#include "data/text_corpus.h"

namespace mantissa::data {

inline constexpr const char* kFortunesFolder = "/usr/share/games/fortunes";

// The names of the fortune files of `folder`, sorted. Throws mantissa::Error when the folder does
// not exist ("... does not exist; install fortunes: apt-get install fortunes ..."), is not a
// folder, cannot be read, or holds no fortune file.
std::vector<std::string> fortune_files(const std::string& folder);

// The corpus text of `folder` as described above. Each file is checked as a text file and named in
// any refusal; their sizes together must stay within kTextFileLimit, checked before reading.
std::string fortunes_text(const std::string& folder);

// The corpus of `folder` (kFortunesFolder by default), named in messages as "The fortunes corpus in
// <folder>".
TextCorpus read_fortunes_corpus(const std::string& folder, const TextCorpusOptions& options);

}  // namespace mantissa::data
