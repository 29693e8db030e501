// The bounded damage check (see store_check.h). The budget is kept by a progress handler that
// interrupts the pragma once the deadline has passed; SQLite calls it every few thousand virtual
// machine instructions, so the check stops within milliseconds of its deadline.
#include "store/store_check.h"

#include <sqlite3.h>

namespace mantissa::store {

namespace {

using Clock = std::chrono::steady_clock;

struct Deadline {
    Clock::time_point at;
    bool passed = false;
};

int on_progress(void* p) {
    auto* d = static_cast<Deadline*>(p);
    if (Clock::now() < d->at) return 0;
    d->passed = true;
    return 1;  // interrupts the statement (SQLITE_INTERRUPT)
}

// SQLite's report on one line: "*** in database main ***\nPage 7: ..." -> "Page 7: ...", at most
// about 300 bytes (cut where a UTF-8 character begins).
std::string one_line(std::string text) {
    const std::string banner = "*** in database main ***";
    if (text.rfind(banner, 0) == 0) text.erase(0, banner.size());
    for (char& c : text)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    const auto first = text.find_first_not_of(' ');
    text.erase(0, first == std::string::npos ? text.size() : first);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (text.size() > 300) {
        std::size_t cut = 300;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text = text.substr(0, cut) + "...";
    }
    return text;
}

enum class Outcome { row, done, damaged, out_of_time };

// Runs `sql` within `budget` and reads the first column of its first row into *row. A statement
// that fails because the file is damaged is Outcome::damaged, with SQLite's message in *damage;
// any other failure (a lock, an I/O error) is thrown.
Outcome run_within(Connection& db, const std::string& sql, std::chrono::milliseconds budget, std::string* row,
                   Damage* damage) {
    sqlite3* h = db.handle();
    Deadline deadline{Clock::now() + budget};
    sqlite3_progress_handler(h, 1000, on_progress, &deadline);
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(h, sql.c_str(), -1, &stmt, nullptr);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) {
            const unsigned char* t = sqlite3_column_text(stmt, 0);
            *row = t ? reinterpret_cast<const char*>(t) : "";
        }
    }
    const std::string sqlite_says = sqlite3_errmsg(h);  // before finalize() resets it
    sqlite3_finalize(stmt);
    sqlite3_progress_handler(h, 0, nullptr, nullptr);

    if (rc == SQLITE_ROW) return Outcome::row;
    if (rc == SQLITE_DONE) return Outcome::done;
    if (deadline.passed || (rc & 0xff) == SQLITE_INTERRUPT) return Outcome::out_of_time;
    if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
        // The check could not even begin (a schema it cannot read, a page it cannot follow).
        *damage = {"SQLite", one_line(sqlite_says)};
        return Outcome::damaged;
    }
    db.fail(rc, "checking it for damage");
}

// One integrity pragma: nullopt when it answers "ok", or runs out of time (*out_of_time is set).
std::optional<Damage> check(Connection& db, const char* name, const std::string& sql,
                            std::chrono::milliseconds budget, bool* out_of_time) {
    std::string row;
    Damage damage;
    switch (run_within(db, sql, budget, &row, &damage)) {
        case Outcome::row:
            if (row == "ok") return std::nullopt;
            return Damage{name, one_line(row)};
        case Outcome::done: return std::nullopt;
        case Outcome::damaged: return damage;
        case Outcome::out_of_time: *out_of_time = true; return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

std::optional<Damage> find_damage(Connection& db, CheckDepth depth, std::chrono::milliseconds budget) {
    bool out_of_time = false;
    if (depth == CheckDepth::full) {
        // integrity_check rather than quick_check: it also holds each index against its table,
        // which a writer relies on as soon as it inserts a row.
        auto damage = check(db, "integrity_check", "PRAGMA integrity_check(1)", budget, &out_of_time);
        if (damage || !out_of_time) return damage;  // else a huge store: check what is cheap instead
    }
    // The runs table (one row per run, so small): an open that writes at all writes there. A
    // store without one (an empty database) has nothing for the cheap check to look at.
    std::string row;
    Damage damage;
    switch (run_within(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'runs'", budget,
                       &row, &damage)) {
        case Outcome::row: break;
        case Outcome::damaged: return damage;
        default: return std::nullopt;
    }
    if (row != "1") return std::nullopt;
    return check(db, "quick_check", "PRAGMA quick_check(runs)", budget, &out_of_time);
}

}  // namespace mantissa::store
