// `mantissa-cli export`: one table of one run as CSV or JSON, to stdout or a file. The rows are
// streamed from the store, so a long run needs no memory of its size. The formats are
// documented in docs/schema.md ("Exports").
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "error.h"
#include "store/run_store.h"
#include "store/schema.h"

namespace mantissa::cli {
namespace {

// Exports into `out`, named `name` in the sentence when a write to it fails (a full disk).
void export_to(RunStore& store, std::int64_t id, const std::string& table, RunStore::ExportFormat format,
               std::ostream& out, const std::string& name) {
    errno = 0;
    try {
        store.export_table(id, table, format, out);
    } catch (const Error&) {
        if (out) throw;  // not a write error
        throw Error(write_failed(name, errno));
    }
    require_written(out, name);
}

// Exports into the regular file `output` (existing or not): written beside the file it names (the
// one a symbolic link leads to, so the link stays and its target gets the export) and renamed onto
// it at the end, so a failed export leaves no half file and an existing file keeps its permissions.
void export_to_file(RunStore& store, std::int64_t id, const std::string& table, RunStore::ExportFormat format,
                    const std::string& output) {
    const auto destination = app::output_destination(output);
    if (!destination) throw UsageError{"-o " + output + " cannot be followed: its symbolic links loop"};
    std::error_code ec;
    const auto perms = std::filesystem::status(*destination, ec).permissions();
    const bool existed = !ec && std::filesystem::exists(*destination, ec);
    // A name of this process's own beside the target; O_EXCL, so nothing already there (a file,
    // or a link to one) is written through.
    std::string partial;
    for (int attempt = 0;; ++attempt) {
        partial = *destination + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
        const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            ::close(fd);
            break;
        }
        // Named as the user named it; the reason is the new file's beside it (a folder such as
        // /proc, where the file exists but nothing can be created, would read as a lie).
        if (errno != EEXIST || attempt > 100) {
            const int err = errno;
            std::string folder = std::filesystem::path(*destination).parent_path().string();
            if (folder.empty()) folder = ".";
            if (!std::filesystem::is_directory(folder, ec))
                throw Error("Cannot write '" + output + "': its folder " + folder + " does not exist.");
            throw Error("Cannot write '" + output + "': no file can be created in its folder " + folder + " (" +
                        std::strerror(err) + "); an export is written beside its file, then renamed onto it.");
        }
    }
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        if (!out) {
            const int err = errno;
            std::remove(partial.c_str());
            throw Error("Cannot write '" + output + "': " + std::strerror(err) + ".");
        }
        try {
            export_to(store, id, table, format, out, output);
        } catch (...) {
            out.close();
            std::remove(partial.c_str());
            throw;
        }
    }
    if (existed) std::filesystem::permissions(partial, perms, ec);
    std::filesystem::rename(partial, *destination, ec);
    if (ec) {
        std::remove(partial.c_str());
        throw Error("Cannot write '" + output + "': " + ec.message() + ".");
    }
}

int run_export(Args& args) {
    args.option("format");
    args.option("table");
    args.option("output");
    args.option("db");
    args.parse();
    args.expect_words(1, "give the run to export, its id or the start of its name", "mantissa-cli export RUN");
    const std::string format_name = args.value("format").value_or("csv");
    const auto format = RunStore::parse_export_format(format_name);
    if (!format) throw UsageError{"unknown --format '" + format_name + "'; use csv or json"};
    const std::string table = args.value("table").value_or("steps");
    if (!store::find_run_table(table))
        throw UsageError{"unknown --table '" + table + "'; use " + std::string(store::run_table_names)};

    const std::string db = args.value("db").value_or(default_store_path());
    const auto output = args.value("output");
    const bool to_file = output && *output != "-";
    if (to_file) refuse_unsafe_output("-o", *output, {{db, "the run store"}});
    RunStore store(db, StoreAccess::read);  // reports a missing store, creates nothing
    const std::int64_t id = store.resolve(args.positional().front());

    if (to_file) {
        struct stat st {};
        if (::stat(output->c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            // A device or this process's own standard output (/dev/null, /dev/stdout; the guard
            // refused a pipe or a disk) is written in place: it cannot be renamed over.
            std::ofstream out(*output, std::ios::binary);
            if (!out) throw Error("Cannot write '" + *output + "': " + std::strerror(errno) + ".");
            export_to(store, id, table, *format, out, *output);
        } else {
            export_to_file(store, id, table, *format, *output);
        }
        std::fprintf(stderr, "exported %s of run %lld to %s\n", table.c_str(), static_cast<long long>(id),
                     output->c_str());
    } else {
        std::ios::sync_with_stdio(false);
        export_to(store, id, table, *format, std::cout, "standard output");
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"export", "export a run's table (steps, layer rows, evaluations, events, checkpoints, ...) as CSV or JSON",
                      "usage: mantissa-cli export RUN [--format csv|json] [--table TABLE] [-o FILE] [--db FILE]\n\n"
                      "Writes one table of a run. RUN is an id or the unique start of a run's name.\n"
                      "CSV has a header row, RFC 4180 quoting and CRLF line ends; JSON is an array of objects.\n"
                      "docs/schema.md describes every column.\n\n"
                      "  --format csv|json   the output format (default: csv)\n"
                      "  --table TABLE       steps (default), layer_steps, evals, events, layers (the\n"
                      "                      network's layers: kind, shapes, parameters; none for a run\n"
                      "                      recorded before store version 4) or op_steps (attention\n"
                      "                      logits' amax and layer norms' smallest variance by step,\n"
                      "                      and with train.accumulation_error each matmul layer's\n"
                      "                      sums against FP64; none before store version 5 or for\n"
                      "                      a model without them)\n"
                      "                      or what_if_steps (underflow, saturation and SQNR of each\n"
                      "                      matmul layer's x, W and dy in each train.what_if format;\n"
                      "                      none before store version 6) or block_scale_steps (a row\n"
                      "                      per matmul operand quantised in blocks and statistics step:\n"
                      "                      its format, rows, the blocks' scale exponents counted\n"
                      "                      (blocks, zero_blocks, nan_blocks, min_, median_ and\n"
                      "                      max_exponent, histogram) and their map (exponents);\n"
                      "                      none before store version 7) or checkpoints (the run's\n"
                      "                      checkpoint files by step: file, bytes, time_s,\n"
                      "                      created_at, events_before, evals_before; none before\n"
                      "                      store version 8)\n"
                      "  -o, --output FILE   write to FILE instead of standard output\n"
                      "  --db FILE           the run store (default: $XDG_DATA_HOME/mantissa/runs.sqlite)\n\n"
                      "FILE is never the run store, any other SQLite database, a Mantissa checkpoint or a named\n"
                      "pipe: such a FILE is refused. A symbolic link is written through (the file it names gets\n"
                      "the export); - is standard output.\n\n"
                      "Exit status: 0 ok, 2 bad usage, no such run, or the store or FILE cannot be used\n"
                      "(written in full: a full disk is exit 2).\n",
                      run_export});

}  // namespace mantissa::cli
