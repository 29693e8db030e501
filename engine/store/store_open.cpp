// open_store(): the checks, in the order that keeps a bad file untouched: the path (a regular
// file or nothing), the file's first bytes, then a read-only look at its header (application_id,
// user_version, tables) and, before any write, SQLite's integrity check; only then a read-write
// connection, WAL, creation or migration; last, the columns.
//
// No descriptor of the store's files is opened here but SQLite's own (see store_files.h): the
// process may already hold connections to the file, and closing a descriptor of our own would
// drop their locks.
#include "store/store_open.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <system_error>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/schema.h"
#include "store/store_check.h"
#include "store/store_files.h"
#include "store/store_util.h"

namespace mantissa::store {

namespace fs = std::filesystem;

namespace {

std::string in_quotes(const std::string& s) {
    return "'" + s + "'";
}

struct Header {
    std::int64_t application_id = 0;
    std::int64_t version = 0;
    std::int64_t objects = 0;  // entries in sqlite_schema
    std::int64_t tables = 0;   // how many of the tables of its version (store_tables) exist
};

// The tables a store of `version` has (schema.h store_tables; version 1's for a version below 1).
std::span<const char* const> tables_of(std::int64_t version) {
    return store_tables(static_cast<int>(std::clamp<std::int64_t>(version, 1, schema_version)));
}

// The four reads in one snapshot (a savepoint: a read transaction of its own, or a part of the
// writer's). Each read outside a transaction sees the file as it is then, and another process may
// be creating the store meanwhile: its id read before that commit and its tables after, the file
// looked like an SQLite database of someone else's ("application_id is 0x00000000").
Header read_header(Connection& db) {
    db.exec("SAVEPOINT read_header", "reading its header");
    Header h;
    try {
        h.application_id = db.query_int("PRAGMA application_id", "reading its application id");
        h.version = db.query_int("PRAGMA user_version", "reading its schema version");
        h.objects = db.query_int("SELECT count(*) FROM sqlite_schema", "reading its list of tables");
        std::string names;
        for (const char* name : tables_of(h.version)) names += std::string(names.empty() ? "'" : ", '") + name + "'";
        h.tables = db.query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN (" + names + ")",
                                "reading its list of tables");
    } catch (...) {
        try {
            db.exec("ROLLBACK TO read_header", "reading its header");
            db.exec("RELEASE read_header", "reading its header");
        } catch (...) {
            // The first error is the one to report; a connection that cannot even roll back is closed by the caller.
        }
        throw;
    }
    db.exec("RELEASE read_header", "reading its header");
    return h;
}

// Throws for a file that is not a store this build may use; true when it is an empty database
// that may become one.
bool check_header(const Header& h, const std::string& path) {
    if (h.application_id != application_id) {
        if (h.objects == 0 && h.version == 0) return true;
        char id[16];
        std::snprintf(id, sizeof id, "0x%08X", static_cast<unsigned>(h.application_id & 0xFFFFFFFF));
        throw Error("The file " + in_quotes(path) +
                    " is an SQLite database but not a Mantissa run store (its "
                    "application_id is " +
                    id +
                    ", a run store's is 0x4D414E54); it was left unchanged: "
                    "choose another file.");
    }
    if (h.version > schema_version)
        throw Error("The run store " + in_quotes(path) + " was written by a newer Mantissa (schema version " +
                    std::to_string(h.version) + "; this build reads versions up to " + std::to_string(schema_version) +
                    "); it was left unchanged: open it with a newer "
                    "Mantissa, or record to another file.");
    if (h.version < 1) {
        if (h.objects == 0) return true;
        throw DamagedStoreError(path, "it has tables but no schema version");
    }
    const auto expected = static_cast<std::int64_t>(tables_of(h.version).size());
    if (h.tables != expected)
        throw DamagedStoreError(
            path, "only " + std::to_string(h.tables) + " of its " + std::to_string(expected) + " tables exist");
    return false;
}

// Looks at the file's first 100 bytes (SQLite's database header) before any SQLite connection
// touches it: SQLite's own answer for a non-database comes only at the first read (and for a short
// file it may call it empty), and a connection to a WAL file creates -wal and -shm files beside
// it. So a file that plainly is not ours, or is from a newer version, is refused untouched here.
// (A header whose newest changes still sit in a WAL is checked again through SQLite.) The bytes
// are read through SQLite's VFS, never with a stream of our own: see store_files.h.
void check_file_header(const std::string& path) {
    const auto head = read_file_start(path, 100);
    if (!head || head->empty()) return;  // SQLite will say why it cannot read it; empty: a new store
    const auto* h = reinterpret_cast<const unsigned char*>(head->data());
    if (head->size() != 100 || std::memcmp(h, "SQLite format 3", 16) != 0)
        throw Error("The file " + in_quotes(path) +
                    " is not an SQLite database, so it is not a Mantissa run "
                    "store; it was left unchanged: choose another file.");
    auto be32 = [&](int at) {
        return static_cast<std::int64_t>(
            static_cast<std::int32_t>((std::uint32_t{h[at]} << 24) | (std::uint32_t{h[at + 1]} << 16) |
                                      (std::uint32_t{h[at + 2]} << 8) | std::uint32_t{h[at + 3]}));
    };
    Header header;
    header.version = be32(60);
    header.application_id = be32(68);
    header.objects = 1;  // unknown here: only an id that is neither ours nor 0 is judged now
    header.tables = static_cast<std::int64_t>(tables_of(header.version).size());
    const bool foreign = header.application_id != 0 && header.application_id != application_id;
    const bool newer = header.application_id == application_id && header.version > schema_version;
    if (foreign || newer) check_header(header, path);  // throws the sentence for either
}

void configure_reader(Connection& db) {
    db.exec("PRAGMA busy_timeout = " + std::to_string(busy_timeout_ms), "setting the busy timeout");
    db.exec("PRAGMA query_only = 1", "opening it read-only");
}

void configure_writer(Connection& db) {
    db.exec("PRAGMA busy_timeout = " + std::to_string(busy_timeout_ms), "setting the busy timeout");
    db.query_text("PRAGMA journal_mode = WAL", "switching it to write-ahead logging");
    db.exec("PRAGMA synchronous = NORMAL", "setting its synchronous mode");
    db.exec("PRAGMA foreign_keys = ON", "turning on foreign keys");
}

bool is_file_damage(int code) {
    return code == SQLITE_NOTADB || code == SQLITE_CORRUPT;
}

// A read-only connection whose header has been read. A WAL store in a folder we cannot write has
// no -shm file to share: SQLite then reads it only as "immutable" (nobody can be writing it, since
// nobody can create the -wal file there either).
struct Inspected {
    Connection connection;
    Header header;
};

Inspected inspect_read_only(const std::string& path, bool immutable = false) {
    if (immutable) {
        Connection db(path, Connection::Mode::immutable);
        configure_reader(db);
        Header h = read_header(db);
        return {std::move(db), h};
    }
    try {
        Connection db(path, Connection::Mode::read_only);
        configure_reader(db);
        Header h = read_header(db);
        return {std::move(db), h};
    } catch (const SqliteError& e) {
        if (is_file_damage(e.code())) throw;
        Connection db(path, Connection::Mode::immutable);
        configure_reader(db);
        Header h = read_header(db);
        return {std::move(db), h};
    }
}

// What stat() says of the store and its side files: enough to tell whether anyone wrote the file
// while we read it without locks.
struct FileState {
    bool ok = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    bool wal = false, journal = false;  // the -wal and -journal files exist

