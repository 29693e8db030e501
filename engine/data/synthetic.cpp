// The synthetic sets (see synthetic.h). Samples are generated class by class (row i of class k
// follows row i-1), then the split shuffles them, so the generators stay simple and the order in
// the Table never matters. Each generator draws from its own stream of the run seed.
#include "data/synthetic.h"

#include <cmath>
#include <numbers>

#include "data/random.h"

namespace mantissa::data {
namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;

// Rows of class k when `samples` are shared by `classes` as evenly as possible.
std::int64_t class_size(std::int64_t samples, int classes, int k) {
    return samples / classes + (k < samples % classes ? 1 : 0);
}

Table classification_table(std::int64_t samples, int classes) {
    Table t;
    t.rows = samples;
    t.features = 2;
    t.classes = classes;
    t.outputs = classes;
    t.x.reserve(static_cast<std::size_t>(samples) * 2);
    t.y.reserve(static_cast<std::size_t>(samples));
    return t;
}

}  // namespace

Table make_spirals(std::int64_t samples, int classes, double noise, std::uint64_t seed) {
    Rng rng(derive_seed(seed, 0x5350495241ULL));  // "SPIRA"
    Table t = classification_table(samples, classes);
    // Each arm sweeps three quarters of a turn (1.5 pi) while its radius grows from 0.05 to 1;
    // arm k starts at angle 2 pi k / classes, so the arms interleave.
    constexpr double kTurn = 1.5 * std::numbers::pi;
    for (int k = 0; k < classes; ++k) {
        const std::int64_t n = class_size(samples, classes, k);
        for (std::int64_t i = 0; i < n; ++i) {
            const double r = 0.05 + 0.95 * (n > 1 ? static_cast<double>(i) / (n - 1) : 0.0);
            const double angle = kTwoPi * k / classes + kTurn * r;
            const double gx = rng.normal();
            const double gy = rng.normal();
            t.x.push_back(static_cast<float>(r * std::cos(angle) + noise * gx));
            t.x.push_back(static_cast<float>(r * std::sin(angle) + noise * gy));
            t.y.push_back(k);
        }
    }
    return t;
}

Table make_blobs(std::int64_t samples, int classes, double noise, std::uint64_t seed) {
    Rng rng(derive_seed(seed, 0x424C4F4253ULL));  // "BLOBS"
    Table t = classification_table(samples, classes);
    for (int k = 0; k < classes; ++k) {
        const double cx = std::cos(kTwoPi * k / classes);
        const double cy = std::sin(kTwoPi * k / classes);
        const std::int64_t n = class_size(samples, classes, k);
        for (std::int64_t i = 0; i < n; ++i) {
            const double gx = rng.normal();
            const double gy = rng.normal();
            t.x.push_back(static_cast<float>(cx + noise * gx));
            t.x.push_back(static_cast<float>(cy + noise * gy));
            t.y.push_back(k);
        }
    }
    return t;
}

Table make_sine(std::int64_t samples, double noise, std::uint64_t seed) {
    Rng rng(derive_seed(seed, 0x53494E45ULL));  // "SINE"
    Table t;
    t.rows = samples;
    t.features = 1;
    t.classes = 0;
    t.outputs = 1;
    t.x.reserve(static_cast<std::size_t>(samples));
    t.targets.reserve(static_cast<std::size_t>(samples));
    for (std::int64_t i = 0; i < samples; ++i) {
        const double x = rng.uniform(-std::numbers::pi, std::numbers::pi);
        const double g = rng.normal();
        t.x.push_back(static_cast<float>(x));
        t.targets.push_back(static_cast<float>(std::sin(x) + noise * g));
    }
    return t;
}

}  // namespace mantissa::data
