// The CIFAR-10 reader: the "CIFAR-10 binary version" its authors distribute (cifar-10-binary.tar.gz,
// unpacked to a folder cifar-10-batches-bin), read from a folder holding its six batch files. A
// batch file is a bare sequence of 3073-byte records: 1 label byte (0..9), then 3072 pixel bytes,
// the 1024 red, 1024 green and 1024 blue values of a 32x32 image, each plane row-major; there is no
// header. That is already the NCHW layout a network takes, so a record becomes a row of features
// as it stands (each byte / 255).
//
// Checked as the IDX reader checks (data/idx_reader.h): files are opened by open_user_file (regular
// files only, never a FIFO or a device, each named for what it is); every file's size is checked
// against the record size, and the memory all six need against what this process may use
// (data/memory_budget.h), before anything large is allocated; data is read in bounded chunks, and a
// label above 9 is refused naming its file and record. Only the raw .bin files are read (the authors
// ship them unpacked inside the tar.gz), and no file is optional: a missing folder or file is a
// sentence that says where to get the set, never a fallback. Messages: docs/datasets.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "config/sample_shape.h"
#include "data/dataset.h"

namespace mantissa::data {

inline constexpr int kCifarClasses = 10;
inline constexpr std::int64_t kCifarImageBytes = 3 * 32 * 32;            // 3072: red, green, blue planes
inline constexpr std::int64_t kCifarRecordBytes = 1 + kCifarImageBytes;  // 3073: the label byte first
inline constexpr SampleShape kCifarShape{3, 32, 32};

// The six files of the binary version: five training batches, then the test batch.
inline constexpr std::array<const char*, 6> kCifarFiles = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                           "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// Where a message says to get the set.
inline constexpr const char* kCifarSource =
    "the \"CIFAR-10 binary version\" (cifar-10-binary.tar.gz) from its authors, "
    "https://www.cs.toronto.edu/~kriz/cifar.html";

struct CifarBatch {
    std::int64_t count = 0;
    std::vector<float> pixels;         // (count, 3, 32, 32), each byte / 255 in [0, 1]
    std::vector<std::int32_t> labels;  // (count), each 0..9
};

// Reads one batch file: any positive number of records (the authors' files hold 10000 each).
// Throws mantissa::Error naming the file: not a regular file, empty, a size that is not a whole
// number of records, a label above 9 (and its record), more memory than the budget allows.
CifarBatch read_cifar_batch(const std::string& path);

// The names of the six files that `folder` lacks, in kCifarFiles order; empty when all are there.
// A path that is there but is not a regular file (a folder, a FIFO, a device, a symbolic link that
// loops or points nowhere) throws, naming what it is.
std::vector<std::string> missing_cifar_files(const std::string& folder);

// Reads the six files of `folder` into a Dataset named "cifar10": 3072 features of shape 3 x 32 x
// 32, 10 classes, pixels in [0, 1] (not normalised); the training split is the five data batches
// in order, the test split the test batch. All six sizes and the memory they need are checked
// before any data is read. Throws naming the folder or the file on any problem, a failed
// allocation included.
Dataset read_cifar_folder(const std::string& folder);

}  // namespace mantissa::data
