// The store's files, looked at without disturbing SQLite's locks (see store_files.h for why).
#include "store/store_files.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>

#include <sqlite3.h>
#include <sys/stat.h>

#include "printable_text.h"

namespace mantissa::store {

namespace fs = std::filesystem;

namespace {

// A file opened through the default VFS as a main database (SQLITE_OPEN_MAIN_DB): the unix VFS
// then files the descriptor under the inode's shared record, and its xClose keeps the descriptor
// open (to be closed with the last lock) while a connection of this process holds a lock on the
// file. Any other open type is "nolock" in the unix VFS and would close its descriptor at once.
// Read-only; only for regular files (the open would block on a FIFO).
class VfsFile {
public:
    explicit VfsFile(const std::string& path) {
        m_vfs = sqlite3_vfs_find(nullptr);
        if (!m_vfs) return;
        // A name made as SQLite makes them, so a VFS that looks for URI parameters after it finds
        // none; it must outlive the open file (the unix VFS keeps the pointer).
        m_name = sqlite3_create_filename(path.c_str(), "", "", 0, nullptr);
        if (!m_name) return;
        m_memory = std::make_unique<unsigned char[]>(static_cast<std::size_t>(m_vfs->szOsFile));
        std::memset(m_memory.get(), 0, static_cast<std::size_t>(m_vfs->szOsFile));
        auto* file = reinterpret_cast<sqlite3_file*>(m_memory.get());
        int out_flags = 0;
        const int rc = m_vfs->xOpen(m_vfs, m_name, file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &out_flags);
        if (rc == SQLITE_OK) {
            m_file = file;
        } else if (file->pMethods) {
            file->pMethods->xClose(file);  // a failed xOpen may still need its close
        }
    }
    ~VfsFile() {
        if (m_file) m_file->pMethods->xClose(m_file);
        if (m_name) sqlite3_free_filename(m_name);
    }
    VfsFile(const VfsFile&) = delete;
    VfsFile& operator=(const VfsFile&) = delete;

    bool is_open() const { return m_file != nullptr; }

    std::optional<std::int64_t> size() const {
        sqlite3_int64 n = 0;
        if (m_file->pMethods->xFileSize(m_file, &n) != SQLITE_OK) return std::nullopt;
        return n;
    }

