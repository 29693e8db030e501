// A Table: every row of a dataset before it is split into train and test, and the helpers that
// turn Tables into a Dataset (seeded split, normalisation). Internal to engine/data: the loaders
// (CSV, synthetic) fill a Table and leave splitting to one place, so every kind splits the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace mantissa::data {

struct Table {
    std::int64_t rows = 0;
    int features = 0;
    int classes = 0;              // 0: regression
    int outputs = 0;              // classes, or target width for regression
    std::vector<float> x;         // (rows, features), row-major
    std::vector<std::int32_t> y;  // (rows), classification only
    std::vector<float> targets;   // (rows, outputs), regression only
};

// How many of `rows` go to the test split: round(rows * test_fraction), but always leaving at
// least one training row. Throws when test_fraction is outside [0, 1).
std::int64_t test_rows_for(std::int64_t rows, double test_fraction);

// Splits `table` into out.train / out.test by a permutation drawn from `seed`; rows keep their
// relative order within each split. Sets out.features, classes and outputs from the table.
void split_table(Table&& table, double test_fraction, std::uint64_t seed, Dataset& out);

// Standardises each feature column with the training split's mean and (population) standard
// deviation; a constant column keeps std 1. Applied to both splits. Targets are left alone.
void normalise_per_feature(Dataset& data);

// Standardises every value with one mean and std taken over all of the training split's values
// (the usual way for images: every pixel is the same kind of measurement).
void normalise_global(Dataset& data);

// Standardises each channel of data.shape (its plane in every row) with one mean and std taken over
// that channel's values in the training split: colour images, whose red, green and blue differ in
// mean and spread. A no-op when the shape does not hold data.features. Applied to both splits.
void normalise_per_channel(Dataset& data);

}  // namespace mantissa::data
