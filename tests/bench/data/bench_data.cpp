// bench_data: what the datasets cost, stage by stage, printed as a table (never a timed test).
//   bench_data [FASHION_MNIST_FOLDER]   (default /usr/share/datasets/fashion-mnist; skipped if absent)
// Each stage runs a few times and the best is shown, wall and CPU time, so a busy machine
// disturbs it less.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/idx_reader.h"
#include "data/synthetic.h"
#include "data/table.h"

using namespace mantissa;

namespace {

double g_cpu_ms = 0.0;  // CPU time of the best run of the last best_ms call

double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Best wall time over `repeats` runs; g_cpu_ms gets that run's CPU time (on a busy machine the
// CPU time shows what the code costs, the wall time what a person waits).
double best_ms(int repeats, const std::function<void()>& f) {
    double best = 1e300;
    for (int i = 0; i < repeats; ++i) {
        const double c0 = thread_cpu_ms();
        const auto t0 = std::chrono::steady_clock::now();
        f();
        const auto t1 = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        if (ms < best) {
            best = ms;
            g_cpu_ms = thread_cpu_ms() - c0;
        }
    }
    return best;
}

void row(const char* stage, const std::string& size, double ms, const std::string& rate) {
    std::printf("%-34s %-20s %9.2f %9.2f  %s\n", stage, size.c_str(), ms, g_cpu_ms, rate.c_str());
}

std::string per_s(double count, double ms, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g %s/s", count / (ms / 1000.0), unit);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    std::printf("%-34s %-20s %9s %9s  %s\n", "stage", "size", "wall ms", "cpu ms", "rate");

    if (data::missing_idx_files(folder).empty()) {
        const std::string images = data::find_idx_file(folder, data::kIdxTrainImages);
        const double read_ms = best_ms(3, [&] { data::read_idx_images(images); });
        row("IDX read train images", "60000 x 784", read_ms, per_s(60000.0 * 784, read_ms, "px"));
        Dataset d;
        const double folder_ms = best_ms(3, [&] { d = data::read_idx_folder(folder, "fashion-mnist"); });
        row("IDX read folder (4 files)", "70000 x 784", folder_ms, per_s(70000.0 * 784, folder_ms, "px"));
        const double norm_ms = best_ms(3, [&] {
            Dataset copy = d;
            data::normalise_global(copy);
        });
        row("normalise global (+copy)", "70000 x 784", norm_ms, "");
        DatasetSpec spec;
        spec.path = folder;
        const double load_ms = best_ms(3, [&] { load_dataset(spec, 1); });
        row("load_dataset fashion-mnist", "70000 x 784", load_ms, "");

        const std::vector<std::int64_t> order = epoch_order(d.train.rows, 1, 0);
        std::vector<float> x, t;
        std::vector<std::int32_t> y;
        const std::int64_t batches = d.train.rows / 128;
        const double gather_ms = best_ms(3, [&] {
            for (std::int64_t b = 0; b < batches; ++b) gather_batch(d, d.train, order, b * 128, 128, x, y, t);
        });
        row("gather_batch 128 x 784, one epoch", std::to_string(batches) + " batches", gather_ms,
            per_s(static_cast<double>(batches) * 128, gather_ms, "rows"));
    } else {
        std::printf("(no Fashion-MNIST at %s: IDX stages skipped)\n", folder.c_str());
    }

    const double order_ms = best_ms(5, [] { epoch_order(60000, 1, 3); });
    row("epoch_order", "60000", order_ms, per_s(60000, order_ms, "rows"));

    const double spirals_ms = best_ms(3, [] { data::make_spirals(1'000'000, 3, 0.1, 1); });
    row("make_spirals", "1000000 x 2", spirals_ms, per_s(1e6, spirals_ms, "rows"));
    DatasetSpec blobs;
    blobs.kind = "blobs";
    blobs.samples = 1'000'000;
    const double blobs_ms = best_ms(3, [&] { load_dataset(blobs, 1); });
    row("load_dataset blobs (split, norm)", "1000000 x 2", blobs_ms, per_s(1e6, blobs_ms, "rows"));

    const std::string csv = (std::filesystem::temp_directory_path() / "mantissa_bench_data.csv").string();
    {
        std::ofstream out(csv);
        out << "a,b,c,d,e,f,g,h,i,j,label\n";
        for (int r = 0; r < 100000; ++r) {
            for (int c = 0; c < 10; ++c) out << (r * 31 + c * 7) % 1000 * 0.013 - 5.0 << ',';
            out << r % 5 << '\n';
        }
    }
    const double csv_ms = best_ms(3, [&] { data::read_csv(csv, -1); });
    row("read_csv", "100000 x 11", csv_ms, per_s(1.1e6, csv_ms, "cells"));
    std::filesystem::remove(csv);
    return 0;
}
