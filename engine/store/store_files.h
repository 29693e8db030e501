// The run store's file and the files SQLite keeps beside it (-wal, -shm, -journal), looked at
// without disturbing the locks that SQLite holds on them.
//
// Why this file exists: POSIX advisory locks belong to a process and an inode, and closing ANY
// descriptor of a file releases ALL of the process's locks on it. A process that holds SQLite
// connections to the store (the GUI's recorder, its history browser and its histogram feed all
// do) and then reads the file with an ifstream of its own silently drops the locks SQLite counts
// on: another process may then believe it is the last connection, checkpoint and delete the -wal
// and -shm files under the recorder, and the recorder's rows are lost ("disk I/O error"). SQLite's
// unix VFS avoids this for its own opens: it keeps one record per inode and defers closing a
// descriptor while any connection of the process holds a lock on that inode. So every read of a
// database file here goes through the default VFS (sqlite3_vfs_find(nullptr)) opened as a main
// database, which shares that record; side files are never opened at all (only stat()ed, which
// takes no descriptor). See docs/schema.md, "Sharing the file".
//
// Plain functions, no state; safe from any thread (the VFS takes its own mutex).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace mantissa::store {

// The suffixes of the files SQLite keeps beside a database: "-wal", "-shm", "-journal".
inline constexpr const char* side_file_suffixes[] = {"-wal", "-shm", "-journal"};

// Why `path` cannot name a run store, in one sentence ending in a full stop; nullopt when it is a
// regular file (a symbolic link to one included) or absent. Looks with stat() only (no descriptor,
// so it cannot block on a FIFO or disturb locks): a FIFO, a socket, a block or character device
// ("'/dev/null' is a character device, not a run store file; ..."), a symbolic link loop, a name
// over 255 bytes or a path over PATH_MAX, a folder that may not be searched, and a side file
// (-wal, -shm, -journal) beside it that is not a regular file.
std::optional<std::string> unusable_store_path(const std::string& path);

// The first `count` bytes of the regular file `path` (fewer when it is shorter), read through the
// default VFS as a main database; nullopt when it is not a regular file or cannot be read.
std::optional<std::string> read_file_start(const std::string& path, std::size_t count);

// True when both regular files hold the same bytes (read through the VFS, as above).
bool same_file_contents(const std::string& a, const std::string& b);

// True when `path` is a regular file that begins with SQLite's 16-byte header.
bool is_sqlite_database(const std::string& path);

// When writing over `target` would destroy an SQLite database or break one in use, what the
// target is, to follow "-o FILE is": "an SQLite database", "the write-ahead log (-wal) of the
// SQLite database 'D'", "the shared-memory index (-shm) of ...", "the rollback journal (-journal)
// of ..."; nullopt otherwise. A side file is judged by its name (D exists and is a database),
// never opened. Symbolic links are followed.
std::optional<std::string> database_file_role(const std::string& target);

}  // namespace mantissa::store