    static FileState of(const std::string& path) {
        FileState f;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return f;
        f.ok = true;
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        f.size = st.st_size;
        f.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
        struct stat side {};
        f.wal = ::stat((path + "-wal").c_str(), &side) == 0;
        f.journal = ::stat((path + "-journal").c_str(), &side) == 0;
        return f;
    }
    // Nobody has the file open for writing: a WAL store has its -wal file while any connection
    // is open, and a rollback-journal writer its -journal while it writes.
    bool quiet() const { return ok && !wal && !journal; }
    bool same_as(const FileState& o) const {
        return ok && o.ok && dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns &&
               wal == o.wal && journal == o.journal;
    }
};

// The look a store gets before it is opened for writing: its header and, unless it is refused for
// its header, SQLite's damage check (store_check.h) at `depth`.
struct Looked {
    Header header;
    std::optional<Damage> damage;
};

Looked look_before_writing(const std::string& path, StoreAccess how) {
    auto look = [&](Connection::Mode mode) {
        Looked out;
        try {
            Connection db(path, mode);
            configure_reader(db);
            out.header = read_header(db);
            check_header(out.header, path);  // throws for a foreign or newer file
            // A store that writes runs, a migration or the creation of the tables in an empty
            // database gets the full check; a reading command's open, only what it may write.
            const bool full = how == StoreAccess::write || out.header.objects == 0 ||
                              out.header.version < schema_version;
            out.damage = find_damage(db, full ? CheckDepth::full : CheckDepth::cheap);
            // A version that its tables contradict (a damaged user_version) would send a sound
            // file through migrations that cannot apply.
            if (!out.damage && out.header.version >= 1 && out.header.version < schema_version &&
                missing_column(db).empty())
                out.damage = Damage{"user_version", "the file says schema version " +
                                                        std::to_string(out.header.version) +
                                                        ", but its tables already have every column of version " +
                                                        std::to_string(schema_version)};
        } catch (const SqliteError& e) {
            if (!is_file_damage(e.code()) || e.code() == SQLITE_NOTADB) throw;
            out.damage = Damage{"SQLite", e.sqlite_says()};
        }
        return out;
    };
    // When nobody has the file open (no -wal, no -journal), it is read as "immutable", which takes
    // no lock and, unlike a read-only connection to a WAL file, creates no -wal and -shm files: a
    // damaged store is then refused with nothing beside it that was not there. Such a read is only
    // valid if nobody wrote meanwhile; when the file changed, it is looked at again the ordinary way.
    const FileState before = FileState::of(path);
    if (before.quiet()) {
        Looked quiet = look(Connection::Mode::immutable);
        if (!quiet.damage || before.same_as(FileState::of(path))) return quiet;
    }
    return look(Connection::Mode::read_only);
}

// The sentence refusing a damaged store before anything was written to it.
[[noreturn]] void refuse_damaged(const std::string& path, const Damage& damage) {
    throw Error("The run store " + in_quotes(path) + " is damaged (" + damage.check + ": " + damage.message +
                "); it was left unchanged: recover what it holds with `sqlite3 " + in_quotes(path) +
                " .recover | sqlite3 NEW.sqlite` or move it aside to start a new store.");
}

std::string folder_of(const std::string& path) {
    fs::path p = fs::path(path).parent_path();
    return p.empty() ? std::string(".") : p.string();
}

// Whether `path` names the default store (run_store.h default_store_path), the one store whose
// missing folders are made.
bool is_default_store_path(const std::string& path) {
    std::error_code ec;
    const fs::path a = fs::absolute(path, ec).lexically_normal();
    if (ec) return false;
    const fs::path b = fs::absolute(default_store_path(), ec).lexically_normal();
    return !ec && a == b;
}

// The copy made before migrating: PATH.bak-vN, or PATH.bak-vN.2, .3 ... when that exists and
// holds something else. VACUUM INTO writes the same bytes for the same content, so the copy is
// written beside them first and an existing backup with the same bytes is kept instead: a
// migration that fails again and again leaves one backup, not one per attempt.
std::string backup_before_migrating(Connection& db, const std::string& path, int version) {
    const std::string base = path + ".bak-v" + std::to_string(version);
    const std::string fresh = base + ".partial";
    std::error_code ec;
    fs::remove(fresh, ec);  // left by an attempt that was killed while copying
    try {
        Statement s(db, "VACUUM INTO ?");
        s.bind(1, fresh);
        s.run();
    } catch (const SqliteError& e) {
        fs::remove(fresh, ec);
        throw Error("Cannot upgrade the run store " + in_quotes(path) + " from schema version " +
                    std::to_string(version) + ": writing its backup copy " + in_quotes(base) +
                    " failed: " + continue_sentence(e.what()) + ".");
    }
    std::string target = base;
    for (int i = 2; fs::exists(target, ec); ++i) {
        if (same_file_contents(target, fresh)) {  // read through SQLite's VFS: store_files.h
            fs::remove(fresh, ec);
            return target;
        }
        target = base + "." + std::to_string(i);
    }
    fs::rename(fresh, target, ec);
    if (ec)
        throw Error("Cannot upgrade the run store " + in_quotes(path) + " from schema version " +
                    std::to_string(version) + ": naming its backup copy " + in_quotes(target) + " failed: " +
                    ec.message() + ".");
    return target;
}

// Throws for tables that lack a column this build uses (a file stamped as a Mantissa store that
// was not written by Mantissa, or was damaged).
void check_columns(Connection& db, const std::string& path) {
    const std::string missing = missing_column(db);
    if (!missing.empty())
        throw DamagedStoreError(path, missing + " is missing",
                                "The run store " + in_quotes(path) + " is missing " + missing +
                                    "; it was not written by Mantissa or is damaged: restore a backup or move the "
                                    "file aside to start a new store.");
}

// The checks of a read-only open up to the version: an existing file, an SQLite database, a
// Mantissa store not from a newer version with the tables of its version, not empty.
Inspected inspect_existing(const std::string& path, const char* why, bool immutable = false) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error("There is no run store at " + in_quotes(path) + " yet (it is created when a run is recorded).");
    check_file_header(path);
    Inspected in = inspect_read_only(path, immutable);
    if (check_header(in.header, path))
        throw Error("The file " + in_quotes(path) + " is an empty database, not yet a run store" + std::string(why) +
                    ".");
    return in;
}

