// Fuzz target: opening a run store (engine/store/store_open.h open_store) on a file written from the
// input: read-only first, then for writing (which may migrate it, with a backup copy). Each open
// succeeds or throws mantissa::Error with a message; SQLite's own damage checks are reached
// through whatever the store asks of the file. Each input gets an empty folder (no -wal, -shm or
// backup left from the one before). Corpus: tests/fuzz/corpus/fuzz_store_open (docs/fuzzing.md).
#include <filesystem>

#include "error.h"
#include "fuzz_util.h"
#include "store/store_open.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string folder = fuzz::scratch() + "/store";
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
    std::filesystem::create_directory(folder);
    const std::string path = fuzz::write_input("store/runs.sqlite", data, size);
    for (const auto access : {mantissa::StoreAccess::read_only, mantissa::StoreAccess::write}) {
        try {
            mantissa::store::OpenedStore opened = mantissa::store::open_store(path, access);
            (void)opened;
        } catch (const mantissa::Error& e) {
            // Not checked as one sentence: for a damaged file the store quotes SQLite's message as
            // it is, and SQLite's quotes the damaged schema, line breaks and bytes that are not
            // UTF-8 included (corpus/fuzz_store_open/damaged-schema*.sqlite). mantissa-cli escapes
            // such bytes in every message it prints (app/cli/main.cpp).
            if (*e.what() == '\0') fuzz::fail("an empty message");
        }
    }
    return 0;
}
