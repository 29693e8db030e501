// `mantissa-cli bench`: the performance suites (app/bench/), as aligned tables or one JSON
// document (machine, date, versions, threads, suites -> tables -> rows). Every figure is a median
// over repeated timed blocks after a warm-up, with its spread; comparisons are ratios measured in
// the same run, blocks interleaved. Progress goes to stderr; results to stdout or -o FILE.
// Exit 0 when every suite ran or said why it was skipped, 1 when a suite failed, 2 bad input.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/git_describe.h"
#include "bench/reference_data.h"
#include "cli/cli_common.h"
#include "config/json_text.h"
#include "error.h"
#include "store/run_store.h"

namespace mantissa::cli {
namespace {

using namespace mantissa::bench;

std::vector<std::string> split_list(const std::vector<std::string>& values) {
    std::vector<std::string> out;
    for (const auto& v : values) {
        std::stringstream in(v);
        std::string item;
        while (std::getline(in, item, ','))
            if (!item.empty()) out.push_back(item);
    }
    return out;
}

int bounded(const Args& args, const char* name, long long lo, long long hi) {
    const auto v = args.integer(name);
    if (!v) return 0;
    if (*v < lo || *v > hi)
        throw UsageError{"--" + std::string(name) + " takes a number from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", not " + std::to_string(*v)};
    return static_cast<int>(*v);
}

std::string suite_names() {
    std::string s;
    for (const auto& d : all_suites()) s += (s.empty() ? "" : ", ") + d.name;
    return s;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The tables of a bench document (what --json prints), with its header lines: one this run made,
// or a saved one that check_document (bench/report.h) passed, so every key read here has its type.
std::string render_document(const nlohmann::json& doc) {
    std::ostringstream out;
    const nlohmann::json machine = doc.value("machine", nlohmann::json::object());
    out << "Mantissa " << doc.value("app_version", "?") << " (git " << doc.value("git", "?") << "), bench "
        << doc.value("date", "?") << (doc.value("quick", false) ? " --quick" : "") << "\n";
    out << "machine: " << machine.value("cpu", "?") << ", " << machine.value("logical_cpus", 0)
        << " logical CPUs, oneDNN " << machine.value("onednn", "?") << " ISA " << machine.value("isa", "?") << ", "
        << machine.value("os", "?") << "\n";
    out << "threads: " << doc.value("threads", 0) << " (CPU backend"
        << (doc.value("threads_given", false) ? ", --threads" : ", its default") << "; the peer gets the same)\n";
    // In suite_order's order, then any suite it leaves out, in the document's.
    const nlohmann::json& suites = doc.at("suites");
    std::vector<std::string> order = doc.value("suite_order", std::vector<std::string>{});
    for (const auto& [name, _] : suites.items())
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    for (const auto& name : order)
        if (suites.contains(name)) out << "\n" << render_text(suite_from_json(suites.at(name), "suites." + name));
    return out.str();
}

int run_bench(Args& args) {
    for (const char* f : {"json", "quick", "list"}) args.flag(f);
    for (const char* o : {"suite", "output", "threads", "blocks", "epochs", "precision", "python", "peer-blas",
                          "peer-model", "peer-steps", "from"})
        args.option(o);
    args.parse();
    args.expect_words(0, "", "mantissa-cli bench [--suite NAME]... (see --help)");
    if (args.has("list")) {
        for (const auto& d : all_suites()) std::printf("%-8s %s\n", d.name.c_str(), d.summary.c_str());
        return exit_ok;
    }

    const auto output = args.value("output");
    if (output && output->empty()) throw UsageError{"-o needs a file name"};
    if (output) {
        std::vector<app::GuardedFile> guarded = {{default_store_path(), "the run store"}};
        if (auto from = args.value("from")) guarded.push_back({*from, "the --from document"});
        refuse_unsafe_output("-o", *output, guarded);
    }

    if (auto from = args.value("from")) {  // re-print a saved --json document as tables
        std::error_code ec;
        if (std::filesystem::is_directory(*from, ec))
            throw UsageError{*from + " is a folder, not a bench --json document"};
        if (std::filesystem::exists(*from, ec) && !std::filesystem::is_regular_file(*from, ec))
            throw UsageError{*from + " is not a regular file; give a document written by 'mantissa-cli bench --json'"};
        std::ifstream in(*from);
        if (!in) throw UsageError{"cannot read '" + *from + "': " + std::strerror(errno)};
        std::ostringstream raw;
        raw << in.rdbuf();
        if (in.bad()) throw UsageError{"cannot read '" + *from + "': " + std::strerror(errno)};
        // Read as an experiment file is (config/json_text.h: a key twice or nesting deeper than
        // the rendering's recursion should meet are refused), then checked key by key.
        nlohmann::json doc;
        const std::string not_bench = "'" + *from + "' is not a document written by 'mantissa-cli bench --json'";
        if (const JsonProblem problem = parse_json(raw.str(), doc); problem.found)
            throw UsageError{problem.syntax ? "'" + *from + "' is not valid JSON: " + problem.sentence
                                            : not_bench + ": " + problem.sentence};
        try {
            check_document(doc);
        } catch (const Error& e) {
            throw UsageError{not_bench + ": " + e.what()};
        }
        const std::string text = render_document(doc);
        if (output) {
            std::ofstream file(*output);
            if (!file) throw UsageError{"cannot write '" + *output + "': " + std::strerror(errno)};
            errno = 0;
            file << text;
            require_written(file, *output);
        } else {
            std::cout << text;
        }
        return exit_ok;
    }

    BenchOptions o;
    o.quick = args.has("quick");
    o.threads = bounded(args, "threads", 0, 1024);  // 0: the default, as train's --threads 0 (auto)
    o.blocks = bounded(args, "blocks", 1, 1000);
    o.epochs = bounded(args, "epochs", 1, 100);
    o.peer_steps = bounded(args, "peer-steps", 1, 100000);
    for (const auto& p : split_list(args.values("precision"))) {
        if (!find_precision(p)) {
            std::string names;  // the suite's own list, so that the sentence names every one
            for (const PrecisionConfig& c : precision_configs()) names += (names.empty() ? "" : ", ") + std::string(c.name);
            throw UsageError{"unknown precision '" + p + "': use one of " + names};
        }
        o.precisions.push_back(p);
    }
    if (auto py = args.value("python")) {
        // Named by the user, so a path that cannot run is a mistake to say, not a peer suite to skip
        // (the default interpreter missing is a skip: PyTorch is optional).
        if (::access(py->c_str(), X_OK) != 0)
            throw UsageError{"--python " + *py + " cannot be run: " + std::strerror(errno) +
                             " (give the interpreter's path, e.g. /usr/bin/python3)"};
        std::error_code ec;
        if (std::filesystem::is_directory(*py, ec))
            throw UsageError{"--python " + *py + " is a folder, not an interpreter (e.g. /usr/bin/python3)"};
        o.python = *py;
    }
    if (args.has("peer-blas")) {
        o.peer_blas = split_list(args.values("peer-blas"));
        for (const auto& b : o.peer_blas)
            if (b != "system" && b != "netlib")
                throw UsageError{"unknown --peer-blas '" + b + "': use system, netlib or system,netlib"};
        if (o.peer_blas.empty()) throw UsageError{"--peer-blas needs system, netlib or both"};
    }
    if (args.has("peer-model")) {
        o.peer_models = split_list(args.values("peer-model"));
        for (const auto& m : o.peer_models)
            if (m != "mlp" && m != "cnn" && m != "gpt")
                throw UsageError{"unknown --peer-model '" + m + "': use mlp, cnn, gpt or a comma list of them"};
        if (o.peer_models.empty()) throw UsageError{"--peer-model needs mlp, cnn, gpt or a comma list of them"};
    }
    std::vector<const SuiteDef*> chosen;
    const auto wanted = split_list(args.values("suite"));
    if (args.has("suite") && wanted.empty()) throw UsageError{"--suite needs a name: " + suite_names()};
    for (const auto& d : all_suites())
        if (wanted.empty() || std::find(wanted.begin(), wanted.end(), d.name) != wanted.end()) chosen.push_back(&d);
    for (const auto& w : wanted) {
        bool known = false;
        for (const auto& d : all_suites()) known = known || d.name == w;
        if (!known) throw UsageError{"unknown suite '" + w + "': use " + suite_names()};
    }
    std::ofstream file;
    if (output) {
        file.open(*output);
        if (!file) throw UsageError{"cannot write '" + *output + "': " + std::strerror(errno)};
    }
    o.progress = [](const std::string& line) { std::fprintf(stderr, "bench: %s\n", line.c_str()); };

    const int threads = apply_threads(o);
    const std::string date = utc_now();
    const nlohmann::json machine = machine_info();
    int code = exit_ok;
    std::vector<SuiteResult> results;
    for (const SuiteDef* d : chosen) {
        try {
            results.push_back(d->run(o));
        } catch (const std::exception& e) {
            SuiteResult failed;
            failed.name = d->name;
            failed.title = d->summary;
            failed.skipped = true;
            failed.notes.push_back(std::string("failed: ") + e.what());
            results.push_back(std::move(failed));
            code = exit_failed;
        }
        if (results.back().skipped) o.say(d->name + ": " + results.back().notes.back());
    }

    nlohmann::json suites = nlohmann::json::object();
    for (const auto& r : results) suites[r.name] = to_json(r);
    const nlohmann::json doc = {{"tool", "mantissa-cli bench"},
                                {"app_version", MANTISSA_VERSION},
                                {"git", bench::git_describe()},
                                {"date", date},
                                {"machine", machine},
                                {"threads", threads},
                                {"threads_given", o.threads > 0},
                                {"quick", o.quick},
                                {"suite_order", [&] {
                                     nlohmann::json names = nlohmann::json::array();
                                     for (const auto& r : results) names.push_back(r.name);
                                     return names;
                                 }()},
                                {"suites", suites}};
    std::ostringstream out;
    if (args.has("json")) {
        out << doc.dump(2) << "\n";
    } else {
        out << render_document(doc);
    }
    if (output) {
        errno = 0;
        file << out.str();
        require_written(file, *output);
        std::fprintf(stderr, "bench: wrote %s\n", output->c_str());
    } else {
        std::cout << out.str() << std::flush;
    }
    return code;
}

MANTISSA_CLI_COMMAND({"bench", "run the performance suites (engine, numeric, store, gui, peer)",
                      "usage: mantissa-cli bench [--suite NAME]... [--json] [-o FILE] [--quick] [options]\n\n"
                      "Runs the performance suites and prints their tables: each figure is the median of repeated\n"
                      "timed blocks after a warm-up, with its spread; comparisons are ratios measured in the same\n"
                      "run, blocks interleaved. Progress goes to stderr.\n\n"
                      "Suites (all by default, in this order):\n"
                      "  engine    samples/s and step time per precision, reference MLP and wider ones; the\n"
                      "            CPU's peak FLOP rates and each step's share of them; steps per thread count\n"
                      "  numeric   rounding elements/s per format vs the scalar path; block quantisation;\n"
                      "            FP16 vs FP32 accumulation error as K grows\n"
                      "  store     Recorder rows/s vs raw SQLite; training slowdown with recording on\n"
                      "  gui       replot times, GUI-open vs headless throughput (runs `mantissa --bench-gui`)\n"
                      "  peer      Mantissa vs PyTorch on the CPU, the reference MLP, CNN and GPT language\n"
                      "            model (needs /usr/bin/python3 with python3-torch)\n\n"
                      "Options:\n"
                      "  --suite NAME[,NAME]  run these suites only (repeatable)\n"
                      "  --json               print one JSON document (machine, date, versions, suites -> rows)\n"
                      "  -o, --output FILE    write the tables or the JSON to FILE (never a run store or any\n"
                      "                       other SQLite database: refused)\n"
                      "  --quick              a short run (seconds a suite): fewer, shorter blocks, no wide MLPs\n"
                      "  --threads N          CPU backend threads (default, or 0: all hardware threads); PyTorch\n"
                      "                       gets the same. The engine suite's threads table times 1, 2, 4, ...\n"
                      "                       up to all hardware threads whatever this says\n"
                      "  --blocks N           timed blocks per figure (default 5 to 15 by suite; 3 with --quick)\n"
                      "  --precision LIST     engine: time only these (fp32,tf32,fp16,bf16,fp8-e4m3,mxfp8-e4m3,mxfp4,nvfp4,\n"
                      "                       mxfp4-sr,bf16-weights,bf16-weights-sr,bf16-weights-kahan,fp16-acc16)\n"
                      "  --epochs N           peer: epochs before comparing test accuracy (default 3; 1 quick)\n"
                      "  --peer-blas LIST     peer: system (PyTorch as installed) and/or netlib (forces the\n"
                      "                       reference BLAS, what Debian gives without OpenBLAS); default system\n"
                      "  --peer-model LIST    peer: any of mlp, cnn, gpt (default all three)\n"
                      "  --peer-steps N       peer: gpt's training steps before comparing test loss (default\n"
                      "                       300; 60 quick)\n"
                      "  --python PATH        peer: the interpreter with PyTorch (default /usr/bin/python3)\n"
                      "  --from FILE.json     print the tables of a saved --json document and exit\n"
                      "  --list               list the suites and exit\n\n"
                      "Exit status: 0 done (a suite that cannot run here says why), 1 a suite failed, 2 bad input\n"
                      "or the output cannot be written in full (a full disk).\n",
                      run_bench});

}  // namespace
}  // namespace mantissa::cli
