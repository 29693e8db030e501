// `mantissa-cli rm`, `rename`, `note` and `tag`: editing the run store. Each opens the store for
// writing and says plainly when it cannot (a read-only file, a run still being recorded).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "error.h"
#include "store/run_store.h"
#include "store/run_text.h"

namespace mantissa::cli {
namespace {

// The store named by --db, for editing; a store that does not exist has no run to edit.
RunStore open_for_editing(const Args& args) {
    const std::string db = args.value("db").value_or(default_store_path());
    if (!store_file_present(db)) throw Error("There is no run store at '" + db + "' yet.");
    return RunStore(db);
}

std::string join_from(const std::vector<std::string>& words, std::size_t first) {
    std::string s;
    for (std::size_t i = first; i < words.size(); ++i) s += (i > first ? " " : "") + words[i];
    return s;
}

int run_rm(Args& args) {
    args.option("db");
    args.parse();
    args.expect_words(1, "give the run to remove, its id or the start of its name", "mantissa-cli rm RUN");
    RunStore store = open_for_editing(args);
    const std::int64_t id = store.resolve(args.positional()[0]);
    const RunRow r = store.run(id);
    const std::vector<std::string> left = store.remove(id);
    std::printf("Removed run %lld (%s) and its %lld steps.\n", static_cast<long long>(id), r.name.c_str(),
                static_cast<long long>(r.steps));
    if (!left.empty()) {
        const std::string folder = store::printable_text(std::filesystem::path(left.front()).parent_path().string());
        const bool one = left.size() == 1;
        std::error_code ec;
        const bool any_there = std::any_of(left.begin(), left.end(),
                                           [&](const std::string& f) { return std::filesystem::exists(f, ec); });
        // A store copied away from its checkpoints' folder names files that are not there.
        if (!any_there)
            std::printf("Its %zu checkpoint file%s %s not found where the store records them (%s), so nothing "
                        "else was removed.\n",
                        left.size(), one ? "" : "s", one ? "was" : "were", folder.c_str());
        else
            std::printf("Its %zu checkpoint file%s belong%s to another run store and %s left in place (%s).\n",
                        left.size(), one ? "" : "s", one ? "s" : "", one ? "was" : "were", folder.c_str());
    }
    return exit_ok;
}

int run_rename(Args& args) {
    args.option("db");
    args.parse();
    args.expect_words(2, "give the run and its new name", "mantissa-cli rename RUN NAME (quote a name with spaces)");
    RunStore store = open_for_editing(args);
    const std::int64_t id = store.resolve(args.positional()[0]);
    const std::string old_name = store.run(id).name;
    store.rename(id, args.positional()[1]);
    std::printf("Renamed run %lld: %s -> %s\n", static_cast<long long>(id), old_name.c_str(),
                args.positional()[1].c_str());
    return exit_ok;
}

int run_note(Args& args) {
    args.option("db");
    args.parse();
    if (args.positional().size() < 2) throw UsageError{"give the run and the note: note RUN TEXT (\"\" clears it)"};
    RunStore store = open_for_editing(args);
    const std::int64_t id = store.resolve(args.positional()[0]);
    const std::string text = join_from(args.positional(), 1);
    store.set_notes(id, text);
    std::printf(text.empty() ? "Cleared the notes of run %lld.\n" : "Noted on run %lld.\n", static_cast<long long>(id));
    return exit_ok;
}

int run_tag(Args& args) {
    args.option("db");
    args.parse();
    if (args.positional().size() < 2)
        throw UsageError{"give the run and its tags: tag RUN TAG[,TAG...] (\"\" clears them)"};
    RunStore store = open_for_editing(args);
    const std::int64_t id = store.resolve(args.positional()[0]);
    std::string tags;
    for (std::size_t i = 1; i < args.positional().size(); ++i) tags += (i > 1 ? "," : "") + args.positional()[i];
    store.set_tags(id, tags);
    const std::string now = store.run(id).tags;
    std::printf("Tags of run %lld: %s\n", static_cast<long long>(id), now.empty() ? "(none)" : now.c_str());
    return exit_ok;
}

const char* const db_option = "  --db FILE   the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n";

}  // namespace

MANTISSA_CLI_COMMAND({"rm", "remove a run and everything recorded with it",
                      std::string("usage: mantissa-cli rm RUN [--db FILE]\n\n"
                                  "Removes the run (its steps, layer rows, op rows, evaluations, events and checkpoints) and\n"
                                  "deletes its checkpoint files from the store's folder for them (runs.checkpoints/ beside\n"
                                  "runs.sqlite); checkpoint files of another store (an imported run's) are left where they\n"
                                  "are. RUN is an id or the unique start of a run's name. A run still being recorded is not\n"
                                  "removed.\n\n") +
                          db_option + "\nExit status: 0 removed, 2 no such run, or the store cannot be written.\n",
                      run_rm});

MANTISSA_CLI_COMMAND({"rename", "rename a run",
                      std::string("usage: mantissa-cli rename RUN NAME [--db FILE]\n\n"
                                  "Gives the run a new name. RUN is an id or the unique start of a run's name.\n\n") +
                          db_option + "\nExit status: 0 renamed, 2 no such run, or the store cannot be written.\n",
                      run_rename});

MANTISSA_CLI_COMMAND({"note", "set a run's notes",
                      std::string("usage: mantissa-cli note RUN TEXT... [--db FILE]\n\n"
                                  "Replaces the run's notes with TEXT (the words after RUN, joined by spaces);\n"
                                  "note RUN \"\" clears them. `mantissa-cli show RUN` prints them. RUN is an id\n"
                                  "or the unique start of a run's name.\n\n") +
                          db_option + "\nExit status: 0 ok, 2 no such run, or the store cannot be written.\n",
                      run_note});

MANTISSA_CLI_COMMAND({"tag", "set a run's tags",
                      std::string("usage: mantissa-cli tag RUN TAG[,TAG...] [--db FILE]\n\n"
                                  "Replaces the run's tags (comma-separated; spaces around them and repeats are\n"
                                  "dropped); tag RUN \"\" clears them. RUN is an id or the unique start of a\n"
                                  "run's name.\n\n") +
                          db_option + "\nExit status: 0 ok, 2 no such run, or the store cannot be written.\n",
                      run_tag});

}  // namespace mantissa::cli
