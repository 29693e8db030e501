// The checks every face of Mantissa makes before it writes an output file (mantissa-cli's -o,
// mantissa's --screenshot, and the GUI's save and export dialogs: ui/export/output_check.h), so an
// output can never replace the run store, the experiment file, any other SQLite database or a
// Mantissa checkpoint, never waits on a named pipe, and an unwritable target is said before any
// work, not after it; and where symbolic links lead (output_destination), so an output replaces
// what a link names and keeps the link. Each face turns the sentence it returns into its own error
// (a UsageError, a line on stderr, a message box or a dialog's status line).
//
// Header-only and plain C++ (no Qt). It lives below both app/ and ui/ because both use it; beside
// the store's own files (store_files.h) it reads a safetensors file's metadata, so a user links
// mantissa_weights too (mantissa_engine, which app/ and ui/ link, has both).
//
// No file that may be a database, or beside one, is opened here with a descriptor of our own: the
// process may hold SQLite connections to it, and closing any descriptor of a file drops all of
// the process's locks on it (store/store_files.h). Databases are recognised through SQLite's VFS,
// their -wal, -shm and -journal files by name alone, and only a target that is neither is opened.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_files.h"
#include "weights/checkpoint_info.h"
#include "weights/safetensors.h"

namespace mantissa::store {

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

// The file an output named `target` is written to: target itself or, when it is a symbolic link,
// the file the links lead to (one still to be created included), so that an output written beside
// it and renamed into place replaces what the link names and keeps the link. nullopt when the
// links loop (or chain more than 40 deep).
inline std::optional<std::string> output_destination(const std::string& target) {
    namespace fs = std::filesystem;
    fs::path p = target;
    for (int hops = 0; hops <= 40; ++hops) {
        std::error_code ec;
        if (fs::symlink_status(p, ec).type() != fs::file_type::symlink) return p.string();
        const fs::path next = fs::read_symlink(p, ec);
        if (ec) return p.string();
        p = next.is_absolute() ? next : p.parent_path() / next;
    }
    return std::nullopt;
}

// Whether the existing non-regular file `target` (a pipe, a terminal) is this process's standard
// output or standard error, as /dev/stdout names them: written in place, it blocks nobody.
inline bool is_standard_stream(const struct stat& target) {
    for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino) return true;
    }
    return false;
}

// Why an existing `target` that is not a regular file cannot take an output, to follow "-o FILE
// is": a named pipe (which blocks until a reader comes, maybe forever), a socket, a block device
// (a disk, whose contents writing would destroy); nullopt for a regular file, one that does not
// exist, a character device (/dev/null, a terminal: written in place) and the process's own
// standard output or error (/dev/stdout into a pipe).
inline std::optional<std::string> unwritable_kind(const std::string& target) {
    struct stat st {};
    if (::stat(target.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode))
        return std::nullopt;
    if (is_standard_stream(st)) return std::nullopt;
    if (S_ISFIFO(st.st_mode)) return "a named pipe (FIFO), which writing would wait on until a program reads it";
    if (S_ISSOCK(st.st_mode)) return "a socket, which cannot be written as a file";
    if (S_ISBLK(st.st_mode)) return "a block device, whose contents writing would destroy";
    return "not a regular file";
}

// When writing `target` would replace a Mantissa checkpoint, what it is, to follow "-o FILE": a
// file in a run store's checkpoint folder (STORE.checkpoints/ beside the SQLite database STORE or
// STORE.sqlite, which the store writes and prunes: store/checkpoint_rows.h), or a safetensors file
// whose metadata holds a Mantissa checkpoint (another store's, or one kept elsewhere); nullopt
// otherwise. Symbolic links are followed.
inline std::optional<std::string> checkpoint_role(const std::string& target) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path file = output_destination(target).value_or(target);
    std::vector<fs::path> forms;
    if (fs::path a = fs::absolute(file, ec); !ec) forms.push_back(a.lexically_normal());
    if (fs::path c = fs::weakly_canonical(file, ec); !ec) forms.push_back(c);
    const std::string suffix = ".checkpoints";
    for (const fs::path& p : forms)
        for (fs::path folder = p.parent_path(); folder.has_relative_path(); folder = folder.parent_path()) {
            const std::string name = folder.filename().string();
            if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
            const std::string stem = (folder.parent_path() / name.substr(0, name.size() - suffix.size())).string();
            for (const std::string& store : {stem, stem + ".sqlite"})
                if (is_sqlite_database(store))
                    return "lies in the run store's checkpoint folder " + folder.string() + " (of " + store +
                           "), which the store writes and prunes";
        }
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
    try {
        if (SafetensorsFile(file.string()).metadata().contains(checkpoint_metadata_key))
            return "holds a Mantissa checkpoint, which is never overwritten";
    } catch (const std::exception&) {
        // not a safetensors file: an ordinary file, which an output may replace
    }
    return std::nullopt;
}

// The sentence refusing `option target` when it would overwrite a guarded file, a side file SQLite
// keeps beside a guarded database or a store yet to be created (FILE-wal, FILE-shm, FILE-journal:
// overwriting the live store's write-ahead log breaks it), any SQLite database or its side files,
// a Mantissa checkpoint (checkpoint_role), or an existing file that is not a regular one and may
// block or be destroyed (unwritable_kind), or a link loop; nullopt when the target may be written.
// E.g. "-o runs.sqlite is the run store; choose another file." With `option` empty (a GUI save
// dialog) the sentence starts with the target: "runs.sqlite is the run store; choose another file."
inline std::optional<std::string> refuse_output(const std::string& option, const std::string& target,
                                                const std::vector<GuardedFile>& guarded) {
    const std::string subject = option.empty() ? target : option + " " + target;
    for (const GuardedFile& g : guarded) {
        if (g.path.empty()) continue;
        if (same_file(target, g.path)) return subject + " is " + g.what + "; choose another file.";
        std::error_code ec;
        const bool database = is_sqlite_database(g.path) || !std::filesystem::exists(g.path, ec);
        if (!database) continue;  // an experiment file has no files beside it
        for (const char* suffix : side_file_suffixes)
            if (same_file(target, g.path + suffix))
                return subject + " is a file SQLite keeps beside " + g.what + " (" + g.path + suffix +
                       "), which writing over would break; choose another file.";
    }
    if (auto role = database_file_role(target))
        return subject + " is " + *role + ", which is never overwritten; choose another file.";
    if (!output_destination(target))
        return subject +
               " cannot be followed: a symbolic link on the way to it leads back to itself (or there are too many "
               "links); choose another file.";
    if (auto kind = unwritable_kind(target)) return subject + " is " + *kind + "; choose a regular file.";
    if (auto role = checkpoint_role(target)) return subject + " " + *role + "; choose another file.";
    return std::nullopt;
}

// Tries to open target for writing without truncating it (creating it and removing it again when
// it is new), before any work; the sentence saying why it cannot be written, or nullopt. With
// `option` empty the sentence starts with the target, as refuse_output's does.
inline std::optional<std::string> probe_writable(const std::string& option, const std::string& target) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (target.empty()) return option.empty() ? std::string("Choose a file name.") : option + " needs a file name.";
    const std::string subject = option.empty() ? target : option + " " + target;
    if (fs::is_directory(target, ec)) return subject + " is a folder; give a file name.";
    const bool existed = fs::exists(fs::symlink_status(target, ec));
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) return subject + " cannot be written: " + std::strerror(errno) + ".";
    ::close(fd);
    if (!existed) ::unlink(target.c_str());
    return std::nullopt;
}

}  // namespace mantissa::store
