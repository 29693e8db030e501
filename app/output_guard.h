// The checks both faces of Mantissa (mantissa-cli's -o, mantissa's --screenshot) make before they
// write an output file, so an output can never replace the run store, the experiment file or any
// other SQLite database, and an unwritable target is said before any work, not after it; and the
// whole-number reading their --steps-like options share (1000 or 1e3).
// Header-only and plain C++ (no Qt): app/cli and app/gui each include it; each turns the sentence
// it returns into its own error (a UsageError, or a line on stderr) and exit code 2. The GUI's
// dialogs (chart and run export) make the same database check through store/store_files.h.
//
// No file that may be a database, or beside one, is opened here with a descriptor of our own: the
// process may hold SQLite connections to it, and closing any descriptor of a file drops all of
// the process's locks on it (store/store_files.h). Databases are recognised through SQLite's VFS,
// their -wal, -shm and -journal files by name alone, and only a target that is neither is opened.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "store/store_files.h"

namespace mantissa::app {

// A file an output must never be written over, and what to call it in the sentence.
struct GuardedFile {
    std::string path;  // empty: nothing to guard
    std::string what;  // "the run store", "the experiment file"
};

// Whether two paths name one file: the same inode when both exist, else the same canonical path
// (so a store not created yet is still guarded).
inline bool same_file(const std::string& a, const std::string& b) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) {
        const bool same = fs::equivalent(a, b, ec);
        if (!ec) return same;
    }
    const fs::path ca = fs::weakly_canonical(a, ec);
    if (ec) return false;
    const fs::path cb = fs::weakly_canonical(b, ec);
    return !ec && ca == cb;
}

// True when path is a regular file that begins with SQLite's 16-byte header (read through SQLite's
// VFS, which leaves the process's locks on it alone).
inline bool is_sqlite_database(const std::string& path) {
    return store::is_sqlite_database(path);
}

// The sentence refusing `option target` when it would overwrite a guarded file, a side file SQLite
// keeps beside a guarded database or a store yet to be created (FILE-wal, FILE-shm, FILE-journal:
// overwriting the live store's write-ahead log breaks it), or any SQLite database or its side files; nullopt when the target
// may be written. E.g. "-o runs.sqlite is the run store; choose another file."
inline std::optional<std::string> refuse_output(const std::string& option, const std::string& target,
                                                const std::vector<GuardedFile>& guarded) {
    for (const GuardedFile& g : guarded) {
        if (g.path.empty()) continue;
        if (same_file(target, g.path)) return option + " " + target + " is " + g.what + "; choose another file.";
        std::error_code ec;
        const bool database = store::is_sqlite_database(g.path) || !std::filesystem::exists(g.path, ec);
        if (!database) continue;  // an experiment file has no files beside it
        for (const char* suffix : store::side_file_suffixes)
            if (same_file(target, g.path + suffix))
                return option + " " + target + " is a file SQLite keeps beside " + g.what + " (" + g.path + suffix +
                       "), which writing over would break; choose another file.";
    }
    if (auto role = store::database_file_role(target))
        return option + " " + target + " is " + *role + ", which is never overwritten; choose another file.";
    return std::nullopt;
}

// Tries to open target for writing without truncating it (creating it and removing it again when
// it is new), before any work; the sentence saying why it cannot be written, or nullopt.
inline std::optional<std::string> probe_writable(const std::string& option, const std::string& target) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (target.empty()) return option + " needs a file name.";
    if (fs::is_directory(target, ec)) return option + " " + target + " is a folder; give a file name.";
    const bool existed = fs::exists(fs::symlink_status(target, ec));
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) return option + " " + target + " cannot be written: " + std::strerror(errno) + ".";
    ::close(fd);
    if (!existed) ::unlink(target.c_str());
    return std::nullopt;
}

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
