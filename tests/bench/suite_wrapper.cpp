// bench_engine / bench_numeric / bench_store: one suite of mantissa_bench (MANTISSA_BENCH_SUITE),
// printed as tables: the same measurement as `mantissa-cli bench --suite NAME`, under the names
// the benchmarks had before that command existed.
//   bench_NAME [--quick] [--json] [--threads N] [--blocks N] [--only PRECISION]...   (--only: engine)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench.h"
#include "bench/reference_data.h"

using namespace mantissa::bench;

int main(int argc, char** argv) {
    BenchOptions o;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--quick") o.quick = true;
        else if (a == "--json") json = true;
        else if (a == "--threads" && has_value) o.threads = std::atoi(argv[++i]);
        else if (a == "--blocks" && has_value) o.blocks = std::atoi(argv[++i]);
        else if ((a == "--only" || a == "--precision") && has_value && find_precision(argv[i + 1]))
            o.precisions.push_back(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--json] [--threads N] [--blocks N] [--only PRECISION]\n", argv[0]);
            return 2;
        }
    }
    if (o.threads < 0 || o.blocks < 0) {
        std::fprintf(stderr, "%s: --threads and --blocks take positive numbers\n", argv[0]);
        return 2;
    }
    o.progress = [](const std::string& line) { std::fprintf(stderr, "bench: %s\n", line.c_str()); };
    const int threads = apply_threads(o);
    for (const SuiteDef& d : all_suites()) {
        if (d.name != MANTISSA_BENCH_SUITE) continue;
        try {
            const SuiteResult r = d.run(o);
            if (json) {
                std::printf("%s\n", to_json(r).dump(2).c_str());
            } else {
                std::printf("threads: %d\n\n%s", threads, render_text(r).c_str());
            }
            return 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
            return 1;
        }
    }
    return 1;
}