OpenedStore open_read_only(const std::string& path, const char* why) {
    Inspected in = inspect_existing(path, why);
    if (in.header.version < schema_version)
        throw Error("The run store " + in_quotes(path) + " uses schema version " + std::to_string(in.header.version) +
                    " and cannot be upgraded to version " + std::to_string(schema_version) + " here" + why +
                    "; open it once with write access to upgrade it.");
    check_columns(in.connection, path);
    return {std::move(in.connection), true, 0, {}};
}

}  // namespace

OpenedStore open_store(const std::string& path, StoreAccess how) {
    if (path.empty()) throw Error("No run store file was given.");
    if (path == ":memory:")
        throw Error("':memory:' names an SQLite in-memory database, which cannot be a run store (the recorder "
                    "writes through a connection of its own); give a file name.");
    // Before SQLite sees the path: it would block on a FIFO, write its header onto a device and
    // leave '/dev/null-journal' behind, and a looping link or an overlong name reaches it as an
    // error it cannot explain.
    if (auto why = unusable_store_path(path)) throw Error(*why);
    std::error_code ec;
    if (how == StoreAccess::read_only) return open_read_only(path, "");
    if (how == StoreAccess::read && !fs::exists(path, ec))
        return open_read_only(path, "");  // says there is no store there, creating nothing

    const std::string folder = folder_of(path);
    const bool exists = fs::exists(path, ec);
    bool current = false;  // an existing store of this version: opening it takes no write lock
    if (!exists) {
        // Only the default store's folder is made (docs/schema.md): a mistyped --db must not
        // leave folders behind wherever it points.
        if (!fs::is_directory(folder, ec)) {
            // The nearest part of the folder's path that is there: a file there is not a folder.
            fs::path there = folder;
            while (!there.empty() && !fs::exists(there, ec) && there.has_relative_path()) there = there.parent_path();
            if (!there.empty() && fs::exists(there, ec) && !fs::is_directory(there, ec))
                throw Error("Cannot create the run store " + in_quotes(path) + ": " + in_quotes(there.string()) +
                            " on its path is not a folder.");
            if (!is_default_store_path(path))
                throw Error("Cannot create the run store " + in_quotes(path) + ": its folder " + in_quotes(folder) +
                            " does not exist; create the folder first, or choose a file in a folder that exists.");
            fs::create_directories(folder, ec);
        }
        if (ec)
            throw Error("Cannot create the folder " + in_quotes(folder) + " for the run store " + in_quotes(path) +
                        ": " + ec.message() + ".");
        if (access(folder.c_str(), W_OK) != 0)
            throw Error("Cannot create the run store " + in_quotes(path) + ": the folder " + in_quotes(folder) +
                        " is not writable.");
    } else {
        check_file_header(path);
        const bool writable = access(path.c_str(), W_OK) == 0 && access(folder.c_str(), W_OK) == 0;
        if (!writable) return open_read_only(path, " (the file or its folder is not writable)");
        const auto size = fs::file_size(path, ec);
        // A reading command never creates a store, not even in an empty file (docs/schema.md).
        const auto refuse_empty_when_reading = [&] {
            if (how == StoreAccess::read)
                throw Error("The file " + in_quotes(path) +
                            " is an empty database, not yet a run store (it becomes one when a run is recorded).");
        };
        if (!ec && size == 0) refuse_empty_when_reading();
        if (!ec && size > 0) {
            // Look before touching: a file that fails here is never opened for writing.
            const Looked looked = look_before_writing(path, how);
            if (looked.damage) refuse_damaged(path, *looked.damage);
            const bool empty = check_header(looked.header, path);
            if (empty) refuse_empty_when_reading();
            current = !empty && looked.header.version == schema_version;
        }
    }

    Connection db(path, Connection::Mode::read_write_create);
    configure_writer(db);
    OpenedStore out{std::move(db), false, 0, {}};
    Connection& c = out.connection;

    int version = schema_version;
    if (!current) {
        Transaction t(c);
        Header h = read_header(c);  // again, under the write lock: another process may have created it
        if (check_header(h, path)) {
            create_schema(c);
            version = schema_version;
        } else {
            version = static_cast<int>(h.version);
        }
        t.commit();
    }
    if (version < schema_version) {
        out.backup_path = backup_before_migrating(c, path, version);
        out.migrated_from = version;
        int v = version;
        try {
            for (; v < schema_version; ++v) {
                Transaction t(c);  // rolls the step back when it throws
                int now = static_cast<int>(c.query_int("PRAGMA user_version", "reading its schema version"));
                if (now == v) migrate_schema(c, v);  // else another process migrated it meanwhile
                t.commit();
            }
        } catch (const Error& e) {
            std::string why = e.what();
            if (!why.empty() && why.back() == '.') why.pop_back();
            if (v == version)
                throw Error(why + "; the migration was rolled back, so the store was left unchanged at schema version " +
                            std::to_string(v) + " (its backup copy is " + in_quotes(out.backup_path) + ").");
            // Earlier steps committed: say where the file stands, and that the backup has the original.
            throw Error(why + "; that step was rolled back, so the store now stands at schema version " + std::to_string(v) +
                        " (it was at version " + std::to_string(version) + "; its backup copy, at version " +
                        std::to_string(version) + ", is " + in_quotes(out.backup_path) + ").");
        }
    }
    check_columns(c, path);
    return out;
}

