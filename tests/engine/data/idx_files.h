// Test helpers: build small IDX files byte by byte (so a test can break any part of them) and write
// them raw or gzipped into a folder, the way MNIST ships.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace idx_files {

using Bytes = std::vector<std::uint8_t>;

inline void put_u32(Bytes& b, std::uint32_t v) {
    b.push_back(static_cast<std::uint8_t>(v >> 24));
    b.push_back(static_cast<std::uint8_t>(v >> 16));
    b.push_back(static_cast<std::uint8_t>(v >> 8));
    b.push_back(static_cast<std::uint8_t>(v));
}

// An image file: magic, count, rows, cols, then `pixels` as given (which may not match the header).
inline Bytes images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels,
                    std::uint32_t magic = 0x00000803) {
    Bytes b;
    put_u32(b, magic);
    put_u32(b, count);
    put_u32(b, rows);
    put_u32(b, cols);
    b.insert(b.end(), pixels.begin(), pixels.end());
    return b;
}

// `count` images whose pixel k of image i is (i * 7 + k) % 256.
inline Bytes pattern_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
    Bytes px;
    for (std::uint32_t i = 0; i < count; ++i)
        for (std::uint32_t k = 0; k < rows * cols; ++k) px.push_back(static_cast<std::uint8_t>((i * 7 + k) % 256));
    return images(count, rows, cols, px);
}

inline Bytes labels(const Bytes& values, std::uint32_t magic = 0x00000801, std::int64_t declared = -1) {
    Bytes b;
    put_u32(b, magic);
    put_u32(b, declared < 0 ? static_cast<std::uint32_t>(values.size()) : static_cast<std::uint32_t>(declared));
    b.insert(b.end(), values.begin(), values.end());
    return b;
}

inline bool write_raw(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return static_cast<bool>(out);
}

inline bool write_gz(const std::string& path, const Bytes& b) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f) return false;
    const int n = b.empty() ? 0 : gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    return gzclose(f) == Z_OK && n == static_cast<int>(b.size());
}

// Writes `b` as folder/name (raw) or folder/name.gz (gzipped).
inline bool write(const std::string& folder, const std::string& name, const Bytes& b, bool gz) {
    return gz ? write_gz(folder + "/" + name + ".gz", b) : write_raw(folder + "/" + name, b);
}

// A complete, valid folder: 5 training and 3 test images of rows x cols, labels i % 10.
inline bool write_folder(const std::string& folder, bool gz, std::uint32_t rows = 2, std::uint32_t cols = 3) {
    Bytes train_labels{0, 1, 2, 9, 4}, test_labels{3, 1, 5};
    return write(folder, "train-images-idx3-ubyte", pattern_images(5, rows, cols), gz) &&
           write(folder, "train-labels-idx1-ubyte", labels(train_labels), gz) &&
           write(folder, "t10k-images-idx3-ubyte", pattern_images(3, rows, cols), gz) &&
           write(folder, "t10k-labels-idx1-ubyte", labels(test_labels), gz);
}

}  // namespace idx_files
