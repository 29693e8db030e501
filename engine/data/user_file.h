// Opening and reading a file the user named (an experiment file, a CSV or IDX dataset file): the
// one place that decides what such a path may be. Only a regular file is accepted, checked before
// opening (so a FIFO never blocks the open) and again on the open descriptor (so a path swapped in
// between is caught too); a device, a pipe or a socket would otherwise be read without end. Reading
// stops at limit + 1 bytes, so a file that grows while it is read, or whose size the file system
// misstates, is caught by what was actually read and never costs more than limit + 1 bytes.
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
#include <string>

#include "error.h"

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
    if (S_ISCHR(mode) || S_ISBLK(mode)) return " is not a regular file (it is a device).";
    if (S_ISFIFO(mode)) return " is not a regular file (it is a pipe).";
    if (S_ISSOCK(mode)) return " is not a regular file (it is a socket).";
    return " is not a regular file.";
}
}  // namespace user_file_detail

// Opens `path`, which must be a regular file (a symbolic link to one is fine). `what` starts the
// messages: "Experiment file a.json" gives "Experiment file a.json does not exist.",
// "... is a folder, not a file.", "... is not a regular file (it is a device).",
// "... cannot be opened: Permission denied."
inline UserFile open_user_file(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR) throw Error(what + " does not exist.");
        throw Error(what + " cannot be read: " + std::strerror(err) + ".");
    }
    if (!S_ISREG(st.st_mode)) throw Error(what + user_file_detail::kind_of(st.st_mode));
    // O_NONBLOCK: should a FIFO replace the file after the check, the open does not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw Error(what + " cannot be opened: " + std::strerror(err) + ".");
    }
    UserFile file(fd);
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw Error(what + user_file_detail::kind_of(st.st_mode));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return file;
}

// Reads the whole of `path` (opened as open_user_file does). More than limit.bytes bytes is an
// error: "<what> is larger than 16 MiB, the limit for an experiment file."
inline std::string read_user_file(const std::string& path, const std::string& what, const UserFileLimit& limit) {
    UserFile file = open_user_file(path, what);
    struct stat st {};
    // The first buffer fits the size the file system states; it grows (up to limit + 1) if more comes.
    const std::uint64_t stated = ::fstat(file.fd(), &st) == 0 && st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    std::uint64_t size = std::min(std::max<std::uint64_t>(stated + 1, 1 << 16), limit.bytes + 1);
    std::string text;
    std::size_t got = 0;
    for (;;) {
        if (got == text.size()) {
            text.resize(static_cast<std::size_t>(size));
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
