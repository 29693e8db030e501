// The IDX reader: MNIST-style files (magic, big-endian dimensions, unsigned bytes), raw or gzipped.
// Files are opened by open_user_file (regular files only: never a device or a pipe) and read
// through zlib's gzdopen/gzread, which passes raw files through unchanged, so one code path serves
// both. Every header is checked before anything large is allocated: the magic number,
// each dimension, the declared size against a 2 GiB limit, and, for raw files, against the file's
// length; gzipped data is then read in bounded chunks and its length compared with the header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mantissa::data {

// Largest payload (declared bytes of pixels or labels) an IDX file may declare.
inline constexpr std::uint64_t kMaxIdxBytes = (std::uint64_t{1} << 31) - 1;

// The classes of MNIST and Fashion-MNIST; labels must be below this.
inline constexpr int kIdxClasses = 10;

struct IdxImages {
    std::int64_t count = 0;
    int rows = 0;
    int cols = 0;
    std::vector<float> pixels;  // (count, rows * cols), row-major, each byte / 255 in [0, 1]
};

// Reads an image file (magic 0x00000803: unsigned bytes, 3 dimensions count x rows x cols).
IdxImages read_idx_images(const std::string& path);

// Reads a label file (magic 0x00000801: unsigned bytes, 1 dimension); every label must be below
// `classes`.
std::vector<std::int32_t> read_idx_labels(const std::string& path, int classes);

// The four files of an MNIST-style folder, without the optional ".gz".
inline constexpr const char* kIdxTrainImages = "train-images-idx3-ubyte";
inline constexpr const char* kIdxTrainLabels = "train-labels-idx1-ubyte";
inline constexpr const char* kIdxTestImages = "t10k-images-idx3-ubyte";
inline constexpr const char* kIdxTestLabels = "t10k-labels-idx1-ubyte";

// The path of `base` in `folder`: the raw file if present, else base + ".gz"; "" when neither is.
std::string find_idx_file(const std::string& folder, const std::string& base);

// The names (without .gz) of the four files that `folder` lacks; empty when all are there.
std::vector<std::string> missing_idx_files(const std::string& folder);

// Reads the four files of `folder` into a Dataset named `name` (10 classes, features = rows *
// cols, pixels in [0, 1], not normalised). Throws naming the folder or the file on any problem.
Dataset read_idx_folder(const std::string& folder, const std::string& name);

}  // namespace mantissa::data
