// What every mantissa-cli subcommand shares: argument scanning, the exit codes, the command
// registry. Each subcommand lives in its own cmd_*.cpp and registers itself with
// MANTISSA_CLI_COMMAND, so adding one touches no other file.
//
// Exit codes: 0 ok, 1 the run (or the operation) failed, 2 bad usage or bad input, or an output
// (standard output or a file) that cannot be written.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output_guard.h"

namespace mantissa {
class RunStore;
}

namespace mantissa::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;
inline constexpr int exit_usage = 2;

// Thrown for bad usage or bad input; main prints "mantissa-cli NAME: <message>" and exits 2.
struct UsageError {
    std::string message;
};

// A simple scanner over one subcommand's arguments: flags (--json), options (--to LIST, --to=LIST),
// repeated options (--set K=V ...), and positional values. Unknown options are usage errors.
class Args {
public:
    explicit Args(std::vector<std::string> args) : m_args(std::move(args)) {}

    // Declare before parse(): flags take no value, options take one.
    void flag(std::string name) { m_flags.push_back(std::move(name)); }
    void option(std::string name) { m_options.push_back(std::move(name)); }
    void parse();  // throws UsageError naming the unknown option or the missing value

    bool has(std::string_view name) const;                       // flag or option given
    std::optional<std::string> value(std::string_view name) const;   // last occurrence
    std::vector<std::string> values(std::string_view name) const;    // every occurrence
    const std::vector<std::string>& positional() const { return m_positional; }
    // Exactly `count` positional words, or a UsageError: fewer is "MISSING: USAGE", more names the
    // first word too many ("'x' is one word too many: USAGE"), so every command says it alike.
    void expect_words(std::size_t count, std::string_view missing, std::string_view usage) const;
    // For a command whose actions share one parser (sweep list, weights show...): an option given
    // that `action` does not read is a UsageError naming both, never silently ignored.
    void allow_only(std::initializer_list<std::string_view> names, std::string_view action) const;

    // Typed access; a value that does not parse is a UsageError naming the option. Whole numbers
    // may be written with an exponent (1e3), as in the experiment file.
    std::optional<long long> integer(std::string_view name) const;

private:
    std::vector<std::string> m_args;
    std::vector<std::string> m_flags, m_options;
    std::vector<std::pair<std::string, std::string>> m_given;
    std::vector<std::string> m_positional;
};

struct Command {
    std::string name;
    std::string summary;   // one line for `mantissa-cli --help`
    std::string usage;     // full text for `mantissa-cli NAME --help`
    std::function<int(Args&)> run;
};

bool register_command(Command command);
const std::vector<Command>& commands();

// Whether a file is at the store path `db` (--db), for the commands that say "no store yet"
// rather than open a missing one: a path stat() cannot follow (a symbolic link loop, a name too
// long) counts as there, so that opening it gives the store's own sentence (exit 2), never a
// filesystem exception.
bool store_file_present(const std::string& db);

// A store opened to record (train, resume, sweep) that can only be read, refused before any work:
// "The run store DB can only be read (check its permissions), so WHAT cannot be recorded[; ADVICE]."
void require_writable_store(const RunStore& store, const std::string& db, std::string_view what,
                            std::string_view advice = {});

// "1 run", "2 runs": n and the word for its number.
std::string count_of(std::int64_t n, const char* one, const char* many);

// True when stdout is a terminal (progress lines are drawn only then).
bool stdout_is_terminal();

// Before writing the output file `target` (named by `option`, e.g. "-o"): a UsageError when it is
// one of the guarded files (the run store, an input) or any SQLite database (app/output_guard.h).
void refuse_unsafe_output(const std::string& option, const std::string& target,
                          const std::vector<app::GuardedFile>& guarded);

// Flushes `out` and throws mantissa::Error "Writing to NAME failed: <reason>." when any write to
// it failed (a full disk, /dev/full). Every output stream is checked so before the exit code.
// Set errno to 0 before writing to `out`, so the reason of a write that failed early is kept.
void require_written(std::ostream& out, const std::string& name);
// That sentence, for a write that failed with errno `err` (0: reason unknown).
std::string write_failed(const std::string& name, int err);

// The same for the process's standard output (std::cout and C stdio both): the sentence saying
// why it could not be written, or an empty string. main() calls it after every command that
// succeeded (one that failed has said its sentence already).
std::string stdout_write_error();

}  // namespace mantissa::cli

#define MANTISSA_CLI_CONCAT2(a, b) a##b
#define MANTISSA_CLI_CONCAT(a, b) MANTISSA_CLI_CONCAT2(a, b)
// Registers a subcommand at static-initialisation time: MANTISSA_CLI_COMMAND({...});
#define MANTISSA_CLI_COMMAND(...)                                                                 \
    static const bool MANTISSA_CLI_CONCAT(mantissa_cli_registered_, __LINE__) =                  \
        ::mantissa::cli::register_command(__VA_ARGS__)
