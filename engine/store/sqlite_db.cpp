// The SQLite RAII wrappers; see sqlite_db.h. The one place that turns SQLite result codes into
// sentences for a person.
#include "store/sqlite_db.h"

#include <cmath>
#include <limits>
#include <utility>

#include <sqlite3.h>

namespace mantissa::store {

namespace {

std::string sentence_for(int rc, const std::string& path, std::string_view what, const std::string& sqlite_says,
                         const std::string& reason) {
    const std::string p = "'" + path + "'";
    const std::string w(what);
    switch (rc & 0xff) {
        case SQLITE_NOTADB:
            return "The file " + p +
                   " is not an SQLite database, so it is not a Mantissa run store; "
                   "choose another file.";
        case SQLITE_CORRUPT: return damaged_store_sentence(path, reason);
        case SQLITE_FULL: return "The disk holding the run store " + p + " is full (while " + w + "); free some space.";
        case SQLITE_READONLY: return "The run store " + p + " is read-only (while " + w + ").";
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return "The run store " + p + " stayed locked by another process (while " + w +
                   "); try again when it is done.";
        case SQLITE_CANTOPEN:
            return "Cannot open the run store " + p + " (" + reason +
                   "); check that the file and its folder exist and are accessible.";
        case SQLITE_IOERR: return "Could not read or write the run store " + p + " (" + reason + ").";
        default: return "The run store " + p + " failed while " + w + " (SQLite: " + sqlite_says + ").";
    }
}

// The SqliteError for result code rc on the file `path`; `detail` is SQLite's message, when it has one.
SqliteError error_for(int rc, const std::string& path, std::string_view what, const char* detail) {
    const std::string sqlite_says = detail && *detail ? std::string(detail) : sqlite3_errstr(rc);
    std::string reason = "SQLite: " + sqlite_says + ", while " + std::string(what);
    return SqliteError(sentence_for(rc, path, what, sqlite_says, reason), rc & 0xff, sqlite_says, path,
                       std::move(reason));
}

}  // namespace

DamagedStoreError::DamagedStoreError(std::string path, std::string reason)
    : Error(damaged_store_sentence(path, reason)), m_path(std::move(path)), m_reason(std::move(reason)) {}

std::string damaged_store_sentence(const std::string& path, const std::string& reason) {
    return "The run store '" + path + "' is damaged (" + reason +
           "); restore a backup or move the file aside to start a new store.";
}

// ---- Connection

Connection::Connection(const std::string& path, Mode mode) : m_path(path) {
    // NOMUTEX: a connection is only ever used by one thread at a time (see sqlite_db.h), so
    // SQLite's per-call connection mutex is pure cost (about a tenth of the writer's time).
    int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    switch (mode) {
        case Mode::read_write_create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
        case Mode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
        case Mode::read_only: flags |= SQLITE_OPEN_READONLY; break;
        case Mode::immutable: flags |= SQLITE_OPEN_READONLY; break;
    }
    // With SQLITE_OPEN_URI set, a plain path that happens to start with "file:" would be taken as
    // a URI; always pass a URI built from the path so every name means the file it names.
    std::string uri = "file:";
    for (unsigned char c : path) {
        if (c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f) {
            static const char hex[] = "0123456789ABCDEF";
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        } else {
            uri += static_cast<char>(c);
        }
    }
    if (mode == Mode::immutable) uri += "?immutable=1";
    int rc = sqlite3_open_v2(uri.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string detail = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        close();
        throw error_for(rc, m_path, "opening it", detail.c_str());
    }
    sqlite3_extended_result_codes(m_db, 1);
    m_held = HeldFile(path);  // the file exists now (created when absent)
    // Without it SQLite trusts a page's cell pointers: a b-tree page whose pointer array was
    // overwritten is walked as if it held fewer cells, and a loop over the rows ends with
    // SQLITE_DONE after part of them (an export of 136 rows of 360, exit 0). With it, such a page
    // is SQLITE_CORRUPT when it is loaded, which step() reports as the store's damage.
    rc = sqlite3_exec(m_db, "PRAGMA cell_size_check = ON", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
        const std::string detail = sqlite3_errmsg(m_db);
        close();  // the destructor does not run for a constructor that throws
        throw error_for(rc, m_path, "turning on its page checks", detail.c_str());
    }
}

Connection::~Connection() {
    close();
}

Connection::Connection(Connection&& other) noexcept
    : m_db(std::exchange(other.m_db, nullptr)), m_path(std::move(other.m_path)), m_held(std::move(other.m_held)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
    if (this != &other) {
        close();
        m_db = std::exchange(other.m_db, nullptr);
        m_path = std::move(other.m_path);
        m_held = std::move(other.m_held);
    }
    return *this;
}

void Connection::close() noexcept {
    if (m_db) {
        sqlite3_close_v2(m_db);  // statements still alive keep it open until they finalize
        m_db = nullptr;
    }
    m_held.reset();
}

void Connection::fail(int rc, std::string_view what) const {
    throw error_for(rc, m_path, what, m_db ? sqlite3_errmsg(m_db) : nullptr);
}

void Connection::exec(const std::string& sql, std::string_view what) {
    int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc, what);
}