OtherStore open_other_store(const std::string& path, bool may_read_immutable) {
    if (path.empty()) throw Error("No run store file was given.");
    if (path == ":memory:")
        throw Error("':memory:' names an SQLite in-memory database, which cannot be a run store; give a file name.");
    if (auto why = unusable_store_path(path)) throw Error(*why);
    // Nobody has it open (no -wal, no -journal): read as "immutable", which leaves nothing beside
    // it; a read-only connection to a WAL file would create its -wal and -shm files.
    const FileState before = FileState::of(path);
    const bool immutable = may_read_immutable && before.quiet();
    Inspected in = inspect_existing(path, "", immutable);
    const int version = static_cast<int>(in.header.version);
    // An older store lacks the columns of later versions by design; its reader asks for the ones
    // it has (store_import.cpp).
    if (version == schema_version) check_columns(in.connection, path);
    OtherStore out{std::move(in.connection), version, {}};
    if (immutable) out.written_since = [path, before] { return !before.same_as(FileState::of(path)); };
    return out;
}

Connection open_writer_connection(const std::string& path, std::int64_t max_page_count) {
    Connection db(path, Connection::Mode::read_write);
    configure_writer(db);
    // A batch is written in one transaction; a page cache that holds it avoids spilling pages to
    // the WAL twice (SQLite's default cache is 2 MiB; a 16k-row batch of steps is about 3 MiB).
    db.exec("PRAGMA cache_size = -16384", "sizing its page cache");
    if (max_page_count > 0)
        db.query_int("PRAGMA max_page_count = " + std::to_string(max_page_count), "capping its size");
    return db;
}

}  // namespace mantissa::store
