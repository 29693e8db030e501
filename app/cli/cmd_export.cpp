// `mantissa-cli export`: one table of one run as CSV or JSON, to stdout or a file. The rows are
// streamed from the store, so a long run needs no memory of its size. The formats are
// documented in docs/schema.md ("Exports").
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cli_common.h"
#include "error.h"
#include "store/run_store.h"

namespace mantissa::cli {
namespace {

int run_export(Args& args) {
    args.option("format");
    args.option("table");
    args.option("output");
    args.option("db");
    args.parse();
    if (args.positional().size() != 1)
        throw UsageError{args.positional().empty() ? "give the run to export: its id or the start of its name"
                                                   : "give one run only (an id or the start of a name)"};
    const std::string format_name = args.value("format").value_or("csv");
    const auto format = RunStore::parse_export_format(format_name);
    if (!format) throw UsageError{"unknown --format '" + format_name + "'; use csv or json"};
    const std::string table = args.value("table").value_or("steps");
    if (table != "steps" && table != "layer_steps" && table != "evals" && table != "events")
        throw UsageError{"unknown --table '" + table + "'; use steps, layer_steps, evals or events"};

    const std::string db = args.value("db").value_or(default_store_path());
    RunStore store(db, !std::filesystem::exists(db));
    const std::int64_t id = store.resolve(args.positional().front());

    if (auto output = args.value("output"); output && *output != "-") {
        // Written beside the target and renamed at the end, so a failed export leaves no half file.
        const std::string partial = *output + ".partial";
        {
            std::ofstream out(partial, std::ios::binary | std::ios::trunc);
            if (!out) throw Error("Cannot write '" + partial + "': " + std::strerror(errno) + ".");
            try {
                store.export_table(id, table, *format, out);
                out.flush();
                if (!out) throw Error("Writing '" + partial + "' failed: " + std::strerror(errno) + ".");
            } catch (...) {
                out.close();
                std::remove(partial.c_str());
                throw;
            }
        }
        std::error_code ec;
        std::filesystem::rename(partial, *output, ec);
        if (ec) {
            std::remove(partial.c_str());
            throw Error("Cannot write '" + *output + "': " + ec.message() + ".");
        }
        std::fprintf(stderr, "exported %s of run %lld to %s\n", table.c_str(), static_cast<long long>(id),
                     output->c_str());
    } else {
        std::ios::sync_with_stdio(false);
        store.export_table(id, table, *format, std::cout);
        std::cout.flush();
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"export", "export a run's steps, layer rows, evaluations or events as CSV or JSON",
                      "usage: mantissa-cli export RUN [--format csv|json] [--table TABLE] [-o FILE] [--db FILE]\n\n"
                      "Writes one table of a run. RUN is an id or the unique start of a run's name.\n"
                      "CSV has a header row, RFC 4180 quoting and CRLF line ends; JSON is an array of objects.\n"
                      "docs/schema.md describes every column.\n\n"
                      "  --format csv|json   the output format (default: csv)\n"
                      "  --table TABLE       steps (default), layer_steps, evals or events\n"
                      "  -o, --output FILE   write to FILE instead of standard output\n"
                      "  --db FILE           the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n\n"
                      "Exit status: 0 ok, 2 bad usage, no such run, or the store or FILE cannot be used.\n",
                      run_export});

}  // namespace mantissa::cli
