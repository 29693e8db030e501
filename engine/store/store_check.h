// The damage check a store passes before anything is written to it: SQLite's own integrity check,
// bounded in time so that opening a huge store for writing does not stall for minutes.
//
// A store opened for writing (`train`, the GUI's recorder, the editing commands, a migration) gets
// the full check; when that runs past its time budget it falls back to the cheap check. A store
// opened by a reading command (`runs`, `show`, `export`, which may still mark dead runs
// `interrupted`) gets only the cheap check: the `runs` table, the one table such an open writes.
// The check only reads, through whatever connection it is given (open_store gives it one that
// leaves no -wal or -shm files behind, so a damaged store is refused byte-identical and alone).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "store/sqlite_db.h"

namespace mantissa::store {

enum class CheckDepth {
    cheap,  // PRAGMA quick_check(runs)
    full,   // PRAGMA integrity_check, within the time budget; then the cheap check
};

// How long the full check may take before it gives up (wall time on a quiet machine: about
// 100-200 MB of store).
inline constexpr std::chrono::milliseconds full_check_budget{2000};

struct Damage {
    std::string check;    // "integrity_check", "quick_check" or "SQLite"
    std::string message;  // the first problem, on one line ("Page 7: btree page ... ")
};

// The first problem SQLite finds in db's main database, or nullopt when it finds none (or, for
// the cheap check, when even that runs past the budget). SQLite errors other than damage (a lock,
// an I/O error) are thrown as SqliteError.
std::optional<Damage> find_damage(Connection& db, CheckDepth depth,
                                  std::chrono::milliseconds budget = full_check_budget);

}  // namespace mantissa::store
