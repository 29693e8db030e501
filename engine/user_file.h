// Opening and reading a file the user named (an experiment file, a CSV or IDX dataset file): the
// one place that decides what such a path may be. Only a regular file is accepted, checked before
// opening (so a FIFO never blocks the open) and again on the open descriptor (so a path swapped in
// between is caught too); a device, a pipe or a socket would otherwise be read without end, and each
// is named for what it is, never taken for a missing file. A file larger than its limit is refused
// by its stated size before a byte is read; reading also stops at limit + 1 bytes, so a file that
// grows while it is read, or whose size the file system misstates, is caught by what was actually
// read and never costs more than limit + 1 bytes.
// Header-only so that both mantissa_config (the experiment file) and mantissa_data (the datasets)
// use it without a library between them. Every function is safe to call from any thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "printable_text.h"
#include "error.h"
#include "held_files.h"

namespace mantissa {

// A read-only descriptor of a regular file, closed on destruction unless released.
class UserFile {
public:
    explicit UserFile(int fd) : m_fd(fd) {}
    ~UserFile() {
        if (m_fd >= 0) ::close(m_fd);
    }
    UserFile(UserFile&& other) noexcept : m_fd(other.release()) {}
    UserFile(const UserFile&) = delete;
    UserFile& operator=(const UserFile&) = delete;
    UserFile& operator=(UserFile&&) = delete;
    int fd() const { return m_fd; }
    int release() {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

private:
    int m_fd = -1;
};

// The largest file read_user_file accepts, and how a message names that limit.
struct UserFileLimit {
    std::uint64_t bytes;
    const char* text;  // "16 MiB, the limit for an experiment file"
};

inline constexpr UserFileLimit kExperimentFileLimit{std::uint64_t{16} << 20, "16 MiB, the limit for an experiment file"};
inline constexpr UserFileLimit kCsvFileLimit{std::uint64_t{1} << 30, "1 GiB, the limit for a CSV dataset file"};

namespace user_file_detail {
inline const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return " is a folder, not a file.";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return " is a device, not a file.";
    if (S_ISFIFO(mode)) return " is a FIFO (a named pipe), not a file.";
    if (S_ISSOCK(mode)) return " is a socket, not a file.";
    return " is not a regular file.";
}

// The sentence for a path whose stat() failed with `err`, or "" when nothing at all is there.
inline std::string stat_failure(const std::string& path, const std::string& what, int err) {
    if (err == ELOOP) return what + " is a symbolic link that loops (too many levels of symbolic links), not a file.";
    if (err != ENOENT && err != ENOTDIR) return what + " cannot be read: " + std::strerror(err) + ".";
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        std::string target(4096, '\0');
        const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
        target.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        return what + " is a symbolic link to " + printable_text(target) + ", which does not exist.";
    }
    return {};
}
}  // namespace user_file_detail

// Whether `path` names a regular file (a symbolic link to one is fine): true when it does, false
// when nothing is there at all (ENOENT, or a parent that is not a folder). Anything else that is
// there is an error, never taken for "missing": a folder, a device, a FIFO, a socket, a symbolic
// link that loops or points nowhere, or a path that cannot be inspected. Never opens the path, so a
// FIFO never blocks. `what` starts the sentence, as in open_user_file.
inline bool user_file_exists(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        const std::string problem = user_file_detail::stat_failure(path, what, err);
        if (problem.empty()) return false;
        throw Error(problem);
    }
    if (!S_ISREG(st.st_mode)) throw Error(what + user_file_detail::kind_of(st.st_mode));
    return true;
}

// Opens `path`, which must be a regular file (a symbolic link to one is fine) and not a run store
// this process has open (held_files.h: opening it would drop SQLite's locks). `what` starts the
// messages: "Experiment file a.json" gives "Experiment file a.json does not exist.",
// "... is a folder, not a file.", "... is a device, not a file.", "... is a FIFO (a named pipe),
// not a file.", "... is a symbolic link that loops ...", "... cannot be opened: Permission denied."
inline UserFile open_user_file(const std::string& path, const std::string& what) {
    if (!user_file_exists(path, what)) throw Error(what + " does not exist.");
    // Opening (and closing) a database this process has open would drop SQLite's locks on it.
    if (HeldFiles::instance().held(path))
        throw Error(what + " is a run store that Mantissa has open (or a file SQLite keeps beside one), not a file "
                           "it can read for this; choose another file.");
    // O_NONBLOCK: should a FIFO replace the file after the check, the open does not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw Error(what + " cannot be opened: " + std::strerror(err) + ".");
    }
    UserFile file(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw Error(what + user_file_detail::kind_of(st.st_mode));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return file;
}

// The size of an open file as fstat states it (0 when it cannot say).
inline std::uint64_t user_file_size(const UserFile& file) {
    struct stat st {};
    return ::fstat(file.fd(), &st) == 0 && st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Reads the whole of `path` (opened as open_user_file does). More than limit.bytes bytes is an
// error, told before reading when the file system states the size ("<what> is 2147483648 bytes,
// larger than 1 GiB, the limit for a CSV dataset file."), and when the file grows while it is read
// ("<what> is larger than 16 MiB, the limit for an experiment file."). An allocation that fails is
// told too ("Not enough memory to read <what> (N bytes).").
inline std::string read_user_file(const std::string& path, const std::string& what, const UserFileLimit& limit) {
    UserFile file = open_user_file(path, what);
    // The first buffer fits the size the file system states; it grows (up to limit + 1) if more comes.
    const std::uint64_t stated = user_file_size(file);
    if (stated > limit.bytes)
        throw Error(what + " is " + std::to_string(stated) + " bytes, larger than " + limit.text + ".");
    std::uint64_t size = std::min(std::max<std::uint64_t>(stated + 1, 1 << 16), limit.bytes + 1);
    std::string text;
    std::size_t got = 0;
    for (;;) {
        if (got == text.size()) {
            try {
                text.resize(static_cast<std::size_t>(size));
            } catch (const std::bad_alloc&) {
                throw Error("Not enough memory to read " + what + " (" + std::to_string(stated) + " bytes).");
            }
            size = std::min(size * 2, limit.bytes + 1);
        }
        const ssize_t r = ::read(file.fd(), text.data() + got, text.size() - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            throw Error(what + " cannot be read: " + std::strerror(err) + ".");
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
        if (got > limit.bytes) throw Error(what + " is larger than " + limit.text + ".");
    }
    text.resize(got);
    return text;
}

}  // namespace mantissa
