// The IDX reader: MNIST-style files (magic, big-endian dimensions, unsigned bytes), raw or gzipped
// (told apart by the gzip magic bytes, not by the name). Files are opened by open_user_file
// (regular files only: never a device or a FIFO, each named for what it is) and gzip files are
// inflated by data/gzip_input, which checks the gzip trailer. Every header is checked before
// anything large is allocated or inflated: the magic number, each dimension, the declared size
// against a 2 GiB limit and against the file (a raw file's length; what a gzip file's size can
// inflate to, and the length its trailer states), and, for a folder, the counts and image sizes the
// four headers declare and the memory their data needs (data/memory_budget.h). Data is then read
// in bounded chunks. Messages: docs/datasets.md.
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

// Reads an image file (magic 0x00000803: unsigned bytes, 3 dimensions count x rows x cols). The
// memory it needs is checked against the budget before its data is read.
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
// A path that is there but is not a regular file (a folder, a FIFO, a device, a symbolic link that
// loops or points nowhere) is not "absent": it throws, naming what it is.
std::string find_idx_file(const std::string& folder, const std::string& base);

// The names (without .gz) of the four files that `folder` lacks; empty when all are there. Throws
// as find_idx_file does for a file of the wrong kind.
std::vector<std::string> missing_idx_files(const std::string& folder);

// True when `folder` is a folder, false when nothing is there; throws when it is something else
// ("dataset.path F is a FIFO (a named pipe), not a folder; kind 'K' reads a folder holding the four
// IDX files.").
bool idx_folder_exists(const std::string& folder, const std::string& kind);

// Reads the four files of `folder` into a Dataset named `name` (10 classes, features = rows *
// cols, shape 1 x rows x cols, pixels in [0, 1], not normalised). All four headers are read and compared (label and image
// counts, train and test image sizes, the memory needed) before any data. Throws naming the folder
// or the file on any problem, a failed allocation included.
Dataset read_idx_folder(const std::string& folder, const std::string& name);

}  // namespace mantissa::data
