// The checks both faces of Mantissa (mantissa-cli's -o, mantissa's --screenshot) make before they
// write an output file, and the whole-number reading their --steps-like options share (1000 or
// 1e3). The output checks themselves live in store/output_guard.h, below app/ and ui/, so the GUI's
// save and export dialogs refuse the same files with the same sentences; they are named here in
// mantissa::app as the executables have always called them.
// Header-only and plain C++ (no Qt): app/cli and app/gui each include it; each turns the sentence
// it returns into its own error (a UsageError, or a line on stderr) and exit code 2.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "store/output_guard.h"

namespace mantissa::app {

using store::checkpoint_role;
using store::GuardedFile;
using store::is_sqlite_database;
using store::is_standard_stream;
using store::output_destination;
using store::probe_writable;
using store::refuse_output;
using store::same_file;
using store::unwritable_kind;

// A whole number as a person may write it: "1000", or with an exponent, "1e3" (as the experiment
// file's numbers may be); nullopt for anything else ("ten", "1.5", "1e30", "0x10", "").
inline std::optional<long long> parse_whole_number(const std::string& text) {
    if (text.empty() || text.find_first_not_of("+-0123456789.eE") != std::string::npos) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    if (*end == '\0') return errno == 0 ? std::optional<long long>(n) : std::nullopt;
    errno = 0;
    const double d = std::strtod(text.c_str(), &end);
    if (*end != '\0' || errno != 0 || !(d >= -9.0e18 && d <= 9.0e18)) return std::nullopt;
    if (d != static_cast<double>(static_cast<long long>(d))) return std::nullopt;
    return static_cast<long long>(d);
}

}  // namespace mantissa::app