    // Reads `count` bytes at `offset`; the number read (less at the end of the file), or -1.
    std::int64_t read(void* into, int count, std::int64_t offset) const {
        const int rc = m_file->pMethods->xRead(m_file, into, count, offset);
        if (rc == SQLITE_OK) return count;
        if (rc != SQLITE_IOERR_SHORT_READ) return -1;
        // The VFS zero-fills what lies past the end: count what the file really had.
        const auto n = size();
        if (!n) return -1;
        return std::max<std::int64_t>(0, std::min<std::int64_t>(count, *n - offset));
    }

private:
    sqlite3_vfs* m_vfs = nullptr;
    // char* before SQLite 3.41, sqlite3_filename (const char*) since.
    decltype(sqlite3_create_filename("", "", "", 0, nullptr)) m_name = nullptr;
    std::unique_ptr<unsigned char[]> m_memory;
    sqlite3_file* m_file = nullptr;
};

bool is_regular_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string in_quotes(const std::string& s) {
    return "'" + s + "'";
}

const char* kind_of(mode_t mode) {
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a folder";
    return "not a regular file";
}

// The longest last name a store may have: SQLite must be able to create NAME-journal (8 bytes
// more) beside it.
constexpr std::size_t name_max = NAME_MAX;
constexpr std::size_t longest_suffix = 8;  // "-journal"

std::optional<std::string> too_long(const std::string& path) {
    if (path.size() + longest_suffix >= PATH_MAX)
        return "The run store path " + in_quotes(shortened_text(path)) + " is " + std::to_string(path.size()) +
               " bytes long, more than the " + std::to_string(PATH_MAX - 1 - longest_suffix) +
               " a store's path may have (SQLite adds '-journal' to it, and a path has at most " +
               std::to_string(PATH_MAX - 1) + " bytes); give a shorter path.";
    std::size_t start = 0;
    while (start < path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        const std::size_t n = end - start;
        const bool last = end == path.size();
        if (n > name_max || (last && n + longest_suffix > name_max)) {
            const std::string name = path.substr(start, n);
            if (n > name_max && name == path)
                return "The run store name " + in_quotes(shortened_text(name)) + " is " + std::to_string(n) +
                       " bytes long, more than the " + std::to_string(name_max) +
                       " a file system allows; give a shorter name.";
            if (!last || n > name_max)
                return "The run store path " + in_quotes(shortened_text(path)) + " has a name " +
                       in_quotes(shortened_text(name)) + " of " + std::to_string(n) + " bytes, more than the " +
                       std::to_string(name_max) + " a file system allows; give a shorter name.";
            return "The run store name " + in_quotes(shortened_text(name)) + " is " + std::to_string(n) +
                   " bytes long, more than the " + std::to_string(name_max - longest_suffix) +
                   " a store's name may have (SQLite keeps a file named NAME-journal beside it, within the " +
                   std::to_string(name_max) + " bytes a name may have); give a shorter name.";
        }
        start = end + 1;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> unusable_store_path(const std::string& path) {
    if (path.empty()) return std::nullopt;  // open_store says what is missing
    if (auto why = too_long(path)) return why;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        switch (err) {
            case ENOENT:
            case ENOTDIR: return std::nullopt;  // absent: whoever opens it says what follows
            case ELOOP:
                return in_quotes(path) +
                       " cannot be followed: a symbolic link on the way to it leads back to itself (or there are "
                       "too many links), so it names no run store file; give the store's real path.";
            case ENAMETOOLONG:
                return "The run store path " + in_quotes(shortened_text(path)) +
                       " is too long for its file system; give a shorter path.";
            case EACCES:
                return "Cannot reach the run store " + in_quotes(path) +
                       ": a folder on its path may not be searched (permission denied); give a path you can "
                       "reach.";
            default:
                return "Cannot look at the run store " + in_quotes(path) + ": " + std::strerror(err) + ".";
        }
    }
    if (S_ISDIR(st.st_mode))
        return in_quotes(path) + " is a folder, not a run store file; give a file name.";
    if (!S_ISREG(st.st_mode))
        return in_quotes(path) + " is " + kind_of(st.st_mode) +
               ", not a run store file; give the path of a regular file, or of one to be created.";
    for (const char* suffix : side_file_suffixes) {
        const std::string side = path + suffix;
        struct stat ss {};
        if (::lstat(side.c_str(), &ss) == 0 && !S_ISREG(ss.st_mode))
            return "Beside the run store " + in_quotes(path) + ", " + in_quotes(side) + " (where SQLite keeps its " +
                   (std::strcmp(suffix, "-journal") == 0 ? "journal" : std::strcmp(suffix, "-wal") == 0
                                                                           ? "write-ahead log"
                                                                           : "shared-memory index") +
                   ") is " + (S_ISLNK(ss.st_mode) ? "a symbolic link" : kind_of(ss.st_mode)) +
                   ", not a regular file; move it away first.";
    }
    return std::nullopt;
}

std::optional<std::string> read_file_start(const std::string& path, std::size_t count) {
    if (!is_regular_file(path)) return std::nullopt;
    VfsFile f(path);
    if (!f.is_open()) return std::nullopt;
    std::string out(count, '\0');
    const std::int64_t n = f.read(out.data(), static_cast<int>(count), 0);
    if (n < 0) return std::nullopt;
    out.resize(static_cast<std::size_t>(n));
    return out;
}

bool same_file_contents(const std::string& a, const std::string& b) {
    if (!is_regular_file(a) || !is_regular_file(b)) return false;
    VfsFile fa(a), fb(b);
    if (!fa.is_open() || !fb.is_open()) return false;
    const auto na = fa.size(), nb = fb.size();
    if (!na || !nb || *na != *nb) return false;
    constexpr int chunk = 1 << 16;
    auto ba = std::make_unique<char[]>(chunk), bb = std::make_unique<char[]>(chunk);
    for (std::int64_t at = 0; at < *na; at += chunk) {
        const int want = static_cast<int>(std::min<std::int64_t>(chunk, *na - at));
        if (fa.read(ba.get(), want, at) != want || fb.read(bb.get(), want, at) != want) return false;
        if (std::memcmp(ba.get(), bb.get(), static_cast<std::size_t>(want)) != 0) return false;
    }
    return true;
}

bool is_sqlite_database(const std::string& path) {
    const auto head = read_file_start(path, 16);
    return head && head->size() == 16 && std::memcmp(head->data(), "SQLite format 3\0", 16) == 0;
}

std::optional<std::string> database_file_role(const std::string& target) {
    std::error_code ec;
    // The name as given and the file it leads to (a link named out.csv may point at a -wal file).
    std::string names[2] = {target, {}};
    const fs::path real = fs::weakly_canonical(target, ec);
    if (!ec) names[1] = real.string();
    for (const std::string& name : names) {
        if (name.empty()) continue;
        if (is_sqlite_database(name)) return std::string("an SQLite database");
        for (const char* suffix : side_file_suffixes) {
            const std::size_t n = std::strlen(suffix);
            if (name.size() <= n || name.compare(name.size() - n, n, suffix) != 0) continue;
            const std::string database = name.substr(0, name.size() - n);
            if (!is_sqlite_database(database)) continue;
            const char* what = std::strcmp(suffix, "-wal") == 0   ? "the write-ahead log (-wal)"
                               : std::strcmp(suffix, "-shm") == 0 ? "the shared-memory index (-shm)"
                                                                  : "the rollback journal (-journal)";
            return std::string(what) + " of the SQLite database " + in_quotes(database);
        }
    }
    return std::nullopt;
}

}  // namespace mantissa::store
