// Shared by suites that check a store another process or window wrote: SQLite's own verdict on it.
#pragma once

#include <QString>

#include <sqlite3.h>

namespace test_support {

// PRAGMA integrity_check through a connection of its own: "ok", the first problem, or why the file
// could not be opened.
inline QString integrity(const QString& path) {
    sqlite3* db = nullptr;
    QString out = QStringLiteral("cannot open");
    // Read-write, so that when it is the last connection it removes the -wal and -shm files (a
    // read-only one leaves them behind).
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            out = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
        else
            out = QString::fromUtf8(sqlite3_errmsg(db));
        sqlite3_finalize(s);
    }
    sqlite3_close_v2(db);
    return out;
}

}  // namespace test_support