Statement Connection::prepare(const std::string& sql) {
    return Statement(*this, sql);
}

std::int64_t Connection::query_int(const std::string& sql, std::string_view what) {
    try {
        Statement s(*this, sql);
        return s.step() ? s.column_int(0) : 0;
    } catch (const SqliteError& e) {
        fail(e.code(), what);
    }
}

std::string Connection::query_text(const std::string& sql, std::string_view what) {
    try {
        Statement s(*this, sql);
        return s.step() ? s.column_text(0) : std::string();
    } catch (const SqliteError& e) {
        fail(e.code(), what);
    }
}

std::int64_t Connection::last_insert_rowid() const {
    return sqlite3_last_insert_rowid(m_db);
}
std::int64_t Connection::changes() const {
    return sqlite3_changes64(m_db);
}
bool Connection::in_transaction() const {
    return sqlite3_get_autocommit(m_db) == 0;
}

// ---- Statement

Statement::Statement(Connection& connection, const std::string& sql) : m_connection(&connection) {
    int rc = sqlite3_prepare_v3(connection.handle(), sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(m_stmt);
        m_stmt = nullptr;
        std::string first = sql.substr(0, sql.find_first_of("(\n"));
        connection.fail(rc, "preparing \"" + first + "\"");
    }
}

Statement::~Statement() {
    if (m_stmt) sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement&& other) noexcept
    : m_connection(other.m_connection), m_stmt(std::exchange(other.m_stmt, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
    if (this != &other) {
        if (m_stmt) sqlite3_finalize(m_stmt);
        m_connection = other.m_connection;
        m_stmt = std::exchange(other.m_stmt, nullptr);
    }
    return *this;
}

void Statement::check_bind(int rc, int index) {
    if (rc != SQLITE_OK) m_connection->fail(rc, "binding parameter " + std::to_string(index));
}

Statement& Statement::bind(int index, std::int64_t value) {
    check_bind(sqlite3_bind_int64(m_stmt, index, value), index);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    if (std::isnan(value))
        check_bind(sqlite3_bind_null(m_stmt, index), index);
    else
        check_bind(sqlite3_bind_double(m_stmt, index, value), index);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    check_bind(sqlite3_bind_text64(m_stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8), index);
    return *this;
}

Statement& Statement::bind_static(int index, std::string_view text) {
    check_bind(sqlite3_bind_text64(m_stmt, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8), index);
    return *this;
}

Statement& Statement::bind_static_blob(int index, std::span<const std::uint8_t> bytes) {
    // A zero-length blob is still a blob (not NULL): pass a non-null pointer.
    static const std::uint8_t empty = 0;
    const void* data = bytes.empty() ? &empty : bytes.data();
    check_bind(sqlite3_bind_blob64(m_stmt, index, data, bytes.size(), SQLITE_STATIC), index);
    return *this;
}

Statement& Statement::bind_null(int index) {
    check_bind(sqlite3_bind_null(m_stmt, index), index);
    return *this;
}

Statement& Statement::bind_column(int index, const Statement& row, int col) {
    // sqlite3_bind_value copies the value, so `row` may step on (or belong to another connection).
    check_bind(sqlite3_bind_value(m_stmt, index, sqlite3_column_value(row.m_stmt, col)), index);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    const bool reading = sqlite3_stmt_readonly(m_stmt) != 0;
    sqlite3_reset(m_stmt);
    m_connection->fail(rc, reading ? "reading it" : "writing to it");
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() noexcept {
    sqlite3_reset(m_stmt);
}

int Statement::column_count() const {
    return sqlite3_column_count(m_stmt);
}
bool Statement::column_is_null(int col) const {
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}
int Statement::column_type(int col) const {
    return sqlite3_column_type(m_stmt, col);
}
std::string Statement::column_name(int col) const {
    const char* n = sqlite3_column_name(m_stmt, col);
    return n ? n : "";
}
std::int64_t Statement::column_int(int col) const {
    return sqlite3_column_int64(m_stmt, col);
}

double Statement::column_double(int col) const {
    if (sqlite3_column_type(m_stmt, col) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(m_stmt, col);
}

std::string Statement::column_text(int col) const {
    const unsigned char* t = sqlite3_column_text(m_stmt, col);
    if (!t) return {};
    return std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, col)));
}

std::span<const std::uint8_t> Statement::column_blob(int col) const {
    const void* b = sqlite3_column_blob(m_stmt, col);
    int n = sqlite3_column_bytes(m_stmt, col);
    if (!b || n <= 0) return {};
    return {static_cast<const std::uint8_t*>(b), static_cast<std::size_t>(n)};
}

// ---- Transaction

Transaction::Transaction(Connection& connection, Kind kind) : m_connection(connection) {
    m_connection.exec(kind == Kind::immediate ? "BEGIN IMMEDIATE" : "BEGIN", "starting a transaction");
    m_open = true;
}

Transaction::~Transaction() {
    if (m_open && m_connection.in_transaction())
        sqlite3_exec(m_connection.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    m_connection.exec("COMMIT", "committing a transaction");
    m_open = false;
}

}  // namespace mantissa::store
