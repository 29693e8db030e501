// store_helper: a separate process for the store suites, because some cases need one.
//
//   store_helper record DB [--layers N] [--fsize-limit BYTES]
//       Records synthetic steps forever (about 20k steps/s), printing "RUN <id>" once started. The
//       crash suite SIGKILLs it. With --fsize-limit the process may not grow a file past BYTES
//       (RLIMIT_FSIZE), which the kernel enforces like a full disk: the helper then prints
//       "ERROR <sentence>", finishes the run and exits 3.
//   store_helper list DB [--as-nobody]
//       Opens DB as a writer would (falling back to read-only), prints "READONLY 0|1" and one
//       "RUN <id> <status> <steps> <name>" line per run, then tries to record and prints
//       "RECORD ok" or "RECORD ERROR <sentence>". --as-nobody first drops to uid/gid 65534, so
//       permission cases can be tested when the suite runs as root. Exit 2 with "ERROR <sentence>"
//       when the store cannot be opened, 4 when privileges cannot be dropped.
//   store_helper churn DB ROUNDS
//       What another process does to a store in use, ROUNDS times: opens it as the reading
//       commands do (StoreAccess::read), lists the runs and reads the first one's steps and
//       totals, and every third round records a short run of its own (20 steps, completed); each
//       round closes every connection, so the helper is often the store's last connection to
//       close. Prints "ERROR <sentence>" for each failed round and "DONE <rounds> <errors>";
//       exit 0 when no round failed, else 1.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "error.h"
#include "store/run_store.h"

using namespace mantissa;

namespace {

std::string option(int argc, char** argv, const char* name, const char* fallback) {
    for (int i = 3; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
    return fallback;
}

bool flag(int argc, char** argv, const char* name) {
    for (int i = 3; i < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) return true;
    return false;
}

StepRecord step_record(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.time_s = 0.001 * static_cast<double>(i);
    s.loss = 1.0 / static_cast<double>(i + 1);
    s.loss_scale = 65536;
    s.learning_rate = 1e-3;
    s.memory.parameters = 4096;
    return s;
}

int record(const std::string& db, int layers, long long fsize_limit) {
    if (fsize_limit > 0) {
        std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
        rlimit lim{static_cast<rlim_t>(fsize_limit), static_cast<rlim_t>(fsize_limit)};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
            std::printf("ERROR setrlimit failed\n");
            return 4;
        }
    }
    RunStore store(db);
    RunInfo info{"crash-test", "cpu", "helper", R"({"helper":true})"};
    auto rec = store.start_run(info);
    std::printf("RUN %lld\n", static_cast<long long>(rec->run_id()));
    std::fflush(stdout);
    std::vector<LayerStepRecord> rows(static_cast<std::size_t>(layers));
    for (std::int64_t i = 0;; ++i) {
        for (int l = 0; l < layers; ++l) {
            auto& r = rows[static_cast<std::size_t>(l)];
            r.step = i;
            r.layer = l;
            r.name = "fc" + std::to_string(l + 1);
            r.grad_exponents.counts[static_cast<std::size_t>(130 + l + i % 5)] = static_cast<std::uint32_t>(i);
        }
        rec->on_step(step_record(i), rows);
        if (i % 500 == 0) rec->on_event({i, 0.001 * static_cast<double>(i), EventKind::checkpoint, "tick", "{}"});
        if (i % 20 == 19) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (fsize_limit > 0 && !rec->error().empty()) {
            std::string error = rec->error();
            rec->finish(RunStatus::completed);
            std::printf("ERROR %s\n", error.c_str());
            return 3;
        }
    }
}

int list(const std::string& db, bool as_nobody) {
    if (as_nobody && (setgid(65534) != 0 || setuid(65534) != 0)) {
        std::printf("ERROR cannot drop privileges: %s\n", std::strerror(errno));
        return 4;
    }
    RunStore store(db);
    std::printf("READONLY %d\n", store.read_only() ? 1 : 0);
    for (const RunRow& r : store.list_runs())
        std::printf("RUN %lld %s %lld %s\n", static_cast<long long>(r.id), run_status_name(r.status),
                    static_cast<long long>(r.steps), r.name.c_str());
    try {
        auto rec = store.start_run({"from-helper", "cpu", "", "{}"});
        rec->finish(RunStatus::completed);
        std::printf("RECORD ok\n");
    } catch (const Error& e) {
        std::printf("RECORD ERROR %s\n", e.what());
    }
    return 0;
}

int churn(const std::string& db, int rounds) {
    int errors = 0;
    for (int i = 0; i < rounds; ++i) {
        try {
            RunStore store(db, StoreAccess::read);
            const auto runs = store.list_runs();
            if (!runs.empty()) {
                store.steps(runs.front().id);
                store.totals(runs.front().id);
            }
            if (i % 3 == 2) {
                auto rec = store.start_run({"churn-" + std::to_string(i), "cpu", "helper", "{}"});
                for (std::int64_t s = 0; s < 20; ++s) rec->on_step(step_record(s), {});
                rec->finish(RunStatus::completed);
                if (!rec->error().empty()) throw Error(rec->error());
            }
        } catch (const Error& e) {
            ++errors;
            std::printf("ERROR %s\n", e.what());
            std::fflush(stdout);
        }
    }
    std::printf("DONE %d %d\n", rounds, errors);
    return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: store_helper record|list|churn DB [options]\n");
        return 2;
    }
    const std::string mode = argv[1], db = argv[2];
    try {
        if (mode == "record")
            return record(db, std::atoi(option(argc, argv, "--layers", "3").c_str()),
                          std::atoll(option(argc, argv, "--fsize-limit", "0").c_str()));
        if (mode == "list") return list(db, flag(argc, argv, "--as-nobody"));
        if (mode == "churn" && argc >= 4) return churn(db, std::atoi(argv[3]));
    } catch (const Error& e) {
        std::printf("ERROR %s\n", e.what());
        return 2;
    }
    std::fprintf(stderr, "store_helper: unknown mode '%s'\n", mode.c_str());
    return 2;
}
