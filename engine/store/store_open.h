// Opening a run store file: every check a file must pass before the store reads or writes it
// (a regular file, an SQLite file, a Mantissa store, not from a newer version, not damaged), the
// read-only fallback, creation, and the forward migrations with their backup copy. Nothing is
// written to a file that fails a check: a newer or damaged store is left byte-identical, with no
// -wal or -shm file beside it that was not there (docs/schema.md, "Files Mantissa refuses").
#pragma once

#include <functional>
#include <string>

#include "store/run_store.h"
#include "store/sqlite_db.h"

namespace mantissa::store {

struct OpenedStore {
    Connection connection;
    bool read_only = false;
    int migrated_from = 0;    // the version before migrating, 0 when none was needed
    std::string backup_path;  // the copy made before migrating
};

// Opens as `access` says (run_store.h): `write` creates an absent store and migrates an older one;
// `read` does the same for an existing store but never creates one; `read_only` never writes. A
// write or read open falls back to read-only when the file or its folder is not writable, and
// runs SQLite's damage check before its first write (store_check.h: the full check for `write`, a
// migration or an empty database; the cheap one otherwise). Every open checks that the tables
// have the columns this build reads and writes. Throws mantissa::Error with one sentence.
OpenedStore open_store(const std::string& path, StoreAccess access);

// Another store, to read from and never write (RunStore::import_store): the path and file checks of
// a read-only open, but a store of an older version is read as it is, not refused or migrated;
// `version` says which tables and columns it has (schema.h store_tables). Throws mantissa::Error
// with one sentence: missing, not a Mantissa store, from a newer version, damaged (a
// DamagedStoreError, or a SqliteError with SQLITE_CORRUPT, naming `path`: sqlite_db.h).
// When nobody has it open (no -wal or -journal beside it) and `may_read_immutable`, it is read
// through an "immutable" connection, which creates no -wal or -shm file beside it; such a read
// holds only while nobody writes the file, which `written_since` tells afterwards (it is empty for
// an ordinary read-only connection, which needs no such check).
struct OtherStore {
    Connection connection;
    int version = 0;
    std::function<bool()> written_since;
};
OtherStore open_other_store(const std::string& path, bool may_read_immutable = true);

// A second connection to a store open_store() has already checked and migrated, for a Recorder's
// writer thread.
Connection open_writer_connection(const std::string& path, std::int64_t max_page_count);

// The busy timeout every connection uses: a writer commits in milliseconds, so a reader or an
// editor that waits longer than this has met a stuck process.
inline constexpr int busy_timeout_ms = 5000;

}  // namespace mantissa::store
