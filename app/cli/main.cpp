// mantissa-cli: the headless face of Mantissa. Dispatches to the registered subcommands and turns
// every error into one sentence and an exit code (0 ok, 1 failed, 2 bad usage or input). Running
// out of memory (std::bad_alloc), a failed file operation (std::filesystem::filesystem_error) and a
// size too large to hold (std::length_error) are input a person can change: one sentence saying
// what the command was doing, and exit 2. A sentence is printed with its control characters and
// bytes that are not UTF-8 escaped (printable_text.h), so it is one line of text whatever it
// quotes (a damaged store's schema, as SQLite's message gives it). A damaged checkpoint
// (DamagedCheckpointError: its bytes do not match their checksums) gets mantissa-cli's advice,
// whichever command read it; the engine's sentence says only what is wrong. Standard
// output is flushed and checked before any exit: a write that failed (a full disk) is never exit 0.
// Before anything else, OpenMP's workers are made to wait passively (app/passive_openmp_waits.h: the
// program may execute itself again, same process id).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "passive_openmp_waits.h"
#include "printable_text.h"
#include "error.h"
#include "weights/checkpoint_info.h"

using namespace mantissa::cli;

namespace {

// The engine's sentence with what to do instead, in mantissa-cli's terms.
std::string damaged_checkpoint_sentence(const mantissa::DamagedCheckpointError& e) {
    return e.with_advice(
        "branch from an earlier one with `mantissa-cli resume RUN --as-new --step S` "
        "(`mantissa-cli show RUN` lists the run's checkpoints)");
}

void print_overview() {
    std::printf("usage: mantissa-cli COMMAND [OPTIONS]\n\nMantissa %s, a lab for mixed-precision training.\n\n"
                "Commands:\n", MANTISSA_VERSION);
    for (const auto& c : commands()) std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
    std::printf("\nRun 'mantissa-cli COMMAND --help' for a command's options.\n");
}

// The exit code once stdout is flushed: after a command that succeeded, a failed write is said in
// one sentence and is exit 2; a command that failed has said its sentence and its code stands.
int finish(int code, const std::string& who) {
    const std::string error = stdout_write_error();
    if (error.empty() || code != exit_ok) return code;
    std::fprintf(stderr, "%s: %s\n", who.c_str(), error.c_str());
    return exit_usage;
}

int run(std::vector<std::string> args) {
    if (args.size() >= 2 && args[0] == "help") args = {args[1], "--help"};  // `help COMMAND`: its usage
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_overview();
        return args.empty() ? exit_usage : exit_ok;
    }
    if (args[0] == "--version") {
        std::printf("mantissa-cli %s\n", MANTISSA_VERSION);
        return exit_ok;
    }
    const Command* command = nullptr;
    for (const auto& c : commands())
        if (c.name == args[0]) command = &c;
    if (!command) {
        std::fprintf(stderr, "mantissa-cli: unknown command '%s'; run 'mantissa-cli --help' for the list.\n",
                     mantissa::printable_text(args[0]).c_str());
        return exit_usage;
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest) {
        if (a == "--help" || a == "-h") {
            std::printf("%s", command->usage.c_str());
            return exit_ok;
        }
    }
    try {
        Args parsed(rest);
        return command->run(parsed);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "mantissa-cli %s: %s\n", command->name.c_str(), mantissa::printable_text(e.message).c_str());
        return exit_usage;
    } catch (const mantissa::DamagedCheckpointError& e) {
        std::fprintf(stderr, "mantissa-cli %s: %s\n", command->name.c_str(),
                     mantissa::printable_text(damaged_checkpoint_sentence(e)).c_str());
        return exit_usage;
    } catch (const mantissa::Error& e) {
        std::fprintf(stderr, "mantissa-cli %s: %s\n", command->name.c_str(), mantissa::printable_text(e.what()).c_str());
        return exit_usage;
    } catch (const std::bad_alloc&) {
        // The engine's readers say which file when an allocation fails; this is the rest.
        std::fprintf(stderr, "mantissa-cli %s: not enough memory: an allocation failed while trying to %s; free "
                             "some memory, raise the limit (ulimit -v), or use smaller data.\n",
                     command->name.c_str(), command->summary.c_str());
        return exit_usage;
    } catch (const std::filesystem::filesystem_error& e) {
        const std::string path = e.path1().empty() ? "" : " (" + e.path1().string() + ")";
        std::fprintf(stderr, "mantissa-cli %s: a file operation failed while trying to %s: %s%s.\n",
                     command->name.c_str(), command->summary.c_str(), e.code().message().c_str(), path.c_str());
        return exit_usage;
    } catch (const std::length_error&) {
        std::fprintf(stderr, "mantissa-cli %s: a size was too large to hold while trying to %s; the input is "
                             "larger than this program can handle.\n",
                     command->name.c_str(), command->summary.c_str());
        return exit_usage;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mantissa-cli %s: unexpected error: %s\n", command->name.c_str(),
                     mantissa::printable_text(e.what()).c_str());
        return exit_failed;
    }
}

}  // namespace

int main(int argc, char** argv) {
    mantissa::app::make_openmp_waits_passive(argv);  // may execute this program again: first
    const std::vector<std::string> args(argv + 1, argv + argc);
    const int code = run(args);
    const std::string who = args.empty() ? "mantissa-cli" : "mantissa-cli " + args[0];
    return finish(code, who);
}
