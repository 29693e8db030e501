// `mantissa-cli import`: copies the runs and sweeps of another run store (a Slurm sweep task's
// store, a store from another machine) into this one, RunStore::import_store's work
// (docs/schema.md, "Importing a store"). The other store is only read.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "error.h"
#include "store/run_store.h"

namespace mantissa::cli {
namespace {

// Undoes the store `db` that an import which failed had made: it holds nothing then (the import
// rolled back), and a failed command leaves no file behind that was not there, nor an empty file
// turned into a store. Called once the store is closed; SQLite's side files go with it.
void undo_created_store(const std::string& db, bool was_empty_file) noexcept {
    std::error_code ec;
    if (was_empty_file)
        std::filesystem::resize_file(db, 0, ec);
    else
        std::filesystem::remove(db, ec);
    for (const char* suffix : {"-wal", "-shm", "-journal"}) std::filesystem::remove(db + suffix, ec);
}

ImportResult import_into(const std::string& db, const std::string& other) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool absent = fs::symlink_status(db, ec).type() == fs::file_type::not_found;
    const bool empty_file = !absent && fs::is_regular_file(db, ec) && fs::file_size(db, ec) == 0 && !ec;
    bool undo = false;
    try {
        RunStore store(db);
        try {
            return store.import_store(other);
        } catch (...) {
            // Only a store this command made, and that nobody has written a run or a sweep to since.
            try {
                undo = (absent || empty_file) && store.list_runs().empty() && store.list_sweeps().empty();
            } catch (...) {
            }
            throw;
        }
    } catch (...) {
        if (undo) undo_created_store(db, empty_file);  // the store was closed when its scope ended
        throw;
    }
}

int run_import(Args& args) {
    args.flag("json");
    args.option("db");
    args.parse();
    args.expect_words(1, "give the run store to import", "mantissa-cli import STORE");
    const std::string other = args.positional()[0];
    const std::string db = args.value("db").value_or(default_store_path());
    // Before this store is opened (and created, when it does not exist yet).
    if (!store_file_present(other)) {
        std::error_code ec;
        if (std::filesystem::exists(other, ec))  // an empty file: a store not yet made (docs/schema.md)
            throw Error("'" + other + "' is an empty file, not yet a run store: it holds nothing to import.");
        throw Error("There is no run store at '" + other + "' to import.");
    }
    const ImportResult r = import_into(db, other);
    if (args.has("json")) {
        const nlohmann::ordered_json out = {
            {"runs_added", r.runs_added}, {"runs_skipped", r.runs_skipped}, {"sweeps_added", r.sweeps_added}};
        std::cout << out.dump(2) << std::endl;
        return exit_ok;
    }
    std::printf("Imported %s (%lld already there) and %s from %s.\n", count_of(r.runs_added, "run", "runs").c_str(),
                static_cast<long long>(r.runs_skipped), count_of(r.sweeps_added, "sweep", "sweeps").c_str(),
                other.c_str());
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"import", "copy the runs and sweeps of another run store into this one",
                      "usage: mantissa-cli import STORE [--db FILE] [--json]\n\n"
                      "Copies into the run store every run and sweep of STORE, another run store file (the\n"
                      "store of a Slurm sweep's task, a store from another machine), that it does not have\n"
                      "yet, with everything recorded with each run, in one transaction. Runs and sweeps are\n"
                      "told apart by their uuid, so a run that is already there is skipped and importing the\n"
                      "same store again adds nothing. STORE is only read, and nothing is written beside it:\n"
                      "an older store is read as it is, not upgraded, and its checkpoint files stay where\n"
                      "they are (the imported rows name them there). A run still recording in STORE is\n"
                      "imported as it stands then, as\n"
                      "interrupted when its process has ended.\n\n"
                      "  --db FILE   the run store to import into (default: $XDG_DATA_HOME/mantissa/runs.sqlite;\n"
                      "              created when it does not exist, and removed again when the import fails)\n"
                      "  --json      print {\"runs_added\": N, \"runs_skipped\": M, \"sweeps_added\": K}\n\n"
                      "Exit status: 0 imported (or nothing new to import), 2 STORE is missing, not a run\n"
                      "store, from a newer Mantissa or the store itself, or the store cannot be written.\n",
                      run_import});

}  // namespace mantissa::cli
