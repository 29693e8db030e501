// Seeded synthetic sets, small enough to train in seconds on any laptop and hard enough to need a
// hidden layer. Each generator fills a whole Table (split later, like every other kind); the
// numbers depend only on (spec, seed), on every platform (see random.h).
//   spirals  spec.classes interleaved spiral arms in 2-D; noise: std of the position jitter
//   blobs    spec.classes Gaussian blobs in 2-D, centres on the unit circle; noise: each blob's std
//   sine     regression, x uniform in [-pi, pi], y = sin(x) + noise * N(0, 1)
// Classes are balanced: class sizes differ by at most one.
#pragma once

#include <cstdint>

#include "data/table.h"

namespace mantissa::data {

Table make_spirals(std::int64_t samples, int classes, double noise, std::uint64_t seed);
Table make_blobs(std::int64_t samples, int classes, double noise, std::uint64_t seed);
Table make_sine(std::int64_t samples, double noise, std::uint64_t seed);

}  // namespace mantissa::data
