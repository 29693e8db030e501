// Test helpers: small CIFAR-10 batch files built record by record (so a test can break any byte of
// them), and a folder of the six files the way the authors' binary version ships. Every pixel is a
// known function of its file, record, channel, row and column, so a test can check any pixel it
// reads back.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace cifar_files {

using Bytes = std::vector<std::uint8_t>;

inline constexpr std::size_t kRecord = 3073;  // 1 label byte, then 3 planes of 32 x 32 bytes

inline constexpr std::array<const char*, 6> kNames = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                      "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// The byte at channel c (0 red, 1 green, 2 blue), row y, column x of record r of file f.
inline std::uint8_t pixel(int f, int r, int c, int y, int x) {
    return static_cast<std::uint8_t>((f * 53 + r * 31 + c * 101 + y * 7 + x * 3) % 256);
}

// The label of record r of file f.
inline std::uint8_t label(int f, int r) {
    return static_cast<std::uint8_t>((f * 3 + r) % 10);
}

// File f (0..5, for pixel and label) with `records` records.
inline Bytes batch(int f, int records) {
    Bytes b;
    b.reserve(kRecord * static_cast<std::size_t>(records));
    for (int r = 0; r < records; ++r) {
        b.push_back(label(f, r));
        for (int c = 0; c < 3; ++c)
            for (int y = 0; y < 32; ++y)
                for (int x = 0; x < 32; ++x) b.push_back(pixel(f, r, c, y, x));
    }
    return b;
}

inline bool write(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return static_cast<bool>(out);
}

// A complete, valid folder: six files of `records` records each.
inline bool write_folder(const std::string& folder, int records = 20) {
    for (int f = 0; f < 6; ++f)
        if (!write(folder + "/" + kNames[static_cast<std::size_t>(f)], batch(f, records))) return false;
    return true;
}

}  // namespace cifar_files
