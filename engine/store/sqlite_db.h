// Small RAII wrappers over the SQLite C API: Connection, Statement and Transaction.
//
// Every SQLite return code is checked; a failure throws SqliteError (a mantissa::Error) whose
// message is one sentence naming the store file and what was being done, with the common causes
// (not a database, damaged, disk full, read-only, locked) put in plain words; damage the store's
// own checks find is a DamagedStoreError, worded alike. A Transaction rolls back unless commit()
// was called, so an exception half-way through a batch leaves the file as it was. Destructors
// never throw.
//
// Threads: a Connection and its Statements belong to one thread at a time (SQLite is built
// serialized on Debian, but the store never shares a connection between threads anyway).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "error.h"
#include "held_files.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mantissa::store {

// A failed SQLite call. code() is the primary result code (SQLITE_FULL, SQLITE_CORRUPT, ...);
// sqlite_says() is SQLite's own message ("database disk image is malformed"); path() is the file
// of the connection that failed, and reason() what the sentence puts in brackets ("SQLite: database
// disk image is malformed, while reading it"). SQLITE_CORRUPT is the file's damage, as a
// DamagedStoreError is: a caller that only reads the file words its own sentence from those.
class SqliteError : public Error {
public:
    SqliteError(const std::string& message, int code, std::string sqlite_says = {}, std::string path = {},
                std::string reason = {})
        : Error(message),
          m_code(code),
          m_sqlite_says(std::move(sqlite_says)),
          m_path(std::move(path)),
          m_reason(std::move(reason)) {}
    int code() const { return m_code; }
    const std::string& sqlite_says() const { return m_sqlite_says; }
    const std::string& path() const { return m_path; }
    const std::string& reason() const { return m_reason; }

private:
    int m_code;
    std::string m_sqlite_says, m_path, m_reason;
};

// A store file that the store's own checks find damaged (store_open.cpp: tables without a schema
// version, tables of its version missing, columns missing). what() is the sentence for a person's
// own store, the one they record to, with its advice (restore a backup or move the file aside);
// path() and reason() (the part in brackets: "only 10 of its 11 tables exist") let a caller that
// only reads the file (store_import.cpp) word a sentence that fits it instead.
class DamagedStoreError : public Error {
public:
    // what() is damaged_store_sentence(path, reason).
    DamagedStoreError(std::string path, std::string reason);
    // what() is `sentence`, for a damage worded otherwise.
    DamagedStoreError(std::string path, std::string reason, const std::string& sentence)
        : Error(sentence), m_path(std::move(path)), m_reason(std::move(reason)) {}
    const std::string& path() const { return m_path; }
    const std::string& reason() const { return m_reason; }

private:
    std::string m_path, m_reason;
};

// "The run store 'PATH' is damaged (REASON); restore a backup or move the file aside to start a new
// store.": the sentence for a damaged store of one's own, whoever found the damage (SQLite or the
// store's checks).
std::string damaged_store_sentence(const std::string& path, const std::string& reason);

class Statement;

class Connection {
public:
    enum class Mode {
        read_write_create,  // creates the file when absent
        read_write,
        read_only,
        immutable,  // read-only, and SQLite assumes nobody writes (a read-only folder)
    };

    Connection(const std::string& path, Mode mode);
    ~Connection();
    Connection(Connection&& other) noexcept;
    Connection& operator=(Connection&& other) noexcept;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    sqlite3* handle() const { return m_db; }
    const std::string& path() const { return m_path; }

    // Runs SQL that returns no rows (one or more statements separated by ';').
    void exec(const std::string& sql, std::string_view what);
    Statement prepare(const std::string& sql);

    // Single-value queries, for pragmas and counts.
    std::int64_t query_int(const std::string& sql, std::string_view what);
    std::string query_text(const std::string& sql, std::string_view what);

    std::int64_t last_insert_rowid() const;
    std::int64_t changes() const;  // rows changed by the last INSERT/UPDATE/DELETE
    bool in_transaction() const;

    // Throws SqliteError for result code rc, saying what was being done ("writing a batch").
    [[noreturn]] void fail(int rc, std::string_view what) const;

private:
    void close() noexcept;
    sqlite3* m_db = nullptr;
    std::string m_path;
    HeldFile m_held;  // the database, while open: files a person names are never opened over it
};

class Statement {
public:
    Statement(Connection& connection, const std::string& sql);
    ~Statement();
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Parameters are 1-based, as in SQLite. bind() copies text and blobs; bind_static() binds them
    // in place (no copy, for the recorder's hot path), so they must outlive the next step()/reset().
    // A NaN double is stored as NULL (SQLite's rule); column_double() reads NULL back as NaN.
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, bool value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind_static(int index, std::string_view text);
    Statement& bind_static_blob(int index, std::span<const std::uint8_t> bytes);
    Statement& bind_null(int index);
    // Column `col` of the row `row` stands on, copied as it is stored (its type kept: an integer,
    // a real, an infinity, text, a blob or NULL); `row` may be a statement of another connection.
    Statement& bind_column(int index, const Statement& row, int col);

    bool step();  // true: a row is ready to read; false: done. Throws on error.
    void run();   // steps to the end and resets: for INSERT/UPDATE/DELETE
    void reset() noexcept;

    int column_count() const;
    bool column_is_null(int col) const;
    int column_type(int col) const;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, ...
    std::string column_name(int col) const;
    std::int64_t column_int(int col) const;
    double column_double(int col) const;                       // NULL -> NaN
    std::string column_text(int col) const;                    // NULL -> ""
    std::span<const std::uint8_t> column_blob(int col) const;  // valid until the next step()

private:
    void check_bind(int rc, int index);
    Connection* m_connection = nullptr;
    sqlite3_stmt* m_stmt = nullptr;
};

class Transaction {
public:
    enum class Kind { deferred, immediate };
    explicit Transaction(Connection& connection, Kind kind = Kind::immediate);
    ~Transaction();  // rolls back unless committed
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Connection& m_connection;
    bool m_open = false;
};

}  // namespace mantissa::store
